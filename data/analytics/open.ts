/**
 * Open a venue for the analytics: a database that already holds the venue tables (an ingested one, or a venue
 * loaded before) is migrated to the current schema first (schema.ts migrateVenue: nullable fill parties, no
 * placeholder wallets) and gets the current views; otherwise the generated directory (Parquet) is attached,
 * materialized or as views.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { openDuckDB, queryRows, sqlString } from '../duckdb.ts';
import { createVenueViews, migrateVenue, type VenueMigration } from '../schema.ts';
import { attachVenue } from '../venue.ts';

export async function openVenueDb(opts: { venueDir?: string; db?: string; materialize?: boolean; threads?: number; memoryLimit?: string }) {
  const path = opts.db ?? ':memory:';
  const { instance, conn } = await openDuckDB({ path, threads: opts.threads ?? 2, ...(opts.memoryLimit ? { memoryLimit: opts.memoryLimit } : {}) });
  const loaded = (await queryRows(conn, `SELECT 1 FROM information_schema.tables WHERE table_name = 'fills'`)).length > 0;
  let migration: VenueMigration | null = null;
  if (loaded) {
    migration = await migrateVenue(conn);
    await createVenueViews(conn);
  } else {
    if (!opts.venueDir) throw new Error('no venue tables in the database and no --venue directory given');
    await attachVenue(conn, join(opts.venueDir, 'venue'), { materialize: opts.materialize ?? true });
  }
  const truth = opts.venueDir ? join(opts.venueDir, 'truth', 'wallets.parquet') : null;
  if (truth && existsSync(truth)) await conn.run(`CREATE OR REPLACE VIEW truth_wallets AS SELECT * FROM read_parquet(${sqlString(truth)})`);
  return { instance, conn, migration };
}
