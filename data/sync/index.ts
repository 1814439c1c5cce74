/**
 * The venue sync: backfill from the venue's public sources, then follow them. Gamma gives the markets (gamma.ts), the
 * chain every fill, resolution and redemption (chain.ts); mids are derived from fills (mids.ts). Everything lands in
 * the venue tables with arrival batches (seq), so the live analytics refresh picks it up like the demo's tail, and
 * the listeners of `fill` / `resolution` (webhooks, the stream) get what each batch brought.
 */
import { EventEmitter } from 'node:events';
import type { DuckDBConnection } from '@duckdb/node-api';
import { queryRows } from '../duckdb.ts';
import { chainConfig, type ChainConfig } from '../ingest/rpc-log.ts';
import { createVenueSchema, VENUE_SEQ_DDL } from '../schema.ts';
import type { TailFill, TailResolution } from '../live-tail/generator.ts';
import { ChainSync, type ChainStep } from './chain.ts';
import { GammaSync, type GammaPageReport } from './gamma.ts';
import { HttpSource, JsonRpc, type SourceOptions } from './http.ts';
import { createSyncTables, getState, setState } from './state.ts';

/** Gamma's public base URL (VENUE=polymarket's default; GAMMA_URL overrides it). */
export const POLYMARKET_GAMMA_URL = 'https://gamma-api.polymarket.com';

export interface VenueSyncOptions {
  gammaUrl: string;
  rpcUrl: string;
  /** contract addresses beyond the defaults (the V2 exchanges) */
  chain?: Partial<ChainConfig>;
  /** first block of the chain backfill (when no cursor is stored) */
  fromBlock: bigint;
  /** last block (a bounded backfill); none: up to the head, then follow */
  untilBlock?: bigint;
  /** Gamma backfill: markets ending at or after this */
  fromDate?: Date;
  confirmations?: number;
  /** requests in flight per source */
  gammaConcurrency?: number;
  rpcConcurrency?: number;
  /** retry tuning for both sources (tests shorten it) */
  retry?: Pick<SourceOptions, 'baseDelayMs' | 'maxDelayMs' | 'maxAttempts' | 'random' | 'onRetry'>;
  initialRange?: number;
  maxRange?: number;
}

export interface SyncProgress {
  phase: 'gamma' | 'chain' | 'follow';
  /** chain: next block to read, the target (head - confirmations), and the head */
  next?: bigint;
  target?: bigint;
  head?: bigint;
  /** blocks read so far in this run, and how many were left when it started */
  done?: number;
  total?: number;
  markets?: number;
  fills?: number;
}

export interface VenueSyncEvents {
  gamma: [GammaPageReport];
  batch: [ChainStep];
  fill: [TailFill];
  resolution: [TailResolution];
  progress: [SyncProgress];
  error: [Error];
}

export class VenueSync extends EventEmitter<VenueSyncEvents> {
  readonly gammaSource: HttpSource;
  readonly rpcSource: HttpSource;
  readonly gamma: GammaSync;
  readonly chain: ChainSync;
  private stopped = false;
  private wake: (() => void) | null = null;
  private constructor(
    private readonly conn: DuckDBConnection,
    opts: VenueSyncOptions,
  ) {
    super();
    this.gammaSource = new HttpSource({ name: 'gamma', baseUrl: opts.gammaUrl, concurrency: opts.gammaConcurrency ?? 4, ...opts.retry });
    this.rpcSource = new HttpSource({ name: 'rpc', baseUrl: opts.rpcUrl, concurrency: opts.rpcConcurrency ?? 8, ...opts.retry });
    this.gamma = new GammaSync(this.gammaSource, conn, { endDateMin: opts.fromDate, onPage: (p) => this.emit('gamma', p) });
    this.chain = new ChainSync(new JsonRpc(this.rpcSource), conn, {
      config: chainConfig(opts.chain),
      fromBlock: opts.fromBlock,
      untilBlock: opts.untilBlock,
      confirmations: opts.confirmations,
      initialRange: opts.initialRange,
      maxRange: opts.maxRange,
      ensureMarkets: (tokens, conditions) => this.gamma.ensureMarkets(tokens, conditions),
    });
  }

  /** Open on a venue database: the venue schema and the sync's tables are created when missing. */
  static async open(conn: DuckDBConnection, opts: VenueSyncOptions): Promise<VenueSync> {
    await createVenueSchema(conn);
    await conn.run(VENUE_SEQ_DDL);
    await createSyncTables(conn);
    // a venue synced from the chain: its mids are derived from its fills (the public views say so)
    if ((await getState(conn, 'venue', 'mid_source')) === null) await setState(conn, 'venue', 'mid_source', 'fills');
    return new VenueSync(conn, opts);
  }

