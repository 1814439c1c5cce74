/**
 * Wallet population: archetypes with known true skill, sybil clusters, multi-wallet owners, copy-trader leaders.
 * Archetypes are assigned over a seeded permutation so that wallet ids carry no information.
 */
import {
  ARCHETYPES,
  ARCHETYPE_CODE,
  ARCHETYPE_SHARE,
  MULTI_OWNER_SHARE,
  NEVER_REDEEM_SHARE,
  SECONDS_PER_DAY,
  SECONDS_PER_HOUR,
  SYBIL_SHARE,
  marketMakerCount,
  type Archetype,
  type VenueOptions,
} from './config.ts';
import { Rng } from './rng.ts';

export interface WalletPopulation {
  n: number;
  archetype: Uint8Array;
  /** hours of information lead over the public (0: none) */
  leadHours: Float32Array;
  /** bitmask over category indexes a sharp specialises in (0: all) */
  categoryMask: Uint32Array;
  clusterId: Int32Array;
  ownerId: Int32Array;
  leaderId: Int32Array;
  neverRedeems: Uint8Array;
  activeStartS: Int32Array;
  activeSpanS: Int32Array;
  marketMakers: Int32Array;
  /** cluster id -> member wallet ids */
  clusters: number[][];
  /** cluster id -> lead hours of its controller */
  clusterLead: Float32Array;
}

export function archetypeOf(pop: WalletPopulation, w: number): Archetype {
  return ARCHETYPES[pop.archetype[w] as number] as Archetype;
}

export function buildWallets(opts: VenueOptions, startS: number, endS: number, categoryCount: number): WalletPopulation {
  const n = opts.wallets;
  const rng = new Rng(opts.seed, 0x77616c); // 'wal'
  const pop: WalletPopulation = {
    n,
    archetype: new Uint8Array(n),
    leadHours: new Float32Array(n),
    categoryMask: new Uint32Array(n),
    clusterId: new Int32Array(n).fill(-1),
    ownerId: new Int32Array(n).fill(-1),
    leaderId: new Int32Array(n).fill(-1),
    neverRedeems: new Uint8Array(n),
    activeStartS: new Int32Array(n),
    activeSpanS: new Int32Array(n),
    marketMakers: new Int32Array(0),
    clusters: [],
    clusterLead: new Float32Array(0),
  };
  const order = rng.shuffle(Array.from({ length: n }, (_, i) => i));
  let cursor = 0;
  const take = (count: number) => {
    const ids = order.slice(cursor, cursor + count);
    cursor += ids.length;
    return ids;
  };

  const mms = take(Math.min(marketMakerCount(n), Math.max(1, Math.floor(n / 10))));
  for (const w of mms) pop.archetype[w] = ARCHETYPE_CODE.market_maker;
  pop.marketMakers = Int32Array.from(mms);

  // Sybil clusters: 3-8 wallets of one controller trading in lockstep.
  let sybilBudget = Math.floor(n * SYBIL_SHARE);
  const clusterLead: number[] = [];
  while (sybilBudget >= 3) {
    const size = Math.min(sybilBudget, 3 + rng.int(6));
    const members = take(size);
    const id = pop.clusters.length;
    pop.clusters.push(members);
    clusterLead.push(rng.bool(0.5) ? rng.uniform(2, 12) : 0);
    for (const w of members) {
      pop.archetype[w] = ARCHETYPE_CODE.sybil;
      pop.clusterId[w] = id;
    }
    sybilBudget -= size;
  }
  pop.clusterLead = Float32Array.from(clusterLead);

  const rest = order.slice(cursor);
  const shares = Object.entries(ARCHETYPE_SHARE) as [Archetype, number][];
  const total = shares.reduce((a, [, s]) => a + s, 0);
  let i = 0;
  for (const [arch, share] of shares) {
    const count = arch === 'noise' ? 0 : Math.max(1, Math.round((rest.length * share) / total));
    for (let k = 0; k < count && i < rest.length; k++, i++) pop.archetype[rest[i] as number] = ARCHETYPE_CODE[arch];
  }
  for (; i < rest.length; i++) pop.archetype[rest[i] as number] = ARCHETYPE_CODE.noise;

  const venueSpan = endS - startS;
  for (let w = 0; w < n; w++) {
    const arch = ARCHETYPES[pop.archetype[w] as number] as Archetype;
    const r = new Rng(opts.seed, 0x61747472, w); // 'attr'
    if (arch === 'sharp') {
      pop.leadHours[w] = r.uniform(3, 24);
      // one to three categories; a fifth of sharps are generalists
      if (!r.bool(0.2)) {
        const k = 1 + r.int(3);
        for (let j = 0; j < k; j++) pop.categoryMask[w] = (pop.categoryMask[w] as number) | (1 << r.int(Math.min(categoryCount, 31)));
      }
    } else if (arch === 'whale') {
      pop.leadHours[w] = r.bool(0.4) ? r.uniform(1, 12) : 0;
    } else if (arch === 'sybil') {
      pop.leadHours[w] = pop.clusterLead[pop.clusterId[w] as number] as number;
    }
    if (arch !== 'market_maker') pop.neverRedeems[w] = r.bool(NEVER_REDEEM_SHARE) ? 1 : 0;
    if (arch === 'noise') {
      // most wallets trade for a short spell
      const span = Math.min(venueSpan, Math.max(SECONDS_PER_HOUR, Math.floor(r.logNormal(5 * SECONDS_PER_DAY, 1.2))));
      pop.activeSpanS[w] = span;
      pop.activeStartS[w] = startS + r.int(Math.max(1, venueSpan - span));
    } else {
      const span = Math.floor(venueSpan * r.uniform(0.5, 1));
      pop.activeSpanS[w] = span;
      pop.activeStartS[w] = startS + r.int(Math.max(1, venueSpan - span));
    }
  }

  // Users owning several wallets (same person, same style, trading independently).
  const candidates = rest.filter((w) => {
    const a = ARCHETYPES[pop.archetype[w] as number];
    return a === 'noise' || a === 'sharp' || a === 'whale' || a === 'favourite_buyer';
  });
  let ownerBudget = Math.floor(candidates.length * MULTI_OWNER_SHARE);
  let owner = 0;
  let c = 0;
  while (ownerBudget >= 2 && c + 1 < candidates.length) {
    const size = Math.min(ownerBudget, 2 + rng.int(3));
    const members = candidates.slice(c, c + size);
    c += size;
    ownerBudget -= size;
    const lead = members[0] as number;
    for (const w of members) {
      pop.ownerId[w] = owner;
      pop.archetype[w] = pop.archetype[lead] as number;
      pop.leadHours[w] = pop.leadHours[lead] as number;
      pop.categoryMask[w] = pop.categoryMask[lead] as number;
    }
    owner++;
  }

  // Copy-traders follow a sharp (mostly) or a whale.
  const sharps: number[] = [];
  const whales: number[] = [];
  for (let w = 0; w < n; w++) {
    if (pop.archetype[w] === ARCHETYPE_CODE.sharp) sharps.push(w);
    else if (pop.archetype[w] === ARCHETYPE_CODE.whale) whales.push(w);
  }
  for (let w = 0; w < n; w++) {
    if (pop.archetype[w] !== ARCHETYPE_CODE.copy_trader) continue;
    const pool = whales.length && (rng.bool(0.3) || !sharps.length) ? whales : sharps;
    if (pool.length) pop.leaderId[w] = rng.pick(pool);
    else pop.archetype[w] = ARCHETYPE_CODE.noise;
  }
  return pop;
}
