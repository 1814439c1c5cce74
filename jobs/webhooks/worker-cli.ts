/**
 * `npm run webhooks:worker`: a webhook delivery worker on its own, for any process or machine that reaches the
 * service's Redis. It needs nothing else: jobs carry the signed body's content and the targets and secrets are
 * mirrored in Redis by the service (jobs/webhooks/redis-queue.ts). Stops cleanly on SIGINT/SIGTERM (a job in flight
 * finishes; a killed worker's jobs return to the queue when their lock expires).
 *
 *   REDIS_URL=redis://10.0.0.5:6379 npm run webhooks:worker
 */
import { Redis } from 'ioredis';
import { z } from 'zod';
import { DEFAULT_PREFIX, startRedisWorker } from './redis-queue.ts';
import { pinnedPost } from './ssrf.ts';

const Env = z.object({
  REDIS_URL: z.string().regex(/^rediss?:\/\//, 'a redis:// or rediss:// URL'),
  WEBHOOK_QUEUE_PREFIX: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/).default(DEFAULT_PREFIX),
  WEBHOOK_CONCURRENCY: z.coerce.number().int().min(1).max(1000).default(16),
});
const parsed = Env.safeParse(process.env);
if (!parsed.success) {
  console.error(`configuration error: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  process.exit(2);
}
const env = parsed.data;
const connection = new Redis(env.REDIS_URL, { maxRetriesPerRequest: null });
let delivered = 0;
let failed = 0;
const worker = startRedisWorker({
  connection,
  prefix: env.WEBHOOK_QUEUE_PREFIX,
  concurrency: env.WEBHOOK_CONCURRENCY,
  send: (url, body, headers) => pinnedPost(url, body, headers).then((r) => ({ ok: r.ok, status: r.status || null, error: r.error })),
  onAttempt: (_job, ok) => (ok ? delivered++ : failed++),
});
worker.on('error', (e) => console.error(`webhooks worker: ${e.message}`));
await worker.waitUntilReady();
console.log(`webhooks worker: delivering from ${env.REDIS_URL.replace(/\/\/[^@]*@/, '//***@')} (prefix ${env.WEBHOOK_QUEUE_PREFIX}, ${env.WEBHOOK_CONCURRENCY} in flight)`);
const stats = setInterval(() => console.log(`  ${delivered} delivered, ${failed} failed tries`), 60_000);
stats.unref();
const stop = async () => {
  clearInterval(stats);
  await worker.close();
  connection.disconnect();
  process.exit(0);
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
