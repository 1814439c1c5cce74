/**
 * The Redis delivery queue (BullMQ), for running delivery workers on several processes or machines.
 *
 * Shape (a transactional outbox in front of a work queue):
 *  1. Producers still write every (event, subscription) delivery to the outbox (the service database, SQLite or
 *     PostgreSQL) first, counting the quota in the same transaction (data/webhook-store.ts). Nothing is attempted
 *     before it is durable there.
 *  2. The relay (in each service process; claims never overlap) claims pending outbox rows under a lease, adds them to
 *     BullMQ with a deterministic job id `<event id>.<subscription id>`, and only then marks them `queued`. A crash
 *     between the two leaves the rows pending; the lease expires and the relay adds them again, and BullMQ ignores
 *     an add whose job id it already holds (completed jobs are kept 24 h for that), so no duplicate is sent.
 *  3. Workers anywhere take jobs, look up the subscription's target and signing secret in a Redis hash that the
 *     service mirrors from SQLite (create/update/delete write it; a full resync runs at start, after any failed
 *     write, and whenever a periodic check finds the mirror's size off), sign afresh, and POST through the
 *     SSRF-guarded pinned sender. A non-2xx throws, so BullMQ retries. A subscription missing from the mirror is a
 *     failed try (the mirror may be behind, e.g. after Redis lost data), not a drop: only an id in the `deleted` set
 *     (written with the delete) drops its jobs.
 *  4. Each final outcome (delivered, exhausted, dropped) goes to a Redis stream; the service reads it with a consumer
 *     group (acknowledged only once applied) and writes it back to the outbox row, so the SQLite delivery log stays
 *     the 30-day record after BullMQ has removed its jobs.
 *
 * Counting tries: BullMQ's `attempts` counts the first try, so `attempts: 7` is the first try plus the spec's six
 * retries (5 s, 30 s, 5 min, 1 h, 6 h, 24 h, each from the failed try) — the same count as the SQLite worker. A
 * delivery the SQLite worker already tried before the operator switched to Redis keeps its count (`prior_attempts`).
 * A worker that dies mid-send leaves the job's lock to expire; another worker's stalled-job check puts it back (a
 * stall is not a failed try; maxStalledCount is high so a crash never fails a delivery for good). Exhausted jobs
 * stay in BullMQ's failed set for 30 days and are never replayed. A job for a deleted subscription fails at once
 * (UnrecoverableError), as the SQLite worker drops it.
 *
 * Redis must keep what it is given: `maxmemory-policy noeviction` and AOF persistence (docs/operations.md).
 */
