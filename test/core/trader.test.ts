/**
 * Traders (core/trader/): hand-built venues with worked examples for the calibration record, the positions feed,
 * the activity feed and its cursor, top-ROI trades, copy-fitness and the playbook; the verdict rules on their own;
 * and a generated venue where a planted market maker must copy badly and the top sharp must be recommended.
 */
import { createHash } from 'node:crypto';
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fullBuild } from '../../core/analytics/build.ts';
import type { ColumnarRunner, QueryRunner } from '../../core/query.ts';
import {
  ActivityItem,
  CopyFitness,
  TopRoiTrades,
  TraderActivity,
  TraderCalibration,
  TraderPlaybook,
  TraderPositions,
  copyFitness,
  copyFlags,
  topRoiTrades,
  traderActivity,
  traderCalibration,
  traderPlaybook,
  traderPositions,
  traderTid,
  verdictFor,
  type VerdictInputs,
} from '../../core/trader/index.ts';
import { duckRunner } from '../../data/runner.ts';
import { makeVenue, type TestVenue } from '../helpers/venue.ts';
import { closeMemoryVenue, openMemoryVenue } from '../helpers/memory-venue.ts';
import { venueInsert } from '../../data/schema.ts';

// ---------------------------------------------------------------------------------------------------------------
// A tiny venue builder (times in epoch ms) and its loader into an in-memory DuckDB
// ---------------------------------------------------------------------------------------------------------------

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const T0 = Date.UTC(2026, 2, 1);
/** T0 + n days + h hours */
const day = (n: number, h = 0) => T0 + n * DAY + h * HOUR;
const hex = (n: number, width: number) => n.toString(16).padStart(width, '0');
/** a realistic-looking proxy address (so "no raw address in the output" means something) */
const addressOf = (w: number) => `0x${createHash('sha256').update(`wallet-${w}`).digest('hex').slice(0, 40)}`;

type Side = 'BUY' | 'SELL';
type Match = 'direct' | 'mint' | 'merge';
interface Fill { tx: string; li: number; t: number; m: number; o: number; maker: number; taker: number; side: Side; match: Match; price: number; shares: number; fee: number }
interface Inv { tx: string; li: number; t: number; w: number; kind: string; m: number | null; amount: number; usdc: number; legs: { m: number; o: number; d: number }[] }

class V {
  markets = new Map<number, { category: string; liquidity: number | null }>();
  wallets = new Map<number, string | null>();
  fills: Fill[] = [];
  inv: Inv[] = [];
  res: { m: number; winner: 'YES' | 'NO' | 'INVALID'; t: number }[] = [];
  mids: { m: number; o: number; t: number; mid: number }[] = [];
  private n = 0;
  tx(): string {
    return `0x${hex(++this.n, 64)}`;
  }
  wallet(w: number, username: string | null = null): this {
    if (!this.wallets.has(w) || username) this.wallets.set(w, username);
    return this;
  }
  market(m: number, category = 'test', liquidity: number | null = 100_000): this {
    this.markets.set(m, { category, liquidity });
    return this;
  }
  fill(t: number, m: number, o: number, taker: number, side: Side, price: number, shares: number, maker: number, match: Match = 'direct', fee = 0, tx?: string, li = 0): this {
    this.wallet(taker).wallet(maker);
    this.fills.push({ tx: tx ?? this.tx(), li, t, m, o, maker, taker, side, match, price, shares, fee });
    return this;
  }
  split(t: number, w: number, m: number, a: number): this {
    this.wallet(w);
    this.inv.push({ tx: this.tx(), li: 0, t, w, kind: 'SPLIT', m, amount: a, usdc: -a, legs: [{ m, o: 0, d: a }, { m, o: 1, d: a }] });
    return this;
  }
  merge(t: number, w: number, m: number, a: number): this {
    this.inv.push({ tx: this.tx(), li: 0, t, w, kind: 'MERGE', m, amount: a, usdc: a, legs: [{ m, o: 0, d: -a }, { m, o: 1, d: -a }] });
    return this;
  }
  redeem(t: number, w: number, m: number, o: number, q: number, payout: number): this {
    this.inv.push({ tx: this.tx(), li: 0, t, w, kind: 'REDEEM', m, amount: q * payout, usdc: q * payout, legs: [{ m, o, d: -q }] });
    return this;
  }
  resolve(m: number, winner: 'YES' | 'NO' | 'INVALID', t: number): this {
    this.res.push({ m, winner, t });
    return this;
  }
  mid(m: number, o: number, t: number, mid: number): this {
    this.mids.push({ m, o, t, mid });
    return this;
  }
}

let instance: DuckDBInstance;
let conn: DuckDBConnection;
let db: ColumnarRunner;

beforeAll(async () => {
  ({ instance, conn } = await openMemoryVenue());
  db = duckRunner(conn);
});
afterAll(() => {
  closeMemoryVenue(conn, instance);
});

const d = (x: number) => `'${x}'::DOUBLE`;
const ts = (ms: number) => `make_timestamp(${ms * 1000}::BIGINT)`;
const s = (x: string | null) => (x === null ? 'NULL' : `'${x.replaceAll("'", "''")}'`);

async function insert(table: string, rows: string[]): Promise<void> {
  if (rows.length) await conn.run(`${venueInsert(table)} VALUES ${rows.map((r) => `(${r})`).join(',\n')}`);
}

async function load(v: V): Promise<void> {
  for (const t of ['markets', 'wallets', 'fills', 'inventory_events', 'inventory_legs', 'resolutions', 'mids']) await conn.run(`DELETE FROM ${t}`);
  const open = ts(T0 - 30 * DAY);
  await insert(
    'markets',
    [...v.markets].map(
      ([m, x]) =>
        `${m}, '0x${hex(m, 64)}', '0x${hex(m + 1e6, 64)}', NULL, 'Question ${m}?', 'question-${m}', '${x.category}', '${1000 + 2 * m}', '${1001 + 2 * m}', ` +
        `false, NULL, ${open}, ${open}, ${ts(T0 + 400 * DAY)}, NULL, ${x.liquidity === null ? 'NULL' : d(x.liquidity)}, NULL, 'test'`,
    ),
  );
  await insert('wallets', [...v.wallets].map(([w, u]) => `${w}, '${addressOf(w)}', ${s(u)}, 'Pseudo-${w}', NULL, false`));
  await insert(
    'fills',
    v.fills.map(
      (f) =>
        `'${f.tx}', ${f.li}, ${ts(f.t)}, ${f.m}, ${f.o}, ${f.maker}, ${f.taker}, '${f.side}', '${f.match}', ${d(f.price)}, ${d(f.shares)}, ${d(f.price * f.shares)}, ${d(f.fee)}, 1, 'ctf'`,
    ),
  );
  await insert('inventory_events', v.inv.map((e) => `'${e.tx}', ${e.li}, ${ts(e.t)}, ${e.w}, '${e.kind}', ${e.m ?? 'NULL'}, NULL, ${d(e.amount)}, ${d(e.usdc)}`));
  await insert('inventory_legs', v.inv.flatMap((e) => e.legs.map((l) => `'${e.tx}', ${e.li}, ${e.w}, ${l.m}, ${l.o}, ${d(l.d)}`)));
  await insert(
    'resolutions',
    v.res.map((r) => {
      const [num, py, pn, wi] = r.winner === 'YES' ? ['[1, 0]', 1, 0, 0] : r.winner === 'NO' ? ['[0, 1]', 0, 1, 1] : ['[1, 1]', 0.5, 0.5, -1];
      return `${r.m}, '${r.winner}', ${wi}, ${num}, ${d(py as number)}, ${d(pn as number)}, 2, ${ts(r.t)}, '0xres${r.m}'`;
    }),
  );
  await insert('mids', v.mids.map((m) => `${m.m}, ${m.o}, ${ts(m.t)}, ${d(m.mid)}`));
}

