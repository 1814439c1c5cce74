/**
 * Trader routes (web-api/traders.ts) over a real HTTP server on loopback, on a generated venue with one market
 * voided (INVALID) on top: strict success shapes, figures against independent SQL over the raw venue tables
 * (calibration inputs per scope, every position's shares, redeemed shares, P&L and status label by the spec's
 * table), cursor paging that visits each row once, plan gating, documented 400/401/403/404 errors as the exact
 * error object, and a fuzz over paths, queries and plans that must never produce a 500.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fullBuild } from '../../core/analytics/build.ts';
import type { PlanId } from '../../core/plans.ts';
import { CopyFitness, TraderActivity, TraderCalibration, TraderCalibrationBin, TraderPosition, TraderPositions } from '../../core/trader/index.ts';
import { duckRunner } from '../../data/runner.ts';
import { assignTraceId, errorHandler, notFound } from '../../web-api/errors.ts';
import { principalFor } from '../../web-api/principal.ts';
import { traderOpenApiPaths, traderOpenApiSchemas, traderRouter } from '../../web-api/traders.ts';
import { makeVenue, type TestVenue } from '../helpers/venue.ts';
import { venueInsert } from '../../data/schema.ts';

const NOW = new Date('2026-11-01T00:00:00Z');
const lit = (d: Date) => `make_timestamp(${d.getTime() * 1000}::BIGINT)`;
const T = lit(NOW);
/** the routes' clock (moved forward in one test so that trailing scopes cut the sample) */
let clock = NOW;
const VOID_AT = '2026-10-31 12:00:00';
const UNKNOWN = `0x${'ab'.repeat(20)}`;
const ERROR_KEYS = new Set(['error', 'message', 'reason', 'issues', 'trace_id']);

let v: TestVenue;
let server: Server;
let base: string;
/** wallets picked for their positions: most positions; one holding the voided market; one with a +/-0.01 band position; one REDEEMABLE */
let W: { big: string; void: string; band: string | null; redeem: string | null; active: string };
let voidCondition: string;

type Plan = PlanId | 'none';
const get = (path: string, plan: Plan = 'free') => fetch(`${base}${path}`, { headers: { 'x-test-plan': plan } });

async function expectError(res: Response, status: number, code: string) {
  expect(res.status).toBe(status);
  const body = (await res.json()) as Record<string, unknown>;
  for (const k of Object.keys(body)) expect(ERROR_KEYS.has(k), k).toBe(true);
  expect(body.error).toBe(code);
  expect(typeof body.trace_id).toBe('string');
  expect(res.headers.get('x-trace-id')).toBe(body.trace_id);
  return body;
}

const StrictCalibration = TraderCalibration.extend({ bins: TraderCalibrationBin.strict().array().length(10) }).strict();
const StrictPositions = TraderPositions.extend({ rows: TraderPosition.strict().array() }).strict();

