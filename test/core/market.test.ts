/**
 * Markets (core/market.ts): the consensus, top holders, flow by cohort and teaser counts on a hand-built market
 * worked by hand; no lookahead; the consensus against a brute-force recomputation on random holder sets
 * (fast-check); and every function on a busy market of a generated venue after a full analytics build.
 */
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fullBuild } from '../../core/analytics/build.ts';
import {
  CONSENSUS_RULE,
  ConsensusHolder,
  FLOW_COHORTS,
  MarketConsensus,
  MarketError,
  MarketFlow,
  MarketTeaserStats,
  PublicTopHolder,
  TopHolder,
  consensusHolders,
  consensusWeight,
  effectiveBrier,
  marketConsensus,
  marketFlow,
  marketIdByConditionId,
  marketPositionsSql,
  marketTeaserStats,
  toPublicTopHolders,
  topHolders,
  walletCohortSql,
  type FlowCohort,
  type FlowSide,
} from '../../core/market.ts';
import { positionsSql } from '../../core/positions.ts';
import type { ColumnarRunner, QueryRunner } from '../../core/query.ts';
import { queryRows } from '../../data/duckdb.ts';
import { duckRunner } from '../../data/runner.ts';
import { makeVenue, type TestVenue } from '../helpers/venue.ts';
import { closeMemoryVenue, openMemoryVenue } from '../helpers/memory-venue.ts';
import { venueInsert } from '../../data/schema.ts';

// ---------------------------------------------------------------------------------------------------------------
// A tiny venue in an in-memory DuckDB, with hand-made wallet labels
// ---------------------------------------------------------------------------------------------------------------

let instance: DuckDBInstance;
let conn: DuckDBConnection;
let db: ColumnarRunner;

const T0 = Date.UTC(2026, 2, 1, 12, 0, 0);
/** T0 + n minutes, in ms */
const at = (n: number) => T0 + n * 60_000;
const T = new Date(at(60));

const d = (x: number) => `'${x}'::DOUBLE`;
const ts = (ms: number) => `make_timestamp(${ms * 1000}::BIGINT)`;
const hex = (n: number, width: number) => n.toString(16).padStart(width, '0');

type Side = 'BUY' | 'SELL';
type Match = 'direct' | 'mint' | 'merge';
interface Fill { t: number; m: number; o: 0 | 1; taker: number; side: Side; price: number; shares: number; maker: number; match: Match; fee: number }
interface Metrics { wallet_id: number; brier: number | null; n: number; tags: string[]; taker_share: number; trade_count: number }

class Venue {
  markets = new Set<number>();
  wallets = new Set<number>();
  fills: Fill[] = [];
  splits: { t: number; w: number; m: number; a: number }[] = [];
  mids: { m: number; o: 0 | 1; t: number; mid: number }[] = [];
  metrics: Metrics[] = [];
  market(m: number): this {
    this.markets.add(m);
    return this;
  }
  fill(t: number, m: number, o: 0 | 1, taker: number, side: Side, price: number, shares: number, maker: number, match: Match = 'direct', fee = 0): this {
    this.wallets.add(taker).add(maker);
    this.fills.push({ t, m, o, taker, side, price, shares, maker, match, fee });
    return this;
  }
  split(t: number, w: number, m: number, a: number): this {
    this.wallets.add(w);
    this.splits.push({ t, w, m, a });
    return this;
  }
  mid(m: number, t: number, mid: number, o: 0 | 1 = 0): this {
    this.mids.push({ m, o, t, mid });
    return this;
  }
  label(wallet_id: number, brier: number | null, n: number, tags: string[] = [], taker_share = 0.9, trade_count = 10): this {
    this.metrics.push({ wallet_id, brier, n, tags, taker_share, trade_count });
    return this;
  }
}

async function insert(table: string, rows: string[]): Promise<void> {
  if (rows.length) await conn.run(`${venueInsert(table)} VALUES ${rows.map((r) => `(${r})`).join(',\n')}`);
}

/**
 * Replace the database's venue with v, and the analytics tables with v's labels as of `labelsAsOf`: a_meta, a
 * minimal a_wallet_metrics (the columns core/market.ts reads) and, only when `snapshot`, a_positions as of then.
 */
