/**
 * The resolution feed log behind GET /v1/resolutions: an insert-only table of the service state (SQLite, or
 * PostgreSQL shared by replicas) that gives every resolution a
 * sequence number (`seq`) the first time the service sees it. Receivers page by seq with an opaque cursor, so a
 * resolution that lands late, or with a resolved_at earlier than rows already served, still gets a seq after every
 * seq already handed out: a receiver resuming from a persisted cursor sees each resolution exactly once.
 *
 * Why a log instead of paging the DuckDB `resolutions` table by (resolved_at, market_id): the live tail and the
 * ingest loaders append rows whose resolved_at can be earlier than rows already served, so any keyset over venue
 * columns can skip them. A sync inserts in one transaction under the feed's lock (SQLite's write lock, a PostgreSQL
 * advisory lock), taking seqs max(seq)+1, +2, … itself: writers from any replica take turns, so seqs are dense,
 * never reused (the table is insert-only) and assigned in commit order, and a reader only sees committed rows, so a
 * reader can never see seq n+1 while seq n is still to come. A resolution another replica inserted meanwhile is
 * found under the lock and skipped without using up a seq. The feed is authoritative: a committed seq must survive a
 * power cut, or a receiver's cursor could point past it (SQLite synchronous = FULL, data/sql/db.ts's default).
 *
 * Identity: one entry per condition_id (the market's stable on-chain id; within one venue load it is one market_id).
 * A resolution whose market row is not there yet is left pending and picked up by a later sync. Within one sync,
 * new resolutions get seqs in (resolved_at, condition_id) order. Rows are never updated or deleted (triggers).
 *
 * Cursor: base64url of `rf1:<feed id>:<seq>` (version 1). The feed id is random per feed database (stored in it, so
 * every replica on one database issues the same cursors), so a cursor from another (or a recreated) feed is refused
 * instead of silently skipping rows.
 */
import { winnerLabelSql } from '../core/outcomes.ts';
import { randomBytes } from 'node:crypto';
import type { SqlDb, SqlValue } from './sql/db.ts';
import { ServiceStore, openMigrated, refuseChanges, type Migration } from './sql/migrate.ts';
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

/** The feed's tables, version by version (data/sql/migrate.ts). */
export const RESOLUTION_FEED_MIGRATIONS: readonly Migration[] = [
  {
    name: '0001-resolution-feed',
    async up(db) {
      // IF NOT EXISTS: a SQLite file from before versioned migrations already has the tables and triggers. SQLite
      // keeps its AUTOINCREMENT key (older files have it); seqs are assigned by the sync in both engines
      const seq = db.dialect === 'sqlite' ? 'seq INTEGER PRIMARY KEY AUTOINCREMENT' : 'seq BIGINT PRIMARY KEY';
      await db.exec(`CREATE TABLE IF NOT EXISTS resolution_feed_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE IF NOT EXISTS resolution_feed (
          ${seq},
          market_id INTEGER NOT NULL,
          condition_id TEXT NOT NULL UNIQUE,
          question_id TEXT NOT NULL, title TEXT NOT NULL, slug TEXT NOT NULL, category TEXT NOT NULL,
          market_kind TEXT NOT NULL, winner_outcome TEXT, winner_index INTEGER NOT NULL, outcome_slot_count INTEGER NOT NULL,
          resolved_time TEXT NOT NULL, tx_hash TEXT NOT NULL, recorded_at TEXT NOT NULL);`);
      await refuseChanges(db, { name: 'resolution_feed_no', table: 'resolution_feed', ops: ['UPDATE', 'DELETE'], message: 'the resolution feed is insert-only', truncate: true });
    },
  },
];

/** resolutions per INSERT (14 parameters each) */
const ROWS_PER_INSERT = 500;
/** The columns a sync inserts, in order. */
const INSERT_COLUMNS = 'seq, market_id, condition_id, question_id, title, slug, category, market_kind, winner_outcome, winner_index, outcome_slot_count, resolved_time, tx_hash, recorded_at';

export class ResolutionFeed extends ServiceStore {
  private readonly now: () => Date;
  private readonly known = new Set<string>();
  private lastFingerprint: string | null = null;
  private lastPending = 0;
  private running: Promise<FeedSyncResult> | null = null;
  private queued: Promise<FeedSyncResult> | null = null;

  private constructor(
    db: SqlDb,
    owned: boolean,
    readonly feedId: string,
    opts: { now?: () => Date },
  ) {
    super(db, owned);
    this.now = opts.now ?? (() => new Date());
  }

  /** The feed on `target`: an open service database (shared with the other stores), or a SQLite path / PostgreSQL URL it opens and owns. */
  static async open(target: SqlDb | string, opts: { now?: () => Date } = {}): Promise<ResolutionFeed> {
    const { db, owned } = await openMigrated(target, 'resolution_feed', RESOLUTION_FEED_MIGRATIONS);
    try {
      // the first replica to get here names the feed; the others read its name
      await db.run(`INSERT INTO resolution_feed_meta (key, value) VALUES ('feed_id', ?) ON CONFLICT (key) DO NOTHING`, [randomBytes(8).toString('hex')]);
      const feedId = (await db.get<{ value: string }>(`SELECT value FROM resolution_feed_meta WHERE key = 'feed_id'`))!.value;
      const feed = new ResolutionFeed(db, owned, feedId, opts);
      for (const r of await db.all<{ condition_id: string }>(`SELECT condition_id FROM resolution_feed`)) feed.known.add(r.condition_id);
      return feed;
    } catch (e) {
      if (owned) await db.close();
      throw e;
    }
  }

