/**
 * Benchmark: webhook subscription matching (core/webhook-filters.ts SubscriptionIndex) at 10x the live rate.
 *   npm run bench:webhooks -- [--subs 100000] [--rate 680] [--seconds 30] [--seed 42] [--realtime]
 *
 * Builds `subs` random but realistic subscriptions (~40% trader_proxy over a 100k-wallet space, ~20% condition_id
 * over 3,500 markets, ~15% min_size_usdc only, ~10% tags_any / signal_types on signals, ~5% empty filter on
 * market.resolved, the rest mixed; popular wallets and markets draw more subscribers, ~5% inactive), then replays
 * synthetic taker fills (Zipf-distributed wallets and markets, log-normal sizes, ~2% without a known condition)
 * at `rate` events/s for `seconds` of simulated time. Without --realtime the replay does not sleep: the arrival
 * clock is simulated and only the match time is measured (busy share = match time / simulated seconds); with
 * --realtime the fills are released on the wall clock. Prints per-event latency p50 / p99 / max, the flat-out
 * sustained rate, index build time and memory, a brute-force comparison on a sample (which also checks the index
 * against matchesFilter at full scale), and signal.smart_money / market.resolved figures.
 * Fills are synthetic; the demo venue database (var/demo-w100000-d120-s42/venue.duckdb) is not read.
 */
import { parseArgs } from 'node:util';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { EVENT_TYPES, FilterJson, SubscriptionIndex, matchesFilter, type IndexedSubscription } from '../core/webhook-filters.ts';
import { SMART_MONEY_MIN_USD, SIGNAL_TYPES } from '../core/signals.ts';
import { SMART_MONEY_TAGS } from '../core/tags.ts';

const { values } = parseArgs({
  options: {
    subs: { type: 'string' },
    rate: { type: 'string' },
    seconds: { type: 'string' },
    seed: { type: 'string' },
    realtime: { type: 'boolean' },
  },
});
const N_SUBS = Number(values.subs ?? 100_000);
const RATE = Number(values.rate ?? 680);
const SECONDS = Number(values.seconds ?? 30);
const SEED = Number(values.seed ?? 42);
const N_WALLETS = 100_000;
const N_MARKETS = 3_500;

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const mem = () => {
  gc();
  gc();
  const m = process.memoryUsage();
  return { rss: m.rss, heap: m.heapUsed };
};
const start = mem();

// ---------------------------------------------------------------------------------------------------------------
// Deterministic randomness
// ---------------------------------------------------------------------------------------------------------------

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rnd = mulberry32(SEED);
const int = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1));
const pick = <T>(a: readonly T[]): T => a[Math.floor(rnd() * a.length)]!;
const chance = (p: number) => rnd() < p;
const hex = (n: number) => {
  let s = '';
  for (let i = 0; i < n; i++) s += Math.floor(rnd() * 16).toString(16);
  return s;
};
const gauss = () => Math.sqrt(-2 * Math.log(1 - rnd())) * Math.cos(2 * Math.PI * rnd());

