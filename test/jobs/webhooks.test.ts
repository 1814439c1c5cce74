/**
 * Webhooks end to end with a real HTTPS receiver on loopback (self-signed certificate, reached through the test
 * allowlist): management routes and plan gating, SSRF refusals at creation, signed deliveries checked with an
 * independent HMAC, filters, the retry schedule under an injected clock, and at-least-once delivery of thousands
 * of events to a receiver that fails 30% of the time while the worker process is killed mid-run.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { PLANS } from '../../core/plans.ts';
import { duckRunner } from '../../data/runner.ts';
import { openServiceDb, type SqlDb } from '../../data/sql/db.ts';
import { WebhookStore } from '../../data/webhook-store.ts';
import { verifySignature } from '../../jobs/webhooks/signing.ts';
import { WebhookService } from '../../jobs/webhooks/service.ts';
import { RETRY_DELAYS_MS } from '../../jobs/webhooks/worker.ts';
import { startApp, type TestApp } from '../helpers/app.ts';
import { closeMemoryVenue, openMemoryVenue } from '../helpers/memory-venue.ts';
import { startHttpsReceiver, type HttpsReceiver, type ReceivedRequest } from '../helpers/https-receiver.ts';

type Received = ReceivedRequest;

let instance: DuckDBInstance;
let conn: DuckDBConnection;
let rx: HttpsReceiver;
let port: number;
let ca: string;
let received: Received[];
let clock = new Date('2026-11-01T00:00:00Z');
let dir: string;
/** this file's own service database (one connection for every store on it in this process) */
let serviceDb: SqlDb;
let store: WebhookStore;
let svc: WebhookService;
let t: TestApp;
let proKey: string;
let proUser: string;
let freeKey: string;

beforeAll(async () => {
  rx = await startHttpsReceiver();
  ({ received, port, ca } = rx);
  ({ instance, conn } = await openMemoryVenue());
  dir = await mkdtemp(join(tmpdir(), 'webhooks-'));
  serviceDb = await openServiceDb(join(dir, 'webhooks.sqlite'));
  store = await WebhookStore.open(serviceDb);
  const plans = new Map<string, 'free' | 'pro'>();
  svc = await WebhookService.open({ store, planOf: (u) => plans.get(u) ?? null, now: () => clock, allowlist: [`127.0.0.1:${port}`], ca });
  t = await startApp(duckRunner(conn), { now: () => clock, webhooks: svc });
  const pro = await t.keyFor('pro');
  const free = await t.keyFor('free');
  proKey = pro.key;
  proUser = pro.userId;
  freeKey = free.key;
  plans.set(pro.userId, 'pro');
  plans.set(free.userId, 'free');
}, 60_000);

afterAll(async () => {
  await svc?.worker.stop();
  await t?.close();
  await store?.close();
  await serviceDb?.close();
  await rx?.close();
  closeMemoryVenue(conn, instance);
  if (dir) await rm(dir, { recursive: true, force: true });
});

