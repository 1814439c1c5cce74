/** Shared plumbing of the sync tests: a venue database, a sync against the replay, and a venue dumped for comparison. */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { openDuckDB, queryRows } from '../../data/duckdb.ts';
import { VenueSync, type VenueSyncOptions } from '../../data/sync/index.ts';
import { REPLAY_CHAIN, type VenueReplay } from '../../data/sync/replay.ts';

const instances = new WeakMap<DuckDBConnection, DuckDBInstance>();

export async function openVenue(path = ':memory:'): Promise<DuckDBConnection> {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const { instance, conn } = await openDuckDB({ path, threads: 2 });
  instances.set(conn, instance);
  return conn;
}

/** Close the connection and its database (a file's lock goes with the instance, not the connection). */
export function closeVenue(conn: DuckDBConnection): void {
  conn.closeSync();
  instances.get(conn)?.closeSync();
}

/** A sync of `replay` served at `urls`, reading up to the head (no confirmations unless asked). */
export function syncOf(conn: DuckDBConnection, replay: VenueReplay, urls: { gamma: string; rpc: string }, o: Partial<VenueSyncOptions> = {}): Promise<VenueSync> {
  return VenueSync.open(conn, {
    gammaUrl: urls.gamma,
    rpcUrl: urls.rpc,
    chain: REPLAY_CHAIN,
    fromBlock: BigInt(replay.firstBlock),
    confirmations: 0,
    retry: { baseDelayMs: 2, maxDelayMs: 50 },
    ...o,
  });
}

/**
 * Every venue row by its natural keys, ids replaced by what they stand for (addresses, condition ids): two venues
 * are the same venue when these are equal, whichever order their dictionary ids were handed out in.
 */
export async function dumpVenue(conn: DuckDBConnection): Promise<Record<string, string[]>> {
  const q = async (sql: string) => (await queryRows<Record<string, unknown>>(conn, sql)).map((r) => JSON.stringify(r));
  const wallet = (col: string) => `(SELECT address FROM wallets w WHERE w.wallet_id = ${col})`;
  const cond = (col: string) => `(SELECT condition_id FROM markets m WHERE m.market_id = ${col})`;
  return {
    events: await q(`SELECT * FROM events ORDER BY event_id`),
    markets: await q(`SELECT * EXCLUDE (market_id) FROM markets ORDER BY condition_id`),
    fills: await q(`SELECT tx_hash, log_index, ts::VARCHAR AS ts, ${cond('x.market_id')} AS c, outcome_index, ${wallet('x.maker_id')} AS maker, ${wallet('x.taker_id')} AS taker,
      side, match_type, price, shares, size_usdc, fee_usdc, exchange_version, exchange_kind FROM fills x ORDER BY tx_hash, log_index`),
    resolutions: await q(`SELECT ${cond('x.market_id')} AS c, winner, winner_index, payout_numerators, payout_yes, payout_no, outcome_slot_count, resolved_at::VARCHAR AS t, tx_hash FROM resolutions x ORDER BY c`),
    inventory_events: await q(`SELECT tx_hash, log_index, ts::VARCHAR AS ts, ${wallet('x.wallet_id')} AS w, kind, ${cond('x.market_id')} AS c, amount, usdc_delta FROM inventory_events x ORDER BY tx_hash, log_index`),
    inventory_legs: await q(`SELECT tx_hash, log_index, ${wallet('x.wallet_id')} AS w, ${cond('x.market_id')} AS c, outcome_index, shares_delta FROM inventory_legs x ORDER BY ALL`),
    mids: await q(`SELECT ${cond('x.market_id')} AS c, outcome_index, ts::VARCHAR AS ts, mid FROM mids x ORDER BY ALL`),
    chain_logs: await q(`SELECT * FROM chain_logs ORDER BY block_number, tx_hash, log_index`),
  };
}

/** Table -> row count of a dump (for readable failures before the row-by-row comparison). */
export const counts = (d: Record<string, string[]>) => Object.fromEntries(Object.entries(d).map(([k, v]) => [k, v.length]));
