/**
 * Wallet clusters (core/clusters.ts): the lockstep pair rule on a hand-built venue (who is linked, who is not and
 * why), union-find against a brute-force reference, and recovery of the generator's planted sybil clusters at demo
 * scale (pairwise precision and recall against truth_wallets.cluster_id).
 */
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLUSTER_RULES, buildClusters, clusterComponents, lockstepPairsSql, refreshClusters, type ClusterRules, type LegSource, type LockstepPair } from '../../core/clusters.ts';
import { queryRows } from '../../data/duckdb.ts';
import { duckRunner } from '../../data/runner.ts';
import { DEMO_VENUE } from '../../data/generator/defaults.ts';
import { closeMemoryVenue, openMemoryVenue } from '../helpers/memory-venue.ts';
import { makeVenue, type TestVenue } from '../helpers/venue.ts';
import { venueInsert } from '../../data/schema.ts';

const HOUR = 3600;
const MM = 100; // the market maker: counterparty of every fill
const base = Date.UTC(2026, 0, 5, 10, 0, 50) / 1000; // 50 s into a minute, so small offsets cross window buckets
const ts = (s: number) => `make_timestamp(${s * 1_000_000}::BIGINT)`;
/** The controller's schedule: 15 buys of YES two hours apart on markets 1..3, at irregular seconds. */
const schedule = Array.from({ length: 15 }, (_, i) => ({ t: base + i * 2 * HOUR + ((i * 37) % 50), m: 1 + (i % 3) }));

interface Fill {
  t: number;
  m: number;
  o?: 0 | 1;
  w: number;
  side?: 'BUY' | 'SELL';
  /** the wallet is the maker of a mint (the MM, as taker, buys the complement) */
  mintMaker?: boolean;
}

function fillsSql(fills: Fill[]): string {
  const rows = fills.map((f, i) => {
    const o = f.o ?? 0;
    const side = f.side ?? 'BUY';
    if (f.mintMaker) {
      // taker MM buys the complement at 0.6; the wallet (maker) buys token o at 0.4
      return `('0x${(i + 1).toString(16).padStart(64, '0')}', ${i}, ${ts(f.t)}, ${f.m}, ${1 - o}, ${f.w}, ${MM}, 'BUY', 'mint', 0.6, 10, 6, 0, 1, 'ctf')`;
    }
    return `('0x${(i + 1).toString(16).padStart(64, '0')}', ${i}, ${ts(f.t)}, ${f.m}, ${o}, ${MM}, ${f.w}, '${side}', 'direct', 0.4, 10, 4, 0, 1, 'ctf')`;
  });
  return `${venueInsert('fills')} VALUES ${rows.join(',\n')}`;
}

