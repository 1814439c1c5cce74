/**
 * Webhook delivery through the Redis queue (BullMQ) against a real Redis on 127.0.0.1:6379 and a real HTTPS
 * receiver on loopback: the outbox relay hands off exactly once per delivery, signed deliveries verify
 * independently, `test` reports the first try, a deleted subscription's jobs are dropped, the retry schedule (the
 * spec's, scaled down because BullMQ delays run on the real clock) gives seven tries with one event id and then
 * stops for good, and several worker processes share thousands of events while one is killed mid-run without
 * losing any. Every test uses its own key prefix and removes it afterwards.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openServiceDb } from '../../data/sql/db.ts';
import { WebhookStore } from '../../data/webhook-store.ts';
import { OutboxRelay, OutcomeSink, RedisDeliveryQueue, retryDelay, startRedisWorker } from '../../jobs/webhooks/redis-queue.ts';
import { WebhookService } from '../../jobs/webhooks/service.ts';
import { pinnedPost } from '../../jobs/webhooks/ssrf.ts';
import { RETRY_DELAYS_MS, type Send } from '../../jobs/webhooks/worker.ts';
import { startHttpsReceiver, type HttpsReceiver, type ReceivedRequest } from '../helpers/https-receiver.ts';

type Received = ReceivedRequest;

let rx: HttpsReceiver;
let received: Received[];
let port: number;
let ca: string;
let dir: string;
let redis: Redis;
const prefixes: string[] = [];

const newPrefix = () => {
  const p = `test-wh-${randomBytes(6).toString('hex')}`;
  prefixes.push(p);
  return p;
};
const target = () => `https://127.0.0.1:${port}/hooks`;
const send: Send = (url, body, headers) =>
  pinnedPost(url, body, headers, { allowlist: [`127.0.0.1:${port}`], ca, timeoutMs: 5_000 }).then((r) => ({ ok: r.ok, status: r.status || null, error: r.error }));
/** A store on its own file (the store owns its connection: one per file in this process). */
const storeOn = (file: string) => WebhookStore.open(join(dir, file));
const until = async (cond: () => boolean | Promise<boolean>, ms = 20_000) => {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
};

beforeAll(async () => {
  rx = await startHttpsReceiver();
  ({ received, port, ca } = rx);
  dir = await mkdtemp(join(tmpdir(), 'webhooks-redis-'));
  redis = new Redis('redis://127.0.0.1:6379', { maxRetriesPerRequest: null });
  await redis.ping();
});

