/**
 * Wallet clusters ("sybil" / lockstep clusters): groups of wallets run by one controller that trade in lockstep —
 * the same token, the same side, within seconds of each other, fill after fill. Detection is two steps:
 *
 * 1. Pairs (SQL, `lockstepPairsSql`): two wallets are linked when many of their fills coincide — same market,
 *    outcome and side within `windowS` seconds — and those coincidences cover most of the smaller wallet's fills.
 *    Timestamps are cut into `windowS`-second buckets and legs are joined on (market, outcome, side, bucket) with
 *    the same or the next bucket, so the join only ever pairs legs that are close in time (no unbounded self-join).
 *    Market-maker-like wallets (mostly maker legs) are left out: they are the counterparty of everyone. A cell
 *    (token, side, bucket) holding more than `maxCrowd` moments is a crowd (a news spike, a close), not evidence of
 *    a common controller: its moments are dropped, which also caps the join's output at maxCrowd pairs per moment.
 * 2. Components (TS, `clusterComponents`): the linked pairs are edges of a graph; each connected component is a
 *    cluster, named by its smallest wallet id.
 *
 * `buildClusters` writes the result to `a_clusters(wallet_id, cluster_id, cluster_size)` (clustered wallets only).
 *
 * Thresholds (`CLUSTER_RULES`) and why:
 * - windowS = 60: a lockstep member's fill lands within ~15 s of the controller's schedule; a position's later
 *   fills (exit) accumulate up to three jitters (~45 s apart between two members). 60 s covers them; unrelated
 *   wallets rarely trade the same token on the same side within a minute dozens of times.
 * - minCoFills = 10: a pair needs at least 10 coinciding fills (on each side), so a handful of chance
 *   coincidences on a busy token never links two wallets.
 * - minShare = 0.5: the coinciding fills must be at least half of the smaller wallet's fills (counted as distinct
 *   (token, side, second) moments). Lockstep members match on ~all of them; a copy-trader following a leader with
 *   minutes of delay, or two busy wallets crossing paths, match on a few percent.
 * - maxMakerShare = 0.5: wallets with more than half of their legs as maker are market-maker-like and excluded.
 * - maxCrowd = 20: a lockstep cluster (3-8 wallets on the venue) fits well inside a cell of 20; bigger crowds
 *   carry no signal and would make the join quadratic in the crowd (the synthetic venue has cells of ~2,400
 *   wallets buying in one second of the venue's last minute).
 */
import { tsLiteral, type AsOf, type QueryRunner } from './query.ts';

export interface ClusterRules {
  windowS: number;
  minCoFills: number;
  minShare: number;
  maxMakerShare: number;
  maxCrowd: number;
}

export const CLUSTER_RULES: Readonly<ClusterRules> = {
  /** Two fills coincide when on the same token and side and at most this many seconds apart. */
  windowS: 60,
  /** Minimum coinciding fills of a pair (distinct moments of each wallet). */
  minCoFills: 10,
  /** Minimum share of the smaller wallet's fills (distinct moments) that coincide with the other's. */
  minShare: 0.5,
  /** Wallets whose share of maker legs exceeds this are market-maker-like and never clustered. */
  maxMakerShare: 0.5,
  /** A (token, side, window bucket) cell holding more distinct moments than this is a crowd, not a coincidence: ignored. */
  maxCrowd: 20,
};

export interface LockstepPair {
  a: number;
  b: number;
  co_fills: number;
  n_a: number;
  n_b: number;
  share: number;
}

function checkRules(r: ClusterRules): void {
  if (!Number.isInteger(r.windowS) || r.windowS < 1) throw new Error('windowS must be a positive integer');
  if (!Number.isInteger(r.minCoFills) || r.minCoFills < 1) throw new Error('minCoFills must be a positive integer');
  if (!(r.minShare >= 0 && r.minShare <= 1)) throw new Error('minShare must be in [0, 1]');
  if (!(r.maxMakerShare >= 0 && r.maxMakerShare <= 1)) throw new Error('maxMakerShare must be in [0, 1]');
  if (!Number.isInteger(r.maxCrowd) || r.maxCrowd < 2) throw new Error('maxCrowd must be an integer >= 2');
}

