/**
 * A delivery worker in its own process, for the crash test: it works the outbox in WEBHOOK_DB and sends to the
 * loopback receiver (WEBHOOK_ALLOW = host:port, WEBHOOK_CA = PEM file). Its clock runs WEBHOOK_SPEEDUP times
 * faster than real time from a shared epoch (WEBHOOK_REAL_EPOCH_MS, WEBHOOK_VIRTUAL_EPOCH_MS), so retries hours apart happen in seconds. The test kills it with
 * SIGKILL mid-run and starts another one on the same file.
 */
import { readFileSync } from 'node:fs';
import { WebhookStore } from '../../data/webhook-store.ts';
import { pinnedPost } from '../../jobs/webhooks/ssrf.ts';
import { DeliveryWorker } from '../../jobs/webhooks/worker.ts';

// every worker process shares one virtual clock: virtual = VIRTUAL_EPOCH + (real - REAL_EPOCH) x speed
const speed = Number(process.env.WEBHOOK_SPEEDUP ?? 1);
const realEpoch = Number(process.env.WEBHOOK_REAL_EPOCH_MS ?? Date.now());
const virtualEpoch = Number(process.env.WEBHOOK_VIRTUAL_EPOCH_MS ?? realEpoch);
const now = () => new Date(virtualEpoch + (Date.now() - realEpoch) * speed);
// its own process: its own connection to the file (SQLite's locking separates it from the test's)
const store = await WebhookStore.open(process.env.WEBHOOK_DB!);
const ca = readFileSync(process.env.WEBHOOK_CA!, 'utf8');
const worker = new DeliveryWorker({
  store,
  now,
  // 60 s of virtual time is ~17 ms here, shorter than many sends: leases run out mid-send and rows are claimed again
  // while an attempt is in flight, so the store's fencing of stale outcomes is exercised on every run
  leaseMs: 60_000,
  concurrency: 16,
  send: (url, body, headers) => pinnedPost(url, body, headers, { allowlist: [process.env.WEBHOOK_ALLOW!], ca, timeoutMs: 5_000 }).then((r) => ({ ok: r.ok, status: r.status || null, error: r.error })),
});
process.stdout.write('ready\n');
for (;;) {
  await worker.runDue();
  await new Promise((r) => setTimeout(r, 20));
}