async function load(v: Venue, labelsAsOf: number, snapshot = false): Promise<void> {
  for (const t of ['markets', 'wallets', 'fills', 'inventory_events', 'inventory_legs', 'resolutions', 'mids']) await conn.run(`DELETE FROM ${t}`);
  for (const t of ['a_wallet_metrics', 'a_meta', 'a_positions']) await conn.run(`DROP TABLE IF EXISTS ${t}`);
  const t0 = ts(Date.UTC(2026, 0, 1));
  await insert(
    'markets',
    [...v.markets].map(
      (m) => `${m}, '0x${hex(m, 64)}', '0x${hex(m + 1e6, 64)}', NULL, 'Q${m}', 'q-${m}', 'test', '${1000 + 2 * m}', '${1001 + 2 * m}', false, NULL, ${t0}, ${t0}, ${ts(Date.UTC(2027, 0, 1))}, NULL, NULL, NULL, 'test'`,
    ),
  );
  await insert('wallets', [...v.wallets].map((w) => `${w}, '0x${hex(w, 40)}', NULL, 'Holder-${w}', NULL, false`));
  let n = 0;
  await insert(
    'fills',
    v.fills.map(
      (f) =>
        `'0x${hex(++n, 64)}', 0, ${ts(f.t)}, ${f.m}, ${f.o}, ${f.maker}, ${f.taker}, '${f.side}', '${f.match}', ${d(f.price)}, ${d(f.shares)}, ${d(f.price * f.shares)}, ${d(f.fee)}, 1, 'ctf'`,
    ),
  );
  for (const s of v.splits) {
    const tx = `'0x${hex(++n, 64)}'`;
    await insert('inventory_events', [`${tx}, 0, ${ts(s.t)}, ${s.w}, 'SPLIT', ${s.m}, NULL, ${d(s.a)}, ${d(-s.a)}`]);
    await insert('inventory_legs', [`${tx}, 0, ${s.w}, ${s.m}, 0, ${d(s.a)}`, `${tx}, 0, ${s.w}, ${s.m}, 1, ${d(s.a)}`]);
  }
  await insert('mids', v.mids.map((m) => `${m.m}, ${m.o}, ${ts(m.t)}, ${d(m.mid)}`));
  await conn.run(`CREATE TABLE a_wallet_metrics (wallet_id INTEGER, brier DOUBLE, n_resolved_markets INTEGER, smart_money_tags VARCHAR[],
    taker_share DOUBLE, trade_count INTEGER)`);
  await insert(
    'a_wallet_metrics',
    v.metrics.map((m) => `${m.wallet_id}, ${m.brier === null ? 'NULL' : d(m.brier)}, ${m.n}, [${m.tags.map((t) => `'${t}'`).join(', ')}]::VARCHAR[], ${d(m.taker_share)}, ${m.trade_count}`),
  );
  await conn.run(`CREATE TABLE a_meta AS SELECT ${ts(labelsAsOf)} AS as_of`);
  if (snapshot) await conn.run(`CREATE TABLE a_positions AS SELECT * FROM (${positionsSql(new Date(labelsAsOf))})`);
}

beforeAll(async () => {
  ({ instance, conn } = await openMemoryVenue());
  db = duckRunner(conn);
});
afterAll(() => {
  closeMemoryVenue(conn, instance);
});

// ---------------------------------------------------------------------------------------------------------------
// The hand-built market
// ---------------------------------------------------------------------------------------------------------------

/**
 * Market 1, T = minute 60. No fees except F2's taker fee of 1.
 *   minute 0  wallet 7 splits 100: YES 100 + NO 100, no mid yet -> each token costs 0.50
 *   minute 1  YES mid 0.45
 *   F1  m2  wallet 1 buys 100 YES @0.40, maker 2 mints (buys 100 NO @0.60)
 *   F2  m3  wallet 3 buys 50 YES @0.70 paying a fee of 1 (cost 36), maker 4 mints (buys 50 NO @0.30)
 *   F3  m4  wallet 1 buys 100 YES @0.60, maker 2 mints (buys 100 NO @0.40)
 *   F4  m5  wallet 4 sells 20 NO @0.35 to maker 5 (direct)
 *   F5  m6  wallet 6 buys 10 YES @0.55 from maker 1 (direct)
 *   F6  m7  wallet 6 sells 10 YES @0.58 to maker 5 (direct): wallet 6 is flat again
 *   minute 8  YES mid 0.62
 *   F7  m40 wallet 8 buys 40 NO @0.40 from maker 7 (direct)
 *   minute 55 YES mid 0.66
 *   F8  m60 wallet 3 buys 20 YES @0.65 from maker 7 (direct), stamped exactly T: it counts
 * After T (must change nothing as of T): F9 at T + 1 ms (wallet 10 buys 1000 YES @0.90, maker 11 mints),
 *   F10 at minute 70 (wallet 2 sells its 200 NO @0.10 to maker 9), YES mid 0.90 at T + 1 ms.
 *
 * Holders as of T, and their YES cost basis:
 *   wallet 1  YES 190 (cost 40 + 60 = 100 over 200, sold 10 at the average)   -> 0.50
 *   wallet 2  NO 200 (cost 60 + 40 = 100, avg NO 0.50)                         -> 1 - 0.50 = 0.50
 *   wallet 3  YES 70 (cost 36 + 13 = 49)                                        -> 0.70
 *   wallet 4  NO 30 (avg NO 0.30; the sale leaves the average)                  -> 1 - 0.30 = 0.70
 *   wallet 5  NO 20 @0.35 and YES 10 @0.58: (20 * 0.65 + 10 * 0.58) / 30        -> 18.8 / 30 = 0.626667
 *   wallet 7  YES 80 and NO 60, both at 0.50: (80 * 0.50 + 60 * 0.50) / 140     -> 0.50
 *   wallet 8  NO 40 @0.40                                                       -> 0.60
 *
 * Labels (a_wallet_metrics) and weights, w = 1 / (b + 0.05) with b = (n * brier + 30 * 0.25) / (n + 30):
 *   wallet 1  brier 0.10, n 30   b = (3 + 7.5) / 60 = 0.175      w = 1 / 0.225 = 40/9  = 4.4444
 *   wallet 2  no row              b = 0.25                        w = 1 / 0.30  = 10/3  = 3.3333
 *   wallet 3  brier 0.05, n 90   b = (4.5 + 7.5) / 120 = 0.10     w = 1 / 0.15  = 20/3  = 6.6667   tags sharp, whale
 *   wallet 4  brier 0.40, n 10   b = (4 + 7.5) / 40 = 0.2875      w = 1 / 0.3375 = 80/27 = 2.9630  tag contrarian
 *   wallet 5  brier null, n 0    b = 0.25                        w = 10/3                        tag whale
 *   wallet 7  brier 0.25, n 60   b = 0.25                        w = 10/3     maker share 0.9 over 5000 fills, tag early_bird
 *   wallet 8  no row              b = 0.25                        w = 10/3
 * Sum of weights = 40/9 + 4 * 10/3 + 20/3 + 80/27 = 740/27 = 27.4074
 * Sum of w * cost = 2.2222 + 1.6667 + 4.6667 + 2.0741 + 2.0889 + 1.6667 + 2.0000 = 2212/135 = 16.3852
 * Consensus = (2212/135) / (740/27) = 553/925 = 0.597838 (the plain mean would be 0.589524; the mid is 0.66).
 */
