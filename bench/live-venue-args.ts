/**
 * The arguments the live benchmarks share (bench:freshness, bench:refresh-profile): which venue database, the
 * generator settings of its venue (the live tail continues it) and the tail's rate; and what they resolve to.
 */
import { resolve } from 'node:path';
import { z } from 'zod';
import { DEFAULT_END } from '../data/generator/config.ts';
import { DEMO_VENUE, REAL_MARKETS_CSV } from '../data/generator/defaults.ts';

export const LIVE_VENUE_ARGS = {
  db: z.string().optional(),
  wallets: z.coerce.number().int().min(50).default(DEMO_VENUE.wallets),
  days: z.coerce.number().int().min(2).default(DEMO_VENUE.days),
  seed: z.coerce.number().int().min(0).default(DEMO_VENUE.seed),
  rate: z.coerce.number().positive().max(10_000).default(68),
};

/** The venue's generator config (the tail continues it) and the database path (default: the demo venue's). */
export function liveVenue(a: { db?: string; wallets: number; days: number; seed: number }) {
  return {
    venue: { wallets: a.wallets, days: a.days, seed: a.seed, end: DEFAULT_END, realMarketsCsv: REAL_MARKETS_CSV },
    dbPath: resolve(a.db ?? `var/demo-w${a.wallets}-d${a.days}-s${a.seed}/venue.duckdb`),
  };
}
