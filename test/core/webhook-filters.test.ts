/**
 * Webhook filters: hand-worked cases for every filter_json key (checked against the reference matchesFilter and the
 * SubscriptionIndex alike), the FilterJson schema, and a property: after any add / update / remove sequence,
 * SubscriptionIndex.match equals brute force matchesFilter over the active, subscribed subscriptions.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  EVENT_TYPES,
  EventTypes,
  FilterJson,
  SubscriptionIndex,
  deadEventTypes,
  matchesFilter,
  type IndexedSubscription,
} from '../../core/webhook-filters.ts';

const C1 = '0x' + 'ab'.repeat(32);
const C2 = '0x' + '0c'.repeat(32);
const C3 = '0x' + '7f'.repeat(32);
const T1 = '0x' + 'de'.repeat(20);
const T2 = '0x' + '0a'.repeat(20);
const T3 = '0x' + '55'.repeat(20);
/** T1 in EIP-55 style mixed case (the checksum is irrelevant: comparison is case-insensitive) */
const T1_MIXED = '0x' + 'dE'.repeat(20);

type Data = Record<string, unknown>;
const fill = (o: Data = {}): Data => ({ trader_proxy: T1, condition_id: C1, size_usdc: 100, price: 0.5, token_id: '1', taker_side: 'buy', ...o });
const signal = (o: Data = {}): Data => ({ signal_type: 'large_buy', trader_proxy: T1, smart_money_tags: ['whale'], condition_id: C1, size_usdc: 6000, price: 0.4, ...o });
const resolved = (o: Data = {}): Data => ({ condition_id: C1, winner_outcome: 'YES', winner_index: 0, ...o });

/** The reference verdict, asserting that a one-subscription index agrees with it. */
function m(filter: Record<string, unknown>, eventType: string, data: Data): boolean {
  const ref = matchesFilter(filter as FilterJson, eventType, data);
  const idx = new SubscriptionIndex();
  idx.add({ id: 's', event_types: [...EVENT_TYPES], filter: filter as FilterJson, active: true });
  expect(idx.match(eventType, data)).toEqual(ref ? ['s'] : []);
  return ref;
}