beforeAll(async () => {
  v = await makeVenue({ wallets: 3000, days: 30, seed: 3 });
  // void one unresolved market whose trading ended before VOID_AT (the generated venue has no INVALID market)
  const [vm] = await v.rows<{ market_id: number; condition_id: string }>(
    `SELECT f.market_id, m.condition_id FROM fills f JOIN markets m USING (market_id)
     WHERE f.market_id NOT IN (SELECT market_id FROM resolutions)
     GROUP BY ALL HAVING max(f.ts) < TIMESTAMP '${VOID_AT}' ORDER BY count(DISTINCT f.taker_id) DESC, f.market_id LIMIT 1`,
  );
  voidCondition = vm!.condition_id;
  await v.conn.run(`${venueInsert('resolutions')} VALUES (${vm!.market_id}, 'INVALID', -1, [1, 1]::INTEGER[], 0.5, 0.5, 2, TIMESTAMP '${VOID_AT}', '0x${'e'.repeat(64)}')`);
  await fullBuild(duckRunner(v.conn), new Date('2026-10-31T23:59:59Z'));

  const one = async (sql: string) => ((await v.rows<{ a: string }>(sql))[0]?.a ?? null) as string | null;
  W = {
    big: (await one(`SELECT w.address AS a FROM fill_legs l JOIN wallets w USING (wallet_id) GROUP BY 1 ORDER BY count(DISTINCT (market_id, outcome_index)) DESC, 1 LIMIT 1`))!,
    void: (await one(`SELECT w.address AS a FROM fill_legs l JOIN wallets w USING (wallet_id) WHERE l.market_id = ${vm!.market_id} GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1`))!,
    // the build only picks the wallets; every figure checked below comes from the routes and raw-table SQL
    band: await one(`SELECT w.address AS a FROM a_positions p JOIN wallets w USING (wallet_id) WHERE p.resolved AND abs(p.realized_pnl) <= 0.01 AND p.status <> 'REDEEMABLE' ORDER BY p.wallet_id LIMIT 1`),
    redeem: await one(`SELECT w.address AS a FROM a_positions p JOIN wallets w USING (wallet_id) WHERE p.status = 'REDEEMABLE' AND NOT p.is_void ORDER BY p.wallet_id LIMIT 1`),
    active: (await one(`SELECT w.address AS a FROM fill_legs l JOIN wallets w USING (wallet_id) GROUP BY 1 HAVING count(*) BETWEEN 250 AND 700 ORDER BY count(*) DESC, 1 LIMIT 1`))!,
  };

  const app = express();
  app.set('query parser', 'simple');
  app.use(assignTraceId);
  app.use((req, res, next) => {
    const plan = String(req.headers['x-test-plan'] ?? 'none');
    if (plan === 'free' || plan === 'pro' || plan === 'quant' || plan === 'desk') res.locals.principal = principalFor('api_key', 'u1', plan);
    next();
  });
  app.use('/v1/trader', traderRouter({ db: duckRunner(v.conn), now: () => clock }));
  app.use(notFound);
  app.use(errorHandler);
  server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}, 600_000);
afterAll(async () => {
  await new Promise((r) => server?.close(r));
  await v?.cleanup();
});

// ---------------------------------------------------------------------------------------------------------------
// Independent SQL over the raw venue tables
// ---------------------------------------------------------------------------------------------------------------

/** Calibration inputs: per token the wallet bought, in a market resolved YES/NO by T: share-weighted buy price, won. */
async function calibrationRef(address: string, scopeSql = 'true', at = T) {
  return v.rows<{ p: number; o: number; market_id: number }>(
    `WITH b AS (
       SELECT l.market_id, l.outcome_index, round(sum(l.price * l.shares) / sum(l.shares), 9) AS p
       FROM fill_legs l JOIN wallets w USING (wallet_id)
       WHERE w.address = '${address}' AND l.side = 'BUY' AND l.ts <= ${at} GROUP BY ALL)
     SELECT b.market_id, b.p, (b.outcome_index = r.winner_index)::INTEGER AS o
     FROM b JOIN resolutions r USING (market_id) JOIN markets m USING (market_id)
     WHERE r.resolved_at <= ${at} AND r.winner IN ('YES', 'NO') AND ${scopeSql}`,
  );
}