afterAll(async () => {
  for (const p of prefixes) {
    const keys = await redis.keys(`${p}:*`);
    if (keys.length) await redis.del(...keys);
  }
  redis?.disconnect();
  await rx?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** A fresh prefix, outbox and queue with one subscription to the receiver, mirrored to Redis. */
async function queueFixture(userId: string, eventType: string, secret: string) {
  const prefix = newPrefix();
  const store = await storeOn(`${prefix}.sqlite`);
  const queue = new RedisDeliveryQueue({ connection: redis, prefix });
  const sub = await store.create({ user_id: userId, target_url: target(), event_types: [eventType], filter_json: {}, active: true, secret }, Date.now());
  await queue.syncTargets(await store.targets());
  return { prefix, store, queue, sub };
}

/** Write the outcomes waiting in the stream back to the outbox, as the service's sink does; how many there were. */
async function drainOutcomes(prefix: string, store: WebhookStore): Promise<number> {
  const conn = redis.duplicate();
  try {
    return await new OutcomeSink({ connection: conn, prefix, apply: (o) => store.settleFromQueue(o) }).drainOnce();
  } finally {
    conn.disconnect();
  }
}

describe('retry schedule', () => {
  it('maps tries to the spec delays (BullMQ passes the tries made so far) and stops after the seventh try', () => {
    expect([1, 2, 3, 4, 5, 6].map((n) => retryDelay(n))).toEqual([...RETRY_DELAYS_MS]);
    expect(RETRY_DELAYS_MS).toEqual([5_000, 30_000, 300_000, 3_600_000, 21_600_000, 86_400_000]);
    expect(retryDelay(7)).toBe(-1);
    expect(retryDelay(0)).toBe(-1);
  });

  it('retries a failing receiver seven times in all with one event id, on the (scaled) schedule, then never again', async () => {
    const scaled = [100, 200, 300, 400, 500, 600];
    const { prefix, store, queue, sub } = await queueFixture('u1', 'market.resolved', 'whsec_retry');
    const worker = startRedisWorker({ connection: redis, prefix, send, retryDelaysMs: scaled });
    const relay = new OutboxRelay({ store, queue });
    received.length = 0;
    rx.answer = () => 500;
    await store.enqueue({ id: 'evt_retry', type: 'market.resolved', body: '{"type":"market.resolved"}' }, [{ id: sub.id, user_id: 'u1' }], () => 10, Date.now());
    expect(await relay.runDue()).toBe(1);
    expect((await store.delivery('evt_retry', sub.id))?.status).toBe('queued');
    await until(async () => (await queue.state('evt_retry', sub.id))?.status === 'exhausted');
    await new Promise((r) => setTimeout(r, 1500)); // nothing more comes
    expect(received).toHaveLength(7);
    expect(new Set(received.map((r) => r.headers['x-service-event-id']))).toEqual(new Set(['evt_retry']));
    const gaps = received.slice(1).map((r, i) => r.at - received[i]!.at);
    gaps.forEach((g, i) => {
      expect(g, `gap ${i + 1}`).toBeGreaterThanOrEqual(scaled[i]! - 5);
      expect(g, `gap ${i + 1}`).toBeLessThan(scaled[i]! + 2500);
    });
    expect(await queue.state('evt_retry', sub.id)).toMatchObject({ status: 'exhausted', attempts: 7, last_status: 500 });
    // the final outcome reaches the outbox row through the outcome stream
    expect(await drainOutcomes(prefix, store)).toBe(1);
    expect(await store.delivery('evt_retry', sub.id)).toMatchObject({ status: 'exhausted', attempts: 7, last_status: 500 });
    rx.answer = () => 200;
    await worker.close();
    await queue.close();
    await store.close();
  }, 30_000);

  it('a delivery the SQLite worker already tried keeps its count after the hand-off', async () => {
    const scaled = [50, 50, 50, 50, 50, 50];
    const { prefix, store, queue, sub } = await queueFixture('u1', 'market.resolved', 'whsec_prior');
    await store.enqueue({ id: 'evt_prior', type: 'market.resolved', body: '{}' }, [{ id: sub.id, user_id: 'u1' }], () => 10, 0);
    // three tries already made here (as the SQLite worker would have recorded them), due again now
    const [row] = await store.claim(1, 0, 0);
    for (let i = 0; i < 3; i++) await store.failed(row!.delivery_id, 500, 'http 500', 0);
    const worker = startRedisWorker({ connection: redis, prefix, send, retryDelaysMs: scaled });
    received.length = 0;
    rx.answer = () => 503;
    await new OutboxRelay({ store, queue }).runDue();
    await until(async () => (await queue.state('evt_prior', sub.id))?.status === 'exhausted');
    expect(received).toHaveLength(4); // 3 + 4 = 7 tries in all
    expect(await queue.state('evt_prior', sub.id)).toMatchObject({ attempts: 7, last_status: 503 });
    rx.answer = () => 200;
    await worker.close();
    await queue.close();
    await store.close();
  }, 30_000);
});

describe('the service in Redis mode', () => {
  let store: WebhookStore;
  let svc: WebhookService;
  let prefix: string;

  beforeAll(async () => {
    prefix = newPrefix();
    store = await storeOn('service.sqlite');
    svc = await WebhookService.open({ store, planOf: () => 'pro', allowlist: [`127.0.0.1:${port}`], ca, redis: { connection: redis, prefix } });
    await svc.start();
  });
  afterAll(async () => {
    await svc?.stop();
    await store?.close();
  });

  /** The signature recomputed from scratch: HMAC-SHA256 keyed by the secret over "<t>.<raw body>". */
  const independentCheck = (r: Received, secret: string) => {
    const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(r.headers['x-service-signature'] ?? '');
    return !!m && createHmac('sha256', secret).update(`${m[1]}.${r.body}`).digest('hex') === m[2];
  };

  it('sends a signed test event through a worker and reports its first try', async () => {
    const { subscription, secret } = await svc.create('u1', 'pro', { target_url: target(), event_types: ['service.test', 'trader.fill'] });
    expect(JSON.parse((await redis.hget(svc.queue!.targetsKey, subscription.id))!)).toEqual({ target_url: target(), secret, previous_secret: null, previous_secret_until_ms: null });
    received.length = 0;
    const out = await svc.test('u1', subscription.id);
    expect(out).toMatchObject({ delivered: true, http_status: 200, attempts: 1, error: null, next_attempt_at: null });
    expect(received).toHaveLength(1);
    expect(received[0]!.headers['x-service-event-id']).toBe(out.event_id);
    expect(received[0]!.headers['user-agent']).toBe('Service-Webhook/1.0');
    expect(independentCheck(received[0]!, secret)).toBe(true);
    // the worker's outcome is written back to the outbox row (the 30-day delivery log)
    await until(async () => (await store.delivery(out.event_id, subscription.id))?.status === 'delivered');
    expect(await store.delivery(out.event_id, subscription.id)).toMatchObject({ attempts: 1, last_status: 200 });
    // a try that ends between the reads of the job and of its state (seen under load): the job, read before the try
    // ended, says none was made; its state, read after, says delivered. The state reported is one of the two reads.
    const bull = (svc.queue as unknown as { queue: { getJob(id: string): Promise<object | undefined> } }).queue;
    const getJob = bull.getJob.bind(bull);
    let reads = 0;
    bull.getJob = async (id) => {
      const job = (await getJob(id)) as { attemptsMade: number } | undefined;
      return reads++ === 0 && job ? Object.assign(Object.create(Object.getPrototypeOf(job)), job, { attemptsMade: 0 }) : job;
    };
    try {
      expect(await svc.queue!.state(out.event_id, subscription.id)).toMatchObject({ status: 'delivered', attempts: 1, last_status: 200 });
    } finally {
      bull.getJob = getJob;
    }
  });

  it('delivers published events once each, even when the relay hands the same rows off twice (a crash before marking)', async () => {
    const [sub] = await svc.list('u1');
    received.length = 0;
    const events: string[] = [];
    for (let i = 0; i < 20; i++) events.push((await svc.publish('trader.fill', { trader_proxy: '0x' + '12'.repeat(20), size_usdc: 100 + i, tx_hash: `0x${i}` })).event_id);
    await until(() => received.length >= 20);
    // replay the hand-off of the same deliveries, as a relay restarted after a crash would
    const rows = await Promise.all(events.map(async (e) => (await store.delivery(e, sub!.id))!));
    expect(rows.every((r) => r.status === 'queued' || r.status === 'delivered')).toBe(true);
    await svc.queue!.add(rows.map((r) => ({ event_id: r.event_id, subscription_id: r.subscription_id, type: r.type, body: r.body, prior_attempts: 0 })), 7);
    await new Promise((r) => setTimeout(r, 500));
    expect(received.map((r) => r.headers['x-service-event-id']).sort()).toEqual([...events].sort());
    await until(async () => (await Promise.all(events.map((e) => store.delivery(e, sub!.id)))).every((d) => d?.status === 'delivered'));
  });

  it('drops jobs of a deleted subscription instead of sending them', async () => {
    const [sub] = await svc.list('u1');
    expect(await svc.remove('u1', sub!.id)).toBe(true);
    expect(await svc.remove('u1', sub!.id)).toBe(false);
    await until(async () => (await redis.hexists(svc.queue!.targetsKey, sub!.id)) === 0);
    received.length = 0;
    await svc.queue!.add([{ event_id: 'evt_late', subscription_id: sub!.id, type: 'trader.fill', body: '{}', prior_attempts: 0 }], 7);
    await until(async () => (await svc.queue!.state('evt_late', sub!.id))?.status === 'dropped');
    expect(received).toHaveLength(0);
  });

  it('retries (never drops) a delivery whose subscription the mirror lost while running, and repairs the mirror', async () => {
    const lossPrefix = newPrefix();
    const lossStore = await storeOn(`${lossPrefix}.sqlite`);
    // first retry after 100 ms (the mirror is still missing then), the second after 5 s (the check every 2.5 s has
    // repaired it by then)
    const lossy = await WebhookService.open({ store: lossStore, planOf: () => 'pro', allowlist: [`127.0.0.1:${port}`], ca, redis: { connection: redis, prefix: lossPrefix, retryDelaysMs: [100, 5000, 5000, 5000, 5000, 5000], mirrorCheckMs: 2500 } });
    await lossy.start();
    const { subscription } = await lossy.create('u1', 'pro', { target_url: target(), event_types: ['trader.fill'] });
    await redis.del(lossy.queue!.targetsKey); // Redis lost it, no write of ours failed
    received.length = 0;
    const { event_id } = await lossy.publish('trader.fill', { trader_proxy: '0x' + '12'.repeat(20), size_usdc: 1, tx_hash: '0xloss' });
    await until(async () => (await lossStore.delivery(event_id, subscription.id))?.status === 'delivered', 15_000);
    expect((await lossStore.delivery(event_id, subscription.id))!.attempts).toBeGreaterThanOrEqual(2);
    expect(received.map((r) => r.headers['x-service-event-id'])).toEqual([event_id]);
    expect(await redis.hexists(lossy.queue!.targetsKey, subscription.id)).toBe(1);
    await lossy.stop();
    await lossStore.close();
  }, 30_000);

  it('answers 503 while Redis is unreachable, keeps events in the outbox, and stops promptly', async () => {
    const downStore = await storeOn('down.sqlite');
    const down = new Redis('redis://127.0.0.1:1', { enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: 500, lazyConnect: true, retryStrategy: () => 200 });
    down.connect().catch(() => {});
    const svcDown = await WebhookService.open({ store: downStore, planOf: () => 'pro', allowlist: [`127.0.0.1:${port}`], ca, redis: { connection: down, prefix: newPrefix() } });
    const t0 = Date.now();
    await svcDown.start(); // logged, not fatal
    await expect(svcDown.create('u1', 'pro', { target_url: target(), event_types: ['trader.fill'] })).rejects.toMatchObject({ status: 503, code: 'queue_unavailable' });
    expect(await downStore.countFor('u1')).toBe(0);
    // a subscription made earlier still gets its events into the outbox, where they wait
    const sub = await downStore.create({ user_id: 'u1', target_url: target(), event_types: ['trader.fill'], filter_json: {}, active: true, secret: 'whsec_down' }, Date.now());
    const svcDown2 = await WebhookService.open({ store: downStore, planOf: () => 'pro', allowlist: [`127.0.0.1:${port}`], ca, redis: { connection: down, prefix: newPrefix() } });
    await svcDown2.start();
    const { event_id, enqueued } = await svcDown2.publish('trader.fill', { trader_proxy: '0x' + '12'.repeat(20), size_usdc: 1 });
    expect(enqueued).toBe(1);
    await expect(svcDown2.test('u1', sub.id)).rejects.toMatchObject({ status: 503 });
    await new Promise((r) => setTimeout(r, 300));
    expect((await downStore.delivery(event_id, sub.id))?.status).toBe('pending');
    await svcDown.stop();
    await svcDown2.stop();
    expect(Date.now() - t0).toBeLessThan(10_000);
    down.disconnect();
    await downStore.close();
  }, 30_000);

  it('repairs the target mirror when it was lost', async () => {
    const { subscription, secret } = await svc.create('u1', 'pro', { target_url: target(), event_types: ['service.test'] });
    await redis.del(svc.queue!.targetsKey);
    await svc.stop();
    svc = await WebhookService.open({ store, planOf: () => 'pro', allowlist: [`127.0.0.1:${port}`], ca, redis: { connection: redis, prefix } });
    await svc.start();
    expect(JSON.parse((await redis.hget(svc.queue!.targetsKey, subscription.id))!)).toMatchObject({ target_url: target(), secret });
  });

  it('signs with the new and the old secret during a rotation, and shows queue records in the delivery log', async () => {
    const { subscription, secret: oldSecret } = await svc.create('u1', 'pro', { target_url: target(), event_types: ['service.test'] });
    const rotated = await svc.rotateSecret('u1', subscription.id, 3600);
    expect(rotated.secret).not.toBe(oldSecret);
    received.length = 0;
    rx.answer = () => 500;
    const failedTest = await svc.test('u1', subscription.id);
    expect(failedTest).toMatchObject({ delivered: false, http_status: 500, attempts: 1 });
    expect(Date.parse(failedTest.next_attempt_at!) - Date.now()).toBeGreaterThan(3_000); // the 5 s retry, from Redis
    rx.answer = () => 200;
    const header = received[0]!.headers['x-service-signature']!;
    expect(header.match(/v1=/g)).toHaveLength(2);
    expect(independentCheck({ ...received[0]!, headers: { 'x-service-signature': header.replace(/,v1=[0-9a-f]+$/, '') } }, rotated.secret)).toBe(true);
    expect(independentCheck({ ...received[0]!, headers: { 'x-service-signature': header.replace(/,v1=[0-9a-f]+/, '') } }, oldSecret)).toBe(true);
    const log = await svc.deliveries('u1', subscription.id, { limit: 10 });
    expect(log.rows).toHaveLength(1);
    expect(log.rows[0]).toMatchObject({ event_id: failedTest.event_id, status: 'pending', attempts: 1, http_status: 500, next_attempt_at: failedTest.next_attempt_at });
    expect(log.next_cursor).toBeNull();
    await svc.rotateSecret('u1', subscription.id, 0);
    received.length = 0;
    const ok = await svc.test('u1', subscription.id);
    expect(ok.delivered).toBe(true);
    expect(received.map((r) => r.headers['x-service-signature']!.match(/v1=/g)?.length)).toContain(1);
    // status filters: a settled row by its written-back status, an in-flight (queued) one by the queue's record
    await until(async () => (await store.delivery(ok.event_id, subscription.id))?.status === 'delivered');
    const byStatus = async (status: 'pending' | 'delivered' | 'exhausted') => (await svc.deliveries('u1', subscription.id, { limit: 10, status })).rows.map((r) => r.event_id);
    expect(await byStatus('delivered')).toEqual([ok.event_id]);
    expect(await byStatus('pending')).toEqual([failedTest.event_id]);
    expect(await byStatus('exhausted')).toEqual([]);
  });
});

describe('several workers', () => {
  it('share thousands of events while one is killed mid-run and the receiver fails 30% of the time; none is lost', async () => {
    const { prefix, store, queue, sub } = await queueFixture('u_crash', 'trader.fill', 'whsec_crash');
    const N = 2000;
    const ids = Array.from({ length: N }, (_, i) => `evt_many_${i}`);
    for (const id of ids) await store.enqueue({ id, type: 'trader.fill', body: JSON.stringify({ type: 'trader.fill', data: { id } }) }, [{ id: sub.id, user_id: 'u_crash' }], () => 1e9, Date.now());
    expect(await new OutboxRelay({ store, queue }).runDue()).toBe(N);
    expect(await store.counts()).toMatchObject({ pending: 0, queued: N });

    let seed = 7;
    const rnd = () => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32;
    received.length = 0;
    rx.answer = () => (rnd() < 0.3 ? 503 : 200);
    const caFile = join(dir, 'ca.pem');
    await writeFile(caFile, ca);
    // the 24 h schedule divided by 36,000: the last retry comes 2.4 s after the sixth failure
    const env = { ...process.env, WEBHOOK_PREFIX: prefix, WEBHOOK_ALLOW: `127.0.0.1:${port}`, WEBHOOK_CA: caFile, WEBHOOK_SPEEDUP: '36000' };
    const tries = new Map<ChildProcess, number>();
    const startWorker = async (): Promise<ChildProcess> => {
      const child = spawn(process.execPath, ['--import', 'tsx', join('test', 'helpers', 'webhook-redis-worker-child.ts')], { env, stdio: ['ignore', 'pipe', 'inherit'] });
      tries.set(child, 0);
      let buf = '';
      await new Promise<void>((ready) =>
        child.stdout!.on('data', (c: Buffer) => {
          buf += c.toString();
          const lines = buf.split('\n');
          buf = lines.pop()!;
          for (const l of lines) {
            if (l === 'ready') ready();
            else tries.set(child, tries.get(child)! + 1);
          }
        }),
      );
      return child;
    };
    const [a, b] = await Promise.all([startWorker(), startWorker()]);
    await until(() => received.length >= N / 3, 60_000);
    a.kill('SIGKILL'); // mid-run: jobs in flight and locked
    await new Promise((r) => a.once('exit', r));
    const c = await startWorker();
    await until(async () => {
      const k = await queue.counts();
      return k.waiting + k.active + k.delayed === 0;
    }, 120_000);
    for (const w of [b, c]) w.kill('SIGTERM');
    await Promise.all([b, c].map((w) => new Promise((r) => w.once('exit', r))));
    rx.answer = () => 200;
    const counts = await queue.counts();
    // every final outcome reaches its outbox row: nothing stays queued
    await drainOutcomes(prefix, store);
    const rowCounts = await store.counts();
    await queue.close();
    await store.close();
    expect(rowCounts).toMatchObject({ queued: 0, pending: 0, delivered: counts.completed, exhausted: counts.failed });

    expect(counts.completed + counts.failed).toBe(N);
    // all seven tries refused: expected for N x 0.3^7 ≈ 0.4 events
    expect(counts.failed).toBeLessThanOrEqual(3);
    const ok = new Set(received.filter((r) => r.status === 200).map((r) => r.headers['x-service-event-id']));
    const byEvent = new Map<string, number>();
    for (const r of received) byEvent.set(r.headers['x-service-event-id']!, (byEvent.get(r.headers['x-service-event-id']!) ?? 0) + 1);
    const notDelivered = ids.filter((id) => !ok.has(id));
    expect(notDelivered).toHaveLength(counts.failed);
    for (const id of notDelivered) expect(byEvent.get(id), id).toBeGreaterThanOrEqual(7);
    for (const r of received) expect(ids).toContain(r.headers['x-service-event-id']);
    // both first workers took part (the killed one included); the third may find the work already done
    expect(tries.get(a), 'tries by the killed worker').toBeGreaterThan(0);
    expect(tries.get(b), 'tries by the surviving worker').toBeGreaterThan(0);
    expect(received.length).toBeGreaterThan(N);
  }, 180_000);
});
