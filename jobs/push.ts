/**
 * Web push: VAPID keys generated once and stored, subscriptions registered through the SSRF guard, and a sender
 * that encrypts with web-push (aes128gcm) but sends through the same pinned, redirect-free POST as webhooks.
 * A push service answering 404 or 410 means the browser dropped the subscription: it is removed.
 *
 * Live events (docs/webhooks.md "Browser push"): a subscription asks for signal.smart_money and/or market.resolved
 * (never trader.fill) with a webhook filter_json; publish() matches an event through a SubscriptionIndex kept in
 * step with the store and sends each match a notification-ready payload
 * `{type, emitted_at, data, notification: {title, body, tag}}`.
 * - Plan gating: every notification sent to a subscription counts one event against the owner's monthly webhook
 *   event quota (the same counter as webhook deliveries; Free has 0, so Free users only get the test push).
 * - Burst cap: at most PUSH_LIMITS.perHour notifications per subscription in any rolling hour (in memory, per
 *   process); beyond it events are dropped for that subscription and not counted.
 * - Best effort: push services store and forward (TTL 600 s here), so there is no durable outbox. publish() never
 *   rejects (it waits only for the quota count, not for the sends); sends run in the background, at most
 *   PUSH_LIMITS.concurrency at once, from a queue of at most PUSH_LIMITS.maxQueue (beyond it events are dropped,
 *   not counted).
 */
import { createHash } from 'node:crypto';
import webpush from 'web-push';
import { webhookEventsPerMonth, type PlanId } from '../core/plans.ts';
import { FilterJson, SubscriptionIndex, type EventType } from '../core/webhook-filters.ts';
import { PUSH_EVENT_TYPES, type PushStore, type PushSubscriptionRow } from '../data/push-store.ts';
import { usageMonth } from '../data/webhook-store.ts';
import { checkPublicTarget, pinnedPost, type Allowlist, type PinnedPostOptions, type PostResult } from './webhooks/ssrf.ts';
import { WebhookError } from './webhooks/service.ts';

/** The monthly event counter shared with webhook deliveries (WebhookStore has this shape). */
export interface PushUsageCounter {
  /** count up to `n` events against the month as far as `quota` allows, atomically; how many were counted */
  reserveUsage(userId: string, month: string, n: number, quota: number): Promise<number>;
  /** count (negative: give back) events against the month */
  addUsage(userId: string, month: string, n: number): Promise<void>;
}

export interface PushLimits {
  /** notifications per subscription in any rolling hour; more are dropped */
  perHour: number;
  /** sends in flight at once */
  concurrency: number;
  /** sends waiting; more are dropped */
  maxQueue: number;
  /** TTL (seconds) a push service keeps a live notification for an offline browser */
  ttlSeconds: number;
  /** the JSON payload is cut to at most this many bytes (the web push limit is 4 KB of ciphertext) */
  maxPayloadBytes: number;
}

export const PUSH_LIMITS: Readonly<PushLimits> = { perHour: 30, concurrency: 8, maxQueue: 1000, ttlSeconds: 600, maxPayloadBytes: 3072 };
/** notification title / body caps (characters); browsers cut earlier anyway */
const TITLE_MAX = 64;
const BODY_MAX = 180;
/** TTL of a test push (the user may open the browser a bit later) */
const TEST_TTL_SECONDS = 3600;

export interface PushDeps {
  store: PushStore;
  /** VAPID subject: a mailto: or https: contact for push services */
  subject: string;
  /** the owner's current plan: its webhook_events_per_month is the monthly quota live pushes share with webhooks (absent or null: 0) */
  planOf?: (userId: string) => PlanId | null;
  /** the monthly event counter (WebhookStore); absent: no live pushes (nothing to count them against) */
  usage?: PushUsageCounter;
  limits?: Partial<PushLimits>;
  allowlist?: Allowlist;
  ca?: PinnedPostOptions['ca'];
  lookup?: PinnedPostOptions['lookup'];
  now?: () => Date;
  log?: (msg: string) => void;
}

