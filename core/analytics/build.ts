/**
 * The full analytics build as of T: legs in stream order, one pass of the position stream over every position,
 * then the per-wallet tables, the cohort-wide step and the rankings. A refresh (refresh.ts) runs the same steps on
 * the positions and wallets that changed; both go through the statements of the metric-family modules, so a refresh
 * and a rebuild agree.
 *
 * Order and tables:
 *  legs          a_legs (legs.ts)                     — every leg, sorted for the stream
 *  marks         a_marks                              — latest mid per token at T (MidIndex)
 *  stream        a_positions, a_holds, a_risk_daily, a_risk_pos (position-stream.ts, positions.ts, risk.ts)
 *  wallets       a_features, a_alpha, a_pnl, a_calibration, a_style, a_category, a_best_category (wallets.ts)
 *  risk          a_risk (risk.ts statistics over the window's rows)
 *  metrics       a_wallet_metrics, a_wallet_pctiles (cohort.ts: tags, percentiles)
 *  rankings      a_clusters, a_rank_base, a_board, a_board_meta (clusters.ts, rankings.ts)
 *  meta          a_meta (as_of, built_at, version, watermark)
 */
import { A_LEGS, CLUSTER_RULES, buildClusters, clusterMomentsSql } from '../clusters.ts';
import { BOARD_RANK_COLUMNS, BOARD_TOP_RANKS, BOARD_VIEW_SQL, boardTopSql, writeRankBase } from '../rankings.ts';
import { scoreBoards, type BoardScoring, type OrdersOf } from '../ranking-boards.ts';
import type { RankingEngine } from '../ranking-engine.ts';
import type { PresetHeads } from '../preset-rankings.ts';
import { sharpCutoff } from '../tags.ts';
import { dropRelation, tsLiteral, type AsOf, type ColumnarRunner, type RowWriter, type TableColumns, type ScanBatch, type SideRunner } from '../query.ts';
import { RANKED_DEVIATES_SQL, WALLET_PCTILE_COLUMNS, writeCohortSql } from './cohort.ts';
import { LEGS_DDL, LEGS_ORDER, LEGS_TABLE, createHorizonFillsSql, createLegsSql, legWalletsSql, rangedLegsSql } from './legs.ts';
import { MidIndex, tokenOf } from './mid-index.ts';
import { HOLDS_COLUMNS, HOLDS_DDL, MARKS_DDL, POSITIONS_VIEW_DDL, POSITION_STATE_COLUMNS, POSITION_STATE_DDL, RESUME_COLUMNS } from './positions.ts';
import { DAY_US, PositionStream, type LegBatch, type MarketFacts, type PositionOut, type StreamSinks } from './position-stream.ts';
import { RISK_DAILY_COLUMNS, RISK_DAILY_DDL, RISK_POSITIONS_COLUMNS, RISK_POSITIONS_DDL, RISK_WINDOW_DAYS, keepRiskDay, riskStatsSql } from './risk.ts';
import { FILL_BAND_DDL, addBandsSql, type FillBandRules } from './median-fill.ts';
import { alphaSql, calibrationSql, categorySql, featuresSql, medianFillSql, pnlSql, scopeSql, styleSql, visibleFillSizes, type WalletScope } from './wallets.ts';

/**
 * Bumped when the shape of the a_* tables changes: a state of an older schema is migrated when ENGINE_MIGRATIONS has
 * the steps from it, otherwise rebuilt.
 */
export const ENGINE_SCHEMA = 7;

/**
 * Migrations of a persisted state, by the schema they start from (each ends one schema later). A migration is run by
 * the builder inside a transaction, so a state is either migrated or left as it was.
 * - 1 -> 2: the percentiles leave a_wallet_metrics (and the rank base) for a_wallet_pctiles; a_wallet_metrics gets its
 *   wallet index (a refresh replaces rows).
 * - 2 -> 3: a_horizon_fills (legs.ts), the fill legs whose alpha horizons are still ahead.
 * - 3 -> 4: a_position_state gets the stream's unrounded state (a refresh continues a position from it) and a row
 *   for each wallet that only redeemed a token; a_holds its episode numbers. The state columns stay NULL (and the
 *   position is restreamed, not continued, when it next changes): only a restream can give them.
 * - 4 -> 5: the boards store their ranks alone (a_board_rank, in the same order) and their first ranks whole
 *   (a_board_top; a_board_meta.top_rows); a_board becomes the view that adds the rank-base columns (core/rankings.ts
 *   BOARD_VIEW_SQL).
 * - 5 -> 6: the heavy wallets' bands of fill sizes around their median (median-fill.ts: a_fill_band, a_fill_band_wallets).
 * - 6 -> 7: every moment of every wallet the lockstep rule considers (clusters.ts: a_cluster_moments).
 */
