/**
 * Test helper for the live analytics: a tiny venue (a few wallets and markets, one neg-risk pair) and random
 * batches of venue rows — fills (direct, mint, merge, unknown makers), splits, merges, conversions, redemptions,
 * mids, resolutions (YES, NO, INVALID) — stamped mostly after the previous refresh, sometimes late (before it) or
 * early (after the next), as a real feed delivers them. Each batch is written with one arrival seq, as the live
 * writers do, and says which T the refresh after it runs as of.
 *
 * `tableRows` / `compareStates` read every analytics table in a canonical order and compare two states value by
 * value (numbers to 1e-9, relative for large values), which is what "a refresh equals a rebuild" means.
 */
import fc from 'fast-check';
import type { DuckDBConnection } from '@duckdb/node-api';
import { queryRows } from '../../data/duckdb.ts';
import { createVenueSchema, nextVenueSeq, venueInsert } from '../../data/schema.ts';

export const HOUR = 3_600_000;
export const DAY = 24 * HOUR;
export const START = Date.parse('2026-03-01T00:00:00Z');

/** Markets 1..4: 1, 2 standard; 3, 4 a neg-risk pair (conversions move between them). */
export const MARKETS = [1, 2, 3, 4] as const;
export const WALLETS = [1, 2, 3, 4, 5, 6] as const;

const hex = (n: number, len = 64) => '0x' + n.toString(16).padStart(len, '0');

export async function createLiveVenue(conn: DuckDBConnection): Promise<void> {
  await createVenueSchema(conn);
  for (const w of WALLETS) await conn.run(`INSERT INTO wallets VALUES (${w}, '${hex(w, 40)}', NULL, 'Wallet-${w}', NULL, false)`);
  await conn.run(`INSERT INTO events VALUES (1, 'e1', 'e1', 'Event one', 'politics', NULL, NULL, false, NULL, TIMESTAMP '2026-02-01', NULL, NULL, 'synthetic'),
    (2, 'e2', 'e2', 'Neg-risk event', 'sports', NULL, NULL, true, '${hex(99)}', TIMESTAMP '2026-02-01', NULL, NULL, 'synthetic')`);
  for (const m of MARKETS) {
    const neg = m >= 3;
    await conn.run(`${venueInsert('markets')} VALUES (${m}, '${hex(1000 + m)}', '${hex(2000 + m)}', ${neg ? 2 : 1}, 'Question ${m}?', 'q-${m}', '${m % 2 ? 'politics' : 'sports'}',
      '${10_000 + m}1', '${10_000 + m}2', ${neg}, ${neg ? `'${hex(99)}'` : 'NULL'}, TIMESTAMP '2026-02-20', TIMESTAMP '2026-02-25', TIMESTAMP '2026-04-30', NULL,
      ${m === 2 ? 5000 : 50_000}, 100000, 'synthetic')`);
  }
}

export type VenueRow =
  | { kind: 'fill'; t: number; market: number; outcome: 0 | 1; maker: number | null; taker: number; side: 'BUY' | 'SELL'; match: 'direct' | 'mint' | 'merge'; price: number; shares: number; fee: number }
  | { kind: 'split' | 'merge'; t: number; wallet: number; market: number; amount: number }
  | { kind: 'convert'; t: number; wallet: number; amount: number }
  | { kind: 'redeem'; t: number; wallet: number; market: number; shares: number }
  | { kind: 'mid'; t: number; market: number; outcome: 0 | 1; mid: number }
  | { kind: 'resolution'; t: number; market: number; winner: 'YES' | 'NO' | 'INVALID' };

export interface Batch {
  rows: VenueRow[];
  /** the refresh after this batch runs as of START + asOf ms */
  asOf: number;
}

const cents = (lo: number, hi: number) => fc.integer({ min: lo, max: hi }).map((c) => c / 100);