// ---------------------------------------------------------------------------------------------------------------
// 1. Calibration record
// ---------------------------------------------------------------------------------------------------------------

describe('traderCalibration: worked example', () => {
  // Wallet 1 buys (taker, mint against maker 9), T = day 60:
  //   m1 politics: YES 100 @0.05, NO wins (day 10, 50 days before T)      p 0.05  o 0   bin 0
  //   m2 politics: YES 100 @0.20, YES wins (day 50)                         p 0.20  o 1   bin 2
  //   m3 sports:   YES 100 @0.22, NO wins (day 50)                          p 0.22  o 0   bin 2
  //   m4 sports:   YES 50 @0.70 + 50 @0.80 (share-weighted p 0.75), YES wins p 0.75  o 1   bin 7
  //   m5 sports:   YES 100 @0.95, YES wins                                  p 0.95  o 1   bin 9
  //   m6 INVALID (void: left out), m7 unresolved (left out), m8 resolves on day 61 > T (left out).
  // Brier = (0.0025 + 0.64 + 0.0484 + 0.0625 + 0.0025) / 5 = 0.7559 / 5 = 0.15118
  // excess = (0.05 - 0.80 + 0.22 - 0.25 - 0.05) / 5 = -0.83 / 5 = -0.166
  // z = -0.83 / sqrt(0.0475 + 0.16 + 0.1716 + 0.1875 + 0.0475) = -0.83 / sqrt(0.6141) = -1.05916...
  // bins: 0 {n 1, pm 0.05, or 0}; 2 {n 2, pm 0.21, or 0.5}; 7 {n 1, pm 0.75, or 1}; 9 {n 1, pm 0.95, or 1};
  //       1, 3, 4, 5, 6, 8 empty: n 0, predicted_mean and observed_rate null.
  // scope 30d (resolved after day 30): m2..m5 -> n_total 4; scope category:politics: m1, m2 -> n_total 2.
  const T = new Date(day(60));
  beforeAll(async () => {
    const v = new V()
      .market(1, 'politics').market(2, 'politics').market(3, 'sports').market(4, 'sports').market(5, 'sports')
      .market(6, 'sports').market(7, 'sports').market(8, 'sports')
      .wallet(5, 'idle') // a known wallet that never traded
      .fill(day(1), 1, 0, 1, 'BUY', 0.05, 100, 9, 'mint')
      .fill(day(40), 2, 0, 1, 'BUY', 0.2, 100, 9, 'mint')
      .fill(day(40), 3, 0, 1, 'BUY', 0.22, 100, 9, 'mint')
      .fill(day(40), 4, 0, 1, 'BUY', 0.7, 50, 9, 'mint')
      .fill(day(41), 4, 0, 1, 'BUY', 0.8, 50, 9, 'mint')
      .fill(day(40), 5, 0, 1, 'BUY', 0.95, 100, 9, 'mint')
      .fill(day(40), 6, 0, 1, 'BUY', 0.5, 100, 9, 'mint')
      .fill(day(40), 7, 0, 1, 'BUY', 0.5, 100, 9, 'mint')
      .fill(day(40), 8, 0, 1, 'BUY', 0.5, 100, 9, 'mint')
      .resolve(1, 'NO', day(10)).resolve(2, 'YES', day(50)).resolve(3, 'NO', day(50)).resolve(4, 'YES', day(50))
      .resolve(5, 'YES', day(50)).resolve(6, 'INVALID', day(50)).resolve(8, 'YES', day(61));
    await load(v);
  });

  it('10 bins with empty bins kept, Brier, excess and z by hand', async () => {
    const c = (await traderCalibration(db, 1, T))!;
    expect(TraderCalibration.parse(c)).toEqual(c);
    expect(c.proxy_wallet).toBe(addressOf(1));
    expect(c.scope).toBe('all');
    expect(c.bins).toHaveLength(10);
    expect(c.n_total).toBe(5);
    expect(c.n_markets).toBe(5);
    expect(c.ranked).toBe(false);
    expect(c.brier).toBeCloseTo(0.15118, 12);
    expect(c.calibration_excess).toBeCloseTo(-0.166, 12);
    expect(c.calibration_excess_z).toBeCloseTo(-0.83 / Math.sqrt(0.6141), 12);
    const want: Record<number, [number, number, number]> = { 0: [1, 0.05, 0], 2: [2, 0.21, 0.5], 7: [1, 0.75, 1], 9: [1, 0.95, 1] };
    for (const b of c.bins) {
      expect(b.bin_label).toBe(`${b.bin_idx * 10}-${b.bin_idx * 10 + 10}%`);
      const w = want[b.bin_idx];
      if (w) {
        expect(b.n).toBe(w[0]);
        expect(b.predicted_mean).toBeCloseTo(w[1], 12);
        expect(b.observed_rate).toBeCloseTo(w[2], 12);
      } else expect(b).toMatchObject({ n: 0, predicted_mean: null, observed_rate: null });
    }
    expect(c.bins.reduce((a, b) => a + b.n, 0)).toBe(c.n_total);
  });

  it('scopes: trailing window of resolutions and category', async () => {
    const w30 = (await traderCalibration(db, 1, T, '30d'))!;
    expect(w30.n_total).toBe(4);
    expect(w30.calibration_excess).toBeCloseTo((-0.8 + 0.22 - 0.25 - 0.05) / 4, 12);
    const pol = (await traderCalibration(db, 1, T, 'category:politics'))!;
    expect(pol.n_total).toBe(2);
    expect(pol.bins.filter((b) => b.n > 0).map((b) => b.bin_idx)).toEqual([0, 2]);
    await expect(traderCalibration(db, 1, T, 'weekly')).rejects.toThrow();
  });

  it('as of an earlier T only what had resolved by then; lookup by address; unknown -> null', async () => {
    const early = (await traderCalibration(db, 1, new Date(day(20))))!;
    expect(early.n_total).toBe(1); // only m1 had resolved
    const byAddress = (await traderCalibration(db, addressOf(1).toUpperCase().replace('0X', '0x'), T))!;
    expect(byAddress.n_total).toBe(5);
    expect(await traderCalibration(db, 424242, T)).toBeNull();
    expect(await traderCalibration(db, `0x${'ab'.repeat(20)}`, T)).toBeNull();
    expect(await traderCalibration(db, 'not-an-address', T)).toBeNull();
    // a known wallet with nothing resolved: unmeasured, never 0
    const idle = (await traderCalibration(db, 5, T))!;
    expect(idle).toMatchObject({ n_total: 0, n_markets: 0, brier: null, calibration_excess: null, calibration_excess_z: null, ranked: false });
    expect(idle.bins.every((b) => b.n === 0 && b.observed_rate === null)).toBe(true);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// 2. Positions feed
// ---------------------------------------------------------------------------------------------------------------

describe('traderPositions: status and winner_outcome', () => {
  // Wallet 1 buys YES (mint against maker 9) unless noted; T = day 30.
  //   m1 YES wins day 10: 100 @0.40, never redeemed       -> REDEEMABLE (pnl_label WON), realized 100 - 40 = 60
  //   m2 YES wins day 10: 100 @0.30, redeemed day 11      -> WON, realized 70
  //   m3 NO wins day 10:  100 @0.60                       -> LOST, realized -60, winner NO
  //   m4 INVALID day 10:  100 @0.50, redeemed at 0.50     -> P&L 0, void -> VOID, winner INVALID
  //   m5 open, YES mid 0.55: 100 @0.45                    -> OPEN, unrealized 100 * 0.55 - 45 = 10, winner null
  //   m6 YES wins day 40 (after T): NO 100 @0.20          -> OPEN at T; LOST as of day 50
  // Newest activity first: m6 (day 6), m5, m4, m3, m2, m1 (day 1).
  const T = new Date(day(30));
  beforeAll(async () => {
    const v = new V();
    for (let m = 1; m <= 6; m++) v.market(m);
    v.fill(day(1), 1, 0, 1, 'BUY', 0.4, 100, 9, 'mint')
      .fill(day(2), 2, 0, 1, 'BUY', 0.3, 100, 9, 'mint')
      .fill(day(3), 3, 0, 1, 'BUY', 0.6, 100, 9, 'mint')
      .fill(day(4), 4, 0, 1, 'BUY', 0.5, 100, 9, 'mint')
      .fill(day(5), 5, 0, 1, 'BUY', 0.45, 100, 9, 'mint')
      .fill(day(6), 6, 1, 1, 'BUY', 0.2, 100, 9, 'mint')
      .mid(5, 0, day(6), 0.55)
      .resolve(1, 'YES', day(10)).resolve(2, 'YES', day(10)).resolve(3, 'NO', day(10)).resolve(4, 'INVALID', day(10)).resolve(6, 'YES', day(40))
      .redeem(day(11), 1, 2, 0, 100, 1)
      .redeem(day(11), 1, 4, 0, 100, 0.5);
    await load(v);
  });

  it('each status, winner_outcome and P&L by hand, newest activity first', async () => {
    const p = (await traderPositions(db, 1, T))!;
    expect(TraderPositions.parse(p)).toEqual(p);
    expect(p.total_rows).toBe(6);
    expect(p.next_cursor).toBeNull();
    const got = p.rows.map((r) => [r.market_slug, r.status, r.winner_outcome, r.pnl_label, r.outcome]);
    expect(got).toEqual([
      ['question-6', 'OPEN', null, null, 'NO'],
      ['question-5', 'OPEN', null, null, 'YES'],
      ['question-4', 'VOID', 'INVALID', 'VOID', 'YES'],
      ['question-3', 'LOST', 'NO', 'LOST', 'YES'],
      ['question-2', 'WON', 'YES', 'WON', 'YES'],
      ['question-1', 'REDEEMABLE', 'YES', 'WON', 'YES'],
    ]);
    const by = new Map(p.rows.map((r) => [r.market_slug, r]));
    expect(by.get('question-1')!.realized_pnl).toBeCloseTo(60, 9);
    expect(by.get('question-2')!).toMatchObject({ redeemed_shares: 100 });
    expect(by.get('question-2')!.realized_pnl).toBeCloseTo(70, 9);
    expect(by.get('question-3')!.realized_pnl).toBeCloseTo(-60, 9);
    expect(by.get('question-4')!.total_pnl).toBeCloseTo(0, 9);
    expect(by.get('question-5')!).toMatchObject({ mark: 0.55, resolved_at: null, closed: false });
    expect(by.get('question-5')!.unrealized_pnl).toBeCloseTo(10, 9);
    expect(by.get('question-1')!.resolved_at).toBe(new Date(day(10)).toISOString());
    expect(by.get('question-1')!.condition_id).toBe(`0x${hex(1, 64)}`);
    expect(by.get('question-6')!.opened_at).toBe(new Date(day(6)).toISOString());
    // the counterparty's positions are not in wallet 1's feed
    expect(p.rows.every((r) => r.market_title.startsWith('Question'))).toBe(true);
  });

  it('as of a later T the market resolved after the first T reads LOST', async () => {
    const p = (await traderPositions(db, 1, new Date(day(50)), { status: 'LOST' }))!;
    expect(p.rows.map((r) => [r.market_slug, r.winner_outcome])).toEqual([
      ['question-6', 'YES'],
      ['question-3', 'NO'],
    ]);
  });

  it('status filter, cursor pages concatenate to the full feed, the cursor pins the first T', async () => {
    const won = (await traderPositions(db, 1, T, { status: ['WON', 'REDEEMABLE'] }))!;
    expect(won.rows.map((r) => r.market_slug)).toEqual(['question-2', 'question-1']);
    expect((await traderPositions(db, 1, T, { status: 'open,void' }))!.total_rows).toBe(3);
    const full = (await traderPositions(db, 1, T))!.rows.map((r) => r.market_slug);
    for (const limit of [1, 2, 4, 5]) {
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        // later pages are asked "as of" a later moment: the cursor keeps them at the first page's T
        const page = (await traderPositions(db, 1, pages ? new Date(day(50)) : T, { limit, cursor }))!;
        expect(page.rows.length).toBeLessThanOrEqual(limit);
        expect(page.total_rows).toBe(6);
        expect(page.as_of).toBe(T.toISOString());
        seen.push(...page.rows.map((r) => r.market_slug));
        cursor = page.next_cursor ?? undefined;
        pages++;
      } while (cursor);
      expect(seen).toEqual(full);
      expect(pages).toBe(Math.ceil(6 / limit));
    }
    await expect(traderPositions(db, 1, T, { cursor: 'garbage' })).rejects.toThrow();
    await expect(traderPositions(db, 1, T, { limit: 0 })).rejects.toThrow();
    await expect(traderPositions(db, 1, T, { limit: 201 })).rejects.toThrow();
    await expect(traderPositions(db, 1, T, { status: 'PENDING' })).rejects.toThrow();
    const act = (await traderActivity(db, 1, T, { limit: 1 }))!;
    await expect(traderPositions(db, 1, T, { cursor: act.next_cursor! })).rejects.toThrow(); // another feed's cursor
    expect(await traderPositions(db, 77, T)).toBeNull();
  });
});

// ---------------------------------------------------------------------------------------------------------------
// 3. Activity feed
// ---------------------------------------------------------------------------------------------------------------

describe('traderActivity: unified feed, ordering and cursor', () => {
  // Wallet 1, T = day 30 (tx hashes are numbered in the order the builder creates them):
  //   tx1 day 1 00:00, log 0: buys 100 YES m1 @0.40 (taker, mint vs maker 9); log 1: buys 50 YES m1 @0.41
  //   tx2 day 1 00:00: splits 100 USDC on m2 (same instant as tx1)
  //   tx3 day 2: wallet 2 (taker) buys 50 YES m2 from wallet 1 (maker, direct): wallet 1's leg SELL @0.60
  //   tx4 day 3: merges 50 on m2
  //   m1 resolves YES on day 4; tx5 day 5: redeems 150 YES m1 -> 150 USDC
  //   tx6 day 40 (after T): buys m3 -> not in the feed as of T
  // Newest first: tx5 redeem, tx4 merge, tx3 trade (maker), then at day 1 by tx hash desc: tx2 split, tx1 log 1, tx1 log 0.
  const T = new Date(day(30));
  const TX = (n: number) => `0x${hex(n, 64)}`;
  beforeAll(async () => {
    const v = new V().market(1).market(2).market(3);
    const tx1 = v.tx();
    v.fill(day(1), 1, 0, 1, 'BUY', 0.4, 100, 9, 'mint', 0, tx1, 0)
      .fill(day(1), 1, 0, 1, 'BUY', 0.41, 50, 9, 'mint', 0, tx1, 1)
      .split(day(1), 1, 2, 100)
      .fill(day(2), 2, 0, 2, 'BUY', 0.6, 50, 1, 'direct')
      .merge(day(3), 1, 2, 50)
      .resolve(1, 'YES', day(4))
      .redeem(day(5), 1, 1, 0, 150, 1)
      .fill(day(40), 3, 0, 1, 'BUY', 0.5, 10, 9, 'mint');
    await load(v);
  });

  const key = (i: ActivityItem) => `${i.type}:${i.tx_hash}:${i.log_index}`;

  it('newest first with a total order on ties; items by hand', async () => {
    const a = (await traderActivity(db, 1, T))!;
    expect(TraderActivity.parse(a)).toEqual(a);
    expect(a.items.map(key)).toEqual([`redeem:${TX(5)}:0`, `merge:${TX(4)}:0`, `trade:${TX(3)}:0`, `split:${TX(2)}:0`, `trade:${TX(1)}:1`, `trade:${TX(1)}:0`]);
    expect(a.next_cursor).toBeNull();
    const [redeem, merge, maker, split, buy1] = a.items;
    expect(redeem).toMatchObject({ type: 'redeem', usdc_delta: 150, legs: [{ condition_id: `0x${hex(1, 64)}`, outcome: 'YES', shares_delta: -150 }], legs_total: 1 });
    expect(merge).toMatchObject({ type: 'merge', amount: 50, usdc_delta: 50, legs_total: 2 });
    expect(maker).toMatchObject({ type: 'trade', role: 'maker', side: 'SELL', outcome: 'YES', price: 0.6, shares: 50, size_usdc: 30, fee_usdc: 0 });
    expect(split).toMatchObject({
      type: 'split',
      usdc_delta: -100,
      market: { condition_id: `0x${hex(2, 64)}`, title: 'Question 2?', slug: 'question-2' },
      legs: [
        { outcome: 'YES', shares_delta: 100 },
        { outcome: 'NO', shares_delta: 100 },
      ],
    });
    expect(buy1).toMatchObject({ type: 'trade', role: 'taker', side: 'BUY', price: 0.41, shares: 50, ts: new Date(day(1)).toISOString() });
  });

  it('pages of every size concatenate to the full feed with no gap or duplicate', async () => {
    const full = (await traderActivity(db, 1, T))!.items.map(key);
    for (let limit = 1; limit <= 7; limit++) {
      const seen: string[] = [];
      let cursor: string | undefined;
      do {
        const page = (await traderActivity(db, 1, T, { limit, cursor }))!;
        seen.push(...page.items.map(key));
        cursor = page.next_cursor ?? undefined;
      } while (cursor);
      expect(seen, `limit ${limit}`).toEqual(full);
    }
  });

  it('type filters; later rows appear only as of a later T; unknown wallet -> null', async () => {
    expect((await traderActivity(db, 1, T, { types: ['redeem', 'split'] }))!.items.map((i) => i.type)).toEqual(['redeem', 'split']);
    expect((await traderActivity(db, 1, T, { types: 'trade' }))!.items).toHaveLength(3);
    expect((await traderActivity(db, 1, new Date(day(50))))!.items).toHaveLength(7);
    expect((await traderActivity(db, 1, new Date(day(2))))!.items.map(key)).toEqual([`trade:${TX(3)}:0`, `split:${TX(2)}:0`, `trade:${TX(1)}:1`, `trade:${TX(1)}:0`]);
    await expect(traderActivity(db, 1, T, { types: ['swap'] })).rejects.toThrow();
    expect(await traderActivity(db, 4040, T)).toBeNull();
  });
});

// ---------------------------------------------------------------------------------------------------------------
// 4. Top-ROI trades
// ---------------------------------------------------------------------------------------------------------------

describe('topRoiTrades: ranking, filters, opaque ids', () => {
  // Maker 9 splits 10,000 on every market on day 0 and sells to the takers (direct); its own positions come from
  // splits, so they are never "trades" here. T = day 60. Wallet 1 is named 'alice'; the others are pseudonyms.
  //   m1 politics, YES wins day 59:
  //     w1 buys YES 200 @0.25: cost 50 (exactly the minimum), payout 200, profit 150, roi 4.0
  //     w2 buys YES 100 @0.40: cost 40 < 50 -> left out (dust)
  //     w3 buys NO 100 @0.70: cost 70, payout 0, profit -70, roi 0
  //   m2 sports, NO wins day 58:
  //     w2 buys NO 400 @0.50 (cost 200), sells 200 @0.80 (+160 proceeds): profit 60 + 200 - 100 = 160,
  //        payout value 160 + 200 = 360, roi 1.8
  //     w4 buys NO 100 @0.60 with a taker fee of 1: cost 61, payout 100, profit 39, roi 100/61 = 1.6393..., entry 0.60
  //   m3 sports, YES wins day 20 (40 days before T): w1 buys YES 1000 @0.10: cost 100, profit 900, roi 10
  //   m4 INVALID day 59: w1 buys YES 200 @0.50 -> left out (void)
  //   m5 never resolves; m6 resolves on day 61 > T: w1's positions there are left out
  const T = new Date(day(60));
  const KEY = 'test-secret-key-0123456789';
  beforeAll(async () => {
    const v = new V().wallet(1, 'alice');
    v.market(1, 'politics').market(2, 'sports').market(3, 'sports').market(4, 'sports').market(5, 'sports').market(6, 'sports');
    for (let m = 1; m <= 6; m++) v.split(day(0), 9, m, 10_000);
    v.fill(day(10), 1, 0, 1, 'BUY', 0.25, 200, 9)
      .fill(day(10), 1, 0, 2, 'BUY', 0.4, 100, 9)
      .fill(day(10), 1, 1, 3, 'BUY', 0.7, 100, 9)
      .fill(day(10), 2, 1, 2, 'BUY', 0.5, 400, 9)
      .fill(day(11), 2, 1, 2, 'SELL', 0.8, 200, 9)
      .fill(day(10), 2, 1, 4, 'BUY', 0.6, 100, 9, 'direct', 1)
      .fill(day(5), 3, 0, 1, 'BUY', 0.1, 1000, 9)
      .fill(day(10), 4, 0, 1, 'BUY', 0.5, 200, 9)
      .fill(day(10), 5, 0, 1, 'BUY', 0.3, 500, 9)
      .fill(day(10), 6, 0, 1, 'BUY', 0.3, 500, 9)
      .resolve(1, 'YES', day(59)).resolve(2, 'NO', day(58)).resolve(3, 'YES', day(20)).resolve(4, 'INVALID', day(59)).resolve(6, 'YES', day(61));
    await load(v);
  });

  const rows = (r: TopRoiTrades) => r.trades.map((t) => [t.rank, t.wallet_label, t.market_slug, Number(t.roi_x.toFixed(4)), Number(t.profit_usdc.toFixed(6))]);

  it('default: last 30 days, ROI descending, cost >= $50, by hand', async () => {
    const r = await topRoiTrades(db, T, {}, KEY);
    expect(TopRoiTrades.parse(r)).toEqual(r);
    expect(rows(r)).toEqual([
      [1, 'alice', 'question-1', 4, 150],
      [2, 'Pseudo-2', 'question-2', 1.8, 160],
      [3, 'Pseudo-4', 'question-2', Number((100 / 61).toFixed(4)), 39],
      [4, 'Pseudo-3', 'question-1', 0, -70],
    ]);
    const w4 = r.trades[2]!;
    expect(w4.cost_usdc).toBeCloseTo(61, 9);
    expect(w4.entry_price).toBeCloseTo(0.6, 12);
    expect(w4).toMatchObject({ category: 'sports', outcome: 'NO', resolved_at: new Date(day(58)).toISOString(), display: { username: null, pseudonym: 'Pseudo-4' } });
    expect(r.trades[0]!.display).toEqual({ username: 'alice', pseudonym: 'Pseudo-1' });
  });

  it('sort, direction, category, window and limit', async () => {
    expect(rows(await topRoiTrades(db, T, { sort: 'profit' }, KEY)).map((x) => x[4])).toEqual([160, 150, 39, -70]);
    expect(rows(await topRoiTrades(db, T, { dir: 'asc' }, KEY)).map((x) => x[3])).toEqual([0, Number((100 / 61).toFixed(4)), 1.8, 4]);
    expect(rows(await topRoiTrades(db, T, { category: 'Politics' }, KEY)).map((x) => x[2])).toEqual(['question-1', 'question-1']);
    expect(rows(await topRoiTrades(db, T, { since_days: 60 }, KEY))[0]).toEqual([1, 'alice', 'question-3', 10, 900]);
    expect((await topRoiTrades(db, T, { limit: 2 }, KEY)).trades).toHaveLength(2);
    // as of day 59 (before m1 resolved): only m2
    expect(rows(await topRoiTrades(db, new Date(day(58, 1)), {}, KEY)).map((x) => x[2])).toEqual(['question-2', 'question-2']);
    await expect(topRoiTrades(db, T, { limit: 101 }, KEY)).rejects.toThrow();
    await expect(topRoiTrades(db, T, { since_days: 366 }, KEY)).rejects.toThrow();
    await expect(topRoiTrades(db, T, { sort: 'pnl' as 'roi' }, KEY)).rejects.toThrow();
    await expect(topRoiTrades(db, T, {}, 'short')).rejects.toThrow();
  });

  it('tid is a stable keyed hash: same wallet same tid, another key another tid, no raw address anywhere', async () => {
    const r = await topRoiTrades(db, T, { since_days: 60 }, KEY);
    const alice = r.trades.filter((t) => t.wallet_label === 'alice');
    expect(alice).toHaveLength(2);
    expect(alice[0]!.tid).toBe(alice[1]!.tid);
    expect(alice[0]!.tid).toBe(traderTid(KEY, addressOf(1)));
    expect(alice[0]!.tid).toMatch(/^t_[A-Za-z0-9_-]{22}$/);
    expect(new Set(r.trades.map((t) => t.tid)).size).toBe(4); // wallets 1..4
    const other = await topRoiTrades(db, T, { since_days: 60 }, 'another-secret-key-987654');
    expect(other.trades.map((t) => t.tid)).not.toContain(alice[0]!.tid);
    const json = JSON.stringify(r).toLowerCase();
    for (let w = 1; w <= 9; w++) {
      expect(json).not.toContain(addressOf(w).slice(2));
      expect(json).not.toContain(addressOf(w).slice(2, 14));
    }
    expect(json).not.toMatch(/0x[0-9a-f]{40}/);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// 5. Copy fitness (worked example) and 6. playbook
// ---------------------------------------------------------------------------------------------------------------

describe('copyFitness and traderPlaybook: worked example', () => {
  // Maker 9 splits 10,000 on each market on day 0 (minute 0 minus nothing: before wallet 1's first trade, same ts
  // ordering puts inventory first). Wallet 1, T = day 14 12:00:
  //   m1 politics, liquidity $5,000 (thin), unresolved:
  //     E1 day 0 00:00 buys 100 YES @0.40 ($40, taker); day 0 02:00 sells 100 @0.50 ($50, taker)  -> hold 2 h, exit
  //   m2 sports, liquidity $100,000, YES wins day 1 10:00:
  //     E2 day 1 00:00 buys 200 YES @0.50 ($100) as the MAKER (maker 9 is the taker, selling)   -> hold 10 h, resolution
  //   m3 sports, liquidity $200,000, unresolved:
  //     E3 day 2 00:00 buys 100 NO @0.20 ($20), 01:00 100 NO @0.30 ($30), 06:00 sells 200 @0.35 ($70) -> hold 6 h, exit
  //     E4 day 3 00:00 buys 50 YES @0.60 ($30): still open at T (censored)
  // Fills: 7 legs, 6 as taker -> taker share 6/7. Clips sorted 20 30 30 40 50 70 100:
  //   p25 = 30 (position 1.5), p50 = 40, p75 = (50 + 70) / 2 = 60, p95 = 70 + 0.7 * 30 = 91 (linear interpolation)
  // Buy prices 0.2 0.3 0.4 0.5 0.6: p10 0.24, p25 0.3, median 0.4, p75 0.5, p90 0.56; bins 2..6 one buy each,
  //   USD shares 20/220, 30/220, 40/220, 100/220, 30/220.
  // Holds (closed): 2, 6, 10 h -> p25 4, median 6, p75 8; n_closed 3, n_open 1; to resolution 1/3.
  // Liquidity of traded markets 5k, 100k, 200k -> median 100k; thin fills 2/7 (USD 90/340).
  // Two-sided markets: m3 only (bought YES and NO) of m1, m2, m3 -> 1/3.
  // Trades per week: 7 fills over (T - day 0) = 14.5 days = 2.0714 weeks -> 3.379.
  // Capital at work, sampled at 12:00 on each day: only E4 is open at any 12:00 sample (day 3 .. day 14): 12 days
  //   at $30 -> typical capital $30.
  // Alpha 24 h: only E2 has a value within 24 h (m2 resolved 10 h after the buy, payout 1): 100 * (1 - 0.5) = 50
  //   cents; the others have no mid and no resolution -> not counted. 1 resolved market -> unranked.
  // Verdict: 7 fills < 10 -> no behaviour flag; unranked -> S = 0; A = clamp(50 / 5) = 1; C = 1:
  //   overall = 100 * (0.25 + 0.30) = 55, tone caution, title 'Not enough resolved markets', topTag unranked.
  // Budget $30 -> scale 1: no clip below $1; cap 2% of liquidity: m1 $100 > $40, $50 -> fit ok.
  // Budget $300 -> scale 10: m1 clips $400, $500 exceed $100 -> 2/7 over the cap > 10% -> too_large.
  // Budget $0.9 -> scale 0.03: clips 0.6 0.9 0.9 1.2 1.5 2.1 3.0 -> 3/7 below $1 > 25% -> too_small.
  const T = new Date(day(14, 12));
  beforeAll(async () => {
    const v = new V().market(1, 'politics', 5_000).market(2, 'sports', 100_000).market(3, 'sports', 200_000).wallet(1, 'bob');
    for (let m = 1; m <= 3; m++) v.split(day(0) - HOUR, 9, m, 10_000);
    v.fill(day(0), 1, 0, 1, 'BUY', 0.4, 100, 9)
      .fill(day(0, 2), 1, 0, 1, 'SELL', 0.5, 100, 9)
      .fill(day(1), 2, 0, 9, 'SELL', 0.5, 200, 1)
      .fill(day(2), 3, 1, 1, 'BUY', 0.2, 100, 9)
      .fill(day(2, 1), 3, 1, 1, 'BUY', 0.3, 100, 9)
      .fill(day(2, 6), 3, 1, 1, 'SELL', 0.35, 200, 9)
      .fill(day(3), 3, 0, 1, 'BUY', 0.6, 50, 9)
      .resolve(2, 'YES', day(1, 10))
      .wallet(6, 'nobody');
    await load(v);
  });

  it('distributions, liquidity, rhythm and the verdict by hand', async () => {
    const c = (await copyFitness(db, 1, T, { followerBudgetUsd: 30 }))!;
    expect(CopyFitness.parse(c)).toEqual(c);
    expect(c.sample).toMatchObject({ n_fills: 7, n_markets: 3, n_resolved_markets: 1, first_trade_at: new Date(day(0)).toISOString(), last_trade_at: new Date(day(3)).toISOString() });
    expect(c.taker_share).toBeCloseTo(6 / 7, 12);
    expect(c.taker_share_usd).toBeCloseTo(240 / 340, 12);
    const close = (got: object, want: Record<string, number>) => {
      for (const [k, x] of Object.entries(want)) expect((got as Record<string, number | null>)[k], k).toBeCloseTo(x, 9);
    };
    close(c.clip_usd, { p25: 30, p50: 40, p75: 60, p95: 91 });
    close(c.entry_price, { p10: 0.24, p25: 0.3, median: 0.4, p75: 0.5, p90: 0.56 });
    expect(c.entry_price.n_buys).toBe(5);
    expect(c.entry_price.bins.map((b) => b.n)).toEqual([0, 0, 1, 1, 1, 1, 1, 0, 0, 0]);
    expect(c.entry_price.bins[5]!.usd_share).toBeCloseTo(100 / 220, 12);
    expect(c.entry_price.bins[0]!.usd_share).toBe(0);
    close(c.hold_time_hours, { p25: 4, median: 6, p75: 8, share_to_resolution: 1 / 3 });
    expect(c.hold_time_hours).toMatchObject({ n_closed: 3, n_open: 1 });
    expect(c.liquidity.median_market_liquidity_usdc).toBeCloseTo(100_000, 6);
    expect(c.liquidity.thin_fill_share).toBeCloseTo(2 / 7, 12);
    expect(c.liquidity.thin_usd_share).toBeCloseTo(90 / 340, 12);
    expect(c.liquidity.two_sided_market_share).toBeCloseTo(1 / 3, 12);
    expect(c.trades_per_week).toBeCloseTo(7 / (14.5 / 7), 9);
    expect(c.edge).toMatchObject({ ranked: false, alpha_1h_cents: null, tags: [] });
    expect(c.edge.alpha_24h_cents).toBeCloseTo(50, 9);
    expect(c.cohort_as_of).toBeNull(); // no analytics build in this database
    expect(c.verdict).toEqual({
      overall: 55,
      tone: 'caution',
      title: 'Not enough resolved markets',
      topTag: { label: 'unranked', tone: 'caution', title: '1 of 30 resolved markets needed to rank' },
      copyRecommended: false,
      copiesBadly: false,
    });
    expect(c.copy_flags).toEqual([]);
  });

  it('budget fit: capital at work, scale, clips under the minimum, liquidity cap', async () => {
    const ok = (await copyFitness(db, 1, T, { followerBudgetUsd: 30 }))!.budget_fit;
    expect(ok).toMatchObject({ capital_days: 12, share_clips_below_min: 0, share_fills_over_liquidity_cap: 0, can_mirror_liquidity: true, fit: 'ok' });
    expect(ok.typical_capital_usd).toBeCloseTo(30, 9);
    expect(ok.scale_factor).toBeCloseTo(1, 9);
    const big = (await copyFitness(db, 1, T, { followerBudgetUsd: 300 }))!.budget_fit;
    expect(big.scale_factor).toBeCloseTo(10, 9);
    expect(big.share_fills_over_liquidity_cap).toBeCloseTo(2 / 7, 12);
    expect(big).toMatchObject({ can_mirror_liquidity: false, fit: 'too_large' });
    const small = (await copyFitness(db, 1, T, { followerBudgetUsd: 0.9 }))!.budget_fit;
    expect(small.share_clips_below_min).toBeCloseTo(3 / 7, 12);
    expect(small.fit).toBe('too_small');
    expect(small.scaled_clip_usd.p50).toBeCloseTo(1.2, 9);
    await expect(copyFitness(db, 1, T, { followerBudgetUsd: 0 })).rejects.toThrow();
    expect(await copyFitness(db, 31337, T)).toBeNull();
    // a known wallet without trades: empty distributions, unknown fit
    const idle = (await copyFitness(db, 6, T))!;
    expect(CopyFitness.parse(idle)).toEqual(idle);
    expect(idle).toMatchObject({ taker_share: null, trades_per_week: 0, budget_fit: { fit: 'unknown', scale_factor: null } });
  });

  it('playbook: shape, figures, templated rules, compact', async () => {
    const p = (await traderPlaybook(db, 1, T))!;
    expect(TraderPlaybook.parse(p)).toEqual(p);
    expect(p.label).toBe('bob');
    expect(p.categories.map((c) => [c.category, c.volume_share, c.n_resolved_markets, c.calibration_excess_z])).toEqual([
      ['sports', Number((250 / 340).toPrecision(4)), 1, null],
      ['politics', Number((90 / 340).toPrecision(4)), 0, null],
    ]);
    expect(p.entry_price_band).toEqual({ p25: 0.3, median: 0.4, p75: 0.5 });
    expect(p.hold_hours).toMatchObject({ p25: 4, median: 6, p75: 8 });
    expect(p.style).toEqual({ taker_share: Number((6 / 7).toPrecision(4)), kind: 'taker' });
    expect(p.clip_usd).toEqual({ p25: 30, median: 40, p75: 60 });
    expect(p.rhythm).toMatchObject({ peak_hour_utc: 0, peak_hour_share: Number((4 / 7).toPrecision(4)), active_days_per_week: Number((4 / (14.5 / 7)).toPrecision(4)) });
    expect(p.open).toEqual({ positions: 1, cost_usdc: 30, mark_value_usdc: 30 });
    expect(p.edge).toMatchObject({ ranked: false, n_resolved_markets: 1, calibration_excess_z_pctile: null });
    expect(p.rules).toEqual([
      'Not yet measurable: 1 resolved markets, 30 needed to rank its calibration; its fills gain 50.0¢ on average within 24 h.',
      'Concentrates on sports (74% of volume).',
      'Buys mostly between 0.30 and 0.50 (middle half of entries) in clips around $40.',
      'Holds a position a median 6.0 h (33% of holds ride to resolution).',
      'Takes liquidity on 86% of fills: a follower can mirror it with market orders.',
    ]);
    expect(JSON.stringify(p).length).toBeLessThan(4000);
    const idle = (await traderPlaybook(db, 6, T))!;
    expect(TraderPlaybook.parse(idle)).toEqual(idle);
    expect(idle.rules.length).toBeGreaterThanOrEqual(3);
    expect(idle.style.kind).toBe('unknown');
    expect(await traderPlaybook(db, 999, T)).toBeNull();
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Verdict rules on their own
// ---------------------------------------------------------------------------------------------------------------

describe('verdict rules', () => {
  const base: VerdictInputs = {
    n_fills: 500,
    ranked: true,
    n_resolved_markets: 80,
    calibration_excess_z: -2.4,
    skill_deviate: 2.4,
    sharp: false,
    alpha_24h_cents: 1,
    median_hold_hours: 30,
    n_closed_holds: 60,
    taker_share: 0.8,
    median_clip_usd: 200,
    two_sided_share: 0.2,
    thin_fill_share: 0.05,
    tags: [],
  };

  it('recommended: ranked, skill_deviate > 1, positive 24 h alpha, no flag; overall by hand', () => {
    // S = 2.4 / 3 = 0.8, A = 1 / 5 = 0.2, C = 1: 100 * (0.45 * 0.8 + 0.25 * 0.2 + 0.30) = 36 + 5 + 30 = 71
    expect(verdictFor(base)).toEqual({
      overall: 71,
      tone: 'good',
      title: 'Copyable edge',
      topTag: { label: 'skilled', tone: 'good', title: 'Beats the price: z -2.40 over 80 resolved markets' },
      copyRecommended: true,
      copiesBadly: false,
    });
    expect(verdictFor({ ...base, sharp: true, tags: ['sharp'] }).topTag.label).toBe('sharp');
  });

  it('not recommended without evidence, alpha or rank', () => {
    const noEdge = verdictFor({ ...base, skill_deviate: 1, calibration_excess_z: -1 });
    expect(noEdge).toMatchObject({ copyRecommended: false, tone: 'caution', title: 'No proven edge over the price', topTag: { label: 'no_edge' } });
    const noAlpha = verdictFor({ ...base, alpha_24h_cents: 0 });
    expect(noAlpha).toMatchObject({ copyRecommended: false, title: 'Edge at resolution, not within 24 h' });
    expect(verdictFor({ ...base, alpha_24h_cents: null }).copyRecommended).toBe(false);
    const unranked = verdictFor({ ...base, ranked: false, n_resolved_markets: 12, skill_deviate: 3, alpha_24h_cents: 5 });
    // S = 0 while unranked: 100 * (0.25 * 1 + 0.30) = 55
    expect(unranked).toMatchObject({ copyRecommended: false, overall: 55, title: 'Not enough resolved markets', topTag: { label: 'unranked', title: '12 of 30 resolved markets needed to rank' } });
    expect(verdictFor({ ...base, ranked: false, n_resolved_markets: 0 }).title).toBe('No resolved markets yet');
  });

  it('copiesBadly: scalpers, market makers, thin markets (each needs 10 fills)', () => {
    expect(copyFlags({ ...base, median_hold_hours: 0.5 })).toEqual(['scalper']);
    expect(copyFlags({ ...base, median_hold_hours: 0.5, n_closed_holds: 4 })).toEqual([]);
    expect(copyFlags({ ...base, median_hold_hours: 1 })).toEqual([]);
    expect(copyFlags({ ...base, taker_share: 0.2, two_sided_share: 0.6 })).toEqual(['market_maker']);
    expect(copyFlags({ ...base, taker_share: 0.2, median_clip_usd: 15 })).toEqual(['market_maker']);
    expect(copyFlags({ ...base, taker_share: 0.2 })).toEqual([]); // a patient one-sided limit-order trader
    expect(copyFlags({ ...base, taker_share: 0.3, two_sided_share: 1 })).toEqual([]);
    expect(copyFlags({ ...base, thin_fill_share: 0.5 })).toEqual(['thin_markets']);
    expect(copyFlags({ ...base, thin_fill_share: 0.49 })).toEqual([]);
    expect(copyFlags({ ...base, n_fills: 9, median_hold_hours: 0.1, taker_share: 0, two_sided_share: 1, thin_fill_share: 1 })).toEqual([]);
    const mm = verdictFor({ ...base, sharp: true, tags: ['sharp'], taker_share: 0.1, two_sided_share: 0.9 });
    // C = 0: 100 * (0.45 * 0.8 + 0.25 * 0.2) = 41
    expect(mm).toMatchObject({ copyRecommended: false, copiesBadly: true, tone: 'bad', overall: 41, title: 'Market maker: copies badly', topTag: { label: 'market_maker', tone: 'bad' } });
    expect(verdictFor({ ...base, median_hold_hours: 0.25 }).topTag).toEqual({ label: 'scalper', tone: 'bad', title: 'Median hold 15 min: gone before a follower can react' });
  });
});

// ---------------------------------------------------------------------------------------------------------------
// A generated venue: planted market makers copy badly, the top sharp is recommended, every output parses
// ---------------------------------------------------------------------------------------------------------------

describe('generated venue (3,000 wallets, 30 days)', () => {
  let v: TestVenue;
  let gdb: ColumnarRunner;
  const END = new Date('2026-11-01T00:00:00Z');
  beforeAll(async () => {
    v = await makeVenue({ wallets: 3000, days: 30, seed: 13 });
    gdb = duckRunner(v.conn);
    await fullBuild(gdb, END);
  });
  afterAll(async () => v?.cleanup());

  interface M {
    wallet_id: number;
    calibration_excess_z: number | null;
    calibration_excess_z_pctile: number | null;
    n_resolved_markets: number;
    calibration_ranked: boolean;
    taker_share: number;
    trade_count: number;
    alpha_24h_cents: number | null;
    tags: string[];
  }
  const metrics = async (where: string) =>
    v.rows<M>(`SELECT m.wallet_id, calibration_excess_z, calibration_excess_z_pctile, n_resolved_markets, calibration_ranked, taker_share, trade_count,
      alpha_24h_cents, smart_money_tags AS tags FROM a_wallet_metrics m JOIN a_wallet_pctiles USING (wallet_id) JOIN truth_wallets t USING (wallet_id) WHERE ${where} ORDER BY calibration_excess_z NULLS LAST, wallet_id`);

  it('every planted market maker copies badly (flagged market_maker); figures agree with the build', async () => {
    const mms = await metrics(`t.archetype = 'market_maker'`);
    expect(mms.length).toBeGreaterThanOrEqual(1);
    for (const m of mms) {
      const c = (await copyFitness(gdb, m.wallet_id, END))!;
      expect(CopyFitness.parse(c)).toEqual(c);
      expect(c.verdict.copiesBadly, `wallet ${m.wallet_id}`).toBe(true);
      expect(c.verdict.copyRecommended).toBe(false);
      expect(c.copy_flags.map((f) => f.flag)).toContain('market_maker');
      expect(c.taker_share).toBeCloseTo(m.taker_share, 12);
      expect(c.sample.n_fills).toBe(m.trade_count);
      expect(c.edge.calibration_excess_z).toBeCloseTo(m.calibration_excess_z!, 9);
      expect([...c.edge.tags].sort()).toEqual([...m.tags].sort());
      const [{ n }] = (await v.rows<{ n: number }>(
        `SELECT count(*)::INTEGER AS n FROM a_positions WHERE wallet_id = ${m.wallet_id} AND status = 'OPEN' AND shares > 1e-6`,
      )) as [{ n: number }];
      expect(c.hold_time_hours.n_open).toBe(n);
    }
  });

  it('the top sharp by z is recommended; calibration, percentile, tags and positions agree with the build', async () => {
    const [top] = await metrics(`list_contains(m.smart_money_tags, 'sharp')`);
    expect(top).toBeDefined();
    const w = top!.wallet_id;
    const c = (await copyFitness(gdb, w, END))!;
    expect(CopyFitness.parse(c)).toEqual(c);
    expect(c.verdict).toMatchObject({ copyRecommended: true, copiesBadly: false, tone: 'good' });
    expect(c.edge.tags).toContain('sharp');
    const cal = (await traderCalibration(gdb, w, END))!;
    expect(TraderCalibration.parse(cal)).toEqual(cal);
    expect(cal.calibration_excess_z).toBeCloseTo(top!.calibration_excess_z!, 9);
    expect(cal.n_markets).toBe(top!.n_resolved_markets);
    expect(cal.ranked).toBe(true);
    const pb = (await traderPlaybook(gdb, w, END))!;
    expect(TraderPlaybook.parse(pb)).toEqual(pb);
    expect(pb.edge.calibration_excess_z_pctile).toBeCloseTo(top!.calibration_excess_z_pctile!, 2);
    expect(pb.tags).toContain('sharp');
    expect(pb.copy.copyRecommended).toBe(true);
    expect(pb.rules.length).toBeGreaterThanOrEqual(3);
    expect(pb.rules.length).toBeLessThanOrEqual(5);
    expect(JSON.stringify(pb).length).toBeLessThan(4000); // well under 2,000 tokens
    // the wallet-scoped positions are the build's positions (the narrowing never decides a figure)
    const built = await v.rows<{ k: string; status: string; total_pnl: number; shares: number; open: boolean }>(
      `SELECT m.condition_id || ':' || p.outcome_index AS k, p.status, p.total_pnl, p.shares, (p.status = 'OPEN' AND p.shares > 1e-6) AS open
      FROM a_positions p JOIN markets m USING (market_id) WHERE p.wallet_id = ${w}`,
    );
    const pos = (await traderPositions(gdb, w, END, { limit: 200 }))!;
    expect(TraderPositions.parse(pos)).toEqual(pos);
    expect(pos.total_rows).toBe(built.length);
    expect(pos.next_cursor).toBeNull();
    const feed = new Map(pos.rows.map((r) => [`${r.condition_id}:${r.outcome === 'YES' ? 0 : 1}`, r]));
    for (const b of built) {
      const r = feed.get(b.k)!;
      expect(r, b.k).toBeDefined();
      expect(r.status).toBe(b.status);
      expect(r.total_pnl).toBeCloseTo(b.total_pnl, 6);
      expect(r.shares).toBeCloseTo(b.shares, 6);
    }
    // every open position is exactly one censored hold episode (the episode query follows positionsSql's order)
    const nOpen = built.filter((b) => b.open).length;
    expect(c.hold_time_hours.n_open).toBe(nOpen);
    expect(pb.open.positions).toBe(nOpen);
    const act = (await traderActivity(gdb, w, END, { limit: 100 }))!;
    expect(TraderActivity.parse(act)).toEqual(act);
    expect(act.items).toHaveLength(100);
    expect(act.next_cursor).not.toBeNull();
  });

  it('top-ROI trades over the generated venue parse and carry no raw address', async () => {
    const r = await topRoiTrades(gdb, END, { limit: 100, since_days: 30 }, 'generated-venue-secret-key');
    expect(TopRoiTrades.parse(r)).toEqual(r);
    expect(r.trades.length).toBeGreaterThan(10);
    expect(r.trades.every((t) => t.cost_usdc >= 50)).toBe(true);
    for (let i = 1; i < r.trades.length; i++) expect(r.trades[i - 1]!.roi_x).toBeGreaterThanOrEqual(r.trades[i]!.roi_x);
    expect(JSON.stringify(r)).not.toMatch(/0x[0-9a-fA-F]{40}/);
  });
});