export const ENGINE_MIGRATIONS: Record<number, readonly string[]> = {
  1: [
    `CREATE OR REPLACE TABLE a_wallet_pctiles AS SELECT wallet_id, ${WALLET_PCTILE_COLUMNS.join(', ')} FROM a_wallet_metrics ORDER BY wallet_id`,
    `CREATE OR REPLACE TABLE a_wallet_metrics AS SELECT * EXCLUDE (${WALLET_PCTILE_COLUMNS.join(', ')}) FROM a_wallet_metrics ORDER BY wallet_id`,
    `CREATE INDEX a_wallet_metrics_wallet ON a_wallet_metrics (wallet_id)`,
    `DROP INDEX IF EXISTS a_rank_base_wallet`,
    `CREATE OR REPLACE TABLE a_rank_base AS SELECT * EXCLUDE (${WALLET_PCTILE_COLUMNS.join(', ')}) FROM a_rank_base ORDER BY wallet_id`,
    `CREATE INDEX a_rank_base_wallet ON a_rank_base (wallet_id)`,
    `UPDATE a_meta SET engine_schema = 2`,
  ],
  2: [createHorizonFillsSql(`(SELECT as_of FROM a_meta LIMIT 1)`), `UPDATE a_meta SET engine_schema = 3`],
  3: [
    ...RESUME_COLUMNS.map(([name, type]) => `ALTER TABLE a_position_state ADD COLUMN ${name} ${type}`),
    `ALTER TABLE a_holds ADD COLUMN episode INTEGER`,
    // the redemption-only rows (first_ts NULL), so that a position without a row has no leg
    `INSERT INTO a_position_state (wallet_id, market_id, outcome_index, shares, cost_basis, trade_pnl, bought_shares, volume_usdc,
        trades, n_taker, n_buys, n_contra, redeemed_shares, a1_num, a1_den, a1_n, a24_num, a24_den, a24_n, ares_num, ares_den, ares_n)
      SELECT wallet_id, market_id, outcome_index, 0, 0, 0, 0, 0, 0, 0, 0, 0, sum(-q), 0, 0, 0, 0, 0, 0, 0, 0, 0
      FROM ${LEGS_TABLE} WHERE ts <= (SELECT as_of FROM a_meta LIMIT 1) GROUP BY ALL HAVING bool_and(kind = 3)`,
    `UPDATE a_meta SET engine_schema = 4`,
  ],
  4: [
    // a scan keeps the stored (preset, rank) order
    `CREATE OR REPLACE TABLE a_board_rank AS SELECT ${BOARD_RANK_COLUMNS.map(([n, t]) => `${n}::${t} AS ${n}`).join(', ')} FROM a_board`,
    boardTopSql(BOARD_TOP_RANKS),
    `ALTER TABLE a_board_meta ADD COLUMN top_rows BIGINT`,
    `UPDATE a_board_meta SET top_rows = least(total_rows, ${BOARD_TOP_RANKS})`,
    `DROP TABLE a_board`,
    BOARD_VIEW_SQL,
    `UPDATE a_meta SET engine_schema = 5`,
  ],
  5: [...FILL_BAND_DDL, ...addBandsSql(visibleFillSizes('true', `(SELECT as_of FROM a_meta LIMIT 1)`)), `UPDATE a_meta SET engine_schema = 6`],
  6: [clusterMomentsSql(`(SELECT as_of FROM a_meta LIMIT 1)`), `UPDATE a_meta SET engine_schema = 7`],
};

