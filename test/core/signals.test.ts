/**
 * Smart-money signals (core/signals.ts): the one-fill rule by hand, a tiny venue worked by hand (threshold boundary,
 * taker only, tags, window edges, no lookahead, filters, pages), the build-time guards, and a fast-check property:
 * on random tiny venues and random options, the SQL list paged through its cursors equals a brute-force JS reference
 * built from signalFromFill() over every fill.
 */
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import fc from 'fast-check';
import { getAddress } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { QueryRunner } from '../../core/query.ts';
import {
  SMART_MONEY_MIN_USD,
  SignalError,
  SmartMoneySignals,
  positiveTags,
  signalFromFill,
  smartMoneySignals,
  type SignalFill,
  type SmartMoneySignal,
  type SmartMoneySignalsQueryInput,
} from '../../core/signals.ts';
import { SMART_MONEY_TAGS } from '../../core/tags.ts';
import { duckRunner } from '../../data/runner.ts';
import { closeMemoryVenue, openMemoryVenue } from '../helpers/memory-venue.ts';
import { venueInsert } from '../../data/schema.ts';

let instance: DuckDBInstance;
let conn: DuckDBConnection;
let db: QueryRunner;

const T0 = Date.UTC(2026, 2, 1, 12, 0, 0);
const HOUR = 3_600_000;
const T = new Date(T0);
const hex = (n: number, width: number) => n.toString(16).padStart(width, '0');
const ts = (ms: number) => `make_timestamp(${ms * 1000}::BIGINT)`;
const d = (x: number) => `'${x}'::DOUBLE`;
const addr = (w: number) => `0x${hex(w * 7919 + 0xabc, 40)}`;
const cond = (m: number) => `0x${hex(m, 64)}`;
const txOf = (n: number) => `0x${hex(n, 64)}`;

interface Fill {
  tx: number;
  li: number;
  t: number;
  m: number;
  o: 0 | 1;
  taker: number;
  maker: number;
  side: 'BUY' | 'SELL';
  price: number;
  size: number;
}

interface Venue {
  markets: number[];
  wallets: number[];
  fills: Fill[];
  tags: Record<number, string[]>;
  /** analytics build as_of, ms; null: no build */
  built: number | null;
}

async function insert(table: string, rows: string[]): Promise<void> {
  if (rows.length) await conn.run(`${venueInsert(table)} VALUES ${rows.map((r) => `(${r})`).join(',\n')}`);
}

async function load(v: Venue): Promise<void> {
  for (const t of ['markets', 'wallets', 'fills']) await conn.run(`DELETE FROM ${t}`);
  for (const t of ['a_wallet_metrics', 'a_meta']) await conn.run(`DROP TABLE IF EXISTS ${t}`);
  const t0 = ts(Date.UTC(2026, 0, 1));
  await insert(
    'markets',
    v.markets.map(
      (m) => `${m}, '${cond(m)}', '0x${hex(m + 1e6, 64)}', NULL, 'Will it ${m}?', 'q-${m}', 'test', '${1000 + 2 * m}', '${1001 + 2 * m}', false, NULL, ${t0}, ${t0}, ${ts(Date.UTC(2027, 0, 1))}, NULL, NULL, NULL, 'test'`,
    ),
  );
  await insert('wallets', v.wallets.map((w) => `${w}, '${addr(w)}', NULL, 'Wallet-${w}', NULL, false`));
  await insert(
    'fills',
    v.fills.map(
      (f) => `'${txOf(f.tx)}', ${f.li}, ${ts(f.t)}, ${f.m}, ${f.o}, ${f.maker}, ${f.taker}, '${f.side}', 'direct', ${d(f.price)}, ${d(f.size / f.price)}, ${d(f.size)}, 0.0, 1, 'ctf'`,
    ),
  );
  if (v.built !== null) {
    await conn.run(`CREATE TABLE a_wallet_metrics (wallet_id INTEGER, smart_money_tags VARCHAR[])`);
    await insert(
      'a_wallet_metrics',
      v.wallets.map((w) => `${w}, [${(v.tags[w] ?? []).map((t) => `'${t}'`).join(', ')}]::VARCHAR[]`),
    );
    await conn.run(`CREATE TABLE a_meta AS SELECT ${ts(v.built)} AS as_of`);
  }
}