import { Queue, UnrecoverableError, Worker, type Job, type ConnectionOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import { activeSecrets, type DeliveryRow, type DeliveryTarget, type WebhookStore } from '../../data/webhook-store.ts';
import { deliveryHeaders, RETRY_DELAYS_MS, type Send } from './worker.ts';

export const QUEUE_NAME = 'webhook-deliveries';
export const DEFAULT_PREFIX = 'service';
const BACKOFF_TYPE = 'service-webhook';
/** completed jobs are kept this long so a relay re-add after a crash is recognised as a duplicate */
const KEEP_COMPLETED_S = 24 * 3600;
const KEEP_FAILED_S = 30 * 24 * 3600;

export interface DeliveryJob {
  event_id: string;
  subscription_id: string;
  type: string;
  body: string;
  /** tries the SQLite worker made before the hand-off (normally 0) */
  prior_attempts: number;
}

export interface QueuedDelivery {
  status: 'pending' | 'delivered' | 'exhausted' | 'dropped';
  attempts: number;
  last_status: number | null;
  last_error: string | null;
  next_attempt_ms: number | null;
}

/** BullMQ job ids may not contain ':' and event / subscription ids never contain '.' */
export const jobIdOf = (eventId: string, subscriptionId: string): string => `${eventId}.${subscriptionId}`;

/** The delay before the next try after `triesSoFar` failed tries, or -1 (BullMQ: no more retries) when spent. */
export function retryDelay(triesSoFar: number, delays: readonly number[] = RETRY_DELAYS_MS): number {
  const d = delays[triesSoFar - 1];
  return d === undefined ? -1 : d;
}

/** The failure message BullMQ keeps: `HTTP <status>: <error>` or the transport error; parsed back by `state`. */
class DeliveryFailed extends Error {}

/** Redis keys of one queue (one prefix). */
export function queueKeys(prefix: string = DEFAULT_PREFIX) {
  const base = `${prefix}:${QUEUE_NAME}`;
  return { base, targets: `${base}:targets`, deleted: `${base}:deleted`, outcomes: `${base}:outcomes`, delayed: `${base}:delayed` };
}

/** What the service writes back to the outbox row once the queue is done with a delivery. */
export interface QueueOutcome {
  event_id: string;
  subscription_id: string;
  status: 'delivered' | 'exhausted' | 'dropped';
  attempts: number;
  http_status: number | null;
  error: string | null;
  at_ms: number;
}

/** outcomes kept in the stream while the service is away (roughly; XADD MAXLEN ~) */
const OUTCOMES_MAXLEN = 1_000_000;
const failureMessage = (status: number | null, error: string | undefined) => (status ? `HTTP ${status}${error && error !== `http ${status}` ? `: ${error}` : ''}` : (error ?? 'no response'));

export interface RedisQueueOptions {
  /** an ioredis connection created with maxRetriesPerRequest: null (BullMQ's requirement for workers) */
  connection: Redis;
  /** key prefix (isolates deployments and tests) */
  prefix?: string;
}

export class RedisDeliveryQueue {
  readonly queue: Queue<DeliveryJob>;
  readonly targetsKey: string;
  readonly keys: ReturnType<typeof queueKeys>;
  private readonly redis: Redis;

  constructor(opts: RedisQueueOptions) {
    this.redis = opts.connection;
    this.queue = new Queue<DeliveryJob>(QUEUE_NAME, { connection: opts.connection as unknown as ConnectionOptions, prefix: opts.prefix ?? DEFAULT_PREFIX });
    this.keys = queueKeys(opts.prefix);
    this.targetsKey = this.keys.targets;
  }

  /**
   * BullMQ waits for a connection that is down instead of failing: fail fast when it is not ready, and bound the
   * wait otherwise (an add that lands later is harmless: the relay re-adds the same job ids, which BullMQ ignores).
   */
  private guarded<T>(what: string, f: () => Promise<T>, ms = 5_000): Promise<T> {
    if (this.redis.status !== 'ready') return Promise.reject(new Error(`redis unavailable (${this.redis.status}): ${what}`));
    let timer: NodeJS.Timeout | undefined;
    return Promise.race([
      f(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`redis did not answer within ${ms} ms: ${what}`)), ms);
      }),
    ]).finally(() => clearTimeout(timer));
  }

  /** Add deliveries (idempotent per job id). Resolves once Redis has them. */
  async add(rows: readonly DeliveryJob[], maxTries: number): Promise<void> {
    if (!rows.length) return;
    await this.guarded('add', () => this.queue.addBulk(
      rows.map((d) => ({
        name: d.type,
        data: d,
        opts: {
          jobId: jobIdOf(d.event_id, d.subscription_id),
          attempts: Math.max(1, maxTries - d.prior_attempts),
          backoff: { type: BACKOFF_TYPE },
          removeOnComplete: { age: KEEP_COMPLETED_S },
          removeOnFail: { age: KEEP_FAILED_S },
        },
      })),
    ));
  }

  // Subscription targets mirrored for workers on other machines ----------------------------------------------

  async putTarget(t: DeliveryTarget): Promise<void> {
    await this.redis.hset(this.targetsKey, t.id, mirrorValue(t));
  }

  /** Deleted for good: its queued jobs are dropped (ids are random and never reused, so the set only grows by deletes). */
  async removeTarget(id: string): Promise<void> {
    await this.redis.multi().hdel(this.targetsKey, id).sadd(this.keys.deleted, id).exec();
  }

  /** How many targets the mirror holds (the service compares it with its own count). */
  targetCount(): Promise<number> {
    return this.redis.hlen(this.targetsKey);
  }

  /** Replace the whole mirror with the store's subscriptions, atomically. */
  async syncTargets(all: readonly DeliveryTarget[]): Promise<void> {
    const tmp = `${this.targetsKey}:sync`;
    const m = this.redis.multi().del(tmp);
    for (let i = 0; i < all.length; i += 1000) {
      const chunk = all.slice(i, i + 1000).flatMap((s) => [s.id, mirrorValue(s)]);
      m.hset(tmp, ...chunk);
    }
    if (all.length) m.rename(tmp, this.targetsKey);
    else m.del(this.targetsKey);
    await m.exec();
  }

  // What happened to a delivery ---------------------------------------------------------------------------------

  async state(eventId: string, subscriptionId: string): Promise<QueuedDelivery | null> {
    const read = async () => (await this.guarded('getJob', () => this.queue.getJob(jobIdOf(eventId, subscriptionId)), 2_000)) as Job<DeliveryJob> | undefined;
    let job = await read();
    if (!job) return null;
    const s = await this.guarded('getState', () => job!.getState(), 2_000);
    // a try that ended between the two reads: its job read again, as of its final state (read before it, the job said
    // no try made while its state said delivered: "no delivery worker took it yet" for an event that was delivered)
    if (s === 'completed' || s === 'failed') job = (await read()) ?? job;
    const prior = job.data.prior_attempts ?? 0;
    const m = /^HTTP (\d{3})/.exec(job.failedReason ?? '');
    const lastStatus = s === 'completed' ? Number((job.returnvalue as { http_status?: number } | null)?.http_status ?? 200) : m ? Number(m[1]) : null;
    const dropped = s === 'failed' && job.failedReason === 'subscription deleted';
    // a delayed job's score in the delayed set is its due time x 0x1000 (+ a tie-break counter)
    const score = s === 'delayed' ? await this.redis.zscore(this.keys.delayed, job.id!) : null;
    return {
      status: s === 'completed' ? 'delivered' : dropped ? 'dropped' : s === 'failed' ? 'exhausted' : 'pending',
      attempts: prior + job.attemptsMade,
      last_status: lastStatus,
      last_error: s === 'completed' ? null : job.failedReason || null,
      next_attempt_ms: score !== null ? Math.floor(Number(score) / 0x1000) : s === 'waiting' || s === 'active' ? Date.now() : null,
    };
  }

  /** Jobs by state (completed jobs are kept 24 h, failed ones 30 days). */
  async counts(): Promise<Record<'waiting' | 'active' | 'delayed' | 'completed' | 'failed', number>> {
    const c = await this.guarded('counts', () => this.queue.getJobCounts('waiting', 'active', 'delayed', 'completed', 'failed'));
    return { waiting: c.waiting ?? 0, active: c.active ?? 0, delayed: c.delayed ?? 0, completed: c.completed ?? 0, failed: c.failed ?? 0 };
  }

  close(): Promise<void> {
    return this.queue.close();
  }
}

