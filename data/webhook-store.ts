/**
 * Webhook subscriptions and the durable delivery outbox (the service state: SQLite by default, PostgreSQL with
 * DATABASE_URL — data/sql/db.ts).
 *
 * An event for a subscription is written to the outbox before anything is sent, with its event id (the same on
 * every retry). Workers claim due deliveries with a lease; a worker that dies mid-send leaves the lease to expire
 * and the delivery is attempted again (at-least-once: receivers deduplicate on the event id). Deliveries count
 * against the owner's monthly event quota when they are enqueued.
 *
 * Several workers, processes or replicas claim from one outbox: a claim is one conditional UPDATE (a row is taken
 * only while it is pending and its lease has run out; PostgreSQL also skips rows another claim holds), so a delivery
 * is never handed to two workers at once. The monthly usage counter is checked and counted under one named lock
 * (enqueue, and live pushes through reserveUsage), so a quota is never overrun, whichever replica counts.
 */
import { randomBytes } from 'node:crypto';
import type { SqlDb, SqlValue } from './sql/db.ts';
import { ServiceStore, openMigrated, type Migration } from './sql/migrate.ts';

/**
 * pending: in the outbox, to be tried here (SQLite worker) or handed to the Redis queue (relay).
 * queued: handed to the Redis queue, whose job is the record from then on (jobs/webhooks/redis-queue.ts).
 */
export type DeliveryStatus = 'pending' | 'queued' | 'delivered' | 'exhausted' | 'dropped';

export interface SubscriptionRow {
  id: string;
  user_id: string;
  target_url: string;
  event_types: string[];
  filter_json: Record<string, unknown>;
  active: boolean;
  created_at: string;
  updated_at: string;
}

/** The spec's webhook subscription fields, exactly (what the API shows). */
export type SubscriptionView = Pick<SubscriptionRow, 'id' | 'target_url' | 'event_types' | 'filter_json' | 'active' | 'created_at'>;

/** A subscription to create: its fields and its signing secret. */
export type NewSubscription = Pick<SubscriptionRow, 'user_id' | 'target_url' | 'event_types' | 'filter_json' | 'active'> & { secret: string };

export interface DeliveryRow {
  delivery_id: number;
  event_id: string;
  subscription_id: string;
  type: string;
  body: string;
  attempts: number;
  next_attempt_ms: number;
  /** until when the last claim holds the row (0: free); a claim returns the lease it set, which fences its outcome */
  lease_until_ms: number;
  status: DeliveryStatus;
  last_status: number | null;
  last_error: string | null;
  created_ms: number;
  delivered_ms: number | null;
}

const iso = (ms: number) => new Date(ms).toISOString();
/** The quota month of a moment: its UTC calendar month, YYYY-MM (webhook deliveries and live pushes count in it). */
export const usageMonth = (ms: number): string => iso(ms).slice(0, 7);

interface SecretRow {
  secret: string;
  previous_secret: string | null;
  previous_secret_until_ms: number | null;
}

/** Where and how to deliver for one subscription: its URL, its secret and the rotated-out one with its end. */
export interface DeliveryTarget {
  id: string;
  target_url: string;
  secret: string;
  previous_secret: string | null;
  previous_secret_until_ms: number | null;
}

/** The current secret, then the previous one while `nowMs` is before its end. */
export function activeSecrets(r: SecretRow, nowMs: number): string[] {
  return r.previous_secret && (r.previous_secret_until_ms ?? 0) > nowMs ? [r.secret, r.previous_secret] : [r.secret];
}

const toTarget = (r: SecretRow & { id: string; target_url: string }): DeliveryTarget => ({
  id: r.id,
  target_url: r.target_url,
  secret: r.secret,
  previous_secret: r.previous_secret ?? null,
  previous_secret_until_ms: r.previous_secret_until_ms ?? null,
});
const B32 = 'abcdefghijklmnopqrstuvwxyz234567';
/** prefix_ + 16 base32 characters (80 random bits) */
export function shortId(prefix: string): string {
  return `${prefix}_${[...randomBytes(16)].map((b) => B32[b & 31]).join('')}`;
}

interface RawSub {
  id: string;
  user_id: string;
  target_url: string;
  event_types: string;
  filter_json: string;
  active: number;
  secret: string;
  created_at: string;
  updated_at: string;
}

