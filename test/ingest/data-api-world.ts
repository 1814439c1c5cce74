/**
 * A venue known only through its public formats (issue 20): Gamma market objects and data-api /trades rows, large
 * enough for the analytics to rank wallets (45 resolved markets, 5 open ones, 30 wallets, a few thousand trades).
 * Deterministic (seeded); pure: no database.
 */
import { address, h, token } from '../fixtures/ingest/world.ts';

export const AS_OF = new Date('2026-07-01T00:00:00Z');
const DAY = 86_400;
const asOfS = AS_OF.getTime() / 1000;

export interface WorldMarket {
  conditionId: string;
  slug: string;
  yes: string;
  no: string;
  /** 0 YES, 1 NO; null while open */
  winner: 0 | 1 | null;
}

export interface DataApiWorld {
  gammaMarkets: Record<string, unknown>[];
  trades: { proxyWallet: string; side: 'BUY' | 'SELL'; asset: string; conditionId: string; size: number; price: number; timestamp: number; transactionHash: string; outcomeIndex: number; name: string; pseudonym: string }[];
  wallets: string[];
  markets: WorldMarket[];
}

/** mulberry32: a small seeded PRNG, so the venue is the same on every run. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const iso = (s: number) => new Date(s * 1000).toISOString();
const round = (x: number, d: number) => Math.round(x * 10 ** d) / 10 ** d;

export function dataApiWorld(seed = 20): DataApiWorld {
  const rand = rng(seed);
  const wallets = Array.from({ length: 30 }, (_, i) => address(`data-api-world:${i}`));
  const markets: WorldMarket[] = [];
  const gammaMarkets: Record<string, unknown>[] = [];
  const trades: DataApiWorld['trades'] = [];
  let txn = 0;

  const addMarket = (k: number, open: boolean) => {
    const name = `data-api-world:${open ? 'open' : 'resolved'}:${k}`;
    const created = open ? asOfS - 30 * DAY : asOfS - 120 * DAY + k * DAY;
    const end = open ? asOfS + 180 * DAY : created + 30 * DAY;
    const winner: 0 | 1 | null = open ? null : rand() < 0.5 ? 0 : 1;
    const m: WorldMarket = { conditionId: h(`condition:${name}`), slug: `world-${open ? 'open' : 'resolved'}-${k}`, yes: token(`${name}:0`), no: token(`${name}:1`), winner };
    markets.push(m);
    gammaMarkets.push({
      id: String(700000 + markets.length),
      question: `World question ${m.slug}?`,
      slug: m.slug,
      conditionId: m.conditionId,
      questionID: h(`question:${name}`),
      clobTokenIds: JSON.stringify([m.yes, m.no]),
      outcomes: '["Yes", "No"]',
      outcomePrices: winner === null ? '["0.5", "0.5"]' : winner === 0 ? '["1", "0"]' : '["0", "1"]',
      category: k % 2 ? 'Politics' : 'Sports',
      negRisk: false,
      closed: !open,
      ...(open ? {} : { closedTime: iso(end) }),
      createdAt: iso(created),
      startDate: iso(created),
      endDate: iso(end),
      volumeNum: 1000,
      liquidityNum: open ? 50_000 : 0,
      events: [{ id: String(800000 + markets.length), slug: `world-event-${m.slug}`, title: `World event ${m.slug}`, category: k % 2 ? 'Politics' : 'Sports', creationDate: iso(created) }],
    });
    return { m, created, end };
  };

  const trade = (i: number, m: WorldMarket, outcome: 0 | 1, side: 'BUY' | 'SELL', size: number, price: number, timestamp: number) => {
    trades.push({
      proxyWallet: wallets[i]!,
      side,
      asset: outcome === 0 ? m.yes : m.no,
      conditionId: m.conditionId,
      size: round(size, 2),
      price: round(price, 3),
      timestamp: Math.floor(timestamp),
      transactionHash: h(`tx:data-api-world:${txn++}`),
      outcomeIndex: outcome,
      name: wallets[i]!,
      pseudonym: `World-Trader${i}`,
    });
  };

  // Resolved markets: the first ten wallets pick the winner 80% of the time, the rest at a coin flip.
  for (let k = 0; k < 45; k++) {
    const { m, created, end } = addMarket(k, false);
    wallets.forEach((_, i) => {
      if (rand() > 0.85) return;
      const outcome: 0 | 1 = rand() < (i < 10 ? 0.8 : 0.5) ? m.winner! : (1 - m.winner!) as 0 | 1;
      const scale = 1 + (i % 5) * 3;
      let held = 0;
      const buys = 1 + Math.floor(rand() * 3);
      for (let b = 0; b < buys; b++) {
        const size = scale * (20 + rand() * 400);
        held += round(size, 2);
        trade(i, m, outcome, 'BUY', size, 0.15 + rand() * 0.7, created + rand() * (end - created - DAY));
      }
      if (rand() < 0.2) trade(i, m, outcome, 'SELL', held / 2, 0.15 + rand() * 0.7, end - DAY + rand() * 3600);
    });
  }
  // Open markets: trading up to the as-of time, part of it in the last 24 h.
  for (let k = 0; k < 5; k++) {
    const { m, created } = addMarket(k, true);
    wallets.forEach((_, i) => {
      if (rand() > 0.6) return;
      const outcome: 0 | 1 = rand() < 0.5 ? 0 : 1;
      const n = 1 + Math.floor(rand() * 3);
      for (let b = 0; b < n; b++) {
        const recent = rand() < 0.5;
        const ts = recent ? asOfS - rand() * (DAY - 60) : created + rand() * (asOfS - created - 2 * DAY);
        trade(i, m, outcome, 'BUY', 10 + rand() * 300, 0.2 + rand() * 0.6, ts);
      }
    });
  }
  return { gammaMarkets, trades, wallets, markets };
}
