/**
 * Benchmark: the ranking engine's patch (core/ranking-patch.ts) at full scale without a full-scale build: synthetic
 * rank columns of --rows wallets (19 metrics, every gate), an engine over them, then the deltas a refresh hands the
 * patch, each timed --runs times:
 *   - ordinary: 7k changed wallets, every value of theirs moved (a refresh's few thousand traded wallets);
 *   - inserts: the same with every 14th of them new (a wallet's first fill: every row is renumbered);
 *   - hour: 1.75M wallets whose P&L moved (total P&L and ROI), 4.4k of them in every metric (the hour's new mids).
 *   npm run bench:engine-patch -- [--rows 2800000] [--runs 3] [--seed 1]
 * Prints JSON: each delta's patch seconds (p50 and every run) and the patch's figures.
 */
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { GATE_FIELDS, METRIC_IDS, type GateField, type MetricId } from '../core/rankings.ts';
import { RankingEngine } from '../core/ranking-engine.ts';
import { metricOrders } from '../core/ranking-orders.ts';
import { patchSteps, type PatchFigures } from '../core/ranking-patch.ts';
import type { RankColumns } from '../core/rank-columns.ts';
import { drain } from '../core/steps.ts';

const Args = z.object({
  rows: z.coerce.number().int().min(10_000).default(2_800_000),
  runs: z.coerce.number().int().min(1).default(3),
  seed: z.coerce.number().int().default(1),
});
const { values } = parseArgs({ options: { rows: { type: 'string' }, runs: { type: 'string' }, seed: { type: 'string' } } });
const a = Args.parse(values);

// a small LCG (Math.imul keeps it in 32 bits): the same columns for a seed
let state = a.seed >>> 0 || 1;
const rnd = () => {
  state = (Math.imul(state, 1103515245) + 12345) & 0x7fffffff;
  return state / 0x7fffffff;
};
const GATES = Object.keys(GATE_FIELDS) as GateField[];

/** Columns of random rows: 70% measured per metric, 30% of values small integers (ties), the rest spread. */
function randomColumns(walletId: Int32Array): RankColumns {
  const n = walletId.length;
  const c: RankColumns = {
    n,
    walletId,
    userCode: Int32Array.from({ length: n }, (_, i) => i),
    links: new Map(),
    tradeCount: new Float64Array(n).fill(3),
    lastTradeUs: Float64Array.from({ length: n }, () => rnd() * 1e15),
    bestCategory: new Int32Array(n).fill(-1),
    categories: [],
    volume: Float64Array.from({ length: n }, () => rnd() * 1000),
    tagBits: new Int32Array(n),
    clusterSize: new Int32Array(n).fill(1),
    measured: {} as Record<MetricId, Uint8Array>,
    value: {} as Record<MetricId, Float64Array>,
    gate: {} as Record<GateField, Float64Array>,
  };
  for (const id of METRIC_IDS) {
    c.measured[id] = Uint8Array.from({ length: n }, () => +(rnd() < 0.7));
    c.value[id] = Float64Array.from({ length: n }, () => (rnd() < 0.3 ? Math.round(rnd() * 20) : rnd() * 100 - 50));
  }
  for (const g of GATES) c.gate[g] = Float64Array.from({ length: n }, () => rnd());
  return c;
}

// wallet ids are even: a new wallet takes the odd id after a changed one's
const base = randomColumns(Int32Array.from({ length: a.rows }, (_, i) => 2 * i));
const t0 = performance.now();
const engine = new RankingEngine(base, metricOrders(base));
const loadSeconds = (performance.now() - t0) / 1000;

/** Distinct rows, ascending. */
function pick(m: number): number[] {
  const s = new Set<number>();
  while (s.size < m) s.add(Math.floor(rnd() * a.rows));
  return [...s].sort((x, y) => x - y);
}

/** The delta of `rows`: their previous values, every value moved for `everything`, the P&L metrics' for all. */
function deltaOf(rows: number[], everything: (r: number) => boolean, pnlMoved: boolean, newEvery = 0): RankColumns {
  const d = randomColumns(Int32Array.from(rows, (r, k) => 2 * r + (newEvery > 0 && k % newEvery === 0 ? 1 : 0)));
  const pnl = new Set<MetricId>(pnlMoved ? ['total_pnl', 'roi'] : []);
  rows.forEach((r, k) => {
    const all = everything(r);
    d.volume[k] = base.volume[r]! + (all ? 1 : 0);
    d.lastTradeUs[k] = base.lastTradeUs[r]! + (all ? 1 : 0);
    for (const g of GATES) d.gate[g][k] = base.gate[g][r]!;
    for (const id of METRIC_IDS) {
      d.measured[id][k] = base.measured[id][r]!;
      d.value[id][k] = base.value[id][r]! + (all || pnl.has(id) ? 0.5 : 0);
    }
  });
  return d;
}

function time(delta: RankColumns): { seconds: number[]; figures: PatchFigures } {
  const seconds: number[] = [];
  let figures!: PatchFigures;
  for (let i = 0; i < a.runs; i++) {
    const t = performance.now();
    figures = drain(patchSteps(engine, delta)).figures;
    seconds.push(Number(((performance.now() - t) / 1000).toFixed(2)));
  }
  return { seconds, figures };
}
const p50 = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor((xs.length - 1) / 2)]!;

const ordinaryRows = pick(7000);
const ordinary = time(deltaOf(ordinaryRows, () => true, false));
const inserts = time(deltaOf(ordinaryRows, () => true, false, 14));
const hourRows = pick(Math.round(a.rows * 0.625));
const moveAll = new Set(hourRows.filter(() => rnd() < 4400 / hourRows.length));
const hour = time(deltaOf(hourRows, (r) => moveAll.has(r), true));

console.log(
  JSON.stringify(
    {
      bench: 'engine-patch',
      rows: a.rows,
      runs: a.runs,
      engine_load_seconds: Number(loadSeconds.toFixed(1)),
      ...Object.fromEntries(
        Object.entries({ ordinary, inserts, hour }).map(([k, v]) => [k, { p50_seconds: p50(v.seconds), seconds: v.seconds, figures: v.figures }]),
      ),
      peak_rss_mb: Math.round(process.resourceUsage().maxRSS / 1024),
    },
    null,
    2,
  ),
);