/**
 * A fill-legs relation as the lockstep rule reads it: where it is, which rows are fill legs, and how a leg's role and
 * side are spelled (fill_legs: strings; a_legs: kind and the sign of q). `seq` (the venue row's arrival seq) is
 * needed only by the incremental refresh.
 */
export interface LegSource {
  from: string;
  where: string;
  isMaker: string;
  isBuy: string;
}

/** The venue's fill_legs view. */
export const FILL_LEGS: LegSource = { from: 'fill_legs', where: 'true', isMaker: `role = 'maker'`, isBuy: `side = 'BUY'` };
/** The engine's a_legs (core/analytics/legs.ts): kind 1 taker, 2 maker; q > 0 a buy. */
export const A_LEGS: LegSource = { from: 'a_legs', where: 'kind IN (1, 2)', isMaker: 'kind = 2', isBuy: 'q > 0' };

const TWO32 = 4294967296;

// Keys packed into integers so joins and distinct counts hash one column: a token side is
// tok = (market_id * 2 + outcome_index) * 2 + buy (market ids are dense, < 2^29); a moment is tok << 32 | second,
// a cell is tok << 32 | bucket (seconds since the epoch and buckets stay below 2^32), so the next bucket's
// cell is cell + 1 (same token side).
function momentKey(l: LegSource): string {
  return `((market_id::BIGINT * 2 + outcome_index) * 2 + (${l.isBuy})::INTEGER) * ${TWO32} + epoch(ts)::BIGINT`;
}
function cellOf(k: string, r: ClusterRules): string {
  return `${k} // ${TWO32} * ${TWO32} + ${k} % ${TWO32} // ${r.windowS}`;
}
/** A wallet's eligibility from its fill-leg count and maker-leg count (the same expression on every path). */
function eligibleExpr(legs: string, makers: string, r: ClusterRules): string {
  return `(${legs} >= ${r.minCoFills} AND ${makers}::DOUBLE / ${legs} <= ${r.maxMakerShare})`;
}

/**
 * SQL (a SELECT) of the lockstep pairs among `moments(wallet_id, k, cell)` (eligible wallets' moments outside
 * crowded cells), with each wallet's moment count from `counts(wallet_id, n)`; `scope` (a condition on a, b) keeps
 * only some pairs — exact for them as long as `moments` holds every moment of theirs that could match.
 */
function pairsFromMomentsSql(moments: string, counts: string, r: ClusterRules, scope = 'true'): string {
  const W = r.windowS;
  return `WITH matches AS (
      -- same cell: each unordered pair of moments once (x.wallet < y.wallet); always within W - 1 seconds
      SELECT x.wallet_id AS a, y.wallet_id AS b, x.k AS ka, y.k AS kb
      FROM ${moments} x JOIN ${moments} y ON x.cell = y.cell AND x.wallet_id < y.wallet_id
      UNION ALL
      -- next cell: x earlier, y later, at most W seconds apart
      SELECT least(x.wallet_id, y.wallet_id), greatest(x.wallet_id, y.wallet_id),
        CASE WHEN x.wallet_id < y.wallet_id THEN x.k ELSE y.k END, CASE WHEN x.wallet_id < y.wallet_id THEN y.k ELSE x.k END
      FROM ${moments} x JOIN ${moments} y ON y.cell = x.cell + 1 AND y.k - x.k <= ${W} AND x.wallet_id <> y.wallet_id),
    pairs AS (
      SELECT a, b, least(count(DISTINCT ka), count(DISTINCT kb)) AS co_fills FROM matches WHERE ${scope} GROUP BY a, b
      HAVING least(count(DISTINCT ka), count(DISTINCT kb)) >= ${r.minCoFills})
    SELECT p.a, p.b, p.co_fills::INTEGER AS co_fills, ca.n::INTEGER AS n_a, cb.n::INTEGER AS n_b,
      p.co_fills / least(ca.n, cb.n) AS share
    FROM pairs p JOIN ${counts} ca ON ca.wallet_id = p.a JOIN ${counts} cb ON cb.wallet_id = p.b
    WHERE p.co_fills >= ${r.minShare} * least(ca.n, cb.n)
    ORDER BY p.a, p.b`;
}