/** The statements that migrate a state of engine schema `from` to ENGINE_SCHEMA ([] when current), or null when none can. */
export function migrationSteps(from: number): string[] | null {
  const steps: string[] = [];
  for (let s = from; s < ENGINE_SCHEMA; s++) {
    const m = ENGINE_MIGRATIONS[s];
    if (!m) return null;
    steps.push(...m);
  }
  return from > ENGINE_SCHEMA ? null : steps;
}

/** The newest arrival batch of the venue tables (what a state built now has seen). */
export async function venueWatermark(db: ColumnarRunner): Promise<number> {
  const [r] = await db.all<{ w: number }>(
    `SELECT greatest((SELECT coalesce(max(seq), 0) FROM fills), (SELECT coalesce(max(seq), 0) FROM inventory_events),
       (SELECT coalesce(max(seq), 0) FROM resolutions), (SELECT coalesce(max(seq), 0) FROM mids)) AS w`,
  );
  return Number(r?.w ?? 0);
}

const sqlDouble = (x: number) => (Number.isFinite(x) ? `'${x}'::DOUBLE` : 'NULL::DOUBLE');

/** a_meta: what the state is as of (T, the last arrival batch seen), its version, and the cohort's sharp cutoff. */
export async function writeMeta(db: ColumnarRunner, asOf: AsOf, watermark: number, sharpMinDeviate: number | null, version: number): Promise<void> {
  await db.run(`CREATE OR REPLACE TABLE a_meta AS SELECT ${tsLiteral(asOf)} AS as_of, now() AS built_at, NULL::DOUBLE AS build_seconds,
    ${sqlDouble(sharpMinDeviate ?? Number.NaN)} AS sharp_min_deviate, 0::INTEGER AS ranked_wallets, ${watermark}::BIGINT AS watermark,
    ${version}::BIGINT AS version, NULL::DOUBLE AS refresh_seconds, ${ENGINE_SCHEMA}::INTEGER AS engine_schema`);
}

export interface BuildReport {
  /** the ranking engine the boards were scored with (the rank base of this state): custom rankings can use it */
  ranker?: RankingEngine;
  /** every preset board's head as a page shows it, read by the builder before its commit (jobs/analytics/engine.ts) */
  heads?: PresetHeads;
  as_of: string;
  seconds: Record<string, number>;
  total_seconds: number;
  wallets: number;
  positions: number;
}

export interface FullBuildOptions {
  /** the mids already in memory (a live engine keeps them); default: read them */
  mids?: MidIndex;
  /** a_legs exists and holds every leg in stream order (physically sorted): skip its rebuild */
  legsReady?: boolean;
  /** legs per range of wallets when a_legs is sorted a range at a time (default LEG_RANGE_LEGS) */
  legRangeLegs?: number;
  /** legs per range of wallets in the per-wallet step (default LEG_RANGE_LEGS) */
  walletRangeLegs?: number;
  /** the newest arrival batch to build from (default: the venue's newest now) */
  watermark?: number;
  /** run the ranking steps (clusters, rank base, boards); default true */
  rankings?: boolean;
  riskDays?: number;
  onStep?: (name: string, i: number, n: number) => void;
  /** how the boards' ranking engine gets its metric orders (default: sorted here, synchronously) */
  ordersOf?: OrdersOf;
  /** how the boards are scored (a service: on a worker thread); default here, in steps */
  boards?: BoardScoring;
  /** which wallets keep a band of fill sizes around their median, and how wide (median-fill.ts; default FILL_BAND) */
  fillBand?: FillBandRules;
}

/** The columns a leg scan selects, as the stream's LegBatch names them. */
export const LEG_SCAN_COLUMNS = `wallet_id, market_id, outcome_index, epoch_us(ts)::DOUBLE AS ts, kind, q, px, price, size_usdc AS size, fee_usdc AS fee, usdc`;

/**
 * Legs per range of wallets when the full build sorts a_legs a range at a time (rangedLegsSql): ~2 GB to sort, in
 * memory within a 5 GB limit; a venue of fewer legs (the demo's 8M) is sorted in one statement.
 */
export const LEG_RANGE_LEGS = 25_000_000;