describe('matchesFilter, key by key (reference and index agree on each case)', () => {
  it('empty filter matches every event of every known type, even with empty data', () => {
    for (const t of EVENT_TYPES) {
      expect(m({}, t, {})).toBe(true);
      expect(m({}, t, fill())).toBe(true);
    }
    expect(m({}, 'trader.unknown', fill())).toBe(false);
  });

  it('condition_id: string or array, case-insensitive both ways, missing or mistyped data field never matches', () => {
    expect(m({ condition_id: C1 }, 'trader.fill', fill())).toBe(true);
    expect(m({ condition_id: C1.toUpperCase().replace('0X', '0x') }, 'trader.fill', fill())).toBe(true);
    expect(m({ condition_id: C1 }, 'trader.fill', fill({ condition_id: C1.toUpperCase() }))).toBe(true);
    expect(m({ condition_id: C2 }, 'trader.fill', fill())).toBe(false);
    expect(m({ condition_id: [C2, C3] }, 'trader.fill', fill())).toBe(false);
    expect(m({ condition_id: [C2, C1] }, 'trader.fill', fill())).toBe(true);
    expect(m({ condition_id: [C2, C1.toUpperCase()] }, 'market.resolved', resolved())).toBe(true);
    // a fill whose token has no known condition carries no condition_id
    const { condition_id: _, ...noCond } = fill();
    expect(m({ condition_id: C1 }, 'trader.fill', noCond)).toBe(false);
    expect(m({ condition_id: C1 }, 'trader.fill', fill({ condition_id: null }))).toBe(false);
    expect(m({ condition_id: C1 }, 'trader.fill', fill({ condition_id: 42 }))).toBe(false);
    expect(m({}, 'trader.fill', noCond)).toBe(true);
  });

  it('trader_proxy: string or array, case-insensitive, absent on market.resolved', () => {
    expect(m({ trader_proxy: T1 }, 'trader.fill', fill())).toBe(true);
    expect(m({ trader_proxy: T1_MIXED }, 'trader.fill', fill())).toBe(true);
    expect(m({ trader_proxy: T1 }, 'trader.fill', fill({ trader_proxy: T1.toUpperCase().replace('0X', '0x') }))).toBe(true);
    expect(m({ trader_proxy: T2 }, 'trader.fill', fill())).toBe(false);
    expect(m({ trader_proxy: [T2, T3] }, 'trader.fill', fill())).toBe(false);
    expect(m({ trader_proxy: [T2, T1_MIXED] }, 'signal.smart_money', signal())).toBe(true);
    expect(m({ trader_proxy: T1 }, 'market.resolved', resolved())).toBe(false);
  });

  it('signal_types: data.signal_type in the list; trader.fill has none', () => {
    expect(m({ signal_types: ['large_buy'] }, 'signal.smart_money', signal())).toBe(true);
    expect(m({ signal_types: ['exit'] }, 'signal.smart_money', signal())).toBe(false);
    expect(m({ signal_types: ['exit'] }, 'signal.smart_money', signal({ signal_type: 'exit' }))).toBe(true);
    expect(m({ signal_types: ['exit', 'large_buy'] }, 'signal.smart_money', signal())).toBe(true);
    expect(m({ signal_types: ['large_buy'] }, 'signal.smart_money', signal({ signal_type: 'LARGE_BUY' }))).toBe(false);
    expect(m({ signal_types: ['large_buy', 'exit'] }, 'trader.fill', fill())).toBe(false);
  });

  it('tags_any: the event tags intersect the list', () => {
    expect(m({ tags_any: ['whale'] }, 'signal.smart_money', signal())).toBe(true);
    expect(m({ tags_any: ['sharp', 'whale'] }, 'signal.smart_money', signal({ smart_money_tags: ['whale', 'early_bird'] }))).toBe(true);
    expect(m({ tags_any: ['sharp', 'contrarian'] }, 'signal.smart_money', signal({ smart_money_tags: ['whale', 'early_bird'] }))).toBe(false);
    expect(m({ tags_any: ['sharp'] }, 'signal.smart_money', signal({ smart_money_tags: [] }))).toBe(false);
    expect(m({ tags_any: ['sharp'] }, 'signal.smart_money', signal({ smart_money_tags: 'sharp' }))).toBe(false);
    expect(m({ tags_any: ['sharp'] }, 'signal.smart_money', signal({ smart_money_tags: ['sharp', 'sharp', 7] }))).toBe(true);
    expect(m({ tags_any: ['whale'] }, 'trader.fill', fill())).toBe(false);
  });

  it('min_size_usdc: at least, boundary included; missing or mistyped size never matches', () => {
    expect(m({ min_size_usdc: 5000 }, 'trader.fill', fill({ size_usdc: 5000 }))).toBe(true);
    expect(m({ min_size_usdc: 5000 }, 'trader.fill', fill({ size_usdc: 5000.000001 }))).toBe(true);
    expect(m({ min_size_usdc: 5000 }, 'trader.fill', fill({ size_usdc: 4999.999999 }))).toBe(false);
    expect(m({ min_size_usdc: 0 }, 'trader.fill', fill({ size_usdc: 0 }))).toBe(true);
    expect(m({ min_size_usdc: 0 }, 'trader.fill', fill({ size_usdc: '100' }))).toBe(false);
    expect(m({ min_size_usdc: 0 }, 'trader.fill', fill({ size_usdc: Number.NaN }))).toBe(false);
    expect(m({ min_size_usdc: 0 }, 'market.resolved', resolved())).toBe(false);
  });

  it('keys AND-combine', () => {
    const f = { trader_proxy: T1, condition_id: [C1, C2], min_size_usdc: 1000 };
    expect(m(f, 'trader.fill', fill({ size_usdc: 1000 }))).toBe(true);
    expect(m(f, 'trader.fill', fill({ size_usdc: 999 }))).toBe(false);
    expect(m(f, 'trader.fill', fill({ size_usdc: 1000, trader_proxy: T2 }))).toBe(false);
    expect(m(f, 'trader.fill', fill({ size_usdc: 1000, condition_id: C3 }))).toBe(false);
    const g = { signal_types: ['exit'], tags_any: ['sharp', 'whale'], min_size_usdc: 5000 };
    expect(m(g, 'signal.smart_money', signal({ signal_type: 'exit' }))).toBe(true);
    expect(m(g, 'signal.smart_money', signal())).toBe(false);
    expect(m(g, 'signal.smart_money', signal({ signal_type: 'exit', smart_money_tags: ['contrarian'] }))).toBe(false);
  });

  it('unknown keys are ignored; null means absent', () => {
    expect(m({ foo: 'bar', nested: { condition_id: C2 } }, 'trader.fill', fill())).toBe(true);
    expect(m({ foo: 1, condition_id: C1 }, 'trader.fill', fill())).toBe(true);
    expect(m({ foo: 1, condition_id: C2 }, 'trader.fill', fill())).toBe(false);
    expect(m({ condition_id: null, trader_proxy: null, min_size_usdc: null }, 'market.resolved', resolved())).toBe(true);
  });

  it('fails closed on an unvalidated filter: a mistyped known key or an empty list matches nothing', () => {
    expect(m({ min_size_usdc: '100' }, 'trader.fill', fill())).toBe(false);
    expect(m({ min_size_usdc: Number.NaN }, 'trader.fill', fill())).toBe(false);
    expect(m({ condition_id: 5 }, 'trader.fill', fill())).toBe(false);
    expect(m({ condition_id: [C1, 5] }, 'trader.fill', fill())).toBe(false);
    expect(m({ signal_types: 'large_buy' }, 'signal.smart_money', signal())).toBe(false);
    expect(m({ tags_any: { whale: true } }, 'signal.smart_money', signal())).toBe(false);
    expect(m({ condition_id: [] }, 'trader.fill', fill())).toBe(false);
    expect(m({ trader_proxy: [], condition_id: C1 }, 'trader.fill', fill())).toBe(false);
    expect(m({ tags_any: [], signal_types: ['large_buy'] }, 'signal.smart_money', signal())).toBe(false);
  });
});