/**
 * Wallet pairs (a < b) trading in lockstep as of T: columns a, b, co_fills (the smaller of the two wallets' counts
 * of coinciding moments), n_a, n_b (each wallet's distinct (token, side, second) moments outside crowded cells)
 * and share (co_fills / least(n_a, n_b)). Ordered by a, b. One statement: the readable reference of the rule (the
 * build and the refresh run it in stages that keep their state, `buildClusters` / `refreshClusters`).
 */
export function lockstepPairsSql(asOf: AsOf, rules: ClusterRules = CLUSTER_RULES, legs: LegSource | string = FILL_LEGS): string {
  checkRules(rules);
  const l = typeof legs === 'string' ? { ...FILL_LEGS, from: legs } : legs;
  const T = tsLiteral(asOf);
  const k = momentKey(l);
  return `WITH eligible AS (
      SELECT wallet_id FROM ${l.from} WHERE ${l.where} AND ts <= ${T} GROUP BY wallet_id
      HAVING ${eligibleExpr('count(*)', `count(*) FILTER (WHERE ${l.isMaker})`, rules)}),
    all_moments AS MATERIALIZED (
      SELECT DISTINCT wallet_id, ${k} AS k FROM ${l.from} SEMI JOIN eligible USING (wallet_id) WHERE ${l.where} AND ts <= ${T}),
    cells AS (SELECT wallet_id, k, ${cellOf('k', rules)} AS cell FROM all_moments),
    crowded AS (SELECT cell FROM cells GROUP BY cell HAVING count(*) > ${rules.maxCrowd}),
    moments AS MATERIALIZED (SELECT * FROM cells ANTI JOIN crowded USING (cell)),
    counts AS (SELECT wallet_id, count(*) AS n FROM moments GROUP BY wallet_id)
    SELECT * FROM (${pairsFromMomentsSql('moments', 'counts', rules)})`;
}

/**
 * Connected components of an undirected graph given by its edges (union-find with path halving and union by
 * size). Returns wallet -> cluster id for every wallet on an edge; the cluster id is the smallest wallet id of the
 * component, so the result does not depend on the order of the edges.
 */
export function clusterComponents(edges: readonly { a: number; b: number }[]): Map<number, number> {
  const parent = new Map<number, number>();
  const size = new Map<number, number>();
  const find = (x: number): number => {
    let r = x;
    for (;;) {
      const p = parent.get(r)!;
      if (p === r) return r;
      const gp = parent.get(p)!;
      parent.set(r, gp); // path halving
      r = gp;
    }
  };
  const add = (x: number) => {
    if (!parent.has(x)) {
      parent.set(x, x);
      size.set(x, 1);
    }
  };
  for (const { a, b } of edges) {
    add(a);
    add(b);
    let ra = find(a);
    let rb = find(b);
    if (ra === rb) continue;
    if (size.get(ra)! < size.get(rb)!) [ra, rb] = [rb, ra];
    parent.set(rb, ra);
    size.set(ra, size.get(ra)! + size.get(rb)!);
  }
  const smallest = new Map<number, number>();
  for (const x of parent.keys()) {
    const r = find(x);
    const s = smallest.get(r);
    if (s === undefined || x < s) smallest.set(r, x);
  }
  const out = new Map<number, number>();
  for (const x of [...parent.keys()].sort((p, q) => p - q)) out.set(x, smallest.get(find(x))!);
  return out;
}

