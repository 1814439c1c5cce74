/**
 * Benchmark: build the synthetic venue at full scale (default 2.8M wallets, 120 days, >= 100M fills) and print
 * wall time, peak RSS (this process, which includes DuckDB), row counts and Parquet sizes.
 *   npm run bench:venue -- [--wallets N] [--days D] [--seed S] [--out DIR] [--keep]
 */
import { parseArgs } from 'node:util';
import { readdirSync, statSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { generateVenue } from '../data/generator/index.ts';
import { DEFAULT_END } from '../data/generator/config.ts';
import { REAL_MARKETS_CSV } from '../data/generator/defaults.ts';
import { progressBar } from '../data/progress.ts';

const { values } = parseArgs({ options: { wallets: { type: 'string' }, days: { type: 'string' }, seed: { type: 'string' }, out: { type: 'string' }, keep: { type: 'boolean' } } });
const wallets = Number(values.wallets ?? 2_800_000);
const days = Number(values.days ?? 120);
const seed = Number(values.seed ?? 1);
const out = resolve(values.out ?? `var/bench-venue-w${wallets}`);
const phases: Record<string, number> = {};
let phase = '';
let phaseStart = performance.now();
const bar = progressBar('bench');
const r = await generateVenue({ wallets, days, seed, end: DEFAULT_END, realMarketsCsv: REAL_MARKETS_CSV }, out, (p, d, t) => {
  if (p !== phase) {
    if (phase) phases[phase] = (performance.now() - phaseStart) / 1000;
    phase = p;
    phaseStart = performance.now();
  }
  bar.update(p, d, t);
});
phases[phase] = (performance.now() - phaseStart) / 1000;
bar.stop();
const sizes = Object.fromEntries(readdirSync(join(out, 'venue')).map((f) => [f, `${(statSync(join(out, 'venue', f)).size / 2 ** 20).toFixed(1)} MiB`]));
console.log(JSON.stringify({
  bench: 'venue:generate',
  wallets,
  days,
  seed,
  seconds: Number(r.seconds.toFixed(1)),
  phase_seconds: Object.fromEntries(Object.entries(phases).map(([k, v]) => [k, Number(v.toFixed(1))])),
  peak_rss_mb: r.peakRssMb,
  counts: r.counts,
  fills_per_second: Math.round(r.counts.fills! / r.seconds),
  parquet: sizes,
}, null, 2));
if (!values.keep) await rm(out, { recursive: true, force: true });