const toSub = (r: RawSub): SubscriptionRow => ({
  id: r.id,
  user_id: r.user_id,
  target_url: r.target_url,
  event_types: JSON.parse(r.event_types) as string[],
  filter_json: JSON.parse(r.filter_json) as Record<string, unknown>,
  active: r.active === 1,
  created_at: r.created_at,
  updated_at: r.updated_at,
});

/** The columns a table has now (a migration adds the ones an older database lacks). */
async function columnsOf(db: SqlDb, table: string): Promise<Set<string>> {
  const rows =
    db.dialect === 'sqlite'
      ? await db.all<{ name: string }>(`PRAGMA table_info(${table})`)
      : await db.all<{ name: string }>(`SELECT column_name AS name FROM information_schema.columns WHERE table_name = '${table}' AND table_schema = current_schema()`);
  return new Set(rows.map((c) => c.name));
}

/** The webhook tables, version by version (data/sql/migrate.ts). */
export const WEBHOOK_MIGRATIONS: readonly Migration[] = [
  {
    name: '0001-webhooks',
    async up(db) {
      const sqlite = db.dialect === 'sqlite';
      // IF NOT EXISTS: a SQLite file from before versioned migrations already has these tables
      await db.exec(`
      CREATE TABLE IF NOT EXISTS webhook_subscriptions (
        id TEXT PRIMARY KEY, user_id TEXT NOT NULL, target_url TEXT NOT NULL, event_types TEXT NOT NULL,
        filter_json TEXT NOT NULL, active INTEGER NOT NULL, secret TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
      CREATE INDEX IF NOT EXISTS webhook_subscriptions_user ON webhook_subscriptions(user_id);
      CREATE TABLE IF NOT EXISTS webhook_deliveries (
        ${sqlite ? 'delivery_id INTEGER PRIMARY KEY AUTOINCREMENT' : 'delivery_id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY'},
        event_id TEXT NOT NULL, subscription_id TEXT NOT NULL,
        user_id TEXT NOT NULL, type TEXT NOT NULL, body TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
        next_attempt_ms BIGINT NOT NULL, lease_until_ms BIGINT NOT NULL DEFAULT 0, status TEXT NOT NULL,
        last_status INTEGER, last_error TEXT, created_ms BIGINT NOT NULL, delivered_ms BIGINT, month TEXT NOT NULL,
        UNIQUE (event_id, subscription_id));
      CREATE INDEX IF NOT EXISTS webhook_deliveries_due ON webhook_deliveries(status, next_attempt_ms);
      CREATE INDEX IF NOT EXISTS webhook_deliveries_quota ON webhook_deliveries(user_id, month);
      CREATE INDEX IF NOT EXISTS webhook_deliveries_created ON webhook_deliveries(created_ms);
      CREATE INDEX IF NOT EXISTS webhook_deliveries_sub ON webhook_deliveries(subscription_id, delivery_id);
      CREATE TABLE IF NOT EXISTS webhook_usage (
        user_id TEXT NOT NULL, month TEXT NOT NULL, used BIGINT NOT NULL, PRIMARY KEY (user_id, month))${sqlite ? ' WITHOUT ROWID' : ''};`);
    },
  },
  {
    // secret rotation: the secret being rotated out, and until when deliveries are also signed with it
    name: '0002-secret-rotation',
    async up(db) {
      const have = await columnsOf(db, 'webhook_subscriptions');
      if (!have.has('previous_secret')) await db.exec(`ALTER TABLE webhook_subscriptions ADD COLUMN previous_secret TEXT`);
      if (!have.has('previous_secret_until_ms')) await db.exec(`ALTER TABLE webhook_subscriptions ADD COLUMN previous_secret_until_ms BIGINT`);
    },
  },
];

/** The lock under which the monthly usage counter is checked and counted (webhook enqueues, live pushes). */
const USAGE_LOCK = 'webhook_usage';
/** ids per statement in the batch updates (well under either engine's parameter limit) */
const ID_CHUNK = 500;

export class WebhookStore extends ServiceStore {
  /** The store on `target`: an open service database (shared with the other stores), or a SQLite path / PostgreSQL URL it opens and owns. */
  static async open(target: SqlDb | string): Promise<WebhookStore> {
    const { db, owned } = await openMigrated(target, 'webhooks', WEBHOOK_MIGRATIONS);
    return new WebhookStore(db, owned);
  }

  // ------------------------------------------------------------------------------------------------------------
  // Subscriptions
  // ------------------------------------------------------------------------------------------------------------

