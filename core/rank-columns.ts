/**
 * The rank base as typed columns, what a RankingEngine ranks over: the SQL that selects them (one row per wallet with
 * a fill, in wallet order), the loader that reads them a slice of wallets at a time, and the users (linked wallets)
 * as codes. The engine itself (core/ranking-engine.ts) does no I/O; this reads through a ColumnarRunner.
 */
import { GATE_FIELDS, METRIC_IDS, METRICS, type GateField, type MetricId } from './rankings.ts';
import type { ColumnarRunner } from './query.ts';
import { SMART_MONEY_TAGS } from './tags.ts';
import { indexOfSorted } from './ranking-orders.ts';
import { yieldToEventLoop } from './steps.ts';

/**
 * SQL (a SELECT over a_rank_base) of every column the engine reads, in wallet order: the best category and the linked
 * user as they are (the loader codes the categories and reads the links from its copy of these rows, so the base is
 * scanned once: a patch's few thousand changed wallets are a semi-join over all 2.8M rows for each scan)
 */
export function rankingColumnsSql(base = 'a_rank_base', where = 'true'): string {
  const metricCols = METRIC_IDS.map((id) => {
    const m = METRICS[id];
    return `coalesce((${m.measured}), false) AS "ms_${id}", coalesce((${m.value})::DOUBLE, 'NaN'::DOUBLE) AS "val_${id}"`;
  });
  const gateCols = (Object.keys(GATE_FIELDS) as GateField[]).map((f) => `coalesce((${GATE_FIELDS[f].sql})::DOUBLE, 'NaN'::DOUBLE) AS "gate_${f}"`);
  const tags = SMART_MONEY_TAGS.map((t, i) => `CASE WHEN list_contains(smart_money_tags, '${t}') THEN ${1 << i} ELSE 0 END`).join(' + ');
  return `SELECT wallet_id, best_category, linked_user_id,
      coalesce(trade_count, 0)::DOUBLE AS trade_count, coalesce(epoch_us(last_trade_at)::DOUBLE, 'NaN'::DOUBLE) AS last_trade_us,
      coalesce(lifetime_volume_usdc, 'NaN'::DOUBLE) AS lifetime_volume_usdc,
      (${tags})::INTEGER AS tag_bits, coalesce(cluster_size, 1)::INTEGER AS cluster_size,
      ${[...metricCols, ...gateCols].join(',\n      ')}
    FROM ${base} WHERE trade_count > 0 AND (${where}) ORDER BY wallet_id`;
}

/** SQL of the best categories present in a table of rankingColumnsSql's rows, as a sorted list (codes are positions in it). */
function categoriesListSql(rows: string): string {
  return `(SELECT coalesce(list(DISTINCT best_category ORDER BY best_category), []) FROM ${rows} WHERE best_category IS NOT NULL)`;
}

/**
 * User codes of rows in wallet order: rows of one linked user share a code (the row of its first wallet); every
 * other row is its own user (code = its row). Only equality of codes matters to the engine.
 */
export function userCodes(walletId: Int32Array, links: ReadonlyMap<number, string>): Int32Array {
  const code = columnLike(walletId, walletId.length);
  for (let i = 0; i < code.length; i++) code[i] = i;
  const rowOf = (w: number) => indexOfSorted(walletId, w);
  const first = new Map<string, number>();
  const rows = [...links].map(([w, u]) => [rowOf(w), u] as const).filter(([r]) => r >= 0).sort((a, b) => a[0] - b[0]);
  for (const [r, u] of rows) {
    const f = first.get(u);
    if (f === undefined) first.set(u, r);
    else code[r] = f;
  }
  return code;
}

/** A typed column of the rank columns' kinds. */
export type Column = Int32Array | Float64Array | Uint8Array;

/**
 * An empty column of `n` like `like`: in shared memory when `like` is (a worker thread may read it: the metric orders,
 * the boards), else ordinary.
 */
export function columnLike<T extends Column>(like: T, n: number): T {
  const C = like.constructor as new (x: number | SharedArrayBuffer) => T;
  return like.buffer instanceof SharedArrayBuffer ? new C(new SharedArrayBuffer(like.BYTES_PER_ELEMENT * n)) : new C(n);
}

/** The rank base as columns (row i is the i-th wallet in wallet order). NaN stands for SQL NULL. */
export interface RankColumns {
  n: number;
  walletId: Int32Array;
  /** users: rows of one user share a code (a wallet without a user is its own user): userCodes(walletId, links) */
  userCode: Int32Array;
  /** wallet id -> its linked user (wallet_links), for the rows' wallets that have one */
  links: Map<number, string>;
  tradeCount: Float64Array;
  lastTradeUs: Float64Array;
  bestCategory: Int32Array;
  categories: string[];
  volume: Float64Array;
  tagBits: Int32Array;
  clusterSize: Int32Array;
  measured: Record<MetricId, Uint8Array>;
  value: Record<MetricId, Float64Array>;
  gate: Record<GateField, Float64Array>;
}

