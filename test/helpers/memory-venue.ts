/** An empty venue (the schema, no rows) in an in-memory DuckDB, for tests that insert a hand-built venue. */
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { openDuckDB } from '../../data/duckdb.ts';
import { createVenueSchema } from '../../data/schema.ts';

export async function openMemoryVenue(threads = 2): Promise<{ instance: DuckDBInstance; conn: DuckDBConnection }> {
  const { instance, conn } = await openDuckDB({ path: ':memory:', threads });
  await createVenueSchema(conn);
  return { instance, conn };
}

export function closeMemoryVenue(conn: DuckDBConnection | undefined, instance: DuckDBInstance | undefined): void {
  conn?.closeSync();
  instance?.closeSync();
}
