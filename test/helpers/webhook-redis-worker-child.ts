/**
 * A Redis (BullMQ) delivery worker in its own process, for the several-workers crash test: it takes jobs from the
 * queue under WEBHOOK_PREFIX and sends to the loopback receiver (WEBHOOK_ALLOW = host:port, WEBHOOK_CA = PEM file).
 * The retry delays are the production schedule divided by WEBHOOK_SPEEDUP (BullMQ delays run on the real clock), and
 * the lock is short so a killed worker's jobs come back quickly. It prints `ready`, then one line per try
 * (`<ok|fail> <event id>`), so the test can tell which worker did what.
 */
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { startRedisWorker } from '../../jobs/webhooks/redis-queue.ts';
import { pinnedPost } from '../../jobs/webhooks/ssrf.ts';
import { RETRY_DELAYS_MS } from '../../jobs/webhooks/worker.ts';

const speed = Number(process.env.WEBHOOK_SPEEDUP ?? 1);
const ca = readFileSync(process.env.WEBHOOK_CA!, 'utf8');
const connection = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: null });
const worker = startRedisWorker({
  connection,
  prefix: process.env.WEBHOOK_PREFIX!,
  concurrency: 16,
  retryDelaysMs: RETRY_DELAYS_MS.map((d) => Math.max(1, Math.round(d / speed))),
  lockDurationMs: 1000,
  stalledIntervalMs: 500,
  send: (url, body, headers) => pinnedPost(url, body, headers, { allowlist: [process.env.WEBHOOK_ALLOW!], ca, timeoutMs: 5_000 }).then((r) => ({ ok: r.ok, status: r.status || null, error: r.error })),
  onAttempt: (job, ok) => process.stdout.write(`${ok ? 'ok' : 'fail'} ${job.event_id}\n`),
});
await worker.waitUntilReady();
process.stdout.write('ready\n');
process.on('SIGTERM', async () => {
  await worker.close();
  connection.disconnect();
  process.exit(0);
});
