/**
 * Which venue `npm start` serves (VENUE): `demo` (the generated venue and its live tail, the default), `polymarket`
 * (synced from the venue's public sources into DATA_DIR/polymarket and followed live), or a directory holding a
 * venue: a `venue.duckdb` written by `npm run venue:sync` or `npm run venue:ingest`, or Parquet tables (an export,
 * a generated venue's `venue/` folder) that are loaded into `venue.duckdb` next to them on the first start.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { queryRows } from './duckdb.ts';
import { attachVenue } from './venue.ts';
import { DEMO_VENUE } from './generator/defaults.ts';

export type VenueChoice = { kind: 'demo' } | { kind: 'polymarket'; root: string } | { kind: 'dir'; root: string };

export class VenueSelectError extends Error {}

/**
 * The directory of the venue the environment names (what `npm start` serves, so every CLI finds the same files: its
 * venue.duckdb, service.sqlite, tid.key): VENUE (default demo), DATA_DIR, and for the demo DEMO_WALLETS / DAYS / SEED.
 */
export function venueRoot(env: NodeJS.ProcessEnv): string {
  const dataDir = env.DATA_DIR ?? 'var';
  const choice = parseVenue(env.VENUE ?? 'demo', dataDir);
  if (choice.kind !== 'demo') return choice.root;
  const w = env.DEMO_WALLETS ?? DEMO_VENUE.wallets;
  const d = env.DEMO_DAYS ?? DEMO_VENUE.days;
  const s = env.DEMO_SEED ?? DEMO_VENUE.seed;
  return resolve(dataDir, `demo-w${w}-d${d}-s${s}`);
}

export function parseVenue(value: string, dataDir: string): VenueChoice {
  if (value === 'demo') return { kind: 'demo' };
  if (value === 'polymarket') return { kind: 'polymarket', root: resolve(dataDir, 'polymarket') };
  const root = resolve(value);
  if (!existsSync(root)) throw new VenueSelectError(`VENUE=${value}: no such directory (expected demo, polymarket or a venue directory)`);
  return { kind: 'dir', root };
}

/** Where a directory venue's Parquet tables are, if it has them (DIR/venue/*.parquet or DIR/*.parquet). */
function parquetDir(root: string): string | null {
  for (const d of [join(root, 'venue'), root]) if (existsSync(join(d, 'fills.parquet')) && existsSync(join(d, 'markets.parquet'))) return d;
  return null;
}

/** The database file of a directory venue; refuses a directory that holds none of the accepted layouts. */
export function venueDbPath(choice: Exclude<VenueChoice, { kind: 'demo' }>): string {
  const db = join(choice.root, 'venue.duckdb');
  if (choice.kind === 'polymarket' || existsSync(db) || parquetDir(choice.root)) return db;
  throw new VenueSelectError(`VENUE=${choice.root}: neither venue.duckdb nor Parquet venue tables (fills.parquet, markets.parquet, ...) in it`);
}

/** Load a directory venue's Parquet tables into its database once (the marker is written last: an interrupted load is redone). */
export async function loadDirVenue(conn: DuckDBConnection, root: string, log: (m: string) => void): Promise<void> {
  const loaded = await queryRows(conn, `SELECT 1 FROM information_schema.tables WHERE table_name IN ('venue_loaded', 'fills')`);
  if (loaded.length > 0) return;
  const dir = parquetDir(root);
  if (!dir) throw new VenueSelectError(`VENUE=${root}: venue.duckdb has no venue tables and there are no Parquet tables to load`);
  log(`Loading the venue's Parquet tables from ${dir} into DuckDB ...`);
  await attachVenue(conn, dir, { materialize: true });
  await conn.run(`CREATE TABLE venue_loaded AS SELECT now() AS loaded_at`);
}

/** Is this venue database kept by the sync (it has a chain cursor)? */
export async function isSyncedVenue(conn: DuckDBConnection): Promise<boolean> {
  const t = await queryRows(conn, `SELECT 1 FROM information_schema.tables WHERE table_name = 'sync_state'`);
  if (!t.length) return false;
  return (await queryRows(conn, `SELECT 1 FROM sync_state WHERE source = 'chain' AND key = 'next_block'`)).length > 0;
}

/** The venue clock of a stored venue: its newest fill, or the newest synced block when later (no lookahead either way). */
export async function storedVenueTime(conn: DuckDBConnection): Promise<Date> {
  const hasBlocks = (await queryRows(conn, `SELECT 1 FROM information_schema.tables WHERE table_name = 'chain_blocks'`)).length > 0;
  const [r] = await queryRows<{ t: Date | null }>(
    conn,
    `SELECT greatest((SELECT max(ts) FROM fills)${hasBlocks ? ', (SELECT max(ts) FROM chain_blocks)' : ''}) AS t`,
  );
  return r?.t ? new Date(r.t) : new Date(0);
}