interface PosRef {
  condition_id: string;
  outcome: 'YES' | 'NO';
  held: number;
  redeemed: number;
  n_inv: number;
  cash: number | null;
  winner: string | null;
  winner_index: number | null;
  payout: number | null;
}
/** Every position (token the wallet touched by a fill or a non-redeem inventory leg) with shares, redemptions, cash flow and the resolution. */
async function positionsRef(address: string): Promise<Map<string, PosRef>> {
  const rows = await v.rows<PosRef & { outcome_index: number }>(
    `WITH wal AS (SELECT wallet_id FROM wallets WHERE address = '${address}'),
     f AS (
       SELECT market_id, outcome_index, sum(CASE side WHEN 'BUY' THEN shares ELSE -shares END) AS q,
         sum(CASE side WHEN 'SELL' THEN price * shares - fee_usdc ELSE -(price * shares + fee_usdc) END) AS cash
       FROM fill_legs WHERE wallet_id = (SELECT wallet_id FROM wal) AND ts <= ${T} GROUP BY ALL),
     i AS (
       SELECT l.market_id, l.outcome_index,
         coalesce(sum(l.shares_delta) FILTER (WHERE e.kind <> 'REDEEM'), 0) AS q,
         coalesce(-sum(l.shares_delta) FILTER (WHERE e.kind = 'REDEEM'), 0) AS redeemed,
         count(*) FILTER (WHERE e.kind <> 'REDEEM') AS n_inv
       FROM inventory_legs l JOIN inventory_events e USING (tx_hash, log_index)
       WHERE l.wallet_id = (SELECT wallet_id FROM wal) AND e.ts <= ${T} GROUP BY ALL),
     k AS (SELECT market_id, outcome_index FROM f UNION SELECT market_id, outcome_index FROM i WHERE n_inv > 0)
     SELECT m.condition_id, k.outcome_index, coalesce(f.q, 0) + coalesce(i.q, 0) AS held, coalesce(i.redeemed, 0) AS redeemed,
       coalesce(i.n_inv, 0) AS n_inv, f.cash, r.winner, r.winner_index,
       CASE WHEN r.market_id IS NULL THEN NULL WHEN k.outcome_index = 0 THEN r.payout_yes ELSE r.payout_no END AS payout
     FROM k JOIN markets m USING (market_id) LEFT JOIN f USING (market_id, outcome_index) LEFT JOIN i USING (market_id, outcome_index)
     LEFT JOIN (SELECT * FROM resolutions WHERE resolved_at <= ${T}) r USING (market_id)`,
  );
  return new Map(rows.map((r) => [`${r.condition_id}:${r.outcome_index === 0 ? 'YES' : 'NO'}`, { ...r, outcome: r.outcome_index === 0 ? 'YES' : 'NO' }]));
}

