/**
 * Fixed-window request counters behind one interface: SQLite by default (embedded, survives restarts, shared by
 * every process on the same file) and Redis when REDIS_URL is configured (shared by every instance).
 *
 * A counter is named by a key and a window [start, end); `hit` adds one and returns the count so far, so a limit
 * check is `count <= limit`. Windows are aligned (per minute, per calendar month), which makes every instance agree
 * on them without coordination.
 */
import type Database from 'better-sqlite3';
import { openSqlite } from './sqlite.ts';
import type { Redis } from 'ioredis';

export interface RateStore {
  /** add one to the counter (key, window) and return its value; the counter is dropped after windowEndMs */
  hit(key: string, windowStartMs: number, windowEndMs: number): Promise<number>;
  /** the counter's value without adding to it */
  peek(key: string, windowStartMs: number): Promise<number>;
  close(): Promise<void>;
}

export class SqliteRateStore implements RateStore {
  private readonly db: Database.Database;
  private readonly hitStmt: Database.Statement;
  private readonly peekStmt: Database.Statement;
  private hits = 0;

  constructor(path: string) {
    this.db = openSqlite(path);
    this.db.exec(`CREATE TABLE IF NOT EXISTS rate_counters (
      key TEXT NOT NULL, window_start INTEGER NOT NULL, window_end INTEGER NOT NULL, count INTEGER NOT NULL,
      PRIMARY KEY (key, window_start)) WITHOUT ROWID`);
    this.hitStmt = this.db.prepare(
      `INSERT INTO rate_counters (key, window_start, window_end, count) VALUES (?, ?, ?, 1)
       ON CONFLICT (key, window_start) DO UPDATE SET count = count + 1 RETURNING count`,
    );
    this.peekStmt = this.db.prepare(`SELECT count FROM rate_counters WHERE key = ? AND window_start = ?`);
  }

  async hit(key: string, windowStartMs: number, windowEndMs: number): Promise<number> {
    // sweep ended windows now and then so the table stays the size of the live windows
    if (++this.hits % 5000 === 0) this.db.prepare(`DELETE FROM rate_counters WHERE window_end < ?`).run(Date.now());
    return (this.hitStmt.get(key, windowStartMs, windowEndMs) as { count: number }).count;
  }

  async peek(key: string, windowStartMs: number): Promise<number> {
    return (this.peekStmt.get(key, windowStartMs) as { count: number } | undefined)?.count ?? 0;
  }

  async close(): Promise<void> {
    this.db.close();
  }
}

export class RedisRateStore implements RateStore {
  constructor(
    private readonly redis: Redis,
    private readonly prefix = 'rl:',
  ) {}

  async hit(key: string, windowStartMs: number, windowEndMs: number): Promise<number> {
    const k = `${this.prefix}${key}:${windowStartMs}`;
    const res = await this.redis.multi().incr(k).pexpireat(k, windowEndMs + 1000).exec();
    const [err, count] = res?.[0] ?? [new Error('redis returned no reply'), null];
    if (err) throw err;
    return Number(count);
  }

  async peek(key: string, windowStartMs: number): Promise<number> {
    return Number((await this.redis.get(`${this.prefix}${key}:${windowStartMs}`)) ?? 0);
  }

  async close(): Promise<void> {
    await this.redis.quit();
  }
}

/** The aligned window containing t: a fixed number of milliseconds, or the UTC calendar month. */
export function windowOf(t: number, span: number | 'month'): { start: number; end: number } {
  if (span === 'month') {
    const d = new Date(t);
    return { start: Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1), end: Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) };
  }
  const start = Math.floor(t / span) * span;
  return { start, end: start + span };
}
