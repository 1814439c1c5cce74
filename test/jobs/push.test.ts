/**
 * Browser push end to end against a real HTTPS "push service" on loopback: a browser-like subscription (an ECDH
 * key pair made here), registered through the API and the SSRF guard; a test push arrives encrypted (aes128gcm)
 * and decrypts with the subscription's private key to the payload sent; its VAPID JWT verifies with the public key
 * the API publishes; a push service answering 410 gets the subscription removed; the VAPID keys persist.
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
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PushStore } from '../../data/push-store.ts';
import { duckRunner } from '../../data/runner.ts';
import { WebhookStore } from '../../data/webhook-store.ts';
import { PushService } from '../../jobs/push.ts';
import { WebhookService } from '../../jobs/webhooks/service.ts';
import { startApp, type TestApp } from '../helpers/app.ts';
import { closeMemoryVenue, openMemoryVenue } from '../helpers/memory-venue.ts';
import { selfSignedCert } from '../helpers/tls.ts';

let instance: DuckDBInstance;
let conn: DuckDBConnection;
let server: Server;
let port: number;
let dir: string;
let t: TestApp;
let push: PushService;
let pushStore: PushStore;
let webhookStore: WebhookStore;
const got: { path: string; headers: Record<string, string>; body: Buffer }[] = [];

beforeAll(async () => {
  const cert = await selfSignedCert();
  server = createServer({ key: cert.key, cert: cert.cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      got.push({ path: req.url ?? '', headers: req.headers as Record<string, string>, body: Buffer.concat(chunks) });
      res.statusCode = req.url?.startsWith('/gone') ? 410 : 201;
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  port = (server.address() as AddressInfo).port;
  ({ instance, conn } = await openMemoryVenue());
  dir = await mkdtemp(join(tmpdir(), 'push-'));
  pushStore = new PushStore(join(dir, 'service.sqlite'));
  webhookStore = new WebhookStore(join(dir, 'service.sqlite'));
  const allowlist = [`127.0.0.1:${port}`];
  push = new PushService({ store: pushStore, subject: 'mailto:ops@example.com', allowlist, ca: cert.cert });
  const webhooks = new WebhookService({ store: webhookStore, planOf: () => 'pro', allowlist, ca: cert.cert });
  t = await startApp(duckRunner(conn), { webhooks, push });
}, 60_000);

afterAll(async () => {
  await t?.close();
  pushStore?.close();
  webhookStore?.close();
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
  const { key } = t.keyFor('free');
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
  const { key, userId } = t.keyFor('free');
  await post('/v1/push/subscribe', key, browserSubscription('/gone/device-2').json);
  expect(pushStore.forUser(userId)).toHaveLength(1);
  expect(await (await post('/v1/push/test', key)).json()).toMatchObject({ sent: 0, removed: 1 });
  expect(pushStore.forUser(userId)).toHaveLength(0);
  for (const endpoint of ['http://push.example.com/x', 'https://10.1.2.3/x', 'https://169.254.169.254/x', `https://127.0.0.1:${port + 1}/x`]) {
    const res = await post('/v1/push/subscribe', key, { ...browserSubscription('/x').json, endpoint });
    expect(res.status, endpoint).toBe(400);
  }
  expect((await post('/v1/push/subscribe', key, { endpoint: 'https://push.example.com/x', keys: { p256dh: 'short', auth: 'x' } })).status).toBe(400);
  expect((await fetch(`${t.base}/v1/push/subscribe`, { method: 'POST' })).status).toBe(401);
});

it('keeps its VAPID keys across restarts', () => {
  const again = new PushService({ store: new PushStore(join(dir, 'service.sqlite')), subject: 'mailto:ops@example.com' });
  expect(again.publicKey).toBe(push.publicKey);
});
