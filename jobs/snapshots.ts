/**
 * Daily preset snapshots: for a UTC day D, an analytics build as of the end of D (the last millisecond stamped on D)
 * in a scratch database whose venue tables are views over the live venue, then every preset's top K, persisted
 * once in the SnapshotStore. Only rows stamped at or before the end of D are read (fills, inventory, mids, and
 * which markets had resolved), so a day computed again later gives byte-identical rows; the store keeps the first
 * write and reports whether a recomputation matched it.
 *
 * Account links (users with several wallets) are not stamped in time, so snapshots rank wallets, not users.
 */
import type { DuckDBInstance } from '@duckdb/node-api';
import { fullBuild } from '../core/analytics/build.ts';
import { PRESETS, SNAPSHOT_TOP_K, endOfDay, presetTopK, type SnapshotRow } from '../core/rankings.ts';
import { queryRows } from '../data/duckdb.ts';
import { duckRunner } from '../data/runner.ts';
import { VENUE_TABLE_NAMES, VENUE_VIEWS } from '../data/schema.ts';
import type { SnapshotStore, StoredSnapshot } from '../data/snapshot-store.ts';

/** Compute (not store) every preset's top K as of the end of `day`, reading the venue in catalog `venueCatalog`. */
export async function computeDaySnapshots(instance: DuckDBInstance, venueCatalog: string, day: string, k = SNAPSHOT_TOP_K): Promise<Record<string, SnapshotRow[]>> {
  const asOf = endOfDay(day);
  const conn = await instance.connect();
  const scratch = `snap_${day.replaceAll('-', '_')}_${process.pid}_${Math.floor(Math.random() * 1e9)}`;
  try {
    await conn.run(`ATTACH ':memory:' AS ${scratch}`);
    await conn.run(`USE ${scratch}`);
    for (const t of VENUE_TABLE_NAMES) await conn.run(`CREATE VIEW ${t} AS SELECT * FROM ${venueCatalog}.main.${t}`);
    for (const ddl of Object.values(VENUE_VIEWS)) await conn.run(ddl);
    await conn.run(`CREATE TABLE wallet_links (wallet_id INTEGER NOT NULL, user_id VARCHAR NOT NULL)`);
    const db = duckRunner(conn);
    await fullBuild(db, asOf);
    const out: Record<string, SnapshotRow[]> = {};
    for (const p of PRESETS) out[p.slug] = await presetTopK(db, p.slug, k);
    return out;
  } finally {
    await conn.run(`USE ${venueCatalog}`).catch(() => {});
    await conn.run(`DETACH ${scratch}`).catch(() => {});
    conn.closeSync();
  }
}

/** Compute and persist a day's snapshots (existing days are kept as written). */
export async function snapshotDay(instance: DuckDBInstance, venueCatalog: string, store: SnapshotStore, day: string, now = new Date()): Promise<{ day: string; results: { preset: string; created: boolean; identical: boolean; stored: StoredSnapshot }[] }> {
  const boards = await computeDaySnapshots(instance, venueCatalog, day);
  const results: { preset: string; created: boolean; identical: boolean; stored: StoredSnapshot }[] = [];
  for (const [preset, rows] of Object.entries(boards)) {
    const r = await store.put({ preset, date: day, as_of: endOfDay(day).toISOString(), computed_at: now.toISOString(), top_k: SNAPSHOT_TOP_K, rows });
    results.push({ preset, ...r });
  }
  return { day, results };
}

/** The venue catalog of a connection's current database (e.g. 'memory' or the file's name). */
export async function currentCatalog(instance: DuckDBInstance): Promise<string> {
  const conn = await instance.connect();
  try {
    const [r] = await queryRows<{ c: string }>(conn, `SELECT current_database() AS c`);
    return r!.c;
  } finally {
    conn.closeSync();
  }
}
