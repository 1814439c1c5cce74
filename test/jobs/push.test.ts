/**
 * Browser push end to end against a real HTTPS "push service" on loopback: a browser-like subscription (an ECDH
 * key pair made here), registered through the API and the SSRF guard; a test push arrives encrypted (aes128gcm)
 * and decrypts with the subscription's private key to the payload sent; its VAPID JWT verifies with the public key
 * the API publishes; a push service answering 410 gets the subscription removed; the VAPID keys persist.
 *
 * Live events: the subscribe body's event_types / filter_json (validation, storage, re-subscribe, the migration of
 * an old file); a matching signal.smart_money arrives encrypted with the notification payload, a non-matching one,
 * a Free user's, one over the monthly quota and one beyond the hourly cap do not; market.resolved; sends are
 * bounded in concurrency; a 410 on a live send removes the subscription.
 */
import { createECDH, createPublicKey, randomBytes, verify } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
// @ts-expect-error http_ece ships no types; it is web-push's own encryption library
import ece from 'http_ece';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PushStore } from '../../data/push-store.ts';
import { openServiceDb, type SqlDb } from '../../data/sql/db.ts';
import { duckRunner } from '../../data/runner.ts';
import { WebhookStore } from '../../data/webhook-store.ts';
import { buildPayload, PUSH_LIMITS, PushService } from '../../jobs/push.ts';
import { publishResolution, resolutionData, WebhookService, type VenueLookup } from '../../jobs/webhooks/service.ts';
import { startApp, type TestApp } from '../helpers/app.ts';
import { closeMemoryVenue, openMemoryVenue } from '../helpers/memory-venue.ts';
import { selfSignedCert } from '../helpers/tls.ts';

let instance: DuckDBInstance;
let conn: DuckDBConnection;
let server: Server;
let port: number;
let dir: string;
let t: TestApp;
/** this file's service database (one connection for every store on it in this process) */
let serviceDb: SqlDb;
let push: PushService;
let pushStore: PushStore;
let webhookStore: WebhookStore;
const got: { path: string; headers: Record<string, string>; body: Buffer }[] = [];
/** requests the receiver holds open at this moment, and the most it ever held (paths under /slow/) */
let slowOpen = 0;
let slowMax = 0;

let allowlist: string[];
let ca: string;

