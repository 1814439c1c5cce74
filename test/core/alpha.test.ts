/**
 * Alpha versus the mid (methodology "Alpha versus mid"): hand-worked examples over a hand-built venue in an
 * in-memory DuckDB, and a property test of walletAlphaSql against a brute-force TypeScript reference on random
 * small venues (fills of every match type, irregular mids, an optional resolution, a random as-of moment).
 */
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import fc from 'fast-check';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { walletAlphaSql } from '../../core/alpha.ts';
import { queryRows } from '../../data/duckdb.ts';
import { closeMemoryVenue, openMemoryVenue } from '../helpers/memory-venue.ts';
import { venueInsert } from '../../data/schema.ts';

const HOUR = 3_600_000;
const B = Date.parse('2026-01-01T00:00:00Z');
const h = (hours: number) => B + hours * HOUR;
const ts = (ms: number) => `make_timestamp(${Math.round(ms) * 1000}::BIGINT)`;
const dbl = (x: number) => `'${x}'::DOUBLE`; // exact: a bare literal would go through DECIMAL first

let instance: DuckDBInstance;
let conn: DuckDBConnection;

interface AlphaRow {
  wallet_id: number;
  alpha_1h_cents: number | null;
  n_alpha_1h: number;
  alpha_24h_cents: number | null;
  n_alpha_24h: number;
  alpha_res_cents: number | null;
  n_alpha_res: number;
}

async function alphaAt(T: number): Promise<Map<number, AlphaRow>> {
  const rows = await queryRows<AlphaRow>(conn, `SELECT * FROM (${walletAlphaSql(new Date(T))}) ORDER BY wallet_id`);
  return new Map(rows.map((r) => [r.wallet_id, r]));
}

async function clearVenue() {
  for (const t of ['markets', 'fills', 'mids', 'resolutions', 'inventory_events', 'inventory_legs', 'wallets']) await conn.run(`DELETE FROM ${t}`);
}

async function insertMarket(id: number) {
  const hex = id.toString(16).padStart(64, '0');
  await conn.run(`${venueInsert('markets')} VALUES (${id}, '0x${hex}', '0x${hex}', NULL, 'Q${id}?', 'q-${id}', 'politics',
    '${id * 2}', '${id * 2 + 1}', false, NULL, ${ts(B - 24 * HOUR)}, ${ts(B - 24 * HOUR)}, ${ts(B + 1000 * HOUR)}, NULL, NULL, NULL, 'test')`);
}

type Side = 'BUY' | 'SELL';
type Match = 'direct' | 'mint' | 'merge';
interface Fill {
  tx: string;
  at: number;
  market: number;
  outcome: 0 | 1;
  taker: number;
  maker: number;
  side: Side;
  match: Match;
  price: number;
  shares: number;
}

function fillValues(f: Fill): string {
  return `('${f.tx}', 0, ${ts(f.at)}, ${f.market}, ${f.outcome}, ${f.maker}, ${f.taker}, '${f.side}', '${f.match}',
    ${dbl(f.price)}, ${dbl(f.shares)}, ${dbl(f.price * f.shares)}, 0, 2, 'ctf')`;
}
async function insertFills(fs: readonly Fill[]) {
  if (fs.length) await conn.run(`${venueInsert('fills')} VALUES ${fs.map(fillValues).join(',')}`);
}

interface Mid {
  market: number;
  outcome: 0 | 1;
  at: number;
  mid: number;
}
async function insertMids(ms: readonly Mid[]) {
  if (ms.length) await conn.run(`${venueInsert('mids')} VALUES ${ms.map((m) => `(${m.market}, ${m.outcome}, ${ts(m.at)}, ${dbl(m.mid)})`).join(',')}`);
}

type Winner = 'YES' | 'NO' | 'INVALID';
interface Resolution {
  market: number;
  winner: Winner;
  at: number;
}
const PAYOUT: Record<Winner, [number, number]> = { YES: [1, 0], NO: [0, 1], INVALID: [0.5, 0.5] };
async function insertResolution(r: Resolution) {
  const [py, pn] = PAYOUT[r.winner];
  const wi = r.winner === 'YES' ? 0 : r.winner === 'NO' ? 1 : -1;
  const num = r.winner === 'INVALID' ? '[1,1]' : `[${py},${pn}]`;
  await conn.run(`${venueInsert('resolutions')} VALUES (${r.market}, '${r.winner}', ${wi}, ${num}, ${py}, ${pn}, 2, ${ts(r.at)}, '0xr${r.market}')`);
}