/** Zipf(s) sampler over 0..n-1 (rank 0 most frequent), by inverse CDF. */
function zipf(n: number, s: number): () => number {
  const cdf = new Float64Array(n);
  let acc = 0;
  for (let i = 0; i < n; i++) cdf[i] = acc += 1 / Math.pow(i + 1, s);
  for (let i = 0; i < n; i++) cdf[i]! /= acc;
  return () => {
    const u = rnd();
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (cdf[mid]! < u) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Universe: wallets, markets, tags
// ---------------------------------------------------------------------------------------------------------------

const wallets = Array.from({ length: N_WALLETS }, () => '0x' + hex(40));
const markets = Array.from({ length: N_MARKETS }, () => '0x' + hex(64));
/** fill activity: Zipf over wallets (rank r is wallet r; addresses are random) and over markets */
const activeWallet = zipf(N_WALLETS, 0.9);
const activeMarket = zipf(N_MARKETS, 0.9);
/** follow popularity, independent of activity (subscribers follow skill, not volume): Zipf over a permutation */
const followRank = zipf(N_WALLETS, 1.0);
const followPerm = Array.from({ length: N_WALLETS }, (_, i) => i);
for (let i = N_WALLETS - 1; i > 0; i--) {
  const j = Math.floor(rnd() * (i + 1));
  [followPerm[i], followPerm[j]] = [followPerm[j]!, followPerm[i]!];
}
/** ~3% of wallets carry positive smart-money tags, more often among the active ones */
const walletTags = new Map<number, string[]>();
for (let i = 0; i < N_WALLETS; i++) {
  if (chance(i < 2000 ? 0.15 : 0.025)) {
    const tags = SMART_MONEY_TAGS.filter(() => chance(0.4));
    walletTags.set(i, tags.length ? tags : [pick(SMART_MONEY_TAGS)]);
  }
}
/** a followed wallet: 10% among the most active, 20% among the most followed, 70% anyone */
const followedWallet = () => {
  const u = rnd();
  return u < 0.1 ? activeWallet() : u < 0.3 ? followPerm[followRank()]! : int(0, N_WALLETS - 1);
};
/** a followed market: 30% among the most traded, 70% any */
const followedMarket = () => (chance(0.3) ? activeMarket() : int(0, N_MARKETS - 1));
const caseOf = (a: string) => (chance(0.3) ? '0x' + a.slice(2).toUpperCase() : a);

// ---------------------------------------------------------------------------------------------------------------
// Subscriptions
// ---------------------------------------------------------------------------------------------------------------

const listSize = () => {
  const u = rnd();
  return u < 0.8 ? 1 : u < 0.95 ? int(2, 10) : u < 0.995 ? int(11, 50) : int(51, 500);
};
/** a size floor, log-uniform over 2k..250k USD (a floor of 2k already takes ~1.5% of all fills, ~90k a day live) */
const minSize = () => Math.round(Math.exp(Math.log(2000) + rnd() * (Math.log(250_000) - Math.log(2000))) / 100) * 100;
const someTags = () => {
  const t = SMART_MONEY_TAGS.filter(() => chance(0.35));
  return t.length ? t : [pick(SMART_MONEY_TAGS)];
};
const FILL = 'trader.fill';
const SIG = 'signal.smart_money';
const RES = 'market.resolved';

type Kind = 'trader' | 'condition' | 'min_size' | 'signal' | 'empty_resolved' | 'mixed';
const kindCounts: Record<Kind, number> = { trader: 0, condition: 0, min_size: 0, signal: 0, empty_resolved: 0, mixed: 0 };
function makeSub(i: number): IndexedSubscription {
  const u = rnd();
  let kind: Kind;
  let filter: Record<string, unknown>;
  let types: string[];
  if (u < 0.4) {
    kind = 'trader';
    const n = listSize();
    const ws = Array.from({ length: n }, () => caseOf(wallets[followedWallet()]!));
    filter = { trader_proxy: n === 1 && chance(0.5) ? ws[0] : ws };
    if (chance(0.3)) filter.min_size_usdc = pick([100, 500, 1000, 5000]);
    types = chance(0.7) ? [FILL] : [FILL, SIG];
  } else if (u < 0.6) {
    kind = 'condition';
    const n = chance(0.7) ? 1 : chance(0.85) ? int(2, 10) : int(11, 50);
    const cs = Array.from({ length: n }, () => caseOf(markets[followedMarket()]!));
    filter = { condition_id: n === 1 && chance(0.5) ? cs[0] : cs };
    const v = rnd();
    types = v < 0.4 ? [FILL] : v < 0.7 ? [RES] : [FILL, SIG, RES];
    // the fills of a market are many: most who take them also set a size floor
    if (chance(types[0] === FILL ? 0.6 : 0.1)) filter.min_size_usdc = pick([250, 1000, 5000, 10_000]);
  } else if (u < 0.75) {
    kind = 'min_size';
    filter = { min_size_usdc: minSize() };
    types = chance(0.8) ? [FILL] : [FILL, SIG];
  } else if (u < 0.85) {
    kind = 'signal';
    filter = {};
    const v = rnd();
    if (v < 0.4) filter.tags_any = someTags();
    else if (v < 0.7) filter.signal_types = [pick(SIGNAL_TYPES)];
    else {
      filter.tags_any = someTags();
      filter.signal_types = [pick(SIGNAL_TYPES)];
    }
    if (chance(0.3)) filter.min_size_usdc = pick([10_000, 25_000, 50_000]);
    types = [SIG];
  } else if (u < 0.9) {
    kind = 'empty_resolved';
    filter = {};
    types = [RES];
  } else {
    kind = 'mixed';
    const v = rnd();
    if (v < 0.35) filter = { trader_proxy: caseOf(wallets[followedWallet()]!), condition_id: caseOf(markets[followedMarket()]!), min_size_usdc: pick([0, 100, 1000]) };
    else if (v < 0.6) filter = { condition_id: [caseOf(markets[followedMarket()]!)], signal_types: [pick(SIGNAL_TYPES)], tags_any: someTags() };
    else if (v < 0.8) filter = { trader_proxy: Array.from({ length: int(1, 5) }, () => wallets[followedWallet()]!), tags_any: someTags() };
    else if (v < 0.995) filter = { min_size_usdc: minSize(), tags_any: someTags(), label: 'unknown keys are ignored' };
    else filter = {}; // firehose: every fill
    types = v < 0.6 ? [FILL, SIG] : v < 0.8 ? [SIG] : v < 0.995 ? [SIG, FILL] : [FILL];
    if (chance(0.1)) types.push('service.test');
  }
  kindCounts[kind]++;
  return { id: `wh_${i.toString(36).padStart(5, '0')}`, event_types: types, filter: FilterJson.parse(filter), active: chance(0.95) };
}

const subs = Array.from({ length: N_SUBS }, (_, i) => makeSub(i));

// ---------------------------------------------------------------------------------------------------------------
// Events
// ---------------------------------------------------------------------------------------------------------------

type Event = { type: string; data: Record<string, unknown>; t: number };
function makeFill(t: number): { e: Event; w: number } {
  const w = activeWallet();
  const c = activeMarket();
  const size = Math.round(Math.exp(Math.log(40) + 1.8 * gauss()) * 100) / 100;
  const price = Math.round((0.02 + rnd() * 0.96) * 1000) / 1000;
  const data: Record<string, unknown> = {
    trader_proxy: wallets[w]!,
    size_usdc: size,
    price,
    token_id: String(int(1, 2 ** 30)) + hex(8),
    taker_side: chance(0.55) ? 'buy' : 'sell',
    exchange_version: 'v2',
    exchange_kind: chance(0.8) ? 'ctf' : 'neg_risk',
    tx_hash: '0x' + hex(64),
    log_index: String(int(0, 400)),
  };
  if (!chance(0.02)) data.condition_id = markets[c]!;
  return { e: { type: FILL, data, t }, w };
}

const nFills = Math.round(RATE * SECONDS);
const fills: Event[] = [];
const signals: Event[] = [];
let clock = 0;
for (let i = 0; i < nFills; i++) {
  clock += -Math.log(1 - rnd()) / RATE; // Poisson arrivals
  const { e, w } = makeFill(clock);
  fills.push(e);
  const tags = walletTags.get(w);
  if (tags && (e.data.size_usdc as number) >= SMART_MONEY_MIN_USD && typeof e.data.condition_id === 'string') {
    signals.push({
      type: SIG,
      t: clock,
      data: {
        signal_type: e.data.taker_side === 'buy' ? 'large_buy' : 'exit',
        trader_proxy: e.data.trader_proxy,
        smart_money_tags: tags,
        condition_id: e.data.condition_id,
        title: 'market',
        outcome_side: 'YES',
        price: e.data.price,
        size_usdc: e.data.size_usdc,
        tx_hash: e.data.tx_hash,
      },
    });
  }
}
// signals are rare (~0.1% of fills at 10x); pad with synthetic ones from tagged wallets so the row has a sample
const tagged = [...walletTags.keys()];
while (signals.length < 2000) {
  const w = pick(tagged);
  signals.push({
    type: SIG,
    t: 0,
    data: {
      signal_type: pick(SIGNAL_TYPES),
      trader_proxy: wallets[w]!,
      smart_money_tags: walletTags.get(w)!,
      condition_id: markets[activeMarket()]!,
      price: 0.5,
      size_usdc: SMART_MONEY_MIN_USD * Math.exp(rnd() * 3),
    },
  });
}
const resolutions: Event[] = Array.from({ length: 500 }, () => ({
  type: RES,
  t: 0,
  data: { condition_id: markets[int(0, N_MARKETS - 1)]!, question_id: '0x' + hex(64), title: 't', slug: 's', winner_outcome: 'YES', winner_index: 0, outcome_slot_count: 2 },
}));

// ---------------------------------------------------------------------------------------------------------------
// Build
// ---------------------------------------------------------------------------------------------------------------

const before = mem();
const tb = performance.now();
const index = new SubscriptionIndex();
for (const s of subs) index.add(s);
const buildMs = performance.now() - tb;
// the first match ranks every id once (sorts 100k ids), see SubscriptionIndex
const tr = performance.now();
index.match(RES, resolutions[0]!.data);
const firstMatchMs = performance.now() - tr;
const after = mem();

// warm-up (JIT) on a part of the stream, then the measured replay
for (const e of fills.slice(0, 5000)) index.match(e.type, e.data);

function pct(sorted: Float64Array, p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!;
}

interface Replay {
  label: string;
  n: number;
  p50: number;
  p99: number;
  max: number;
  busyMs: number;
  matchesPerEvent: number;
  candidatesPerEvent: number;
  maxMatches: number;
}
async function replay(label: string, events: Event[], realtime: boolean): Promise<Replay> {
  const lat = new Float64Array(events.length);
  let matches = 0;
  let candidates = 0;
  let maxMatches = 0;
  const t0Wall = performance.now();
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!;
    if (realtime) {
      const due = t0Wall + e.t * 1000;
      const wait = due - performance.now();
      if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    }
    const t0 = performance.now();
    const ids = index.match(e.type, e.data);
    lat[i] = performance.now() - t0;
    matches += ids.length;
    candidates += index.lastCandidates;
    if (ids.length > maxMatches) maxMatches = ids.length;
  }
  const busyMs = lat.reduce((a, b) => a + b, 0);
  lat.sort();
  return {
    label,
    n: events.length,
    p50: pct(lat, 0.5),
    p99: pct(lat, 0.99),
    max: lat[lat.length - 1]!,
    busyMs,
    matchesPerEvent: matches / events.length,
    candidatesPerEvent: candidates / events.length,
    maxMatches,
  };
}

const paced = await replay(`trader.fill @${RATE}/s x ${SECONDS}s (${values.realtime ? 'wall clock' : 'simulated clock'})`, fills, !!values.realtime);
const sig = await replay('signal.smart_money', signals, false);
const res = await replay('market.resolved', resolutions, false);

// flat out: as fast as possible over the fill stream, for at least 3 s
let done = 0;
const tf = performance.now();
while (performance.now() - tf < 3000) {
  for (const e of fills) index.match(e.type, e.data);
  done += fills.length;
}
const flatRate = done / ((performance.now() - tf) / 1000);

// brute force on a sample, which also checks the index at full scale
const sample = [...fills.slice(0, 150), ...signals.slice(0, 25), ...resolutions.slice(0, 25)];
let bruteMs = 0;
let mismatches = 0;
for (const e of sample) {
  const t0 = performance.now();
  const want: string[] = [];
  for (const s of subs) if (s.active && s.event_types.includes(e.type) && matchesFilter(s.filter, e.type, e.data)) want.push(s.id);
  want.sort();
  bruteMs += performance.now() - t0;
  const got = index.match(e.type, e.data);
  if (got.length !== want.length || got.some((g, i) => g !== want[i])) mismatches++;
}

// ---------------------------------------------------------------------------------------------------------------
// Report
// ---------------------------------------------------------------------------------------------------------------

const us = (ms: number) => (ms * 1000).toFixed(1);
const mb = (b: number) => (b / 2 ** 20).toFixed(1);
const kinds = Object.entries(kindCounts)
  .map(([k, n]) => `${k} ${((100 * n) / N_SUBS).toFixed(1)}%`)
  .join(', ');
console.log(`subscriptions: ${N_SUBS.toLocaleString('en-US')} (${index.activeSize.toLocaleString('en-US')} active; ${kinds})`);
console.log(`event types: ${EVENT_TYPES.join(', ')}; wallets ${N_WALLETS.toLocaleString('en-US')}, markets ${N_MARKETS.toLocaleString('en-US')}, seed ${SEED}`);
console.log(`index build: ${buildMs.toFixed(0)} ms + first match (ranks all ids) ${firstMatchMs.toFixed(0)} ms; index memory (heap retained after GC): ${mb(after.heap - before.heap)} MiB`);
// RSS barely moves while the index is built: the heap reuses pages freed by the generator's garbage
console.log(`process RSS: ${mb(start.rss)} MiB at start, ${mb(before.rss)} MiB with subscriptions and event streams generated, ${mb(after.rss)} MiB with the index built; at exit ${mb(process.memoryUsage().rss)} MiB`);
console.log('');
const rows = [paced, sig, res].map((r) => ({
  stream: r.label,
  events: r.n,
  'p50 µs': us(r.p50),
  'p99 µs': us(r.p99),
  'max µs': us(r.max),
  'matches/ev': r.matchesPerEvent.toFixed(1),
  'max matches': r.maxMatches,
  'candidates/ev': r.candidatesPerEvent.toFixed(1),
}));
const cols = Object.keys(rows[0]!) as (keyof (typeof rows)[number])[];
const width = cols.map((c) => Math.max(c.length, ...rows.map((r) => String(r[c]).length)));
const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(width[i]!) : c.padStart(width[i]!))).join('  ');
console.log(line(cols));
console.log(line(width.map((w) => '-'.repeat(w))));
for (const r of rows) console.log(line(cols.map((c) => String(r[c]))));
console.log('');
console.log(`paced replay: ${paced.n.toLocaleString('en-US')} fills over ${SECONDS} s (${values.realtime ? 'wall clock' : 'simulated'}), ${RATE}/s sustained; match time ${paced.busyMs.toFixed(0)} ms = ${((100 * paced.busyMs) / (SECONDS * 1000)).toFixed(2)}% of one core`);
console.log(`flat out: ${Math.round(flatRate).toLocaleString('en-US')} fills/s sustained over ${done.toLocaleString('en-US')} matches (${(flatRate / RATE).toFixed(0)}x the ${RATE}/s target)`);
console.log(`brute force (matchesFilter over all subscriptions): ${us(bruteMs / sample.length)} µs/event on ${sample.length} events; index vs brute force mismatches: ${mismatches}`);
if (mismatches > 0) process.exitCode = 1;
