/**
 * The resolution feed log behind GET /v1/resolutions: an insert-only SQLite table that gives every resolution a
 * sequence number (`seq`) the first time the service sees it. Receivers page by seq with an opaque cursor, so a
 * resolution that lands late, or with a resolved_at earlier than rows already served, still gets a seq after every
 * seq already handed out: a receiver resuming from a persisted cursor sees each resolution exactly once.
 *
 * Why a log instead of paging the DuckDB `resolutions` table by (resolved_at, market_id): the live tail and the
 * ingest loaders append rows whose resolved_at can be earlier than rows already served, so any keyset over venue
 * columns can skip them. Seqs are assigned in commit order by SQLite's single writer (AUTOINCREMENT, never reused),
 * and a reader only sees committed rows, so a reader can never see seq n+1 while seq n is still to come.
 *
 * Identity: one entry per condition_id (the market's stable on-chain id; within one venue load it is one market_id).
 * A resolution whose market row is not there yet is left pending and picked up by a later sync. Within one sync,
 * new resolutions get seqs in (resolved_at, condition_id) order. Rows are never updated or deleted (triggers).
 *
 * Cursor: base64url of `rf1:<feed id>:<seq>` (version 1). The feed id is random per feed file, so a cursor from
 * another (or a recreated) feed is refused instead of silently skipping rows.
 */
import { winnerLabelSql } from '../core/outcomes.ts';
import { randomBytes } from 'node:crypto';
import type Database from 'better-sqlite3';
import { openSqlite } from './sqlite.ts';
import type { QueryRunner } from '../core/query.ts';

/** One resolution as the feed serves it: the spec's market.resolved data fields plus the feed's own. */
export interface FeedEntry {
  seq: number;
  market_id: number;
  condition_id: string;
  question_id: string;
  title: string;
  slug: string;
  category: string;
  market_kind: string;
  winner_outcome: string | null;
  winner_index: number;
  outcome_slot_count: number;
  /** ISO 8601 */
  resolved_time: string;
  tx_hash: string;
  /** ISO 8601: when the feed first saw the resolution (its seq was assigned) */
  recorded_at: string;
}

export interface FeedSyncResult {
  /** entries added by this sync */
  inserted: number;
  /** resolutions whose market row is missing (retried on the next sync) */
  pending: number;
  /** entries in the feed after the sync */
  total: number;
  /** true when the venue table had not changed since the last sync and nothing was read */
  skipped: boolean;
}

export type CursorCheck = { ok: true; seq: number } | { ok: false; reason: string };

const CURSOR_VERSION = 'rf1';
const CURSOR_RE = /^rf1:([0-9a-f]{16}):(0|[1-9][0-9]{0,15})$/;
/** Above this many new resolutions a sync reads the joined table whole rather than an IN list. */
const IN_LIST_MAX = 2000;

interface SourceRow {
  market_id: number;
  condition_id: string;
  question_id: string | null;
  title: string | null;
  slug: string | null;
  category: string | null;
  winner: string | null;
  winner_index: number;
  outcome_slot_count: number;
  resolved_ms: number;
  tx_hash: string;
}

export function marketKind(outcomeSlotCount: number): string {
  return outcomeSlotCount === 2 ? 'binary' : 'categorical';
}

export class ResolutionFeed {
  readonly db: Database.Database;
  readonly feedId: string;
  private readonly now: () => Date;
  private readonly known = new Set<string>();
  private lastFingerprint: string | null = null;
  private lastPending = 0;
  private running: Promise<FeedSyncResult> | null = null;
  private queued: Promise<FeedSyncResult> | null = null;

