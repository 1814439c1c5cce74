/**
 * Benchmark: webhook delivery through the Redis queue (BullMQ) on this machine, against the Redis at REDIS_URL
 * (default 127.0.0.1:6379) and an HTTPS receiver on loopback. Uses its own key prefix and deletes it afterwards.
 *  1. hand-off: `--deliveries` pending outbox rows moved into the queue by the relay (rows/s).
 *  2. drain: the same jobs delivered by a worker in this process, then by `--workers` worker processes
 *     (deliveries/s; signed, SSRF-checked, pinned sends).
 *  3. live: trader.fill events published at `--rate`/s for `--seconds` to one subscription that matches all, through
 *     outbox → relay → queue → worker → receiver; p50/p99 event-to-receiver latency.
 *   npm run bench:webhook-queue -- [--deliveries 5000] [--workers 2] [--rate 680] [--seconds 10]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { SqliteDb } from '../data/sql/db.ts';
import { WebhookStore } from '../data/webhook-store.ts';
import { OutboxRelay, RedisDeliveryQueue, startRedisWorker } from '../jobs/webhooks/redis-queue.ts';
import { WebhookService } from '../jobs/webhooks/service.ts';
import { pinnedPost } from '../jobs/webhooks/ssrf.ts';
import { selfSignedCert } from '../test/helpers/tls.ts';

const { values } = parseArgs({ options: { deliveries: { type: 'string' }, workers: { type: 'string' }, rate: { type: 'string' }, seconds: { type: 'string' } } });
const DELIVERIES = Number(values.deliveries ?? 5000);
const WORKERS = Number(values.workers ?? 2);
const RATE = Number(values.rate ?? 680);
const SECONDS = Number(values.seconds ?? 10);
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

const dir = await mkdtemp(join(tmpdir(), 'bench-webhook-queue-'));
const cert = await selfSignedCert();
let hits = 0;
const latencies: number[] = [];
const receiver = createServer({ key: cert.key, cert: cert.cert }, (req, res) => {
  let body = '';
  req.on('data', (c: Buffer) => (body += c.toString()));
  req.on('end', () => {
    hits++;
    const sent = /"sent_ms":(\d+(\.\d+)?)/.exec(body);
    if (sent) latencies.push(Date.now() - Number(sent[1]));
    res.end('ok');
  });
});
await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
const port = (receiver.address() as AddressInfo).port;
const target = `https://127.0.0.1:${port}/hook`;
const allowlist = [`127.0.0.1:${port}`];
const send = (url: string, body: string, headers: Record<string, string>) =>
  pinnedPost(url, body, headers, { allowlist, ca: cert.cert }).then((r) => ({ ok: r.ok, status: r.status || null, error: r.error }));

const prefix = `bench-${randomBytes(4).toString('hex')}`;
const redis = new Redis(redisUrl, { maxRetriesPerRequest: null });
// synchronous = NORMAL: the outbox is filled one enqueue (one transaction) at a time before each measurement
const serviceDb = await SqliteDb.open(join(dir, 'service.sqlite'), { synchronous: 'NORMAL' });
const store = await WebhookStore.open(serviceDb);
const queue = new RedisDeliveryQueue({ connection: redis, prefix });
const sub = await store.create({ user_id: 'u_bench', target_url: target, event_types: ['trader.fill'], filter_json: {}, active: true, secret: 'whsec_bench' }, Date.now());
await queue.syncTargets(await store.targets());
const relay = new OutboxRelay({ store, queue });

const fillOutbox = async (tag: string) => {
  for (let i = 0; i < DELIVERIES; i++)
    await store.enqueue({ id: `evt_${tag}_${i}`, type: 'trader.fill', body: JSON.stringify({ type: 'trader.fill', emitted_at: new Date().toISOString(), data: { i } }) }, [{ id: sub.id, user_id: 'u_bench' }], () => 1e9, Date.now());
};
const drained = async () => {
  for (;;) {
    const k = await queue.counts();
    if (k.waiting + k.active + k.delayed === 0) return;
    await new Promise((r) => setTimeout(r, 20));
  }
};

// 1. hand-off
await fillOutbox('a');
let t = performance.now();
const moved = await relay.runDue();
const handoff = (performance.now() - t) / 1000;
console.log(`hand-off: ${moved.toLocaleString()} outbox rows into the Redis queue in ${handoff.toFixed(2)} s = ${(moved / handoff).toFixed(0)} rows/s (batches of 500)`);

// 2a. drain with one in-process worker
hits = 0;
t = performance.now();
const local = startRedisWorker({ connection: redis, prefix, send, concurrency: 32 });
await drained();
let secs = (performance.now() - t) / 1000;
await local.close();
console.log(`drain, 1 worker in this process (concurrency 32, at most 16 sockets to one receiver): ${hits.toLocaleString()} deliveries in ${secs.toFixed(1)} s = ${(hits / secs).toFixed(0)}/s`);

// 2b. drain with worker processes
const caFile = join(dir, 'ca.pem');
await writeFile(caFile, cert.cert);
const env = { ...process.env, REDIS_URL: redisUrl, WEBHOOK_PREFIX: prefix, WEBHOOK_ALLOW: allowlist[0]!, WEBHOOK_CA: caFile, WEBHOOK_SPEEDUP: '1' };
const children: ChildProcess[] = [];
for (let i = 0; i < WORKERS; i++) {
  const child = spawn(process.execPath, ['--import', 'tsx', join('test', 'helpers', 'webhook-redis-worker-child.ts')], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((r) => child.stdout!.once('data', () => r()));
  child.stdout!.resume();
  children.push(child);
}
await fillOutbox('b');
hits = 0;
t = performance.now();
await relay.runDue(); // the workers start on the first batch while the rest is handed off
await drained();
secs = (performance.now() - t) / 1000;
console.log(`hand-off + drain, ${WORKERS} worker processes (16 in flight each): ${hits.toLocaleString()} deliveries in ${secs.toFixed(1)} s = ${(hits / secs).toFixed(0)}/s`);
for (const c of children) c.kill('SIGTERM');
await Promise.all(children.map((c) => new Promise((r) => c.once('exit', r))));

// 3. live: publish → receiver through the service in Redis mode
const svc = await WebhookService.open({ store, planOf: () => 'desk', allowlist, ca: cert.cert, redis: { connection: redis, prefix, concurrency: 32 } });
await svc.start();
hits = 0;
latencies.length = 0;
const total = RATE * SECONDS;
const start = performance.now();
for (let i = 0; i < total; i++) {
  const due = start + (i * 1000) / RATE;
  const wait = due - performance.now();
  if (wait > 1) await new Promise((r) => setTimeout(r, wait));
  await svc.publish('trader.fill', { trader_proxy: '0x' + '00'.repeat(20), size_usdc: 10, tx_hash: `0x${i}`, sent_ms: Date.now() });
}
await drained();
while (hits < total && performance.now() - start < (SECONDS + 30) * 1000) await new Promise((r) => setTimeout(r, 20));
const pct = (xs: number[], p: number) => [...xs].sort((x, y) => x - y)[Math.min(xs.length - 1, Math.floor(p * xs.length))]!;
console.log(
  `live: ${total.toLocaleString()} events at ${RATE}/s → ${hits.toLocaleString()} received; event → receiver p50 ${pct(latencies, 0.5)} ms, p99 ${pct(latencies, 0.99)} ms, max ${Math.max(...latencies)} ms`,
);
await svc.stop();

const keys = await redis.keys(`${prefix}:*`);
if (keys.length) await redis.del(...keys);
redis.disconnect();
await store.close();
await serviceDb.close();
await new Promise((r) => receiver.close(r));
await rm(dir, { recursive: true, force: true });