  /** Gamma's backfill, then the chain's up to the target; resumable at any point. */
  async backfill(): Promise<{ markets: number; blocks: number; fills: number }> {
    this.emit('progress', { phase: 'gamma' });
    const g = await this.gamma.backfill();
    const start = await this.chain.nextBlock();
    const { target } = await this.chain.target();
    const total = Number(target - start + 1n);
    let fills = 0;
    while (!this.stopped) {
      const s = await this.chain.step();
      if (!s) break;
      fills += s.rows.fills ?? 0;
      await this.announce(s);
      this.emit('progress', { phase: 'chain', next: s.to + 1n, target, head: s.head, done: Number(s.to - start + 1n), total: Math.max(total, 1), markets: g.markets, fills });
      if (s.to >= target) break;
    }
    return { markets: g.markets, blocks: Math.max(0, Number((await this.chain.nextBlock()) - start)), fills };
  }

  /**
   * Follow both sources until stop(): the chain every `pollMs` (each step up to the head less the confirmations),
   * Gamma every `gammaEveryMs`. Errors are emitted and retried on the next round, never fatal.
   */
  async follow(opts: { pollMs?: number; gammaEveryMs?: number } = {}): Promise<void> {
    const pollMs = opts.pollMs ?? 2000;
    const gammaEvery = opts.gammaEveryMs ?? 30_000;
    let lastGamma = 0;
    while (!this.stopped) {
      try {
        if (Date.now() - lastGamma >= gammaEvery) {
          await this.gamma.follow();
          lastGamma = Date.now();
        }
        for (;;) {
          if (this.stopped) break;
          const s = await this.chain.step();
          if (!s) break;
          await this.announce(s);
        }
        const { head } = await this.chain.target();
        const next = await this.chain.nextBlock();
        this.emit('progress', { phase: 'follow', next, head });
      } catch (e) {
        this.emit('error', e as Error);
      }
      if (this.stopped) break;
      await new Promise<void>((ok) => {
        const t = setTimeout(ok, pollMs);
        this.wake = () => {
          clearTimeout(t);
          ok();
        };
      });
      this.wake = null;
    }
  }

  /** Tell the listeners what a committed batch brought: its fills (taker side known) and resolutions. */
  private async announce(s: ChainStep): Promise<void> {
    this.emit('batch', s);
    if (!s.seqFrom || (!this.listenerCount('fill') && !this.listenerCount('resolution'))) return;
    if ((s.rows.fills ?? 0) > 0 && this.listenerCount('fill')) {
      const rows = await queryRows<Record<string, unknown>>(
        this.conn,
        `SELECT tx_hash, log_index, epoch(ts)::DOUBLE AS ts, market_id, outcome_index, maker_id, taker_id, side, price, shares, size_usdc, fee_usdc, exchange_kind
         FROM fills WHERE seq >= ${s.seqFrom} AND taker_id IS NOT NULL ORDER BY ts, tx_hash, log_index`,
      );
      for (const r of rows) {
        this.emit('fill', {
          txHash: String(r.tx_hash),
          logIndex: Number(r.log_index),
          ts: Number(r.ts),
          marketId: Number(r.market_id),
          outcome: Number(r.outcome_index),
          makerId: r.maker_id === null ? -1 : Number(r.maker_id),
          takerId: Number(r.taker_id),
          side: r.side === 'SELL' ? 'SELL' : 'BUY',
          price: Number(r.price),
          shares: Number(r.shares),
          sizeUsdc: Number(r.size_usdc),
          feeUsdc: Number(r.fee_usdc),
          exchangeKind: r.exchange_kind === 'neg_risk' ? 'neg_risk' : 'ctf',
        });
      }
    }
    if ((s.rows.resolutions ?? 0) > 0 && this.listenerCount('resolution')) {
      const rows = await queryRows<Record<string, unknown>>(
        this.conn,
        `SELECT market_id, winner, winner_index, payout_numerators, epoch(resolved_at)::DOUBLE AS t, tx_hash FROM resolutions WHERE seq >= ${s.seqFrom} AND winner IN ('YES', 'NO', 'INVALID') ORDER BY resolved_at, market_id`,
      );
      for (const r of rows) {
        const nums = (r.payout_numerators as number[]) ?? [0, 0];
        this.emit('resolution', {
          marketId: Number(r.market_id),
          winner: r.winner as TailResolution['winner'],
          winnerIndex: Number(r.winner_index),
          payoutNumerators: [Number(nums[0] ?? 0), Number(nums[1] ?? 0)],
          resolvedAt: Number(r.t),
          txHash: String(r.tx_hash),
        });
      }
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
  }

  async close(): Promise<void> {
    this.stopped = true;
    await this.gammaSource.close();
    await this.rpcSource.close();
  }
}

export { ChainSync, GammaSync, HttpSource, JsonRpc };
export type { ChainStep, GammaPageReport };