/**
 * Wallet ranges [lo, hi) of about `legs` legs each (keySlices over legWalletsSql), in wallet order; the first one
 * open below, the last one above.
 */
export async function legRanges(db: ColumnarRunner, upToSeq: number, legs: number): Promise<[number, number][]> {
  return walletRanges(db, legWalletsSql(upToSeq), legs);
}

/** Wallet ranges [lo, hi) of about `legs` rows of `from` each, in wallet order; the first open below, the last above. */
async function walletRanges(db: ColumnarRunner, from: string, legs: number): Promise<[number, number][]> {
  const slices = await keySlices(db, from, 'wallet_id', legs);
  if (slices.length) slices[0]![0] = -(2 ** 31);
  return slices;
}

/** Legs per scan: a scan is held in memory whole (ColumnarRunner.scan), so big reads go slice by slice. */
export const SLICE_ROWS = 4_000_000;

/**
 * Ranges [lo, hi) of `key` that split the rows of `from` (a FROM clause) into slices of about `rows` rows each
 * (a single key with more rows is a slice of its own).
 */
export async function keySlices(db: ColumnarRunner, from: string, key: string, rows = SLICE_ROWS): Promise<[number, number][]> {
  const starts = await db.all<{ lo: number }>(
    `WITH c AS (SELECT ${key} AS k, count(*) AS n FROM ${from} GROUP BY 1),
      cum AS (SELECT k, sum(n) OVER (ORDER BY k) - n AS before FROM c)
    SELECT min(k) AS lo FROM cum GROUP BY before // ${rows} ORDER BY lo`,
  );
  const lo = starts.map((r) => Number(r.lo));
  return lo.map((l, i) => [l, i + 1 < lo.length ? lo[i + 1]! : 2 ** 31 - 1]);
}

/** Every mid of the venue that arrived by batch `upToSeq` (the state's watermark), in memory. */
export async function loadMids(db: ColumnarRunner, upToSeq: number): Promise<MidIndex> {
  const mids = new MidIndex();
  for (const [lo, hi] of await keySlices(db, 'mids', 'market_id')) {
    await db.scan(
      `SELECT market_id, outcome_index, epoch_us(ts)::DOUBLE AS ts, mid FROM mids WHERE market_id >= ${lo} AND market_id < ${hi} AND seq <= ${upToSeq}
        ORDER BY market_id, outcome_index, ts, mid`,
      (b) => {
        const m = b.int('market_id');
        const o = b.u8('outcome_index');
        const t = b.f64('ts');
        const v = b.f64('mid');
        for (let i = 0; i < b.n; i++) mids.add(m[i]!, o[i]!, t[i]!, v[i]!);
      },
    );
  }
  return mids;
}

/** Resolutions stamped at or before T, as the stream reads them (arrays indexed by market id and token). */
export async function loadMarketFacts(db: ColumnarRunner, asOf: AsOf): Promise<MarketFacts> {
  const [mx] = await db.all<{ n: number }>(`SELECT coalesce(max(market_id), 0) + 1 AS n FROM markets`);
  const n = Number(mx?.n ?? 1);
  const resolvedAt = new Float64Array(n).fill(Number.NaN);
  const payout = new Float64Array(2 * n);
  await db.scan(
    `SELECT market_id, epoch_us(resolved_at)::DOUBLE AS at, payout_yes, payout_no FROM resolutions WHERE resolved_at <= ${tsLiteral(asOf)} AND market_id < ${n}`,
    (b) => {
      const m = b.int('market_id');
      const at = b.f64('at');
      const y = b.f64('payout_yes');
      const no = b.f64('payout_no');
      for (let i = 0; i < b.n; i++) {
        resolvedAt[m[i]!] = at[i]!;
        payout[tokenOf(m[i]!, 0)] = y[i]!;
        payout[tokenOf(m[i]!, 1)] = no[i]!;
      }
    },
  );
  return { resolvedAt, payout };
}