  private async insertSub(db: SqlDb, s: NewSubscription, nowMs: number): Promise<SubscriptionRow> {
    const r = await db.get<RawSub>(
      `INSERT INTO webhook_subscriptions (id, user_id, target_url, event_types, filter_json, active, secret, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`,
      [shortId('wh'), s.user_id, s.target_url, JSON.stringify(s.event_types), JSON.stringify(s.filter_json), s.active ? 1 : 0, s.secret, iso(nowMs), iso(nowMs)],
    );
    return toSub(r!);
  }

  async create(s: NewSubscription, nowMs: number): Promise<SubscriptionRow> {
    return this.insertSub(this.db, s, nowMs);
  }

  /**
   * Create unless the user already has `limit` subscriptions (null then): counted and written under the user's lock,
   * so concurrent creations (another request, another replica) cannot pass the plan's limit together.
   */
  async createWithin(s: NewSubscription, limit: number, nowMs: number): Promise<SubscriptionRow | null> {
    return this.db.tx(
      async (t) => {
        const n = (await t.get<{ n: number }>(`SELECT count(*) AS n FROM webhook_subscriptions WHERE user_id = ?`, [s.user_id]))!.n;
        return Number(n) >= limit ? null : this.insertSub(t, s, nowMs);
      },
      { lock: `webhook_subscriptions:${s.user_id}` },
    );
  }

  async get(id: string): Promise<SubscriptionRow | null> {
    const r = await this.db.get<RawSub>(`SELECT * FROM webhook_subscriptions WHERE id = ?`, [id]);
    return r ? toSub(r) : null;
  }

  /** The secrets a delivery is signed with now: the current one, then the rotated-out one while its grace lasts. */
  async signingSecrets(id: string, nowMs: number): Promise<string[]> {
    const r = await this.db.get<SecretRow>(`SELECT secret, previous_secret, previous_secret_until_ms FROM webhook_subscriptions WHERE id = ?`, [id]);
    return r ? activeSecrets(r, nowMs) : [];
  }

  /** Replace the signing secret; the old one keeps signing (alongside) until `graceUntilMs`. */
  async rotateSecret(id: string, userId: string, secret: string, graceUntilMs: number, nowMs: number): Promise<boolean> {
    // one statement: the secret it replaces is the one stored at that moment, whatever another replica did before
    const grace = graceUntilMs > nowMs;
    const r = await this.db.run(
      `UPDATE webhook_subscriptions SET previous_secret = CASE WHEN ? = 1 THEN secret END, previous_secret_until_ms = ?,
       secret = ?, updated_at = ? WHERE id = ? AND user_id = ?`,
      [grace ? 1 : 0, grace ? graceUntilMs : null, secret, iso(nowMs), id, userId],
    );
    return r.changes === 1;
  }

  async listFor(userId: string): Promise<SubscriptionRow[]> {
    return (await this.db.all<RawSub>(`SELECT * FROM webhook_subscriptions WHERE user_id = ? ORDER BY created_at, id`, [userId])).map(toSub);
  }

  async all(): Promise<SubscriptionRow[]> {
    return (await this.db.all<RawSub>(`SELECT * FROM webhook_subscriptions ORDER BY created_at, id`)).map(toSub);
  }

  async countFor(userId: string): Promise<number> {
    return Number((await this.db.get<{ n: number }>(`SELECT count(*) AS n FROM webhook_subscriptions WHERE user_id = ?`, [userId]))!.n);
  }

  /** Change the fields given (one statement: fields another replica changed meanwhile and not given here stay). */
  async update(id: string, userId: string, patch: Partial<Pick<SubscriptionRow, 'target_url' | 'event_types' | 'filter_json' | 'active'>>, nowMs: number): Promise<SubscriptionRow | null> {
    const r = await this.db.get<RawSub>(
      `UPDATE webhook_subscriptions SET target_url = COALESCE(?, target_url), event_types = COALESCE(?, event_types), filter_json = COALESCE(?, filter_json),
       active = COALESCE(?, active), updated_at = ? WHERE id = ? AND user_id = ? RETURNING *`,
      [
        patch.target_url ?? null,
        patch.event_types === undefined ? null : JSON.stringify(patch.event_types),
        patch.filter_json === undefined ? null : JSON.stringify(patch.filter_json),
        patch.active === undefined ? null : patch.active ? 1 : 0,
        iso(nowMs),
        id,
        userId,
      ],
    );
    return r ? toSub(r) : null;
  }

