/**
 * Diagnostic: where the event loop was held. Reads a V8 CPU profile of a bench and lists every stretch of at least
 * --min-ms in which the thread never went idle, with what held it: self time (a native call, such as a synchronous
 * DuckDB call, shows as the JavaScript function that made it; "(garbage collector)" is GC) and the deepest frame of
 * this project's code on the stack. Node 20 refuses --cpu-prof in NODE_OPTIONS; the profile is written at exit:
 *   node --cpu-prof --cpu-prof-dir=var/prof --import tsx bench/freshness.ts …
 *   npx tsx bench/cpu-holds.ts var/prof/CPU.….cpuprofile [--min-ms 1000] [--top 8]
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { z } from 'zod';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

const { values, positionals } = parseArgs({ options: { 'min-ms': { type: 'string' }, top: { type: 'string' } }, allowPositionals: true });
const args = z.object({ minMs: z.coerce.number().positive().default(1000), top: z.coerce.number().int().positive().default(8) }).parse({ minMs: values['min-ms'], top: values.top });
const file = z.string().min(1, 'give the .cpuprofile file').parse(positionals[0]);
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;

const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const label = (n: ProfileNode) => {
  const f = n.callFrame;
  const where = f.url ? `${f.url.replace(/^.*\/(?=(core|data|jobs|web-api|bench|node_modules)\/)/, '')}:${f.lineNumber + 1}` : '';
  return `${f.functionName || '(anonymous)'}${where ? ` ${where}` : ''}`;
};
const idle = (n: ProfileNode) => n.callFrame.functionName === '(idle)';
const ours = (n: ProfileNode) => /\/(core|data|jobs|web-api|bench)\//.test(n.callFrame.url) && !n.callFrame.url.includes('node_modules');

// sample times (µs since the profile's start)
const times: number[] = [];
let t = 0;
for (const d of profile.timeDeltas) times.push((t += d));

interface Stretch {
  from: number;
  to: number;
  samples: number[];
}
const stretches: Stretch[] = [];
let cur: Stretch | null = null;
for (let i = 0; i < profile.samples.length; i++) {
  const n = byId.get(profile.samples[i]!)!;
  if (idle(n)) {
    if (cur && (cur.to - cur.from) / 1000 >= args.minMs) stretches.push(cur);
    cur = null;
    continue;
  }
  if (!cur) cur = { from: times[i]!, to: times[i]!, samples: [] };
  cur.to = times[i + 1] ?? times[i]!;
  cur.samples.push(i);
}
if (cur && (cur.to - cur.from) / 1000 >= args.minMs) stretches.push(cur);

const top = (m: Map<string, number>) => [...m.entries()].sort((a, b) => b[1] - a[1]).slice(0, args.top);
console.log(`${file}: ${((times.at(-1) ?? 0) / 1e6).toFixed(1)} s profiled, ${stretches.length} busy stretches of >= ${args.minMs} ms`);
for (const s of stretches) {
  const self = new Map<string, number>();
  const deepestOurs = new Map<string, number>();
  for (const i of s.samples) {
    const dt = (times[i + 1] ?? times[i]!) - times[i]!;
    let n: ProfileNode | undefined = byId.get(profile.samples[i]!)!;
    self.set(label(n), (self.get(label(n)) ?? 0) + dt);
    while (n && !ours(n)) n = byId.get(parent.get(n.id) ?? -1);
    const key = n ? label(n) : '(no project frame)';
    deepestOurs.set(key, (deepestOurs.get(key) ?? 0) + dt);
  }
  console.log(`\n+${(s.from / 1e6).toFixed(1)} s: held ${((s.to - s.from) / 1e6).toFixed(2)} s`);
  console.log('  self:');
  for (const [k, v] of top(self)) console.log(`    ${(v / 1000).toFixed(0).padStart(7)} ms  ${k}`);
  console.log('  deepest project frame:');
  for (const [k, v] of top(deepestOurs)) console.log(`    ${(v / 1000).toFixed(0).padStart(7)} ms  ${k}`);
}