/** (Re)write a_marks for `tokens` (default: every token with a mid) as of T. */
export async function writeMarks(db: ColumnarRunner, mids: MidIndex, asOf: AsOf, tokens?: Iterable<number>): Promise<void> {
  await db.run(MARKS_DDL);
  const T = asOf.getTime() * 1000;
  const list = [...(tokens ?? mids.tokens())];
  if (tokens) {
    await db.run(`CREATE OR REPLACE TEMP TABLE mark_tokens (t INTEGER)`);
    const w = await db.writer('mark_tokens', [{ name: 't', type: 'INTEGER' }]);
    for (const t of list) {
      w.set(0, t);
      w.next();
    }
    await w.close();
    await db.run(`DELETE FROM a_marks WHERE market_id * 2 + outcome_index IN (SELECT t FROM mark_tokens)`);
  } else await db.run(`DELETE FROM a_marks`);
  const w = await db.writer('a_marks', [
    { name: 'market_id', type: 'INTEGER' },
    { name: 'outcome_index', type: 'UTINYINT' },
    { name: 'mark', type: 'DOUBLE' },
  ]);
  for (const t of list) {
    const mark = mids.at(t, T);
    if (Number.isNaN(mark)) continue;
    w.set(0, t >> 1);
    w.set(1, t & 1);
    w.set(2, mark);
    w.next();
  }
  await w.close();
}

/** The tables the stream writes (in stream order: a full build leaves them sorted by wallet and position). */
export const STREAM_TABLES_DDL = [POSITION_STATE_DDL, HOLDS_DDL, RISK_DAILY_DDL, RISK_POSITIONS_DDL];

// a row of each stream table, written whole (RowWriter.row): the build writes 64M positions, 64M holds and ~140M
// risk days, and a call per column cost more than the stream's own work on those rows
const positionRow = new Float64Array(POSITION_STATE_COLUMNS.length);
const positionNulls = new Uint8Array(POSITION_STATE_COLUMNS.length);
const holdRow = new Float64Array(HOLDS_COLUMNS.length);
const holdNulls = new Uint8Array(HOLDS_COLUMNS.length);
const riskDayRow = new Float64Array(RISK_DAILY_COLUMNS.length);
const riskPositionRow = new Float64Array(RISK_POSITIONS_COLUMNS.length);

/** Column j of a row: the value, or NULL (nulls[j] = 1). */
function put(row: Float64Array, nulls: Uint8Array, j: number, x: number | null): void {
  if (x === null) nulls[j] = 1;
  else {
    nulls[j] = 0;
    row[j] = x;
  }
}

/** One a_position_state row, in POSITION_STATE_COLUMNS order. */
function writePosition(w: RowWriter, p: PositionOut): void {
  const r = positionRow;
  const z = positionNulls;
  r[0] = p.wallet_id;
  r[1] = p.market_id;
  r[2] = p.outcome_index;
  r[3] = p.shares;
  r[4] = p.cost_basis;
  r[5] = p.trade_pnl;
  r[6] = p.bought_shares;
  put(r, z, 7, p.entry_price);
  r[8] = p.volume_usdc;
  r[9] = p.trades;
  r[10] = p.n_taker;
  r[11] = p.n_buys;
  r[12] = p.n_contra;
  put(r, z, 13, p.first_ts);
  put(r, z, 14, p.last_ts);
  put(r, z, 15, p.first_fill_ts);
  put(r, z, 16, p.last_fill_ts);
  put(r, z, 17, p.first_buy_ts);
  r[18] = p.redeemed_shares;
  r[19] = p.a1_num;
  r[20] = p.a1_den;
  r[21] = p.a1_n;
  r[22] = p.a24_num;
  r[23] = p.a24_den;
  r[24] = p.a24_n;
  r[25] = p.ares_num;
  r[26] = p.ares_den;
  r[27] = p.ares_n;
  r[28] = p.raw_shares;
  r[29] = p.raw_cost;
  r[30] = p.raw_pnl;
  r[31] = p.raw_bought;
  r[32] = p.raw_buy_notional;
  r[33] = p.raw_volume;
  r[34] = p.last_leg_ts;
  put(r, z, 35, p.ep_start);
  put(r, z, 36, p.ep_exit);
  r[37] = p.ep_cost;
  r[38] = p.episodes;
  w.row(r, z);
}

