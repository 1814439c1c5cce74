/**
 * Open a venue directory (the generator's or an ingest export: one Parquet file per schema table) in DuckDB.
 * `materialize` copies the tables into the database file (fast repeated analytics) and migrates what an older
 * export holds (schema.ts migrateVenue: placeholder wallets); otherwise views read the Parquet in place (no copy,
 * used at full scale) exactly as written.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { queryRows, sqlString } from './duckdb.ts';
import { SEQ_TABLES, VENUE_SEQ_DDL, VENUE_TABLES, VENUE_TABLE_NAMES, createVenueViews, migrateVenue } from './schema.ts';

export async function attachVenue(conn: DuckDBConnection, venueDir: string, opts: { materialize: boolean }): Promise<void> {
  for (const table of VENUE_TABLE_NAMES) {
    const file = join(venueDir, `${table}.parquet`);
    if (!existsSync(file)) throw new Error(`venue table missing: ${file}`);
    if (opts.materialize) {
      await conn.run(`DROP VIEW IF EXISTS ${table}`);
      await conn.run(`DROP TABLE IF EXISTS ${table}`);
      await conn.run(VENUE_TABLES[table]);
      await conn.run(`INSERT INTO ${table} BY NAME SELECT * FROM read_parquet(${sqlString(file)})`);
    } else {
      await conn.run(`DROP TABLE IF EXISTS ${table}`);
      // a venue exported without arrival batches reads as bulk-loaded (seq 0)
      const cols = await queryRows<{ column_name: string }>(conn, `DESCRIBE SELECT * FROM read_parquet(${sqlString(file)})`);
      const seq = (SEQ_TABLES as readonly string[]).includes(table) && !cols.some((c) => c.column_name === 'seq') ? ', 0::BIGINT AS seq' : '';
      // and markets exported before they named their outcomes read as Yes / No
      const labels = table === 'markets' && !cols.some((c) => c.column_name === 'outcome_labels') ? ', NULL::VARCHAR[] AS outcome_labels' : '';
      await conn.run(`CREATE OR REPLACE VIEW ${table} AS SELECT *${seq}${labels} FROM read_parquet(${sqlString(file)})`);
    }
  }
  if (opts.materialize) await migrateVenue(conn);
  else await conn.run(VENUE_SEQ_DDL);
  await createVenueViews(conn);
}
