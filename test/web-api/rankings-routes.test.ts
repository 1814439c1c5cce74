/**
 * Ranking routes over a real HTTP server on loopback: response shapes against the core's zod schemas (the spec's
 * field tables), the 60 s cache, plan gating of extra_metrics, documented errors as the exact error object, and a
 * fuzz of query strings that must never produce a 500 or a non-error body.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fullBuild } from '../../core/analytics/build.ts';
import { PRESETS, RankingResponse } from '../../core/rankings.ts';
import type { QueryRunner } from '../../core/query.ts';
import { duckRunner } from '../../data/runner.ts';
import { TidIndex } from '../../core/public/tids.ts';
import { RankerCache } from '../../jobs/analytics/rankers.ts';
import { startApp, type TestApp } from '../helpers/app.ts';
import { makeVenue, type TestVenue } from '../helpers/venue.ts';

let v: TestVenue;
let t: TestApp;
let base: string;
let freeKey: string;
let proKey: string;
/** a request with a Free-plan key unless another key (or none) is given */
const get = (path: string, key: string | null = freeKey): Promise<Response> => fetch(`${base}${path}`, key ? { headers: { authorization: `Bearer ${key}` } } : {});
let clock = new Date('2026-11-01T00:00:00Z');

beforeAll(async () => {
  v = await makeVenue({ wallets: 3000, days: 30, seed: 3 });
  await fullBuild(duckRunner(v.conn), new Date('2026-10-31T23:59:59Z'));
  t = await startApp(duckRunner(v.conn), { now: () => clock, rateRules: {} });
  base = t.base;
  freeKey = (await t.keyFor('free')).key;
  proKey = (await t.keyFor('pro')).key;
}, 600_000);
afterAll(async () => {
  await t?.close();
  await v?.cleanup();
});

const ERROR_KEYS = new Set(['error', 'message', 'reason', 'issues', 'trace_id']);
async function expectError(res: Response, status: number, code: string) {
  expect(res.status).toBe(status);
  const body = (await res.json()) as Record<string, unknown>;
  for (const k of Object.keys(body)) expect(ERROR_KEYS.has(k), k).toBe(true);
  expect(body.error).toBe(code);
  expect(typeof body.trace_id).toBe('string');
  expect(res.headers.get('x-trace-id')).toBe(body.trace_id);
  return body;
}