export interface PushResult {
  sent: number;
  failed: number;
  removed: number;
}

/** What publish() did with one event. */
export interface PushPublishResult {
  /** subscriptions whose event_types and filter matched */
  matched: number;
  /** handed to the sender (and counted against the owner's quota) */
  queued: number;
  /** dropped: the subscription hit its hourly cap */
  rate_limited: number;
  /** dropped: the owner's monthly quota is used up (or the plan has none) */
  over_quota: number;
  /** dropped: the send queue was full */
  dropped: number;
}

export interface PushNotification {
  title: string;
  body: string;
  tag: string;
}

export interface PushPayload {
  type: string;
  emitted_at: string;
  data: Record<string, unknown>;
  notification: PushNotification;
}

export interface PushSubscribeInput {
  endpoint: string;
  keys: { p256dh: string; auth: string };
  event_types?: string[];
  filter_json?: Record<string, unknown>;
}

interface Job {
  endpoint: string;
  payload: string;
  type: string;
  tag: string;
}

// ---------------------------------------------------------------------------------------------------------------
// Payloads
// ---------------------------------------------------------------------------------------------------------------

/** Cut a string to at most `max` characters (code points), ending in an ellipsis when cut. */
export function clip(s: string, max: number): string {
  const cps = Array.from(s);
  return cps.length <= max ? s : cps.slice(0, Math.max(0, max - 1)).join('') + '…';
}

const shortAddress = (a: string) => (a.length > 12 ? `${a.slice(0, 6)}…${a.slice(-4)}` : a);
const usd = (n: number) => `$${Math.round(n).toLocaleString('en-US')}`;
const priceText = (p: number) => String(Math.round(p * 1000) / 1000);
const str = (v: unknown) => (typeof v === 'string' ? v : '');
const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

/** The notification a service worker can show as is: title, body and a tag that collapses repeats of one event. */
export function notificationFor(type: string, data: Readonly<Record<string, unknown>>): PushNotification {
  if (type === 'signal.smart_money') {
    const exit = data.signal_type === 'exit';
    const tags = Array.isArray(data.smart_money_tags) ? (data.smart_money_tags as unknown[]).filter((t) => typeof t === 'string').join(', ') : '';
    const who = shortAddress(str(data.trader_proxy)) + (tags ? ` (${tags})` : '');
    const market = str(data.title) || str(data.condition_id);
    return {
      title: clip(`Smart money: ${exit ? 'exit' : 'large buy'}`, TITLE_MAX),
      body: clip(`${who} ${exit ? 'sold' : 'bought'} ${str(data.outcome_side) || 'a side'} at ${priceText(num(data.price))} for ${usd(num(data.size_usdc))} — ${market}`, BODY_MAX),
      tag: clip(`signal.smart_money:${str(data.tx_hash)}`, 100),
    };
  }
  if (type === 'market.resolved') {
    const w = data.winner_outcome;
    const outcome = typeof w === 'string' && w ? w : 'no single winner';
    return {
      title: clip(`Market resolved: ${outcome}`, TITLE_MAX),
      body: clip(str(data.title) || `market ${str(data.condition_id)}`, BODY_MAX),
      tag: clip(`market.resolved:${str(data.condition_id)}`, 100),
    };
  }
  if (type === 'service.test') return { title: 'Test notification', body: 'Push notifications from the service reach this browser.', tag: 'service.test' };
  return { title: clip(type, TITLE_MAX), body: '', tag: clip(type, 100) };
}

/**
 * The push payload for an event, at most `maxBytes` of JSON: the notification is already capped; if the event's
 * data still makes it too long, its longest string fields (a market title or slug) are cut until it fits.
 */