  /** Delete a subscription; its pending deliveries are dropped (nothing is sent to a deleted subscription). */
  async delete(id: string, userId: string): Promise<boolean> {
    return this.db.tx(async (t) => {
      const r = await t.run(`DELETE FROM webhook_subscriptions WHERE id = ? AND user_id = ?`, [id, userId]);
      if (r.changes) await t.run(`UPDATE webhook_deliveries SET status = 'dropped', last_error = 'subscription deleted' WHERE subscription_id = ? AND status = 'pending'`, [id]);
      return r.changes === 1;
    });
  }

  // ------------------------------------------------------------------------------------------------------------
  // Outbox
  // ------------------------------------------------------------------------------------------------------------

  private async usedIn(db: SqlDb, userId: string, month: string): Promise<number> {
    const r = await db.get<{ used: number }>(`SELECT used FROM webhook_usage WHERE user_id = ? AND month = ?`, [userId, month]);
    return r ? Number(r.used) : 0;
  }

  private async bump(db: SqlDb, userId: string, month: string, n: number): Promise<void> {
    await db.run(
      `INSERT INTO webhook_usage (user_id, month, used) VALUES (?, ?, ?) ON CONFLICT (user_id, month) DO UPDATE SET used = webhook_usage.used + excluded.used`,
      [userId, month, n],
    );
  }

  /** Deliveries enqueued for a user in a calendar month (YYYY-MM), i.e. quota used (a counter kept with the outbox). */
  async used(userId: string, month: string): Promise<number> {
    return this.usedIn(this.db, userId, month);
  }

  /** Count deliveries against a user's month (also for deliveries written outside enqueue, e.g. imports; negative gives back). */
  async addUsage(userId: string, month: string, n: number): Promise<void> {
    await this.bump(this.db, userId, month, n);
  }

  /**
   * Count up to `n` events against a user's month, as far as `quota` allows, in one step under the usage lock (live
   * pushes share the webhook counter this way); returns how many were counted (0 … n).
   */
  async reserveUsage(userId: string, month: string, n: number, quota: number): Promise<number> {
    if (n <= 0 || quota <= 0) return 0;
    return this.db.tx(
      async (t) => {
        const k = Math.max(0, Math.min(n, quota - (await this.usedIn(t, userId, month))));
        if (k > 0) await this.bump(t, userId, month, k);
        return k;
      },
      { lock: USAGE_LOCK },
    );
  }

  /**
   * Enqueue one event for several subscriptions in one transaction, each only if its owner has quota left this
   * month (quota(user) gives the plan's monthly events). Returns how many were enqueued and how many were over quota.
   * An (event, subscription) pair is enqueued (and counted) at most once.
   */
  async enqueue(
    event: { id: string; type: string; body: string },
    subs: readonly { id: string; user_id: string }[],
    quota: (userId: string) => number,
    nowMs: number,
  ): Promise<{ enqueued: number; over_quota: number }> {
    const month = usageMonth(nowMs);
    return this.db.tx(
      async (t) => {
        let enqueued = 0;
        let over = 0;
        const usedNow = new Map<string, number>();
        const added = new Map<string, number>();
        for (const s of subs) {
          const used = usedNow.get(s.user_id) ?? (await this.usedIn(t, s.user_id, month));
          if (used >= quota(s.user_id)) {
            usedNow.set(s.user_id, used);
            over++;
            continue;
          }
          const r = await t.run(
            `INSERT INTO webhook_deliveries (event_id, subscription_id, user_id, type, body, next_attempt_ms, status, created_ms, month)
             VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?) ON CONFLICT (event_id, subscription_id) DO NOTHING`,
            [event.id, s.id, s.user_id, event.type, event.body, nowMs, nowMs, month],
          );
          if (r.changes) {
            enqueued++;
            usedNow.set(s.user_id, used + 1);
            added.set(s.user_id, (added.get(s.user_id) ?? 0) + 1);
          } else usedNow.set(s.user_id, used);
        }
        for (const [user, n] of added) await this.bump(t, user, month, n);
        return { enqueued, over_quota: over };
      },
      { lock: USAGE_LOCK },
    );
  }