const CONSENSUS = 553 / 925;

function handMarket(): Venue {
  return new Venue()
    .market(1)
    .split(at(0), 7, 1, 100)
    .mid(1, at(1), 0.45)
    .fill(at(2), 1, 0, 1, 'BUY', 0.4, 100, 2, 'mint')
    .fill(at(3), 1, 0, 3, 'BUY', 0.7, 50, 4, 'mint', 1)
    .fill(at(4), 1, 0, 1, 'BUY', 0.6, 100, 2, 'mint')
    .fill(at(5), 1, 1, 4, 'SELL', 0.35, 20, 5)
    .fill(at(6), 1, 0, 6, 'BUY', 0.55, 10, 1)
    .fill(at(7), 1, 0, 6, 'SELL', 0.58, 10, 5)
    .mid(1, at(8), 0.62)
    .fill(at(40), 1, 1, 8, 'BUY', 0.4, 40, 7)
    .mid(1, at(55), 0.66)
    .fill(at(60), 1, 0, 3, 'BUY', 0.65, 20, 7)
    .label(1, 0.1, 30)
    .label(3, 0.05, 90, ['sharp', 'whale'])
    .label(4, 0.4, 10, ['contrarian'])
    .label(5, null, 0, ['whale'])
    .label(6, 0.2, 5)
    .label(7, 0.25, 60, ['early_bird'], 0.1, 5000);
}

function withLaterRows(v: Venue): Venue {
  return v
    .fill(T.getTime() + 1, 1, 0, 10, 'BUY', 0.9, 1000, 11, 'mint')
    .fill(at(70), 1, 1, 2, 'SELL', 0.1, 200, 9)
    .mid(1, T.getTime() + 1, 0.9);
}

/** The labels are as of a minute before T (positions are then computed from the venue as of T). */
const LABELS_BEFORE_T = at(59);

const HOLDERS: Record<number, { yes: number; no: number; cost: number; w: number }> = {
  1: { yes: 190, no: 0, cost: 0.5, w: 40 / 9 },
  2: { yes: 0, no: 200, cost: 0.5, w: 10 / 3 },
  3: { yes: 70, no: 0, cost: 0.7, w: 20 / 3 },
  4: { yes: 0, no: 30, cost: 0.7, w: 80 / 27 },
  5: { yes: 10, no: 20, cost: 18.8 / 30, w: 10 / 3 },
  7: { yes: 80, no: 60, cost: 0.5, w: 10 / 3 },
  8: { yes: 0, no: 40, cost: 0.6, w: 10 / 3 },
};