export interface RedisWorkerOptions {
  connection: Redis;
  prefix?: string;
  send: Send;
  concurrency?: number;
  /** test hook: the retry delays (production: RETRY_DELAYS_MS) */
  retryDelaysMs?: readonly number[];
  /** lock on an active job; a crashed worker's jobs come back after it expires (BullMQ default 30 s) */
  lockDurationMs?: number;
  stalledIntervalMs?: number;
  now?: () => Date;
  /** called after each try (tests and logs) */
  onAttempt?: (job: DeliveryJob, ok: boolean, status: number | null) => void;
}

/** A BullMQ worker delivering webhook jobs. Start as many as you like, in any process that reaches Redis. */
export function startRedisWorker(o: RedisWorkerOptions): Worker<DeliveryJob> {
  const prefix = o.prefix ?? DEFAULT_PREFIX;
  const keys = queueKeys(prefix);
  const delays = o.retryDelaysMs ?? RETRY_DELAYS_MS;
  const now = o.now ?? (() => new Date());
  const redis = o.connection;
  const triesOf = (job: Job<DeliveryJob>) => (job.data.prior_attempts ?? 0) + job.attemptsMade + 1;
  /** this try is the last one BullMQ will make (attempts was set to the tries left at hand-off) */
  const isLastTry = (job: Job<DeliveryJob>) => job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
  const outcome = (job: Job<DeliveryJob>, status: QueueOutcome['status'], httpStatus: number | null, error: string | null) =>
    redis.xadd(
      keys.outcomes, 'MAXLEN', '~', OUTCOMES_MAXLEN, '*',
      'event_id', job.data.event_id, 'subscription_id', job.data.subscription_id, 'status', status,
      'attempts', String(triesOf(job)), 'http_status', httpStatus === null ? '' : String(httpStatus), 'error', error ?? '', 'at_ms', String(Date.now()),
    );
  return new Worker<DeliveryJob>(
    QUEUE_NAME,
    async (job) => {
      const raw = await redis.hget(keys.targets, job.data.subscription_id);
      if (!raw) {
        if (await redis.sismember(keys.deleted, job.data.subscription_id)) {
          await outcome(job, 'dropped', null, 'subscription deleted');
          throw new UnrecoverableError('subscription deleted');
        }
        // the mirror is behind (it is being rebuilt): an ordinary failed try, retried on the schedule
        const msg = 'subscription not in the target mirror yet';
        if (isLastTry(job)) await outcome(job, 'exhausted', null, msg);
        throw new DeliveryFailed(msg);
      }
      const target = JSON.parse(raw) as DeliveryTarget;
      const nowMs = now().getTime();
      const t = Math.floor(nowMs / 1000);
      let ok = false;
      let status: number | null = null;
      let error: string | undefined;
      try {
        const r = await o.send(target.target_url, job.data.body, deliveryHeaders(job.data, activeSecrets(target, nowMs), t));
        status = r.status;
        error = r.error;
        ok = r.ok && status !== null && status >= 200 && status < 300;
      } catch (e) {
        error = (e as Error).message;
      }
      o.onAttempt?.(job.data, ok, status);
      if (!ok) {
        const msg = failureMessage(status, error).slice(0, 500);
        // the last try: report the outcome before BullMQ moves the job to failed
        if (isLastTry(job)) await outcome(job, 'exhausted', status, msg);
        throw new DeliveryFailed(msg);
      }
      await outcome(job, 'delivered', status, null);
      return { http_status: status };
    },
    {
      connection: redis as unknown as ConnectionOptions,
      prefix,
      concurrency: o.concurrency ?? 16,
      lockDuration: o.lockDurationMs ?? 30_000,
      stalledInterval: o.stalledIntervalMs ?? 30_000,
      // a crash is not the receiver's fault: never fail a delivery for stalling
      maxStalledCount: 1000,
      settings: {
        backoffStrategy: (attemptsMade: number, _type?: string, _err?: Error, job?: { data?: DeliveryJob }) => retryDelay(attemptsMade + (job?.data?.prior_attempts ?? 0), delays),
      },
    },
  );
}