/**
 * Writers behind the stream's sinks, appending to the stream tables: positions and holds, risk rows, or both; with
 * `positionsCopy`, each position row also goes to that (temporary) table, created here with a_position_state's columns.
 */
export async function tableSinks(
  db: ColumnarRunner,
  tUs: number,
  write: { positions: boolean; risk: boolean; positionsCopy?: string },
): Promise<StreamSinks & { close(): Promise<void> }> {
  const risk = write.risk;
  for (const ddl of STREAM_TABLES_DDL) await db.run(ddl);
  const cols = (c: TableColumns) => c.map(([name, type]) => ({ name, type }));
  const none: RowWriter = { set() {}, next() {}, row() {}, columns() {}, close: async () => {}, rows: 0 };
  const pos = write.positions ? await db.writer('a_position_state', cols(POSITION_STATE_COLUMNS)) : none;
  let copy: RowWriter | null = null;
  if (write.positions && write.positionsCopy) {
    await db.run(`CREATE OR REPLACE TEMP TABLE ${write.positionsCopy} AS SELECT * FROM a_position_state LIMIT 0`);
    copy = await db.writer(write.positionsCopy, cols(POSITION_STATE_COLUMNS));
  }
  const hold = write.positions ? await db.writer('a_holds', cols(HOLDS_COLUMNS)) : none;
  const rd = risk ? await db.writer('a_risk_daily', cols(RISK_DAILY_COLUMNS)) : null;
  const rp = risk ? await db.writer('a_risk_pos', cols(RISK_POSITIONS_COLUMNS)) : null;
  const fold = Math.floor(tUs / DAY_US) * DAY_US - (RISK_WINDOW_DAYS + 1) * DAY_US;
  return {
    position: (p) => {
      writePosition(pos, p);
      if (copy) writePosition(copy, p);
    },
    hold: (h) => {
      const r = holdRow;
      const z = holdNulls;
      r[0] = h.wallet_id;
      r[1] = h.market_id;
      r[2] = h.outcome_index;
      r[3] = h.start_ts;
      put(r, z, 4, h.exit_ts);
      r[5] = h.cost_in;
      put(r, z, 6, h.end_ts);
      r[7] = h.to_resolution ? 1 : 0;
      put(r, z, 8, h.hold_hours);
      r[9] = h.episode;
      hold.row(r, z);
    },
    ...(rd && rp
      ? {
          riskDays: (r) => {
            for (let k = 2; k < r.pnl.length; k++) {
              const moved = r.moved[k] === 1;
              if (!keepRiskDay(r.capital[k]!, moved)) continue;
              const row = riskDayRow;
              row[0] = r.wallet_id;
              row[1] = fold + (k - 1) * DAY_US;
              row[2] = r.pnl[k]!;
              row[3] = r.capital[k]!;
              row[4] = moved ? 1 : 0;
              rd.row(row);
            }
          },
          riskPosition: (r) => {
            const row = riskPositionRow;
            row[0] = r.wallet_id;
            row[1] = r.market_id;
            row[2] = r.outcome_index;
            row[3] = r.shares;
            row[4] = r.first_day;
            rp.row(row);
          },
        }
      : {}),
    async close() {
      await pos.close();
      await copy?.close();
      await hold.close();
      await rd?.close();
      await rp?.close();
    },
  };
}

/** Feed the legs of `sql` (LEG_SCAN_COLUMNS, in stream order) to a PositionStream, batch by batch. */
function feeder(stream: PositionStream): (b: ScanBatch) => void {
  return (b) =>
    stream.push({
      n: b.n,
      wallet: b.int('wallet_id'),
      market: b.int('market_id'),
      outcome: b.u8('outcome_index'),
      ts: b.f64('ts'),
      kind: b.u8('kind'),
      q: b.f64('q'),
      px: b.f64('px'),
      price: b.f64('price'),
      size: b.f64('size'),
      fee: b.f64('fee'),
      usdc: b.f64('usdc'),
    });
}

/** Stream the legs selected by `sql` through a PositionStream (not finished), held in memory whole: small reads. */
export function feedStream(db: ColumnarRunner, sql: string, stream: PositionStream): Promise<number> {
  return db.scan(sql, feeder(stream));
}

