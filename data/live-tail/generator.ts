/**
 * The live tail's behaviour, free of timers and I/O: given a venue-time interval, produce the taker fills, mids and
 * resolutions that happen in it. It continues the synthetic venue (same markets, latent paths, wallets and
 * archetype rules) past its end, so signals and webhooks downstream see the same planted skill.
 */
import { createHash } from 'node:crypto';
import { STYLE, SECONDS_PER_HOUR, type VenueOptions } from '../generator/config.ts';
import { FILL_CUTOFF_S, buildMarkets, midAt, type GenMarket, type VenueMarkets } from '../generator/markets.ts';
import { AliasTable, Rng } from '../generator/rng.ts';
import { SIDE_BUY, SIDE_SELL, VenueSimulator, decideOutcome, type VenueSink } from '../generator/trades.ts';
import { archetypeOf, buildWallets, type WalletPopulation } from '../generator/wallets.ts';
import type { RealMarketLike } from '../generator/markets.ts';

export interface TailFill {
  txHash: string;
  logIndex: number;
  ts: number;
  marketId: number;
  outcome: number;
  makerId: number;
  takerId: number;
  side: 'BUY' | 'SELL';
  price: number;
  shares: number;
  sizeUsdc: number;
  feeUsdc: number;
  exchangeKind: 'ctf' | 'neg_risk';
}

export interface TailResolution {
  marketId: number;
  winner: 'YES' | 'NO' | 'INVALID';
  winnerIndex: number;
  payoutNumerators: [number, number];
  resolvedAt: number;
  txHash: string;
}

export interface TailMid {
  marketId: number;
  outcome: number;
  ts: number;
  mid: number;
}

export interface TailBatch {
  fills: TailFill[];
  mids: TailMid[];
  resolutions: TailResolution[];
  closed: { marketId: number; closedAt: number }[];
}

const NULL_SINK: VenueSink = { fill() {}, inventory() {}, leg() {} };

export class TailGenerator {
  readonly venue: VenueMarkets;
  readonly pop: WalletPopulation;
  private readonly sim: VenueSimulator;
  private readonly rng: Rng;
  private readonly walletIds: Int32Array;
  private readonly walletTable: AliasTable;
  private open: { ids: Int32Array; table: AliasTable; hour: number } = { ids: new Int32Array(0), table: new AliasTable([]), hour: -1 };
  private seq = 0;
  private readonly holdings: { w: number; m: number; o: number; shares: number }[] = [];
  private readonly resolved = new Set<number>();
  private readonly closed = new Set<number>();
  private lastMidHour: number;

  constructor(
    readonly opts: VenueOptions,
    real: RealMarketLike[],
    /** venue time (unix seconds) the tail starts from */
    readonly fromS: number,
    /** markets already resolved / closed in storage (on resume) */
    known: { resolved: Iterable<number>; closed: Iterable<number> },
    /** distinguishes tx hashes of separate tail runs */
    readonly runId: string,
  ) {
    this.venue = buildMarkets(opts, real);
    this.pop = buildWallets(opts, this.venue.startS, this.venue.endS, this.venue.categories.length);
    this.sim = new VenueSimulator(opts.seed, this.venue, this.pop, NULL_SINK);
    this.rng = new Rng(opts.seed, 0x7461696c, fromS); // 'tail'
    for (const id of known.resolved) this.resolved.add(id);
    for (const id of known.closed) this.closed.add(id);
    const ids: number[] = [];
    const weights: number[] = [];
    for (let w = 0; w < this.pop.n; w++) {
      const arch = archetypeOf(this.pop, w);
      if (arch === 'market_maker' || arch === 'copy_trader') continue;
      ids.push(w);
      weights.push(Math.max(1, STYLE[arch].positions[0]));
    }
    this.walletIds = Int32Array.from(ids);
    this.walletTable = new AliasTable(weights);
    this.lastMidHour = Math.floor(fromS / SECONDS_PER_HOUR);
  }

  private openMarkets(t: number): { ids: Int32Array; table: AliasTable } {
    const hour = Math.floor(t / SECONDS_PER_HOUR);
    if (hour !== this.open.hour) {
      const open = this.venue.markets.filter((m) => m.openS <= t && t < m.closeS - FILL_CUTOFF_S);
      this.open = { ids: Int32Array.from(open.map((m) => m.marketId)), table: new AliasTable(open.map((m) => m.volumeWeight)), hour };
    }
    return this.open;
  }

  private txHash(): string {
    return '0x' + createHash('sha256').update(`tail:${this.opts.seed}:${this.runId}:${this.seq}`).digest('hex');
  }

