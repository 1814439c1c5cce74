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
 * Wallet pairs (a < b) trading in lockstep as of T: columns a, b, co_fills (the smaller of the two wallets' counts
 * of coinciding moments), n_a, n_b (each wallet's distinct (token, side, second) moments outside crowded cells)
 * and share (co_fills / least(n_a, n_b)). Ordered by a, b.
 */
export function lockstepPairsSql(asOf: AsOf, rules: ClusterRules = CLUSTER_RULES, legs = 'fill_legs'): string {
  checkRules(rules);
  const T = tsLiteral(asOf);
  const W = rules.windowS;
  // Keys packed into integers so joins and distinct counts hash one column: a token side is
  // tok = (market_id * 2 + outcome_index) * 2 + buy (market ids are dense, < 2^29); a moment is tok << 32 | second,
  // a cell is tok << 32 | bucket (seconds since the epoch and buckets stay below 2^32), so the next bucket's
  // cell is cell + 1. fill_legs is read twice (wallet eligibility, then moments) rather than materialized.
  return `WITH eligible AS (
      SELECT wallet_id FROM ${legs} WHERE ts <= ${T} GROUP BY wallet_id
      HAVING count(*) >= ${rules.minCoFills} AND avg((role = 'maker')::INTEGER) <= ${rules.maxMakerShare}),
    all_moments AS MATERIALIZED (
      SELECT DISTINCT wallet_id,
        ((market_id::BIGINT * 2 + outcome_index) * 2 + (side = 'BUY')::INTEGER) * 4294967296 + epoch(ts)::BIGINT AS k
      FROM ${legs} SEMI JOIN eligible USING (wallet_id) WHERE ts <= ${T}),
    cells AS (SELECT wallet_id, k, k // 4294967296 * 4294967296 + k % 4294967296 // ${W} AS cell FROM all_moments),
    crowded AS (SELECT cell FROM cells GROUP BY cell HAVING count(*) > ${rules.maxCrowd}),
    moments AS MATERIALIZED (SELECT * FROM cells ANTI JOIN crowded USING (cell)),
    counts AS (SELECT wallet_id, count(*) AS n FROM moments GROUP BY wallet_id),
    matches AS (
      -- same cell: each unordered pair of moments once (x.wallet < y.wallet); always within W - 1 seconds
      SELECT x.wallet_id AS a, y.wallet_id AS b, x.k AS ka, y.k AS kb
      FROM moments x JOIN moments y ON x.cell = y.cell AND x.wallet_id < y.wallet_id
      UNION ALL
      -- next cell: x earlier, y later, at most W seconds apart
      SELECT least(x.wallet_id, y.wallet_id), greatest(x.wallet_id, y.wallet_id),
        CASE WHEN x.wallet_id < y.wallet_id THEN x.k ELSE y.k END, CASE WHEN x.wallet_id < y.wallet_id THEN y.k ELSE x.k END
      FROM moments x JOIN moments y ON y.cell = x.cell + 1 AND y.k - x.k <= ${W} AND x.wallet_id <> y.wallet_id),
    pairs AS (
      SELECT a, b, least(count(DISTINCT ka), count(DISTINCT kb)) AS co_fills FROM matches GROUP BY a, b
      HAVING least(count(DISTINCT ka), count(DISTINCT kb)) >= ${rules.minCoFills})
    SELECT p.a, p.b, p.co_fills::INTEGER AS co_fills, ca.n::INTEGER AS n_a, cb.n::INTEGER AS n_b,
      p.co_fills / least(ca.n, cb.n) AS share
    FROM pairs p JOIN counts ca ON ca.wallet_id = p.a JOIN counts cb ON cb.wallet_id = p.b
    WHERE p.co_fills >= ${rules.minShare} * least(ca.n, cb.n)
    ORDER BY p.a, p.b`;
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
}

/** Detect lockstep clusters as of T and (re)write a_clusters, ordered by wallet_id. */
/** The fill legs (wallet, token, time, role, side) the lockstep pairs read, from the engine's a_legs. */
export const A_LEGS_FILLS = `(SELECT wallet_id, market_id, outcome_index, ts, CASE kind WHEN 2 THEN 'maker' ELSE 'taker' END AS role,
    CASE WHEN q > 0 THEN 'BUY' ELSE 'SELL' END AS side FROM a_legs WHERE kind IN (1, 2))`;

export async function buildClusters(db: QueryRunner, asOf: AsOf, rules: ClusterRules = CLUSTER_RULES, legs = 'fill_legs'): Promise<ClusterBuildReport> {
  const t0 = performance.now();
  const pairs = await db.all<{ a: number; b: number }>(`SELECT a, b FROM (${lockstepPairsSql(asOf, rules, legs)})`);
  const edges = pairs.map((p) => ({ a: Number(p.a), b: Number(p.b) }));
  const comp = clusterComponents(edges);
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
  return { clusters: sizes.size, wallets: rows.length, pairs: edges.length, seconds: Number(((performance.now() - t0) / 1000).toFixed(2)) };
}
