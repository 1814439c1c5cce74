/**
 * Webhook subscriptions and the durable delivery outbox (SQLite, the embedded default).
 *
 * An event for a subscription is written to the outbox before anything is sent, with its event id (the same on
 * every retry). Workers claim due deliveries with a lease; a worker that dies mid-send leaves the lease to expire
 * and the delivery is attempted again (at-least-once: receivers deduplicate on the event id). Deliveries count
 * against the owner's monthly event quota when they are enqueued.
 */
import { randomBytes } from 'node:crypto';
import type Database from 'better-sqlite3';
import { addMissingColumns, openSqlite } from './sqlite.ts';

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

export interface DeliveryRow {
  delivery_id: number;
  event_id: string;
  subscription_id: string;
  type: string;
  body: string;
  attempts: number;
  next_attempt_ms: number;
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

export class WebhookStore {
  readonly db: Database.Database;
  private readonly usedStmt: Database.Statement;
  private readonly bumpStmt: Database.Statement;

  constructor(path: string) {
    this.db = openSqlite(path);
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS webhook_subscriptions (
        id TEXT PRIMARY KEY, user_id TEXT NOT NULL, target_url TEXT NOT NULL, event_types TEXT NOT NULL,
        filter_json TEXT NOT NULL, active INTEGER NOT NULL, secret TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
      CREATE INDEX IF NOT EXISTS webhook_subscriptions_user ON webhook_subscriptions(user_id);
      CREATE TABLE IF NOT EXISTS webhook_deliveries (
        delivery_id INTEGER PRIMARY KEY AUTOINCREMENT, event_id TEXT NOT NULL, subscription_id TEXT NOT NULL,
        user_id TEXT NOT NULL, type TEXT NOT NULL, body TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
        next_attempt_ms INTEGER NOT NULL, lease_until_ms INTEGER NOT NULL DEFAULT 0, status TEXT NOT NULL,
        last_status INTEGER, last_error TEXT, created_ms INTEGER NOT NULL, delivered_ms INTEGER, month TEXT NOT NULL,
        UNIQUE (event_id, subscription_id));
      CREATE INDEX IF NOT EXISTS webhook_deliveries_due ON webhook_deliveries(status, next_attempt_ms);
      CREATE INDEX IF NOT EXISTS webhook_deliveries_quota ON webhook_deliveries(user_id, month);
      CREATE INDEX IF NOT EXISTS webhook_deliveries_created ON webhook_deliveries(created_ms);
      CREATE INDEX IF NOT EXISTS webhook_deliveries_sub ON webhook_deliveries(subscription_id, delivery_id);
      CREATE TABLE IF NOT EXISTS webhook_usage (
        user_id TEXT NOT NULL, month TEXT NOT NULL, used INTEGER NOT NULL, PRIMARY KEY (user_id, month)) WITHOUT ROWID;`);
    // secret rotation (added later): the secret being rotated out, and until when deliveries are also signed with it
    addMissingColumns(this.db, 'webhook_subscriptions', [
      ['previous_secret', 'TEXT'],
      ['previous_secret_until_ms', 'INTEGER'],
    ]);
    this.usedStmt = this.db.prepare(`SELECT used FROM webhook_usage WHERE user_id = ? AND month = ?`);
    this.bumpStmt = this.db.prepare(`INSERT INTO webhook_usage (user_id, month, used) VALUES (?, ?, ?) ON CONFLICT (user_id, month) DO UPDATE SET used = used + excluded.used`);
  }

  close(): void {
    this.db.close();
  }

  // ------------------------------------------------------------------------------------------------------------
  // Subscriptions
  // ------------------------------------------------------------------------------------------------------------

  create(s: { user_id: string; target_url: string; event_types: string[]; filter_json: Record<string, unknown>; active: boolean; secret: string }, nowMs: number): SubscriptionRow {
    const id = shortId('wh');
    this.db
      .prepare(`INSERT INTO webhook_subscriptions (id, user_id, target_url, event_types, filter_json, active, secret, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`)
      .run(id, s.user_id, s.target_url, JSON.stringify(s.event_types), JSON.stringify(s.filter_json), s.active ? 1 : 0, s.secret, iso(nowMs), iso(nowMs));
    return this.get(id)!;
  }

  get(id: string): SubscriptionRow | null {
    const r = this.db.prepare(`SELECT * FROM webhook_subscriptions WHERE id = ?`).get(id) as RawSub | undefined;
    return r ? toSub(r) : null;
  }

  /** The secrets a delivery is signed with now: the current one, then the rotated-out one while its grace lasts. */
  signingSecrets(id: string, nowMs: number): string[] {
    const r = this.db.prepare(`SELECT secret, previous_secret, previous_secret_until_ms FROM webhook_subscriptions WHERE id = ?`).get(id) as SecretRow | undefined;
    return r ? activeSecrets(r, nowMs) : [];
  }

  /** Replace the signing secret; the old one keeps signing (alongside) until `graceUntilMs`. */
  rotateSecret(id: string, userId: string, secret: string, graceUntilMs: number, nowMs: number): boolean {
    return (
      this.db
        .prepare(
          `UPDATE webhook_subscriptions SET previous_secret = CASE WHEN ? > ? THEN secret END, previous_secret_until_ms = CASE WHEN ? > ? THEN ? END,
           secret = ?, updated_at = ? WHERE id = ? AND user_id = ?`,
        )
        .run(graceUntilMs, nowMs, graceUntilMs, nowMs, graceUntilMs, secret, iso(nowMs), id, userId).changes === 1
    );
  }

  listFor(userId: string): SubscriptionRow[] {
    return (this.db.prepare(`SELECT * FROM webhook_subscriptions WHERE user_id = ? ORDER BY created_at, id`).all(userId) as RawSub[]).map(toSub);
  }

  all(): SubscriptionRow[] {
    return (this.db.prepare(`SELECT * FROM webhook_subscriptions ORDER BY created_at, id`).all() as RawSub[]).map(toSub);
  }

  countFor(userId: string): number {
    return (this.db.prepare(`SELECT count(*) AS n FROM webhook_subscriptions WHERE user_id = ?`).get(userId) as { n: number }).n;
  }

  update(id: string, userId: string, patch: Partial<Pick<SubscriptionRow, 'target_url' | 'event_types' | 'filter_json' | 'active'>>, nowMs: number): SubscriptionRow | null {
    const cur = this.get(id);
    if (!cur || cur.user_id !== userId) return null;
    const next = { ...cur, ...patch };
    this.db
      .prepare(`UPDATE webhook_subscriptions SET target_url = ?, event_types = ?, filter_json = ?, active = ?, updated_at = ? WHERE id = ? AND user_id = ?`)
      .run(next.target_url, JSON.stringify(next.event_types), JSON.stringify(next.filter_json), next.active ? 1 : 0, iso(nowMs), id, userId);
    return this.get(id);
  }

  /** Delete a subscription; its pending deliveries are dropped (nothing is sent to a deleted subscription). */
  delete(id: string, userId: string): boolean {
    return this.db.transaction(() => {
      const r = this.db.prepare(`DELETE FROM webhook_subscriptions WHERE id = ? AND user_id = ?`).run(id, userId);
      if (r.changes) this.db.prepare(`UPDATE webhook_deliveries SET status = 'dropped', last_error = 'subscription deleted' WHERE subscription_id = ? AND status = 'pending'`).run(id);
      return r.changes === 1;
    })();
  }

  // ------------------------------------------------------------------------------------------------------------
  // Outbox
  // ------------------------------------------------------------------------------------------------------------

  /** Deliveries enqueued for a user in a calendar month (YYYY-MM), i.e. quota used (a counter kept with the outbox). */
  used(userId: string, month: string): number {
    return (this.usedStmt.get(userId, month) as { used: number } | undefined)?.used ?? 0;
  }

  /** Count deliveries against a user's month (also for deliveries written outside enqueue, e.g. imports). */
  addUsage(userId: string, month: string, n: number): void {
    this.bumpStmt.run(userId, month, n);
  }

  /**
   * Enqueue one event for several subscriptions in one transaction, each only if its owner has quota left this
   * month (quota(user) gives the plan's monthly events). Returns how many were enqueued and how many were over quota.
   * An (event, subscription) pair is enqueued at most once.
   */
  enqueue(event: { id: string; type: string; body: string }, subs: readonly { id: string; user_id: string }[], quota: (userId: string) => number, nowMs: number): { enqueued: number; over_quota: number } {
    const month = usageMonth(nowMs);
    const ins = this.db.prepare(
      `INSERT INTO webhook_deliveries (event_id, subscription_id, user_id, type, body, next_attempt_ms, status, created_ms, month)
       VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?) ON CONFLICT (event_id, subscription_id) DO NOTHING`,
    );
    return this.db.transaction(() => {
      let enqueued = 0;
      let over = 0;
      const usedNow = new Map<string, number>();
      const added = new Map<string, number>();
      for (const s of subs) {
        const used = usedNow.get(s.user_id) ?? this.used(s.user_id, month);
        if (used >= quota(s.user_id)) {
          over++;
          continue;
        }
        const r = ins.run(event.id, s.id, s.user_id, event.type, event.body, nowMs, nowMs, month);
        if (r.changes) {
          enqueued++;
          usedNow.set(s.user_id, used + 1);
          added.set(s.user_id, (added.get(s.user_id) ?? 0) + 1);
        } else usedNow.set(s.user_id, used);
      }
      for (const [user, n] of added) this.bumpStmt.run(user, month, n);
      return { enqueued, over_quota: over };
    }).immediate();
  }

  /** Claim up to `limit` due deliveries for `leaseMs` (a crashed worker's lease expires and the delivery is retried). */
  claim(limit: number, nowMs: number, leaseMs: number): DeliveryRow[] {
    return this.db.transaction(() => {
      const rows = this.db
        .prepare(`SELECT * FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_ms <= ? AND lease_until_ms <= ? ORDER BY next_attempt_ms, delivery_id LIMIT ?`)
        .all(nowMs, nowMs, limit) as DeliveryRow[];
      const lease = this.db.prepare(`UPDATE webhook_deliveries SET lease_until_ms = ? WHERE delivery_id = ?`);
      for (const r of rows) lease.run(nowMs + leaseMs, r.delivery_id);
      return rows;
    }).immediate();
  }

  delivered(id: number, httpStatus: number, nowMs: number): void {
    this.db
      .prepare(`UPDATE webhook_deliveries SET status = 'delivered', attempts = attempts + 1, last_status = ?, last_error = NULL, delivered_ms = ?, lease_until_ms = 0 WHERE delivery_id = ? AND status = 'pending'`)
      .run(httpStatus, nowMs, id);
  }

  /** A failed attempt: schedule the next one, or mark the delivery exhausted (never replayed). */
  failed(id: number, httpStatus: number | null, error: string, nextAttemptMs: number | null): void {
    if (nextAttemptMs === null)
      this.db
        .prepare(`UPDATE webhook_deliveries SET status = 'exhausted', attempts = attempts + 1, last_status = ?, last_error = ?, lease_until_ms = 0 WHERE delivery_id = ? AND status = 'pending'`)
        .run(httpStatus, error.slice(0, 500), id);
    else
      this.db
        .prepare(`UPDATE webhook_deliveries SET attempts = attempts + 1, last_status = ?, last_error = ?, next_attempt_ms = ?, lease_until_ms = 0 WHERE delivery_id = ? AND status = 'pending'`)
        .run(httpStatus, error.slice(0, 500), nextAttemptMs, id);
  }

  /** Claimed deliveries now owned by the Redis queue (the relay calls this once the queue has them). */
  handedOff(ids: readonly number[], nowMs: number): void {
    const st = this.db.prepare(`UPDATE webhook_deliveries SET status = 'queued', lease_until_ms = 0, next_attempt_ms = ? WHERE delivery_id = ? AND status = 'pending'`);
    this.db.transaction(() => {
      for (const id of ids) st.run(nowMs, id);
    })();
  }

  /** Give claimed deliveries back at once (the relay could not hand them off; no need to wait for the lease). */
  release(ids: readonly number[]): void {
    const st = this.db.prepare(`UPDATE webhook_deliveries SET lease_until_ms = 0 WHERE delivery_id = ? AND status = 'pending'`);
    this.db.transaction(() => {
      for (const id of ids) st.run(id);
    })();
  }

  /** Every subscription's target and signing secrets (what Redis workers on other machines need to deliver). */
  targets(): DeliveryTarget[] {
    return (this.db.prepare(`SELECT id, target_url, secret, previous_secret, previous_secret_until_ms FROM webhook_subscriptions ORDER BY id`).all() as (SecretRow & { id: string; target_url: string })[]).map(toTarget);
  }

  target(id: string): DeliveryTarget | null {
    const r = this.db.prepare(`SELECT id, target_url, secret, previous_secret, previous_secret_until_ms FROM webhook_subscriptions WHERE id = ?`).get(id) as (SecretRow & { id: string; target_url: string }) | undefined;
    return r ? toTarget(r) : null;
  }

  /**
   * Delete settled outbox rows created before `beforeMs` (delivered, exhausted, dropped, and queued ones, whose
   * record is the Redis job by then). Pending rows are never pruned. Monthly usage is a separate counter and stays.
   */
  prune(beforeMs: number, limit = 5000): number {
    // a bounded batch per call, so a caller can yield between batches instead of blocking on millions of rows
    return this.db
      .prepare(`DELETE FROM webhook_deliveries WHERE delivery_id IN (SELECT delivery_id FROM webhook_deliveries WHERE status <> 'pending' AND created_ms < ? ORDER BY created_ms LIMIT ?)`)
      .run(beforeMs, limit).changes;
  }

  /** Write the Redis queue's final outcomes back to their `queued` rows (a delivery seen delivered stays delivered). */
  settleFromQueue(outcomes: readonly { event_id: string; subscription_id: string; status: 'delivered' | 'exhausted' | 'dropped'; attempts: number; http_status: number | null; error: string | null; at_ms: number }[]): void {
    const st = this.db.prepare(
      `UPDATE webhook_deliveries SET status = ?, attempts = max(attempts, ?), last_status = ?, last_error = ?, delivered_ms = ?
       WHERE event_id = ? AND subscription_id = ? AND (status = 'queued' OR (? = 'delivered' AND status = 'exhausted'))`,
    );
    this.db.transaction(() => {
      for (const o of outcomes) st.run(o.status, o.attempts, o.http_status, o.error, o.status === 'delivered' ? o.at_ms : null, o.event_id, o.subscription_id, o.status);
    })();
  }

  /** How many subscriptions there are (the Redis mirror should hold as many). */
  countAll(): number {
    return (this.db.prepare(`SELECT count(*) AS n FROM webhook_subscriptions`).get() as { n: number }).n;
  }

  /** A subscription's deliveries, newest first, before the delivery id `before` (keyset pagination). */
  deliveriesOf(subscriptionId: string, opts: { limit: number; before?: number; statuses?: readonly DeliveryStatus[] }): DeliveryRow[] {
    const statuses = opts.statuses ?? [];
    return this.db
      .prepare(
        `SELECT * FROM webhook_deliveries WHERE subscription_id = ? AND delivery_id < ?
         ${statuses.length ? `AND status IN (${statuses.map(() => '?').join(', ')})` : ''} ORDER BY delivery_id DESC LIMIT ?`,
      )
      .all(subscriptionId, opts.before ?? Number.MAX_SAFE_INTEGER, ...statuses, opts.limit) as DeliveryRow[];
  }

  delivery(eventId: string, subscriptionId: string): DeliveryRow | null {
    return (this.db.prepare(`SELECT * FROM webhook_deliveries WHERE event_id = ? AND subscription_id = ?`).get(eventId, subscriptionId) as DeliveryRow | undefined) ?? null;
  }

  /** Outbox figures for operators and tests. */
  counts(): Record<DeliveryStatus, number> {
    const out: Record<DeliveryStatus, number> = { pending: 0, queued: 0, delivered: 0, exhausted: 0, dropped: 0 };
    for (const r of this.db.prepare(`SELECT status, count(*) AS n FROM webhook_deliveries GROUP BY status`).all() as { status: DeliveryStatus; n: number }[]) out[r.status] = r.n;
    return out;
  }
}