/** All pages of a feed route; asserts each page's shape and that pages do not overlap. */
async function allPositions(address: string, query = '', limit = 7, plan: Plan = 'free') {
  const rows: TraderPosition[] = [];
  let cursor: string | null = null;
  let total = -1;
  for (let guard = 0; guard < 1000; guard++) {
    const res = await get(`/v1/trader/${address}/positions?limit=${limit}${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, plan);
    expect(res.status).toBe(200);
    const page = StrictPositions.parse(await res.json());
    expect(page.rows.length).toBeLessThanOrEqual(limit);
    if (total >= 0) expect(page.total_rows).toBe(total);
    total = page.total_rows;
    rows.push(...page.rows);
    cursor = page.next_cursor;
    if (!cursor) break;
  }
  return { rows, total };
}

const keyOf = (r: { condition_id: string; outcome: string }) => `${r.condition_id}:${r.outcome}`;

/** The spec's label table applied to a resolved position's final P&L. */
function specLabel(pnl: number, outcome: 'YES' | 'NO', winner: string | null): 'WON' | 'LOST' | 'VOID' {
  if (pnl > 0.01) return 'WON';
  if (pnl < -0.01) return 'LOST';
  if (winner !== 'YES' && winner !== 'NO') return 'VOID';
  return winner === outcome ? 'WON' : 'LOST';
}

// ---------------------------------------------------------------------------------------------------------------

describe('authentication and plans', () => {
  it('401 auth_required without a session or key, on every route (before any other check)', async () => {
    for (const path of ['calibration', 'positions', 'activity', 'copy-fitness']) {
      await expectError(await get(`/v1/trader/${W.big}/${path}`, 'none'), 401, 'auth_required');
      await expectError(await get(`/v1/trader/nope/${path}?bogus=1`, 'none'), 401, 'auth_required');
    }
  });

  it('activity and copy-fitness need metrics_full: 403 plan_required on Free, 200 on paid plans', async () => {
    for (const path of ['activity', 'copy-fitness']) {
      const body = await expectError(await get(`/v1/trader/${W.big}/${path}`, 'free'), 403, 'plan_required');
      expect(body.reason).toContain('metrics_full');
      for (const plan of ['pro', 'quant', 'desk'] as const) expect((await get(`/v1/trader/${W.big}/${path}`, plan)).status).toBe(200);
    }
    // calibration and positions are open to every signed-in plan
    expect((await get(`/v1/trader/${W.big}/calibration`, 'free')).status).toBe(200);
    expect((await get(`/v1/trader/${W.big}/positions`, 'free')).status).toBe(200);
  });
});

describe('GET /v1/trader/{proxy}/calibration', () => {
  it('spec record (10 bins, n_total) plus the documented summary; figures match independent SQL per scope', async () => {
    const [cat] = await v.rows<{ category: string }>(
      `SELECT m.category FROM fill_legs l JOIN wallets w USING (wallet_id) JOIN markets m USING (market_id) JOIN resolutions r USING (market_id)
       WHERE w.address = '${W.big}' AND l.side = 'BUY' GROUP BY 1 ORDER BY count(*) DESC LIMIT 1`,
    );
    const LATER = new Date('2026-11-20T00:00:00Z');
    const L = lit(LATER);
    const scopes: [string, string, Date][] = [];
    for (const [at, atSql] of [[NOW, T], [LATER, L]] as const) {
      scopes.push(
        ['all', 'true', at],
        ['30d', `r.resolved_at > ${atSql} - INTERVAL 30 DAY`, at],
        ['90d', `r.resolved_at > ${atSql} - INTERVAL 90 DAY`, at],
        [`category:${cat!.category}`, `m.category = '${cat!.category}'`, at],
        ['category:nothing_here', 'false', at],
      );
    }
    const totals: Record<string, number> = {};
    try {
      for (const [scope, sql, at] of scopes) {
        clock = at;
        const res = await get(`/v1/trader/${W.big.toUpperCase().replace('0X', '0x')}/calibration?scope=${encodeURIComponent(scope)}`);
        expect(res.status, scope).toBe(200);
        const body = StrictCalibration.parse(await res.json());
        expect(body.proxy_wallet).toBe(W.big);
        expect(body.scope).toBe(scope);
        expect(body.as_of).toBe(at.toISOString());
        const ref = await calibrationRef(W.big, sql, lit(at));
        expect(body.n_total, scope).toBe(ref.length);
        expect(body.bins.map((b) => b.bin_idx)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
        expect(body.bins.reduce((s, b) => s + b.n, 0)).toBe(body.n_total);
        for (const b of body.bins) {
          const inBin = ref.filter((r) => Math.min(9, Math.max(0, Math.floor(r.p * 10 + 1e-9))) === b.bin_idx);
          expect(b.n, `${scope} bin ${b.bin_idx}`).toBe(inBin.length);
          expect(b.bin_label).toBe(`${b.bin_idx * 10}-${(b.bin_idx + 1) * 10}%`);
          if (inBin.length === 0) {
            expect(b.predicted_mean).toBeNull();
            expect(b.observed_rate).toBeNull();
          } else {
            expect(b.predicted_mean!).toBeCloseTo(inBin.reduce((s, r) => s + r.p, 0) / inBin.length, 9);
            expect(b.observed_rate!).toBeCloseTo(inBin.reduce((s, r) => s + r.o, 0) / inBin.length, 12);
          }
        }
        const markets = new Set(ref.map((r) => r.market_id)).size;
        expect(body.n_markets).toBe(markets);
        expect(body.ranked).toBe(markets >= 30);
        if (ref.length) {
          expect(body.brier!).toBeCloseTo(ref.reduce((s, r) => s + (r.p - r.o) ** 2, 0) / ref.length, 9);
          expect(body.calibration_excess!).toBeCloseTo(ref.reduce((s, r) => s + (r.p - r.o), 0) / ref.length, 9);
        } else {
          // unmeasured is null, never 0
          expect(body.brier).toBeNull();
          expect(body.calibration_excess).toBeNull();
          expect(body.calibration_excess_z).toBeNull();
        }
        totals[`${scope}@${at.toISOString()}`] = body.n_total;
      }
    } finally {
      clock = NOW;
    }
    const allNow = totals[`all@${NOW.toISOString()}`]!;
    expect(allNow).toBeGreaterThan(0);
    // the trailing window is not vacuous: 20 days after the venue's end it drops the older resolutions
    expect(totals[`30d@${LATER.toISOString()}`]!).toBeLessThan(totals[`all@${LATER.toISOString()}`]!);
    expect(totals[`30d@${LATER.toISOString()}`]!).toBeGreaterThan(0);
    expect(totals[`category:${cat!.category}@${NOW.toISOString()}`]!).toBeLessThan(allNow);
    // scope is case-insensitive and trimmed
    const upper = StrictCalibration.parse(await (await get(`/v1/trader/${W.big}/calibration?scope=%2030D%20`)).json());
    expect(upper.scope).toBe('30d');
    expect(upper.n_total).toBe(totals[`30d@${NOW.toISOString()}`]);
  });

  it('the voided market never enters calibration', async () => {
    const body = StrictCalibration.parse(await (await get(`/v1/trader/${W.void}/calibration`)).json());
    expect(body.n_total).toBe((await calibrationRef(W.void)).length);
  });
});

describe('GET /v1/trader/{proxy}/positions', () => {
  async function checkWallet(address: string) {
    const ref = await positionsRef(address);
    const { rows, total } = await allPositions(address);
    // every position exactly once across pages
    expect(rows).toHaveLength(total);
    expect(new Set(rows.map(keyOf)).size).toBe(rows.length);
    expect(new Set(rows.map(keyOf))).toEqual(new Set(ref.keys()));
    // newest activity first
    for (let i = 1; i < rows.length; i++) expect(rows[i]!.last_activity_at <= rows[i - 1]!.last_activity_at).toBe(true);
    let band = 0;
    let redeemable = 0;
    let pnlChecked = 0;
    for (const r of rows) {
      const x = ref.get(keyOf(r))!;
      const tag = `${address} ${keyOf(r)}`;
      expect(r.shares, tag).toBeCloseTo(Math.max(0, x.held), 5);
      expect(r.redeemed_shares, tag).toBeCloseTo(x.redeemed, 5);
      if (x.payout === null) {
        expect(r.status, tag).toBe('OPEN');
        expect(r.winner_outcome, tag).toBeNull();
        expect(r.pnl_label, tag).toBeNull();
        expect(r.resolved_at, tag).toBeNull();
        continue;
      }
      expect(r.winner_outcome, tag).toBe(x.winner);
      // P&L from raw cash flows when the position never touched inventory: proceeds - costs + payout of shares held
      let pnl = r.realized_pnl;
      if (x.n_inv === 0 && x.cash !== null) {
        pnl = x.cash + Math.max(0, x.held) * x.payout;
        expect(r.realized_pnl, tag).toBeCloseTo(pnl, 4);
        pnlChecked++;
        if (Math.abs(Math.abs(pnl) - 0.01) < 1e-4) continue; // too close to the band edge to call
      }
      // the demo's markets are Yes / No: the outcome's name is the index's
      expect(r.outcome, tag).toBe(r.outcome_index === 0 ? 'YES' : 'NO');
      const label = specLabel(pnl, r.outcome_index === 0 ? 'YES' : 'NO', x.winner);
      expect(r.pnl_label, tag).toBe(label);
      if (Math.abs(pnl) <= 0.01) band++;
      const unclaimed = x.payout > 0 && x.held - x.redeemed > 1e-6;
      if (unclaimed) {
        // winnings in the holder's favour and not yet claimed: REDEEMABLE, whatever the P&L
        expect(r.status, tag).toBe('REDEEMABLE');
        redeemable++;
      } else expect(r.status, tag).toBe(label);
      // a voided market never reads WON or LOST by side: inside the band it is VOID
      if (x.winner === 'INVALID' && Math.abs(pnl) <= 0.01 && !unclaimed) expect(r.status, tag).toBe('VOID');
    }
    return { rows, band, redeemable, pnlChecked };
  }

  it('statuses follow the spec table (0.01 band, REDEEMABLE), P&L and shares match raw-table SQL, pages visit each position once', async () => {
    const big = await checkWallet(W.big);
    expect(big.rows.length).toBeGreaterThan(50);
    expect(big.pnlChecked).toBeGreaterThan(20);
    const voided = await checkWallet(W.void);
    const vrows = voided.rows.filter((r) => r.condition_id === voidCondition);
    expect(vrows.length).toBeGreaterThan(0);
    for (const r of vrows) expect(r.winner_outcome).toBe('INVALID');
    let band = big.band + voided.band;
    let redeemable = big.redeemable + voided.redeemable;
    if (W.band) band += (await checkWallet(W.band)).band;
    if (W.redeem) redeemable += (await checkWallet(W.redeem)).redeemable;
    // the generated venue has both cases; the checks above are not vacuous
    expect(W.band).not.toBeNull();
    expect(W.redeem).not.toBeNull();
    expect(band).toBeGreaterThan(0);
    expect(redeemable).toBeGreaterThan(0);
  });

  it('status filter (list, repeated or comma-separated, any case); page sizes 1..200 concatenate to the same feed', async () => {
    const all = await allPositions(W.big, '', 200);
    const wonLost = await allPositions(W.big, '&status=won,LOST', 11);
    expect(wonLost.rows.map(keyOf)).toEqual(all.rows.filter((r) => r.status === 'WON' || r.status === 'LOST').map(keyOf));
    const repeated = await allPositions(W.big, '&status=WON&status=LOST', 50);
    expect(repeated.rows.map(keyOf)).toEqual(wonLost.rows.map(keyOf));
    const open = await allPositions(W.big, '&status=OPEN', 200);
    expect(open.total).toBe(all.rows.filter((r) => r.status === 'OPEN').length);
    for (const limit of [4, 64]) {
      const paged = await allPositions(W.big, '', limit);
      expect(paged.rows.map(keyOf)).toEqual(all.rows.map(keyOf));
    }
    const few = await allPositions(W.big, '&status=redeemable,void', 200);
    const ones = await allPositions(W.big, '&status=redeemable,void', 1);
    expect(ones.rows.map(keyOf)).toEqual(few.rows.map(keyOf));
    // default page size 50
    const first = StrictPositions.parse(await (await get(`/v1/trader/${W.big}/positions`)).json());
    expect(first.rows).toHaveLength(Math.min(50, all.total));
  });
});

describe('GET /v1/trader/{proxy}/activity', () => {
  it('every trade leg and inventory event exactly once across pages (raw-table counts); type filter', async () => {
    const [c] = await v.rows<{ legs: number; inv: number; redeems: number }>(
      `SELECT (SELECT count(*) FROM fill_legs l JOIN wallets w USING (wallet_id) WHERE w.address = '${W.active}' AND l.ts <= ${T}) AS legs,
        (SELECT count(*) FROM inventory_events e JOIN wallets w USING (wallet_id) WHERE w.address = '${W.active}' AND e.ts <= ${T}) AS inv,
        (SELECT count(*) FROM inventory_events e JOIN wallets w USING (wallet_id) WHERE w.address = '${W.active}' AND e.ts <= ${T} AND e.kind = 'REDEEM') AS redeems`,
    );
    const page = async (query: string) => {
      const items: TraderActivity['items'] = [];
      let cursor: string | null = null;
      for (let guard = 0; guard < 100; guard++) {
        const res = await get(`/v1/trader/${W.active}/activity?${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, 'pro');
        expect(res.status).toBe(200);
        const body = TraderActivity.strict().parse(await res.json());
        expect(body.proxy_wallet).toBe(W.active);
        items.push(...body.items);
        cursor = body.next_cursor;
        if (!cursor) break;
      }
      return items;
    };
    const items = await page('limit=200');
    expect(items.length).toBe(c!.legs + c!.inv);
    const ids = items.map((i) => `${i.type}:${i.tx_hash}:${i.log_index}:${i.type === 'trade' ? i.role : ''}`);
    expect(new Set(ids).size).toBe(items.length);
    for (let i = 1; i < items.length; i++) expect(items[i]!.ts <= items[i - 1]!.ts).toBe(true);
    const redeems = await page('limit=50&types=redeem');
    expect(redeems.length).toBe(c!.redeems);
    expect(redeems.every((i) => i.type === 'redeem')).toBe(true);
  });
});