describe('consensus on the hand-built market', () => {
  it('the weight rule: shrunk Brier, w = 1 / (b + 0.05)', () => {
    expect(CONSENSUS_RULE).toEqual({ priorBrier: 0.25, priorMarkets: 30, brierFloor: 0.05 });
    expect(effectiveBrier(null, 500)).toBe(0.25);
    expect(effectiveBrier(0.1, 30)).toBeCloseTo(0.175, 12);
    expect(consensusWeight(null, 0)).toBeCloseTo(10 / 3, 12);
    expect(consensusWeight(0.4, 10)).toBeCloseTo(80 / 27, 12);
    // weights grow as the Brier falls, at any sample size
    for (const n of [1, 30, 300]) expect(consensusWeight(0.05, n)).toBeGreaterThan(consensusWeight(0.2, n));
  });

  it('every holder: YES cost basis (NO holders: 1 - avg NO cost) and weight, worked by hand', async () => {
    await load(handMarket(), LABELS_BEFORE_T);
    const rows = await consensusHolders(db, 1, T);
    expect(rows.map((r) => r.wallet_id)).toEqual([1, 2, 3, 4, 5, 7, 8]);
    for (const r of rows) {
      ConsensusHolder.parse(r);
      const want = HOLDERS[r.wallet_id]!;
      expect(r.yes_shares, `yes ${r.wallet_id}`).toBeCloseTo(want.yes, 9);
      expect(r.no_shares, `no ${r.wallet_id}`).toBeCloseTo(want.no, 9);
      expect(r.yes_cost_basis, `cost ${r.wallet_id}`).toBeCloseTo(want.cost, 12);
      expect(r.weight, `weight ${r.wallet_id}`).toBeCloseTo(want.w, 12);
      expect(r.weight).toBeCloseTo(consensusWeight(r.brier, r.n_resolved_markets), 12);
    }
  });

  it('the consensus is the weighted mean 553/925; market_mid is the latest YES mid <= T', async () => {
    await load(handMarket(), LABELS_BEFORE_T);
    const c = MarketConsensus.parse(await marketConsensus(db, 1, T));
    expect(c.service_consensus_yes).toBeCloseTo(CONSENSUS, 12);
    expect(c).toMatchObject({ market_mid: 0.66, n_positioners: 7 });
    // before any fill: no holder but the splitter (0.50, unmeasured); before anything: nothing, null (never 0).
    // (labels as of minute -2: a build after the as-of moment would be refused)
    await load(handMarket(), at(-2));
    expect(await marketConsensus(db, 1, new Date(at(1)))).toEqual({ service_consensus_yes: 0.5, market_mid: 0.45, n_positioners: 1 });
    expect(await marketConsensus(db, 1, new Date(at(-1)))).toEqual({ service_consensus_yes: null, market_mid: null, n_positioners: 0 });
  });

  it('a NO holder reads 1 - its average NO cost: a mint pair (YES at p, NO at 1 - p) gives exactly p', async () => {
    // wallet 21 buys 100 NO @0.30, maker 22 mints 100 YES @0.70; 21 weighs 20/3, 22 weighs 10/3. Reading the NO
    // holder as 0.30 would give (20/3 * 0.30 + 10/3 * 0.70) / 10 = 0.433; as 1 - 0.30 both read 0.70.
    const v = new Venue().market(2).fill(at(1), 2, 1, 21, 'BUY', 0.3, 100, 22, 'mint').label(21, 0.05, 90);
    await load(v, LABELS_BEFORE_T);
    const rows = await consensusHolders(db, 2, T);
    expect(rows.map((r) => [r.wallet_id, r.yes_shares, r.no_shares])).toEqual([[21, 0, 100], [22, 100, 0]]);
    expect(rows[0]!.yes_cost_basis).toBeCloseTo(1 - 0.3, 12);
    expect((await marketConsensus(db, 2, T)).service_consensus_yes).toBeCloseTo(0.7, 12);
  });

  it('the a_positions shortcut (build as of exactly T) gives the same figures as computing positions as of T', async () => {
    await load(handMarket(), LABELS_BEFORE_T);
    const scan = { c: await marketConsensus(db, 1, T), h: await consensusHolders(db, 1, T), top: await topHolders(db, 1, T, 100), teaser: await marketTeaserStats(db, 1, T) };
    await load(handMarket(), T.getTime(), true);
    const snap = { c: await marketConsensus(db, 1, T), h: await consensusHolders(db, 1, T), top: await topHolders(db, 1, T, 100), teaser: await marketTeaserStats(db, 1, T) };
    expect(snap.c.service_consensus_yes).toBeCloseTo(scan.c.service_consensus_yes!, 12);
    expect(snap.h.map((r) => r.wallet_id)).toEqual(scan.h.map((r) => r.wallet_id));
    expect(snap.top).toEqual(scan.top);
    expect(snap.teaser).toEqual(scan.teaser);
  });
});

describe('top holders', () => {
  it('sorted by shares held, capped at the limit; the public shape carries the pseudonym only', async () => {
    await load(handMarket(), LABELS_BEFORE_T);
    const all = await topHolders(db, 1, T, 100);
    expect(all.map((h) => [h.wallet_id, h.outcome_side, h.shares_held])).toEqual([
      [2, 'NO', 200], [1, 'YES', 190], [7, 'YES', 80], [3, 'YES', 70], [7, 'NO', 60], [8, 'NO', 40], [4, 'NO', 30], [5, 'NO', 20], [5, 'YES', 10],
    ]);
    for (const h of all) TopHolder.parse(h);
    const top5 = await topHolders(db, 1, T);
    expect(top5).toEqual(all.slice(0, 5));
    expect(await topHolders(db, 1, T, 3)).toEqual(all.slice(0, 3));
    const pub = toPublicTopHolders(top5);
    expect(pub[0]).toEqual({ pseudonym: 'Holder-2', outcome_side: 'NO', shares_held: 200 });
    for (const p of pub) expect(Object.keys(PublicTopHolder.parse(p)).sort()).toEqual(['outcome_side', 'pseudonym', 'shares_held']);
    expect(JSON.stringify(pub)).not.toMatch(/0x|wallet_id/);
    // the public schema refuses an internal row outright
    expect(() => PublicTopHolder.parse(top5[0])).toThrow();
    await expect(topHolders(db, 1, T, 0)).rejects.toThrow(RangeError);
    await expect(topHolders(db, 1, T, 101)).rejects.toThrow(RangeError);
  });

  it('a tie in shares is broken by wallet id, then YES first', async () => {
    const v = new Venue().market(3).fill(at(1), 3, 0, 32, 'BUY', 0.5, 10, 31, 'mint').fill(at(2), 3, 0, 30, 'BUY', 0.5, 10, 33, 'mint');
    await load(v, LABELS_BEFORE_T);
    expect((await topHolders(db, 3, T)).map((h) => [h.wallet_id, h.outcome_side])).toEqual([[30, 'YES'], [31, 'NO'], [32, 'YES'], [33, 'NO']]);
  });
});