describe('FilterJson schema', () => {
  const ok = (v: unknown) => FilterJson.safeParse(v).success;
  it('accepts the documented shapes, any hex case, and keeps unknown keys', () => {
    expect(ok({})).toBe(true);
    expect(ok({ condition_id: C1.toUpperCase().replace('0X', '0x'), trader_proxy: [T1_MIXED, T2], signal_types: ['exit'], tags_any: ['whale', 'sharp'], min_size_usdc: 0 })).toBe(true);
    expect(ok({ condition_id: [C1, C2], trader_proxy: T1, min_size_usdc: 5000.5 })).toBe(true);
    expect(ok({ condition_id: null })).toBe(true);
    expect(FilterJson.parse({ min_size_usdc: 1, foo: { bar: 1 } })).toEqual({ min_size_usdc: 1, foo: { bar: 1 } });
    expect(ok({ trader_proxy: Array.from({ length: 1000 }, () => T1) })).toBe(true);
  });
  it('rejects malformed values', () => {
    expect(ok({ condition_id: C1.slice(0, -1) })).toBe(false);
    expect(ok({ condition_id: C1 + '0' })).toBe(false);
    expect(ok({ condition_id: 'ab'.repeat(33) })).toBe(false);
    expect(ok({ condition_id: 'x'.repeat(201) })).toBe(false);
    expect(ok({ condition_id: [] })).toBe(false);
    expect(ok({ trader_proxy: T1.replace('de', 'zz') })).toBe(false);
    expect(ok({ trader_proxy: T1.slice(2) })).toBe(false);
    expect(ok({ trader_proxy: Array.from({ length: 1001 }, () => T1) })).toBe(false);
    expect(ok({ signal_types: 'exit' })).toBe(false);
    expect(ok({ signal_types: ['sell'] })).toBe(false);
    expect(ok({ signal_types: [] })).toBe(false);
    expect(ok({ tags_any: ['degen'] })).toBe(false);
    expect(ok({ min_size_usdc: -1 })).toBe(false);
    expect(ok({ min_size_usdc: '5000' })).toBe(false);
    expect(ok({ min_size_usdc: Number.POSITIVE_INFINITY })).toBe(false);
    expect(ok({ min_size_usdc: Number.NaN })).toBe(false);
    expect(ok([])).toBe(false);
    expect(ok(null)).toBe(false);
  });
  it('EventTypes: known, non-empty, no duplicates', () => {
    expect(EventTypes.safeParse(['trader.fill', 'market.resolved']).success).toBe(true);
    expect(EventTypes.safeParse([]).success).toBe(false);
    expect(EventTypes.safeParse(['trader.fill', 'trader.fill']).success).toBe(false);
    expect(EventTypes.safeParse(['trader.fills']).success).toBe(false);
  });
  it('deadEventTypes names the subscribed types a filter can never match', () => {
    expect(deadEventTypes({ min_size_usdc: 10 }, ['trader.fill', 'market.resolved', 'service.test'])).toEqual(['market.resolved']);
    expect(deadEventTypes({ signal_types: ['exit'] }, ['trader.fill', 'signal.smart_money'])).toEqual(['trader.fill']);
    expect(deadEventTypes({ condition_id: C1 }, [...EVENT_TYPES])).toEqual([]);
    expect(deadEventTypes({}, [...EVENT_TYPES])).toEqual([]);
  });
});

