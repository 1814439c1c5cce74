/**
 * Synthetic markets: questions, categories, volumes, liquidity and lifetimes sampled from the real market export,
 * grouped into events and neg-risk groups, each with a latent true-probability path and a mid that tracks it.
 *
 * The latent probability is a Bayesian posterior: the outcome is drawn first, then every hour the public learns a
 * noisy signal about it, so latent(t) = P(outcome | signals up to t) exactly. It drifts, it is calibrated by
 * construction, and resolution is "drawn from the latent probability" in law. The mid lags it by one hour with a
 * little microstructure noise. Skill is then information timing: a sharp sees latent(t + lead), more than the mid.
 */
import { keccak256, encodePacked, toHex } from 'viem';
import { AliasTable, Rng } from './rng.ts';
import { INVALID_SHARE, SECONDS_PER_DAY, SECONDS_PER_HOUR, marketsPerDay, type VenueOptions } from './config.ts';

export interface RealMarketLike {
  question: string;
  category: string;
  volume: number;
  liquidity: number;
  endDate: string | Date | null;
  createdDate: string | Date | null;
}

export interface GenEvent {
  eventId: number;
  slug: string;
  canonicalSlug: string;
  title: string;
  category: string;
  negRisk: boolean;
  negRiskMarketId: string | null;
  createdS: number;
  endS: number;
}

export interface GenMarket {
  marketId: number;
  eventId: number;
  /** index into groups, -1 for a standard market */
  groupId: number;
  question: string;
  slug: string;
  category: string;
  conditionId: string;
  questionId: string;
  yesTokenId: string;
  noTokenId: string;
  negRiskMarketId: string | null;
  openS: number;
  /** scheduled close = end_date; the last fill is before closeS - FILL_CUTOFF_S */
  closeS: number;
  /** resolution time, or 0 when the market has not resolved by the venue end */
  resolvedS: number;
  /** 0 YES, 1 NO, -1 INVALID (pays 0.5 / 0.5) */
  winner: number;
  halfSpread: number;
  liquidity: number;
  feeRate: number;
  volumeWeight: number;
  reportedVolume: number;
  /** latent P(YES) per hour from openS */
  latent: Float32Array;
  /** mid of the YES token per hour from openS */
  mid: Float32Array;
}

export interface GenGroup {
  groupId: number;
  negRiskMarketId: string;
  marketIds: number[];
}

export const FILL_CUTOFF_S = 120;

export interface VenueMarkets {
  startS: number;
  endS: number;
  days: number;
  events: GenEvent[];
  markets: GenMarket[];
  groups: GenGroup[];
  categories: string[];
  /** per venue day: markets tradable that day, volume-weighted */
  day: { ids: Int32Array; table: AliasTable }[];
  /** per venue day and category index */
  dayCategory: { ids: Int32Array; table: AliasTable }[][];
  /** per venue day: markets that open that day */
  opening: { ids: Int32Array; table: AliasTable }[];
}

const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));
const logit = (p: number) => Math.log(p / (1 - p));

export function slugify(s: string): string {
  return s
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 60);
}

function hash32(seed: number, ...parts: (string | number)[]): `0x${string}` {
  return keccak256(toHex(`${seed}:${parts.join(':')}`));
}

/** A 256-bit token id as the venue writes it: an unsigned decimal string. */
function tokenId(seed: number, marketId: number, outcome: number): string {
  return BigInt(hash32(seed, 'token', marketId, outcome)).toString(10);
}

function toSeconds(d: string | Date | null): number | null {
  if (d === null) return null;
  const ms = d instanceof Date ? d.getTime() : Date.parse(d);
  return Number.isFinite(ms) ? Math.floor(ms / 1000) : null;
}

/** Market lifetime in hours from a real row, clamped to what a venue window can show. */
function lifetimeHours(row: RealMarketLike, rng: Rng): number {
  const c = toSeconds(row.createdDate);
  const e = toSeconds(row.endDate);
  let h = c !== null && e !== null ? (e - c) / SECONDS_PER_HOUR : rng.logNormal(250, 1.5);
  if (!(h > 0)) h = rng.logNormal(250, 1.5);
  return Math.max(6, Math.min(24 * 120, h));
}

interface Path {
  latent: Float32Array[];
  winner: number;
}