  constructor(path: string, opts: { now?: () => Date } = {}) {
    this.now = opts.now ?? (() => new Date());
    // the feed is authoritative: a committed seq must survive a power cut, or a receiver's cursor could point past it
    this.db = openSqlite(path, { synchronous: 'FULL' });
    this.db.exec(`CREATE TABLE IF NOT EXISTS resolution_feed_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS resolution_feed (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        market_id INTEGER NOT NULL,
        condition_id TEXT NOT NULL UNIQUE,
        question_id TEXT NOT NULL, title TEXT NOT NULL, slug TEXT NOT NULL, category TEXT NOT NULL,
        market_kind TEXT NOT NULL, winner_outcome TEXT, winner_index INTEGER NOT NULL, outcome_slot_count INTEGER NOT NULL,
        resolved_time TEXT NOT NULL, tx_hash TEXT NOT NULL, recorded_at TEXT NOT NULL);
      CREATE TRIGGER IF NOT EXISTS resolution_feed_no_update BEFORE UPDATE ON resolution_feed
        BEGIN SELECT RAISE(ABORT, 'the resolution feed is insert-only'); END;
      CREATE TRIGGER IF NOT EXISTS resolution_feed_no_delete BEFORE DELETE ON resolution_feed
        BEGIN SELECT RAISE(ABORT, 'the resolution feed is insert-only'); END;`);
    this.db.prepare(`INSERT OR IGNORE INTO resolution_feed_meta (key, value) VALUES ('feed_id', ?)`).run(randomBytes(8).toString('hex'));
    this.feedId = (this.db.prepare(`SELECT value FROM resolution_feed_meta WHERE key = 'feed_id'`).get() as { value: string }).value;
    for (const r of this.db.prepare(`SELECT condition_id FROM resolution_feed`).all() as { condition_id: string }[]) this.known.add(r.condition_id);
  }

  /** The highest seq handed out (0 when empty). */
  maxSeq(): number {
    return (this.db.prepare(`SELECT coalesce(max(seq), 0) AS s FROM resolution_feed`).get() as { s: number }).s;
  }

  size(): number {
    return (this.db.prepare(`SELECT count(*) AS n FROM resolution_feed`).get() as { n: number }).n;
  }

  /** Entries with seq > afterSeq, in seq order; hasMore when more follow the page. */
  page(afterSeq: number, limit: number): { rows: FeedEntry[]; hasMore: boolean } {
    if (!Number.isSafeInteger(afterSeq) || afterSeq < 0) throw new Error('afterSeq must be a non-negative integer');
    if (!Number.isSafeInteger(limit) || limit < 1) throw new Error('limit must be a positive integer');
    const rows = this.db.prepare(`SELECT * FROM resolution_feed WHERE seq > ? ORDER BY seq LIMIT ?`).all(afterSeq, limit + 1) as FeedEntry[];
    return { rows: rows.slice(0, limit), hasMore: rows.length > limit };
  }

  cursorFor(seq: number): string {
    return Buffer.from(`${CURSOR_VERSION}:${this.feedId}:${seq}`, 'utf8').toString('base64url');
  }

  /** A cursor's seq if it is well formed and of this feed (whether the seq was handed out yet is checkCursor's job). */
  parseCursor(cursor: string): CursorCheck {
    const foreign = { ok: false as const, reason: 'the cursor is not a cursor this feed issued' };
    if (!/^[A-Za-z0-9_-]{1,128}$/.test(cursor)) return foreign;
    const text = Buffer.from(cursor, 'base64url').toString('utf8');
    const m = CURSOR_RE.exec(text);
    // canonical encoding only (base64url decoding ignores trailing bits)
    if (!m || Buffer.from(text, 'utf8').toString('base64url') !== cursor) return foreign;
    const seq = Number(m[2]);
    if (!Number.isSafeInteger(seq)) return foreign;
    if (m[1] !== this.feedId) return { ok: false, reason: 'the cursor was issued by another resolution feed (it was reset); start again without a cursor and deduplicate on condition_id' };
    return { ok: true, seq };
  }

  /** Validates a cursor: well formed, of this feed, and not past the last seq handed out. */
  checkCursor(cursor: string): CursorCheck {
    const c = this.parseCursor(cursor);
    if (c.ok && c.seq > this.maxSeq()) return { ok: false, reason: 'the cursor points past the end of this feed; it was not issued by it' };
    return c;
  }

