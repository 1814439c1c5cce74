/**
 * npm run venue:tail -- [--db PATH] [--rate 68] [--speed 1] [--wallets N --days D --seed S]
 * Continues a generated venue in real time inside its DuckDB file (as `npm start` does), printing a line every 10 s.
 */
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { openDuckDB } from '../duckdb.ts';
import { DEFAULT_END } from '../generator/config.ts';
import { DEMO_VENUE, REAL_MARKETS_CSV } from '../generator/defaults.ts';
import { LiveTail } from './tail.ts';

const Args = z.object({
  db: z.string().default(''),
  wallets: z.coerce.number().int().min(50).default(DEMO_VENUE.wallets),
  days: z.coerce.number().int().min(2).default(DEMO_VENUE.days),
  seed: z.coerce.number().int().min(0).default(DEMO_VENUE.seed),
  rate: z.coerce.number().positive().max(10_000).default(68),
  speed: z.coerce.number().positive().max(100_000).default(1),
});
const { values } = parseArgs({
  options: { db: { type: 'string' }, wallets: { type: 'string' }, days: { type: 'string' }, seed: { type: 'string' }, rate: { type: 'string' }, speed: { type: 'string' } },
});
const parsed = Args.safeParse(values);
if (!parsed.success) {
  console.error(`venue:tail: ${parsed.error.issues.map((i) => `--${i.path.join('.')}: ${i.message}`).join('; ')}`);
  process.exit(2);
}
const a = parsed.data;
const db = a.db || `var/demo-w${a.wallets}-d${a.days}-s${a.seed}/venue.duckdb`;
const { instance, conn } = await openDuckDB({ path: db, threads: 2 });
const tail = await LiveTail.start(conn, { wallets: a.wallets, days: a.days, seed: a.seed, end: DEFAULT_END, realMarketsCsv: REAL_MARKETS_CSV }, { ratePerSecond: a.rate, speed: a.speed });
console.log(`live tail on ${db}: ~${a.rate} taker fills/s, speed x${a.speed}`);
const timer = setInterval(() => console.log(JSON.stringify(tail.stats())), 10_000);
const stop = async () => {
  clearInterval(timer);
  await tail.stop();
  conn.closeSync();
  instance.closeSync();
  process.exit(0);
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