/** Posterior paths for one binary question or a neg-risk group of k mutually exclusive questions. */
function simulatePaths(rng: Rng, k: number, hours: number): Path {
  const info = rng.uniform(3, 14); // total log-likelihood information over the lifetime
  const delta = Math.sqrt(info / hours);
  const latent = Array.from({ length: k }, () => new Float32Array(hours));
  if (k === 1) {
    const p0 = Math.min(0.97, Math.max(0.03, sigmoid(1.3 * rng.normal())));
    const yes = rng.next() < p0;
    const sign = yes ? 1 : -1;
    let l = logit(p0);
    const row = latent[0] as Float32Array;
    for (let h = 0; h < hours; h++) {
      row[h] = sigmoid(l);
      l += delta * (sign * delta / 2 + rng.normal());
    }
    return { latent, winner: yes ? 0 : 1 };
  }
  const logw = Array.from({ length: k }, () => 1.2 * rng.normal());
  const z = logw.reduce((a, b) => a + Math.exp(b), 0);
  const p0 = logw.map((l) => Math.exp(l) / z);
  let u = rng.next();
  let winner = k - 1;
  for (let i = 0; i < k; i++) {
    u -= p0[i] as number;
    if (u < 0) {
      winner = i;
      break;
    }
  }
  const acc = p0.map((p) => Math.log(p));
  for (let h = 0; h < hours; h++) {
    const m = Math.max(...acc);
    let s = 0;
    for (let i = 0; i < k; i++) s += Math.exp((acc[i] as number) - m);
    for (let i = 0; i < k; i++) (latent[i] as Float32Array)[h] = Math.exp((acc[i] as number) - m) / s;
    for (let i = 0; i < k; i++) acc[i] = (acc[i] as number) + delta * ((i === winner ? delta : 0) + rng.normal());
  }
  return { latent, winner };
}

/** The mid lags the latent by an hour and carries persistent microstructure noise. */
function midPath(latent: Float32Array, rng: Rng): Float32Array {
  const mid = new Float32Array(latent.length);
  let noise = 0;
  for (let h = 0; h < latent.length; h++) {
    noise = 0.7 * noise + 0.05 * rng.normal();
    const base = latent[Math.max(0, h - 1)] as number;
    const m = sigmoid(logit(Math.min(0.9995, Math.max(0.0005, base))) + noise);
    mid[h] = Math.round(Math.min(0.999, Math.max(0.001, m)) * 10000) / 10000;
  }
  return mid;
}