  /** The highest seq handed out (0 when empty). */
  async maxSeq(): Promise<number> {
    return Number((await this.db.get<{ s: number }>(`SELECT coalesce(max(seq), 0) AS s FROM resolution_feed`))!.s);
  }

  async size(): Promise<number> {
    return Number((await this.db.get<{ n: number }>(`SELECT count(*) AS n FROM resolution_feed`))!.n);
  }

  /** Entries with seq > afterSeq, in seq order; hasMore when more follow the page. */
  async page(afterSeq: number, limit: number): Promise<{ rows: FeedEntry[]; hasMore: boolean }> {
    if (!Number.isSafeInteger(afterSeq) || afterSeq < 0) throw new Error('afterSeq must be a non-negative integer');
    if (!Number.isSafeInteger(limit) || limit < 1) throw new Error('limit must be a positive integer');
    const rows = await this.db.all<FeedEntry>(`SELECT * FROM resolution_feed WHERE seq > ? ORDER BY seq LIMIT ?`, [afterSeq, limit + 1]);
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
  async checkCursor(cursor: string): Promise<CursorCheck> {
    const c = this.parseCursor(cursor);
    if (c.ok && c.seq > (await this.maxSeq())) return { ok: false, reason: 'the cursor points past the end of this feed; it was not issued by it' };
    return c;
  }

  /**
   * Copy resolutions the feed has not seen from the venue (DuckDB `resolutions` joined to `markets`) into the log.
   * Idempotent and safe to call concurrently: calls coalesce, and every call returns a sync that started after it.
   * Replicas syncing one database at once take turns on the feed's lock: each resolution gets one row and one seq.
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
    if (fingerprint === this.lastFingerprint && this.lastPending === 0) return { inserted: 0, pending: 0, total: await this.size(), skipped: true };

    const ids = await source.all<{ market_id: number; condition_id: string | null }>(
      `SELECT DISTINCT r.market_id, m.condition_id FROM resolutions r LEFT JOIN markets m USING (market_id)`,
    );
    const pending = ids.filter((r) => r.condition_id === null || r.condition_id === undefined).length;
    const fresh = ids.filter((r) => typeof r.condition_id === 'string' && !this.known.has(r.condition_id));
    let inserted = 0;
    if (fresh.length) {
      const marketIds = [...new Set(fresh.map((r) => Number(r.market_id)))].filter((m) => Number.isSafeInteger(m));
      const where = marketIds.length <= IN_LIST_MAX ? `WHERE r.market_id IN (${marketIds.join(', ')})` : '';
      const rows = (
        await source.all<SourceRow>(
          `SELECT r.market_id, m.condition_id, m.question_id, m.question AS title, m.slug, m.category, ${winnerLabelSql('m', 'r.winner')} AS winner, r.winner_index,
             r.outcome_slot_count, epoch_ms(r.resolved_at) AS resolved_ms, r.tx_hash
           FROM resolutions r JOIN markets m USING (market_id) ${where}
           QUALIFY row_number() OVER (PARTITION BY m.condition_id ORDER BY r.resolved_at, r.tx_hash, r.market_id) = 1
           ORDER BY r.resolved_at, m.condition_id`,
        )
      ).filter((r) => !this.known.has(r.condition_id));
      const recordedAt = this.now().toISOString();
      // under the feed's lock: one writer at a time, across replicas, reads which of these are recorded and the
      // next seq, and takes the seqs
      inserted = await this.db.tx(
        async (t) => {
          let next = Number((await t.get<{ s: number }>(`SELECT coalesce(max(seq), 0) AS s FROM resolution_feed`))!.s) + 1;
          let n = 0;
          for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) {
            const chunk = rows.slice(i, i + ROWS_PER_INSERT);
            // recorded meanwhile by another replica (or another process on the file): keeps its row and seq
            const have = new Set(
              (await t.all<{ condition_id: string }>(`SELECT condition_id FROM resolution_feed WHERE condition_id IN (${chunk.map(() => '?').join(', ')})`, chunk.map((r) => r.condition_id))).map((r) => r.condition_id),
            );
            const add = chunk.filter((r) => !have.has(r.condition_id));
            if (!add.length) continue;
            const params: SqlValue[] = [];
            for (const r of add) {
              const slots = Number(r.outcome_slot_count);
              params.push(
                next++,
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
            }
            const placeholders = add.map(() => '(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)').join(', ');
            n += (await t.run(`INSERT INTO resolution_feed (${INSERT_COLUMNS}) VALUES ${placeholders}`, params)).changes;
          }
          return n;
        },
        { lock: 'resolution_feed' },
      );
      for (const r of rows) this.known.add(r.condition_id);
    }
    this.lastFingerprint = fingerprint;
    this.lastPending = pending;
    return { inserted, pending, total: await this.size(), skipped: false };
  }
}

/** The job-callable form: copy new venue resolutions into the feed log. */
export function syncResolutionFeed(db: QueryRunner, feed: ResolutionFeed): Promise<FeedSyncResult> {
  return feed.sync(db);
}