beforeAll(async () => {
  ({ instance, conn } = await openMemoryVenue());
  db = duckRunner(conn);
});
afterAll(() => closeMemoryVenue(conn, instance));

// ---------------------------------------------------------------------------------------------------------------
// The rule
// ---------------------------------------------------------------------------------------------------------------

describe('signalFromFill', () => {
  const fill: SignalFill = {
    trader_proxy: addr(1),
    condition_id: cond(1),
    title: 'Will it 1?',
    outcome_side: 'YES',
    taker_side: 'BUY',
    price: 0.5,
    size_usdc: 5000,
    tx_hash: txOf(1),
  };

  it('a taker buy of exactly 5,000 USD by a tagged wallet is a large_buy with exactly the spec fields', () => {
    const s = signalFromFill(fill, ['whale']);
    expect(s).toEqual({
      signal_type: 'large_buy',
      trader_proxy: getAddress(addr(1)),
      smart_money_tags: ['whale'],
      condition_id: cond(1),
      title: 'Will it 1?',
      outcome_side: 'YES',
      price: 0.5,
      size_usdc: 5000,
      tx_hash: txOf(1),
    });
    expect(Object.keys(s!).sort()).toEqual(['condition_id', 'outcome_side', 'price', 'signal_type', 'size_usdc', 'smart_money_tags', 'title', 'trader_proxy', 'tx_hash']);
  });

  it('a sale is an exit; the side is read in any case (trader.fill says "buy")', () => {
    expect(signalFromFill({ ...fill, taker_side: 'SELL' }, ['sharp'])?.signal_type).toBe('exit');
    expect(signalFromFill({ ...fill, taker_side: 'sell' }, ['sharp'])?.signal_type).toBe('exit');
    expect(signalFromFill({ ...fill, taker_side: 'buy' }, ['sharp'])?.signal_type).toBe('large_buy');
    expect(signalFromFill({ ...fill, taker_side: 'hold' }, ['sharp'])).toBeNull();
  });

  it('below the threshold, or without a positive tag, is no signal', () => {
    expect(SMART_MONEY_MIN_USD).toBe(5000);
    expect(signalFromFill({ ...fill, size_usdc: 4999.999 }, ['whale'])).toBeNull();
    expect(signalFromFill({ ...fill, size_usdc: Number.NaN }, ['whale'])).toBeNull();
    expect(signalFromFill(fill, [])).toBeNull();
    expect(signalFromFill(fill, ['market_maker', 'noise'])).toBeNull();
  });

  it('tags come back deduplicated, positive only, in the catalogue order', () => {
    expect(positiveTags(['contrarian', 'noise', 'whale', 'contrarian'])).toEqual(['whale', 'contrarian']);
    expect(signalFromFill(fill, ['early_bird', 'sharp', 'x'])?.smart_money_tags).toEqual(['sharp', 'early_bird']);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// A tiny venue by hand
// ---------------------------------------------------------------------------------------------------------------

describe('smartMoneySignals on a hand-worked venue', () => {
  // wallet 1 whale; 2 sharp + contrarian; 3 untagged; 4 only an unknown label; 5 the counterparty
  const v: Venue = {
    markets: [1, 2],
    wallets: [1, 2, 3, 4, 5],
    tags: { 1: ['whale'], 2: ['sharp', 'contrarian'], 4: ['noise'] },
    built: T0 - 6 * HOUR,
    fills: [
      { tx: 1, li: 0, t: T0 - 1 * HOUR, m: 1, o: 0, taker: 1, maker: 5, side: 'BUY', price: 0.5, size: 5000 }, // a: boundary, in
      { tx: 2, li: 0, t: T0 - 1 * HOUR, m: 1, o: 0, taker: 1, maker: 5, side: 'BUY', price: 0.5, size: 4999.99 }, // b: under
      { tx: 3, li: 4, t: T0 - 2 * HOUR, m: 2, o: 1, taker: 2, maker: 5, side: 'SELL', price: 0.8, size: 8000 }, // c: exit on NO
      { tx: 4, li: 0, t: T0 - 3 * HOUR, m: 1, o: 0, taker: 3, maker: 1, side: 'BUY', price: 0.4, size: 20000 }, // d: untagged taker (tagged maker)
      { tx: 5, li: 0, t: T0 + 60_000, m: 1, o: 0, taker: 2, maker: 5, side: 'BUY', price: 0.6, size: 6000 }, // e: after T
      { tx: 6, li: 0, t: T0 - 25 * HOUR, m: 1, o: 1, taker: 1, maker: 5, side: 'BUY', price: 0.3, size: 7000 }, // f: 25 h ago
      { tx: 7, li: 0, t: T0, m: 2, o: 0, taker: 1, maker: 5, side: 'BUY', price: 0.55, size: 5500 }, // h: exactly at T, in
      { tx: 8, li: 0, t: T0 - 24 * HOUR, m: 2, o: 0, taker: 2, maker: 5, side: 'BUY', price: 0.5, size: 9000 }, // i: exactly T - 24 h, out
      { tx: 9, li: 0, t: T0 - 4 * HOUR, m: 2, o: 0, taker: 4, maker: 5, side: 'BUY', price: 0.5, size: 9000 }, // j: unknown label only
    ],
  };
  beforeAll(() => load(v));

  it('lists the signals of the last 24 h, newest first, with exactly the spec fields plus ts and log_index', async () => {
    const r = SmartMoneySignals.parse(await smartMoneySignals(db, T));
    expect(r.as_of).toBe(T.toISOString());
    expect(r.labels_as_of).toBe(new Date(T0 - 6 * HOUR).toISOString());
    expect(r.window_start).toBe(new Date(T0 - 24 * HOUR).toISOString());
    expect(r.min_size_usdc).toBe(5000);
    expect(r.next_cursor).toBeNull();
    expect(r.signals).toEqual([
      {
        signal_type: 'large_buy',
        trader_proxy: getAddress(addr(1)),
        smart_money_tags: ['whale'],
        condition_id: cond(2),
        title: 'Will it 2?',
        outcome_side: 'YES',
        price: 0.55,
        size_usdc: 5500,
        tx_hash: txOf(7),
        ts: new Date(T0).toISOString(),
        log_index: 0,
      },
      {
        signal_type: 'large_buy',
        trader_proxy: getAddress(addr(1)),
        smart_money_tags: ['whale'],
        condition_id: cond(1),
        title: 'Will it 1?',
        outcome_side: 'YES',
        price: 0.5,
        size_usdc: 5000,
        tx_hash: txOf(1),
        ts: new Date(T0 - HOUR).toISOString(),
        log_index: 0,
      },
      {
        signal_type: 'exit',
        trader_proxy: getAddress(addr(2)),
        smart_money_tags: ['sharp', 'contrarian'],
        condition_id: cond(2),
        title: 'Will it 2?',
        outcome_side: 'NO',
        price: 0.8,
        size_usdc: 8000,
        tx_hash: txOf(3),
        ts: new Date(T0 - 2 * HOUR).toISOString(),
        log_index: 4,
      },
    ]);
  });

  it('a longer window reaches older fills; T - since itself stays out', async () => {
    const r = await smartMoneySignals(db, T, { sinceHours: 48 });
    expect(r.signals.map((s) => s.tx_hash)).toEqual([txOf(7), txOf(1), txOf(3), txOf(8), txOf(6)]);
    const exact = await smartMoneySignals(db, T, { sinceHours: 25 });
    expect(exact.signals.map((s) => s.tx_hash)).toEqual([txOf(7), txOf(1), txOf(3), txOf(8)]);
  });

  it('no lookahead: as of an earlier T, later fills do not exist', async () => {
    // (T - 25.5 h, T - 1.5 h]: the fills of T - 24 h and T - 25 h come into the window, the last hour's leave it
    const r = await smartMoneySignals(db, new Date(T0 - 90 * 60_000));
    expect(r.signals.map((s) => s.tx_hash)).toEqual([txOf(3), txOf(8), txOf(6)]);
    const later = await smartMoneySignals(db, new Date(T0 + HOUR));
    expect(later.signals.map((s) => s.tx_hash)).toEqual([txOf(5), txOf(7), txOf(1), txOf(3)]);
  });

  it('filters: tags, signal types, one market', async () => {
    expect((await smartMoneySignals(db, T, { tags: ['sharp'] })).signals.map((s) => s.tx_hash)).toEqual([txOf(3)]);
    expect((await smartMoneySignals(db, T, { tags: ['early_bird'] })).signals).toEqual([]);
    expect((await smartMoneySignals(db, T, { tags: ['early_bird', 'whale'] })).signals.map((s) => s.tx_hash)).toEqual([txOf(7), txOf(1)]);
    expect((await smartMoneySignals(db, T, { signalTypes: ['exit'] })).signals.map((s) => s.tx_hash)).toEqual([txOf(3)]);
    expect((await smartMoneySignals(db, T, { signalTypes: ['large_buy', 'exit'] })).signals).toHaveLength(3);
    expect((await smartMoneySignals(db, T, { conditionId: cond(2).toUpperCase().replace('0X', '0x') })).signals.map((s) => s.tx_hash)).toEqual([txOf(7), txOf(3)]);
    expect((await smartMoneySignals(db, T, { conditionId: cond(99) })).signals).toEqual([]);
  });

  it('pages by cursor; the cursor pins the first page\'s T', async () => {
    const p1 = await smartMoneySignals(db, T, { limit: 2 });
    expect(p1.signals.map((s) => s.tx_hash)).toEqual([txOf(7), txOf(1)]);
    expect(p1.next_cursor).toEqual(expect.any(String));
    // a later T on the second page does not let the fill after T in
    const p2 = await smartMoneySignals(db, new Date(T0 + 2 * HOUR), { limit: 2, cursor: p1.next_cursor! });
    expect(p2.as_of).toBe(T.toISOString());
    expect(p2.signals.map((s) => s.tx_hash)).toEqual([txOf(3)]);
    expect(p2.next_cursor).toBeNull();
  });

  it('rejects bad options', async () => {
    await expect(smartMoneySignals(db, T, { sinceHours: 0 })).rejects.toThrow();
    await expect(smartMoneySignals(db, T, { sinceHours: 169 })).rejects.toThrow();
    await expect(smartMoneySignals(db, T, { limit: 201 })).rejects.toThrow();
    await expect(smartMoneySignals(db, T, { cursor: 'garbage' })).rejects.toThrow(/invalid cursor/);
    await expect(smartMoneySignals(db, T, { conditionId: '0x12' })).rejects.toThrow(/condition id/);
    await expect(smartMoneySignals(db, T, { tags: ['noise' as never] })).rejects.toThrow();
  });

  it('a build later than T would look ahead; no build is an error too', async () => {
    await expect(smartMoneySignals(db, new Date(T0 - 7 * HOUR))).rejects.toMatchObject({ code: 'analytics_after_as_of' });
    await load({ ...v, built: null });
    await expect(smartMoneySignals(db, T)).rejects.toBeInstanceOf(SignalError);
    await expect(smartMoneySignals(db, T)).rejects.toMatchObject({ code: 'analytics_missing' });
    await load(v);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Property: SQL = brute force over signalFromFill
// ---------------------------------------------------------------------------------------------------------------

function reference(v: Venue, asOf: number, o: { sinceHours: number; tags?: string[]; signalTypes?: string[]; conditionId?: string }): SmartMoneySignal[] {
  const out: SmartMoneySignal[] = [];
  for (const f of v.fills) {
    if (!(f.t > asOf - o.sinceHours * HOUR && f.t <= asOf)) continue;
    if (o.conditionId && cond(f.m) !== o.conditionId) continue;
    const s = signalFromFill(
      { trader_proxy: addr(f.taker), condition_id: cond(f.m), title: `Will it ${f.m}?`, outcome_side: f.o === 0 ? 'YES' : 'NO', taker_side: f.side, price: f.price, size_usdc: f.size, tx_hash: txOf(f.tx) },
      v.tags[f.taker] ?? [],
    );
    if (!s) continue;
    if (o.tags && !s.smart_money_tags.some((t) => o.tags!.includes(t))) continue;
    if (o.signalTypes && !o.signalTypes.includes(s.signal_type)) continue;
    out.push({ ...s, ts: new Date(f.t).toISOString(), log_index: f.li });
  }
  const key = (s: SmartMoneySignal) => [Date.parse(s.ts), s.tx_hash, s.log_index] as const;
  return out.sort((a, b) => {
    const [ta, xa, la] = key(a);
    const [tb, xb, lb] = key(b);
    return tb - ta || (xa < xb ? 1 : xa > xb ? -1 : 0) || lb - la;
  });
}

describe('property: the SQL list equals a brute-force reference over signalFromFill', () => {
  const tagSet = fc.oneof(
    { weight: 3, arbitrary: fc.subarray([...SMART_MONEY_TAGS, 'noise'], { minLength: 1, maxLength: 3 }) },
    { weight: 1, arbitrary: fc.constant<string[]>([]) },
  );
  const venueArb = fc
    .record({
      tags: fc.tuple(tagSet, tagSet, tagSet, tagSet),
      fills: fc.array(
        fc.record({
          // whole minutes from 60 h before T to 2 h after, plus the window edges and ties on one minute
          minute: fc.oneof(fc.integer({ min: -3600, max: 120 }), fc.integer({ min: -180, max: 5 }), fc.constantFrom(-1440, -60, 0, 1)),
          tx: fc.integer({ min: 1, max: 8 }),
          li: fc.integer({ min: 0, max: 3 }),
          m: fc.integer({ min: 1, max: 2 }),
          o: fc.constantFrom<0 | 1>(0, 1),
          taker: fc.integer({ min: 1, max: 4 }),
          side: fc.constantFrom<'BUY' | 'SELL'>('BUY', 'SELL'),
          cents: fc.integer({ min: 1, max: 99 }),
          // sizes straddling the threshold, the threshold itself, above it, and far below it
          size: fc.oneof(fc.constantFrom(4999.99, 5000, 5000.01), fc.integer({ min: 4000, max: 12000 }), fc.integer({ min: 5000, max: 50000 }), fc.integer({ min: 1, max: 100 })),
        }),
        { minLength: 4, maxLength: 30 },
      ),
    })
    .map(({ tags, fills }): Venue => {
      // (tx, log_index) is unique on the venue
      const seen = new Set<string>();
      const uniq = fills.filter((f) => !seen.has(`${f.tx}:${f.li}`) && seen.add(`${f.tx}:${f.li}`));
      return {
        markets: [1, 2],
        wallets: [1, 2, 3, 4, 5],
        tags: { 1: tags[0], 2: tags[1], 3: tags[2], 4: tags[3] },
        built: T0 - 100 * HOUR,
        fills: uniq.map((f) => ({ tx: f.tx, li: f.li, t: T0 + f.minute * 60_000, m: f.m, o: f.o, taker: f.taker, maker: 5, side: f.side, price: f.cents / 100, size: f.size })),
      };
    });
  const sometimes = <A,>(a: fc.Arbitrary<A>) => fc.oneof({ weight: 3, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: a });
  const optsArb = fc.record({
    sinceHours: fc.constantFrom(1, 24, 48, 168),
    limit: fc.oneof({ weight: 3, arbitrary: fc.integer({ min: 1, max: 3 }) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 10 }) }),
    tags: sometimes(fc.subarray([...SMART_MONEY_TAGS], { minLength: 1 })),
    signalTypes: sometimes(fc.subarray<'large_buy' | 'exit'>(['large_buy', 'exit'], { minLength: 1 })),
    market: sometimes(fc.integer({ min: 1, max: 3 })),
    asOfMinute: fc.constantFrom(0, -60, 1),
  });

  it('every page, concatenated, is the reference list', async () => {
    let nonEmpty = 0;
    let multiPage = 0;
    await fc.assert(
      fc.asyncProperty(venueArb, optsArb, async (v, o) => {
        await load(v);
        const asOf = T0 + o.asOfMinute * 60_000;
        const opts: SmartMoneySignalsQueryInput = { sinceHours: o.sinceHours, limit: o.limit, tags: o.tags, signalTypes: o.signalTypes, conditionId: o.market ? cond(o.market) : undefined };
        const want = reference(v, asOf, { sinceHours: o.sinceHours, tags: o.tags, signalTypes: o.signalTypes, conditionId: opts.conditionId });
        const got: SmartMoneySignal[] = [];
        let cursor: string | undefined;
        for (let page = 0; page < 40; page++) {
          const r = SmartMoneySignals.parse(await smartMoneySignals(db, new Date(asOf), { ...opts, cursor }));
          expect(r.signals.length).toBeLessThanOrEqual(o.limit);
          got.push(...r.signals);
          if (!r.next_cursor) break;
          expect(r.signals.length).toBe(o.limit);
          cursor = r.next_cursor;
          if (page === 0) multiPage++;
        }
        expect(got).toEqual(want);
        if (want.length) nonEmpty++;
      }),
      { numRuns: 100 },
    );
    // the generator is not vacuous: most runs have signals, many span several pages
    expect(nonEmpty).toBeGreaterThan(20);
    expect(multiPage).toBeGreaterThan(8);
  });
});