export function buildPayload(type: string, data: Record<string, unknown>, emittedAt: Date, maxBytes = PUSH_LIMITS.maxPayloadBytes): PushPayload {
  const payload: PushPayload = { type, emitted_at: emittedAt.toISOString(), data, notification: notificationFor(type, data) };
  let text = JSON.stringify(payload);
  if (Buffer.byteLength(text) <= maxBytes) return payload;
  const cut: Record<string, unknown> = { ...data };
  payload.data = cut;
  for (let guard = 0; guard < 32; guard++) {
    const over = Buffer.byteLength(text) - maxBytes;
    if (over <= 0) break;
    let longest: string | null = null;
    let longestLen = 1;
    for (const [k, v] of Object.entries(cut)) {
      const n = typeof v === 'string' ? Array.from(v).length : 0;
      if (n > longestLen) [longest, longestLen] = [k, n];
    }
    if (longest === null) break;
    // every character cut frees at least one byte and the ellipsis costs three: this frees at least `over`
    cut[longest] = clip(cut[longest] as string, Math.max(0, longestLen - over - 3));
    text = JSON.stringify(payload);
  }
  return payload;
}

/** A push-service Topic (at most 32 base64url characters): a pending notification with the same topic is replaced. */
const topicOf = (tag: string) => createHash('sha256').update(tag).digest('base64url').slice(0, 32);

// ---------------------------------------------------------------------------------------------------------------
// Service
// ---------------------------------------------------------------------------------------------------------------

export class PushService {
  readonly publicKey: string;
  private readonly privateKey: string;
  readonly limits: PushLimits;
  /** active subscriptions by event type and filter; ids are endpoints */
  readonly index = new SubscriptionIndex();
  private readonly subs = new Map<string, PushSubscriptionRow>();
  /** send times (ms) in the last hour per endpoint, oldest first */
  private readonly recent = new Map<string, number[]>();
  private readonly queue: Job[] = [];
  private inFlight = 0;
  private idleWaiters: (() => void)[] = [];
  private readonly now: () => Date;
  /** live sends so far (since start) */
  readonly stats = { sent: 0, failed: 0, removed: 0 };

  private constructor(
    private readonly deps: PushDeps,
    keys: { publicKey: string; privateKey: string },
  ) {
    this.publicKey = keys.publicKey;
    this.privateKey = keys.privateKey;
    this.limits = { ...PUSH_LIMITS, ...deps.limits };
    this.now = deps.now ?? (() => new Date());
  }

  /** The service with its VAPID keys (made and stored on first use) and the stored subscriptions indexed. */
  static async open(deps: PushDeps): Promise<PushService> {
    const keys = JSON.parse(await deps.store.getOrCreate('vapid', () => JSON.stringify(webpush.generateVAPIDKeys()))) as { publicKey: string; privateKey: string };
    const svc = new PushService(deps, keys);
    for (const s of await deps.store.all()) svc.indexSub(s);
    return svc;
  }

  private quota(userId: string): number {
    return webhookEventsPerMonth(this.deps.planOf?.(userId));
  }

  /** Match against the subscriptions as stored now (another replica's opt-ins and opt-outs). */
  async reload(): Promise<void> {
    const rows = await this.deps.store.all();
    for (const endpoint of this.index.retainOnly(new Set(rows.map((r) => r.endpoint)))) {
      this.subs.delete(endpoint);
      this.recent.delete(endpoint);
    }
    // only what changed is indexed again (an upsert replaces keys, types or filter in place)
    for (const s of rows) if (JSON.stringify(this.subs.get(s.endpoint)) !== JSON.stringify(s)) this.indexSub(s);
  }

  private indexSub(s: PushSubscriptionRow): void {
    this.subs.set(s.endpoint, s);
    // only the live types a push subscription may have; a stored filter of the wrong shape fails closed in the index
    const types = s.event_types.filter((t) => (PUSH_EVENT_TYPES as readonly string[]).includes(t));
    this.index.add({ id: s.endpoint, event_types: types, filter: s.filter_json as FilterJson, active: true });
  }

  private async forget(endpoint: string): Promise<void> {
    this.index.remove(endpoint);
    this.subs.delete(endpoint);
    this.recent.delete(endpoint);
    await this.deps.store.remove(endpoint);
  }