const sideKeys = ['buy_usdc', 'sell_usdc', 'net_usdc', 'net_shares', 'n_wallets', 'n_fills'] as const;

/** Sum over the cohorts equals the totals; buys - sells = net; net_yes_shares = yes - no. */
function checkFlowSums(f: MarketFlow): void {
  expect(f.cohorts.map((c) => c.cohort)).toEqual([...FLOW_COHORTS]);
  const check = (c: FlowCohort) => {
    for (const s of [c.yes, c.no] as FlowSide[]) {
      expect(s.net_usdc).toBeCloseTo(s.buy_usdc - s.sell_usdc, 6);
      expect(s.n_fills).toBeGreaterThanOrEqual(s.n_wallets);
    }
    expect(c.net_yes_shares).toBeCloseTo(c.yes.net_shares - c.no.net_shares, 6);
    expect(c.n_fills).toBe(c.yes.n_fills + c.no.n_fills);
  };
  for (const c of [...f.cohorts, f.smart_money, f.totals]) check(c);
  for (const o of ['yes', 'no'] as const) {
    for (const k of sideKeys) {
      const sum = f.cohorts.reduce((a, c) => a + c[o][k], 0);
      if (k === 'n_wallets' || k === 'n_fills') expect(sum, `${o}.${k}`).toBe(f.totals[o][k]);
      else expect(sum, `${o}.${k}`).toBeCloseTo(f.totals[o][k], 6);
    }
  }
  expect(f.cohorts.reduce((a, c) => a + c.n_wallets, 0)).toBe(f.totals.n_wallets);
  expect(f.cohorts.reduce((a, c) => a + c.n_fills, 0)).toBe(f.totals.n_fills);
  expect(f.cohorts.reduce((a, c) => a + c.net_yes_shares, 0)).toBeCloseTo(f.totals.net_yes_shares, 6);
  // every fill has a taker leg and a maker leg
  expect(f.totals.n_fills).toBe(2 * f.window_fills);
  const smart = f.cohorts.filter((c) => ['sharp', 'whale', 'other_smart_money'].includes(c.cohort));
  expect(f.smart_money.n_wallets).toBe(smart.reduce((a, c) => a + c.n_wallets, 0));
  expect(f.smart_money.yes.net_usdc).toBeCloseTo(smart.reduce((a, c) => a + c.yes.net_usdc, 0), 6);
}

