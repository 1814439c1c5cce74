/**
 * Webhooks as one service: subscriptions (store + in-memory match index kept in step), the producers that turn
 * venue events into envelopes and enqueue them for every matching subscription (within the owner's monthly
 * quota), and the delivery worker. The REST routes (web-api/webhooks.ts) reach it through the WebhookApi shape;
 * main.ts composes it.
 *
 * Events: trader.fill (every taker fill of the live tail), signal.smart_money (a tagged wallet's fill of 5,000 USD
 * or more: core/signals.ts signalFromFill), market.resolved (every resolution, with the spec's data fields) and
 * service.test (POST /v1/webhooks/{id}/test).
 */
import { outcomeLabel, winnerLabel } from '../../core/outcomes.ts';
import { getAddress } from 'viem';
import { PLANS, webhookEventsPerMonth, type PlanId } from '../../core/plans.ts';
import type { QueryRunner } from '../../core/query.ts';
import { signalFromFill } from '../../core/signals.ts';
import { EventTypes, FilterJson, SubscriptionIndex, type EventType } from '../../core/webhook-filters.ts';
import { shortId, type DeliveryRow, type DeliveryStatus, type SubscriptionRow, type SubscriptionView, type WebhookStore } from '../../data/webhook-store.ts';
import { CodedError } from '../../core/coded-error.ts';
import { newSigningSecret } from './signing.ts';
import { checkPublicTarget, pinnedPost, type Allowlist, type PinnedPostOptions } from './ssrf.ts';
import { DeliveryWorker, DELIVERY_TIMEOUT_MS, type Send } from './worker.ts';
import { OutboxRelay, OutcomeSink, RedisDeliveryQueue, startRedisWorker } from './redis-queue.ts';
import type { Redis } from 'ioredis';
import type { Worker } from 'bullmq';

/** An error the REST layer maps to the error object (status, code). */
export class WebhookError extends CodedError {}

export const view = (s: SubscriptionRow): SubscriptionView => ({
  id: s.id,
  target_url: s.target_url,
  event_types: s.event_types,
  filter_json: s.filter_json,
  active: s.active,
  created_at: s.created_at,
});

export interface WebhookServiceDeps {
  store: WebhookStore;
  /** the subscriber's current plan (quota and subscription count) */
  planOf: (userId: string) => PlanId | null;
  now?: () => Date;
  /** test-only: host:port targets allowed despite not being public (a loopback receiver) */
  allowlist?: Allowlist;
  /** test-only: extra CA for a self-signed receiver */
  ca?: PinnedPostOptions['ca'];
  lookup?: PinnedPostOptions['lookup'];
  /** replaces the HTTPS sender (tests inject failures through a real receiver instead) */
  send?: Send;
  log?: (msg: string) => void;
  /**
   * Deliver through the Redis queue (BullMQ) instead of the SQLite worker: the outbox stays the durable first write
   * and a relay hands it to Redis, where any number of workers share the work (jobs/webhooks/redis-queue.ts).
   */
  redis?: {
    /**
     * the producer-side connection (queue, mirror, relay, delivery log). Give it enableOfflineQueue: false and a
     * commandTimeout so requests fail fast (503) while Redis is down; the worker and the outcome reader get blocking
     * duplicates of it.
     */
    connection: Redis;
    prefix?: string;
    /** deliver in this process too (default true); `npm run webhooks:worker` runs more workers elsewhere */
    worker?: boolean;
    concurrency?: number;
    /** test hook: the in-process worker's retry delays (production: RETRY_DELAYS_MS) */
    retryDelaysMs?: readonly number[];
    /** how often the mirror's size is compared with the store's (default 10 s) */
    mirrorCheckMs?: number;
  };
}

/** What drives deliveries: the SQLite worker, or in Redis mode the relay that hands the outbox to the queue. */
export interface DeliveryDriver {
  /** work everything due now (SQLite: deliver; Redis: hand off to the queue); how many rows were handled */
  runDue(): Promise<number>;
  start(everyMs?: number): void;
  stop(): Promise<void>;
}