describe('SubscriptionIndex', () => {
  const sub = (id: string, filter: Record<string, unknown>, event_types: string[] = ['trader.fill'], active = true): IndexedSubscription => ({
    id,
    event_types,
    filter: filter as FilterJson,
    active,
  });

  it('inactive subscriptions never match; update toggles; remove forgets', () => {
    const idx = new SubscriptionIndex();
    idx.add(sub('a', {}, ['trader.fill'], false));
    idx.add(sub('b', { trader_proxy: T1 }, ['trader.fill'], false));
    expect(idx.size).toBe(2);
    expect(idx.activeSize).toBe(0);
    expect(idx.match('trader.fill', fill())).toEqual([]);
    idx.update(sub('b', { trader_proxy: T1 }, ['trader.fill'], true));
    expect(idx.activeSize).toBe(1);
    expect(idx.match('trader.fill', fill())).toEqual(['b']);
    idx.update(sub('b', { trader_proxy: T2 }));
    expect(idx.match('trader.fill', fill())).toEqual([]);
    expect(idx.match('trader.fill', fill({ trader_proxy: T2 }))).toEqual(['b']);
    expect(idx.remove('b')).toBe(true);
    expect(idx.remove('b')).toBe(false);
    expect(idx.match('trader.fill', fill({ trader_proxy: T2 }))).toEqual([]);
    expect(idx.size).toBe(1);
  });

  it('event_types gate: a subscription only sees its types', () => {
    const idx = new SubscriptionIndex();
    idx.add(sub('fills', {}, ['trader.fill']));
    idx.add(sub('res', { condition_id: C1 }, ['market.resolved']));
    idx.add(sub('both', { condition_id: C1 }, ['market.resolved', 'trader.fill']));
    idx.add(sub('none', {}, []));
    idx.add(sub('bogus', {}, ['trader.fills']));
    expect(idx.match('trader.fill', fill())).toEqual(['both', 'fills']);
    expect(idx.match('market.resolved', resolved())).toEqual(['both', 'res']);
    expect(idx.match('signal.smart_money', signal())).toEqual([]);
    expect(idx.match('service.test', {})).toEqual([]);
    expect(idx.match('nope', fill())).toEqual([]);
  });

  it('returns sorted ids and touches only candidates', () => {
    const idx = new SubscriptionIndex();
    const addr = (i: number) => '0x' + i.toString(16).padStart(40, '0');
    for (let i = 0; i < 2000; i++) idx.add(sub(`t${String(i).padStart(4, '0')}`, { trader_proxy: addr(i) }));
    for (let i = 0; i < 500; i++) idx.add(sub(`m${i}`, { min_size_usdc: 1000 + i }));
    idx.add(sub('z-all', {}));
    idx.add(sub('a-t7', { trader_proxy: [addr(7), addr(8)], min_size_usdc: 10 }));
    idx.add(sub('sig', { signal_types: ['exit'] }, ['trader.fill', 'signal.smart_money']));
    expect(idx.match('trader.fill', fill({ trader_proxy: addr(7).toUpperCase().replace('0X', '0x'), size_usdc: 1002 }))).toEqual(['a-t7', 'm0', 'm1', 'm2', 't0007', 'z-all']);
    expect(idx.lastCandidates).toBeLessThanOrEqual(6);
    expect(idx.match('trader.fill', fill({ trader_proxy: addr(8), size_usdc: 5 }))).toEqual(['t0008', 'z-all']);
    expect(idx.lastCandidates).toBeLessThanOrEqual(3);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Property: index == brute force
// ---------------------------------------------------------------------------------------------------------------

const CONDS = [C1, C2, C3, '0x' + '12'.repeat(32)];
const TRADERS = [T1, T2, T3, '0x' + '9b'.repeat(20)];
const SIGS = ['large_buy', 'exit'];
const TAGS = ['whale', 'sharp', 'early_bird', 'contrarian'];
const SIZES = [0, 1, 99.99, 100, 4999.99, 5000, 5000.01, 25_000];

/** a value in random case (the 0x prefix stays lowercase, as the schema requires) */
const cased = (v: string) =>
  fc.constantFrom<'lower' | 'upper' | 'mixed'>('lower', 'upper', 'mixed').map((c) =>
    c === 'lower' ? v : c === 'upper' ? '0x' + v.slice(2).toUpperCase() : '0x' + [...v.slice(2)].map((ch, i) => (i % 2 ? ch.toUpperCase() : ch)).join(''),
  );
const hexValue = (pool: string[]) => fc.constantFrom(...pool).chain(cased);
const oneOrMany = (a: fc.Arbitrary<string>) => fc.oneof(a, fc.array(a, { minLength: 1, maxLength: 3 }));

/** present 30% of the time, so filters of 0..2 keys dominate and events match often enough to be informative */
const sometimes = <T,>(a: fc.Arbitrary<T>) => fc.oneof({ arbitrary: fc.constant(undefined), weight: 7 }, { arbitrary: a, weight: 3 });
const filterArb: fc.Arbitrary<Record<string, unknown>> = fc
  .record({
    condition_id: sometimes(oneOrMany(hexValue(CONDS))),
    trader_proxy: sometimes(oneOrMany(hexValue(TRADERS))),
    signal_types: sometimes(fc.uniqueArray(fc.constantFrom(...SIGS), { minLength: 1, maxLength: 2 })),
    tags_any: sometimes(fc.array(fc.constantFrom(...TAGS), { minLength: 1, maxLength: 4 })),
    min_size_usdc: sometimes(fc.constantFrom(...SIZES)),
    note: sometimes(fc.string()),
    junk: sometimes(fc.constant(null)),
  })
  .map((f) => Object.fromEntries(Object.entries(f).filter(([, v]) => v !== undefined)));

const subArb: fc.Arbitrary<IndexedSubscription> = fc.record({
  id: fc.integer({ min: 0, max: 299 }).map((i) => `sub-${i}`),
  event_types: fc.subarray([...EVENT_TYPES]),
  filter: filterArb.map((f) => FilterJson.parse(f)),
  active: fc.boolean(),
});

const maybe = <T,>(a: fc.Arbitrary<T>) => fc.option(a, { nil: undefined, freq: 4 });
const eventArb: fc.Arbitrary<{ type: string; data: Data }> = fc.record({
  type: fc.oneof({ arbitrary: fc.constantFrom(...EVENT_TYPES), weight: 9 }, { arbitrary: fc.constant('unknown.type'), weight: 1 }),
  data: fc
    .record({
      condition_id: maybe(fc.oneof({ arbitrary: hexValue(CONDS), weight: 9 }, { arbitrary: fc.constant(7 as unknown as string), weight: 1 })),
      trader_proxy: maybe(hexValue(TRADERS)),
      signal_type: maybe(fc.constantFrom(...SIGS, 'LARGE_BUY')),
      smart_money_tags: maybe(fc.array(fc.constantFrom(...TAGS), { maxLength: 4 })),
      size_usdc: maybe(fc.oneof(fc.constantFrom(...SIZES), fc.double({ min: 0, max: 30_000, noNaN: true }))),
    })
    .map((d) => Object.fromEntries(Object.entries(d).filter(([, v]) => v !== undefined))),
});

type Op = { op: 'add'; sub: IndexedSubscription } | { op: 'update'; sub: IndexedSubscription } | { op: 'remove'; id: string } | { op: 'check'; events: { type: string; data: Data }[] };
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: subArb.map((sub) => ({ op: 'add' as const, sub })), weight: 6 },
  { arbitrary: subArb.map((sub) => ({ op: 'update' as const, sub })), weight: 2 },
  { arbitrary: fc.integer({ min: 0, max: 299 }).map((i) => ({ op: 'remove' as const, id: `sub-${i}` })), weight: 1 },
  { arbitrary: fc.array(eventArb, { minLength: 1, maxLength: 4 }).map((events) => ({ op: 'check' as const, events })), weight: 1 },
);

function bruteForce(subs: Map<string, IndexedSubscription>, type: string, data: Data): string[] {
  const out: string[] = [];
  for (const s of subs.values()) if (s.active && s.event_types.includes(type) && matchesFilter(s.filter, type, data)) out.push(s.id);
  return out.sort();
}

it('property: SubscriptionIndex.match equals brute force matchesFilter over random add/update/remove sequences', () => {
  fc.assert(
    fc.property(fc.array(opArb, { maxLength: 1000, size: 'max' }), fc.array(eventArb, { minLength: 1, maxLength: 40, size: 'max' }), (ops, finalEvents) => {
      const idx = new SubscriptionIndex();
      const model = new Map<string, IndexedSubscription>();
      const check = (events: { type: string; data: Data }[]) => {
        for (const e of events) expect(idx.match(e.type, e.data)).toEqual(bruteForce(model, e.type, e.data));
      };
      for (const op of ops) {
        if (op.op === 'add') {
          idx.add(op.sub);
          model.set(op.sub.id, op.sub);
        } else if (op.op === 'update') {
          idx.update(op.sub);
          model.set(op.sub.id, op.sub);
        } else if (op.op === 'remove') {
          expect(idx.remove(op.id)).toBe(model.delete(op.id));
        } else check(op.events);
        expect(idx.size).toBe(model.size);
      }
      expect(idx.activeSize).toBe([...model.values()].filter((s) => s.active).length);
      check(finalEvents);
    }),
    { numRuns: 150 },
  );
});

it('property: events built to hit a subscription are matched (the index is not vacuously empty)', () => {
  fc.assert(
    fc.property(fc.array(subArb, { minLength: 1, maxLength: 300, size: 'max' }), (subs) => {
      const idx = new SubscriptionIndex();
      const model = new Map<string, IndexedSubscription>();
      for (const s of subs) {
        idx.add(s);
        model.set(s.id, s);
      }
      // for each active subscription, an event that satisfies its filter by construction
      for (const s of model.values()) {
        if (!s.active || s.event_types.length === 0) continue;
        const f = s.filter;
        const first = (v: string | string[] | null | undefined) => (v == null ? undefined : Array.isArray(v) ? v[0] : v);
        const data: Data = {
          condition_id: first(f.condition_id) ?? C1,
          trader_proxy: first(f.trader_proxy)?.toUpperCase().replace('0X', '0x') ?? T1,
          signal_type: first(f.signal_types) ?? 'exit',
          smart_money_tags: f.tags_any ? [f.tags_any[f.tags_any.length - 1]] : [],
          size_usdc: f.min_size_usdc ?? 0,
        };
        const type = s.event_types[0]!;
        const got = idx.match(type, data);
        expect(got).toContain(s.id);
        expect(got).toEqual(bruteForce(model, type, data));
      }
    }),
    { numRuns: 60 },
  );
});