const api = (method: string, path: string, key: string, body?: unknown) =>
  fetch(`${t.base}${path}`, { method, headers: { authorization: `Bearer ${key}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
const target = () => `https://127.0.0.1:${port}/hooks`;
const SubFields = ['active', 'created_at', 'event_types', 'filter_json', 'id', 'target_url'];

/** The signature, recomputed from scratch: HMAC-SHA256 keyed by the secret over "<t>.<raw body>". */
function independentCheck(r: Received, secret: string): boolean {
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(r.headers['x-service-signature'] ?? '');
  if (!m) return false;
  return createHmac('sha256', secret).update(`${m[1]}.${r.body}`).digest('hex') === m[2];
}

describe('subscriptions', () => {
  let secret: string;
  let id: string;

  it('refuses Free (0 events a month) with plan_required; creates on Pro and shows the secret once', async () => {
    const free = await api('POST', '/v1/webhooks', freeKey, { target_url: target(), event_types: ['service.test'] });
    expect(free.status).toBe(403);
    expect(((await free.json()) as { error: string }).error).toBe('plan_required');
    const res = await api('POST', '/v1/webhooks', proKey, { target_url: target(), event_types: ['service.test', 'trader.fill'], filter_json: { trader_proxy: '0x' + 'ab'.repeat(20) } });
    expect(res.status).toBe(201);
    const body = (await res.json()) as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual([...SubFields, 'secret'].sort());
    secret = String(body.secret);
    id = String(body.id);
    const list = (await (await api('GET', '/v1/webhooks', proKey)).json()) as { rows: Record<string, unknown>[] };
    expect(list.rows.map((r) => Object.keys(r).sort())).toEqual([SubFields]);
    expect(JSON.stringify(list)).not.toContain(secret);
  });

  it('refuses targets that are not public https, at creation and update', async () => {
    for (const url of ['http://example.com/h', 'https://localhost/h', 'https://127.0.0.1/h', 'https://169.254.169.254/latest', 'https://[::ffff:127.0.0.1]/h', 'https://10.0.0.1/h', 'https://0x7f000001/h', 'https://user:pw@example.com/h']) {
      const res = await api('POST', '/v1/webhooks', proKey, { target_url: url, event_types: ['service.test'] });
      expect(res.status, url).toBe(400);
    }
    const upd = await api('PUT', `/v1/webhooks/${id}`, proKey, { target_url: 'https://192.168.1.1/h' });
    expect(upd.status).toBe(400);
  });

  it('sends a signed service.test on request; the signature verifies independently and with the receiver helper', async () => {
    received.length = 0;
    const res = await api('POST', `/v1/webhooks/${id}/test`, proKey);
    const out = (await res.json()) as { delivered: boolean; event_id: string; http_status: number; attempts: number };
    expect(out).toMatchObject({ delivered: true, http_status: 200, attempts: 1 });
    expect(received).toHaveLength(1);
    const r = received[0]!;
    expect(r.headers['x-service-event-id']).toBe(out.event_id);
    expect(r.headers['x-service-event-type']).toBe('service.test');
    expect(r.headers['user-agent']).toBe('Service-Webhook/1.0');
    const env = JSON.parse(r.body) as { type: string; emitted_at: string; data: Record<string, unknown> };
    expect(Object.keys(env).sort()).toEqual(['data', 'emitted_at', 'type']);
    expect(env.type).toBe('service.test');
    expect(new Date(env.emitted_at).toISOString()).toBe(env.emitted_at);
    expect(independentCheck(r, secret)).toBe(true);
    expect(independentCheck(r, secret + 'x')).toBe(false);
    expect(verifySignature({ header: r.headers['x-service-signature'], rawBody: r.body, secret, nowSeconds: Math.floor(clock.getTime() / 1000) })).toMatchObject({ ok: true });
  });

  it('updates, filters per subscription, and deletes', async () => {
    const upd = (await (await api('PUT', `/v1/webhooks/${id}`, proKey, { filter_json: { min_size_usdc: 1000 }, active: true })).json()) as Record<string, unknown>;
    expect(upd.filter_json).toEqual({ min_size_usdc: 1000 });
    received.length = 0;
    await svc.publish('trader.fill', { trader_proxy: '0x' + '12'.repeat(20), size_usdc: 999.99, price: 0.5, token_id: '1', taker_side: 'buy', exchange_version: '2', exchange_kind: 'ctf', tx_hash: '0x1', log_index: '0' });
    await svc.publish('trader.fill', { trader_proxy: '0x' + '12'.repeat(20), size_usdc: 1000, price: 0.5, token_id: '1', taker_side: 'buy', exchange_version: '2', exchange_kind: 'ctf', tx_hash: '0x2', log_index: '0' });
    expect(await svc.publish('market.resolved', { condition_id: '0x' + '0'.repeat(64) })).toMatchObject({ enqueued: 0 }); // not subscribed
    await svc.worker.runDue();
    expect(received.map((r) => (JSON.parse(r.body) as { data: { tx_hash: string } }).data.tx_hash)).toEqual(['0x2']);
    const inactive = await api('PUT', `/v1/webhooks/${id}`, proKey, { active: false });
    expect(inactive.status).toBe(200);
    received.length = 0;
    expect(await svc.publish('trader.fill', { trader_proxy: '0x' + '12'.repeat(20), size_usdc: 5000, tx_hash: '0x3' })).toMatchObject({ enqueued: 0 });
    await svc.worker.runDue();
    expect(received).toHaveLength(0);
    expect((await api('PUT', `/v1/webhooks/${id}`, proKey, {})).status).toBe(400);
    expect((await api('DELETE', `/v1/webhooks/${id}`, freeKey)).status).toBe(404);
    expect(await (await api('DELETE', `/v1/webhooks/${id}`, proKey)).json()).toEqual({ deleted: true, id });
    expect((await api('DELETE', `/v1/webhooks/${id}`, proKey)).status).toBe(404);
    expect((await api('POST', `/v1/webhooks/${id}/test`, proKey)).status).toBe(404);
  });
});

describe('secret rotation and the delivery log', () => {
  it('rotates the secret: both sign during the grace period, only the new one after it', async () => {
    const created = (await (await api('POST', '/v1/webhooks', proKey, { target_url: target(), event_types: ['service.test'] })).json()) as { id: string; secret: string };
    const res = await api('POST', `/v1/webhooks/${created.id}/rotate-secret`, proKey, { grace_seconds: 3600 });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const rotated = (await res.json()) as { id: string; secret: string; previous_secret_expires_at: string };
    expect(rotated.id).toBe(created.id);
    expect(rotated.secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    expect(rotated.secret).not.toBe(created.secret);
    expect(rotated.previous_secret_expires_at).toBe(new Date(clock.getTime() + 3600_000).toISOString());
    const now = () => Math.floor(clock.getTime() / 1000);
    received.length = 0;
    await api('POST', `/v1/webhooks/${created.id}/test`, proKey);
    const during = received[0]!;
    expect(during.headers['x-service-signature']!.match(/v1=/g)).toHaveLength(2);
    expect(verifySignature({ header: during.headers['x-service-signature'], rawBody: during.body, secret: rotated.secret, nowSeconds: now() })).toMatchObject({ ok: true });
    expect(verifySignature({ header: during.headers['x-service-signature'], rawBody: during.body, secret: created.secret, nowSeconds: now() })).toMatchObject({ ok: true });
    // one second past the grace period: the old secret no longer signs
    clock = new Date(clock.getTime() + 3601_000);
    received.length = 0;
    await api('POST', `/v1/webhooks/${created.id}/test`, proKey);
    const after = received[0]!;
    expect(after.headers['x-service-signature']!.match(/v1=/g)).toHaveLength(1);
    expect(verifySignature({ header: after.headers['x-service-signature'], rawBody: after.body, secret: rotated.secret, nowSeconds: now() })).toMatchObject({ ok: true });
    expect(verifySignature({ header: after.headers['x-service-signature'], rawBody: after.body, secret: created.secret, nowSeconds: now() })).toMatchObject({ ok: false, reason: 'signature_mismatch' });
    // no body: the default grace of 24 h; bad bodies and other users' ids are refused
    const dflt = (await (await api('POST', `/v1/webhooks/${created.id}/rotate-secret`, proKey)).json()) as { previous_secret_expires_at: string };
    expect(Date.parse(dflt.previous_secret_expires_at) - clock.getTime()).toBe(86_400_000);
    expect((await api('POST', `/v1/webhooks/${created.id}/rotate-secret`, proKey, { grace_seconds: 8 * 86_400 })).status).toBe(400);
    expect((await api('POST', `/v1/webhooks/${created.id}/rotate-secret`, proKey, { grace: 1 })).status).toBe(400);
    expect((await api('POST', `/v1/webhooks/${created.id}/rotate-secret`, freeKey)).status).toBe(404);
    await api('DELETE', `/v1/webhooks/${created.id}`, proKey);
  });

  it('opens a webhook file made before secret rotation existed (the columns are added once, the data kept)', async () => {
    const path = join(dir, 'old-schema.sqlite');
    const old = new Database(path);
    old.exec(`CREATE TABLE webhook_subscriptions (
      id TEXT PRIMARY KEY, user_id TEXT NOT NULL, target_url TEXT NOT NULL, event_types TEXT NOT NULL,
      filter_json TEXT NOT NULL, active INTEGER NOT NULL, secret TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL)`);
    old.prepare(`INSERT INTO webhook_subscriptions VALUES ('wh_aaaaaaaaaaaaaaaa', 'u_old', 'https://example.com/h', '["service.test"]', '{}', 1, 'whsec_old', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')`).run();
    old.close();
    // one connection for the file in this process; a second store opening it finds the migrations applied
    const oldDb = await openServiceDb(path);
    const a = await WebhookStore.open(oldDb);
    const b = await WebhookStore.open(oldDb);
    expect((await oldDb.all<{ name: string }>(`SELECT name FROM schema_migrations WHERE store = 'webhooks' ORDER BY name`)).map((r) => r.name)).toEqual(['0001-webhooks', '0002-secret-rotation']);
    expect(await a.target('wh_aaaaaaaaaaaaaaaa')).toEqual({ id: 'wh_aaaaaaaaaaaaaaaa', target_url: 'https://example.com/h', secret: 'whsec_old', previous_secret: null, previous_secret_until_ms: null });
    expect(await b.rotateSecret('wh_aaaaaaaaaaaaaaaa', 'u_old', 'whsec_new', 2000, 1000)).toBe(true);
    expect(await a.signingSecrets('wh_aaaaaaaaaaaaaaaa', 1999)).toEqual(['whsec_new', 'whsec_old']);
    expect(await a.signingSecrets('wh_aaaaaaaaaaaaaaaa', 2000)).toEqual(['whsec_new']);
    await a.close();
    await b.close();
    await oldDb.close();
  });

  it('lists deliveries newest first with cursors, a status filter and the last answer', async () => {
    const created = (await (await api('POST', '/v1/webhooks', proKey, { target_url: target(), event_types: ['market.resolved'] })).json()) as { id: string };
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      rx.answer = () => (i === 2 ? 503 : 200);
      ids.push((await svc.publish('market.resolved', { condition_id: `0x${i}` })).event_id);
      await svc.worker.runDue();
    }
    rx.answer = () => 200;
    type Page = { rows: { cursor: string; event_id: string; status: string; attempts: number; http_status: number | null; error: string | null; delivered_at: string | null; next_attempt_at: string | null }[]; next_cursor: string | null };
    const page1 = (await (await api('GET', `/v1/webhooks/${created.id}/deliveries?limit=2`, proKey)).json()) as Page;
    expect(page1.rows.map((r) => r.event_id)).toEqual([ids[4], ids[3]]);
    expect(page1.next_cursor).toBe(page1.rows[1]!.cursor);
    const page2 = (await (await api('GET', `/v1/webhooks/${created.id}/deliveries?limit=2&cursor=${page1.next_cursor}`, proKey)).json()) as Page;
    expect(page2.rows.map((r) => r.event_id)).toEqual([ids[2], ids[1]]);
    expect(page2.rows[0]).toMatchObject({ status: 'pending', attempts: 1, http_status: 503, error: 'http 503', delivered_at: null, next_attempt_at: new Date(clock.getTime() + 5000).toISOString() });
    expect(page2.rows[1]).toMatchObject({ status: 'delivered', attempts: 1, http_status: 200, error: null, next_attempt_at: null, delivered_at: clock.toISOString() });
    const page3 = (await (await api('GET', `/v1/webhooks/${created.id}/deliveries?limit=2&cursor=${page2.next_cursor}`, proKey)).json()) as Page;
    expect(page3.rows.map((r) => r.event_id)).toEqual([ids[0]]);
    expect(page3.next_cursor).toBeNull();
    const pending = (await (await api('GET', `/v1/webhooks/${created.id}/deliveries?status=pending`, proKey)).json()) as Page;
    expect(pending.rows.map((r) => r.event_id)).toEqual([ids[2]]);
    for (const bad of ['limit=0', 'limit=101', 'status=queued', 'cursor=ZZ', 'other=1'])
      expect((await api('GET', `/v1/webhooks/${created.id}/deliveries?${bad}`, proKey)).status, bad).toBe(400);
    expect((await api('GET', `/v1/webhooks/${created.id}/deliveries`, freeKey)).status).toBe(404);
    await api('DELETE', `/v1/webhooks/${created.id}`, proKey);
  });
});

describe('delivery', () => {
  it('retries a failing receiver after 5 s, 30 s, 5 min, 1 h, 6 h and 24 h, then gives up for good', async () => {
    const created = (await (await api('POST', '/v1/webhooks', proKey, { target_url: target(), event_types: ['market.resolved'] })).json()) as { id: string };
    received.length = 0;
    rx.answer = () => 500;
    const start = clock.getTime();
    const { event_id } = await svc.publish('market.resolved', { condition_id: '0x' + 'c'.repeat(64) });
    const tries: number[] = [];
    // step the clock one second at a time around each due moment: a try happens exactly when due, never before
    await svc.worker.runDue();
    tries.push(clock.getTime() - start);
    let offset = 0;
    for (const delay of RETRY_DELAYS_MS) {
      offset += delay;
      clock = new Date(start + offset - 1000);
      await svc.worker.runDue();
      expect(received.length, `no try before ${delay} ms`).toBe(tries.length);
      clock = new Date(start + offset);
      await svc.worker.runDue();
      tries.push(clock.getTime() - start);
    }
    expect(received).toHaveLength(7);
    expect(new Set(received.map((r) => r.headers['x-service-event-id']))).toEqual(new Set([event_id]));
    clock = new Date(clock.getTime() + 7 * 24 * 3600_000);
    await svc.worker.runDue();
    expect(received).toHaveLength(7);
    expect(await store.delivery(event_id, created.id)).toMatchObject({ status: 'exhausted', attempts: 7 });
    rx.answer = () => 200;
    await api('DELETE', `/v1/webhooks/${created.id}`, proKey);
  });

  it('counts deliveries against the monthly quota', async () => {
    const created = (await (await api('POST', '/v1/webhooks', proKey, { target_url: target(), event_types: ['signal.smart_money'] })).json()) as { id: string };
    const month = clock.toISOString().slice(0, 7);
    const used = await store.used(proUser, month);
    // fill the quota up to one event short, directly in the outbox
    await store.db.tx(async (tx) => {
      for (let i = used; i < PLANS.pro.webhook_events_per_month - 1; i++)
        await tx.run(`INSERT INTO webhook_deliveries (event_id, subscription_id, user_id, type, body, next_attempt_ms, status, created_ms, month) VALUES (?, ?, ?, 'x', '{}', 0, 'delivered', 0, ?)`, [`evt_fill_${i}`, created.id, proUser, month]);
    });
    await store.addUsage(proUser, month, PLANS.pro.webhook_events_per_month - 1 - used);
    expect(await store.used(proUser, month)).toBe(PLANS.pro.webhook_events_per_month - 1);
    expect((await svc.publish('signal.smart_money', { signal_type: 'large_buy', size_usdc: 6000 })).enqueued).toBe(1);
    expect(await svc.publish('signal.smart_money', { signal_type: 'large_buy', size_usdc: 6000 })).toMatchObject({ enqueued: 0, over_quota: 1 });
    await api('DELETE', `/v1/webhooks/${created.id}`, proKey);
    await store.db.run(`DELETE FROM webhook_deliveries WHERE event_id LIKE 'evt_fill_%'`);
    await store.addUsage(proUser, month, -(PLANS.pro.webhook_events_per_month - used));
  });

  it('loses no event across thousands while the receiver fails 30% of the time and the worker process is killed mid-run', async () => {
    const path = join(dir, 'crash.sqlite');
    // this process's one connection to the file (the worker processes open their own)
    const crashDb = await openServiceDb(path);
    const crashStore = await WebhookStore.open(crashDb);
    const sub = await crashStore.create({ user_id: 'u_crash', target_url: target(), event_types: ['trader.fill'], filter_json: {}, active: true, secret: 'whsec_test' }, clock.getTime());
    const N = 2000;
    const ids: string[] = [];
    for (let i = 0; i < N; i++) {
      const id = `evt_crash_${i}`;
      ids.push(id);
      await crashStore.enqueue({ id, type: 'trader.fill', body: JSON.stringify({ type: 'trader.fill', emitted_at: clock.toISOString(), data: { i } }) }, [{ id: sub.id, user_id: 'u_crash' }], () => 1e9, clock.getTime());
    }
    // a seeded 30% failure rate, decided per request
    let seed = 42;
    const rnd = () => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32;
    received.length = 0;
    rx.answer = () => (rnd() < 0.3 ? 503 : 200);
    const caFile = join(dir, 'ca.pem');
    await writeFile(caFile, ca);
    const env = {
      ...process.env,
      WEBHOOK_DB: path,
      WEBHOOK_ALLOW: `127.0.0.1:${port}`,
      WEBHOOK_CA: caFile,
      WEBHOOK_SPEEDUP: '3600',
      WEBHOOK_REAL_EPOCH_MS: String(Date.now()),
      WEBHOOK_VIRTUAL_EPOCH_MS: String(clock.getTime()),
    };
    const startWorker = async (): Promise<ChildProcess> => {
      const child = spawn(process.execPath, ['--import', 'tsx', join('test', 'helpers', 'webhook-worker-child.ts')], { env, stdio: ['ignore', 'pipe', 'inherit'] });
      await new Promise<void>((r) => child.stdout!.once('data', () => r()));
      return child;
    };
    const first = await startWorker();
    while (received.length < N / 3) await new Promise((r) => setTimeout(r, 20));
    first.kill('SIGKILL'); // mid-run: deliveries in flight, leases held
    await new Promise((r) => first.once('exit', r));
    const second = await startWorker();
    const delivered = () => new Set(received.filter((r) => r.status === 200).map((r) => r.headers['x-service-event-id']));
    const check = crashStore;
    const deadline = Date.now() + 120_000;
    while (Date.now() < deadline) {
      const c = await check.counts();
      if (c.pending === 0) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    second.kill('SIGKILL');
    await new Promise((r) => second.once('exit', r));
    const counts = await check.counts();
    await check.close();
    await crashDb.close();
    rx.answer = () => 200;
    // nothing is pending or unaccounted for: every event was delivered (a 2xx reached the receiver), or the receiver
    // refused all seven tries and the delivery is exhausted — at 30% i.i.d. failure that is expected for
    // N x 0.3^7 ≈ 0.4 of 2000 events, and each such event must show exactly seven refused tries
    expect(counts.pending).toBe(0);
    expect(counts.delivered + counts.exhausted).toBe(N);
    expect(counts.exhausted).toBeLessThanOrEqual(3);
    const seen = delivered();
    const byEvent = new Map<string, Received[]>();
    for (const r of received) byEvent.set(r.headers['x-service-event-id']!, [...(byEvent.get(r.headers['x-service-event-id']!) ?? []), r]);
    let exhausted = 0;
    for (const id of ids) {
      if (seen.has(id)) continue;
      exhausted++;
      const tries = byEvent.get(id) ?? [];
      expect(tries.length, id).toBeGreaterThanOrEqual(7);
      expect(tries.every((r) => r.status !== 200), id).toBe(true);
    }
    expect(exhausted).toBe(counts.exhausted);
    // duplicates only ever carry an event id of ours
    for (const r of received) expect(ids).toContain(r.headers['x-service-event-id']);
    expect(received.length).toBeGreaterThan(N); // failures and the crash caused retries
  }, 180_000);
});