describe('GET /v1/trader/{proxy}/copy-fitness', () => {
  it('the bundle in its strict shape; follower_budget_usd is applied', async () => {
    const def = CopyFitness.strict().parse(await (await get(`/v1/trader/${W.big}/copy-fitness`, 'pro')).json());
    expect(def.proxy_wallet).toBe(W.big);
    expect(def.budget_fit.follower_budget_usd).toBe(1000);
    const big = CopyFitness.strict().parse(await (await get(`/v1/trader/${W.big}/copy-fitness?follower_budget_usd=25000`, 'pro')).json());
    expect(big.budget_fit.follower_budget_usd).toBe(25000);
    const [n] = await v.rows<{ n: number }>(`SELECT count(*) AS n FROM fill_legs l JOIN wallets w USING (wallet_id) WHERE w.address = '${W.big}' AND l.ts <= ${T}`);
    expect(big.sample.n_fills).toBe(n!.n);
    if (def.budget_fit.scale_factor !== null) expect(big.budget_fit.scale_factor!).toBeCloseTo(def.budget_fit.scale_factor * 25, 9);
  });
});

describe('documented errors', () => {
  it('400 invalid_request for a malformed proxy or query; 404 not_found for an unknown wallet', async () => {
    for (const path of ['calibration', 'positions', 'activity', 'copy-fitness']) {
      for (const bad of ['0x123', 'abc', `0x${'g'.repeat(40)}`, `0x${'a'.repeat(41)}`, `${'a'.repeat(42)}`, `0X${'a'.repeat(40)}`]) {
        const body = await expectError(await get(`/v1/trader/${bad}/${path}`, 'pro'), 400, 'invalid_request');
        expect(JSON.stringify(body.issues)).toContain('proxy');
      }
      await expectError(await get(`/v1/trader/${UNKNOWN}/${path}`, 'pro'), 404, 'not_found');
      await expectError(await get(`/v1/trader/${UNKNOWN.toUpperCase().replace('0X', '0x')}/${path}`, 'pro'), 404, 'not_found');
      await expectError(await get(`/v1/trader/${W.big}/${path}?surprise=1`, 'pro'), 400, 'invalid_request');
    }
    const bad: [string, string][] = [
      ['calibration', 'scope=7d'],
      ['calibration', 'scope='],
      ['calibration', 'scope=category:'],
      ['calibration', 'scope=all&scope=30d'],
      ['positions', 'limit=0'],
      ['positions', 'limit=201'],
      ['positions', 'limit=abc'],
      ['positions', 'status=FOO'],
      ['positions', 'status='],
      ['positions', 'cursor=garbage'],
      ['activity', 'types=trade,nope'],
      ['activity', 'limit=-3'],
      ['activity', 'cursor=e30'],
      ['copy-fitness', 'follower_budget_usd=0'],
      ['copy-fitness', 'follower_budget_usd=-5'],
      ['copy-fitness', 'follower_budget_usd=abc'],
      ['copy-fitness', 'follower_budget_usd=1e10'],
      ['copy-fitness', 'followerBudgetUsd=100'],
    ];
    for (const [path, q] of bad) await expectError(await get(`/v1/trader/${W.big}/${path}?${q}`, 'pro'), 400, 'invalid_request');
    // a cursor of one feed is refused by the other
    const act = TraderActivity.parse(await (await get(`/v1/trader/${W.big}/activity?limit=1`, 'pro')).json());
    await expectError(await get(`/v1/trader/${W.big}/positions?cursor=${act.next_cursor}`, 'pro'), 400, 'invalid_request');
    await expectError(await get(`/v1/trader/${W.big}`, 'pro'), 404, 'not_found');
    await expectError(await get(`/v1/trader/${W.big}/playbook`, 'pro'), 404, 'not_found');
  });

  it('fuzz: never a 500; every non-2xx body is exactly the error object; every 2xx the strict shape', async () => {
    const routes = ['calibration', 'positions', 'activity', 'copy-fitness'] as const;
    const shapes = { calibration: StrictCalibration, positions: StrictPositions, activity: TraderActivity.strict(), 'copy-fitness': CopyFitness.strict() };
    // the known and edge-case proxies weigh more: the success paths are a few percent of the draws, and an unweighted
    // draw of 250 sometimes reached 200 fewer than 4 times (a red CI with nothing broken)
    const proxy = fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom(W.big, W.void, W.active, UNKNOWN, W.big.toUpperCase().replace('0X', '0x'), '0x', '%20', '..', 'null') },
      fc.string({ unit: fc.constantFrom(...'0123456789abcdefABCDEF'), minLength: 38, maxLength: 42 }).map((h) => `0x${h}`),
      fc.string({ maxLength: 44 }).map(encodeURIComponent),
    );
    const key = fc.constantFrom('scope', 'status', 'limit', 'cursor', 'types', 'follower_budget_usd', 'x', 'scope[]');
    const value = fc.oneof(
      fc.string({ maxLength: 16 }),
      fc.integer({ min: -5, max: 300 }).map(String),
      fc.constantFrom('all', '30d', 'category:crypto', 'CATEGORY:Sports', 'WON,LOST', 'redeemable', 'trade,redeem', 'e30', '1e309', 'NaN', '1e-300', 'eyJ2IjoxfQ', '0.5'),
    );
    const statuses = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...routes), proxy, fc.oneof(fc.constant([] as [string, string][]), fc.array(fc.tuple(key, value), { maxLength: 3 })), fc.constantFrom<Plan>('none', 'free', 'pro'), async (route, p, params, plan) => {
        const qs = new URLSearchParams(params).toString();
        const res = await get(`/v1/trader/${p}/${route}${qs ? `?${qs}` : ''}`, plan);
        expect(res.status, `${route} ${p} ${qs} ${plan}`).toBeLessThan(500);
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        const body = (await res.json()) as Record<string, unknown>;
        if (res.status >= 400) {
          for (const k of Object.keys(body)) expect(ERROR_KEYS.has(k), k).toBe(true);
          expect(typeof body.error).toBe('string');
          expect(typeof body.trace_id).toBe('string');
        } else {
          expect(res.status).toBe(200);
          shapes[route].parse(body);
        }
      }),
      { numRuns: 250 },
    );
    // the fuzz reaches the success paths and every documented error
    for (const code of [200, 400, 401, 403, 404]) expect(statuses.get(code) ?? 0, `status ${code}`).toBeGreaterThan(3);
  }, 170_000);
});