/** A batch: rows stamped in (prev, asOf], plus some late ones (before prev) and some early ones (after asOf). */
export function batchArb(prev: number): fc.Arbitrary<Batch> {
  return fc.integer({ min: 0, max: 40 * HOUR }).chain((step) => {
    const asOf = prev + step;
    const when = fc.oneof(
      { weight: 8, arbitrary: fc.integer({ min: prev + 1, max: Math.max(prev + 1, asOf) }) },
      { weight: 1, arbitrary: fc.integer({ min: Math.max(0, prev - 3 * DAY), max: Math.max(0, prev) }) },
      { weight: 1, arbitrary: fc.integer({ min: asOf + 1, max: asOf + 30 * HOUR }) },
    );
    const market = fc.constantFrom(...MARKETS);
    const wallet = fc.constantFrom(...WALLETS);
    const outcome = fc.constantFrom(0 as const, 1 as const);
    const row: fc.Arbitrary<VenueRow> = fc.oneof(
      {
        weight: 10,
        arbitrary: fc.record({
          kind: fc.constant('fill' as const),
          t: when,
          market,
          outcome,
          maker: fc.option(wallet, { freq: 6 }),
          taker: wallet,
          side: fc.constantFrom('BUY' as const, 'SELL' as const),
          match: fc.constantFrom('direct' as const, 'direct' as const, 'mint' as const, 'merge' as const),
          price: cents(2, 98),
          shares: cents(100, 20_000),
          fee: fc.constantFrom(0, 0, 0.05, 0.2),
        }),
      },
      { weight: 4, arbitrary: fc.record({ kind: fc.constant('mid' as const), t: when, market, outcome, mid: cents(1, 99) }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constantFrom('split' as const, 'merge' as const), t: when, wallet, market, amount: cents(100, 5000) }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('convert' as const), t: when, wallet, amount: cents(100, 3000) }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('redeem' as const), t: when, wallet, market, shares: cents(100, 5000) }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('resolution' as const), t: when, market, winner: fc.constantFrom('YES' as const, 'NO' as const, 'INVALID' as const) }) },
    );
    return fc.array(row, { minLength: 0, maxLength: 14 }).map((rows) => ({ rows, asOf }));
  });
}

/** A stream of batches from `start`, each starting where the previous one's refresh stood. */
export function streamArb(batches: number, start = 2 * DAY): fc.Arbitrary<Batch[]> {
  let arb: fc.Arbitrary<Batch[]> = batchArb(start).map((b) => [b]);
  for (let i = 1; i < batches; i++) arb = arb.chain((bs) => batchArb(bs[bs.length - 1]!.asOf).map((b) => [...bs, b]));
  return arb;
}

