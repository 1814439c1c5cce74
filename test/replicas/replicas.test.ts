/**
 * Scale-out on loopback, as an operator runs it: one analytics builder (`main.ts --role builder`) and two API
 * replicas (`--role api`) on one PostgreSQL database and one Redis, the replicas serving the builder's published
 * analytics files, x402 settled by one facilitator on a local chain. Checked from outside, over HTTP and WebSocket:
 * a session made on A works on B and logout-all on B ends it on A; a magic token or SIWE nonce used on A is refused
 * on B; the same X-PAYMENT sent to A and B at once is settled once and served once; a rate limit counts across
 * both; a heavy public answer computed on A is a cache hit on B; a stream client on B sees the builder's fills; a new analytics version reaches both replicas; a replica
 * drains on SIGTERM; webhook events produced while replica A is SIGKILLed are all delivered, signed.
 */
import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import express from 'express';
import { Redis } from 'ioredis';
import pg from 'pg';
import { createSiweMessage } from 'viem/siwe';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPaymentHeader } from 'x402/client';
import type { PaymentRequirements } from 'x402/types';
import { readPointer } from '../../data/published-analytics.ts';
import { LocalFacilitator } from '../../gateway/facilitator.ts';
import { facilitatorRouter } from '../../gateway/facilitator-server.ts';
import { startLocalChain, type LocalChain } from '../../gateway/local-chain/chain.ts';
import { RedisDeliveryQueue } from '../../jobs/webhooks/redis-queue.ts';
import { SIGNATURE_HEADER, verifySignature } from '../../jobs/webhooks/signing.ts';
import { runAdmin } from '../../scripts/admin.ts';
import { startHttpsReceiver, type HttpsReceiver } from '../helpers/https-receiver.ts';
import { freshPostgres, type TestPostgres } from '../helpers/postgres.ts';
import { freePort, startRole, type RoleProcess } from '../helpers/roles.ts';
import { connectStream } from '../helpers/stream-server.ts';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const children: ChildProcess[] = [];
let dir: string;
let db: TestPostgres;
let chain: LocalChain;
let facilitator: Server;
let receiver: HttpsReceiver;
let A: Proc;
let B: Proc;
let builder: Proc;
let common: Record<string, string>;
const payTo = privateKeyToAccount(generatePrivateKey()).address;

type Proc = RoleProcess;

/** main.ts in a role, on its own port (the replicas share the common environment). */
const start = (role: string, env: Record<string, string>, port?: number) => startRole(role, { ...common, ...env }, { port, children });

const until = async <T>(f: () => Promise<T | undefined | false>, ms: number, what: string): Promise<T> => {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f().catch(() => undefined);
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
};

const json = async (r: Response) => (await r.json()) as Record<string, unknown>;
const cookieOf = (r: Response) => r.headers.get('set-cookie')?.split(';')[0] ?? '';

/** Sign in by magic link: started on `on`, the link used on `use`; returns the session cookie. */
async function magicSignIn(email: string, on: Proc, use: Proc): Promise<string> {
  const started = await json(await fetch(`${on.base}/v1/auth/magic/start`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email }) }));
  const token = new URL(String(started.dev_link)).searchParams.get('token')!;
  const cb = await fetch(`${use.base}/v1/auth/magic/callback?token=${encodeURIComponent(token)}`, { redirect: 'manual' });
  expect(cb.status).toBe(302);
  return cookieOf(cb);
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'replicas-'));
  [db, chain, receiver] = await Promise.all([freshPostgres('sa_replicas'), startLocalChain(), startHttpsReceiver()]);
  const app = express();
  app.use(facilitatorRouter(new LocalFacilitator({ rpcUrl: chain.rpcUrl, network: chain.network, privateKey: chain.facilitatorPrivateKey })));
  const fport = await freePort();
  facilitator = app.listen(fport, '127.0.0.1');
  writeFileSync(join(dir, 'receiver-ca.pem'), receiver.ca);
  const portA = await freePort();
  common = {
    DATA_DIR: join(dir, 'data'),
    DEMO_WALLETS: '1500',
    DEMO_DAYS: '10',
    DEMO_SEED: '9',
    DATABASE_URL: db.url,
    REDIS_URL,
    WEBHOOK_QUEUE_PREFIX: `replicas${process.pid}${Date.now()}`,
    TID_KEY: 'replicas-test-tid-key-0123456789',
    HOST: '127.0.0.1',
    // one public origin, as behind one balancer (SIWE messages name it)
    PUBLIC_ORIGIN: `http://127.0.0.1:${portA}`,
    WEBHOOK_DEV_TARGETS: `127.0.0.1:${receiver.port}`,
    WEBHOOK_DEV_CA: join(dir, 'receiver-ca.pem'),
    NODE_ENV: 'test',
  };
  builder = await start('builder', { X402_MODE: 'off', LIVE_TAIL_RATE: '10', ANALYTICS_REFRESH_MS: '500', PUBLISH_EVERY_MS: '1000' });
  const api = { X402_MODE: 'remote', X402_FACILITATOR_URL: `http://127.0.0.1:${fport}`, X402_NETWORK: chain.network, X402_PAY_TO: payTo, X402_ASSET: chain.usdc, DRAIN_MS: '0' };
  [A, B] = await Promise.all([start('api', api, portA), start('api', api)]);
}, 600_000);

afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  await new Promise((r) => setTimeout(r, 200));
  facilitator?.close();
  await receiver?.close();
  await chain?.stop();
  await db?.drop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('two API replicas and one builder', () => {
  it('are live and ready, and serve the same analytics version', async () => {
    for (const p of [builder, A, B]) expect((await fetch(`${p.base}/readyz`)).status).toBe(200);
    const [a, b] = await Promise.all([json(await fetch(`${A.base}/healthz`)), json(await fetch(`${B.base}/healthz`))]);
    expect(a.role).toBe('api');
    expect(typeof a.version).toBe('number');
    // both follow the pointer: within a few seconds they serve the same version
    await until(async () => (await json(await fetch(`${A.base}/healthz`))).version === (await json(await fetch(`${B.base}/healthz`))).version, 15_000, 'same version');
    expect(b.role).toBe('api');
  });

  it('a session made on A works on B; logout-all on B ends it on A', async () => {
    const sid = await magicSignIn('replicas@example.com', A, A);
    const me = async (p: Proc) => (await json(await fetch(`${p.base}/v1/auth/me`, { headers: { cookie: sid } }))).user as { email: string } | null;
    expect((await me(B))!.email).toBe('replicas@example.com');
    const out = await json(await fetch(`${B.base}/v1/auth/logout-all`, { method: 'POST', headers: { cookie: sid, 'content-type': 'application/json' }, body: '{}' }));
    expect(out).toMatchObject({ ok: true, revoked: 1 });
    expect(await me(A)).toBeNull();
  });

  it('a magic token or a SIWE nonce used on A is refused on B', async () => {
    const started = await json(await fetch(`${A.base}/v1/auth/magic/start`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'once@example.com' }) }));
    const token = new URL(String(started.dev_link)).searchParams.get('token')!;
    expect((await fetch(`${A.base}/v1/auth/magic/callback?token=${token}`, { redirect: 'manual' })).status).toBe(302);
    const again = await fetch(`${B.base}/v1/auth/magic/callback?token=${token}`, { redirect: 'manual' });
    expect(again.status).toBe(400);
    expect(await json(again)).toMatchObject({ error: 'invalid_token' });

    const account = privateKeyToAccount(generatePrivateKey());
    const { nonce } = (await json(await fetch(`${A.base}/v1/auth/siwe/nonce`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }))) as { nonce: string };
    const origin = new URL(common.PUBLIC_ORIGIN!);
    const message = createSiweMessage({ domain: origin.host, address: account.address, uri: origin.origin, version: '1', chainId: 137, nonce, issuedAt: new Date() });
    const body = JSON.stringify({ message, signature: await account.signMessage({ message }) });
    const verify = (p: Proc) => fetch(`${p.base}/v1/auth/siwe/verify`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect((await verify(A)).status).toBe(200);
    const replay = await verify(B);
    expect(replay.status).toBeGreaterThanOrEqual(400);
    expect(await json(replay)).toMatchObject({ error: 'invalid_nonce' });
  });

  it('the same X-PAYMENT sent to A and B at once is settled once and served once', async () => {
    const payer = (await chain.newPayer(1_000_000n)).account;
    const path = '/v1/agent/leaderboard?limit=3';
    const required = (await json(await fetch(`${A.base}${path}`))) as { accepts: PaymentRequirements[] };
    const header = await createPaymentHeader(payer as never, 1, required.accepts[0]!);
    const before = await chain.balanceOf(payer.address);
    const [ra, rb] = await Promise.all([A, B].map((p) => fetch(`${p.base}${path}`, { headers: { 'x-payment': header } })));
    const statuses = [ra!.status, rb!.status].sort();
    expect(statuses).toEqual([200, 402]);
    const paid = ra!.status === 200 ? ra! : rb!;
    expect(paid.headers.get('x-payment-response')).toBeTruthy();
    expect(((await paid.json()) as { rows: unknown[] }).rows).toHaveLength(3);
    expect(before - (await chain.balanceOf(payer.address))).toBe(BigInt(required.accepts[0]!.maxAmountRequired));
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    try {
      const { rows } = await c.query(`SELECT status, count(*)::INTEGER AS n FROM x402_payments WHERE payer = $1 GROUP BY 1`, [payer.address]);
      expect(rows).toEqual([{ status: 'settled', n: 1 }]);
    } finally {
      await c.end();
    }
  });

  it('a rate limit counts requests on both replicas', async () => {
    const sid = await magicSignIn('limits@example.com', A, B);
    const minted = await json(await fetch(`${B.base}/v1/api-keys`, { method: 'POST', headers: { cookie: sid, 'content-type': 'application/json' }, body: JSON.stringify({ label: 'rl' }) }));
    const auth = { authorization: `Bearer ${String(minted.key)}` };
    for (let attempt = 0; ; attempt++) {
      // a minute's window: 30 requests on Free, alternating replicas, then the 31st is refused
      const seen: { remaining: number; reset: string; status: number }[] = [];
      for (let i = 0; i < 31; i++) {
        const r = await fetch(`${(i % 2 ? A : B).base}/v1/account/plan`, { headers: auth });
        seen.push({ remaining: Number(r.headers.get('x-ratelimit-remaining')), reset: String(r.headers.get('x-ratelimit-reset')), status: r.status });
        await r.arrayBuffer();
      }
      if (new Set(seen.map((s) => s.reset)).size > 1 && attempt < 2) {
        await new Promise((r) => setTimeout(r, 61_000 - (Date.now() % 60_000)));
        continue; // the window turned during the run: once more in the next one
      }
      const okd = seen.filter((s) => s.status === 200);
      expect(okd.length).toBeLessThanOrEqual(30);
      expect(seen.at(-1)!.status).toBe(429);
      // every counted request saw a different remaining count, whichever replica answered
      expect(new Set(okd.map((s) => s.remaining)).size).toBe(okd.length);
      break;
    }
  }, 200_000);

  it('a stream client on B sees the fills the builder produces', async () => {
    const sid = await magicSignIn('stream@example.com', B, B);
    const c = await connectStream(B.base.replace(/^http/, 'ws') + '/v1/stream', { cookie: sid });
    if (!('ws' in c)) throw new Error(`refused ${c.status}`);
    expect(await c.next()).toMatchObject({ type: 'welcome' });
    const fill = (await Promise.race([c.next(), new Promise((_, no) => setTimeout(() => no(new Error('no fill within 20 s')), 20_000))])) as { type: string; data: { trader_proxy: string } };
    expect(fill.type).toBe('trader.fill');
    expect(fill.data.trader_proxy).toMatch(/^0x[0-9a-fA-F]{40}$/);
    c.ws.close();
  });

  it('each new analytics version the builder publishes reaches both replicas', async () => {
    const publishDir = await until(async () => {
      const m = /analytics published to (\S+)/.exec(builder.log());
      return m?.[1];
    }, 5000, 'publish dir');
    const first = (await readPointer(publishDir))!;
    const next = await until(async () => {
      const p = await readPointer(publishDir);
      return p && p.version > first.version ? p : undefined;
    }, 60_000, 'a newer published version');
    const served = await Promise.all(
      [A, B].map((p) => until(async () => Number((await json(await fetch(`${p.base}/healthz`))).version) >= next.version && Date.now(), 15_000, 'replica switch')),
    );
    const lag = Math.max(...served) - Date.parse(next.published_at);
    console.log(`publish -> both replicas serving: ${lag} ms (copy ${next.copy_seconds.toFixed(2)} s, ${(next.bytes / 2 ** 20).toFixed(1)} MB)`);
    expect(lag).toBeLessThan(15_000);
  });

  it('a heavy public answer computed on A is served from the shared cache on B', async () => {
    const path = `/v1/public/trades/top-roi`;
    const a = await fetch(`${A.base}${path}`);
    expect(a.status).toBe(200);
    expect(a.headers.get('x-cache')).toBe('miss');
    const body = await a.json();
    // once A's answer is in Redis, B's first request for it is a hit (B never computed it)
    const redis = new Redis(REDIS_URL);
    try {
      await until(async () => (await redis.keys(`${common.WEBHOOK_QUEUE_PREFIX}:cache:*top-roi*`)).length > 0, 5000, 'the answer in Redis');
    } finally {
      redis.disconnect();
    }
    const b = await fetch(`${B.base}${path}`);
    expect(b.headers.get('x-cache')).toBe('hit');
    expect(await b.json()).toEqual(body);
  });

  it('a replica drains on SIGTERM: not ready at once, requests in flight finish, then it exits cleanly', async () => {
    const C = await start('api', { X402_MODE: 'off', DRAIN_MS: '1500' });
    expect((await fetch(`${C.base}/readyz`)).status).toBe(200);
    const exited = new Promise<number | null>((ok) => C.child.once('exit', (code) => ok(code)));
    // a request in flight when the signal arrives (a board read) still gets its answer
    const inflight = fetch(`${C.base}/v1/public/leaderboard?limit=25`);
    C.child.kill('SIGTERM');
    const t0 = Date.now();
    const ready = await until(async () => {
      const r = await fetch(`${C.base}/readyz`);
      return r.status === 503 ? ((await r.json()) as { error: string; reason: string }) : undefined;
    }, 1000, 'readyz 503 while draining');
    expect(ready).toMatchObject({ error: 'not_ready' });
    expect(ready.reason).toMatch(/draining/);
    expect((await fetch(`${C.base}/healthz`)).status).toBe(200);
    expect((await inflight).status).toBe(200);
    expect(await exited).toBe(0);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1000);
  });

  it('webhook events produced while replica A is SIGKILLed are all delivered, signed', async () => {
    const email = 'hooks-replicas@example.com';
    const sid = await magicSignIn(email, A, A);
    expect(await runAdmin(['set-plan', email, 'pro'], { DATABASE_URL: db.url }, () => {})).toBe(0);
    const created = await fetch(`${A.base}/v1/webhooks`, {
      method: 'POST',
      headers: { cookie: sid, 'content-type': 'application/json' },
      body: JSON.stringify({ target_url: receiver.url, event_types: ['trader.fill'] }),
    });
    expect(created.status).toBe(201);
    const sub = (await created.json()) as { id: string; secret: string };
    const killedAt = Date.now();
    A.child.kill('SIGKILL');
    // the builder picks the subscription up (its index reloads every 5 s; the plan cache every 10 s) and produces
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    try {
      const count = async (where: string) => Number((await c.query(`SELECT count(*)::INTEGER AS n FROM webhook_deliveries WHERE subscription_id = $1 ${where}`, [sub.id])).rows[0].n);
      // generous waits: with the whole suite on two cores the builder's tail and refreshes run slowly
      await until(async () => (await count('')) >= 20, 150_000, '20 events produced after the kill');
      const cutoff = Date.now();
      // every delivery enqueued so far ends delivered (none pending, failed or exhausted)
      await until(async () => (await count(`AND created_ms <= ${cutoff} AND status <> 'delivered'`)) === 0, 150_000, 'all delivered').catch(async (e: Error) => {
        // say why: each undelivered row, its job in the queue, and the builder's last words
        const rows = (await c.query(`SELECT event_id, status, attempts, last_error FROM webhook_deliveries WHERE subscription_id = $1 AND created_ms <= ${cutoff} AND status <> 'delivered' LIMIT 5`, [sub.id])).rows;
        const redis = new Redis(REDIS_URL);
        const queue = new RedisDeliveryQueue({ connection: redis, prefix: common.WEBHOOK_QUEUE_PREFIX });
        const jobs = await Promise.all(rows.map((r) => queue.state(r.event_id, sub.id).catch((x: Error) => x.message)));
        await queue.close();
        redis.disconnect();
        throw new Error(`${e.message}\n${JSON.stringify({ rows, jobs }, null, 1)}\nbuilder log:\n${builder.log().slice(-3000)}`);
      });
      const delivered = await count(`AND created_ms <= ${cutoff}`);
      expect(delivered).toBeGreaterThanOrEqual(20);
      const got = receiver.received.filter((r) => r.at >= killedAt && r.body.includes('trader.fill'));
      expect(got.length).toBeGreaterThanOrEqual(delivered);
      for (const r of got) expect(verifySignature({ header: r.headers[SIGNATURE_HEADER], rawBody: r.body, secret: sub.secret })).toMatchObject({ ok: true });
      // and B still serves
      expect((await fetch(`${B.base}/readyz`)).status).toBe(200);
    } finally {
      await c.end();
    }
  }, 360_000);
});