describe('OpenAPI pieces', () => {
  it('five path items and their component schemas, generated from the response schemas', () => {
    const paths = traderOpenApiPaths() as Record<string, { get: { parameters: { name: string }[]; responses: Record<string, unknown> } }>;
    expect(Object.keys(paths).sort()).toEqual(['/v1/trader/{proxy}/activity', '/v1/trader/{proxy}/calibration', '/v1/trader/{proxy}/copy-fitness', '/v1/trader/{proxy}/performance', '/v1/trader/{proxy}/positions']);
    expect(Object.keys(paths['/v1/trader/{proxy}/activity']!.get.responses)).toEqual(expect.arrayContaining(['200', '400', '401', '403', '404']));
    expect(paths['/v1/trader/{proxy}/positions']!.get.parameters.map((p) => p.name)).toEqual(['proxy', 'status', 'limit', 'cursor']);
    const schemas = traderOpenApiSchemas() as Record<string, { properties: Record<string, unknown>; required: string[] }>;
    expect(Object.keys(schemas).sort()).toEqual(['TraderActivity', 'TraderCalibration', 'TraderCopyFitness', 'TraderPerformance', 'TraderPositions']);
    const cal = schemas.TraderCalibration!;
    expect(Object.keys(cal.properties).sort()).toEqual(Object.keys(TraderCalibration.shape).sort());
    for (const k of ['proxy_wallet', 'bins', 'n_total']) expect(cal.required).toContain(k);
  });
});
