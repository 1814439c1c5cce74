/**
 * LiveTail: runs the tail generator against the wall clock and appends what happens to the venue tables in DuckDB.
 * Venue time = resume point + (wall time elapsed) x speed, in whole seconds. Listeners get every taker fill and
 * resolution as they land (the jobs that produce trader.fill, signal.smart_money and market.resolved subscribe here).
 *
 * Its clock (`stats().venueTime`, the demo's "now") is the venue time through which every row is stored: it moves on
 * once a batch commits, not when the batch is generated. The analytics refresh takes "now" as its as-of and the
 * newest arrival batch as its watermark; had the clock moved first, a refresh starting during a write would have
 * been as of a time whose rows were still being written, and they would arrive late: a late mid restreams every
 * position on its token from 24 h before it, and the hour's mids (every open token) made that hour's refresh touch
 * 21.9M state rows at full scale (session 28) instead of moving marks only.
 */
import { EventEmitter } from 'node:events';
import { DuckDBTimestampValue, type DuckDBConnection } from '@duckdb/node-api';
import { appendRows, inTransaction, queryRows } from '../duckdb.ts';
import { nextVenueSeq } from '../schema.ts';
import { readRealMarkets } from '../ingest/real-markets.ts';
import type { VenueOptions } from '../generator/config.ts';
import { TailGenerator, type TailBatch, type TailFill, type TailResolution } from './generator.ts';

export interface LiveTailOptions {
  ratePerSecond: number;
  speed: number;
  /** milliseconds; injected by tests */
  now?: () => number;
  tickMs?: number;
  /** a tick that failed to write (its batch is written by a later tick); default: reported on stderr */
  onError?: (e: Error) => void;
}

/** One tick's write: its arrival batch (venue seq) and what it held, stamped with the wall clock after the write. */
export interface TailArrival {
  seq: number;
  fills: number;
  resolutions: number;
  mids: number;
  wallMs: number;
}

export interface LiveTailEvents {
  fill: [TailFill];
  resolution: [TailResolution];
  /** after each non-empty write (freshness is measured from here: bench/freshness.ts) */
  batch: [TailArrival];
}

const ts = (s: number) => new DuckDBTimestampValue(BigInt(s) * 1_000_000n);

export class LiveTail extends EventEmitter<LiveTailEvents> {
  private timer: NodeJS.Timeout | null = null;
  private lastWallMs: number;
  /** venue time the generator has reached (a batch may still be being written up to it) */
  private venueS: number;
  /** venue time through which every row is stored: the clock */
  private storedS: number;
  /** taker fills and venue seconds due but not generated yet (fractions, and a tick under a venue second) */
  private carry = 0;
  private venueCarry = 0;
  private counts = { fills: 0, resolutions: 0 };
  private readonly startedMs: number;
  private writing: Promise<void> = Promise.resolve();
  /** a batch whose write failed: the next tick writes it before time moves on (nothing generated is lost) */
  private pending: TailBatch | null = null;

  private constructor(
    private readonly conn: DuckDBConnection,
    readonly gen: TailGenerator,
    private readonly opts: Required<Omit<LiveTailOptions, 'now' | 'onError'>> & { now: () => number; onError: (e: Error) => void },
    fromS: number,
  ) {
    super();
    this.startedMs = this.lastWallMs = opts.now();
    this.venueS = this.storedS = fromS;
  }

  /**
   * Resume after what storage holds (the latest fill, or hour's mid the tail wrote; the generated history ends before
   * the venue end) and start ticking.
   */
  static async start(conn: DuckDBConnection, venue: VenueOptions, options: LiveTailOptions, autoTick = true): Promise<LiveTail> {
    const now = options.now ?? (() => Date.now());
    const [row] = await queryRows<{ last: number | null }>(
      conn,
      `SELECT greatest((SELECT epoch(max(ts))::BIGINT FROM fills), (SELECT epoch(max(ts))::BIGINT FROM mids WHERE seq > 0)) AS last`,
    );
    const endS = Math.floor(Date.parse(venue.end) / 1000);
    const fromS = Math.max(endS - 1, Number(row?.last ?? 0));
    const resolved = (await queryRows<{ id: number }>(conn, `SELECT market_id AS id FROM resolutions`)).map((r) => r.id);
    const closed = (await queryRows<{ id: number }>(conn, `SELECT market_id AS id FROM markets WHERE closed_at IS NOT NULL`)).map((r) => r.id);
    const real = await readRealMarkets(venue.realMarketsCsv);
    const gen = new TailGenerator(venue, real, fromS, { resolved, closed }, String(now()));
    const onError = options.onError ?? ((e: Error) => console.error(`  live tail: a write failed (${e.message.split('\n')[0]}); it is written on a later tick`));
    const tail = new LiveTail(conn, gen, { ratePerSecond: options.ratePerSecond, speed: options.speed, tickMs: options.tickMs ?? 250, now, onError }, fromS);
    // a failed write (a full disk, say) is reported and retried: never an unhandled rejection that ends the process
    if (autoTick) tail.timer = setInterval(() => void tail.tick().catch(onError), tail.opts.tickMs);
    return tail;
  }