export type DeliveryLogStatus = 'pending' | 'delivered' | 'exhausted' | 'dropped';

/** One row of GET /v1/webhooks/{id}/deliveries. */
export interface DeliveryLogRow {
  cursor: string;
  event_id: string;
  type: string;
  status: DeliveryLogStatus;
  /** tries made so far (at most 7) */
  attempts: number;
  /** the receiver's last HTTP status, null when none answered */
  http_status: number | null;
  error: string | null;
  created_at: string;
  delivered_at: string | null;
  next_attempt_at: string | null;
}

export interface TestDelivery {
  event_id: string;
  delivered: boolean;
  http_status: number | null;
  attempts: number;
  error: string | null;
  /** when the next retry is due, if the test delivery failed */
  next_attempt_at: string | null;
}

export class WebhookService {
  readonly index = new SubscriptionIndex();
  readonly worker: DeliveryDriver;
  /** Redis mode only */
  readonly queue: RedisDeliveryQueue | null = null;
  private readonly relay: OutboxRelay | null = null;
  private redisWorker: Worker | null = null;
  private sink: OutcomeSink | null = null;
  /** blocking connections this service opened (duplicates of the producer connection) */
  private readonly ownConnections: Redis[] = [];
  private readonly send: Send;
  /** the indexed rows by id: their owners (quota) and updated_at (a reload re-indexes only what changed) */
  private readonly subs = new Map<string, SubscriptionRow>();
  private readonly now: () => Date;
  /** the Redis mirror of targets missed a write: resync it whole */
  private mirrorDirty = true;
  private readonly timers: NodeJS.Timeout[] = [];
  private started = false;

  private constructor(private readonly deps: WebhookServiceDeps) {
    this.now = deps.now ?? (() => new Date());
    this.send =
      deps.send ??
      ((url, body, headers) =>
        pinnedPost(url, body, headers, { allowlist: deps.allowlist, ca: deps.ca, lookup: deps.lookup }).then((r) => ({ ok: r.ok, status: r.status || null, error: r.error })));
    if (deps.redis) {
      this.queue = new RedisDeliveryQueue({ connection: deps.redis.connection, prefix: deps.redis.prefix });
      this.relay = new OutboxRelay({ store: deps.store, queue: this.queue, now: this.now, log: deps.log });
      this.worker = this.relay;
    } else this.worker = new DeliveryWorker({ store: deps.store, send: this.send, now: this.now, log: deps.log });
  }

  /** The service over its store, with the stored subscriptions indexed for matching. */
  static async open(deps: WebhookServiceDeps): Promise<WebhookService> {
    const svc = new WebhookService(deps);
    for (const s of await deps.store.all()) svc.indexSub(s);
    return svc;
  }

  /**
   * Start delivering. In Redis mode: mirror the targets (a Redis outage here is logged and retried, not fatal: rows
   * wait in the outbox), check the mirror's size periodically, read final outcomes back into the outbox, relay, and
   * run a worker here unless told not to.
   */
  async start(): Promise<void> {
    const r = this.deps.redis;
    if (this.queue && r) {
      const log = (what: string) => (e: unknown) => this.deps.log?.(`webhooks: ${what} failed: ${(e as Error).message}`);
      await this.syncMirror().catch(log('target mirror sync (retrying)'));
      this.timers.push(
        setInterval(() => {
          if (this.mirrorDirty) this.syncMirror().catch(log('target mirror resync'));
        }, 250),
        // the mirror can lose entries without any write of ours failing (Redis restarted from an old snapshot, a
        // failover to a lagging replica, a flush): a size that differs from the store's triggers a resync
        setInterval(() => {
          Promise.all([this.queue!.targetCount(), this.deps.store.countAll()]).then(([n, stored]) => {
            if (n !== stored) this.mirrorDirty = true;
          }, log('target mirror check'));
        }, r.mirrorCheckMs ?? 10_000),
      );
      for (const t of this.timers) t.unref();
      const blocking = () => {
        const c = r.connection.duplicate({ maxRetriesPerRequest: null, enableOfflineQueue: true, commandTimeout: undefined });
        this.ownConnections.push(c);
        return c;
      };
      this.sink = new OutcomeSink({ connection: blocking(), prefix: r.prefix, apply: (o) => this.deps.store.settleFromQueue(o), log: this.deps.log });
      this.sink.start();
      if (r.worker !== false)
        this.redisWorker = startRedisWorker({ connection: blocking(), prefix: r.prefix, send: this.send, now: this.now, concurrency: r.concurrency, retryDelaysMs: r.retryDelaysMs });
    }
    this.started = true;
    this.worker.start();
    this.relay?.kick();
  }