describe('lockstep pairs on a hand-built venue', () => {
  let instance: DuckDBInstance;
  let conn: DuckDBConnection;
  const T = new Date((base + 40 * 2 * HOUR) * 1000);

  beforeAll(async () => {
    ({ instance, conn } = await openMemoryVenue());
    const fills: Fill[] = [];
    // 1, 2, 3: the cluster, 0, +5 and +12 s behind the schedule; one of wallet 3's fills is a maker leg of a mint
    schedule.forEach((s, i) => {
      fills.push({ t: s.t, m: s.m, w: 1 }, { t: s.t + 5, m: s.m, w: 2 }, { t: s.t + 12, m: s.m, w: 3, mintMaker: i === 4 });
    });
    // 4, 5: the same tokens and side at unrelated times (20 and 40 minutes later)
    for (const s of schedule) fills.push({ t: s.t + 1200, m: s.m, w: 4 }, { t: s.t + 2400, m: s.m, w: 5 });
    // 6: coincides with the cluster 6 times only (60% of its 10 fills, but under the 10 co-fills required)
    schedule.slice(0, 6).forEach((s) => fills.push({ t: s.t + 3, m: s.m, w: 6 }));
    for (let j = 0; j < 4; j++) fills.push({ t: base + j * 2 * HOUR + 3000, m: 1, w: 6 });
    // 10, 11: 30 fills each on market 7, 12 of them 20 s apart: 40% of either wallet's fills
    for (let j = 0; j < 30; j++) {
      const t = base + j * 2 * HOUR + 900;
      fills.push({ t, m: 7, w: 10 }, { t: j < 12 ? t + 20 : t + 1800, m: 7, w: 11 });
    }
    // 8: sells the same token at the same moments; 9: buys the complement (NO) at the same moments
    for (const s of schedule) fills.push({ t: s.t + 2, m: s.m, w: 8, side: 'SELL' }, { t: s.t + 2, m: s.m, o: 1, w: 9 });
    // 20/21: exactly 60 s apart (linked); 30/31: 61 s apart (not linked) — on markets 4 and 5
    for (let j = 0; j < 12; j++) {
      const t = base + j * 3 * HOUR + 7;
      fills.push({ t, m: 4, w: 20 }, { t: t + 60, m: 4, w: 21 }, { t, m: 5, w: 30 }, { t: t + 61, m: 5, w: 31 });
    }
    // 40..64: a crowd of 25 wallets buying at the very same seconds on market 6 is not a cluster
    for (let j = 0; j < 12; j++) for (let w = 40; w < 65; w++) fills.push({ t: base + j * 3 * HOUR + 100, m: 6, w });
    await conn.run(fillsSql(fills));
  });
  afterAll(() => closeMemoryVenue(conn, instance));

  const pairs = (asOf: Date, rules = CLUSTER_RULES) => queryRows<LockstepPair>(conn, lockstepPairsSql(asOf, rules));

  it('links exactly the lockstep wallets (and the pair exactly one window apart)', async () => {
    const p = await pairs(T);
    expect(p.map((r) => [r.a, r.b])).toEqual([
      [1, 2],
      [1, 3],
      [2, 3],
      [20, 21],
    ]);
    for (const r of p.slice(0, 3)) expect(r).toMatchObject({ co_fills: 15, n_a: 15, n_b: 15, share: 1 });
    expect(p[3]).toMatchObject({ co_fills: 12, n_a: 12, n_b: 12, share: 1 });
  });

  it('the rules are what keep the others out', async () => {
    // few coincidences: wallet 6 links once 6 co-fills are enough
    expect((await pairs(T, { ...CLUSTER_RULES, minCoFills: 6 })).find((r) => r.a === 1 && r.b === 6)).toMatchObject({ co_fills: 6, n_b: 10, share: 0.6 });
    const loose = await pairs(T, { ...CLUSTER_RULES, minCoFills: 3, minShare: 0.1 });
    // a small share: 10 and 11 coincide 12 times, 40% of their 30 fills
    const p10 = loose.find((r) => r.a === 10 && r.b === 11)!;
    expect(p10).toMatchObject({ co_fills: 12, n_a: 30, n_b: 30, share: 0.4 });
    expect((await pairs(T, { ...CLUSTER_RULES, minShare: 0.4 })).some((r) => r.a === 10 && r.b === 11)).toBe(true);
    // the market maker is everyone's counterparty: with no maker-share limit it pairs with the seller, wallet 8
    const withMm = await pairs(T, { ...CLUSTER_RULES, maxMakerShare: 1 });
    expect(withMm.some((r) => r.a === 8 && r.b === MM)).toBe(true);
    // the crowd links once crowds are allowed
    const crowd = await pairs(T, { ...CLUSTER_RULES, maxCrowd: 100 });
    expect(crowd.some((r) => r.a === 40 && r.b === 64)).toBe(true);
    // a wider window reaches the pair 61 s apart
    const wide = await pairs(T, { ...CLUSTER_RULES, windowS: 61 });
    expect(wide.some((r) => r.a === 30 && r.b === 31)).toBe(true);
  });

  it('reads only fills at or before T', async () => {
    // by the 6th slot of the schedule the cluster has 6 fills each, under the 10 co-fills required
    expect(await pairs(new Date((schedule[5]!.t + 60) * 1000))).toEqual([]);
    const p = await pairs(new Date((schedule[11]!.t + 12) * 1000));
    expect(p.filter((r) => r.a === 1).map((r) => [r.b, r.co_fills])).toEqual([
      [2, 12],
      [3, 12],
    ]);
  });

  it('buildClusters writes a_clusters ordered by wallet, and an empty table when nothing is clustered', async () => {
    const db = duckRunner(conn);
    const r = await buildClusters(db, T);
    expect(r).toMatchObject({ clusters: 2, wallets: 5, pairs: 4 });
    expect(await queryRows(conn, `SELECT * FROM a_clusters`)).toEqual([
      { wallet_id: 1, cluster_id: 1, cluster_size: 3 },
      { wallet_id: 2, cluster_id: 1, cluster_size: 3 },
      { wallet_id: 3, cluster_id: 1, cluster_size: 3 },
      { wallet_id: 20, cluster_id: 20, cluster_size: 2 },
      { wallet_id: 21, cluster_id: 20, cluster_size: 2 },
    ]);
    const empty = await buildClusters(db, new Date(base * 1000));
    expect(empty).toMatchObject({ clusters: 0, wallets: 0, pairs: 0 });
    expect(await queryRows(conn, `SELECT count(*)::INTEGER AS n FROM a_clusters`)).toEqual([{ n: 0 }]);
  });

  it('rejects nonsense rules', () => {
    expect(() => lockstepPairsSql(T, { ...CLUSTER_RULES, windowS: 0 })).toThrow();
    expect(() => lockstepPairsSql(T, { ...CLUSTER_RULES, minShare: 2 })).toThrow();
  });
});