  /** Advance to the current wall time; returns what was written. Serialized: ticks never overlap. */
  tick(): Promise<TailBatch> {
    const run = this.writing.then(async () => {
      // a batch that failed to write goes first, alone: the generator has moved on past it (its markets, its
      // resolutions), so it is written as generated, not generated again
      let batch = this.pending;
      if (!batch) {
        const wall = this.opts.now();
        const dtMs = Math.max(0, wall - this.lastWallMs);
        this.lastWallMs = wall;
        // (ms times rate, then / 1000: exact for whole milliseconds and rates)
        this.carry += (dtMs * this.opts.ratePerSecond) / 1000;
        this.venueCarry += (dtMs * this.opts.speed) / 1000;
        // whole venue seconds only: at speed 1 a tick of 250 ms carries its quarter second to a later tick (rounded up
        // to a second, venue time ran four times the wall clock)
        const seconds = Math.floor(this.venueCarry);
        if (seconds < 1) return { fills: [], mids: [], resolutions: [], closed: [] };
        this.venueCarry -= seconds;
        const count = Math.floor(this.carry);
        this.carry -= count;
        const toS = this.venueS + seconds;
        batch = this.gen.step(this.venueS, toS, count);
        this.venueS = toS;
      }
      this.pending = batch;
      const seq = await this.write(batch);
      this.pending = null;
      // every row through venueS is stored: the clock moves on
      this.storedS = this.venueS;
      if (seq !== null) this.emit('batch', { seq, fills: batch.fills.length, resolutions: batch.resolutions.length, mids: batch.mids.length, wallMs: Date.now() });
      for (const f of batch.fills) this.emit('fill', f);
      for (const r of batch.resolutions) this.emit('resolution', r);
      this.counts.fills += batch.fills.length;
      this.counts.resolutions += batch.resolutions.length;
      return batch;
    });
    this.writing = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  /**
   * Append a tick's rows as one arrival batch, in one transaction; returns its seq (null when there was nothing to
   * write). One transaction, because a refresh takes the newest seq as its watermark: had the fills of a batch been
   * committed before its mids and resolutions, a refresh beginning between them would have moved past that seq, and
   * every later refresh would have skipped the rest of the batch.
   */
  private write(b: TailBatch): Promise<number | null> {
    if (!b.fills.length && !b.mids.length && !b.resolutions.length && !b.closed.length) return Promise.resolve(null);
    return inTransaction(this.conn, () => this.writeRows(b));
  }

  private async writeRows(b: TailBatch): Promise<number> {
    // one arrival batch for everything this tick writes (the analytics refresh reads what arrived after its watermark)
    const seq = BigInt(await nextVenueSeq(this.conn));
    if (b.fills.length) {
      // appendRows: the appender's close would commit, and maybe checkpoint, on the event loop
      await appendRows(this.conn, 'fills', (app) => {
        for (const f of b.fills) {
          app.appendVarchar(f.txHash);
          app.appendInteger(f.logIndex);
          app.appendTimestamp(ts(f.ts));
          app.appendInteger(f.marketId);
          app.appendUTinyInt(f.outcome);
          app.appendInteger(f.makerId);
          app.appendInteger(f.takerId);
          app.appendVarchar(f.side);
          app.appendVarchar('direct');
          app.appendDouble(f.price);
          app.appendDouble(f.shares);
          app.appendDouble(f.sizeUsdc);
          app.appendDouble(f.feeUsdc);
          app.appendUTinyInt(2);
          app.appendVarchar(f.exchangeKind);
          app.appendBigInt(seq);
          app.endRow();
        }
      });
    }
    if (b.mids.length) {
      await appendRows(this.conn, 'mids', (app) => {
        for (const m of b.mids) {
          app.appendInteger(m.marketId);
          app.appendUTinyInt(m.outcome);
          app.appendTimestamp(ts(m.ts));
          app.appendDouble(m.mid);
          app.appendBigInt(seq);
          app.endRow();
        }
      });
    }
    for (const c of b.closed) {
      await this.conn.run(`UPDATE markets SET closed_at = make_timestamp($1::BIGINT * 1000000) WHERE market_id = $2 AND closed_at IS NULL`, [c.closedAt, c.marketId]);
    }
    for (const r of b.resolutions) {
      const [y, n] = r.payoutNumerators;
      await this.conn.run(
        `INSERT INTO resolutions VALUES ($1, $2, $3, [$4, $5]::INTEGER[], $6, $7, 2, make_timestamp($8::BIGINT * 1000000), $9, $10)`,
        [r.marketId, r.winner, r.winnerIndex, y, n, y / (y + n), n / (y + n), r.resolvedAt, r.txHash, seq],
      );
    }
    return Number(seq);
  }

  /** `venueTime`: the clock, the venue time through which every row is stored (see above) */
  stats(): { fills: number; resolutions: number; fillsPerSecond: number; venueTime: string } {
    const elapsed = Math.max(1e-3, (this.opts.now() - this.startedMs) / 1000);
    return { ...this.counts, fillsPerSecond: this.counts.fills / elapsed, venueTime: new Date(this.storedS * 1000).toISOString() };
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.writing;
  }
}
