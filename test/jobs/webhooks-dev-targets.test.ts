/**
 * The operator's development allow-list for webhook targets (jobs/webhooks/dev-targets.ts), as a developer uses it
 * from docs/webhooks-receiver.md: the documented openssl command makes the certificate, the documented receiver
 * (verify.ts + dev-receiver.ts, copied from the page) runs on loopback HTTPS, the service configured with
 * WEBHOOK_DEV_TARGETS / WEBHOOK_DEV_CA accepts the subscription and delivers a signed test event that the receiver
 * verifies; a subscription signed with another secret is refused by the receiver. Without the setting the same
 * target is refused, and production refuses the setting (npm start and the worker exit with a clear message).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { duckRunner } from '../../data/runner.ts';
import { WebhookStore } from '../../data/webhook-store.ts';
import { DevTargetsError, loadDevTargets } from '../../jobs/webhooks/dev-targets.ts';
import { WebhookService } from '../../jobs/webhooks/service.ts';
import { startApp, type TestApp } from '../helpers/app.ts';
import { closeMemoryVenue, openMemoryVenue } from '../helpers/memory-venue.ts';

const run = promisify(execFile);
const root = process.cwd();
const tsx = join(root, 'node_modules', '.bin', 'tsx');
const doc = readFileSync(join(root, 'docs/webhooks-receiver.md'), 'utf8');
const block = (lang: string, contains: string) => {
  for (const m of doc.matchAll(new RegExp('```' + lang + '\\n([\\s\\S]*?)```', 'g'))) if (m[1]!.includes(contains)) return m[1]!;
  throw new Error(`docs/webhooks-receiver.md has no ${lang} block with ${contains}`);
};

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((ok) => s.listen(0, '127.0.0.1', () => ok()));
  const port = (s.address() as { port: number }).port;
  await new Promise((ok) => s.close(ok));
  return port;
}

describe('loadDevTargets', () => {
  it('is off by default and refused in production', async () => {
    expect(await loadDevTargets({ production: false })).toBeNull();
    expect(await loadDevTargets({ targets: ' , ', production: true })).toBeNull();
    await expect(loadDevTargets({ targets: '127.0.0.1:9443', production: true })).rejects.toThrow(/refused when NODE_ENV=production/);
    await expect(loadDevTargets({ caFile: '/x.pem', production: false })).rejects.toThrow(DevTargetsError);
  });

  it('refuses malformed entries and unreadable certificates', async () => {
    for (const bad of ['127.0.0.1', 'https://127.0.0.1:9443', '127.0.0.1:0', '127.0.0.1:70000', '::1:9443', 'a b:1']) {
      await expect(loadDevTargets({ targets: bad, production: false }), bad).rejects.toThrow(/not host:port/);
    }
    await expect(loadDevTargets({ targets: '127.0.0.1:9443', caFile: '/nonexistent/ca.pem', production: false })).rejects.toThrow(/cannot read/);
  });

  it('expands a name to the addresses it has now, on its port only; IP entries stay as they are', async () => {
    const t = await loadDevTargets({ targets: 'localhost:9443,[::1]:8000', production: false, lookup: async () => [{ address: '127.0.0.1' }, { address: '::1' }] });
    expect(new Set(t!.allowlist)).toEqual(new Set(['localhost:9443', '127.0.0.1:9443', '[::1]:9443', '[::1]:8000']));
    expect(t!.ca).toBeUndefined();
    expect(t!.describe).toMatch(/DEVELOPMENT.*localhost:9443 \(127\.0\.0\.1, ::1\).*never in production/);
  });
});

describe('a delivery to the documented local receiver', () => {
  let dir: string;
  let instance: DuckDBInstance;
  let conn: DuckDBConnection;
  let store: WebhookStore;
  let app: TestApp;
  let plain: TestApp;
  let port: number;
  const receivers: ChildProcess[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'dev-receiver-'));
    await run('bash', ['-c', block('sh', 'openssl req')], { cwd: dir });
    await writeFile(join(dir, 'verify.ts'), block('ts', 'export function verifyServiceSignature('));
    await writeFile(join(dir, 'dev-receiver.ts'), block('ts', 'dev-receiver.ts'));
    port = await freePort();
    ({ instance, conn } = await openMemoryVenue());
    const dev = await loadDevTargets({ targets: `127.0.0.1:${port}`, caFile: join(dir, 'dev-cert.pem'), production: false });
    expect(dev!.ca!.length).toBeGreaterThan(100); // the system roots stay trusted
    // a file of this test's own: the store opens and owns its one connection to it
    store = await WebhookStore.open(join(dir, 'webhooks.sqlite'));
    let planOf: (u: string) => 'pro' | null = () => null;
    const svc = await WebhookService.open({ store, planOf: (u) => planOf(u), allowlist: dev!.allowlist, ca: dev!.ca });
    app = await startApp(duckRunner(conn), { webhooks: svc });
    planOf = (u) => app.accounts.planOf(u) as 'pro' | null;
    plain = await startApp(duckRunner(conn));
  }, 60_000);

  afterAll(async () => {
    for (const r of receivers) r.kill();
    await app?.close();
    await plain?.close();
    await store?.close();
    closeMemoryVenue(conn, instance);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** the receiver as the page says to run it: its own process, cwd next to the PEM files */
  async function startReceiver(secret: string): Promise<{ lines: () => Record<string, unknown>[] }> {
    const child = spawn(tsx, ['dev-receiver.ts'], { cwd: dir, env: { ...process.env, WEBHOOK_SECRET: secret, PORT: String(port) } });
    receivers.push(child);
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    await new Promise<void>((ok, fail) => {
      let err = '';
      child.stderr.on('data', (d: Buffer) => {
        err += d.toString();
        if (err.includes('receiving on')) ok();
      });
      child.once('exit', (code) => fail(new Error(`receiver exited ${code}: ${err}`)));
    });
    return { lines: () => out.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>) };
  }

  const post = (t: TestApp, key: string, path: string, body?: unknown) =>
    fetch(`${t.base}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) });

  it('accepts the loopback target, delivers a signed test event the receiver verifies, and nothing without the allow-list', async () => {
    const { key } = await app.keyFor('pro');
    const target = `https://127.0.0.1:${port}/hook`;
    const created = await post(app, key, '/v1/webhooks', { target_url: target, event_types: ['service.test', 'market.resolved'] });
    expect(created.status).toBe(201);
    const sub = (await created.json()) as { id: string; secret: string };
    const rx = await startReceiver(sub.secret);

    const test = (await (await post(app, key, `/v1/webhooks/${sub.id}/test`)).json()) as { event_id: string; delivered: boolean; http_status: number };
    expect(test).toMatchObject({ delivered: true, http_status: 204 });
    await expect.poll(() => rx.lines().length).toBe(1);
    expect(rx.lines()[0]).toMatchObject({ id: test.event_id, type: 'service.test' });

    // another subscription to the same receiver has its own secret: the receiver refuses its signature
    const other = (await (await post(app, key, '/v1/webhooks', { target_url: target, event_types: ['service.test'] })).json()) as { id: string };
    const refused = (await (await post(app, key, `/v1/webhooks/${other.id}/test`)).json()) as { delivered: boolean; http_status: number };
    expect(refused).toMatchObject({ delivered: false, http_status: 401 });
    expect(rx.lines()).toHaveLength(1);

    // the allow-list names one port: another port on loopback is still refused
    const otherPort = await post(app, key, '/v1/webhooks', { target_url: `https://127.0.0.1:${port + 1}/hook`, event_types: ['service.test'] });
    expect(otherPort.status).toBe(400);

    // a service without the setting refuses the same target
    const p = await plain.keyFor('pro');
    const r = await post(plain, p.key, '/v1/webhooks', { target_url: target, event_types: ['service.test'] });
    expect(r.status).toBe(400);
    expect(await r.json()).toMatchObject({ error: 'invalid_target' });
  }, 60_000);
});

describe('production refuses the setting at start', () => {
  const env = { ...process.env, NODE_ENV: 'production', WEBHOOK_DEV_TARGETS: '127.0.0.1:9443', DATA_DIR: join(tmpdir(), 'never-used-dev-targets') };
  for (const [what, args] of [
    ['npm start (main.ts)', ['main.ts']],
    ['npm run webhooks:worker', ['jobs/webhooks/worker-cli.ts']],
  ] as const) {
    it(what, async () => {
      const r = await run(tsx, [...args], { cwd: root, env: { ...env, REDIS_URL: 'redis://127.0.0.1:1' } }).then(
        () => ({ code: 0, stderr: '' }),
        (e: { code: number; stderr: string }) => e,
      );
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/configuration error: WEBHOOK_DEV_TARGETS .* refused when NODE_ENV=production/);
    }, 30_000);
  }
});