/** Brute force: label every vertex by the smallest vertex reachable from it. */
function referenceComponents(edges: { a: number; b: number }[]): Map<number, number> {
  const adj = new Map<number, number[]>();
  for (const { a, b } of edges) {
    adj.set(a, [...(adj.get(a) ?? []), b]);
    adj.set(b, [...(adj.get(b) ?? []), a]);
  }
  const out = new Map<number, number>();
  for (const v of [...adj.keys()].sort((x, y) => x - y)) {
    const seen = new Set([v]);
    const stack = [v];
    while (stack.length) for (const u of adj.get(stack.pop()!)!) if (!seen.has(u)) (seen.add(u), stack.push(u));
    out.set(v, Math.min(...seen));
  }
  return out;
}

describe('clusterComponents', () => {
  it('names each component by its smallest wallet', () => {
    const c = clusterComponents([
      { a: 5, b: 9 },
      { a: 9, b: 2 },
      { a: 7, b: 8 },
      { a: 2, b: 5 },
      { a: 11, b: 11 },
    ]);
    expect([...c.entries()]).toEqual([
      [2, 2],
      [5, 2],
      [7, 7],
      [8, 7],
      [9, 2],
      [11, 11],
    ]);
    expect(clusterComponents([]).size).toBe(0);
  });

  it('agrees with a brute-force reference on random graphs, whatever the edge order', () => {
    const edge = fc.record({ a: fc.integer({ min: 0, max: 40 }), b: fc.integer({ min: 0, max: 40 }) });
    fc.assert(
      fc.property(fc.array(edge, { maxLength: 60 }), fc.integer(), (edges, seed) => {
        const got = clusterComponents(edges);
        expect([...got.entries()]).toEqual([...referenceComponents(edges).entries()]);
        // shuffled and flipped edges give the same labels
        const shuffled = edges
          .map((e, i) => ({ e: (i + seed) % 2 ? { a: e.b, b: e.a } : e, k: (i * 7919 + seed) % 101 }))
          .sort((x, y) => x.k - y.k)
          .map((x) => x.e);
        expect([...clusterComponents(shuffled).entries()]).toEqual([...got.entries()]);
      }),
      { numRuns: 300 },
    );
  });
});

/**
 * The incremental refresh (refreshClusters) against the rule itself: random legs arriving out of time order (late
 * and future-stamped ones), refreshed step by step; after every step the pairs equal lockstepPairsSql over the legs
 * seen so far, and the whole kept state (counts, crowded cells, pairs, a_clusters) equals a from-scratch build.
 * Small thresholds make eligibility flips and crowd flips common.
 */