  /** Stop, giving each part a bounded time (a worker finishes its sends in flight: at most the 10 s timeout). */
  async stop(): Promise<void> {
    const within = (p: Promise<unknown> | undefined, ms: number) => Promise.race([p?.catch(() => {}), new Promise((res) => setTimeout(res, ms).unref())]);
    for (const t of this.timers.splice(0)) clearInterval(t);
    this.started = false;
    await within(this.worker.stop(), 5_000);
    await within(this.redisWorker?.close(), DELIVERY_TIMEOUT_MS + 2_000);
    this.redisWorker = null;
    await within(this.sink?.stop(), 3_000);
    this.sink = null;
    await within(this.queue?.close(), 2_000);
    for (const c of this.ownConnections.splice(0)) c.disconnect();
  }

  private async syncMirror(): Promise<void> {
    this.mirrorDirty = false;
    try {
      await this.queue!.syncTargets(await this.deps.store.targets());
    } catch (e) {
      this.mirrorDirty = true;
      throw e;
    }
  }

  /** Write one change to the Redis mirror; a failure is repaired by the next whole resync. */
  private async mirror(write: (q: RedisDeliveryQueue) => Promise<void>): Promise<boolean> {
    if (!this.queue) return true;
    try {
      await write(this.queue);
      return true;
    } catch (e) {
      this.mirrorDirty = true;
      this.deps.log?.(`webhooks: target mirror write failed (resyncing): ${(e as Error).message}`);
      return false;
    }
  }

  /**
   * Match against the subscriptions as stored now: another replica's creates, updates and deletes reach this
   * process's index (the producer's) at its next reload.
   */
  async reload(): Promise<void> {
    const rows = await this.deps.store.all();
    for (const id of this.index.retainOnly(new Set(rows.map((r) => r.id)))) this.subs.delete(id);
    for (const s of rows) if (this.subs.get(s.id)?.updated_at !== s.updated_at) this.indexSub(s);
  }

  private indexSub(s: SubscriptionRow): void {
    this.subs.set(s.id, s);
    this.index.add({ id: s.id, event_types: s.event_types, filter: FilterJson.parse(s.filter_json), active: s.active });
  }

  private quota = (userId: string): number => webhookEventsPerMonth(this.deps.planOf(userId));

  /** SSRF guard at creation and update (and again at every send, inside pinnedPost). */
  private async checkTarget(url: string): Promise<string> {
    const t = await checkPublicTarget(url, { allowlist: this.deps.allowlist, lookup: this.deps.lookup });
    if (!t.ok) throw new WebhookError(400, 'invalid_target', t.resolved ? 'the target URL does not resolve to a public address' : 'the target URL is not allowed', t.reason);
    return t.url.toString();
  }

  async list(userId: string): Promise<SubscriptionView[]> {
    return (await this.deps.store.listFor(userId)).map(view);
  }

