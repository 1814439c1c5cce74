/**
 * Browser push subscriptions and the service's VAPID key pair (the service state: SQLite by default, PostgreSQL with
 * DATABASE_URL — data/sql/db.ts). The key pair is generated once, on first use, and kept: every subscription a
 * browser made is bound to the public key it was given (the first writer wins, every replica reads the winner).
 *
 * Each subscription also carries which live events it wants (`event_types`, a subset of PUSH_EVENT_TYPES) and a
 * webhook-style `filter_json` (docs/webhooks.md "Browser push"). Those two columns were added after the table
 * first shipped: migration 0002 adds them to an older database (checking which columns it has, under the
 * migrations' lock so two processes opening the same old file do not both try); existing rows get the defaults.
 */
import type { SqlDb } from './sql/db.ts';
import { ServiceStore, openMigrated, type Migration } from './sql/migrate.ts';

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

/** Columns added after the first schema, with their definitions (applied in order to an older database). */
const ADDED_COLUMNS: readonly (readonly [string, string])[] = [
  ['event_types', `TEXT NOT NULL DEFAULT '${JSON.stringify(DEFAULT_PUSH_EVENT_TYPES)}'`],
  ['filter_json', `TEXT NOT NULL DEFAULT '{}'`],
];

/** The push tables, version by version (data/sql/migrate.ts). */
export const PUSH_MIGRATIONS: readonly Migration[] = [
  {
    name: '0001-push',
    async up(db) {
      // IF NOT EXISTS: a SQLite file from before versioned migrations already has these tables
      await db.exec(`
      CREATE TABLE IF NOT EXISTS push_subscriptions (
        endpoint TEXT PRIMARY KEY, user_id TEXT NOT NULL, p256dh TEXT NOT NULL, auth TEXT NOT NULL, created_at TEXT NOT NULL);
      CREATE INDEX IF NOT EXISTS push_subscriptions_user ON push_subscriptions(user_id);
      CREATE TABLE IF NOT EXISTS service_kv (key TEXT PRIMARY KEY, value TEXT NOT NULL);`);
    },
  },
  {
    // which live events a subscription wants, and its filter
    name: '0002-push-event-filters',
    async up(db) {
      const have =
        db.dialect === 'sqlite'
          ? new Set((await db.all<{ name: string }>(`PRAGMA table_info(push_subscriptions)`)).map((c) => c.name))
          : new Set((await db.all<{ name: string }>(`SELECT column_name AS name FROM information_schema.columns WHERE table_name = 'push_subscriptions' AND table_schema = current_schema()`)).map((c) => c.name));
      for (const [name, def] of ADDED_COLUMNS) if (!have.has(name)) await db.exec(`ALTER TABLE push_subscriptions ADD COLUMN ${name} ${def}`);
    },
  },
];

export class PushStore extends ServiceStore {
  /** The store on `target`: an open service database (shared with the other stores), or a SQLite path / PostgreSQL URL it opens and owns. */
  static async open(target: SqlDb | string): Promise<PushStore> {
    const { db, owned } = await openMigrated(target, 'push', PUSH_MIGRATIONS);
    return new PushStore(db, owned);
  }

  /** The stored value, or the one `make` produces, stored first (one writer wins; everyone reads the winner). */
  async getOrCreate(key: string, make: () => string): Promise<string> {
    const read = async () => (await this.db.get<{ value: string }>(`SELECT value FROM service_kv WHERE key = ?`, [key]))?.value;
    const have = await read();
    if (have !== undefined) return have;
    await this.db.run(`INSERT INTO service_kv (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING`, [key, make()]);
    return (await read())!;
  }

  /**
   * Add or refresh a subscription; returns the stored row. An endpoint belongs to the last user who registered it.
   * `event_types` / `filter_json` replace the stored ones when given; when omitted, a re-subscription by the same
   * user keeps what it had, and a new subscription (or one that changes hands) gets the defaults
   * (DEFAULT_PUSH_EVENT_TYPES, `{}`). One statement, so the keep-or-replace decision is made on the row as stored at
   * that moment, whichever replica wrote it last.
   */
  async upsert(
    s: { user_id: string; endpoint: string; p256dh: string; auth: string; event_types?: readonly string[]; filter_json?: Record<string, unknown> },
    nowMs: number,
  ): Promise<PushSubscriptionRow> {
    const r = await this.db.get<RawRow>(
      `INSERT INTO push_subscriptions (endpoint, user_id, p256dh, auth, event_types, filter_json, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (endpoint) DO UPDATE SET user_id = excluded.user_id, p256dh = excluded.p256dh, auth = excluded.auth,
         event_types = CASE WHEN ? = 0 AND push_subscriptions.user_id = excluded.user_id THEN push_subscriptions.event_types ELSE excluded.event_types END,
         filter_json = CASE WHEN ? = 0 AND push_subscriptions.user_id = excluded.user_id THEN push_subscriptions.filter_json ELSE excluded.filter_json END
       RETURNING *`,
      [
        s.endpoint,
        s.user_id,
        s.p256dh,
        s.auth,
        JSON.stringify(s.event_types ?? DEFAULT_PUSH_EVENT_TYPES),
        JSON.stringify(s.filter_json ?? {}),
        new Date(nowMs).toISOString(),
        s.event_types === undefined ? 0 : 1,
        s.filter_json === undefined ? 0 : 1,
      ],
    );
    return toRow(r!);
  }

  async get(endpoint: string): Promise<PushSubscriptionRow | null> {
    const r = await this.db.get<RawRow>(`SELECT * FROM push_subscriptions WHERE endpoint = ?`, [endpoint]);
    return r ? toRow(r) : null;
  }

  async forUser(userId: string): Promise<PushSubscriptionRow[]> {
    return (await this.db.all<RawRow>(`SELECT * FROM push_subscriptions WHERE user_id = ? ORDER BY created_at, endpoint`, [userId])).map(toRow);
  }

  /** Every subscription (the push service indexes them at start). */
  async all(): Promise<PushSubscriptionRow[]> {
    return (await this.db.all<RawRow>(`SELECT * FROM push_subscriptions ORDER BY created_at, endpoint`)).map(toRow);
  }

  async remove(endpoint: string): Promise<boolean> {
    return (await this.db.run(`DELETE FROM push_subscriptions WHERE endpoint = ?`, [endpoint])).changes === 1;
  }
}
