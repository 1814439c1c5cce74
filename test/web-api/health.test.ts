/**
 * /healthz and /readyz on the whole REST app over loopback: live and ready on a working app; not ready (503, the
 * error object naming the failing checks) while draining, when an extra check fails or times out, and when the
 * service database is gone — while /healthz stays 200. No credential needed, nothing cached.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { duckRunner } from '../../data/runner.ts';
import { closeMemoryVenue, openMemoryVenue } from '../helpers/memory-venue.ts';
import { startApp, type TestApp } from '../helpers/app.ts';

let app: TestApp;
let venue: Awaited<ReturnType<typeof openMemoryVenue>>;
let draining = false;
let analytics: 'ok' | 'fail' | 'hang' = 'ok';

beforeAll(async () => {
  venue = await openMemoryVenue();
  app = await startApp(duckRunner(venue.conn), {
    health: {
      role: 'api',
      draining: () => draining,
      version: () => 7,
      checks: [
        {
          name: 'analytics',
          check: async () => {
            if (analytics === 'fail') throw new Error('no published analytics state');
            if (analytics === 'hang') await new Promise((r) => setTimeout(r, 60_000));
          },
        },
      ],
    },
  });
});
afterAll(async () => {
  await app?.close().catch(() => {});
  if (venue) closeMemoryVenue(venue.conn, venue.instance);
});

const get = (path: string) => fetch(`${app.base}${path}`);

describe('health endpoints', () => {
  it('are live and ready on a working app, without a credential', async () => {
    const live = await get('/healthz');
    expect(live.status).toBe(200);
    expect(live.headers.get('cache-control')).toBe('no-store');
    expect(await live.json()).toEqual({ status: 'ok', role: 'api', version: 7 });
    const ready = await get('/readyz');
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready', role: 'api', version: 7, checks: ['service_db', 'analytics'] });
  });

  it('say not ready while draining, or when a check fails or hangs; live all along', async () => {
    draining = true;
    let r = await get('/readyz');
    expect(r.status).toBe(503);
    let body = (await r.json()) as Record<string, string>;
    expect(body).toMatchObject({ error: 'not_ready' });
    expect(body.reason).toMatch(/^draining/);
    expect(typeof body.trace_id).toBe('string');
    draining = false;
    analytics = 'fail';
    body = (await (r = await get('/readyz')).json()) as Record<string, string>;
    expect(r.status).toBe(503);
    expect(body.reason).toBe('analytics: no published analytics state');
    analytics = 'hang';
    const t0 = Date.now();
    body = (await (r = await get('/readyz')).json()) as Record<string, string>;
    expect(r.status).toBe(503);
    expect(body.reason).toMatch(/^analytics: no answer within 2000 ms/);
    expect(Date.now() - t0).toBeLessThan(10_000);
    analytics = 'ok';
    expect((await get('/healthz')).status).toBe(200);
    expect((await get('/readyz')).status).toBe(200);
  });

  it('say not ready once the service database is gone', async () => {
    await app.serviceDb.close();
    const r = await get('/readyz');
    expect(r.status).toBe(503);
    expect(((await r.json()) as { reason: string }).reason).toMatch(/^service_db: /);
    expect((await get('/healthz')).status).toBe(200);
  });
});
