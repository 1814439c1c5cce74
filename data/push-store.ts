/**
 * Browser push subscriptions and the service's VAPID key pair (SQLite). The key pair is generated once, on first
 * use, and kept: every subscription a browser made is bound to the public key it was given.
 *
 * Each subscription also carries which live events it wants (`event_types`, a subset of PUSH_EVENT_TYPES) and a
 * webhook-style `filter_json` (docs/webhooks.md "Browser push"). Those two columns were added after the table
 * first shipped: opening an older file adds them (ALTER TABLE ... ADD COLUMN, guarded by PRAGMA table_info, under
 * a write lock so two processes opening the same old file do not both try); existing rows get the defaults.
 */
import type Database from 'better-sqlite3';
import { addMissingColumns, openSqlite } from './sqlite.ts';

/**
 * The live event types a browser push subscription may ask for. trader.fill is not one of them: the live tail
 * carries about 68 fills per second, far more than a browser should show as notifications.
 */
export const PUSH_EVENT_TYPES = ['signal.smart_money', 'market.resolved'] as const;
export type PushEventType = (typeof PUSH_EVENT_TYPES)[number];
/** event_types of a new subscription that names none */
export const DEFAULT_PUSH_EVENT_TYPES: readonly PushEventType[] = ['signal.smart_money'];

export interface PushSubscriptionRow {
  user_id: string;
  endpoint: string;
  p256dh: string;
  auth: string;
  event_types: string[];
  filter_json: Record<string, unknown>;
  created_at: string;
}

interface RawRow extends Omit<PushSubscriptionRow, 'event_types' | 'filter_json'> {
  event_types: string;
  filter_json: string;
}

const toRow = (r: RawRow): PushSubscriptionRow => ({ ...r, event_types: parseJson(r.event_types, [...DEFAULT_PUSH_EVENT_TYPES]), filter_json: parseJson(r.filter_json, {}) });

function parseJson<T>(s: string, fallback: T): T {
  try {
    return JSON.parse(s) as T;
  } catch {
    return fallback;
  }
}

/** Columns added after the first schema, with their definitions (applied in order to an older file). */
const ADDED_COLUMNS: readonly (readonly [string, string])[] = [
  ['event_types', `TEXT NOT NULL DEFAULT '${JSON.stringify(DEFAULT_PUSH_EVENT_TYPES)}'`],
  ['filter_json', `TEXT NOT NULL DEFAULT '{}'`],
];

export class PushStore {
  readonly db: Database.Database;

  constructor(path: string) {
    this.db = openSqlite(path);
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS push_subscriptions (
        endpoint TEXT PRIMARY KEY, user_id TEXT NOT NULL, p256dh TEXT NOT NULL, auth TEXT NOT NULL, created_at TEXT NOT NULL);
      CREATE INDEX IF NOT EXISTS push_subscriptions_user ON push_subscriptions(user_id);
      CREATE TABLE IF NOT EXISTS service_kv (key TEXT PRIMARY KEY, value TEXT NOT NULL);`);
    addMissingColumns(this.db, 'push_subscriptions', ADDED_COLUMNS);
  }

  close(): void {
    this.db.close();
  }

  /** The stored value, or the one `make` produces, stored first (one writer wins; everyone reads the winner). */
  getOrCreate(key: string, make: () => string): string {
    this.db.prepare(`INSERT INTO service_kv (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING`).run(key, make());
    return (this.db.prepare(`SELECT value FROM service_kv WHERE key = ?`).get(key) as { value: string }).value;
  }

  /**
   * Add or refresh a subscription; returns the stored row. An endpoint belongs to the last user who registered it.
   * `event_types` / `filter_json` replace the stored ones when given; when omitted, a re-subscription by the same
   * user keeps what it had, and a new subscription (or one that changes hands) gets the defaults
   * (DEFAULT_PUSH_EVENT_TYPES, `{}`).
   */
  upsert(s: { user_id: string; endpoint: string; p256dh: string; auth: string; event_types?: readonly string[]; filter_json?: Record<string, unknown> }, nowMs: number): PushSubscriptionRow {
    return this.db
      .transaction(() => {
        const cur = this.get(s.endpoint);
        const keep = cur && cur.user_id === s.user_id;
        const eventTypes = s.event_types ?? (keep ? cur.event_types : DEFAULT_PUSH_EVENT_TYPES);
        const filter = s.filter_json ?? (keep ? cur.filter_json : {});
        this.db
          .prepare(
            `INSERT INTO push_subscriptions (endpoint, user_id, p256dh, auth, event_types, filter_json, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)
             ON CONFLICT (endpoint) DO UPDATE SET user_id = excluded.user_id, p256dh = excluded.p256dh, auth = excluded.auth,
               event_types = excluded.event_types, filter_json = excluded.filter_json`,
          )
          .run(s.endpoint, s.user_id, s.p256dh, s.auth, JSON.stringify(eventTypes), JSON.stringify(filter), new Date(nowMs).toISOString());
        return this.get(s.endpoint)!;
      })
      .immediate();
  }

  get(endpoint: string): PushSubscriptionRow | null {
    const r = this.db.prepare(`SELECT * FROM push_subscriptions WHERE endpoint = ?`).get(endpoint) as RawRow | undefined;
    return r ? toRow(r) : null;
  }

  forUser(userId: string): PushSubscriptionRow[] {
    return (this.db.prepare(`SELECT * FROM push_subscriptions WHERE user_id = ? ORDER BY created_at, endpoint`).all(userId) as RawRow[]).map(toRow);
  }

  /** Every subscription (the push service indexes them at start). */
  all(): PushSubscriptionRow[] {
    return (this.db.prepare(`SELECT * FROM push_subscriptions ORDER BY created_at, endpoint`).all() as RawRow[]).map(toRow);
  }

  remove(endpoint: string): boolean {
    return this.db.prepare(`DELETE FROM push_subscriptions WHERE endpoint = ?`).run(endpoint).changes === 1;
  }
}