describe('flow by cohort', () => {
  it('cohorts: liquidity provider first, then sharp, whale, other smart money, everyone else', async () => {
    await load(handMarket(), LABELS_BEFORE_T);
    const rows = await queryRows<{ wallet_id: number; cohort: string }>(conn, `SELECT * FROM (${walletCohortSql()}) ORDER BY wallet_id`);
    expect(Object.fromEntries(rows.map((r) => [r.wallet_id, r.cohort]))).toEqual({
      1: 'everyone_else', 3: 'sharp', 4: 'other_smart_money', 5: 'whale', 6: 'everyone_else', 7: 'liquidity_provider',
    });
  });

  // Window (minute 30, minute 60]: F7 and F8, two legs each.
  //   F7: wallet 8 (everyone_else) buys 40 NO @0.40 = 16; maker 7 (liquidity_provider) sells them
  //   F8: wallet 3 (sharp) buys 20 YES @0.65 = 13; maker 7 sells them
  it('a 30-minute window worked by hand', async () => {
    await load(handMarket(), LABELS_BEFORE_T);
    const f = MarketFlow.parse(await marketFlow(db, 1, T, 0.5));
    const side = (buy: number, sell: number, shares: number, n: number): FlowSide => ({ buy_usdc: buy, sell_usdc: sell, net_usdc: buy - sell, net_shares: shares, n_wallets: n, n_fills: n });
    const none = side(0, 0, 0, 0);
    const by = Object.fromEntries(f.cohorts.map((c) => [c.cohort, c]));
    expect(by.liquidity_provider).toEqual({ cohort: 'liquidity_provider', yes: side(0, 13, -20, 1), no: side(0, 16, -40, 1), net_yes_shares: 20, n_wallets: 1, n_fills: 2 });
    expect(by.sharp).toEqual({ cohort: 'sharp', yes: side(13, 0, 20, 1), no: none, net_yes_shares: 20, n_wallets: 1, n_fills: 1 });
    expect(by.whale).toEqual({ cohort: 'whale', yes: none, no: none, net_yes_shares: 0, n_wallets: 0, n_fills: 0 });
    expect(by.other_smart_money!.n_fills).toBe(0);
    expect(by.everyone_else).toEqual({ cohort: 'everyone_else', yes: none, no: side(16, 0, 40, 1), net_yes_shares: -40, n_wallets: 1, n_fills: 1 });
    expect(f.smart_money).toEqual({ ...by.sharp, cohort: 'smart_money' });
    expect(f.totals).toEqual({ cohort: 'all', yes: { ...side(13, 13, 0, 2) }, no: side(16, 16, 0, 2), net_yes_shares: 0, n_wallets: 3, n_fills: 4 });
    expect(f).toMatchObject({
      market_id: 1, condition_id: `0x${hex(1, 64)}`, as_of: T.toISOString(), window_hours: 0.5, window_start: new Date(at(30)).toISOString(),
      labels_as_of: new Date(LABELS_BEFORE_T).toISOString(), window_volume_usdc: 29, window_fills: 2, last_24h_fills: 8,
      mid_yes_start: 0.62, mid_yes_end: 0.66,
    });
    // 40 + 35 + 60 + 7 + 5.5 + 5.8 + 16 + 13
    expect(f.last_24h_volume_usdc).toBeCloseTo(182.3, 9);
    expect(f.mid_yes_change).toBeCloseTo(0.04, 12);
    checkFlowSums(f);
  });

  it('the default 24 h window: sums over cohorts equal the totals; buys - sells = net', async () => {
    await load(handMarket(), LABELS_BEFORE_T);
    const f = MarketFlow.parse(await marketFlow(db, 1, T));
    expect(f).toMatchObject({ window_hours: 24, window_fills: 8, last_24h_fills: 8, mid_yes_start: null, mid_yes_end: 0.66, mid_yes_change: null });
    expect(f.window_volume_usdc).toBeCloseTo(182.3, 9);
    checkFlowSums(f);
    expect(f.totals.n_wallets).toBe(8); // wallets 1 to 8 traded
    await expect(marketFlow(db, 1, T, 0)).rejects.toThrow(RangeError);
    await expect(marketFlow(db, 1, T, 24 * 31)).rejects.toThrow(RangeError);
  });
});

describe('teaser counts', () => {
  it('24 h volume and fills, holders, smart-money holders (not the liquidity provider), mid and its age', async () => {
    await load(handMarket(), LABELS_BEFORE_T);
    const s = MarketTeaserStats.parse(await marketTeaserStats(db, 1, T));
    // smart money among holders: 3 (sharp), 4 (contrarian), 5 (whale); wallet 7 is tagged but a liquidity provider
    expect(s).toMatchObject({ last_24h_fills: 8, positioner_count: 7, smart_money_positioner_count: 3, current_mid: 0.66, mid_age_seconds: 300 });
    expect(s.last_24h_volume_usdc).toBeCloseTo(182.3, 9);
    // a day later the fills are out of the window; the mid is a day older
    const later = await marketTeaserStats(db, 1, new Date(at(60 + 24 * 60)));
    expect(later).toMatchObject({ last_24h_volume_usdc: 0, last_24h_fills: 0, positioner_count: 7, mid_age_seconds: 300 + 86_400 });
  });
});