beforeAll(async () => {
  ({ instance, conn } = await openMemoryVenue());
});
afterAll(() => {
  closeMemoryVenue(conn, instance);
});

// ---------------------------------------------------------------------------------------------------------------
// Hand-worked examples
// ---------------------------------------------------------------------------------------------------------------

describe('alpha: hand-worked', () => {
  const T_A = h(72);

  beforeAll(async () => {
    await clearVenue();
    for (const m of [1, 2, 3, 4, 5, 6]) await insertMarket(m);
    await insertFills([
      // Market 1. Wallet 1 buys YES at 0.40 at 10:00 from wallet 2 (direct: the maker sells YES at 0.40).
      { tx: '0x1a', at: h(10), market: 1, outcome: 0, taker: 1, maker: 2, side: 'BUY', match: 'direct', price: 0.4, shares: 100 },
      // Market 1. Wallet 4 sells NO at 0.55 (merge: the maker, wallet 8, sells YES at 0.45).
      { tx: '0x1b', at: h(10), market: 1, outcome: 1, taker: 4, maker: 8, side: 'SELL', match: 'merge', price: 0.55, shares: 100 },
      // Market 2. Wallet 3 buys twice (sizes 100 * 0.40 = $40 and 300 * 0.50 = $150); maker 9 (not checked).
      { tx: '0x2a', at: h(10), market: 2, outcome: 0, taker: 3, maker: 9, side: 'BUY', match: 'direct', price: 0.4, shares: 100 },
      { tx: '0x2b', at: h(11), market: 2, outcome: 0, taker: 3, maker: 9, side: 'BUY', match: 'direct', price: 0.5, shares: 300 },
      // Market 3. Wallet 5 buys YES at 0.70; the market resolves NO 30 minutes later.
      { tx: '0x3a', at: h(10), market: 3, outcome: 0, taker: 5, maker: 9, side: 'BUY', match: 'direct', price: 0.7, shares: 100 },
      // Market 6. Wallet 10 buys YES at 0.30 at 10:00; the market resolves YES at 11:00 sharp.
      { tx: '0x6a', at: h(10), market: 6, outcome: 0, taker: 10, maker: 9, side: 'BUY', match: 'direct', price: 0.3, shares: 100 },
      // Market 4. Wallet 6 buys YES at 0.50 at 60:00: its 24 h horizon (84:00) is after T_A = 72:00.
      { tx: '0x4a', at: h(60), market: 4, outcome: 0, taker: 6, maker: 9, side: 'BUY', match: 'direct', price: 0.5, shares: 100 },
      // Market 5. Wallet 7 buys YES at 0.50 at 71:30: not even its 1 h horizon has elapsed at T_A.
      { tx: '0x5a', at: h(71.5), market: 5, outcome: 0, taker: 7, maker: 9, side: 'BUY', match: 'direct', price: 0.5, shares: 100 },
    ]);
    await insertMids([
      { market: 1, outcome: 0, at: h(9), mid: 0.4 },
      { market: 1, outcome: 0, at: h(11), mid: 0.46 }, // exactly t + 1 h: the mid at the horizon
      { market: 1, outcome: 0, at: h(11) + 1000, mid: 0.99 }, // one second after the horizon: not used for 1 h
      { market: 1, outcome: 0, at: h(20), mid: 0.35 },
      { market: 1, outcome: 0, at: h(33.5), mid: 0.3 }, // the latest mid at or before t + 24 h = 34:00
      { market: 1, outcome: 0, at: h(35), mid: 0.2 },
      { market: 1, outcome: 1, at: h(11), mid: 0.54 },
      { market: 1, outcome: 1, at: h(34), mid: 0.7 },
      { market: 2, outcome: 0, at: h(10), mid: 0.4 },
      { market: 2, outcome: 0, at: h(11), mid: 0.46 },
      { market: 2, outcome: 0, at: h(12), mid: 0.45 },
      { market: 2, outcome: 0, at: h(34), mid: 0.3 },
      { market: 2, outcome: 0, at: h(35), mid: 0.4 },
      { market: 3, outcome: 0, at: h(11), mid: 0.5 }, // a stale mid after the resolution: the payout wins
      { market: 3, outcome: 0, at: h(34), mid: 0.5 },
      { market: 6, outcome: 0, at: h(11), mid: 0.5 },
      { market: 4, outcome: 0, at: h(61), mid: 0.55 },
      { market: 4, outcome: 0, at: h(71), mid: 0.6 },
      { market: 4, outcome: 0, at: h(84), mid: 0.99 },
      { market: 5, outcome: 0, at: h(71), mid: 0.5 },
    ]);
    await insertResolution({ market: 1, winner: 'YES', at: h(40) });
    await insertResolution({ market: 2, winner: 'NO', at: h(40) });
    await insertResolution({ market: 3, winner: 'NO', at: h(10.5) });
    await insertResolution({ market: 4, winner: 'YES', at: h(80) }); // after T_A
    await insertResolution({ market: 6, winner: 'YES', at: h(11) }); // exactly at wallet 10's 1 h horizon
  });

  it('a buy at 0.40, mid 0.46 an hour later, 0.30 a day later, resolves YES: +6, -10, +60 cents', async () => {
    // alpha_1h  = mid(11:00) - 0.40 = 0.46 - 0.40 = +0.06 -> +6 cents
    // alpha_24h = mid(34:00) - 0.40 = 0.30 - 0.40 = -0.10 -> -10 cents (mid(34:00) = the 33:30 row, the latest <= 34:00)
    // alpha_res = payout(YES) - 0.40 = 1 - 0.40 = +0.60 -> +60 cents
    const a = (await alphaAt(T_A)).get(1)!;
    expect(a.alpha_1h_cents).toBeCloseTo(6, 9);
    expect(a.alpha_24h_cents).toBeCloseTo(-10, 9);
    expect(a.alpha_res_cents).toBeCloseTo(60, 9);
    expect(a).toMatchObject({ n_alpha_1h: 1, n_alpha_24h: 1, n_alpha_res: 1 });
  });

  it('a sell mirrors the sign (the maker of the same fill, and a taker selling NO)', async () => {
    const all = await alphaAt(T_A);
    // wallet 2 sold YES at 0.40: 0.40 - 0.46 = -6, 0.40 - 0.30 = +10, 0.40 - 1 = -60
    const w2 = all.get(2)!;
    expect(w2.alpha_1h_cents).toBeCloseTo(-6, 9);
    expect(w2.alpha_24h_cents).toBeCloseTo(10, 9);
    expect(w2.alpha_res_cents).toBeCloseTo(-60, 9);
    // wallet 4 sold NO at 0.55: 0.55 - 0.54 = +1, 0.55 - 0.70 = -15, 0.55 - payout(NO) 0 = +55
    const w4 = all.get(4)!;
    expect(w4.alpha_1h_cents).toBeCloseTo(1, 9);
    expect(w4.alpha_24h_cents).toBeCloseTo(-15, 9);
    expect(w4.alpha_res_cents).toBeCloseTo(55, 9);
    // its maker (merge) sold YES at 1 - 0.55 = 0.45: 0.45 - 0.46 = -1, 0.45 - 0.30 = +15, 0.45 - 1 = -55
    const w8 = all.get(8)!;
    expect(w8.alpha_1h_cents).toBeCloseTo(-1, 9);
    expect(w8.alpha_24h_cents).toBeCloseTo(15, 9);
    expect(w8.alpha_res_cents).toBeCloseTo(-55, 9);
  });

  it('size weighting across two fills', async () => {
    // fill A: $40  at 0.40 (10:00); fill B: $150 at 0.50 (11:00)
    // 1 h:   A: mid(11:00) 0.46 - 0.40 = +0.06; B: mid(12:00) 0.45 - 0.50 = -0.05
    //        (40 * 0.06 + 150 * -0.05) / 190 = (2.4 - 7.5) / 190 = -0.0268421... -> -2.68421 cents
    // 24 h:  A: mid(34:00) 0.30 - 0.40 = -0.10; B: mid(35:00) 0.40 - 0.50 = -0.10 -> -10 cents
    // res:   NO wins, payout 0: A: -0.40, B: -0.50 -> (40 * -0.4 + 150 * -0.5) / 190 = -91 / 190 -> -47.8947 cents
    const w3 = (await alphaAt(T_A)).get(3)!;
    expect(w3.alpha_1h_cents).toBeCloseTo((100 * -5.1) / 190, 9);
    expect(w3.alpha_1h_cents).toBeCloseTo(-2.684210526, 6);
    expect(w3.alpha_24h_cents).toBeCloseTo(-10, 9);
    expect(w3.alpha_res_cents).toBeCloseTo((100 * -91) / 190, 9);
    expect(w3).toMatchObject({ n_alpha_1h: 2, n_alpha_24h: 2, n_alpha_res: 2 });
  });

  it('a resolution before the horizon uses the payout, not the (stale) mid', async () => {
    // bought YES at 0.70, NO won at 10:30: every horizon reads payout 0 -> -70 cents (the 11:00 mid 0.5 would say -20)
    const w5 = (await alphaAt(T_A)).get(5)!;
    expect(w5.alpha_1h_cents).toBeCloseTo(-70, 9);
    expect(w5.alpha_24h_cents).toBeCloseTo(-70, 9);
    expect(w5.alpha_res_cents).toBeCloseTo(-70, 9);
    // a resolution exactly at the horizon counts as resolved by then: 1 - 0.30 = +70 (the 11:00 mid would say +20)
    const w10 = (await alphaAt(T_A)).get(10)!;
    expect(w10.alpha_1h_cents).toBeCloseTo(70, 9);
    expect(w10.alpha_24h_cents).toBeCloseTo(70, 9);
  });

  it('a horizon that has not elapsed by T does not count', async () => {
    const all = await alphaAt(T_A);
    // wallet 6 bought at 60:00: 1 h (61:00) counts: 0.55 - 0.50 = +5; 24 h (84:00) has not elapsed; its market
    // resolves at 80:00, after T_A: no resolution alpha either
    expect(all.get(6)!.alpha_1h_cents).toBeCloseTo(5, 9);
    expect(all.get(6)).toMatchObject({ n_alpha_1h: 1, alpha_24h_cents: null, n_alpha_24h: 0, alpha_res_cents: null, n_alpha_res: 0 });
    // wallet 7 bought at 71:30: nothing has elapsed, but the wallet still has its row
    expect(all.get(7)).toEqual({ wallet_id: 7, alpha_1h_cents: null, n_alpha_1h: 0, alpha_24h_cents: null, n_alpha_24h: 0, alpha_res_cents: null, n_alpha_res: 0 });
    // later, the 24 h horizon of wallet 6 (84:00) falls after the resolution (80:00): the payout 1 is used, +50
    const later = (await alphaAt(h(100))).get(6)!;
    expect(later.alpha_24h_cents).toBeCloseTo(50, 9);
    expect(later.alpha_res_cents).toBeCloseTo(50, 9);
  });

  it('the horizon boundary is inclusive: t + 1 h = T counts, 1 ms earlier it does not', async () => {
    expect((await alphaAt(h(11))).get(1)).toMatchObject({ n_alpha_1h: 1, n_alpha_24h: 0, n_alpha_res: 0 });
    expect((await alphaAt(h(11))).get(1)!.alpha_1h_cents).toBeCloseTo(6, 9);
    expect((await alphaAt(h(11) - 1)).get(1)).toMatchObject({ alpha_1h_cents: null, n_alpha_1h: 0 });
    // a fill after T does not exist yet: at 09:59 wallet 1 has no row at all
    expect((await alphaAt(h(10) - 60_000)).has(1)).toBe(false);
    // between the 24 h horizon and the resolution: 1 h and 24 h count, resolution does not
    expect((await alphaAt(h(36))).get(1)).toMatchObject({ n_alpha_1h: 1, n_alpha_24h: 1, n_alpha_res: 0, alpha_res_cents: null });
  });

  it('no lookahead: rows stamped after T never change the answer', async () => {
    for (const T of [h(11), h(36), T_A]) {
      const before = await alphaAt(T);
      // every kind of row, just after T, that would change the answer if it were read
      const later = T + 1; // one millisecond after T
      await insertMids([1, 2, 3, 4, 5].flatMap((m) => [0, 1].map((o) => ({ market: m, outcome: o as 0 | 1, at: later, mid: 0.999 }))));
      await insertMids([{ market: 5, outcome: 0, at: h(72.5), mid: 0.01 }]); // wallet 7's 1 h horizon, after T_A
      await insertFills([{ tx: `0xlate${T}`, at: later, market: 5, outcome: 0, taker: 7, maker: 6, side: 'BUY', match: 'direct', price: 0.01, shares: 1e6 }]);
      await insertResolution({ market: 5, winner: 'NO', at: later });
      const after = await alphaAt(T);
      expect([...after.entries()]).toEqual([...before.entries()]);
      await conn.run(`DELETE FROM mids WHERE ts > ${ts(T)} AND mid IN (${dbl(0.999)}, ${dbl(0.01)})`);
      await conn.run(`DELETE FROM fills WHERE tx_hash = '0xlate${T}'`);
      await conn.run(`DELETE FROM resolutions WHERE market_id = 5`);
      expect(await queryRows(conn, `SELECT count(*)::INTEGER AS n FROM mids WHERE ts > ${ts(T)} AND mid IN (${dbl(0.999)}, ${dbl(0.01)})`)).toEqual([{ n: 0 }]);
    }
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Property: walletAlphaSql = a brute-force reference
// ---------------------------------------------------------------------------------------------------------------

interface Leg {
  wallet: number;
  market: number;
  outcome: 0 | 1;
  at: number;
  side: Side;
  price: number;
  size: number;
}

/** Both parties of a fill, as the methodology describes them (mint: the maker buys the complement at 1 - p). */
function legsOf(f: Fill): Leg[] {
  const taker: Leg = { wallet: f.taker, market: f.market, outcome: f.outcome, at: f.at, side: f.side, price: f.price, size: f.price * f.shares };
  const other = (1 - f.outcome) as 0 | 1;
  const flip: Side = f.side === 'BUY' ? 'SELL' : 'BUY';
  const maker: Leg =
    f.match === 'direct'
      ? { ...taker, wallet: f.maker, side: flip }
      : { wallet: f.maker, market: f.market, outcome: other, at: f.at, side: f.match === 'mint' ? 'BUY' : 'SELL', price: 1 - f.price, size: (1 - f.price) * f.shares };
  return [taker, maker];
}

interface Venue {
  fills: Fill[];
  mids: Mid[];
  resolutions: Resolution[];
  T: number;
}

function referenceAlpha(v: Venue): Map<number, AlphaRow> {
  const legs = v.fills.flatMap(legsOf).filter((l) => l.at <= v.T);
  const res = new Map(v.resolutions.filter((r) => r.at <= v.T).map((r) => [r.market, r]));
  const value = (l: Leg, at: number): number | null => {
    const r = res.get(l.market);
    if (r && r.at <= at) return PAYOUT[r.winner][l.outcome];
    let best: Mid | null = null;
    for (const m of v.mids) if (m.market === l.market && m.outcome === l.outcome && m.at <= at && (!best || m.at > best.at)) best = m;
    return best ? best.mid : null;
  };
  const out = new Map<number, AlphaRow>();
  const acc = new Map<number, Record<'1h' | '24h' | 'res', { num: number; den: number; n: number }>>();
  for (const l of legs) {
    if (!acc.has(l.wallet)) acc.set(l.wallet, { '1h': { num: 0, den: 0, n: 0 }, '24h': { num: 0, den: 0, n: 0 }, res: { num: 0, den: 0, n: 0 } });
    const a = acc.get(l.wallet)!;
    const sign = l.side === 'BUY' ? 1 : -1;
    for (const [k, hours] of [['1h', 1], ['24h', 24]] as const) {
      const at = l.at + hours * HOUR;
      if (at > v.T) continue;
      const val = value(l, at);
      if (val === null) continue;
      a[k].num += l.size * sign * (val - l.price);
      a[k].den += l.size;
      a[k].n++;
    }
    const r = res.get(l.market);
    if (r) {
      a.res.num += l.size * sign * (PAYOUT[r.winner][l.outcome] - l.price);
      a.res.den += l.size;
      a.res.n++;
    }
  }
  const cents = (x: { num: number; den: number; n: number }) => (x.n && x.den ? (100 * x.num) / x.den : null);
  for (const [w, a] of acc) {
    out.set(w, {
      wallet_id: w,
      alpha_1h_cents: cents(a['1h']),
      n_alpha_1h: a['1h'].n,
      alpha_24h_cents: cents(a['24h']),
      n_alpha_24h: a['24h'].n,
      alpha_res_cents: cents(a.res),
      n_alpha_res: a.res.n,
    });
  }
  return out;
}

const MIN = 60_000;
const SPAN_MIN = 72 * 60; // fills and mids within three days

const fillArb = fc.record({
  minute: fc.oneof(fc.integer({ min: 0, max: SPAN_MIN }), fc.integer({ min: 0, max: 72 }).map((x) => x * 60)),
  market: fc.integer({ min: 1, max: 2 }),
  outcome: fc.constantFrom<0 | 1>(0, 1),
  taker: fc.integer({ min: 1, max: 4 }),
  maker: fc.integer({ min: 1, max: 4 }),
  side: fc.constantFrom<Side>('BUY', 'SELL'),
  match: fc.constantFrom<Match>('direct', 'mint', 'merge'),
  cents: fc.integer({ min: 1, max: 99 }),
  shares: fc.integer({ min: 1, max: 5000 }),
});
const midArb = fc.record({
  // hourly samples with jitter: irregular, sometimes exactly on the hour
  minute: fc.oneof(fc.integer({ min: 0, max: 100 }).map((x) => x * 60), fc.integer({ min: 0, max: 100 * 60 })),
  market: fc.integer({ min: 1, max: 2 }),
  outcome: fc.constantFrom<0 | 1>(0, 1),
  mid: fc.integer({ min: 1, max: 999 }).map((x) => x / 1000),
});
const resArb = fc.option(fc.record({ minute: fc.oneof(fc.integer({ min: 0, max: 110 * 60 }), fc.integer({ min: 0, max: 110 }).map((x) => x * 60)), winner: fc.constantFrom<Winner>('YES', 'NO', 'INVALID') }), { nil: null });
const venueArb = fc
  .record({
    fills: fc.array(fillArb, { minLength: 1, maxLength: 12 }),
    mids: fc.array(midArb, { maxLength: 60 }),
    res: fc.tuple(resArb, resArb),
    tMinute: fc.oneof(fc.integer({ min: 0, max: 120 * 60 }), fc.integer({ min: 0, max: 120 }).map((x) => x * 60)),
    tExtraMs: fc.constantFrom(0, 0, 1, 59_999),
  })
  .map(({ fills, mids, res, tMinute, tExtraMs }): Venue => {
    const resolutions = res.flatMap((r, i) => (r ? [{ market: i + 1, winner: r.winner, at: B + r.minute * MIN }] : []));
    const resAt = new Map(resolutions.map((r) => [r.market, r.at]));
    // one mid per (token, time): the venue's series never has two values at one instant
    const seen = new Set<string>();
    const uniqMids = mids.filter((m) => {
      const k = `${m.market}/${m.outcome}/${m.minute}`;
      if (seen.has(k)) return false;
      seen.add(k);
      return true;
    });
    return {
      fills: fills
        .map((f, i) => ({ tx: `0x${i}`, at: B + f.minute * MIN, market: f.market, outcome: f.outcome, taker: f.taker, maker: f.maker, side: f.side, match: f.match, price: f.cents / 100, shares: f.shares }))
        // no trading after a market resolved
        .filter((f) => !(resAt.has(f.market) && f.at > resAt.get(f.market)!)),
      mids: uniqMids.map((m) => ({ market: m.market, outcome: m.outcome, at: B + m.minute * MIN, mid: m.mid })),
      resolutions,
      T: B + tMinute * MIN + tExtraMs,
    };
  });

describe('alpha: property test', () => {
  beforeEach(async () => {
    await clearVenue();
    await insertMarket(1);
    await insertMarket(2);
  });

  it('walletAlphaSql equals a brute-force reference on random small venues', async () => {
    await fc.assert(
      fc
        .asyncProperty(venueArb, async (v) => {
          await conn.run('DELETE FROM fills');
          await conn.run('DELETE FROM mids');
          await conn.run('DELETE FROM resolutions');
          await insertFills(v.fills);
          await insertMids(v.mids);
          for (const r of v.resolutions) await insertResolution(r);
          const got = await alphaAt(v.T);
          const want = referenceAlpha(v);
          expect([...got.keys()].sort((a, b) => a - b)).toEqual([...want.keys()].sort((a, b) => a - b));
          for (const [w, r] of want) {
            const g = got.get(w)!;
            expect({ w, n1: g.n_alpha_1h, n24: g.n_alpha_24h, nr: g.n_alpha_res }).toEqual({ w, n1: r.n_alpha_1h, n24: r.n_alpha_24h, nr: r.n_alpha_res });
            for (const k of ['alpha_1h_cents', 'alpha_24h_cents', 'alpha_res_cents'] as const) {
              if (r[k] === null) expect(g[k], `${k} wallet ${w}`).toBeNull();
              else expect(Math.abs(g[k]! - r[k]!), `${k} wallet ${w}: ${g[k]} vs ${r[k]}`).toBeLessThan(1e-9);
            }
          }
        }),
      { numRuns: 150 },
    );
  });
});
