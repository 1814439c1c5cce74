/**
 * Browser push subscriptions and the service's VAPID key pair (SQLite). The key pair is generated once, on first
 * use, and kept: every subscription a browser made is bound to the public key it was given.
 */
import type Database from 'better-sqlite3';
import { openSqlite } from './sqlite.ts';

export interface PushSubscriptionRow {
  user_id: string;
  endpoint: string;
  p256dh: string;
  auth: string;
  created_at: string;
}

export class PushStore {
  readonly db: Database.Database;

  constructor(path: string) {
    this.db = openSqlite(path);
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS push_subscriptions (
        endpoint TEXT PRIMARY KEY, user_id TEXT NOT NULL, p256dh TEXT NOT NULL, auth TEXT NOT NULL, created_at TEXT NOT NULL);
      CREATE INDEX IF NOT EXISTS push_subscriptions_user ON push_subscriptions(user_id);
      CREATE TABLE IF NOT EXISTS service_kv (key TEXT PRIMARY KEY, value TEXT NOT NULL);`);
  }

  close(): void {
    this.db.close();
  }

  /** The stored value, or the one `make` produces, stored first (one writer wins; everyone reads the winner). */
  getOrCreate(key: string, make: () => string): string {
    this.db.prepare(`INSERT INTO service_kv (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING`).run(key, make());
    return (this.db.prepare(`SELECT value FROM service_kv WHERE key = ?`).get(key) as { value: string }).value;
  }

  /** Add or refresh a subscription (an endpoint belongs to the last user who registered it). */
  upsert(s: Omit<PushSubscriptionRow, 'created_at'>, nowMs: number): void {
    this.db
      .prepare(
        `INSERT INTO push_subscriptions (endpoint, user_id, p256dh, auth, created_at) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (endpoint) DO UPDATE SET user_id = excluded.user_id, p256dh = excluded.p256dh, auth = excluded.auth`,
      )
      .run(s.endpoint, s.user_id, s.p256dh, s.auth, new Date(nowMs).toISOString());
  }

  forUser(userId: string): PushSubscriptionRow[] {
    return this.db.prepare(`SELECT * FROM push_subscriptions WHERE user_id = ? ORDER BY created_at, endpoint`).all(userId) as PushSubscriptionRow[];
  }

  remove(endpoint: string): boolean {
    return this.db.prepare(`DELETE FROM push_subscriptions WHERE endpoint = ?`).run(endpoint).changes === 1;
  }
}