  async subscribe(userId: string, sub: PushSubscribeInput): Promise<void> {
    let eventTypes: string[] | undefined;
    if (sub.event_types !== undefined) {
      eventTypes = [...new Set(sub.event_types)];
      const bad = eventTypes.find((t) => !(PUSH_EVENT_TYPES as readonly string[]).includes(t));
      if (bad === 'trader.fill') throw new WebhookError(400, 'invalid_request', 'trader.fill is not available for browser push', 'about 68 fills per second would flood a browser: use a webhook or the /v1/stream WebSocket');
      if (bad !== undefined || eventTypes.length === 0) throw new WebhookError(400, 'invalid_request', `push event_types are one or more of ${PUSH_EVENT_TYPES.join(', ')}`);
    }
    const filter = sub.filter_json === undefined ? undefined : FilterJson.parse(sub.filter_json);
    const t = await checkPublicTarget(sub.endpoint, { allowlist: this.deps.allowlist, lookup: this.deps.lookup });
    if (!t.ok) throw new WebhookError(400, 'invalid_target', t.resolved ? 'the push endpoint does not resolve to a public address' : 'the push endpoint is not allowed', t.reason);
    const row = await this.deps.store.upsert({ user_id: userId, endpoint: sub.endpoint, p256dh: sub.keys.p256dh, auth: sub.keys.auth, event_types: eventTypes, filter_json: filter as Record<string, unknown> | undefined }, this.now().getTime());
    this.indexSub(row);
  }

  /** Send a service.test notification to every subscription of a user now (free of quota and of the hourly cap). */
  async sendTest(userId: string): Promise<PushResult> {
    return this.sendTo(userId, buildPayload('service.test', { message: 'a test notification sent on request' }, this.now()));
  }

  /** Send one payload (JSON) to every subscription of a user, one after the other. */
  async sendTo(userId: string, payload: unknown): Promise<PushResult> {
    const out: PushResult = { sent: 0, failed: 0, removed: 0 };
    for (const s of await this.deps.store.forUser(userId)) {
      const r = await this.deliver(s, JSON.stringify(payload), { TTL: TEST_TTL_SECONDS });
      out[r]++;
    }
    return out;
  }

  /**
   * Notify every subscription whose event_types and filter match a live event, within its owner's monthly quota
   * and its hourly cap. Never rejects (it runs inside the live tail): it waits only for the quota count; the sends
   * happen in the background (drain() waits for them).
   */
  async publish(type: EventType, data: Record<string, unknown>, emittedAt: Date = this.now()): Promise<PushPublishResult> {
    const out: PushPublishResult = { matched: 0, queued: 0, rate_limited: 0, over_quota: 0, dropped: 0 };
    try {
      const endpoints = this.index.match(type, data);
      out.matched = endpoints.length;
      if (!endpoints.length) return out;
      const payload = buildPayload(type, data, emittedAt, this.limits.maxPayloadBytes);
      const text = JSON.stringify(payload);
      const nowMs = this.now().getTime();
      const month = usageMonth(nowMs);
      // the subscriptions under their hourly cap, and how many events each owner would use
      const candidates: PushSubscriptionRow[] = [];
      const wanted = new Map<string, number>();
      for (const endpoint of endpoints) {
        const s = this.subs.get(endpoint);
        if (!s) continue;
        if (this.recentOf(endpoint, nowMs).length >= this.limits.perHour) {
          out.rate_limited++;
          continue;
        }
        candidates.push(s);
        wanted.set(s.user_id, (wanted.get(s.user_id) ?? 0) + 1);
      }
      // each owner's events counted at once, as far as the quota allows (one counter with webhooks, on every replica)
      const usage = this.deps.usage;
      const granted = new Map<string, number>();
      await Promise.all(
        [...wanted].map(async ([user, n]) => {
          const quota = this.quota(user);
          let k = 0;
          try {
            k = usage && quota > 0 ? await usage.reserveUsage(user, month, n, quota) : 0;
          } catch (e) {
            this.deps.log?.(`push: counting ${type} against the quota failed: ${(e as Error)?.message ?? String(e)}`);
          }
          granted.set(user, k);
        }),
      );
      for (const s of candidates) {
        const left = granted.get(s.user_id) ?? 0;
        if (left <= 0) {
          out.over_quota++;
          continue;
        }
        // re-checked: another publish may have filled the hour, or the subscription gone, while the count was made
        const times = this.recentOf(s.endpoint, nowMs);
        if (times.length >= this.limits.perHour) {
          out.rate_limited++;
          continue;
        }
        if (this.queue.length >= this.limits.maxQueue || !this.subs.has(s.endpoint)) {
          out.dropped++;
          continue;
        }
        this.queue.push({ endpoint: s.endpoint, payload: text, type, tag: payload.notification.tag });
        times.push(nowMs);
        granted.set(s.user_id, left - 1);
        out.queued++;
      }
      this.pump();
      // counted and not sent (dropped or capped meanwhile): given back
      for (const [user, left] of granted) if (left > 0) await usage!.addUsage(user, month, -left);
    } catch (e) {
      this.deps.log?.(`push: publish ${type} failed: ${(e as Error)?.message ?? String(e)}`);
    }
    return out;
  }

