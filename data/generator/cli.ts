/**
 * npm run venue:generate -- --wallets N --days D --seed S [--out DIR] [--end ISO]
 * Writes DIR/venue/*.parquet, DIR/truth/*.parquet, DIR/truth/summary.json and DIR/manifest.json.
 */
import { parseArgs } from 'node:util';
import { resolve } from 'node:path';
import { z } from 'zod';
import { progressBar } from '../progress.ts';
import { DEFAULT_END } from './config.ts';
import { DEMO_VENUE, REAL_MARKETS_CSV } from './defaults.ts';
import { generateVenue } from './index.ts';

const Args = z.object({
  wallets: z.coerce.number().int().min(50).max(10_000_000).default(DEMO_VENUE.wallets),
  days: z.coerce.number().int().min(2).max(730).default(DEMO_VENUE.days),
  seed: z.coerce.number().int().min(0).max(2 ** 31 - 1).default(DEMO_VENUE.seed),
  end: z.string().datetime({ offset: true }).default(DEFAULT_END),
  out: z.string().default(''),
  'real-markets': z.string().default(REAL_MARKETS_CSV),
});

const { values } = parseArgs({
  options: { wallets: { type: 'string' }, days: { type: 'string' }, seed: { type: 'string' }, end: { type: 'string' }, out: { type: 'string' }, 'real-markets': { type: 'string' } },
});
const parsed = Args.safeParse(values);
if (!parsed.success) {
  console.error(`venue:generate: ${parsed.error.issues.map((i) => `--${i.path.join('.')}: ${i.message}`).join('; ')}`);
  process.exit(2);
}
const a = parsed.data;
const out = resolve(a.out || `var/venue-w${a.wallets}-d${a.days}-s${a.seed}`);
const bar = progressBar('venue');
const result = await generateVenue({ wallets: a.wallets, days: a.days, seed: a.seed, end: a.end, realMarketsCsv: a['real-markets'] }, out, bar.update);
bar.stop();
console.log(JSON.stringify({ out: result.outDir, seconds: Number(result.seconds.toFixed(1)), peak_rss_mb: result.peakRssMb, counts: result.counts }, null, 2));