export const CLUSTERS_TABLE_DDL = `CREATE OR REPLACE TABLE a_clusters (wallet_id INTEGER, cluster_id INTEGER, cluster_size INTEGER)`;

/** Rows per INSERT statement when writing a_clusters. */
const INSERT_BATCH = 1000;

export interface ClusterBuildReport {
  clusters: number;
  wallets: number;
  pairs: number;
  seconds: number;
  /** refresh only: wallets whose pairs were recomputed (0 after a full build) */
  rechecked_wallets?: number;
  /** refresh only: wallets whose eligibility flipped (their whole history's cells are touched) */
  flipped_wallets?: number;
}

/**
 * The state a build keeps so a refresh can follow the change instead of starting over:
 * - a_cluster_wallets: every wallet with a fill leg as of T, its fill-leg and maker-leg counts (eligibility) and n,
 *   its moments outside crowded cells (0 when not eligible);
 * - a_cluster_moments: every moment (wallet_id, k, cell) of every eligible wallet, crowded or not: the refresh reads
 *   moments by cell and by wallet here, a fraction of the fill legs' columns (market makers are never eligible);
 * - a_cluster_crowded: the crowded cells;
 * - a_cluster_pairs: the lockstep pairs (the graph's edges).
 */
const CLUSTER_STATE = ['a_cluster_wallets', 'a_cluster_moments', 'a_cluster_crowded', 'a_cluster_pairs'] as const;

/** Every distinct moment of the wallets `wallets` (a relation of wallet_id) among the fill legs `visible` selects (SQL). */
function momentsOfSql(wallets: string, visible: string, rules: ClusterRules, legs: LegSource): string {
  return `SELECT wallet_id, k, ${cellOf('k', rules)} AS cell FROM (
      SELECT DISTINCT wallet_id, ${momentKey(legs)} AS k FROM ${legs.from} SEMI JOIN ${wallets} USING (wallet_id) WHERE ${visible})`;
}

/** a_cluster_moments from a_cluster_wallets (a build's, or a migrated state's: `T` is then SQL reading its as-of). */
export function clusterMomentsSql(T: string, rules: ClusterRules = CLUSTER_RULES, legs: LegSource = A_LEGS): string {
  return `CREATE OR REPLACE TABLE a_cluster_moments AS ${momentsOfSql(`(SELECT wallet_id FROM a_cluster_wallets WHERE ${eligibleExpr('legs', 'makers', rules)})`, `${legs.where} AND ts <= ${T}`, rules, legs)}`;
}

/**
 * The moments of a_cluster_moments outside crowded cells (a subquery): those a wallet's n counts and pairs match;
 * `where` narrows the moments before the anti join (a filter above it was applied after the join over all 95M
 * moments at full scale: 0.9–1.3 s a statement, against 0.5–0.9 s filtered first).
 */
const freeMoments = (where = 'true') => `(SELECT * FROM (SELECT * FROM a_cluster_moments WHERE ${where}) ANTI JOIN a_cluster_crowded USING (cell))`;

/** Write a_clusters from the components of a_cluster_pairs (ordered by wallet_id). */
async function writeClusters(db: QueryRunner): Promise<{ clusters: number; wallets: number; pairs: number }> {
  const pairs = await db.all<{ a: number; b: number }>(`SELECT a, b FROM a_cluster_pairs ORDER BY a, b`);
  const comp = clusterComponents(pairs.map((p) => ({ a: Number(p.a), b: Number(p.b) })));
  const sizes = new Map<number, number>();
  for (const c of comp.values()) sizes.set(c, (sizes.get(c) ?? 0) + 1);
  await db.run(CLUSTERS_TABLE_DDL);
  const rows = [...comp.entries()]; // already ordered by wallet_id
  for (let i = 0; i < rows.length; i += INSERT_BATCH) {
    const values = rows
      .slice(i, i + INSERT_BATCH)
      .map(([w, c]) => `(${w}, ${c}, ${sizes.get(c)!})`)
      .join(', ');
    await db.run(`INSERT INTO a_clusters VALUES ${values}`);
  }
  return { clusters: sizes.size, wallets: rows.length, pairs: pairs.length };
}