  async create(userId: string, plan: PlanId, input: { target_url: string; event_types: string[]; filter_json?: Record<string, unknown>; active?: boolean }): Promise<{ subscription: SubscriptionView; secret: string }> {
    const p = PLANS[plan];
    if (p.webhook_events_per_month === 0) throw new WebhookError(403, 'plan_required', 'webhooks need a paid plan', `the ${p.name} plan includes 0 webhook events per month`);
    const limited = () => new WebhookError(409, 'subscription_limit', `the ${p.name} plan allows ${p.webhook_subscriptions} webhook subscriptions`, 'delete one or upgrade');
    if ((await this.deps.store.countFor(userId)) >= p.webhook_subscriptions) throw limited();
    const event_types = EventTypes.parse(input.event_types);
    const filter_json = FilterJson.parse(input.filter_json ?? {});
    const target_url = await this.checkTarget(input.target_url);
    const secret = newSigningSecret();
    // counted again where it is written: a concurrent creation (another request, another replica) may have taken the last one
    const row = await this.deps.store.createWithin({ user_id: userId, target_url, event_types, filter_json, active: input.active ?? true, secret }, p.webhook_subscriptions, this.now().getTime());
    if (!row) throw limited();
    const target = (await this.deps.store.target(row.id))!;
    if (!(await this.mirror((q) => q.putTarget(target)))) {
      // workers could not deliver to it yet: refuse rather than accept events that would be dropped
      await this.deps.store.delete(row.id, userId);
      throw new WebhookError(503, 'queue_unavailable', 'the delivery queue is unreachable; nothing was created', 'try again shortly');
    }
    this.indexSub(row);
    return { subscription: view(row), secret };
  }

  async update(userId: string, id: string, patch: { target_url?: string; event_types?: string[]; filter_json?: Record<string, unknown>; active?: boolean }): Promise<SubscriptionView> {
    const cur = await this.deps.store.get(id);
    if (!cur || cur.user_id !== userId) throw new WebhookError(404, 'not_found', `no webhook subscription ${id} on your account`);
    const next: Parameters<WebhookStore['update']>[2] = {};
    if (patch.target_url !== undefined) next.target_url = await this.checkTarget(patch.target_url);
    if (patch.event_types !== undefined) next.event_types = EventTypes.parse(patch.event_types);
    if (patch.filter_json !== undefined) next.filter_json = FilterJson.parse(patch.filter_json);
    if (patch.active !== undefined) next.active = patch.active;
    const row = await this.deps.store.update(id, userId, next, this.now().getTime());
    // deleted meanwhile (another request, another replica)
    if (!row) throw new WebhookError(404, 'not_found', `no webhook subscription ${id} on your account`);
    if (next.target_url !== undefined) {
      const target = await this.deps.store.target(row.id);
      if (target) await this.mirror((q) => q.putTarget(target));
    }
    this.indexSub(row);
    return view(row);
  }

  async remove(userId: string, id: string): Promise<boolean> {
    const ok = await this.deps.store.delete(id, userId);
    if (ok) {
      this.index.remove(id);
      this.subs.delete(id);
      void this.mirror((q) => q.removeTarget(id));
    }
    return ok;
  }

  /**
   * A new signing secret, shown once. Deliveries are signed with both the new and the old secret (two `v1=` entries)
   * for `graceSeconds` (default 24 h, 0 = the old one stops at once), so receivers can switch without a gap.
   */
  async rotateSecret(userId: string, id: string, graceSeconds = 86_400): Promise<{ id: string; secret: string; previous_secret_expires_at: string | null }> {
    const secret = newSigningSecret();
    const nowMs = this.now().getTime();
    const until = nowMs + graceSeconds * 1000;
    if (!(await this.deps.store.rotateSecret(id, userId, secret, until, nowMs))) throw new WebhookError(404, 'not_found', `no webhook subscription ${id} on your account`);
    const target = await this.deps.store.target(id);
    if (target) await this.mirror((q) => q.putTarget(target));
    return { id, secret, previous_secret_expires_at: graceSeconds > 0 ? new Date(until).toISOString() : null };
  }