  private fill(m: GenMarket, w: number, outcome: number, side: number, t: number, usd: number | null, shares: number | null): TailFill | null {
    const price = this.sim.price(m, outcome, t, side, true, usd ?? (shares as number) * midAt(m, outcome, t));
    const qty = shares ?? Math.round(((usd as number) / price) * 100) / 100;
    if (qty < 0.01) return null;
    const slot = this.rng.int(this.sim.makerSlots(m.marketId));
    const fill: TailFill = {
      txHash: this.txHash(),
      logIndex: this.seq % 409,
      ts: t,
      marketId: m.marketId,
      outcome,
      makerId: this.sim.makerFor(m.marketId, slot),
      takerId: w,
      side: side === SIDE_BUY ? 'BUY' : 'SELL',
      price,
      shares: qty,
      sizeUsdc: Math.round(price * qty * 1e6) / 1e6,
      feeUsdc: Math.round(m.feeRate * Math.min(price, 1 - price) * qty * 1e6) / 1e6,
      exchangeKind: m.groupId >= 0 ? 'neg_risk' : 'ctf',
    };
    this.seq++;
    return fill;
  }

  /**
   * Everything that happens in venue time (fromS, toS] (whole seconds), with `count` taker fills spread over it. Once
   * the batch is stored the venue is complete through toS: a refresh as of toS misses nothing stamped at or before it
   * (an hour's mids stamped at toS come in this batch, not the next, where they would arrive late: tail.ts).
   */
  step(fromS: number, toS: number, count: number): TailBatch {
    const batch: TailBatch = { fills: [], mids: [], resolutions: [], closed: [] };
    for (let i = 0; i < count; i++) {
      const t = fromS + 1 + Math.floor(((toS - fromS) * (i + this.rng.next())) / count);
      // a fifth of taker flow closes a position the tail opened earlier
      if (this.holdings.length > 0 && this.rng.bool(0.2)) {
        const k = this.rng.int(this.holdings.length);
        const h = this.holdings[k]!;
        const m = this.venue.markets[h.m] as GenMarket;
        this.holdings[k] = this.holdings[this.holdings.length - 1]!;
        this.holdings.pop();
        const f = t < m.closeS - FILL_CUTOFF_S ? this.fill(m, h.w, h.o, SIDE_SELL, t, null, h.shares) : null;
        if (f) {
          batch.fills.push(f);
          continue;
        }
      }
      const open = this.openMarkets(t);
      if (!open.ids.length) continue;
      for (let attempt = 0; attempt < 50; attempt++) {
        const w = this.walletIds[this.walletTable.sample(this.rng)] as number;
        const m = this.venue.markets[open.ids[open.table.sample(this.rng)] as number] as GenMarket;
        const arch = archetypeOf(this.pop, w);
        const style = STYLE[arch];
        const outcome = decideOutcome(arch === 'sybil' ? 'noise' : arch, this.rng, this.pop.leadHours[w] as number, m, t);
        if (outcome < 0) continue;
        const f = this.fill(m, w, outcome, SIDE_BUY, t, Math.max(1, this.rng.logNormal(style.clipMedianUsd || 25, style.clipSigma || 1)), null);
        if (f) {
          batch.fills.push(f);
          if (this.holdings.length < 50_000) this.holdings.push({ w, m: m.marketId, o: outcome, shares: f.shares });
        }
        break;
      }
    }
    for (let hour = this.lastMidHour + 1; hour * SECONDS_PER_HOUR <= toS; hour++) {
      const ts = hour * SECONDS_PER_HOUR;
      for (const id of this.openMarkets(ts).ids) {
        const m = this.venue.markets[id] as GenMarket;
        batch.mids.push({ marketId: id, outcome: 0, ts, mid: midAt(m, 0, ts) }, { marketId: id, outcome: 1, ts, mid: midAt(m, 1, ts) });
      }
      this.lastMidHour = hour;
    }
    for (const m of this.venue.markets) {
      if (m.closeS <= toS && !this.closed.has(m.marketId)) {
        this.closed.add(m.marketId);
        batch.closed.push({ marketId: m.marketId, closedAt: m.closeS });
      }
      // resolution lands 10 minutes to 6 hours after close, as in the generated history
      const at = m.closeS + 600 + (m.marketId * 7919) % (6 * SECONDS_PER_HOUR);
      if (at <= toS && !this.resolved.has(m.marketId)) {
        this.resolved.add(m.marketId);
        const winner = m.winner === -1 ? 'INVALID' : m.winner === 0 ? 'YES' : 'NO';
        batch.resolutions.push({
          marketId: m.marketId,
          winner,
          winnerIndex: m.winner >= 0 ? m.winner : -1,
          payoutNumerators: winner === 'YES' ? [1, 0] : winner === 'NO' ? [0, 1] : [1, 1],
          // one overdue when the tail starts lands now (after fromS: the venue was complete through fromS without it)
          resolvedAt: Math.max(at, fromS + 1),
          txHash: '0x' + createHash('sha256').update(`tail-res:${this.opts.seed}:${m.marketId}`).digest('hex'),
        });
      }
    }
    return batch;
  }
}