const secondsSince = (t0: number) => Number(((performance.now() - t0) / 1000).toFixed(2));

/**
 * Detect lockstep clusters as of T from scratch: (re)write the cluster state (above) and a_clusters. The stages are
 * lockstepPairsSql's, materialized.
 */
export async function buildClusters(db: QueryRunner, asOf: AsOf, rules: ClusterRules = CLUSTER_RULES, legs: LegSource = FILL_LEGS): Promise<ClusterBuildReport> {
  checkRules(rules);
  const t0 = performance.now();
  const T = tsLiteral(asOf);
  await db.run(`CREATE OR REPLACE TABLE a_cluster_wallets AS
    SELECT wallet_id, count(*)::BIGINT AS legs, count(*) FILTER (WHERE ${legs.isMaker})::BIGINT AS makers, 0::BIGINT AS n
    FROM ${legs.from} WHERE ${legs.where} AND ts <= ${T} GROUP BY wallet_id`);
  await db.run(clusterMomentsSql(T, rules, legs));
  await db.run(`CREATE OR REPLACE TABLE a_cluster_crowded AS SELECT cell FROM a_cluster_moments GROUP BY cell HAVING count(*) > ${rules.maxCrowd} ORDER BY cell`);
  await db.run(`UPDATE a_cluster_wallets w SET n = c.n FROM (SELECT wallet_id, count(*) AS n FROM ${freeMoments()} GROUP BY wallet_id) c WHERE w.wallet_id = c.wallet_id`);
  await db.run(`CREATE OR REPLACE TABLE a_cluster_pairs AS SELECT a, b FROM (${pairsFromMomentsSql(freeMoments(), 'a_cluster_wallets', rules)})`);
  return { ...(await writeClusters(db)), seconds: secondsSince(t0), rechecked_wallets: 0 };
}

/** Where a refresh starts and ends: the venue clock T and the last arrival batch seen (seq watermark). */
export interface ClusterMark {
  asOf: AsOf;
  watermark: number;
}

/**
 * Bring the cluster state from `from` to `to` and rewrite a_clusters: the same result as buildClusters as of
 * to.asOf over the legs with seq <= to.watermark, recomputing only the pairs that can have changed.
 *
 * Why it is exact: a wallet's moments change only if it has a new visible fill leg (set C: arrived in
 * (W_old, W_new], or stamped in (T_old, T_new]); its eligibility can change only then. A cell's crowd status changes
 * only if its moments change: the cells of C's new moments, and every cell of a wallet whose eligibility flipped
 * (the touched cells). Every wallet outside A = C ∪ {wallets with a moment in a touched cell whose crowd status
 * flipped} keeps its moments and its n; a pair of two such wallets keeps its matches, so it is unchanged. A pair
 * with a wallet in A is recomputed from every moment of A's wallets plus every moment in their cells and the
 * neighbouring cells (all a match can touch), with the partners' n from the state.
 * Requires the state a build wrote (falls back to buildClusters when it is missing).
 */