/**
 * Moves pending outbox rows into the Redis queue (step 2 above). `runDue` hands off everything due now; `kick`
 * schedules a hand-off soon (producers call it after enqueueing); `start` also sweeps on an interval.
 */
export class OutboxRelay {
  private timer: NodeJS.Timeout | null = null;
  private kicked: NodeJS.Immediate | null = null;
  private running: Promise<number> | null = null;
  private readonly now: () => Date;

  constructor(
    private readonly deps: {
      store: WebhookStore;
      queue: RedisDeliveryQueue;
      now?: () => Date;
      batch?: number;
      leaseMs?: number;
      maxTries?: number;
      log?: (msg: string) => void;
    },
  ) {
    this.now = deps.now ?? (() => new Date());
  }

  runDue(): Promise<number> {
    if (this.running) return this.running.then(() => this.runDue());
    this.running = (async () => {
      let n = 0;
      const batch = this.deps.batch ?? 500;
      for (;;) {
        const rows = await this.deps.store.claim(batch, this.now().getTime(), this.deps.leaseMs ?? 60_000);
        if (!rows.length) break;
        try {
          await this.deps.queue.add(rows.map(toJob), this.deps.maxTries ?? RETRY_DELAYS_MS.length + 1);
        } catch (e) {
          // the queue's error is the one to report; a failed release only leaves the rows to their lease
          await this.deps.store.release(rows.map((r) => r.delivery_id)).catch(() => {});
          throw e;
        }
        await this.deps.store.handedOff(rows.map((r) => r.delivery_id), this.now().getTime());
        n += rows.length;
        if (rows.length < batch) break;
      }
      return n;
    })().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  kick(): void {
    if (this.kicked) return;
    this.kicked = setImmediate(() => {
      this.kicked = null;
      this.runDue().catch((e) => this.deps.log?.(`webhooks: relay to Redis failed (kept in the outbox): ${(e as Error).message}`));
    });
  }

  start(everyMs = 1000): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.kick(), everyMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    if (this.kicked) clearImmediate(this.kicked);
    this.kicked = null;
    await this.running?.catch(() => {});
  }
}

/** The mirror holds exactly what a worker needs: URL and secrets (the rotated-out one with its end). */
const mirrorValue = (t: DeliveryTarget): string =>
  JSON.stringify({ target_url: t.target_url, secret: t.secret, previous_secret: t.previous_secret, previous_secret_until_ms: t.previous_secret_until_ms });