  /** Resolves once nothing is queued or in flight (tests; shutdown). */
  drain(): Promise<void> {
    if (!this.queue.length && !this.inFlight) return Promise.resolve();
    return new Promise((r) => this.idleWaiters.push(r));
  }

  /** The send times within the last hour (pruned in place). */
  private recentOf(endpoint: string, nowMs: number): number[] {
    let t = this.recent.get(endpoint);
    if (!t) this.recent.set(endpoint, (t = []));
    let i = 0;
    while (i < t.length && t[i]! <= nowMs - 3600_000) i++;
    if (i) t.splice(0, i);
    return t;
  }

  private pump(): void {
    while (this.inFlight < this.limits.concurrency && this.queue.length) {
      const job = this.queue.shift()!;
      const s = this.subs.get(job.endpoint);
      if (!s) continue; // removed while it waited
      this.inFlight++;
      this.deliver(s, job.payload, { TTL: this.limits.ttlSeconds, urgency: job.type === 'signal.smart_money' ? 'high' : 'normal', topic: topicOf(job.tag) })
        .then((r) => {
          this.stats[r]++;
          if (r === 'failed') this.deps.log?.(`push: a ${job.type} notification was not accepted by ${new URL(job.endpoint).host}`);
        })
        .catch((e: unknown) => {
          this.stats.failed++;
          this.deps.log?.(`push: send failed: ${(e as Error)?.message ?? String(e)}`);
        })
        .finally(() => {
          this.inFlight--;
          this.pump();
        });
    }
    if (!this.queue.length && !this.inFlight) {
      const w = this.idleWaiters;
      this.idleWaiters = [];
      for (const f of w) f();
    }
  }

  /** Encrypt and POST one payload; 404/410 (or keys that cannot encrypt) remove the subscription. */
  private async deliver(s: PushSubscriptionRow, payload: string, opts: { TTL: number; urgency?: webpush.Urgency; topic?: string }): Promise<keyof PushResult> {
    let details: ReturnType<typeof webpush.generateRequestDetails>;
    try {
      details = webpush.generateRequestDetails({ endpoint: s.endpoint, keys: { p256dh: s.p256dh, auth: s.auth } }, payload, {
        vapidDetails: { subject: this.deps.subject, publicKey: this.publicKey, privateKey: this.privateKey },
        contentEncoding: 'aes128gcm',
        ...opts,
      });
    } catch {
      // keys the browser gave us that cannot encrypt: the subscription is unusable
      await this.forget(s.endpoint);
      return 'removed';
    }
    const headers = Object.fromEntries(Object.entries(details.headers).map(([k, v]) => [k.toLowerCase(), String(v)]));
    const r: PostResult = await pinnedPost(details.endpoint, details.body ?? Buffer.alloc(0), headers, { allowlist: this.deps.allowlist, ca: this.deps.ca, lookup: this.deps.lookup });
    if (r.ok) return 'sent';
    if (r.status === 404 || r.status === 410) {
      await this.forget(s.endpoint);
      return 'removed';
    }
    return 'failed';
  }

}
