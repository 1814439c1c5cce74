/**
 * Fixed-window request counters behind one interface: the service state's SQL database by default (SQLite embedded,
 * or PostgreSQL shared by every replica; survives restarts) and Redis when REDIS_URL is configured (shared by every
 * instance).
 *
 * A counter is named by a key and a window [start, end); `hit` adds one and returns the count so far, so a limit
 * check is `count <= limit`. Windows are aligned (per minute, per calendar month), which makes every instance agree
 * on them without coordination.
 */
import type { SqlDb } from './sql/db.ts';
import { ServiceStore, openMigrated, type Migration } from './sql/migrate.ts';
import type { Redis } from 'ioredis';

export interface RateStore {
  /** add one to the counter (key, window) and return its value; the counter is dropped after windowEndMs */
  hit(key: string, windowStartMs: number, windowEndMs: number): Promise<number>;
  /** the counter's value without adding to it */
  peek(key: string, windowStartMs: number): Promise<number>;
  close(): Promise<void>;
}

/** The counters' table, version by version (data/sql/migrate.ts). */
export const RATE_MIGRATIONS: readonly Migration[] = [
  {
    name: '0001-rate-counters',
    async up(db) {
      // IF NOT EXISTS: a SQLite file from before versioned migrations already has the table
      await db.exec(`CREATE TABLE IF NOT EXISTS rate_counters (
        key TEXT NOT NULL, window_start BIGINT NOT NULL, window_end BIGINT NOT NULL, count INTEGER NOT NULL,
        PRIMARY KEY (key, window_start))${db.dialect === 'sqlite' ? ' WITHOUT ROWID' : ''}`);
    },
  },
];

/**
 * Counters in the service database: one upsert per hit (INSERT … ON CONFLICT DO UPDATE … RETURNING), atomic in
 * either engine, so concurrent hits from any number of replicas each get their own count.
 */
export class SqlRateStore extends ServiceStore implements RateStore {
  private hits = 0;

  /** The store on `target`: an open service database (shared with the other stores), or a SQLite path / PostgreSQL URL it opens and owns. */
  static async open(target: SqlDb | string): Promise<SqlRateStore> {
    const { db, owned } = await openMigrated(target, 'rate_counters', RATE_MIGRATIONS);
    return new SqlRateStore(db, owned);
  }

  async hit(key: string, windowStartMs: number, windowEndMs: number): Promise<number> {
    // sweep ended windows now and then so the table stays the size of the live windows
    if (++this.hits % 5000 === 0) await this.db.run(`DELETE FROM rate_counters WHERE window_end < ?`, [Date.now()]);
    const r = await this.db.get<{ count: number }>(
      `INSERT INTO rate_counters (key, window_start, window_end, count) VALUES (?, ?, ?, 1)
       ON CONFLICT (key, window_start) DO UPDATE SET count = rate_counters.count + 1 RETURNING count`,
      [key, windowStartMs, windowEndMs],
    );
    return Number(r!.count);
  }

  async peek(key: string, windowStartMs: number): Promise<number> {
    const r = await this.db.get<{ count: number }>(`SELECT count FROM rate_counters WHERE key = ? AND window_start = ?`, [key, windowStartMs]);
    return r ? Number(r.count) : 0;
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
