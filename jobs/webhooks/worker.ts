/**
 * The delivery worker: claims due deliveries from the durable outbox, signs each attempt afresh and POSTs it, and
 * records the outcome. Any 2xx delivers. A failed try is retried after 5 s, 30 s, 5 min, 1 h, 6 h and 24 h: the
 * first try plus at most six retries, seven tries in all (the spec's "6 attempts" are the retries, which is why a
 * BullMQ queue would set attempts: 7 — BullMQ counts the first try). After the last retry fails the delivery is
 * exhausted and never replayed. Time is injected, so the schedule is tested without sleeping.
 */
import { activeSecrets, type DeliveryRow, type WebhookStore } from '../../data/webhook-store.ts';
import { signPayload } from './signing.ts';

export const RETRY_DELAYS_MS = [5_000, 30_000, 5 * 60_000, 3600_000, 6 * 3600_000, 24 * 3600_000] as const;
export const DELIVERY_TIMEOUT_MS = 10_000;
export const USER_AGENT = 'Service-Webhook/1.0';

/** When the try numbered `tries` (1 = the first) has failed: the next try's time, or null when retries are spent. */
export function nextAttemptAfter(tries: number, failedAtMs: number): number | null {
  const delay = RETRY_DELAYS_MS[tries - 1];
  return delay === undefined ? null : failedAtMs + delay;
}

export interface SendResult {
  ok: boolean;
  status: number | null;
  error?: string;
}

/** POST a body to a target (jobs/webhooks/ssrf.ts pinnedPost in production: SSRF-checked, pinned, no redirects). */
export type Send = (url: string, body: string, headers: Record<string, string>) => Promise<SendResult>;

export interface WorkerDeps {
  store: WebhookStore;
  send: Send;
  now?: () => Date;
  /** deliveries claimed per tick */
  batch?: number;
  /** sends in flight at once */
  concurrency?: number;
  /** a claimed delivery is retried by another worker if not settled within this (covers a crash mid-send) */
  leaseMs?: number;
  log?: (msg: string) => void;
}

/** The delivery headers of one try, signed with each secret given (the current one first). */
export function deliveryHeaders(d: Pick<DeliveryRow, 'event_id' | 'type' | 'body'>, secret: string | readonly string[], tSeconds: number): Record<string, string> {
  return {
    'content-type': 'application/json',
    'user-agent': USER_AGENT,
    'x-service-event-id': d.event_id,
    'x-service-event-type': d.type,
    'x-service-signature': signPayload(secret, d.body, tSeconds),
  };
}

export class DeliveryWorker {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<number> | null = null;
  private readonly now: () => Date;

  constructor(private readonly deps: WorkerDeps) {
    this.now = deps.now ?? (() => new Date());
  }

  /** Attempt one claimed delivery and record the outcome. */
  private async attempt(d: DeliveryRow): Promise<void> {
    const { store } = this.deps;
    const target = await store.target(d.subscription_id);
    if (!target) {
      await store.failed(d.delivery_id, null, 'subscription deleted', null, d.lease_until_ms);
      return;
    }
    const nowMs = this.now().getTime();
    const t = Math.floor(nowMs / 1000);
    let r: SendResult;
    try {
      r = await this.deps.send(target.target_url, d.body, deliveryHeaders(d, activeSecrets(target, nowMs), t));
    } catch (e) {
      r = { ok: false, status: null, error: (e as Error).message };
    }
    const at = this.now().getTime();
    if (r.ok && r.status !== null && r.status >= 200 && r.status < 300) await store.delivered(d.delivery_id, r.status, at);
    else await store.failed(d.delivery_id, r.status, r.error ?? `HTTP ${r.status}`, nextAttemptAfter(d.attempts + 1, at), d.lease_until_ms);
  }

  /** Claim and attempt everything due now (in batches); returns how many attempts were made. */
  runDue(): Promise<number> {
    if (this.running) return this.running;
    this.running = (async () => {
      let n = 0;
      const batch = this.deps.batch ?? 100;
      const conc = this.deps.concurrency ?? 16;
      for (;;) {
        const due = await this.deps.store.claim(batch, this.now().getTime(), this.deps.leaseMs ?? 60_000);
        if (!due.length) break;
        for (let i = 0; i < due.length; i += conc) await Promise.all(due.slice(i, i + conc).map((d) => this.attempt(d)));
        n += due.length;
        if (due.length < batch) break;
      }
      return n;
    })().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  start(everyMs = 250): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      this.runDue().catch((e) => this.deps.log?.(`webhooks: delivery tick failed: ${(e as Error).message}`));
    }, everyMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running?.catch(() => {});
  }
}
