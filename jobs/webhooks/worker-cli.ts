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
import { devTargetsFromEnvOrExit } from './dev-targets.ts';
import { DeliveryAgentPool, pinnedPost } from './ssrf.ts';

const Env = z.object({
  REDIS_URL: z.string().regex(/^rediss?:\/\//, 'a redis:// or rediss:// URL'),
  WEBHOOK_QUEUE_PREFIX: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/).default(DEFAULT_PREFIX),
  WEBHOOK_CONCURRENCY: z.coerce.number().int().min(1).max(256).default(16),
  NODE_ENV: z.string().optional(),
  /** development only, as for npm start: receivers allowed past the SSRF guard, and their certificate */
  WEBHOOK_DEV_TARGETS: z.string().optional(),
  WEBHOOK_DEV_CA: z.string().optional(),
});
const parsed = Env.safeParse(process.env);
if (!parsed.success) {
  console.error(`configuration error: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  process.exit(2);
}
const env = parsed.data;
const devTargets = await devTargetsFromEnvOrExit(env);
if (devTargets) console.log(`webhooks worker: ${devTargets.describe}`);
const connection = new Redis(env.REDIS_URL, { maxRetriesPerRequest: null });
// as many sockets per receiver as sends in flight: a send never spends its 10 s deadline waiting for a socket
const pool = new DeliveryAgentPool({ maxSocketsPerOrigin: env.WEBHOOK_CONCURRENCY, maxTotalSockets: Math.max(256, env.WEBHOOK_CONCURRENCY) });
/** the URL without credentials (user:password@ or ?password=) for the log */
const redacted = (u: string) => u.replace(/\/\/[^@/]*@/, '//***@').replace(/([?&](?:password|pass|auth)=)[^&]*/gi, '$1***');
let delivered = 0;
let failed = 0;
const worker = startRedisWorker({
  connection,
  prefix: env.WEBHOOK_QUEUE_PREFIX,
  concurrency: env.WEBHOOK_CONCURRENCY,
  send: (url, body, headers) => pinnedPost(url, body, headers, { pool, ...(devTargets ? { allowlist: devTargets.allowlist, ca: devTargets.ca } : {}) }).then((r) => ({ ok: r.ok, status: r.status || null, error: r.error })),
  onAttempt: (_job, ok) => (ok ? delivered++ : failed++),
});
worker.on('error', (e) => console.error(`webhooks worker: ${e.message}`));
await worker.waitUntilReady();
console.log(`webhooks worker: delivering from ${redacted(env.REDIS_URL)} (prefix ${env.WEBHOOK_QUEUE_PREFIX}, ${env.WEBHOOK_CONCURRENCY} in flight)`);
const stats = setInterval(() => console.log(`  ${delivered} delivered, ${failed} failed tries`), 60_000);
stats.unref();
const stop = async () => {
  clearInterval(stats);
  await worker.close();
  pool.close();
  connection.disconnect();
  process.exit(0);
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
