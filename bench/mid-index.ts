/**
 * Benchmark: mid lookups as the position stream makes them (core/analytics/mid-index.ts). The full-scale venue has
 * ~70k tokens with ~570 mids each (40M); the stream visits positions in wallet order, so nearly every position is on
 * another token, and a fill looks up its token's mid at its time, 24 h before (contrarian), 1 h and 24 h after
 * (alpha). Prints nanoseconds per lookup: positions on random tokens (the stream's case) and sorted by token (the
 * cache-friendly bound).
 *   npm run bench:mid-index -- [--tokens 70000] [--mids 570] [--positions 2000000]
 */
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { MidIndex } from '../core/analytics/mid-index.ts';

const { values } = parseArgs({ options: { tokens: { type: 'string' }, mids: { type: 'string' }, positions: { type: 'string' } } });
const a = z
  .object({ tokens: z.coerce.number().int().positive().default(70_000), mids: z.coerce.number().int().positive().default(570), positions: z.coerce.number().int().positive().default(2_000_000) })
  .parse({ tokens: values.tokens, mids: values.mids, positions: values.positions });

const DAY = 86_400_000_000;
const H = 3_600_000_000;
const t0 = 20_000 * DAY;
const span = 120 * DAY;
let seed = 1;
const rnd = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;

// each token: mids from a random start over the rest of the 120 days, at random gaps (0.2x to 1.8x the mean count)
const mids = new MidIndex();
const tBuild = performance.now();
for (let token = 0; token < a.tokens; token++) {
  const n = Math.max(1, Math.round(a.mids * (0.2 + 1.6 * rnd())));
  const start = t0 + rnd() * span * 0.5;
  let t = start;
  for (let k = 0; k < n; k++) {
    t += ((t0 + span - start) / n) * 2 * rnd();
    mids.add(token >> 1, token & 1, Math.round(t), rnd());
  }
}
const buildSeconds = (performance.now() - tBuild) / 1000;

// each position: a token and two fills up to 3 days apart
const tokens = new Int32Array(a.positions);
const fills = new Float64Array(2 * a.positions);
for (let p = 0; p < a.positions; p++) {
  tokens[p] = Math.floor(rnd() * a.tokens);
  fills[2 * p] = t0 + rnd() * span;
  fills[2 * p + 1] = fills[2 * p]! + rnd() * 3 * DAY;
}
const cursors = [mids.cursor(-1), mids.cursor(-1), mids.cursor(-1), mids.cursor(-1)] as const;
const run = (order: Int32Array): { ns: number; checksum: number } => {
  let sum = 0;
  const t = performance.now();
  for (let p = 0; p < a.positions; p++) {
    for (const c of cursors) mids.retarget(c, order[p]!);
    for (let f = 0; f < 2; f++) {
      const ts = fills[2 * p + f]!;
      sum += (cursors[0].at(ts - 24 * H) || 0) + (cursors[1].at(ts) || 0) + (cursors[2].at(ts + H) || 0) + (cursors[3].at(ts + 24 * H) || 0);
    }
  }
  return { ns: Math.round(((performance.now() - t) * 1e6) / (8 * a.positions)), checksum: Number(sum.toFixed(3)) };
};
const best = (order: Int32Array) => {
  const runs = [run(order), run(order), run(order)];
  return { ns_per_lookup: Math.min(...runs.map((r) => r.ns)), checksum: runs[0]!.checksum };
};
const random = best(tokens);
const sorted = best(Int32Array.from(tokens).sort());
console.log(
  JSON.stringify(
    { bench: 'mid-index', tokens: a.tokens, mids: mids.size, positions: a.positions, lookups_per_run: 8 * a.positions, load_seconds: Number(buildSeconds.toFixed(2)), random_tokens: random, sorted_tokens: sorted },
    null,
    2,
  ),
);