  /**
   * Claim up to `limit` due deliveries for `leaseMs` (a crashed worker's lease expires and the delivery is retried).
   * One conditional UPDATE: a row is taken only while pending with its lease run out, so two workers (processes,
   * replicas) never hold one delivery at once. On PostgreSQL the rows are picked first (once: a materialized CTE, as
   * a LIMIT subquery under UPDATE may run again and take more), locked, skipping rows another claim is taking
   * instead of waiting for them; SQLite runs the statement under its write lock.
   */
  async claim(limit: number, nowMs: number, leaseMs: number): Promise<DeliveryRow[]> {
    const rows =
      this.db.dialect === 'postgres'
        ? await this.db.all<DeliveryRow>(
            `WITH picked AS MATERIALIZED (
               SELECT delivery_id FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_ms <= ? AND lease_until_ms <= ?
               ORDER BY next_attempt_ms, delivery_id LIMIT ? FOR UPDATE SKIP LOCKED)
             UPDATE webhook_deliveries d SET lease_until_ms = ? FROM picked
             WHERE d.delivery_id = picked.delivery_id AND d.status = 'pending' AND d.lease_until_ms <= ?
             RETURNING d.*`,
            [nowMs, nowMs, limit, nowMs + leaseMs, nowMs],
          )
        : await this.db.all<DeliveryRow>(
            `UPDATE webhook_deliveries SET lease_until_ms = ?
             WHERE delivery_id IN (SELECT delivery_id FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_ms <= ? AND lease_until_ms <= ?
                                   ORDER BY next_attempt_ms, delivery_id LIMIT ?)
             RETURNING *`,
            [nowMs + leaseMs, nowMs, nowMs, limit],
          );
    return rows.sort((a, b) => a.next_attempt_ms - b.next_attempt_ms || a.delivery_id - b.delivery_id);
  }

  /**
   * A 2xx answer. It is final even over an exhausted delivery: a worker whose lease ran out mid-send (a process held
   * past it) can get its 2xx after a later claim's failures exhausted the row, and the receiver did get the event.
   */
  async delivered(id: number, httpStatus: number, nowMs: number): Promise<void> {
    await this.db.run(
      `UPDATE webhook_deliveries SET status = 'delivered', attempts = attempts + 1, last_status = ?, last_error = NULL, delivered_ms = ?, lease_until_ms = 0 WHERE delivery_id = ? AND status IN ('pending', 'exhausted')`,
      [httpStatus, nowMs, id],
    );
  }

  /**
   * A failed attempt: schedule the next one, or mark the delivery exhausted (never replayed). Given the lease its claim
   * set (`leaseUntilMs`), it counts only while that lease is still the row's: once another claim has taken the row, a
   * late failure of the stale attempt would count a try twice and could exhaust the delivery early.
   */
  async failed(id: number, httpStatus: number | null, error: string, nextAttemptMs: number | null, leaseUntilMs?: number): Promise<void> {
    const fence = leaseUntilMs === undefined ? '' : ' AND lease_until_ms = ?';
    const fenced = leaseUntilMs === undefined ? [] : [leaseUntilMs];
    // exhausted, or pending again at its next attempt
    const next = nextAttemptMs === null ? `status = 'exhausted'` : 'next_attempt_ms = ?';
    await this.db.run(
      `UPDATE webhook_deliveries SET ${next}, attempts = attempts + 1, last_status = ?, last_error = ?, lease_until_ms = 0 WHERE delivery_id = ? AND status = 'pending'${fence}`,
      [...(nextAttemptMs === null ? [] : [nextAttemptMs]), httpStatus, error.slice(0, 500), id, ...fenced],
    );
  }

  /** One UPDATE per chunk of ids, all in one transaction: `sql` ends in `delivery_id IN` and takes `params` first. */
  private async updateIds(sql: string, params: readonly SqlValue[], ids: readonly number[]): Promise<void> {
    if (!ids.length) return;
    await this.db.tx(async (t) => {
      for (let i = 0; i < ids.length; i += ID_CHUNK) {
        const chunk = ids.slice(i, i + ID_CHUNK);
        await t.run(`${sql} (${chunk.map(() => '?').join(', ')})`, [...params, ...chunk]);
      }
    });
  }

  /** Claimed deliveries now owned by the Redis queue (the relay calls this once the queue has them). */
  async handedOff(ids: readonly number[], nowMs: number): Promise<void> {
    await this.updateIds(`UPDATE webhook_deliveries SET status = 'queued', lease_until_ms = 0, next_attempt_ms = ? WHERE status = 'pending' AND delivery_id IN`, [nowMs], ids);
  }

  /** Give claimed deliveries back at once (the relay could not hand them off; no need to wait for the lease). */
  async release(ids: readonly number[]): Promise<void> {
    await this.updateIds(`UPDATE webhook_deliveries SET lease_until_ms = 0 WHERE status = 'pending' AND delivery_id IN`, [], ids);
  }