describe('as of T: no lookahead, no later labels', () => {
  it('a fill and a mid after T change nothing', async () => {
    const run = async () => ({
      c: await marketConsensus(db, 1, T),
      h: await consensusHolders(db, 1, T),
      top: await topHolders(db, 1, T, 100),
      flow: await marketFlow(db, 1, T),
      flow30: await marketFlow(db, 1, T, 0.5),
      teaser: await marketTeaserStats(db, 1, T),
    });
    await load(handMarket(), LABELS_BEFORE_T);
    const before = await run();
    await load(withLaterRows(handMarket()), LABELS_BEFORE_T);
    const after = await run();
    expect(after).toEqual(before);
    // ...while they do count a moment later
    const later = new Date(at(70));
    expect((await marketConsensus(db, 1, later)).market_mid).toBe(0.9);
    expect((await topHolders(db, 1, later, 1))[0]).toMatchObject({ wallet_id: 10, outcome_side: 'YES', shares_held: 1000 });
  });

  it('labels from a build after T are refused (topHolders needs none); unknown markets are not_found', async () => {
    await load(handMarket(), at(61));
    for (const f of [marketConsensus, consensusHolders, marketFlow, marketTeaserStats] as const) {
      await expect(f(db, 1, T)).rejects.toMatchObject({ name: 'MarketError', code: 'analytics_after_as_of' });
    }
    expect((await topHolders(db, 1, T)).length).toBe(5);
    await conn.run('DROP TABLE a_meta');
    await expect(marketConsensus(db, 1, T)).rejects.toMatchObject({ code: 'analytics_missing' });
    await expect(topHolders(db, 99, T)).rejects.toBeInstanceOf(MarketError);
    await expect(topHolders(db, 99, T)).rejects.toMatchObject({ code: 'not_found' });
    await expect(marketConsensus(db, -1, T)).rejects.toThrow(RangeError);
    expect(await marketIdByConditionId(db, `0x${hex(1, 64).toUpperCase()}`)).toBe(1);
    expect(await marketIdByConditionId(db, `0x${hex(99, 64)}`)).toBeNull();
    expect(await marketIdByConditionId(db, `1; DROP TABLE fills`)).toBeNull();
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Property: the consensus against a brute-force recomputation
// ---------------------------------------------------------------------------------------------------------------

interface RandHolder { yes: [number, number][]; no: [number, number][]; label: null | { brier: number | null; n: number } }

const lot = fc.tuple(fc.integer({ min: 1, max: 200 }), fc.integer({ min: 1, max: 99 }).map((c) => c / 100));
const holderArb: fc.Arbitrary<RandHolder> = fc
  .record({
    yes: fc.array(lot, { maxLength: 3 }),
    no: fc.array(lot, { maxLength: 3 }),
    label: fc.option(fc.record({ brier: fc.option(fc.double({ min: 0, max: 1, noNaN: true })), n: fc.integer({ min: 0, max: 300 }) })),
  })
  .filter((h) => h.yes.length + h.no.length > 0);

describe('property: consensus = brute force, within [min, max] of the holders\' YES cost bases', () => {
  it('random small holder sets', async () => {
    const DEALER = 1000;
    await fc.assert(
      fc.asyncProperty(fc.array(holderArb, { minLength: 1, maxLength: 6 }), async (holders) => {
        // A dealer splits enough of both tokens (no mid: 0.50 each) and sells every lot directly.
        const v = new Venue().market(1);
        const sum = (lots: [number, number][]) => lots.reduce((a, [q]) => a + q, 0);
        const dealerShares = Math.max(sum(holders.flatMap((h) => h.yes)), sum(holders.flatMap((h) => h.no))) + 1;
        v.split(at(0), DEALER, 1, dealerShares);
        let minute = 1;
        holders.forEach((h, i) => {
          const w = i + 1;
          for (const [q, p] of h.yes) v.fill(at(minute++), 1, 0, w, 'BUY', p, q, DEALER);
          for (const [q, p] of h.no) v.fill(at(minute++), 1, 1, w, 'BUY', p, q, DEALER);
          if (h.label) v.label(w, h.label.brier, h.label.n);
        });
        await load(v, LABELS_BEFORE_T);
        const got = await marketConsensus(db, 1, T);

        // brute force: per wallet (YES cost + NO shares - NO cost) / shares; the dealer holds both tokens at 0.50
        const bases: { cost: number; w: number }[] = [{ cost: 0.5, w: 1 / (0.25 + 0.05) }];
        for (const h of holders) {
          const qy = sum(h.yes);
          const qn = sum(h.no);
          const cy = h.yes.reduce((a, [q, p]) => a + q * p, 0);
          const cn = h.no.reduce((a, [q, p]) => a + q * p, 0);
          const n = h.label && h.label.brier !== null ? h.label.n : 0;
          const brier = h.label?.brier ?? 0;
          const b = (n * brier + 30 * 0.25) / (n + 30);
          bases.push({ cost: (cy + qn - cn) / (qy + qn), w: 1 / (b + 0.05) });
        }
        const want = bases.reduce((a, x) => a + x.w * x.cost, 0) / bases.reduce((a, x) => a + x.w, 0);
        expect(got.n_positioners).toBe(holders.length + 1);
        expect(got.service_consensus_yes).toBeCloseTo(want, 9);
        const costs = bases.map((x) => x.cost);
        expect(got.service_consensus_yes!).toBeGreaterThanOrEqual(Math.min(...costs) - 1e-12);
        expect(got.service_consensus_yes!).toBeLessThanOrEqual(Math.max(...costs) + 1e-12);
      }),
      { numRuns: 40 },
    );
  }, 120_000);
});

// ---------------------------------------------------------------------------------------------------------------
// A busy market of a generated venue, after the full analytics build
// ---------------------------------------------------------------------------------------------------------------

/**
 * Equal up to summation order: positions are rounded to 6 decimals, and a sum taken over the market's rows alone
 * can land on the other side of a rounding boundary than the venue-wide one (one unit in the 6th decimal).
 */
function expectNear(got: number, want: number, what: string): void {
  expect(Math.abs(got - want), `${what}: ${got} vs ${want}`).toBeLessThanOrEqual(1.5e-6 + 1e-9 * Math.abs(want));
}

describe('on a generated venue after fullBuild', () => {
  let v: TestVenue;
  let vdb: ColumnarRunner;
  const BUILD_T = new Date('2026-10-25T00:00:00Z');
  let busy: number;
  let converted: number;

  beforeAll(async () => {
    v = await makeVenue({ wallets: 3000, days: 30, seed: 9 });
    vdb = duckRunner(v.conn);
    await fullBuild(vdb, BUILD_T);
    const [b] = await v.rows<{ market_id: number }>(`SELECT market_id FROM fills
      WHERE ts > TIMESTAMP '2026-10-24' AND ts <= TIMESTAMP '2026-10-25' GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1`);
    busy = b!.market_id;
    const [c] = await v.rows<{ market_id: number }>(`SELECT l.market_id FROM inventory_legs l JOIN inventory_events e USING (tx_hash, log_index)
      WHERE e.kind = 'CONVERT' AND e.ts <= TIMESTAMP '2026-10-25' GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1`);
    converted = c!.market_id;
  }, 120_000);
  afterAll(async () => v?.cleanup());

  it('the functions run on a busy market and return schema-valid objects', async () => {
    const c = MarketConsensus.parse(await marketConsensus(vdb, busy, BUILD_T));
    expect(c.n_positioners).toBeGreaterThan(100);
    expect(c.service_consensus_yes).not.toBeNull();
    expect(c.market_mid).not.toBeNull();
    const holders = await consensusHolders(vdb, busy, BUILD_T);
    expect(holders.length).toBe(c.n_positioners);
    for (const h of holders) ConsensusHolder.parse(h);
    const costs = holders.map((h) => h.yes_cost_basis);
    expect(c.service_consensus_yes!).toBeGreaterThanOrEqual(Math.min(...costs));
    expect(c.service_consensus_yes!).toBeLessThanOrEqual(Math.max(...costs));
    const f = MarketFlow.parse(await marketFlow(vdb, busy, BUILD_T));
    expect(f.window_fills).toBeGreaterThan(100);
    checkFlowSums(f);
    const s = MarketTeaserStats.parse(await marketTeaserStats(vdb, busy, BUILD_T));
    expect(s.positioner_count).toBe(c.n_positioners);
    expect(s.last_24h_fills).toBe(f.last_24h_fills);
    expect(s.smart_money_positioner_count).toBeGreaterThan(0);
    expect(s.smart_money_positioner_count).toBeLessThanOrEqual(s.positioner_count);
    for (const h of toPublicTopHolders(await topHolders(vdb, busy, BUILD_T))) PublicTopHolder.parse(h);
  }, 60_000);

  it("top holders' shares equal the positions table's", async () => {
    for (const m of [busy, converted]) {
      const top = await topHolders(vdb, m, BUILD_T, 20);
      const want = await v.rows<{ wallet_id: number; outcome_index: number; held: number }>(`SELECT wallet_id, outcome_index, shares - redeemed_shares AS held
        FROM a_positions WHERE market_id = ${m} AND shares - redeemed_shares > 1e-6 ORDER BY held DESC, wallet_id, outcome_index LIMIT 20`);
      expect(top.map((h) => [h.wallet_id, h.outcome_side, h.shares_held])).toEqual(want.map((r) => [r.wallet_id, r.outcome_index === 0 ? 'YES' : 'NO', r.held]));
    }
  }, 60_000);

  it('positions computed for one market as of T equal a_positions (busy market; neg-risk market with conversions)', async () => {
    for (const m of [busy, converted]) {
      const got = await vdb.all<Record<string, unknown>>(`SELECT * FROM (${marketPositionsSql(m, BUILD_T)}) ORDER BY wallet_id, outcome_index`);
      const want = await vdb.all<Record<string, unknown>>(`SELECT * FROM a_positions WHERE market_id = ${m} ORDER BY wallet_id, outcome_index`);
      expect(got.length).toBe(want.length);
      expect(got.length).toBeGreaterThan(50);
      want.forEach((w, i) => {
        // every column the one-market SQL computes (a_positions also carries the stream's alpha partials)
        for (const [k, y] of Object.entries(got[i]!)) {
          expect(k in w, k).toBe(true);
          const x = w[k];
          if (typeof x === 'number') expectNear(y as number, x, `${m} row ${i} ${k}`);
          else expect(y, `${m} row ${i} ${k}`).toEqual(x);
        }
      });
      // and through the functions: a moment after the build (no row in between) reads the venue, not a_positions
      const justAfter = new Date(BUILD_T.getTime() + 1);
      const scanned = await topHolders(vdb, m, justAfter, 20);
      const snapshot = await topHolders(vdb, m, BUILD_T, 20);
      expect(scanned.map((h) => [h.wallet_id, h.outcome_side])).toEqual(snapshot.map((h) => [h.wallet_id, h.outcome_side]));
      scanned.forEach((h, i) => expectNear(h.shares_held, snapshot[i]!.shares_held, `${m} holder ${i}`));
      const a = await marketConsensus(vdb, m, BUILD_T);
      const b = await marketConsensus(vdb, m, justAfter);
      expect(b.n_positioners).toBe(a.n_positioners);
      expect(b.service_consensus_yes!).toBeCloseTo(a.service_consensus_yes!, 9);
    }
  }, 60_000);

  it('the planted market makers are liquidity providers; no other wallet is', async () => {
    const rows = await v.rows<{ archetype: string; n: number }>(`SELECT t.archetype, count(*)::INTEGER AS n FROM (${walletCohortSql()}) c
      JOIN truth_wallets t USING (wallet_id) WHERE c.cohort = 'liquidity_provider' GROUP BY 1`);
    const [mm] = await v.rows<{ n: number }>(`SELECT count(*)::INTEGER AS n FROM truth_wallets t JOIN a_wallet_metrics USING (wallet_id) WHERE t.archetype = 'market_maker'`);
    expect(rows).toEqual([{ archetype: 'market_maker', n: mm!.n }]);
  });
});