/**
 * Reads final outcomes from the stream with a consumer group and applies them to the outbox rows (step 4). An entry
 * is acknowledged only after its row is written, so a crash re-reads it (applying twice changes nothing). Needs
 * its own connection: it blocks on XREADGROUP.
 */
export class OutcomeSink {
  private stopped = false;
  private loop: Promise<void> | null = null;
  private readonly keys: ReturnType<typeof queueKeys>;
  static readonly GROUP = 'service';

  constructor(
    private readonly deps: {
      /** a dedicated connection (maxRetriesPerRequest: null): the sink blocks on it */
      connection: Redis;
      prefix?: string;
      /** writes the outcomes back (the entries are acknowledged once it resolves) */
      apply: (outcomes: QueueOutcome[]) => void | Promise<void>;
      log?: (msg: string) => void;
      blockMs?: number;
    },
  ) {
    this.keys = queueKeys(deps.prefix);
  }

  start(): void {
    this.loop ??= this.run();
  }

  /** Apply what is in the stream now (tests); the loop does the same continuously. */
  async drainOnce(): Promise<number> {
    await this.ensureGroup();
    let n = 0;
    for (const id of ['0', '>'] as const)
      for (let got = await this.readBatch(id, undefined); got > 0; got = await this.readBatch(id, undefined)) n += got;
    return n;
  }

  private async ensureGroup(): Promise<void> {
    try {
      await this.deps.connection.xgroup('CREATE', this.keys.outcomes, OutcomeSink.GROUP, '0', 'MKSTREAM');
    } catch (e) {
      if (!String((e as Error).message).includes('BUSYGROUP')) throw e;
    }
  }

  private async readBatch(from: '0' | '>', blockMs: number | undefined): Promise<number> {
    const args: (string | number)[] = ['GROUP', OutcomeSink.GROUP, 'service-process', 'COUNT', 500];
    if (blockMs !== undefined) args.push('BLOCK', blockMs);
    args.push('STREAMS', this.keys.outcomes, from);
    const res = (await (this.deps.connection as unknown as { xreadgroup: (...a: (string | number)[]) => Promise<unknown> }).xreadgroup(...args)) as [string, [string, string[]][]][] | null;
    const entries = res?.[0]?.[1] ?? [];
    if (!entries.length) return 0;
    const outcomes: QueueOutcome[] = [];
    for (const [, fields] of entries) {
      const f: Record<string, string> = {};
      for (let i = 0; i + 1 < fields.length; i += 2) f[fields[i]!] = fields[i + 1]!;
      if (!f.event_id || !f.subscription_id || !['delivered', 'exhausted', 'dropped'].includes(f.status ?? '')) continue;
      outcomes.push({
        event_id: f.event_id,
        subscription_id: f.subscription_id,
        status: f.status as QueueOutcome['status'],
        attempts: Number(f.attempts) || 0,
        http_status: f.http_status ? Number(f.http_status) : null,
        error: f.error || null,
        at_ms: Number(f.at_ms) || Date.now(),
      });
    }
    await this.deps.apply(outcomes);
    await this.deps.connection.xack(this.keys.outcomes, OutcomeSink.GROUP, ...entries.map(([id]) => id));
    return entries.length;
  }

  private async run(): Promise<void> {
    let pendingFirst = true;
    while (!this.stopped) {
      try {
        await this.ensureGroup();
        // after a crash: what was read but not acknowledged, then new entries
        if (pendingFirst) {
          while ((await this.readBatch('0', undefined)) > 0 && !this.stopped);
          pendingFirst = false;
        }
        await this.readBatch('>', this.deps.blockMs ?? 1000);
      } catch (e) {
        if (this.stopped) break;
        this.deps.log?.(`webhooks: reading delivery outcomes failed (retrying): ${(e as Error).message}`);
        pendingFirst = true;
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    // the blocking read returns within blockMs; do not wait for longer than that
    await Promise.race([this.loop, new Promise((r) => setTimeout(r, (this.deps.blockMs ?? 1000) + 500))]);
  }
}

const toJob = (r: DeliveryRow): DeliveryJob => ({ event_id: r.event_id, subscription_id: r.subscription_id, type: r.type, body: r.body, prior_attempts: r.attempts });