export async function refreshClusters(db: QueryRunner, from: ClusterMark, to: ClusterMark, rules: ClusterRules = CLUSTER_RULES, legs: LegSource = A_LEGS): Promise<ClusterBuildReport> {
  checkRules(rules);
  const t0 = performance.now();
  const have = await db.all<{ n: number }>(
    `SELECT count(*)::INTEGER AS n FROM duckdb_tables() WHERE NOT temporary AND table_name IN (${CLUSTER_STATE.map((t) => `'${t}'`).join(', ')})`,
  );
  if (Number(have[0]?.n ?? 0) < CLUSTER_STATE.length) return buildClusters(db, to.asOf, rules, legs);
  const Told = tsLiteral(from.asOf);
  const Tnew = tsLiteral(to.asOf);
  const k = momentKey(legs);
  const visible = `${legs.where} AND ts <= ${Tnew} AND seq <= ${to.watermark}`;
  const eligible = eligibleExpr('legs', 'makers', rules);
  const count = async (sql: string) => Number((await db.all<{ n: number }>(`SELECT count(*)::INTEGER AS n FROM (${sql})`))[0]?.n ?? 0);

  // C: wallets with a new visible fill leg, and those legs' moments
  // (two disjoint reads: the arrivals are a seq range, which zone maps find; then the older rows stamped after T_old)
  const newLegs = (cond: string) => `SELECT wallet_id, (${legs.isMaker})::INTEGER AS maker, ${k} AS k FROM ${legs.from} WHERE ${visible} AND ${cond}`;
  await db.run(`CREATE OR REPLACE TEMP TABLE cl_new AS ${newLegs(`seq > ${from.watermark} AND seq <= ${to.watermark}`)}`);
  await db.run(`INSERT INTO cl_new ${newLegs(`seq <= ${from.watermark} AND ts > ${Told}`)}`);
  await db.run(`CREATE OR REPLACE TEMP TABLE cl_c AS
    SELECT d.wallet_id, coalesce(w.legs, 0) + d.legs AS legs, coalesce(w.makers, 0) + d.makers AS makers,
      coalesce(${eligibleExpr('w.legs', 'w.makers', rules)}, false) AS was
    FROM (SELECT wallet_id, count(*) AS legs, sum(maker) AS makers FROM cl_new GROUP BY wallet_id) d LEFT JOIN a_cluster_wallets w USING (wallet_id)`);
  await db.run(`DELETE FROM a_cluster_wallets WHERE wallet_id IN (SELECT wallet_id FROM cl_c)`);
  await db.run(`INSERT INTO a_cluster_wallets SELECT wallet_id, legs, makers, 0 FROM cl_c`);

  // the moments follow eligibility: a wallet that became eligible brings every moment of its history, one that no longer
  // is takes its moments away, one that stays eligible adds its new moments not already there
  await db.run(`CREATE OR REPLACE TEMP TABLE cl_flip AS SELECT wallet_id, ${eligible} AS now FROM cl_c WHERE was <> ${eligible}`);
  const flips = await count('SELECT * FROM cl_flip');
  const flippedTo = (now: boolean) => `(SELECT wallet_id FROM cl_flip WHERE ${now ? '' : 'NOT '}now)`;
  await db.run(`CREATE OR REPLACE TEMP TABLE cl_gained_m AS ${flips ? momentsOfSql(flippedTo(true), visible, rules, legs) : `SELECT * FROM a_cluster_moments LIMIT 0`}`);
  // the touched cells: those of the new moments, and every cell of a wallet whose eligibility flipped (its moments
  // in the state and its new ones, or its whole history when it became eligible)
  await db.run(`CREATE OR REPLACE TEMP TABLE cl_touched AS SELECT DISTINCT ${cellOf('k', rules)} AS cell FROM cl_new
    UNION SELECT cell FROM cl_gained_m
    ${flips ? `UNION SELECT cell FROM a_cluster_moments WHERE wallet_id IN ${flippedTo(false)}` : ''}`);
  if (flips) await db.run(`DELETE FROM a_cluster_moments WHERE wallet_id IN ${flippedTo(false)}`);
  await db.run(`INSERT INTO a_cluster_moments SELECT * FROM cl_gained_m`);
  // every moment in the touched cells (of the eligible wallets: those a_cluster_moments holds). A new moment of a
  // wallet that stays eligible is in a touched cell, and so is the same moment when the state holds it already: the
  // new ones are told apart here, not by a scan of every moment
  await db.run(`CREATE OR REPLACE TEMP TABLE cl_touched_m AS SELECT * FROM a_cluster_moments WHERE cell IN (SELECT cell FROM cl_touched)`);
  await db.run(`CREATE OR REPLACE TEMP TABLE cl_added_m AS SELECT n.* FROM (
      SELECT DISTINCT wallet_id, k, ${cellOf('k', rules)} AS cell FROM cl_new WHERE wallet_id IN (SELECT wallet_id FROM cl_c WHERE was AND ${eligible})) n
    ANTI JOIN cl_touched_m m ON m.wallet_id = n.wallet_id AND m.k = n.k`);
  await db.run(`INSERT INTO a_cluster_moments SELECT * FROM cl_added_m`);
  await db.run(`INSERT INTO cl_touched_m SELECT * FROM cl_added_m`);
  // crowd status now vs in the state; the state follows
  await db.run(`CREATE OR REPLACE TEMP TABLE cl_status AS
    SELECT t.cell, coalesce(m.n, 0) > ${rules.maxCrowd} AS crowded, t.cell IN (SELECT cell FROM a_cluster_crowded) AS was
    FROM cl_touched t LEFT JOIN (SELECT cell, count(*) AS n FROM cl_touched_m GROUP BY cell) m USING (cell)`);
  await db.run(`DELETE FROM a_cluster_crowded WHERE cell IN (SELECT cell FROM cl_touched)`);
  await db.run(`INSERT INTO a_cluster_crowded SELECT cell FROM cl_status WHERE crowded`);

  // A, and every moment of theirs outside crowded cells: their n
  await db.run(`CREATE OR REPLACE TEMP TABLE cl_a AS SELECT wallet_id FROM cl_c
    UNION SELECT DISTINCT wallet_id FROM cl_touched_m WHERE cell IN (SELECT cell FROM cl_status WHERE crowded <> was)`);
  await db.run(`CREATE OR REPLACE TEMP TABLE cl_a_m AS SELECT * FROM ${freeMoments('wallet_id IN (SELECT wallet_id FROM cl_a)')}`);
  await db.run(`UPDATE a_cluster_wallets SET n = 0 WHERE wallet_id IN (SELECT wallet_id FROM cl_a)`);
  await db.run(`UPDATE a_cluster_wallets w SET n = c.n FROM (SELECT wallet_id, count(*) AS n FROM cl_a_m GROUP BY wallet_id) c WHERE w.wallet_id = c.wallet_id`);
  // every moment a match with A can touch: A's cells and their neighbours
  await db.run(`CREATE OR REPLACE TEMP TABLE cl_near AS SELECT DISTINCT cell + d AS cell FROM cl_a_m, (VALUES (-1), (0), (1)) v(d)`);
  await db.run(`CREATE OR REPLACE TEMP TABLE cl_near_m AS SELECT * FROM ${freeMoments('cell IN (SELECT cell FROM cl_near)')}`);
  // A's pairs again
  const inA = (c: string) => `${c} IN (SELECT wallet_id FROM cl_a)`;
  await db.run(`DELETE FROM a_cluster_pairs WHERE ${inA('a')} OR ${inA('b')}`);
  await db.run(`INSERT INTO a_cluster_pairs SELECT a, b FROM (${pairsFromMomentsSql('cl_near_m', 'a_cluster_wallets', rules, `${inA('a')} OR ${inA('b')}`)})`);
  const rechecked = await count('SELECT * FROM cl_a');
  for (const t of ['cl_new', 'cl_c', 'cl_flip', 'cl_gained_m', 'cl_touched', 'cl_touched_m', 'cl_added_m', 'cl_status', 'cl_a', 'cl_a_m', 'cl_near', 'cl_near_m']) await db.run(`DROP TABLE IF EXISTS ${t}`);
  return { ...(await writeClusters(db)), seconds: secondsSince(t0), rechecked_wallets: rechecked, flipped_wallets: flips };
}