describe('refreshClusters equals a rebuild', () => {
  let instance: DuckDBInstance;
  let conn: DuckDBConnection;
  const rules: ClusterRules = { windowS: 60, minCoFills: 3, minShare: 0.5, maxMakerShare: 0.5, maxCrowd: 3 };
  const t0 = Date.UTC(2026, 0, 5, 10, 0, 0) / 1000;
  const legsUpTo = (w: number): LegSource => ({ from: `(SELECT * FROM t_legs WHERE seq <= ${w})`, where: 'kind IN (1, 2)', isMaker: 'kind = 2', isBuy: 'q > 0' });
  const STATE: Record<string, string> = { a_cluster_wallets: 'wallet_id', a_cluster_moments: 'wallet_id, k', a_cluster_crowded: 'cell', a_cluster_pairs: 'a, b', a_clusters: 'wallet_id' };

  beforeAll(async () => {
    ({ instance, conn } = await openMemoryVenue());
  });
  afterAll(() => closeMemoryVenue(conn, instance));

  const state = async (prefix = '') => {
    const out: Record<string, unknown[]> = {};
    for (const [t, key] of Object.entries(STATE)) out[t] = await queryRows(conn, `SELECT * FROM ${prefix}${t} ORDER BY ${key}`);
    return out;
  };

  // a burst: several wallets trade one token side within seconds (the lockstep signal), or one wallet alone
  const burst = fc.record({
    t: fc.integer({ min: 0, max: 1800 }),
    market: fc.integer({ min: 1, max: 2 }),
    outcome: fc.integer({ min: 0, max: 1 }),
    buy: fc.boolean(),
    who: fc.array(
      fc.record({
        w: fc.integer({ min: 1, max: 9 }),
        dt: fc.integer({ min: 0, max: 70 }),
        maker: fc.integer({ min: 0, max: 3 }).map((x) => x === 0),
        late: fc.integer({ min: -900, max: 900 }),
        // a second fill of the same wallet, token side and second (one order against two makers), arriving apart: the
        // same moment again, often in a later refresh
        again: fc.option(fc.integer({ min: -900, max: 900 }), { freq: 3 }),
      }),
      { minLength: 1, maxLength: 8 },
    ),
  });

  it('after every refresh step', async () => {
    const seen = { pairs: 0, crowded: 0, steps: 0, flips: 0 }; // states with pairs, with crowded cells, all states; refreshes where eligibility flipped
    await fc.assert(
      fc.asyncProperty(fc.array(burst, { minLength: 5, maxLength: 40 }), fc.array(fc.integer({ min: 60, max: 600 }), { minLength: 2, maxLength: 6 }), async (bursts, steps) => {
        // a leg arrives (seq) in order of its stamp shifted by `late`: some arrive late, some before their stamp
        const legs = bursts.flatMap((b) =>
          b.who.flatMap((x) => [x.late, ...(x.again === null ? [] : [x.again])].map((late) => ({ w: x.w, m: b.market, o: b.outcome, t: t0 + b.t + x.dt, kind: x.maker ? 2 : 1, q: b.buy ? 5 : -5, arrive: b.t + x.dt + late }))),
        );
        legs.sort((a, b) => a.arrive - b.arrive || a.t - b.t || a.w - b.w);
        await conn.run(`CREATE OR REPLACE TABLE t_legs (wallet_id INTEGER, market_id INTEGER, outcome_index UTINYINT, ts TIMESTAMP, kind UTINYINT, q DOUBLE, seq BIGINT)`);
        if (legs.length) {
          await conn.run(`INSERT INTO t_legs VALUES ${legs.map((l, i) => `(${l.w}, ${l.m}, ${l.o}, make_timestamp(${l.t * 1_000_000}::BIGINT), ${l.kind}, ${l.q}, ${i + 1})`).join(', ')}`);
        }
        const db = duckRunner(conn);
        // the clock and the arrivals move on together: at clock T, the legs that arrived by T are seen
        const seenBy = (T: number) => legs.filter((l) => t0 + l.arrive <= T).length;
        let T = t0 + 100;
        let mark = { asOf: new Date(T * 1000), watermark: seenBy(T) };
        await buildClusters(db, mark.asOf, rules, legsUpTo(mark.watermark));
        for (const dt of steps) {
          T += dt;
          const next = { asOf: new Date(T * 1000), watermark: seenBy(T) };
          const r = await refreshClusters(db, mark, next, rules, { from: 't_legs', where: 'kind IN (1, 2)', isMaker: 'kind = 2', isBuy: 'q > 0' });
          if (r.flipped_wallets) seen.flips++;
          mark = next;
          const got = await state();
          const reference = await queryRows<{ a: number; b: number }>(conn, `SELECT a, b FROM (${lockstepPairsSql(next.asOf, rules, legsUpTo(next.watermark))})`);
          expect(got.a_cluster_pairs).toEqual(reference);
          // a from-scratch build of the same state, kept aside
          for (const t of Object.keys(STATE)) await conn.run(`CREATE OR REPLACE TABLE inc_${t} AS SELECT * FROM ${t}`);
          await buildClusters(db, next.asOf, rules, legsUpTo(next.watermark));
          const rebuilt = await state();
          expect(got).toEqual(rebuilt);
          if (got.a_cluster_pairs!.length) seen.pairs++;
          if (got.a_cluster_crowded!.length) seen.crowded++;
          seen.steps++;
          for (const t of Object.keys(STATE)) await conn.run(`CREATE OR REPLACE TABLE ${t} AS SELECT * FROM inc_${t}`);
        }
      }),
      // a fixed seed: the coverage counts below (pairs, crowds, flips in a tenth of the steps) held on most random seeds but
      // one CI run drew 22 pairs in 226 steps
      { numRuns: 60, seed: 20261128 },
    );
    // the streams do exercise pairs and crowds: at least a tenth of the states checked have some
    console.log(JSON.stringify(seen));
    expect(seen.pairs).toBeGreaterThan(seen.steps / 10);
    expect(seen.crowded).toBeGreaterThan(seen.steps / 10);
    // wallets become eligible and stop being so (their moments come and go whole)
    expect(seen.flips).toBeGreaterThan(seen.steps / 10);
  }, 240_000);

  it('finds pairs and crowds in these streams (the property is not vacuous)', async () => {
    // one fixed stream: wallets 1-3 in lockstep across refreshes, a crowd of 6 on one cell arriving late
    const rows: string[] = [];
    let seq = 0;
    for (let i = 0; i < 6; i++) for (const w of [1, 2, 3]) rows.push(`(${w}, 1, 0, make_timestamp(${(t0 + i * 300 + w) * 1_000_000}::BIGINT), 1, 5, ${++seq})`);
    for (let i = 0; i < 3; i++) for (let w = 4; w < 10; w++) rows.push(`(${w}, 2, 0, make_timestamp(${(t0 + 100 + i * 300) * 1_000_000}::BIGINT), 1, 5, ${++seq})`);
    await conn.run(`CREATE OR REPLACE TABLE t_legs (wallet_id INTEGER, market_id INTEGER, outcome_index UTINYINT, ts TIMESTAMP, kind UTINYINT, q DOUBLE, seq BIGINT)`);
    await conn.run(`INSERT INTO t_legs VALUES ${rows.join(', ')}`);
    const db = duckRunner(conn);
    const src: LegSource = { from: 't_legs', where: 'kind IN (1, 2)', isMaker: 'kind = 2', isBuy: 'q > 0' };
    const early = { asOf: new Date((t0 + 700) * 1000), watermark: 6 }; // wallets 1-3's first two moments
    await buildClusters(db, early.asOf, rules, legsUpTo(6));
    expect((await state()).a_cluster_pairs).toEqual([]); // 2 coinciding moments each: under minCoFills
    const r = await refreshClusters(db, early, { asOf: new Date((t0 + 2000) * 1000), watermark: seq }, rules, src);
    const s = await state();
    expect(s.a_cluster_pairs).toEqual([
      { a: 1, b: 2 },
      { a: 1, b: 3 },
      { a: 2, b: 3 },
    ]);
    expect(s.a_cluster_crowded).toHaveLength(3); // the crowd's three seconds: 6 wallets > maxCrowd 3
    expect(s.a_cluster_wallets!.filter((w) => Number((w as { n: number }).n) === 0).map((w) => (w as { wallet_id: number }).wallet_id)).toEqual([4, 5, 6, 7, 8, 9]);
    expect(r).toMatchObject({ clusters: 1, wallets: 3, pairs: 3 });
    expect(r.rechecked_wallets).toBe(9);
  });
});