  /**
   * Copy resolutions the feed has not seen from the venue (DuckDB `resolutions` joined to `markets`) into the log.
   * Idempotent and safe to call concurrently: calls coalesce, and every call returns a sync that started after it.
   */
  sync(source: QueryRunner): Promise<FeedSyncResult> {
    if (this.queued) return this.queued;
    if (this.running) {
      const after = this.running.then(
        () => undefined,
        () => undefined,
      );
      this.queued = after.then(() => {
        this.queued = null;
        return this.start(source);
      });
      return this.queued;
    }
    return this.start(source);
  }

  private start(source: QueryRunner): Promise<FeedSyncResult> {
    const run = this.syncOnce(source).finally(() => {
      if (this.running === run) this.running = null;
    });
    this.running = run;
    return run;
  }

  private async syncOnce(source: QueryRunner): Promise<FeedSyncResult> {
    // resolutions are appended, never changed: an unchanged count and hash means nothing new (unless some wait for their market row)
    const [fp] = await source.all<{ n: number; h: string }>(
      `SELECT count(*) AS n, coalesce(sum(hash(market_id, resolved_at, tx_hash)), 0)::VARCHAR AS h FROM resolutions`,
    );
    const fingerprint = `${fp?.n ?? 0}:${fp?.h ?? '0'}`;
    if (fingerprint === this.lastFingerprint && this.lastPending === 0) return { inserted: 0, pending: 0, total: this.size(), skipped: true };

    const ids = await source.all<{ market_id: number; condition_id: string | null }>(
      `SELECT DISTINCT r.market_id, m.condition_id FROM resolutions r LEFT JOIN markets m USING (market_id)`,
    );
    const pending = ids.filter((r) => r.condition_id === null || r.condition_id === undefined).length;
    const fresh = ids.filter((r) => typeof r.condition_id === 'string' && !this.known.has(r.condition_id));
    let inserted = 0;
    if (fresh.length) {
      const marketIds = [...new Set(fresh.map((r) => Number(r.market_id)))].filter((m) => Number.isSafeInteger(m));
      const where = marketIds.length <= IN_LIST_MAX ? `WHERE r.market_id IN (${marketIds.join(', ')})` : '';
      const rows = await source.all<SourceRow>(
        `SELECT r.market_id, m.condition_id, m.question_id, m.question AS title, m.slug, m.category, ${winnerLabelSql('m', 'r.winner')} AS winner, r.winner_index,
           r.outcome_slot_count, epoch_ms(r.resolved_at) AS resolved_ms, r.tx_hash
         FROM resolutions r JOIN markets m USING (market_id) ${where}
         QUALIFY row_number() OVER (PARTITION BY m.condition_id ORDER BY r.resolved_at, r.tx_hash, r.market_id) = 1
         ORDER BY r.resolved_at, m.condition_id`,
      );
      const recordedAt = this.now().toISOString();
      const ins = this.db.prepare(`INSERT INTO resolution_feed (market_id, condition_id, question_id, title, slug, category, market_kind,
          winner_outcome, winner_index, outcome_slot_count, resolved_time, tx_hash, recorded_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (condition_id) DO NOTHING`);
      inserted = this.db.transaction(() => {
        let n = 0;
        for (const r of rows) {
          if (this.known.has(r.condition_id)) continue;
          const slots = Number(r.outcome_slot_count);
          const res = ins.run(
            Number(r.market_id),
            r.condition_id,
            r.question_id ?? '',
            r.title ?? '',
            r.slug ?? '',
            r.category ?? '',
            marketKind(slots),
            r.winner ?? null,
            Number(r.winner_index),
            slots,
            new Date(Number(r.resolved_ms)).toISOString(),
            r.tx_hash,
            recordedAt,
          );
          n += res.changes;
        }
        return n;
      })();
      for (const r of rows) this.known.add(r.condition_id);
    }
    this.lastFingerprint = fingerprint;
    this.lastPending = pending;
    return { inserted, pending, total: this.size(), skipped: false };
  }

  close(): void {
    this.db.close();
  }
}

/** The job-callable form: copy new venue resolutions into the feed log. */
export function syncResolutionFeed(db: QueryRunner, feed: ResolutionFeed): Promise<FeedSyncResult> {
  return feed.sync(db);
}
