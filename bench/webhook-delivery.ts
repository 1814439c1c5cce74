/**
 * Benchmark: webhook producers and delivery end to end on this machine.
 *  1. event → enqueue: 100,000 subscriptions, trader.fill events published at 10x the live rate (680/s) for
 *     `--seconds`; per event: index match + the outbox transaction (SQLite, one row per matching subscription).
 *  2. delivery: `--deliveries` pending deliveries drained by one worker (16 in flight) to an HTTPS receiver on
 *     loopback (signed, SSRF-checked, pinned to the checked address), twice: with a new TCP+TLS connection per
 *     delivery (pinnedPost `pool: false`), and with keep-alive connection reuse (the default shared pool). The
 *     service's sender is replaced by the same pinnedPost call with the pool option chosen per run.
 *   npm run bench:webhook-delivery -- [--subs 100000] [--seconds 10] [--deliveries 3000]
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { SqliteDb } from '../data/sql/db.ts';
import { WebhookStore } from '../data/webhook-store.ts';
import { WebhookService } from '../jobs/webhooks/service.ts';
import { closeDefaultDeliveryPool, pinnedPost } from '../jobs/webhooks/ssrf.ts';
import { selfSignedCert } from '../test/helpers/tls.ts';

const { values } = parseArgs({ options: { subs: { type: 'string' }, seconds: { type: 'string' }, deliveries: { type: 'string' } } });
const SUBS = Number(values.subs ?? 100_000);
const SECONDS = Number(values.seconds ?? 10);
const DELIVERIES = Number(values.deliveries ?? 3000);
const RATE = 680;

let seed = 7;
const rnd = () => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32;
const hex = (n: number, width: number) => n.toString(16).padStart(width, '0');
const wallet = (i: number) => `0x${hex(i, 40)}`;
const market = (i: number) => `0x${hex(i, 64)}`;

const dir = await mkdtemp(join(tmpdir(), 'bench-webhooks-'));
const cert = await selfSignedCert();
let hits = 0;
let handshakes = 0;
const receiver = createServer({ key: cert.key, cert: cert.cert }, (req, res) => {
  req.resume();
  req.on('end', () => {
    hits++;
    res.end('ok');
  });
});
receiver.on('secureConnection', () => handshakes++);
await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
const port = (receiver.address() as AddressInfo).port;
const target = `https://127.0.0.1:${port}/hook`;

// synchronous = NORMAL: the bench writes 100,000 subscriptions one by one; what it measures is after that
const serviceDb = await SqliteDb.open(join(dir, 'service.sqlite'), { synchronous: 'NORMAL' });
const store = await WebhookStore.open(serviceDb);
const t0 = performance.now();
{
  for (let i = 0; i < SUBS; i++) {
    const r = rnd();
    // 80% follow one trader (skewed toward the active ones), 19% a market, 1% a whale-size floor ($5k-$250k)
    const filter =
      r < 0.80
        ? { trader_proxy: wallet(Math.floor(100_000 * rnd() ** 1.5)) }
        : r < 0.99
          ? { condition_id: market(Math.floor(3500 * rnd() ** 1.5)) }
          : { min_size_usdc: Math.round(5000 * Math.exp(rnd() * Math.log(50))) };
    await store.create({ user_id: `u${i % 5000}`, target_url: target, event_types: ['trader.fill'], filter_json: filter, active: true, secret: 'whsec_bench' }, Date.now());
  }
}
// the delivery path of the service (WebhookService -> DeliveryWorker -> pinnedPost), with the connection pool chosen
// per run: false = a new TLS connection per delivery, undefined = the shared keep-alive pool (the default)
let reuse = false;
const allowlist = [`127.0.0.1:${port}`];
const svc = await WebhookService.open({
  store,
  planOf: () => 'desk',
  allowlist,
  ca: cert.cert,
  send: (url, body, headers) =>
    pinnedPost(url, body, headers, { allowlist, ca: cert.cert, pool: reuse ? undefined : false }).then((r) => ({ ok: r.ok, status: r.status || null, error: r.error })),
});
console.log(`${SUBS.toLocaleString()} subscriptions stored and indexed in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

// 1. event → enqueue at 680/s
const lat: number[] = [];
let enqueued = 0;
const start = performance.now();
const total = RATE * SECONDS;
for (let i = 0; i < total; i++) {
  const due = start + (i * 1000) / RATE;
  const wait = due - performance.now();
  if (wait > 1) await new Promise((r) => setTimeout(r, wait));
  // fill sizes: median ~$60, a long tail past $10k (the live tail's shape)
  const data = { trader_proxy: wallet(Math.floor(100_000 * rnd() ** 1.5)), condition_id: market(Math.floor(3500 * rnd() ** 1.5)), size_usdc: Math.round(5 * Math.exp(rnd() * 8)), price: 0.5, token_id: '1', taker_side: 'buy', exchange_version: '2', exchange_kind: 'ctf', tx_hash: `0x${hex(i, 64)}`, log_index: '0' };
  const a = performance.now();
  enqueued += (await svc.publish('trader.fill', data)).enqueued;
  lat.push(performance.now() - a);
}
const pct = (xs: number[], p: number) => [...xs].sort((x, y) => x - y)[Math.min(xs.length - 1, Math.floor(p * xs.length))]!;
const wall = (performance.now() - start) / 1000;
console.log(`event → enqueue: ${total.toLocaleString()} trader.fill events at ${RATE}/s over ${wall.toFixed(1)} s; ${enqueued.toLocaleString()} deliveries enqueued (${(enqueued / total).toFixed(2)} per event)`);
console.log(`  latency per event (match + outbox transaction): p50 ${pct(lat, 0.5).toFixed(3)} ms, p99 ${pct(lat, 0.99).toFixed(3)} ms, max ${Math.max(...lat).toFixed(1)} ms`);

// 2. delivery throughput, without and with connection reuse
await store.db.run(`UPDATE webhook_deliveries SET status = 'dropped' WHERE status = 'pending'`);
const one = await store.create({ user_id: 'u_bench', target_url: target, event_types: ['trader.fill'], filter_json: {}, active: true, secret: 'whsec_bench' }, Date.now());
for (const mode of ['new', 'reuse'] as const) {
  reuse = mode === 'reuse';
  for (let i = 0; i < DELIVERIES; i++)
    await store.enqueue({ id: `evt_d_${mode}_${i}`, type: 'trader.fill', body: JSON.stringify({ type: 'trader.fill', emitted_at: new Date().toISOString(), data: { i } }) }, [{ id: one.id, user_id: 'u_bench' }], () => 1e9, Date.now());
  hits = 0;
  handshakes = 0;
  const d0 = performance.now();
  await svc.worker.runDue();
  const secs = (performance.now() - d0) / 1000;
  const how = reuse ? `keep-alive connection reuse, default pool: ${handshakes} TLS connections` : `pool: false, a new TLS connection each: ${handshakes} TLS connections`;
  console.log(`delivery: ${hits.toLocaleString()} of ${DELIVERIES.toLocaleString()} signed deliveries to a loopback HTTPS receiver in ${secs.toFixed(1)} s = ${(hits / secs).toFixed(0)}/s (16 in flight; ${how})`);
}

closeDefaultDeliveryPool();
await store.close();
await serviceDb.close();
await new Promise((r) => receiver.close(r));
await rm(dir, { recursive: true, force: true });