describe('planted sybil clusters at demo scale', () => {
  let v: TestVenue;
  let figures: { predicted_pairs: number; truth_pairs: number; true_pairs: number; precision: number; recall: number; build_seconds: number };

  beforeAll(async () => {
    v = await makeVenue({ wallets: DEMO_VENUE.wallets, days: DEMO_VENUE.days, seed: DEMO_VENUE.seed });
    const T = new Date('2026-10-31T23:59:59Z');
    const build = await buildClusters(duckRunner(v.conn), T);
    const [r] = await v.rows<{ predicted_pairs: number; truth_pairs: number; true_pairs: number }>(`WITH
        p AS (SELECT a.wallet_id AS x, b.wallet_id AS y FROM a_clusters a JOIN a_clusters b ON a.cluster_id = b.cluster_id AND a.wallet_id < b.wallet_id),
        t AS (SELECT a.wallet_id AS x, b.wallet_id AS y FROM truth_wallets a JOIN truth_wallets b ON a.cluster_id = b.cluster_id AND a.wallet_id < b.wallet_id)
      SELECT (SELECT count(*) FROM p)::INTEGER AS predicted_pairs, (SELECT count(*) FROM t)::INTEGER AS truth_pairs,
        (SELECT count(*) FROM p JOIN t USING (x, y))::INTEGER AS true_pairs`);
    figures = { ...r!, precision: r!.true_pairs / r!.predicted_pairs, recall: r!.true_pairs / r!.truth_pairs, build_seconds: build.seconds };
    console.log(JSON.stringify({ clusters: build.clusters, wallets: build.wallets, ...figures }));
  }, 600_000);
  afterAll(async () => v?.cleanup());

  it('recovers the planted clusters: pairwise precision >= 0.9 and recall >= 0.8', () => {
    expect(figures.truth_pairs).toBeGreaterThan(500);
    expect(figures.precision).toBeGreaterThanOrEqual(0.9);
    expect(figures.recall).toBeGreaterThanOrEqual(0.8);
  });
});