beforeAll(async () => {
  const cert = await selfSignedCert();
  ca = cert.cert;
  server = createServer({ key: cert.key, cert: cert.cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      got.push({ path: req.url ?? '', headers: req.headers as Record<string, string>, body: Buffer.concat(chunks) });
      res.statusCode = req.url?.startsWith('/gone') ? 410 : 201;
      if (!req.url?.startsWith('/slow/')) return res.end();
      slowMax = Math.max(slowMax, ++slowOpen);
      setTimeout(() => {
        slowOpen--;
        res.end();
      }, 40);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  port = (server.address() as AddressInfo).port;
  ({ instance, conn } = await openMemoryVenue());
  dir = await mkdtemp(join(tmpdir(), 'push-'));
  serviceDb = await openServiceDb(join(dir, 'service.sqlite'));
  pushStore = await PushStore.open(serviceDb);
  webhookStore = await WebhookStore.open(serviceDb);
  allowlist = [`127.0.0.1:${port}`];
  push = await PushService.open({ store: pushStore, subject: 'mailto:ops@example.com', allowlist, ca: cert.cert, planOf: (u) => t.accounts.planOf(u), usage: webhookStore });
  const webhooks = await WebhookService.open({ store: webhookStore, planOf: () => 'pro', allowlist, ca: cert.cert });
  t = await startApp(duckRunner(conn), { webhooks, push });
}, 60_000);

afterAll(async () => {
  await t?.close();
  await pushStore?.close();
  await webhookStore?.close();
  await serviceDb?.close();
  await new Promise((r) => server?.close(r));
  closeMemoryVenue(conn, instance);
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** A browser's push subscription: its P-256 key pair and auth secret. */
function browserSubscription(path: string) {
  const ecdh = createECDH('prime256v1');
  ecdh.generateKeys();
  const auth = randomBytes(16);
  return { ecdh, auth, json: { endpoint: `https://127.0.0.1:${port}${path}`, keys: { p256dh: ecdh.getPublicKey().toString('base64url'), auth: auth.toString('base64url') } } };
}

const post = (path: string, key: string, body?: unknown) =>
  fetch(`${t.base}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });

it('delivers an encrypted test push that decrypts to the payload, signed with the published VAPID key', async () => {
  const { key } = await t.keyFor('free');
  const sub = browserSubscription('/push/device-1');
  expect(await (await post('/v1/push/subscribe', key, sub.json)).json()).toEqual({ ok: true });
  const { public_key } = (await (await fetch(`${t.base}/v1/push/vapid-public-key`, { headers: { authorization: `Bearer ${key}` } })).json()) as { public_key: string };
  expect(public_key).toBe(push.publicKey);

  got.length = 0;
  const res = (await (await post('/v1/push/test', key)).json()) as { sent: number; removed: number };
  expect(res).toMatchObject({ sent: 1, failed: 0, removed: 0 });
  expect(got).toHaveLength(1);
  const req = got[0]!;
  expect(req.path).toBe('/push/device-1');
  expect(req.headers['content-encoding']).toBe('aes128gcm');
  expect(Number(req.headers.ttl)).toBeGreaterThan(0);
  const plain = ece.decrypt(req.body, { version: 'aes128gcm', privateKey: sub.ecdh, authSecret: sub.auth.toString('base64url') }) as Buffer;
  const payload = JSON.parse(plain.toString('utf8')) as { type: string };
  expect(payload.type).toBe('service.test');

  // Authorization: vapid t=<ES256 JWT>, k=<public key>
  const m = /^vapid t=([^,]+), k=(.+)$/.exec(req.headers.authorization ?? '');
  expect(m).not.toBeNull();
  expect(m![2]).toBe(public_key);
  const [h, p, s] = m![1]!.split('.');
  const pub = Buffer.from(public_key, 'base64url');
  const jwk = { kty: 'EC', crv: 'P-256', x: pub.subarray(1, 33).toString('base64url'), y: pub.subarray(33, 65).toString('base64url') };
  const ok = verify('sha256', Buffer.from(`${h}.${p}`), { key: createPublicKey({ key: jwk, format: 'jwk' }), dsaEncoding: 'ieee-p1363' }, Buffer.from(s!, 'base64url'));
  expect(ok).toBe(true);
  const claims = JSON.parse(Buffer.from(p!, 'base64url').toString()) as { aud: string; sub: string; exp: number };
  expect(claims).toMatchObject({ aud: `https://127.0.0.1:${port}`, sub: 'mailto:ops@example.com' });
});

it('removes a subscription the push service says is gone, and refuses endpoints the SSRF guard refuses', async () => {
  const { key, userId } = await t.keyFor('free');
  await post('/v1/push/subscribe', key, browserSubscription('/gone/device-2').json);
  expect(await pushStore.forUser(userId)).toHaveLength(1);
  expect(await (await post('/v1/push/test', key)).json()).toMatchObject({ sent: 0, removed: 1 });
  expect(await pushStore.forUser(userId)).toHaveLength(0);
  for (const endpoint of ['http://push.example.com/x', 'https://10.1.2.3/x', 'https://169.254.169.254/x', `https://127.0.0.1:${port + 1}/x`]) {
    const res = await post('/v1/push/subscribe', key, { ...browserSubscription('/x').json, endpoint });
    expect(res.status, endpoint).toBe(400);
  }
  expect((await post('/v1/push/subscribe', key, { endpoint: 'https://push.example.com/x', keys: { p256dh: 'short', auth: 'x' } })).status).toBe(400);
  expect((await fetch(`${t.base}/v1/push/subscribe`, { method: 'POST' })).status).toBe(401);
});

it('keeps its VAPID keys across restarts', async () => {
  const again = await PushService.open({ store: await PushStore.open(serviceDb), subject: 'mailto:ops@example.com' });
  expect(again.publicKey).toBe(push.publicKey);
});

// ---------------------------------------------------------------------------------------------------------------
// Live events
// ---------------------------------------------------------------------------------------------------------------

const month = () => new Date().toISOString().slice(0, 7);
let traders = 0;
/** a fresh EIP-55-looking trader address per call, so each test's filters see only its own events */
const newTrader = () => '0xAbC' + String(++traders).padStart(33, '0') + '1234';
const signal = (trader: string, size: number, over: Record<string, unknown> = {}) => ({
  signal_type: 'large_buy',
  trader_proxy: trader,
  smart_money_tags: ['whale', 'sharp'],
  condition_id: '0x' + 'ab'.repeat(32),
  title: 'Will the Fed cut rates in June?',
  outcome_side: 'YES',
  price: 0.62,
  size_usdc: size,
  tx_hash: '0x' + (trader.slice(-12, -4) + size.toString(16)).padStart(64, 'c'),
  ...over,
});
const sentTo = (prefix: string) => got.filter((g) => g.path.startsWith(prefix));
const decrypt = (sub: ReturnType<typeof browserSubscription>, body: Buffer) =>
  JSON.parse((ece.decrypt(body, { version: 'aes128gcm', privateKey: sub.ecdh, authSecret: sub.auth.toString('base64url') }) as Buffer).toString('utf8')) as {
    type: string;
    emitted_at: string;
    data: Record<string, unknown>;
    notification: { title: string; body: string; tag: string };
  };

it('validates event_types and filter_json at subscribe, stores them, and updates them on re-subscribe', async () => {
  const { key, userId } = await t.keyFor('pro');
  const sub = browserSubscription('/live/validate');
  const fill = await post('/v1/push/subscribe', key, { ...sub.json, event_types: ['trader.fill'] });
  expect(fill.status).toBe(400);
  const fillBody = (await fill.json()) as { error: string; issues: { message: string }[] };
  expect(fillBody.error).toBe('invalid_request');
  expect(fillBody.issues[0]!.message).toMatch(/trader\.fill is not available for browser push/);
  for (const event_types of [['nope'], ['service.test'], [], ['market.resolved', 'market.resolved']]) {
    expect((await post('/v1/push/subscribe', key, { ...sub.json, event_types })).status, JSON.stringify(event_types)).toBe(400);
  }
  for (const filter_json of [{ signal_types: ['nope'] }, { trader_proxy: '0x12' }, { min_size_usdc: -1 }, []]) {
    expect((await post('/v1/push/subscribe', key, { ...sub.json, filter_json })).status, JSON.stringify(filter_json)).toBe(400);
  }
  expect(await pushStore.forUser(userId)).toHaveLength(0);

  // defaults for a new subscription
  expect(await (await post('/v1/push/subscribe', key, sub.json)).json()).toEqual({ ok: true });
  expect(await pushStore.forUser(userId)).toMatchObject([{ endpoint: sub.json.endpoint, event_types: ['signal.smart_money'], filter_json: {} }]);
  // re-subscribing replaces what is sent ...
  await post('/v1/push/subscribe', key, { ...sub.json, event_types: ['market.resolved', 'signal.smart_money'], filter_json: { min_size_usdc: 20000, tags_any: ['whale'] } });
  expect(await pushStore.forUser(userId)).toMatchObject([{ event_types: ['market.resolved', 'signal.smart_money'], filter_json: { min_size_usdc: 20000, tags_any: ['whale'] } }]);
  // ... and keeps what is omitted (a page re-posting its PushSubscription JSON does not reset the choice)
  await post('/v1/push/subscribe', key, sub.json);
  expect(await pushStore.forUser(userId)).toMatchObject([{ event_types: ['market.resolved', 'signal.smart_money'], filter_json: { min_size_usdc: 20000 } }]);
  await post('/v1/push/subscribe', key, { ...sub.json, filter_json: {} });
  expect((await pushStore.forUser(userId))[0]!.filter_json).toEqual({});
  // (narrowed to a market no other test uses, so this subscription stays out of their way)
  await post('/v1/push/subscribe', key, { ...sub.json, filter_json: { condition_id: '0x' + '00'.repeat(32) } });
  expect((await pushStore.forUser(userId))[0]!.filter_json).toEqual({ condition_id: '0x' + '00'.repeat(32) });
  expect(await pushStore.forUser(userId)).toHaveLength(1);
  // the index follows the store: a fresh service loads the same subscription
  expect(push.index.has(sub.json.endpoint)).toBe(true);
  expect((await PushService.open({ store: pushStore, subject: 'mailto:ops@example.com' })).index.has(sub.json.endpoint)).toBe(true);
});

it('sends a matching signal.smart_money as an encrypted, VAPID-signed notification, and not a non-matching one', async () => {
  const { key, userId } = await t.keyFor('pro');
  const trader = newTrader();
  const sub = browserSubscription('/live/signal');
  await post('/v1/push/subscribe', key, { ...sub.json, filter_json: { trader_proxy: trader.toLowerCase(), min_size_usdc: 10_000 } });
  const before = await webhookStore.used(userId, month());

  got.length = 0;
  const emitted = new Date('2026-03-01T12:00:00Z');
  const r = await push.publish('signal.smart_money', signal(trader, 12_400), emitted);
  expect(r).toMatchObject({ queued: 1, rate_limited: 0 });
  await push.publish('signal.smart_money', signal(trader, 6_000), emitted); // under min_size_usdc
  await push.publish('signal.smart_money', signal(newTrader(), 50_000), emitted); // another trader
  await push.publish('market.resolved', { condition_id: '0x' + 'ab'.repeat(32), title: 'x', winner_outcome: 'YES' }); // type not subscribed
  await push.drain();

  const reqs = sentTo('/live/signal');
  expect(reqs).toHaveLength(1);
  const req = reqs[0]!;
  expect(req.headers['content-encoding']).toBe('aes128gcm');
  expect(req.headers.ttl).toBe(String(PUSH_LIMITS.ttlSeconds));
  expect(req.headers.urgency).toBe('high');
  expect(req.headers.topic).toMatch(/^[A-Za-z0-9_-]{1,32}$/);
  expect(req.headers.authorization).toMatch(new RegExp(`^vapid t=[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+, k=${push.publicKey}$`));
  expect(req.body.length).toBeLessThanOrEqual(4096);
  const payload = decrypt(sub, req.body);
  expect(payload).toEqual({
    type: 'signal.smart_money',
    emitted_at: '2026-03-01T12:00:00.000Z',
    data: signal(trader, 12_400),
    notification: {
      title: 'Smart money: large buy',
      body: `${trader.slice(0, 6)}…${trader.slice(-4)} (whale, sharp) bought YES at 0.62 for $12,400 — Will the Fed cut rates in June?`,
      tag: `signal.smart_money:${signal(trader, 12_400).tx_hash}`,
    },
  });
  // it counted one event against the month's quota (the counter webhooks use)
  expect(await webhookStore.used(userId, month())).toBe(before + 1);
});

it('sends nothing live to a Free user, nor over the monthly quota (the test push still works on Free)', async () => {
  const free = await t.keyFor('free');
  const trader = newTrader();
  const subFree = browserSubscription('/live/free');
  await post('/v1/push/subscribe', free.key, { ...subFree.json, filter_json: { trader_proxy: trader } });
  const pro = await t.keyFor('pro');
  const subPro = browserSubscription('/live/spent');
  await post('/v1/push/subscribe', pro.key, { ...subPro.json, filter_json: { trader_proxy: trader } });
  await webhookStore.addUsage(pro.userId, month(), 10_000); // Pro's monthly events, all used by webhooks

  got.length = 0;
  const r = await push.publish('signal.smart_money', signal(trader, 9_000));
  await push.drain();
  expect(r.matched).toBeGreaterThanOrEqual(2);
  expect(r).toMatchObject({ queued: 0, over_quota: r.matched });
  expect(sentTo('/live/')).toHaveLength(0);
  expect(await webhookStore.used(free.userId, month())).toBe(0);
  expect(await webhookStore.used(pro.userId, month())).toBe(10_000);
  expect(await (await post('/v1/push/test', free.key)).json()).toMatchObject({ sent: 1 });
});

it('caps each subscription at 30 notifications per rolling hour', async () => {
  let clock = new Date('2026-03-01T12:00:00Z');
  const { userId } = await t.keyFor('pro');
  const capped = await PushService.open({ store: pushStore, subject: 'mailto:ops@example.com', allowlist, ca, planOf: (u) => (u === userId ? 'pro' : null), usage: webhookStore, now: () => clock });
  const trader = newTrader();
  const sub = browserSubscription('/live/cap');
  await capped.subscribe(userId, { ...sub.json, filter_json: { trader_proxy: trader } });
  got.length = 0;
  const results = [];
  for (let i = 0; i < PUSH_LIMITS.perHour + 5; i++) {
    clock = new Date(clock.getTime() + 60_000); // one a minute: 35 in 35 minutes
    results.push(await capped.publish('signal.smart_money', signal(trader, 5_000 + i)));
  }
  await capped.drain();
  expect(PUSH_LIMITS.perHour).toBe(30);
  expect(results.filter((r) => r.queued === 1)).toHaveLength(30);
  expect(results.filter((r) => r.rate_limited === 1)).toHaveLength(5);
  expect(sentTo('/live/cap')).toHaveLength(30);
  // dropped ones are not counted against the quota
  expect(await webhookStore.used(userId, '2026-03')).toBe(30);
  // an hour after the first send, room again
  clock = new Date(new Date('2026-03-01T12:00:00Z').getTime() + 61 * 60_000 + 1);
  expect((await capped.publish('signal.smart_money', signal(trader, 7_000))).queued).toBe(1);
  await capped.drain();
  expect(sentTo('/live/cap')).toHaveLength(31);
});

it('sends market.resolved with the webhook data fields, keeps sends bounded, and removes a subscription a live send finds gone', async () => {
  const { userId } = await t.keyFor('desk');
  const bounded = await PushService.open({ store: pushStore, subject: 'mailto:ops@example.com', allowlist, ca, planOf: (u) => (u === userId ? 'desk' : null), usage: webhookStore, limits: { concurrency: 3 } });
  const cond = '0x' + 'ef'.repeat(32);
  const subs = Array.from({ length: 9 }, (_, i) => browserSubscription(`/slow/resolved-${i}`));
  for (const s of subs) await bounded.subscribe(userId, { ...s.json, event_types: ['market.resolved'], filter_json: { condition_id: cond } });
  const gone = browserSubscription('/gone/resolved');
  await bounded.subscribe(userId, { ...gone.json, event_types: ['market.resolved'], filter_json: { condition_id: cond } });

  const market = { condition_id: cond, question_id: '0x' + '01'.repeat(32), title: 'Will it snow in Paris on Christmas Day?', slug: 'snow-paris-xmas', category: 'weather', yes_token_id: '1', no_token_id: '2' };
  const venue = { market: async () => market } as unknown as VenueLookup;
  const resolution = { marketId: 7, winner: 'NO' as const, winnerIndex: 1, resolvedAt: 1_772_000_000, txHash: '0x' + '99'.repeat(32) };
  got.length = 0;
  slowMax = 0;
  // main.ts builds the market.resolved data once and publishes it to both channels
  const r = await bounded.publish('market.resolved', await resolutionData(venue, resolution));
  expect(r).toMatchObject({ matched: 10, queued: 10 });
  await bounded.drain();
  expect(sentTo('/slow/resolved-')).toHaveLength(9);
  expect(slowMax).toBeGreaterThan(1);
  expect(slowMax).toBeLessThanOrEqual(3);
  const p = decrypt(subs[0]!, sentTo('/slow/resolved-0')[0]!.body);
  expect(p.notification).toEqual({ title: 'Market resolved: NO', body: market.title, tag: `market.resolved:${cond}` });
  expect(sentTo('/slow/resolved-0')[0]!.headers.urgency).toBe('normal');
  // the same data fields the webhook producer builds
  let webhookData: Record<string, unknown> = {};
  await publishResolution({ publish: async (_t: string, d: Record<string, unknown>) => (webhookData = d) } as unknown as WebhookService, venue, resolution);
  expect(p.data).toEqual(webhookData);
  // the push service said 410: the subscription is gone from the store and the index
  expect(await pushStore.get(gone.json.endpoint)).toBeNull();
  expect(bounded.index.has(gone.json.endpoint)).toBe(false);
  expect(bounded.stats).toMatchObject({ sent: 9, removed: 1 });
});

it('keeps payloads under the web push limit, and publish never throws into the live tail', async () => {
  const long = 'Ω'.repeat(5000);
  const p = buildPayload('market.resolved', { condition_id: '0x' + 'ab'.repeat(32), title: long, slug: 's'.repeat(3000), winner_outcome: 'YES', tx_hash: '0x1' }, new Date());
  expect(Buffer.byteLength(JSON.stringify(p))).toBeLessThanOrEqual(PUSH_LIMITS.maxPayloadBytes);
  expect(p.notification.title).toBe('Market resolved: YES');
  expect(Array.from(p.notification.body).length).toBeLessThanOrEqual(180);
  expect(p.data.condition_id).toBe('0x' + 'ab'.repeat(32));
  expect(String(p.data.title).endsWith('…')).toBe(true);

  // a long title goes through a real send within the limit
  const { key } = await t.keyFor('pro');
  const trader = newTrader();
  const sub = browserSubscription('/live/long');
  await post('/v1/push/subscribe', key, { ...sub.json, filter_json: { trader_proxy: trader } });
  got.length = 0;
  expect(await push.publish('signal.smart_money', signal(trader, 8_000, { title: long }))).toMatchObject({ queued: 1 });
  await push.drain();
  const req = sentTo('/live/long')[0]!;
  expect(req.body.length).toBeLessThanOrEqual(4096);
  expect(Buffer.byteLength(JSON.stringify(decrypt(sub, req.body)))).toBeLessThanOrEqual(PUSH_LIMITS.maxPayloadBytes);

  const logs: string[] = [];
  const broken = await PushService.open({
    store: pushStore,
    subject: 'mailto:ops@example.com',
    allowlist,
    planOf: () => 'pro',
    usage: {
      reserveUsage: async () => {
        throw new Error('database is locked');
      },
      addUsage: async () => {},
    },
    log: (m) => logs.push(m),
  });
  // resolves (nothing counted, nothing sent) instead of rejecting into the live tail
  const r = await broken.publish('signal.smart_money', signal(trader, 8_000));
  expect(r.matched).toBeGreaterThanOrEqual(1);
  expect(r).toMatchObject({ queued: 0, over_quota: r.matched });
  expect(logs.join('\n')).toMatch(/database is locked/);
});

it('adds the event_types and filter_json columns to an old-schema file, keeping its rows', async () => {
  const path = join(dir, 'old.sqlite');
  const old = new Database(path);
  old.exec(`CREATE TABLE push_subscriptions (endpoint TEXT PRIMARY KEY, user_id TEXT NOT NULL, p256dh TEXT NOT NULL, auth TEXT NOT NULL, created_at TEXT NOT NULL);
            CREATE TABLE service_kv (key TEXT PRIMARY KEY, value TEXT NOT NULL);`);
  old.prepare(`INSERT INTO push_subscriptions VALUES (?, ?, ?, ?, ?)`).run('https://push.example.com/old', 'u_old', 'p'.repeat(87), 'a'.repeat(22), '2025-01-01T00:00:00.000Z');
  old.close();
  // one connection for the file in this process; a second store opening it finds the migrations applied
  const oldDb = await openServiceDb(path);
  const a = await PushStore.open(oldDb);
  const b = await PushStore.open(oldDb);
  const cols = (await oldDb.all<{ name: string }>(`PRAGMA table_info(push_subscriptions)`)).map((c) => c.name);
  expect(cols).toEqual(['endpoint', 'user_id', 'p256dh', 'auth', 'created_at', 'event_types', 'filter_json']);
  expect((await oldDb.all<{ name: string }>(`SELECT name FROM schema_migrations WHERE store = 'push' ORDER BY name`)).map((r) => r.name)).toEqual(['0001-push', '0002-push-event-filters']);
  expect(await b.get('https://push.example.com/old')).toMatchObject({ user_id: 'u_old', event_types: ['signal.smart_money'], filter_json: {} });
  await a.upsert({ user_id: 'u_old', endpoint: 'https://push.example.com/old', p256dh: 'p'.repeat(87), auth: 'a'.repeat(22), filter_json: { min_size_usdc: 1 } }, Date.now());
  expect(await b.get('https://push.example.com/old')).toMatchObject({ event_types: ['signal.smart_money'], filter_json: { min_size_usdc: 1 }, created_at: '2025-01-01T00:00:00.000Z' });
  await a.close();
  await b.close();
  await oldDb.close();
});