/** Per-wallet tables for a scope: delete the scope's rows and insert them again (a full build: create them). */
export function walletTableStatements(asOf: AsOf, scope: WalletScope): { table: string; select: string }[] {
  return [
    { table: 'a_features', select: featuresSql(asOf, scope) },
    { table: 'a_alpha', select: alphaSql(scope) },
    { table: 'a_pnl', select: pnlSql(scope) },
    { table: 'a_calibration', select: calibrationSql(scope) },
    { table: 'a_style', select: styleSql(asOf, scope) },
    { table: 'a_category', select: categorySql(asOf, scope) },
  ];
}

export const BEST_CATEGORY_SQL = `SELECT wallet_id, best_category, best_category_z, best_category_markets FROM a_category WHERE category_rank = 1`;

/** The ranked wallets' skill deviates (the sharp cut-off's input), as typed columns: ~10x faster than row objects. */
export async function rankedDeviates(db: ColumnarRunner): Promise<number[]> {
  const out: number[] = [];
  await db.scan(RANKED_DEVIATES_SQL, (b) => {
    const w = b.f64('w');
    for (let i = 0; i < b.n; i++) out.push(w[i]!);
  });
  return out;
}

/** The full build as of T. */
export async function fullBuild(db: ColumnarRunner, asOf: AsOf, opts: FullBuildOptions = {}): Promise<BuildReport & { mids: MidIndex; watermark: number }> {
  const T = tsLiteral(asOf);
  const tUs = asOf.getTime() * 1000;
  const riskDays = opts.riskDays ?? RISK_WINDOW_DAYS;
  const rankings = opts.rankings ?? true;
  const names = ['legs', 'mids', 'stream', 'positions', 'wallets', 'risk', 'metrics', ...(rankings ? ['clusters', 'rank_base', 'boards'] : [])];
  const seconds: Record<string, number> = {};
  const t0 = performance.now();
  const watermark = opts.watermark ?? (await venueWatermark(db));
  let step = 0;
  const timed = async <R>(name: string, f: () => Promise<R>): Promise<R> => {
    opts.onStep?.(name, step++, names.length);
    const t = performance.now();
    const r = await f();
    seconds[name] = Number(((performance.now() - t) / 1000).toFixed(2));
    return r;
  };
  // a_legs: the venue's legs in stream order. On a venue of more legs than one range holds, and with a connection of
  // its own to sort them on, a range of wallets at a time: the stream reads each range while the next is sorted (the
  // sort of every leg at once spilled to disk, and the stream waited for all of it)
  let ranges: [number, number][] = [];
  let side: SideRunner | null = null;
  const ranged = rangedLegsSql(watermark);
  let mids: MidIndex;
  let sorting: Promise<void> | null = null;
  // a range's sort runs while other work is awaited: its failure is seen where it is awaited, not as unhandled
  const sort = (k: number) => {
    const p = side!.run(ranged.range(ranges[k]![0], ranges[k]![1]));
    p.catch(() => undefined);
    return p;
  };
  try {
    await timed('legs', async () => {
      if (!opts.legsReady && db.side) ranges = await legRanges(db, watermark, opts.legRangeLegs ?? LEG_RANGE_LEGS);
      if (ranges.length > 1) side = await db.side!();
      if (opts.legsReady) await db.run(LEGS_DDL);
      else if (!side) await db.run(createLegsSql(watermark));
      else {
        for (const sql of ranged.create) await side.run(sql);
        await sort(0);
        // the next range sorts while the mids load
        sorting = sort(1);
      }
    });
    mids = opts.mids ?? (await timed('mids', () => loadMids(db, watermark)));
    if (opts.mids) seconds.mids = 0;
    // the state is as of T from here on: the a_positions view and every per-wallet statement read a_meta.as_of
    await writeMeta(db, asOf, watermark, null, 1);
    await timed('stream', async () => {
      await writeMarks(db, mids, asOf);
      const markets = await loadMarketFacts(db, asOf);
      for (const t of ['a_position_state', 'a_holds', 'a_risk_daily', 'a_risk_pos']) await db.run(`DROP TABLE IF EXISTS ${t}`);
      const sinks = await tableSinks(db, tUs, { positions: true, risk: true });
      const stream = new PositionStream({ T: tUs, mids, markets, risk: { days: riskDays } }, sinks);
      // a_legs is stored in stream order (the full build sorted it): read as stored, on a connection of its own
      const legs = (where: string) => db.stream(`SELECT ${LEG_SCAN_COLUMNS} FROM ${LEGS_TABLE} WHERE ts <= ${T} AND ${where}`, feeder(stream));
      if (!side) await legs('true');
      else
        for (let k = 0; k < ranges.length; k++) {
          // range k is in a_legs (its statement ended) and k + 1 is sorting: one statement at a time on the side
          await legs(`wallet_id >= ${ranges[k]![0]} AND wallet_id < ${ranges[k]![1]}`);
          if (k + 1 < ranges.length) {
            await sorting;
            sorting = k + 2 < ranges.length ? sort(k + 2) : null;
          }
        }
      stream.finish();
      await sinks.close();
      await dropRelation(db, 'a_positions'); // an older build kept it as a table
      await db.run(POSITIONS_VIEW_DDL);
      if (side) await side.run(ranged.drop);
      await db.run(createHorizonFillsSql(T));
    });
  } finally {
    // a failed build leaves no statement running on the side connection it closes
    await Promise.resolve(sorting).catch(() => undefined);
    (side as SideRunner | null)?.close();
  }
  await timed('wallets', async () => {
    // a range of wallets at a time (~walletRangeLegs legs each): a whole-cohort statement's medians held ~3.5 GB past
    // DuckDB's memory limit at full scale
    const ranges = await walletRanges(db, LEGS_TABLE, opts.walletRangeLegs ?? LEG_RANGE_LEGS);
    if (!ranges.length) ranges.push([-(2 ** 31), 2 ** 31 - 1]);
    for (const sql of FILL_BAND_DDL) await db.run(sql);
    for (const [k, range] of ranges.entries()) {
      await db.run(`CREATE OR REPLACE TEMP TABLE median_fill AS ${medianFillSql({ range }, T)}`);
      for (const sql of addBandsSql(visibleFillSizes(scopeSql({ range }), T), opts.fillBand)) await db.run(sql);
      for (const s of walletTableStatements(asOf, { range, medianFill: 'median_fill' })) {
        await db.run(k === 0 ? `CREATE OR REPLACE TABLE ${s.table} AS ${s.select}` : `INSERT INTO ${s.table} SELECT * FROM (${s.select})`);
      }
    }
    await db.run(`DROP TABLE median_fill`);
    await db.run(`CREATE OR REPLACE TABLE a_best_category AS ${BEST_CATEGORY_SQL}`);
  });
  await timed('risk', () => db.run(`CREATE OR REPLACE TABLE a_risk AS ${riskStatsSql(tUs, { all: true }, riskDays)}`));
  const deviates = await rankedDeviates(db);
  const sharpMinDeviate = sharpCutoff(deviates);
  await timed('metrics', async () => {
    for (const sql of writeCohortSql(sharpMinDeviate)) await db.run(sql);
  });
  let ranker: RankingEngine | undefined;
  if (rankings) {
    await timed('clusters', () => buildClusters(db, asOf, CLUSTER_RULES, A_LEGS));
    await timed('rank_base', () => writeRankBase(db));
    ranker = await timed('boards', () => scoreBoards(db, asOf, opts.ordersOf, opts.boards));
  }
  opts.onStep?.('done', names.length, names.length);
  const total = Number(((performance.now() - t0) / 1000).toFixed(2));
  await db.run(`UPDATE a_meta SET built_at = now(), build_seconds = ${total}, sharp_min_deviate = ${sqlDouble(sharpMinDeviate)}, ranked_wallets = ${deviates.length}`);
  const [counts] = await db.all<{ wallets: number; positions: number }>(`SELECT (SELECT count(*) FROM a_wallet_metrics) AS wallets, (SELECT count(*) FROM a_positions) AS positions`);
  return { as_of: asOf.toISOString(), seconds, total_seconds: total, wallets: Number(counts!.wallets), positions: Number(counts!.positions), mids, watermark, ranker };
}

export { LEGS_ORDER };