  /**
   * The delivery log of one subscription, newest first (kept 30 days). In Redis mode a row handed to the queue shows
   * the queue's record of it (tries, last answer, next try). `cursor` is the last row's `cursor` of the previous page.
   */
  async deliveries(userId: string, id: string, opts: { limit: number; cursor?: string; status?: DeliveryLogStatus }): Promise<{ rows: DeliveryLogRow[]; next_cursor: string | null }> {
    const sub = await this.deps.store.get(id);
    if (!sub || sub.user_id !== userId) throw new WebhookError(404, 'not_found', `no webhook subscription ${id} on your account`);
    const before = opts.cursor === undefined ? undefined : Number.parseInt(opts.cursor, 36);
    if (before !== undefined && !(Number.isSafeInteger(before) && before > 0)) throw new WebhookError(400, 'invalid_cursor', 'the cursor is not one this route returned');
    // settled rows carry their status in SQLite (outcomes are written back); a `queued` row's state is the queue's,
    // so in Redis mode a status filter also reads queued rows (only those in flight) and keeps the ones that match
    const statuses: DeliveryStatus[] | undefined = opts.status === undefined ? undefined : this.queue ? [opts.status, 'queued'] : [opts.status];
    const rows: DeliveryLogRow[] = [];
    let cursor = before;
    // true once every row older than the cursor has been looked at: there is no next page
    let scannedAll = false;
    for (let pages = 0; rows.length < opts.limit && !scannedAll && pages < 10; pages++) {
      const batch = await this.deps.store.deliveriesOf(id, { limit: opts.limit, before: cursor, statuses });
      // queue lookups for one page run together
      const built = await Promise.all(batch.map((d) => this.logRow(d)));
      let i = 0;
      for (; i < batch.length && rows.length < opts.limit; i++) {
        cursor = batch[i]!.delivery_id;
        if (!opts.status || built[i]!.status === opts.status) rows.push(built[i]!);
      }
      scannedAll = batch.length < opts.limit && i === batch.length;
    }
    return { rows, next_cursor: scannedAll || cursor === undefined ? null : cursor.toString(36) };
  }

  private async logRow(d: DeliveryRow): Promise<DeliveryLogRow> {
    const base = {
      cursor: d.delivery_id.toString(36),
      event_id: d.event_id,
      type: d.type,
      created_at: new Date(d.created_ms).toISOString(),
    };
    const q = d.status === 'queued' && this.queue ? await this.queue.state(d.event_id, d.subscription_id).catch(() => null) : null;
    if (d.status === 'queued')
      return {
        ...base,
        status: q?.status ?? 'pending',
        attempts: q?.attempts ?? d.attempts,
        http_status: q?.last_status ?? null,
        error: q?.last_error ?? null,
        delivered_at: null,
        next_attempt_at: q?.next_attempt_ms != null ? new Date(q.next_attempt_ms).toISOString() : null,
      };
    return {
      ...base,
      status: d.status,
      attempts: d.attempts,
      http_status: d.last_status,
      error: d.last_error,
      delivered_at: d.delivered_ms !== null ? new Date(d.delivered_ms).toISOString() : null,
      next_attempt_at: d.status === 'pending' ? new Date(d.next_attempt_ms).toISOString() : null,
    };
  }