/**
 * Read the rank base into columns (one scan per wallet slice of ~1M rows); `where` (a condition on the base) reads
 * only some rows — a patch's changed wallets (core/ranking-patch.ts).
 */
export async function loadRankColumns(db: ColumnarRunner, base = 'a_rank_base', opts: { shared?: boolean; where?: string } = {}): Promise<RankColumns> {
  const where = opts.where ?? 'true';
  // the columns go to a table stored in wallet order (the one scan of the base); its wallet ids are read whole (they
  // give the slice bounds), then the columns slice by slice, each a range scan (zone maps skip the rest; a scan
  // returns rows in stored order)
  await db.run(`CREATE OR REPLACE TEMP TABLE rank_columns AS ${rankingColumnsSql(base, where)}`);
  const [meta] = await db.all<{ n: number; cats: string[] }>(`SELECT (SELECT count(*) FROM rank_columns) AS n, ${categoriesListSql('rank_columns')} AS cats`);
  const n = Number(meta?.n ?? 0);
  // shared: every column lives in SharedArrayBuffers, so worker threads read them without a copy (the metric
  // orders, the boards)
  const f64 = () => (opts.shared ? new Float64Array(new SharedArrayBuffer(8 * n)) : new Float64Array(n));
  const i32 = () => (opts.shared ? new Int32Array(new SharedArrayBuffer(4 * n)) : new Int32Array(n));
  const u8 = () => (opts.shared ? new Uint8Array(new SharedArrayBuffer(n)) : new Uint8Array(n));
  const cols: RankColumns = {
    n,
    walletId: i32(),
    userCode: i32(),
    links: new Map(),
    tradeCount: f64(),
    lastTradeUs: f64(),
    bestCategory: i32(),
    categories: [...((meta?.cats as unknown as string[]) ?? [])],
    volume: f64(),
    tagBits: i32(),
    clusterSize: i32(),
    measured: {} as Record<MetricId, Uint8Array>,
    value: {} as Record<MetricId, Float64Array>,
    gate: {} as Record<GateField, Float64Array>,
  };
  // the metric and gate columns, a few per turn of the event loop: each is fresh zeroed memory, touched page by page
  // (loading a patch's 1.87M changed rows held a full-scale service's loop 1.3 s, mostly here)
  for (const id of METRIC_IDS) {
    cols.measured[id] = u8();
    cols.value[id] = f64();
    if (n > 100_000) await yieldToEventLoop();
  }
  for (const g of Object.keys(GATE_FIELDS) as GateField[]) cols.gate[g] = f64();
  let row = 0;
  await db.scan(`SELECT wallet_id::INTEGER AS wallet_id FROM rank_columns`, (b) => {
    cols.walletId.set(b.int('wallet_id') as Int32Array, row);
    row += b.n;
  });
  const slice = 1_000_000;
  // the categories as a constant list: a subquery here is a join, and the scan's rows then came back out of wallet
  // order at full scale (values read against other wallets' ids)
  const categoriesLiteral = `[${cols.categories.map((c) => `'${c.replaceAll("'", "''")}'`).join(', ')}]::VARCHAR[]`;
  const code = `coalesce(list_position(${categoriesLiteral}, best_category) - 1, -1)::INTEGER AS category_code`;
  row = 0;
  for (let off = 0; off < n; off += slice) {
    const lo = cols.walletId[off]!;
    const hi = off + slice < n ? `AND wallet_id < ${cols.walletId[off + slice]!}` : '';
    await db.scan(`SELECT * EXCLUDE (wallet_id, best_category, linked_user_id), ${code} FROM rank_columns WHERE wallet_id >= ${lo} ${hi}`, (b) => {
      const copy = <T extends Int32Array | Float64Array | Uint8Array>(dst: T, src: ArrayLike<number>) => dst.set(src as never, row);
      copy(cols.tradeCount, b.f64('trade_count'));
      copy(cols.lastTradeUs, b.f64('last_trade_us'));
      copy(cols.bestCategory, b.int('category_code'));
      copy(cols.volume, b.f64('lifetime_volume_usdc'));
      copy(cols.tagBits, b.int('tag_bits'));
      copy(cols.clusterSize, b.int('cluster_size'));
      for (const id of METRIC_IDS) {
        copy(cols.measured[id], b.u8(`ms_${id}`));
        copy(cols.value[id], b.f64(`val_${id}`));
      }
      for (const g of Object.keys(GATE_FIELDS) as GateField[]) copy(cols.gate[g], b.f64(`gate_${g}`));
      row += b.n;
    });
  }
  if (row !== n) throw new Error(`rank columns: read ${row} rows of ${n}`);
  // users: the linked wallets only (few), grouped in memory instead of a sort of every row's user key
  const linked = await db.all<{ wallet_id: number; user_id: string }>(`SELECT wallet_id, linked_user_id AS user_id FROM rank_columns WHERE linked_user_id IS NOT NULL`);
  await db.run(`DROP TABLE IF EXISTS rank_columns`);
  for (const l of linked) cols.links.set(Number(l.wallet_id), String(l.user_id));
  cols.userCode = userCodes(cols.walletId, cols.links);
  return cols;
}
