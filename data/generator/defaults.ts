/** The real market export shipped with the repository (CC-BY-4.0, see data/real-markets/README.md). */
export { REAL_MARKETS_CSV } from '../ingest/real-markets.ts';

/** Demo scale: what `npm start` builds on first run (about 20 seconds on 2 cores). */
export const DEMO_VENUE = { wallets: 100_000, days: 120, seed: 42 } as const;