  /** Send a synthetic service.test now (it counts against the quota and retries like any delivery if it fails). */
  async test(userId: string, id: string): Promise<TestDelivery> {
    const sub = await this.deps.store.get(id);
    if (!sub || sub.user_id !== userId) throw new WebhookError(404, 'not_found', `no webhook subscription ${id} on your account`);
    const eventId = shortId('evt');
    const body = JSON.stringify({ type: 'service.test', emitted_at: this.now().toISOString(), data: { subscription_id: id, message: 'a test event sent on request' } });
    const r = await this.deps.store.enqueue({ id: eventId, type: 'service.test', body }, [{ id, user_id: userId }], this.quota, this.now().getTime());
    if (!r.enqueued) throw new WebhookError(429, 'quota_exceeded', 'the monthly webhook event quota is used up', `${this.quota(userId)} events per month on your plan`);
    try {
      await this.worker.runDue();
    } catch (e) {
      if (!this.queue) throw e;
      // the relay could not hand it to Redis: the test event stays in the outbox and goes out once the queue is back
      throw new WebhookError(503, 'queue_unavailable', 'the delivery queue is unreachable; the test event is kept and sent when it is back', `event ${eventId}`);
    }
    // the delivery log's view of the first try; in Redis mode a worker elsewhere makes it: wait up to the send
    // timeout and a little
    const deadline = Date.now() + DELIVERY_TIMEOUT_MS + 5_000;
    let row = await this.logRow((await this.deps.store.delivery(eventId, id))!);
    while (this.queue && row.attempts === 0 && row.status === 'pending' && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 25));
      row = await this.logRow((await this.deps.store.delivery(eventId, id))!);
    }
    return {
      event_id: eventId,
      delivered: row.status === 'delivered',
      http_status: row.http_status,
      attempts: row.attempts,
      error: row.attempts ? row.error : 'no delivery worker took it yet; it stays queued',
      next_attempt_at: row.next_attempt_at,
    };
  }

  /** Enqueue one event for every matching active subscription; returns the event id and how many were enqueued. */
  async publish(type: EventType, data: Record<string, unknown>, emittedAt: Date = this.now()): Promise<{ event_id: string; enqueued: number; over_quota: number }> {
    const ids = this.index.match(type, data);
    const eventId = shortId('evt');
    if (!ids.length) return { event_id: eventId, enqueued: 0, over_quota: 0 };
    const body = JSON.stringify({ type, emitted_at: emittedAt.toISOString(), data });
    const subs = ids.map((id) => ({ id, user_id: this.subs.get(id)!.user_id }));
    const r = await this.deps.store.enqueue({ id: eventId, type, body }, subs, this.quota, this.now().getTime());
    if (r.enqueued && this.started) this.relay?.kick();
    return { event_id: eventId, ...r };
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Producers over the live tail
// ---------------------------------------------------------------------------------------------------------------

interface MarketInfo {
  condition_id: string;
  question_id: string;
  title: string;
  slug: string;
  category: string;
  yes_token_id: string;
  no_token_id: string;
  /** the venue's names of outcomes 0 and 1 when not Yes / No (null: Yes / No) */
  outcome_labels: string[] | null;
}

/** What the producers need from the venue: markets, wallet addresses and smart-money tags (cached, refreshed on a miss). */
export class VenueLookup {
  private markets = new Map<number, MarketInfo>();
  private wallets = new Map<number, string>();
  private tags = new Map<number, string[]>();

  constructor(private readonly db: QueryRunner) {}

  async load(): Promise<void> {
    for (const m of await this.db.all<MarketInfo & { market_id: number }>(`SELECT market_id, condition_id, question_id, question AS title, slug, category, yes_token_id, no_token_id, outcome_labels FROM markets`))
      this.markets.set(Number(m.market_id), m);
    for (const w of await this.db.all<{ wallet_id: number; address: string }>(`SELECT wallet_id, address FROM wallets`)) this.wallets.set(Number(w.wallet_id), w.address);
    await this.reloadTags();
  }

  /** Smart-money tags of the current analytics version (called on every published version: signals act on current skill). */
  async reloadTags(): Promise<void> {
    const hasMetrics = await this.db.all(`SELECT 1 FROM information_schema.tables WHERE table_name = 'a_wallet_metrics'`);
    const tags = new Map<number, string[]>();
    if (hasMetrics.length)
      for (const t of await this.db.all<{ wallet_id: number; tags: string[] }>(`SELECT wallet_id, smart_money_tags AS tags FROM a_wallet_metrics WHERE len(smart_money_tags) > 0`))
        tags.set(Number(t.wallet_id), [...t.tags]);
    this.tags = tags;
  }

  async market(id: number): Promise<MarketInfo | null> {
    if (!this.markets.has(id)) {
      const [m] = await this.db.all<MarketInfo>(`SELECT condition_id, question_id, question AS title, slug, category, yes_token_id, no_token_id, outcome_labels FROM markets WHERE market_id = $1`, [id]);
      if (m) this.markets.set(id, m);
    }
    return this.markets.get(id) ?? null;
  }

  async wallet(id: number): Promise<string | null> {
    if (!this.wallets.has(id)) {
      const [w] = await this.db.all<{ address: string }>(`SELECT address FROM wallets WHERE wallet_id = $1`, [id]);
      if (w) this.wallets.set(id, w.address);
    }
    return this.wallets.get(id) ?? null;
  }

  tagsOf(id: number): string[] {
    return this.tags.get(id) ?? [];
  }
}

export interface TailFillEvent {
  txHash: string;
  logIndex: number;
  ts: number;
  marketId: number;
  outcome: number;
  takerId: number;
  side: 'BUY' | 'SELL';
  price: number;
  sizeUsdc: number;
  exchangeKind: string;
}

export interface TailResolutionEvent {
  marketId: number;
  winner: 'YES' | 'NO' | 'INVALID' | null;
  winnerIndex: number;
  resolvedAt: number;
  txHash: string;
}

export interface FillEvents {
  emitted: Date;
  /** the trader.fill data (webhooks and the realtime stream) */
  fill: Record<string, unknown>;
  /** the signal.smart_money data, when the fill is one */
  signal: Record<string, unknown> | null;
}

/** The events one taker fill makes: trader.fill always, signal.smart_money when it qualifies. Null for an unknown taker. */
export async function fillEvents(venue: VenueLookup, f: TailFillEvent): Promise<FillEvents | null> {
  const [m, address] = await Promise.all([venue.market(f.marketId), venue.wallet(f.takerId)]);
  if (!address) return null;
  const trader = getAddress(address);
  const emitted = new Date(f.ts * 1000);
  const fill = {
    trader_proxy: trader,
    ...(m ? { condition_id: m.condition_id } : {}),
    size_usdc: f.sizeUsdc,
    price: f.price,
    token_id: m ? (f.outcome === 0 ? m.yes_token_id : m.no_token_id) : '',
    taker_side: f.side.toLowerCase(),
    exchange_version: '2',
    exchange_kind: f.exchangeKind,
    tx_hash: f.txHash,
    log_index: String(f.logIndex),
  };
  const signal = m
    ? signalFromFill(
        { trader_proxy: trader, condition_id: m.condition_id, title: m.title, outcome_side: outcomeLabel(m.outcome_labels, f.outcome), taker_side: f.side, price: f.price, size_usdc: f.sizeUsdc, tx_hash: f.txHash },
        venue.tagsOf(f.takerId),
      )
    : null;
  return { emitted, fill, signal: signal as Record<string, unknown> | null };
}

/** Publish a fill's events to the webhook subscriptions (in order: the fill, then its signal). */
export async function publishFillEvents(svc: WebhookService, ev: FillEvents): Promise<void> {
  await svc.publish('trader.fill', ev.fill, ev.emitted);
  if (ev.signal) await svc.publish('signal.smart_money', ev.signal, ev.emitted);
}

/** market.resolved data with the spec's fields (webhooks and push send the same). */
export async function resolutionData(venue: VenueLookup, r: TailResolutionEvent): Promise<Record<string, unknown>> {
  const m = await venue.market(r.marketId);
  return {
    condition_id: m?.condition_id ?? '',
    question_id: m?.question_id ?? '',
    title: m?.title ?? '',
    slug: m?.slug ?? '',
    category: m?.category ?? '',
    market_kind: 'binary',
    winner_outcome: winnerLabel(m?.outcome_labels, r.winner),
    winner_index: r.winnerIndex,
    outcome_slot_count: 2,
    resolved_time: new Date(r.resolvedAt * 1000).toISOString(),
    tx_hash: r.txHash,
  };
}

/** Publish a resolution to the webhook subscriptions. */
export async function publishResolution(svc: WebhookService, venue: VenueLookup, r: TailResolutionEvent): Promise<void> {
  await svc.publish('market.resolved', await resolutionData(venue, r));
}