  /** Every subscription's target and signing secrets (what Redis workers on other machines need to deliver). */
  async targets(): Promise<DeliveryTarget[]> {
    return (await this.db.all<SecretRow & { id: string; target_url: string }>(`SELECT id, target_url, secret, previous_secret, previous_secret_until_ms FROM webhook_subscriptions ORDER BY id`)).map(toTarget);
  }

  async target(id: string): Promise<DeliveryTarget | null> {
    const r = await this.db.get<SecretRow & { id: string; target_url: string }>(`SELECT id, target_url, secret, previous_secret, previous_secret_until_ms FROM webhook_subscriptions WHERE id = ?`, [id]);
    return r ? toTarget(r) : null;
  }

  /**
   * Delete settled outbox rows created before `beforeMs` (delivered, exhausted, dropped, and queued ones, whose
   * record is the Redis job by then). Pending rows are never pruned. Monthly usage is a separate counter and stays.
   */
  async prune(beforeMs: number, limit = 5000): Promise<number> {
    // a bounded batch per call, so a caller can yield between batches instead of holding the database on millions of rows
    return (
      await this.db.run(
        `DELETE FROM webhook_deliveries WHERE delivery_id IN (SELECT delivery_id FROM webhook_deliveries WHERE status <> 'pending' AND created_ms < ? ORDER BY created_ms LIMIT ?)`,
        [beforeMs, limit],
      )
    ).changes;
  }

  /**
   * Write the Redis queue's final outcomes back to their rows (a delivery seen delivered stays delivered). A row may
   * still read pending: the relay marks it queued after the queue has it, on another connection, and a fast worker's
   * outcome can land first. The outcome is final either way, and the relay's late hand-off only touches pending rows.
   */
  async settleFromQueue(
    outcomes: readonly { event_id: string; subscription_id: string; status: 'delivered' | 'exhausted' | 'dropped'; attempts: number; http_status: number | null; error: string | null; at_ms: number }[],
  ): Promise<void> {
    if (!outcomes.length) return;
    const greatest = this.db.dialect === 'sqlite' ? 'max' : 'GREATEST';
    await this.db.tx(async (t) => {
      for (const o of outcomes)
        await t.run(
          `UPDATE webhook_deliveries SET status = ?, attempts = ${greatest}(attempts, ?), last_status = ?, last_error = ?, delivered_ms = ?
           WHERE event_id = ? AND subscription_id = ? AND (status IN ('queued', 'pending') OR (? = 1 AND status = 'exhausted'))`,
          [o.status, o.attempts, o.http_status, o.error, o.status === 'delivered' ? o.at_ms : null, o.event_id, o.subscription_id, o.status === 'delivered' ? 1 : 0],
        );
    });
  }

  /** How many subscriptions there are (the Redis mirror should hold as many). */
  async countAll(): Promise<number> {
    return Number((await this.db.get<{ n: number }>(`SELECT count(*) AS n FROM webhook_subscriptions`))!.n);
  }

  /** A subscription's deliveries, newest first, before the delivery id `before` (keyset pagination). */
  async deliveriesOf(subscriptionId: string, opts: { limit: number; before?: number; statuses?: readonly DeliveryStatus[] }): Promise<DeliveryRow[]> {
    const statuses = opts.statuses ?? [];
    return this.db.all<DeliveryRow>(
      `SELECT * FROM webhook_deliveries WHERE subscription_id = ? AND delivery_id < ?
       ${statuses.length ? `AND status IN (${statuses.map(() => '?').join(', ')})` : ''} ORDER BY delivery_id DESC LIMIT ?`,
      [subscriptionId, opts.before ?? Number.MAX_SAFE_INTEGER, ...statuses, opts.limit],
    );
  }

  async delivery(eventId: string, subscriptionId: string): Promise<DeliveryRow | null> {
    return (await this.db.get<DeliveryRow>(`SELECT * FROM webhook_deliveries WHERE event_id = ? AND subscription_id = ?`, [eventId, subscriptionId])) ?? null;
  }

  /** Outbox figures for operators and tests. */
  async counts(): Promise<Record<DeliveryStatus, number>> {
    const out: Record<DeliveryStatus, number> = { pending: 0, queued: 0, delivered: 0, exhausted: 0, dropped: 0 };
    for (const r of await this.db.all<{ status: DeliveryStatus; n: number }>(`SELECT status, count(*) AS n FROM webhook_deliveries GROUP BY status`)) out[r.status] = Number(r.n);
    return out;
  }
}
