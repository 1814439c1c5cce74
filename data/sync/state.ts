/**
 * The sync's own tables, in the venue database next to the rows they account for, so that a batch's rows and the
 * cursor that says they are in commit together: after a crash the sync resumes exactly where the last commit left
 * it, nothing lost and nothing doubled.
 *
 * - sync_state: one value per (source, key): Gamma's keyset cursors and update-time watermark, the next block.
 * - chain_blocks: the hash of every block the chain sync read logs up to (a batch's last block) or from; the newest
 *   are compared with the node's on every step to see a reorg.
 * - chain_logs: where each loaded log came from (block number and hash): provenance, and what a reorg removes.
 * - venue_retractions: one row per batch of venue rows removed after they arrived (a reorg), stamped with an arrival
 *   seq: the analytics cannot refresh past a removal, so the engine rebuilds (jobs/analytics/engine.ts).
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import { queryRows, sqlString } from '../duckdb.ts';

export const SYNC_TABLES = [
  `CREATE TABLE IF NOT EXISTS sync_state (source VARCHAR NOT NULL, key VARCHAR NOT NULL, value VARCHAR NOT NULL, updated_at TIMESTAMP NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS chain_blocks (block_number BIGINT NOT NULL, block_hash VARCHAR NOT NULL, ts TIMESTAMP NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS venue_retractions (seq BIGINT NOT NULL, removed_at TIMESTAMP NOT NULL, rows_removed BIGINT NOT NULL, reason VARCHAR NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS chain_logs (tx_hash VARCHAR NOT NULL, log_index INTEGER NOT NULL, block_number BIGINT NOT NULL, block_hash VARCHAR NOT NULL, address VARCHAR NOT NULL, topic0 VARCHAR NOT NULL)`,
];

export async function createSyncTables(conn: DuckDBConnection): Promise<void> {
  for (const ddl of SYNC_TABLES) await conn.run(ddl);
}

export async function getState(conn: DuckDBConnection, source: string, key: string): Promise<string | null> {
  const [r] = await queryRows<{ value: string }>(conn, `SELECT value FROM sync_state WHERE source = ${sqlString(source)} AND key = ${sqlString(key)}`);
  return r?.value ?? null;
}

export async function setState(conn: DuckDBConnection, source: string, key: string, value: string): Promise<void> {
  await conn.run(`DELETE FROM sync_state WHERE source = ${sqlString(source)} AND key = ${sqlString(key)}`);
  await conn.run(`INSERT INTO sync_state VALUES (${sqlString(source)}, ${sqlString(key)}, ${sqlString(value)}, now()::TIMESTAMP)`);
}