describe('ranking routes', () => {
  it('lists the ten presets', async () => {
    const res = await get(`/v1/rankings/presets`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { presets: { slug: string }[] };
    expect(body.presets.map((p) => p.slug)).toEqual(PRESETS.map((p) => p.slug));
  });

  it('serves every preset in the spec shape, cached 60 s under every parameter', async () => {
    for (const p of PRESETS) {
      const res = await get(`/v1/rankings/preset/${p.slug}?limit=5`);
      expect(res.status, p.slug).toBe(200);
      RankingResponse.strict().parse(await res.json());
    }
    const first = await get(`/v1/rankings/preset/top-pnl?limit=7`);
    expect(first.headers.get('x-cache')).toBe('miss');
    const again = await get(`/v1/rankings/preset/top-pnl?limit=7`);
    expect(again.headers.get('x-cache')).toBe('hit');
    const other = await get(`/v1/rankings/preset/top-pnl?limit=8`);
    expect(other.headers.get('x-cache')).toBe('miss');
    clock = new Date(clock.getTime() + 60_000);
    const expired = await get(`/v1/rankings/preset/top-pnl?limit=7`);
    expect(expired.headers.get('x-cache')).toBe('miss');
  });

  it("answers plain preset pages from the announced version's heads in memory (no statement), the same as from SQL", async () => {
    const db = duckRunner(v.conn);
    let statements = 0;
    const counted: QueryRunner = { all: (sql, p) => (statements++, db.all(sql, p)), run: (sql, p) => (statements++, db.run(sql, p)) };
    const rankers = new RankerCache(v.instance);
    await rankers.refresh();
    expect(rankers.presetHeads()).not.toBeNull();
    const tids = new TidIndex('test-tid-key-0123456789abcdef');
    const memory = await startApp(counted, { now: () => clock, rateRules: {}, rankers, presetCacheMs: 0, tids });
    // the public router warms its tid map at start, two statements it does not wait for: they end before the count
    // starts (on a loaded machine the second one fell inside the first request)
    await tids.syncMap(db);
    try {
      const key = (await memory.keyFor('pro')).key;
      const body = async (b: string, path: string, k: string) => {
        const res = await fetch(`${b}${path}`, { headers: { authorization: `Bearer ${k}` } });
        expect(res.status, path).toBe(200);
        return (({ query_ms: _, ...rest }) => rest)(RankingResponse.strict().parse(await res.json()));
      };
      for (const p of PRESETS) {
        for (const q of ['limit=5', 'offset=3&limit=20', 'limit=4&extra_metrics=brier,sharpe']) {
          const path = `/v1/rankings/preset/${p.slug}?${q}`;
          const before = statements;
          const got = await body(memory.base, path, key);
          expect(statements - before, path).toBe(0);
          expect(got, path).toEqual(await body(base, path, proKey));
        }
      }
      // a narrowed page reads SQL
      const before = statements;
      const path = `/v1/rankings/preset/top-pnl?limit=5&active_within_days=7`;
      expect(await body(memory.base, path, key)).toEqual(await body(base, path, proKey));
      expect(statements - before).toBeGreaterThan(0);
    } finally {
      await memory.close();
    }
  });

  it('publishes an OpenAPI 3.1 document generated from the same schemas', async () => {
    const res = await get('/v1/openapi.json', null);
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { openapi: string; info: { version: string }; paths: Record<string, unknown>; components: { schemas: Record<string, { properties?: Record<string, unknown>; required?: string[] }> } };
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.version).toBe('1.0.0');
    // every route of the spec's auth, trader, ranking and public tables is documented, plus the account area
    const specRoutes = [
      '/v1/auth/siwe/nonce', '/v1/auth/siwe/verify', '/v1/auth/magic/start', '/v1/auth/magic/callback', '/v1/auth/logout', '/v1/auth/logout-all', '/v1/auth/me',
      '/v1/trader/{proxy}/calibration', '/v1/trader/{proxy}/activity', '/v1/trader/{proxy}/copy-fitness', '/v1/trader/{proxy}/positions',
      '/v1/rankings/preset/{slug}', '/v1/rankings/preset/{slug}/snapshot', '/v1/rankings/presets', '/v1/rankings', '/v1/resolutions',
      '/v1/public/event/{slug}', '/v1/public/referrer', '/v1/public/market/{id}', '/v1/public/trader/{proxy}', '/v1/public/trades/top-roi',
      '/v1/public/events/top', '/v1/public/search', '/v1/public/leaderboard', '/v1/public/pulse', '/v1/public/founding',
      '/v1/api-keys', '/v1/api-keys/{id}', '/v1/account/plan', '/v1/auth/email/confirm',
    ];
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(specRoutes));
    // and each documented route answers something other than the unknown-route 404 (the docs describe what is served)
    const walker = (await t.keyFor('desk')).key;
    for (const path of Object.keys(doc.paths)) {
      const concrete = path.replace('{slug}', 'top-pnl').replace('{proxy}', '0x' + '1'.repeat(40)).replace('{id}', 'key_aaaaaaaaaaaaaaaa');
      for (const method of Object.keys(doc.paths[path] as object)) {
        // a WebSocket route (x-websocket) is served by the HTTP server's upgrade handler, not by this REST app (a
        // plain GET is its 404): test/web-api/stream-openapi.test.ts connects to it and checks its documented frames
        if ((doc.paths[path] as Record<string, Record<string, unknown>>)[method]!['x-websocket'] === true) continue;
        const res = await fetch(`${base}${concrete}`, { method: method.toUpperCase(), headers: { authorization: `Bearer ${walker}` }, redirect: 'manual' });
        const b = res.headers.get('content-type')?.includes('json') ? ((await res.json()) as { message?: string }) : {};
        expect(b.message ?? '', `${method} ${path}`).not.toMatch(/^no route/);
      }
    }
    // the response schema lists exactly the spec's ranking-response fields, all required
    const rr = doc.components.schemas.RankingResponse!;
    expect(Object.keys(rr.properties!).sort()).toEqual(Object.keys(RankingResponse.shape).sort());
    expect(new Set(rr.required)).toEqual(new Set(Object.keys(RankingResponse.shape)));
    expect(Object.keys(doc.components.schemas.Error!.properties!).sort()).toEqual(['error', 'issues', 'message', 'reason', 'trace_id']);
  });

  it('custom rankings from the query form', async () => {
    const res = await get(`/v1/rankings?weights=realized_pnl:2,volume:1&gates=trade_count:gte:5&limit=4&sort_by=composite`);
    expect(res.status).toBe(200);
    const body = RankingResponse.parse(await res.json());
    expect(body.rows.length).toBeLessThanOrEqual(4);
    expect(body.normalized_weights).toEqual({ realized_pnl: 2 / 3, volume: 1 / 3 });
    expect(body.explain.gates[0]!.condition).toBe('trade_count >= 5');
  });

  it('documented errors', async () => {
    await expectError(await get(`/v1/rankings/preset/nope`), 404, 'not_found');
    await expectError(await get(`/v1/rankings/preset/top-pnl?limit=0`), 400, 'invalid_request');
    await expectError(await get(`/v1/rankings/preset/top-pnl?surprise=1`), 400, 'invalid_request');
    const bad = await expectError(await get(`/v1/rankings/preset/top-pnl?extra_metrics=volume,nope`), 400, 'invalid_extra_metrics');
    expect(bad.reason).toContain('calibration');
    // extra_metrics is a paid feature: the Free plan gets 403 plan_required, Pro gets the breakdown columns
    await expectError(await get(`/v1/rankings/preset/top-pnl?extra_metrics=volume`), 403, 'plan_required');
    await expectError(await get(`/v1/rankings?weights=volume:1&extra_metrics=volume`), 403, 'plan_required');
    const paid = await get(`/v1/rankings/preset/top-pnl?extra_metrics=volume&limit=3`, proKey);
    expect(paid.status).toBe(200);
    const rows = RankingResponse.parse(await paid.json()).rows;
    expect(rows.length).toBeGreaterThan(0);
    for (const r of rows) expect(Object.keys(r.breakdown)).toContain('volume');
    const unpaid = RankingResponse.parse(await (await get(`/v1/rankings/preset/top-pnl?limit=3`)).json()).rows;
    for (const r of unpaid) expect(Object.keys(r.breakdown)).not.toContain('volume');
    // no credential: 401 auth_required on every ranking route
    for (const path of ['/v1/rankings/presets', '/v1/rankings/preset/top-pnl', '/v1/rankings?weights=volume:1', '/v1/rankings/preset/top-pnl/snapshot'])
      await expectError(await get(path, null), 401, 'auth_required');
    await expectError(await get('/v1/rankings/presets', 'pk_live_' + 'a'.repeat(26)), 401, 'invalid_api_key');
    await expectError(await get('/v1/rankings/presets', 'not-a-key'), 401, 'invalid_api_key');
    await expectError(await get(`/v1/rankings?weights=nope:1`), 400, 'invalid_request');
    await expectError(await get(`/v1/rankings?weights=calibration`), 400, 'invalid_request');
    await expectError(await get(`/v1/rankings/preset/top-pnl/snapshot?date=2026-13-45`), 400, 'invalid_request');
    await expectError(await get(`/v1/rankings/preset/top-pnl/snapshot`), 404, 'not_found');
    await expectError(await get(`/v1/nothing-here`), 404, 'not_found');
  });

  it('serves trader routes and the resolutions feed under real keys, with metrics_full gated by plan', async () => {
    const [w] = await v.rows<{ address: string }>(`SELECT w.address FROM a_wallet_metrics m JOIN wallets w USING (wallet_id) ORDER BY m.trade_count DESC LIMIT 1`);
    const proxy = w!.address.toUpperCase().replace('0X', '0x');
    for (const route of ['calibration', 'positions']) {
      expect((await get(`/v1/trader/${proxy}/${route}`)).status, route).toBe(200);
      await expectError(await get(`/v1/trader/${proxy}/${route}`, null), 401, 'auth_required');
    }
    for (const route of ['activity', 'copy-fitness']) {
      await expectError(await get(`/v1/trader/${proxy}/${route}`), 403, 'plan_required');
      expect((await get(`/v1/trader/${proxy}/${route}`, proKey)).status, route).toBe(200);
    }
    const feed = await get('/v1/resolutions?limit=5');
    expect(feed.status).toBe(200);
    const page = (await feed.json()) as { rows: unknown[]; has_more: boolean; next_cursor: string };
    expect(page.rows.length).toBe(5);
    await expectError(await get('/v1/resolutions', null), 401, 'auth_required');
  });

  it('never a 500 and never a non-error body for any query string', async () => {
    const keys = ['limit', 'offset', 'sort_by', 'active_within_days', 'best_category', 'extra_metrics', 'weights', 'gates', 'date', 'x'];
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('/v1/rankings/preset/top-pnl', '/v1/rankings/preset/sharp-forecasters', '/v1/rankings', '/v1/rankings/preset/whales/snapshot'),
        fc.array(fc.tuple(fc.constantFrom(...keys), fc.oneof(fc.string({ maxLength: 12 }), fc.integer().map(String), fc.constantFrom('volume', 'calibration:1', 'true', '-1', '1e309', 'NaN'))), { maxLength: 4 }),
        async (path, params) => {
          const qs = new URLSearchParams(params).toString();
          const res = await get(`${path}${qs ? `?${qs}` : ''}`);
          expect(res.status).toBeLessThan(500);
          const body = (await res.json()) as Record<string, unknown>;
          if (res.status >= 400) {
            for (const k of Object.keys(body)) expect(ERROR_KEYS.has(k), k).toBe(true);
            expect(typeof body.error).toBe('string');
          }
        },
      ),
      { numRuns: 150 },
    );
  }, 300_000);
});