/** A wallet trading every day for `days` days (so risk statistics are measured), as one batch per day. */
export function busyWallet(wallet: number, days: number, seed: number): Batch[] {
  const out: Batch[] = [];
  let x = seed;
  const rnd = () => ((x = (x * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  for (let d = 0; d < days; d++) {
    const t = d * DAY + 10 * HOUR;
    const rows: VenueRow[] = [
      { kind: 'fill', t, market: 1 + (d % 2), outcome: (d % 3 === 0 ? 1 : 0) as 0 | 1, maker: 6, taker: wallet, side: d % 4 === 3 ? 'SELL' : 'BUY', match: 'direct', price: Math.round(20 + 60 * rnd()) / 100, shares: 500 + Math.round(1000 * rnd()), fee: 0 },
      { kind: 'mid', t: t + HOUR, market: 1, outcome: 0, mid: Math.round(10 + 80 * rnd()) / 100 },
      { kind: 'mid', t: t + HOUR, market: 2, outcome: 0, mid: Math.round(10 + 80 * rnd()) / 100 },
    ];
    out.push({ rows, asOf: t + 2 * HOUR });
  }
  return out;
}

let serial = 0;

/** Write a batch's rows with one arrival seq (as the live writers do). Timestamps are START + t. */
export async function writeBatch(conn: DuckDBConnection, rows: readonly VenueRow[]): Promise<number> {
  const seq = await nextVenueSeq(conn);
  const ts = (t: number) => `make_timestamp(${(START + t) * 1000}::BIGINT)`;
  for (const r of rows) {
    const n = ++serial;
    const tx = `'${hex(7_000_000 + n)}'`;
    switch (r.kind) {
      case 'fill': {
        const size = Math.round(r.price * r.shares * 1e6) / 1e6;
        await conn.run(`INSERT INTO fills VALUES (${tx}, ${n}, ${ts(r.t)}, ${r.market}, ${r.outcome}, ${r.maker ?? 'NULL'}, ${r.taker}, '${r.side}', '${r.match}',
          ${r.price}, ${r.shares}, ${size}, ${r.fee}, 2, '${r.market >= 3 ? 'neg_risk' : 'ctf'}', ${seq})`);
        break;
      }
      case 'split':
      case 'merge': {
        const sign = r.kind === 'split' ? 1 : -1;
        await conn.run(`INSERT INTO inventory_events VALUES (${tx}, ${n}, ${ts(r.t)}, ${r.wallet}, '${r.kind.toUpperCase()}', ${r.market}, NULL, ${r.amount}, ${-sign * r.amount}, ${seq})`);
        await conn.run(`INSERT INTO inventory_legs VALUES (${tx}, ${n}, ${r.wallet}, ${r.market}, 0, ${sign * r.amount}), (${tx}, ${n}, ${r.wallet}, ${r.market}, 1, ${sign * r.amount})`);
        break;
      }
      case 'convert':
        // NO of question 3 into YES of question 4 (a two-question group: no USDC comes back)
        await conn.run(`INSERT INTO inventory_events VALUES (${tx}, ${n}, ${ts(r.t)}, ${r.wallet}, 'CONVERT', NULL, '${hex(99)}', ${r.amount}, 0, ${seq})`);
        await conn.run(`INSERT INTO inventory_legs VALUES (${tx}, ${n}, ${r.wallet}, 3, 1, ${-r.amount}), (${tx}, ${n}, ${r.wallet}, 4, 0, ${r.amount})`);
        break;
      case 'redeem':
        await conn.run(`INSERT INTO inventory_events VALUES (${tx}, ${n}, ${ts(r.t)}, ${r.wallet}, 'REDEEM', ${r.market}, NULL, ${r.shares}, ${r.shares / 2}, ${seq})`);
        await conn.run(`INSERT INTO inventory_legs VALUES (${tx}, ${n}, ${r.wallet}, ${r.market}, 0, ${-r.shares / 2}), (${tx}, ${n}, ${r.wallet}, ${r.market}, 1, ${-r.shares / 2})`);
        break;
      case 'mid': {
        // one mid per token and microsecond: a repeat moves a microsecond on (ties would make ASOF lookups ambiguous)
        const [dup] = await queryRows<{ n: number }>(conn, `SELECT count(*) AS n FROM mids WHERE market_id = ${r.market} AND outcome_index = ${r.outcome} AND ts = ${ts(r.t)}`);
        const at = Number(dup?.n ?? 0) > 0 ? `${ts(r.t)} + INTERVAL ${n} MICROSECOND` : ts(r.t);
        await conn.run(`INSERT INTO mids VALUES (${r.market}, ${r.outcome}, ${at}, ${r.mid}, ${seq})`);
        break;
      }
      case 'resolution': {
        const [had] = await queryRows<{ n: number }>(conn, `SELECT count(*) AS n FROM resolutions WHERE market_id = ${r.market}`);
        if (Number(had?.n ?? 0) > 0) break; // a market resolves once
        const winner = r.market >= 3 && r.winner === 'INVALID' ? 'YES' : r.winner; // neg-risk questions never void
        const [y, no] = winner === 'YES' ? [1, 0] : winner === 'NO' ? [0, 1] : [1, 1];
        await conn.run(`INSERT INTO resolutions VALUES (${r.market}, '${winner}', ${winner === 'YES' ? 0 : winner === 'NO' ? 1 : -1}, [${y}, ${no}]::INTEGER[],
          ${y / (y + no)}, ${no / (y + no)}, 2, ${ts(r.t)}, ${tx}, ${seq})`);
        break;
      }
    }
  }
  return seq;
}

export const ANALYTICS_TABLES: Record<string, string[]> = {
  a_legs: ['wallet_id', 'market_id', 'outcome_index', 'ts', 'log_index', 'kind', 'q', 'tx_hash', 'px', 'size_usdc', 'seq'],
  a_horizon_fills: ['ts', 'wallet_id', 'market_id', 'outcome_index', 'log_index', 'kind', 'q', 'seq'],
  a_positions: ['wallet_id', 'market_id', 'outcome_index'],
  a_position_state: ['wallet_id', 'market_id', 'outcome_index'],
  a_holds: ['wallet_id', 'market_id', 'outcome_index', 'start_ts', 'exit_ts', 'cost_in', 'episode'],
  a_marks: ['market_id', 'outcome_index'],
  a_risk_daily: ['wallet_id', 'day'],
  a_risk_pos: ['wallet_id', 'market_id', 'outcome_index'],
  a_features: ['wallet_id'],
  a_alpha: ['wallet_id'],
  a_pnl: ['wallet_id'],
  a_calibration: ['wallet_id'],
  a_style: ['wallet_id'],
  a_category: ['wallet_id', 'category'],
  a_best_category: ['wallet_id'],
  a_risk: ['wallet_id'],
  a_wallet_metrics: ['wallet_id'],
  a_wallet_pctiles: ['wallet_id'],
  a_clusters: ['wallet_id'],
  a_cluster_wallets: ['wallet_id'],
  a_cluster_moments: ['wallet_id', 'k'],
  a_cluster_crowded: ['cell'],
  a_cluster_pairs: ['a', 'b'],
  a_rank_base: ['wallet_id'],
  a_board: ['preset', 'rank'],
  a_board_rank: ['preset', 'rank'],
  a_board_top: ['preset', 'rank'],
  a_board_meta: ['preset'],
};

/** Every analytics table's rows, ordered by its key (`catalog` selects the database). */
export async function tableRows(conn: DuckDBConnection, catalog: string): Promise<Record<string, Record<string, unknown>[]>> {
  const out: Record<string, Record<string, unknown>[]> = {};
  for (const [t, key] of Object.entries(ANALYTICS_TABLES)) {
    out[t] = await queryRows(conn, `SELECT * FROM ${catalog}.${t} ORDER BY ${key.join(', ')}`);
  }
  const [meta] = await queryRows(conn, `SELECT as_of, sharp_min_deviate, ranked_wallets, watermark FROM ${catalog}.a_meta`);
  out.a_meta = [meta!];
  return out;
}

const close = (a: number, b: number) => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));

function same(a: unknown, b: unknown): boolean {
  if (typeof a === 'number' && typeof b === 'number') return close(a, b) || (Number.isNaN(a) && Number.isNaN(b));
  if (typeof a === 'bigint' || typeof b === 'bigint') return String(a) === String(b);
  if (a instanceof Date && b instanceof Date) return a.getTime() === b.getTime();
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => same(x, b[i]));
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => same((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
  }
  return a === b;
}

/** The first differences between two states (empty: equal). */
export function compareStates(got: Record<string, Record<string, unknown>[]>, want: Record<string, Record<string, unknown>[]>, max = 8): string[] {
  const diffs: string[] = [];
  for (const t of Object.keys(want)) {
    const g = got[t] ?? [];
    const w = want[t]!;
    if (g.length !== w.length) {
      diffs.push(`${t}: ${g.length} rows, a rebuild has ${w.length}`);
      continue;
    }
    for (let i = 0; i < w.length && diffs.length < max; i++) {
      for (const col of Object.keys(w[i]!)) {
        if (!same(g[i]![col], w[i]![col])) {
          diffs.push(`${t}[${i}].${col}: refresh ${JSON.stringify(g[i]![col], (_, v) => (typeof v === 'bigint' ? String(v) : v))}, rebuild ${JSON.stringify(w[i]![col], (_, v) => (typeof v === 'bigint' ? String(v) : v))} (row ${JSON.stringify(w[i], (_, v) => (typeof v === 'bigint' ? String(v) : v)).slice(0, 300)})`);
          break;
        }
      }
    }
  }
  return diffs;
}

/** Copy the venue tables of `from` into a fresh catalog `to` of the same connection (a rebuild's starting point). */
export async function copyVenue(conn: DuckDBConnection, from: string, to: string): Promise<void> {
  await conn.run(`ATTACH ':memory:' AS ${to}`);
  for (const t of ['events', 'markets', 'wallets', 'fills', 'inventory_events', 'inventory_legs', 'resolutions', 'mids']) {
    await conn.run(`CREATE TABLE ${to}.${t} AS SELECT * FROM ${from}.${t}`);
  }
}