export function buildMarkets(opts: VenueOptions, real: RealMarketLike[], onProgress?: (done: number, total: number) => void): VenueMarkets {
  const endS = Math.floor(Date.parse(opts.end) / 1000);
  const startS = endS - opts.days * SECONDS_PER_DAY;
  const rng = new Rng(opts.seed, 0x6d6b74); // 'mkt'
  const usable = real.filter((r) => r.question && r.category && r.volume > 0);
  const byCategory = new Map<string, RealMarketLike[]>();
  for (const r of usable) {
    const list = byCategory.get(r.category) ?? [];
    list.push(r);
    byCategory.set(r.category, list);
  }
  const categories = [...byCategory.keys()].sort();
  const leadInDays = 20; // markets opened before the window still trade in it
  const target = marketsPerDay(opts.wallets) * (opts.days + leadInDays);

  const events: GenEvent[] = [];
  const markets: GenMarket[] = [];
  const groups: GenGroup[] = [];
  let eventId = 1000;
  while (markets.length < target) {
    const first = rng.pick(usable);
    const category = first.category;
    const sameCat = byCategory.get(category) as RealMarketLike[];
    const negRisk = rng.bool(0.15);
    const k = negRisk ? 3 + rng.int(6) : rng.bool(0.8) ? 1 : 2 + rng.int(2);
    const rows = [first, ...Array.from({ length: k - 1 }, () => rng.pick(sameCat))];
    const hours = Math.ceil(lifetimeHours(first, rng));
    const openS = startS - leadInDays * SECONDS_PER_DAY + rng.int((opts.days + leadInDays) * SECONDS_PER_DAY - 6 * SECONDS_PER_HOUR);
    const closeS = openS + hours * SECONDS_PER_HOUR;
    const resolvedS = closeS < endS ? closeS + 600 + rng.int(6 * SECONDS_PER_HOUR) : 0;
    eventId += 1 + rng.int(5);
    const baseSlug = slugify(first.question) || 'market';
    const slug = `${baseSlug}-${eventId}`;
    // A few sports fixtures list their extra questions under a second event that shares the canonical slug.
    const fixtureVariant = category === 'sports' && k > 1 && !negRisk && rng.bool(0.3);
    const groupId = negRisk ? groups.length : -1;
    const negRiskMarketId = negRisk ? hash32(opts.seed, 'negrisk', groupId) : null;
    const title = negRisk ? `${first.question.replace(/\?$/, '')} (${k} outcomes)` : first.question;
    events.push({ eventId, slug, canonicalSlug: slug, title, category, negRisk, negRiskMarketId, createdS: openS, endS: closeS });
    const mainEventId = eventId;
    let variantEventId = eventId;
    if (fixtureVariant) {
      eventId += 1;
      variantEventId = eventId;
      events.push({ eventId, slug: `${slug}-more-markets`, canonicalSlug: slug, title: `${title} - more markets`, category, negRisk: false, negRiskMarketId: null, createdS: openS, endS: closeS });
    }
    const paths = negRisk ? simulatePaths(rng, k, hours) : null;
    const group: GenGroup | null = negRisk ? { groupId, negRiskMarketId: negRiskMarketId as string, marketIds: [] } : null;
    for (let i = 0; i < k; i++) {
      const row = rows[i] as RealMarketLike;
      const marketId = markets.length;
      const own = paths ?? simulatePaths(rng, 1, hours);
      const latent = (paths ? own.latent[i] : own.latent[0]) as Float32Array;
      let winner: number;
      if (paths) winner = own.winner === i ? 0 : 1;
      else winner = rng.bool(INVALID_SHARE) ? -1 : own.winner;
      const liquidity = Math.max(500, row.liquidity || rng.logNormal(100_000, 1.5));
      const question = negRisk ? `${row.question.replace(/\?$/, '')} [option ${i + 1}]?` : row.question;
      markets.push({
        marketId,
        eventId: i > 0 ? variantEventId : mainEventId,
        groupId,
        question,
        slug: `${slugify(question) || 'q'}-${marketId}`,
        category,
        conditionId: hash32(opts.seed, 'condition', marketId),
        questionId: hash32(opts.seed, 'question', marketId),
        yesTokenId: tokenId(opts.seed, marketId, 0),
        noTokenId: tokenId(opts.seed, marketId, 1),
        negRiskMarketId,
        openS,
        closeS,
        resolvedS: resolvedS > 0 && resolvedS < endS ? resolvedS : 0,
        winner,
        halfSpread: Math.min(0.03, Math.max(0.002, 1.5 / Math.sqrt(liquidity))),
        liquidity,
        feeRate: rng.bool(0.15) ? (rng.bool(0.5) ? 0.001 : 0.002) : 0,
        volumeWeight: Math.pow(Math.max(1, row.volume), 0.7),
        reportedVolume: row.volume,
        latent,
        mid: midPath(latent, rng),
      });
      group?.marketIds.push(marketId);
    }
    if (group) groups.push(group);
    onProgress?.(Math.min(markets.length, target), target);
  }
  // neg-risk groups never void: their winner was drawn from the group path above

  const days = opts.days;
  const catIndex = new Map(categories.map((c, i) => [c, i]));
  const day: VenueMarkets['day'] = [];
  const dayCategory: VenueMarkets['dayCategory'] = [];
  const opening: VenueMarkets['opening'] = [];
  for (let d = 0; d < days; d++) {
    const d0 = startS + d * SECONDS_PER_DAY;
    const d1 = d0 + SECONDS_PER_DAY;
    const open = markets.filter((m) => m.openS < d1 && m.closeS - FILL_CUTOFF_S > d0 && (m.resolvedS === 0 || m.resolvedS > d0));
    const ids = Int32Array.from(open.map((m) => m.marketId));
    day.push({ ids, table: new AliasTable(open.map((m) => m.volumeWeight)) });
    const perCat = categories.map(() => [] as GenMarket[]);
    for (const m of open) perCat[catIndex.get(m.category) as number]!.push(m);
    dayCategory.push(perCat.map((list) => ({ ids: Int32Array.from(list.map((m) => m.marketId)), table: new AliasTable(list.map((m) => m.volumeWeight)) })));
    const opens = markets.filter((m) => m.openS >= d0 && m.openS < d1);
    opening.push({ ids: Int32Array.from(opens.map((m) => m.marketId)), table: new AliasTable(opens.map((m) => m.volumeWeight)) });
  }
  return { startS, endS, days, events, markets, groups, categories, day, dayCategory, opening };
}

/** Hour index of time t on a market's paths, clamped to the path. */
export function hourIndex(m: GenMarket, t: number): number {
  const h = Math.floor((t - m.openS) / SECONDS_PER_HOUR);
  return h < 0 ? 0 : h >= m.latent.length ? m.latent.length - 1 : h;
}

/** Latent probability that `outcome` (0 YES, 1 NO) wins, at time t. */
export function latentAt(m: GenMarket, outcome: number, t: number): number {
  const p = m.latent[hourIndex(m, t)] as number;
  return outcome === 0 ? p : 1 - p;
}

export function midAt(m: GenMarket, outcome: number, t: number): number {
  const p = m.mid[hourIndex(m, t)] as number;
  return outcome === 0 ? p : Math.round((1 - p) * 10000) / 10000;
}

/** Last moment a fill may happen on this market. */
export function lastFillS(m: GenMarket, venueEndS: number): number {
  return Math.min(m.closeS - FILL_CUTOFF_S, venueEndS - 1);
}
