/**
 * GET /v1/market/{conditionId}/flow (web-api/markets.ts) on the whole REST app over loopback: a Pro key gets the
 * agent tier's market.flow body, whose per-token buys, sells and fills match independent SQL over the raw fills
 * (each fill gives the taker a leg, and the maker one too); the plan gate (401 without a credential, 403
 * plan_required on Free); every documented 400 / 404 as the spec's error object; and the OpenAPI document lists it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fullBuild } from '../../core/analytics/build.ts';
import { MarketFlow, marketFlow } from '../../core/market.ts';
import { duckRunner } from '../../data/runner.ts';
import { startApp, type TestApp } from '../helpers/app.ts';
import { makeVenue, type TestVenue } from '../helpers/venue.ts';

const AS_OF = new Date('2026-10-31T23:59:59Z');
const ERROR_KEYS = new Set(['error', 'message', 'reason', 'issues', 'trace_id']);
let v: TestVenue;
let app: TestApp;
let cid: string;
let marketId: number;
let pro: string;
let free: string;

beforeAll(async () => {
  v = await makeVenue({ wallets: 1500, days: 20, seed: 11 });
  await fullBuild(duckRunner(v.conn), AS_OF);
  // the market with the most fills in the last day
  const [m] = await v.rows<{ condition_id: string; market_id: number }>(
    `SELECT m.condition_id, m.market_id FROM fills f JOIN markets m USING (market_id)
     WHERE f.ts > TIMESTAMP '2026-10-30 23:59:59' AND f.ts <= TIMESTAMP '2026-10-31 23:59:59' GROUP BY ALL ORDER BY count(*) DESC, 2 LIMIT 1`,
  );
  cid = m!.condition_id;
  marketId = m!.market_id;
  app = await startApp(duckRunner(v.conn), { venueNow: () => AS_OF });
  pro = (await app.keyFor('pro')).key;
  free = (await app.keyFor('free')).key;
}, 300_000);

afterAll(async () => {
  await app?.close();
  await v?.cleanup();
});

const rounded = (x: unknown): unknown => JSON.parse(JSON.stringify(x, (_, v) => (typeof v === 'number' ? Number(v.toFixed(6)) + 0 : v)));
const get = (path: string, key?: string) => fetch(`${app.base}${path}`, { headers: key ? { authorization: `Bearer ${key}` } : {} });

async function expectError(res: Response, status: number, code: string): Promise<Record<string, unknown>> {
  expect(res.status).toBe(status);
  const body = (await res.json()) as Record<string, unknown>;
  for (const k of Object.keys(body)) expect(ERROR_KEYS.has(k), k).toBe(true);
  expect(body.error).toBe(code);
  return body;
}

describe('GET /v1/market/{conditionId}/flow', () => {
  it('gives a Pro key the flow by cohort, matching the raw fills of the window', async () => {
    for (const hours of [1, 24, 168]) {
      const res = await get(`/v1/market/${cid.toUpperCase().replace('0X', '0x')}/flow?window_hours=${hours}`, pro);
      expect(res.status).toBe(200);
      const body = MarketFlow.strict().parse(await res.json());
      // the core's own answer (sums in DuckDB's parallel order: equal to 1e-6)
      expect(rounded(body)).toEqual(rounded(await marketFlow(duckRunner(v.conn), marketId, AS_OF, hours)));
      expect(body.condition_id).toBe(cid);
      expect(body.window_hours).toBe(hours);
      // independent: per token, legs bought and sold straight from fills (the taker at its side; the maker on the other
      // side of a direct match, buying the complement in a mint, selling it in a merge)
      const [raw] = await v.rows<{ fills: number; yes_buy: number; yes_sell: number; no_buy: number; no_sell: number; legs: number }>(
        `WITH f AS (SELECT * FROM fills WHERE market_id = ${marketId} AND ts > TIMESTAMP '2026-10-31 23:59:59' - INTERVAL ${hours} HOUR AND ts <= TIMESTAMP '2026-10-31 23:59:59'),
          legs AS (
            SELECT taker_id AS w, outcome_index AS o, side, size_usdc AS usd FROM f
            UNION ALL
            SELECT maker_id, CASE WHEN match_type = 'direct' THEN outcome_index ELSE 1 - outcome_index END,
              CASE WHEN match_type = 'direct' THEN (CASE side WHEN 'BUY' THEN 'SELL' ELSE 'BUY' END) WHEN match_type = 'mint' THEN 'BUY' ELSE 'SELL' END,
              CASE WHEN match_type = 'direct' THEN size_usdc ELSE (1 - price) * shares END FROM f WHERE maker_id IS NOT NULL)
          SELECT (SELECT count(*) FROM f)::INTEGER AS fills, count(*)::INTEGER AS legs,
            coalesce(sum(usd) FILTER (WHERE o = 0 AND side = 'BUY'), 0) AS yes_buy, coalesce(sum(usd) FILTER (WHERE o = 0 AND side = 'SELL'), 0) AS yes_sell,
            coalesce(sum(usd) FILTER (WHERE o = 1 AND side = 'BUY'), 0) AS no_buy, coalesce(sum(usd) FILTER (WHERE o = 1 AND side = 'SELL'), 0) AS no_sell
          FROM legs`,
      );
      expect(body.window_fills).toBe(raw!.fills);
      expect(body.totals.n_fills).toBe(raw!.legs);
      expect(body.totals.yes.buy_usdc).toBeCloseTo(raw!.yes_buy, 6);
      expect(body.totals.yes.sell_usdc).toBeCloseTo(raw!.yes_sell, 6);
      expect(body.totals.no.buy_usdc).toBeCloseTo(raw!.no_buy, 6);
      expect(body.totals.no.sell_usdc).toBeCloseTo(raw!.no_sell, 6);
      // the cohorts partition the wallets
      expect(body.cohorts.reduce((a, c) => a + c.n_fills, 0)).toBe(body.totals.n_fills);
      if (hours === 24) expect(raw!.fills).toBeGreaterThan(0);
    }
  });

  it('needs a credential, and a plan with metrics_full', async () => {
    await expectError(await get(`/v1/market/${cid}/flow`), 401, 'auth_required');
    const body = await expectError(await get(`/v1/market/${cid}/flow`, free), 403, 'plan_required');
    expect(String(body.message)).toMatch(/metrics_full|plan/i);
  });

  it('answers bad input with the error object', async () => {
    await expectError(await get('/v1/market/0x1234/flow', pro), 400, 'invalid_request');
    await expectError(await get(`/v1/market/0x${'ab'.repeat(32)}/flow`, pro), 404, 'not_found');
    await expectError(await get(`/v1/market/${cid}/flow?window_hours=0`, pro), 400, 'invalid_request');
    await expectError(await get(`/v1/market/${cid}/flow?window_hours=721`, pro), 400, 'invalid_request');
    await expectError(await get(`/v1/market/${cid}/flow?window_hours=abc`, pro), 400, 'invalid_request');
    await expectError(await get(`/v1/market/${cid}/flow?since=1`, pro), 400, 'invalid_request');
  });

  it('is in the OpenAPI document', async () => {
    const doc = (await (await get('/v1/openapi.json')).json()) as { paths: Record<string, { get?: { responses: Record<string, unknown> } }>; components: { schemas: Record<string, unknown> } };
    expect(Object.keys(doc.paths['/v1/market/{conditionId}/flow']!.get!.responses).sort()).toEqual(['200', '400', '401', '403', '404', '500']);
    expect(doc.components.schemas.MarketFlow).toBeTruthy();
  });
});
