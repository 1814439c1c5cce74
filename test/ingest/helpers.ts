/** Shared test plumbing: a fresh in-memory venue database and the ingest fixtures. */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DuckDBConnection } from '@duckdb/node-api';
import { openDuckDB, queryRows } from '../../data/duckdb.ts';
import { createVenueSchema } from '../../data/schema.ts';

export const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'ingest');

export function fixture<T = unknown>(name: string): T {
  return JSON.parse(readFileSync(join(FIXTURES, name), 'utf8')) as T;
}

export async function memoryVenue(): Promise<DuckDBConnection> {
  const { conn } = await openDuckDB({ path: ':memory:' });
  await createVenueSchema(conn);
  return conn;
}

export async function count(conn: DuckDBConnection, table: string, where = 'true'): Promise<number> {
  const [row] = await queryRows<{ n: number }>(conn, `SELECT count(*)::INTEGER AS n FROM ${table} WHERE ${where}`);
  return row!.n;
}

export { queryRows };
