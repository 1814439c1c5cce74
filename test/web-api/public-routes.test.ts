/**
 * The public namespace /v1/public/* over a real HTTP server on loopback: every success body strictly against the
 * spec's field tables (schemas written here from the spec, independent of core/public/; numbers the venue cannot
 * know are null per docs/api-public.md), values against independent SQL over the venue, masked identity (no wallet
 * address in list bodies), the documented errors as the exact error object, cache and CORS headers, the OpenAPI
 * fragments, and a fuzz of paths and query strings that must never produce a 500.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import fc from 'fast-check';
import { getAddress } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { fullBuild } from '../../core/analytics/build.ts';
import { PRESETS } from '../../core/rankings.ts';
import { PUBLIC_BOARD, TidIndex } from '../../core/public/index.ts';
import { tsLiteral, type ColumnarRunner, type QueryRunner } from '../../core/query.ts';
import { traderTid } from '../../core/trader/index.ts';
import { duckRunner } from '../../data/runner.ts';
import type { AccountDirectory, FoundingStatus, ProxyClaim } from '../../web-api/directory.ts';
import { assignTraceId, errorHandler, notFound } from '../../web-api/errors.ts';
import { PUBLIC_CACHE_SECONDS, publicOpenApiPaths, publicOpenApiSchemas, publicRouter } from '../../web-api/public.ts';
import { makeVenue, type TestVenue } from '../helpers/venue.ts';

const AS_OF = new Date('2026-10-31T23:59:59Z');
const NOW = new Date('2026-11-01T00:00:00Z');
const T = tsLiteral(NOW);
const TID_KEY = 'public-routes-test-key-0123456789';
/** a wallet row with no activity at all (the trader teaser's empty variant) */
const IDLE = '0x00000000000000000000000000000000000000aa';

let v: TestVenue;
let db: ColumnarRunner;
let server: Server;
let base: string;
let addresses: string[] = [];
let claimed: { founding: string; plain: string };

const FOUNDING: FoundingStatus = { spots_total: 500, spots_claimed: 137, spots_remaining: 363, open: true };
const REFERRERS: Record<string, { display_name: string | null; x_username: string | null }> = {
  FRIEND42: { display_name: 'Alice Liddell', x_username: 'alice_x' },
  quiet_1: { display_name: null, x_username: null },
};

/** A small in-memory AccountDirectory (the account store implements the same interface). */
function testDirectory(claims: Map<string, ProxyClaim>): AccountDirectory {
  return {
    referrer: async (code) => REFERRERS[code] ?? null,
    claimsFor: async (list) => new Map(list.filter((a) => claims.has(a)).map((a) => [a, claims.get(a)!])),
    founding: async () => FOUNDING,
  };
}

beforeAll(async () => {
  v = await makeVenue({ wallets: 3000, days: 30, seed: 3 });
  db = duckRunner(v.conn);
  await fullBuild(db, AS_OF);
  await db.run(`INSERT INTO wallets VALUES ((SELECT max(wallet_id) + 1 FROM wallets), '${IDLE}', NULL, 'Idle-Wallet', NULL, false)`);
  addresses = (await db.all<{ address: string }>(`SELECT address FROM wallets`)).map((r) => r.address.toLowerCase());
  const [top] = await db.all<{ address: string }>(`SELECT address FROM a_board WHERE preset = '${PUBLIC_BOARD}' AND rank = 2`);
  const [other] = await db.all<{ address: string }>(`SELECT address FROM a_rank_base ORDER BY trade_count DESC, wallet_id LIMIT 1 OFFSET 7`);
  claimed = { founding: top!.address, plain: other!.address };
  const claims = new Map<string, ProxyClaim>([
    [claimed.founding, { claimed: true, founding: true, eoa: '0x1111111111111111111111111111111111111111', x_username: 'sharp_one', display_name: 'Sharp One' }],
    [claimed.plain, { claimed: true, founding: false, eoa: null, x_username: null, display_name: null }],
  ]);
  const app = express();
  app.set('query parser', 'simple');
  app.use(assignTraceId);
  app.use('/v1/public', publicRouter({ db, now: () => NOW, tidKey: TID_KEY, directory: testDirectory(claims) }));
  app.use(notFound);
  app.use(errorHandler);
  server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/public`;
}, 600_000);
afterAll(async () => {
  await new Promise((r) => server?.close(r));
  await v?.cleanup();
});

// ---------------------------------------------------------------------------------------------------------------
// The spec's field tables (nullable numbers: docs/api-public.md "Fields the venue lacks")
// ---------------------------------------------------------------------------------------------------------------

const S = z.string();
const N = z.number();
const I = z.number().int();
const B = z.boolean();
const nN = N.nullable();
const nI = I.nullable();
const Freshness = z.strictObject({ as_of: S, age_seconds: nN, class: S, source: S });
const SpecQuestion = z.strictObject({
  condition_id: S, title: S, label: S, group: S, sports_market_type: S, line: nN, yes_mid: nN, no_mid: nN,
  yes_mid_as_of: S, no_mid_as_of: S, yes_token_id: S, no_token_id: S, volume_24h_usdc: N, fills_24h: I, resolved: B,
  winner_outcome: S, market_state: S, scheduled_close: S, neg_risk_market_id: S, yes_mid_freshness: Freshness, no_mid_freshness: Freshness,
});
const SpecEvent = z.strictObject({
  slug: S, canonical_slug: S, event_id: I, title: S, category: S, subcategory: S, series_title: S, series_slug: S, series_recurrence: S,
  sport_code: S, sport_name: S, sport_discipline: S, team_names: z.array(S), team_abbrs: z.array(S), game_id: nI, live: B, ended: B,
  score: S, period: S, resolution_source: S, neg_risk: B,
  dates: z.strictObject({ created: S, trading_opens: S, first_trade: S, event_start: S, scheduled_close: S, actual_close: S }),
  totals: z.strictObject({ questions: I, open_questions: I, resolved_questions: I, volume_24h_usdc: N, fills_24h: I, traders_24h: I }),
  venue_reported: z.strictObject({ open_interest: nN, volume_24h_shares: nN, liquidity: nN, comment_count: nI }),
  fixture_events: z.array(z.strictObject({ event_id: I, slug: S, title: S, market_count: I, is_current: B })),
  questions: z.array(SpecQuestion),
  live_check: z.strictObject({ mode: S, stale: I, refreshed: I, deferred: I, fetch_ms: I }),
  freshness: z.strictObject({ mids_as_of: S }),
  neg_risk_groups: z.array(z.strictObject({ neg_risk_market_id: S, n_questions: I, n_priced: I, sum_yes: nN })),
  as_of: S,
});
const SpecMarket = z.strictObject({
  condition_id: S, market_title: S, market_category: S, market_slug: S, end_date: S, resolved: B, market_state: S, winner_outcome: S,
  current_mid: nN, last_24h_volume_usdc: N, last_24h_fills: I, positioner_count: I, smart_money_positioner_count: I,
  consensus_latest: z.strictObject({ service_consensus_yes: nN, market_mid: nN, n_positioners: I }),
  top_holders: z.array(z.strictObject({ pseudonym: S, outcome_side: S, shares_held: N })).max(5),
  locked: z.strictObject({ positioning: B, flow: B, fills: B }),
  mid_age_seconds: nI, snapshot_age_seconds: I,
});
const SpecTrader = z.strictObject({
  proxy_wallet: S, rank: nI, composite_score: nN, total_pnl: N, realized_pnl: N, pnl_under_review: B, lifetime_volume_usdc: N,
  trade_count: I, markets_traded: I, win_rate_pct: nN,
  percentiles: z.strictObject({ total_pnl: nN, realized_pnl: nN, lifetime_volume_usdc: nN, win_rate_pct: nN }),
  display: z.strictObject({ username: S, pseudonym: S, profile_image: S, x_username: S, verified: B, eoa: S, claimed: B, founding: B }),
  first_trade_at: S, last_trade_at: S, locked_metric_count: I, snapshot_age_seconds: I, wallet_count: I,
});
const SpecTopRoi = z.strictObject({
  trades: z.array(z.strictObject({
    rank: I, tid: S, wallet_label: S, display: z.strictObject({ username: S, pseudonym: S }), market_title: S, market_slug: S, category: S,
    cost_usdc: N, profit_usdc: N, roi_x: N, entry_price: N, resolved_at: S,
  })),
});
const SpecTopEvents = z.strictObject({ events: z.array(z.strictObject({ slug: S, title: S, volume_24h_usdc: N, questions: I })), as_of: S });
const SpecTraderResult = z.strictObject({
  type: z.literal('trader'), tid: S, wallet_label: S, username: S, pseudonym: S, display_name: S, verified: B, total_pnl: nN, volume: nN, has_metrics: B,
});
// markets and events appear as results with their own type (docs/api-public.md)
const SpecMarketResult = z.strictObject({ type: z.literal('market'), condition_id: S, title: S, slug: S, category: S, market_state: S, event_slug: S });
const SpecEventResult = z.strictObject({ type: z.literal('event'), slug: S, canonical_slug: S, title: S, category: S, questions: I });
const SpecSearch = z.strictObject({ query: S, kind: S, results: z.array(z.discriminatedUnion('type', [SpecTraderResult, SpecMarketResult, SpecEventResult])) });
const SpecReferrer = z.strictObject({ display_name: S, x_username: S });
// designed shapes (the spec does not show them): docs/api-public.md
const DesignLeaderboard = z.strictObject({
  preset: S, title: S, total_rows: I, snapshot_age_seconds: I, as_of: S,
  rows: z.array(z.strictObject({
    rank: I, tid: S, wallet_label: S, display: z.strictObject({ username: S, pseudonym: S, verified: B }), composite_score: N, realized_pnl: N,
    lifetime_volume_usdc: N, trade_count: I, win_rate_pct: nN, n_resolved_markets: I, calibration_excess_z: nN, calibration_excess_z_pctile: nN,
  })),
});
const DesignPulse = z.strictObject({
  window_hours: I, volume_24h_usdc: N, fills_24h: I, traders_24h: I, markets_traded_24h: I, markets_resolved_24h: I, open_markets: I,
  smart_money_volume_share: nN, smart_money_traders_24h: I, labels_as_of: S, snapshot_age_seconds: I, as_of: S,
});
const DesignFounding = z.strictObject({ spots_total: I, spots_claimed: I, spots_remaining: I, open: B, as_of: S });

// ---------------------------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------------------------

const ERROR_KEYS = new Set(['error', 'message', 'reason', 'issues', 'trace_id']);
const ErrorBody = z.strictObject({ error: S, message: S.optional(), reason: S.optional(), issues: z.array(z.unknown()).optional(), trace_id: S.optional() });

async function getJson(path: string, cache?: number): Promise<unknown> {
  const res = await fetch(`${base}${path}`);
  const body = await res.json();
  expect(res.status, `${path}: ${JSON.stringify(body).slice(0, 300)}`).toBe(200);
  expect(res.headers.get('access-control-allow-origin')).toBe('*');
  if (cache !== undefined) expect(res.headers.get('cache-control')).toBe(`public, max-age=${cache}`);
  return body;
}

async function expectError(path: string, status: number, code: string) {
  const res = await fetch(`${base}${path}`);
  expect(res.status, path).toBe(status);
  expect(res.headers.get('access-control-allow-origin')).toBe('*');
  const body = ErrorBody.parse(await res.json());
  expect(body.error).toBe(code);
  expect(body.trace_id).toBe(res.headers.get('x-trace-id'));
  return body;
}

/** No wallet address of the venue (any case) appears in the body, and no 0x+40-hex token at all. */
function expectNoWallet(body: unknown) {
  const text = JSON.stringify(body).toLowerCase();
  expect(text).not.toMatch(/0x[0-9a-f]{40}(?![0-9a-f])/);
  for (const a of addresses) if (text.includes(a)) throw new Error(`wallet ${a} leaked`);
}

const rows = <T = Record<string, unknown>>(sql: string) => db.all<T>(sql);
const close = (a: number, b: number) => expect(Math.abs(a - b)).toBeLessThan(1e-6 * Math.max(1, Math.abs(b)));

/** independent market state at T (the rule in docs/api-public.md) */
const STATE_SQL = `CASE WHEN r.resolved_at IS NOT NULL AND r.resolved_at <= ${T} THEN 'RESOLVED'
  WHEN (m.closed_at IS NOT NULL AND m.closed_at <= ${T}) OR m.end_date <= ${T} THEN 'CLOSED'
  WHEN m.trading_opens_at > ${T} THEN 'UPCOMING' ELSE 'LIVE' END`;

// ---------------------------------------------------------------------------------------------------------------

describe('public event view', () => {
  it('matches the spec table and the venue for the busiest event', async () => {
    const [ev] = await rows<{ slug: string; event_id: number }>(
      `SELECT e.slug, e.event_id FROM events e JOIN markets m USING (event_id) JOIN fills f USING (market_id)
       WHERE f.ts > ${T} - INTERVAL 24 HOUR AND f.ts <= ${T} GROUP BY ALL ORDER BY sum(f.size_usdc) DESC, e.slug LIMIT 1`,
    );
    const body = SpecEvent.parse(await getJson(`/event/${ev!.slug}`, PUBLIC_CACHE_SECONDS.event));
    expect(body.slug).toBe(ev!.slug);
    expect(body.event_id).toBe(Number(ev!.event_id));
    const [tot] = await rows<{ vol: number; n: number; traders: number; q: number }>(
      `WITH f AS (SELECT * FROM fills WHERE market_id IN (SELECT market_id FROM markets WHERE event_id = ${ev!.event_id}) AND ts > ${T} - INTERVAL 24 HOUR AND ts <= ${T})
       SELECT (SELECT coalesce(sum(size_usdc), 0) FROM f) AS vol, (SELECT count(*) FROM f) AS n,
         (SELECT count(DISTINCT w) FROM (SELECT taker_id w FROM f UNION SELECT maker_id FROM f)) AS traders,
         (SELECT count(*) FROM markets WHERE event_id = ${ev!.event_id}) AS q`,
    );
    close(body.totals.volume_24h_usdc, tot!.vol);
    expect(body.totals.fills_24h).toBe(Number(tot!.n));
    expect(body.totals.traders_24h).toBe(Number(tot!.traders));
    expect(body.totals.questions).toBe(Number(tot!.q));
    expect(body.questions.length).toBe(Number(tot!.q));
    expect(body.totals.open_questions + body.totals.resolved_questions).toBeLessThanOrEqual(body.totals.questions);
    expect(body.live_check).toEqual({ mode: 'off', stale: expect.any(Number), refreshed: 0, deferred: 0, fetch_ms: 0 });
    // sports metadata the venue does not carry: honest empties
    expect([body.sport_code, body.score, body.period, body.resolution_source, body.series_title]).toEqual(['', '', '', '', '']);
    expect(body.team_names).toEqual([]);
    expect(body.game_id).toBeNull();
    expect(body.venue_reported.open_interest).toBeNull();
    // every question's mids are the latest <= T
    for (const q of body.questions) {
      const [m] = await rows<{ yes: number | null; no: number | null; st: string; winner: string | null }>(
        `SELECT (SELECT arg_max(mid, ts) FROM mids WHERE market_id = m.market_id AND outcome_index = 0 AND ts <= ${T}) AS yes,
           (SELECT arg_max(mid, ts) FROM mids WHERE market_id = m.market_id AND outcome_index = 1 AND ts <= ${T}) AS no,
           ${STATE_SQL} AS st, r.winner
         FROM markets m LEFT JOIN resolutions r USING (market_id) WHERE m.condition_id = '${q.condition_id}'`,
      );
      expect(q.yes_mid).toBe(m!.yes);
      expect(q.no_mid).toBe(m!.no);
      expect(q.market_state).toBe(m!.st);
      expect(q.resolved).toBe(m!.st === 'RESOLVED');
      expect(q.winner_outcome).toBe(m!.st === 'RESOLVED' ? (m!.winner ?? '') : '');
      expect(q.yes_mid_freshness.class).toBe(q.yes_mid === null ? 'none' : q.yes_mid_freshness.age_seconds! <= 7200 ? 'live' : q.yes_mid_freshness.age_seconds! <= 86400 ? 'recent' : 'stale');
    }
    const sums = new Map<string, number>();
    for (const q of body.questions) if (q.neg_risk_market_id && q.yes_mid !== null) sums.set(q.neg_risk_market_id, (sums.get(q.neg_risk_market_id) ?? 0) + q.yes_mid);
    for (const g of body.neg_risk_groups) close(g.sum_yes ?? 0, sums.get(g.neg_risk_market_id) ?? 0);
  });

  it('lists the fixture events of a variant and marks the current one', async () => {
    const [variant] = await rows<{ slug: string; canonical_slug: string }>(`SELECT slug, canonical_slug FROM events WHERE slug <> canonical_slug ORDER BY event_id LIMIT 1`);
    expect(variant).toBeDefined();
    const body = SpecEvent.parse(await getJson(`/event/${variant!.slug}`));
    expect(body.canonical_slug).toBe(variant!.canonical_slug);
    const sib = await rows<{ slug: string; n: number }>(
      `SELECT e.slug, (SELECT count(*) FROM markets m WHERE m.event_id = e.event_id) AS n FROM events e WHERE canonical_slug = '${variant!.canonical_slug}'`,
    );
    expect(body.fixture_events.map((f) => f.slug).sort()).toEqual(sib.map((s) => s.slug).sort());
    for (const f of body.fixture_events) {
      expect(f.is_current).toBe(f.slug === variant!.slug);
      expect(f.market_count).toBe(Number(sib.find((s) => s.slug === f.slug)!.n));
    }
  });

  it('every event of the venue parses', async () => {
    const all = await rows<{ slug: string }>(`SELECT slug FROM events ORDER BY event_id`);
    for (const e of all.slice(0, 40)) SpecEvent.parse(await getJson(`/event/${e.slug}`));
  });

  it('documented errors', async () => {
    await expectError('/event/no-such-event-anywhere', 404, 'not_found');
    await expectError('/event/bad%20slug', 400, 'invalid_request');
    await expectError(`/event/${'a'.repeat(201)}`, 400, 'invalid_request');
    await expectError('/event/%E0%A4%A', 400, 'bad_request');
    const [e] = await rows<{ slug: string }>(`SELECT slug FROM events LIMIT 1`);
    await expectError(`/event/${e!.slug}?x=1`, 400, 'invalid_request');
  });
});

describe('public market teaser', () => {
  it('the same market by condition id, either token id and slug; counts from the venue', async () => {
    const [m] = await rows<{ market_id: number; condition_id: string; yes_token_id: string; no_token_id: string; slug: string; question: string }>(
      `SELECT m.* FROM markets m JOIN fills f USING (market_id) WHERE f.ts > ${T} - INTERVAL 24 HOUR GROUP BY ALL ORDER BY count(*) DESC, m.market_id LIMIT 1`,
    );
    const byCond = SpecMarket.parse(await getJson(`/market/${m!.condition_id.toUpperCase().replace('0X', '0x')}`, PUBLIC_CACHE_SECONDS.market));
    for (const id of [m!.yes_token_id, m!.no_token_id, m!.slug]) expect(SpecMarket.parse(await getJson(`/market/${id}`))).toEqual(byCond);
    expect(byCond.condition_id).toBe(m!.condition_id);
    expect(byCond.market_title).toBe(m!.question);
    const [v24] = await rows<{ vol: number; n: number }>(
      `SELECT coalesce(sum(size_usdc), 0) AS vol, count(*) AS n FROM fills WHERE market_id = ${m!.market_id} AND ts > ${T} - INTERVAL 24 HOUR AND ts <= ${T}`,
    );
    close(byCond.last_24h_volume_usdc, v24!.vol);
    expect(byCond.last_24h_fills).toBe(Number(v24!.n));
    expect(byCond.locked).toEqual({ positioning: true, flow: true, fills: true });
    expect(byCond.market_state).toBe('LIVE');
    expect(byCond.winner_outcome).toBe('');
    expect(byCond.top_holders.length).toBeLessThanOrEqual(5);
    for (let i = 1; i < byCond.top_holders.length; i++) expect(byCond.top_holders[i]!.shares_held).toBeLessThanOrEqual(byCond.top_holders[i - 1]!.shares_held);
    expect(byCond.consensus_latest.n_positioners).toBe(byCond.positioner_count);
    expect(byCond.smart_money_positioner_count).toBeLessThanOrEqual(byCond.positioner_count);
    expect(byCond.snapshot_age_seconds).toBe(1);
    expectNoWallet(byCond.top_holders);
  });

  it('a resolved market carries its winner', async () => {
    const [m] = await rows<{ condition_id: string; winner: string }>(
      `SELECT m.condition_id, r.winner FROM markets m JOIN resolutions r USING (market_id) WHERE r.resolved_at <= ${T} ORDER BY m.market_id LIMIT 1`,
    );
    const body = SpecMarket.parse(await getJson(`/market/${m!.condition_id}`));
    expect(body.resolved).toBe(true);
    expect(body.market_state).toBe('RESOLVED');
    expect(body.winner_outcome).toBe(m!.winner);
  });

  it('documented errors', async () => {
    await expectError(`/market/0x${'0'.repeat(64)}`, 404, 'not_found');
    await expectError('/market/123456789', 404, 'not_found');
    await expectError('/market/no-such-market', 404, 'not_found');
    await expectError('/market/bad!id', 400, 'invalid_request');
    await expectError('/market/no-such-market?limit=1', 400, 'invalid_request');
  });
});

describe('public trader teaser', () => {
  it('by address (any case): the analytics build figures, board rank and percentiles', async () => {
    const [w] = await rows<Record<string, unknown>>(
      `SELECT m.*, w.address, w.username, w.pseudonym, b.rank AS board_rank, b.composite_score AS board_composite
       FROM a_wallet_metrics m JOIN wallets w USING (wallet_id) JOIN a_board b ON b.wallet_id = m.wallet_id AND b.preset = '${PUBLIC_BOARD}'
       WHERE b.rank = 5`,
    );
    const address = String(w!.address);
    const body = SpecTrader.parse(await getJson(`/trader/${address.toUpperCase().replace('0X', '0x')}`, PUBLIC_CACHE_SECONDS.trader));
    expect(body.proxy_wallet).toBe(getAddress(address));
    expect(body.rank).toBe(5);
    close(body.composite_score!, Number(w!.board_composite));
    close(body.total_pnl, Number(w!.total_pnl));
    close(body.realized_pnl, Number(w!.realized_pnl));
    close(body.lifetime_volume_usdc, Number(w!.lifetime_volume_usdc));
    expect(body.trade_count).toBe(Number(w!.trade_count));
    expect(body.markets_traded).toBe(Number(w!.markets_traded));
    expect(body.win_rate_pct).toBe(w!.win_rate_pct === null ? null : Number(w!.win_rate_pct));
    const [pop] = await rows<{ n: number }>(`SELECT count(*) AS n FROM a_wallet_metrics`);
    expect(body.wallet_count).toBe(Number(pop!.n));
    // percentiles: the share of the population strictly below, recomputed here
    const [p] = await rows<Record<string, number>>(
      `SELECT 100.0 * count(*) FILTER (WHERE total_pnl < ${Number(w!.total_pnl)}) / (count(*) - 1) AS total_pnl,
         100.0 * count(*) FILTER (WHERE lifetime_volume_usdc < ${Number(w!.lifetime_volume_usdc)}) / (count(*) - 1) AS vol
       FROM a_wallet_metrics`,
    );
    close(body.percentiles.total_pnl!, Number(p!.total_pnl));
    close(body.percentiles.lifetime_volume_usdc!, Number(p!.vol));
    expect(body.display.pseudonym).toBe(w!.pseudonym);
    expect(body.display.username).toBe(w!.username ?? '');
    expect(body.locked_metric_count).toBeGreaterThan(0);
    expect(body.snapshot_age_seconds).toBe(1);
  });

  it('unranked and unmeasured wallets read null, never 0', async () => {
    const [w] = await rows<{ address: string }>(
      `SELECT w.address FROM a_wallet_metrics m JOIN wallets w USING (wallet_id)
       WHERE m.win_rate_pct IS NULL AND m.wallet_id NOT IN (SELECT wallet_id FROM a_board WHERE preset = '${PUBLIC_BOARD}') ORDER BY m.wallet_id LIMIT 1`,
    );
    const body = SpecTrader.parse(await getJson(`/trader/${w!.address}`));
    expect(body.rank).toBeNull();
    expect(body.composite_score).toBeNull();
    expect(body.win_rate_pct).toBeNull();
    expect(body.percentiles.win_rate_pct).toBeNull();
  });

  it('claims from the account directory; by tid the wallet and the EOA stay masked', async () => {
    const byAddress = SpecTrader.parse(await getJson(`/trader/${claimed.founding}`));
    expect(byAddress.display).toMatchObject({ claimed: true, founding: true, x_username: 'sharp_one', eoa: '0x1111111111111111111111111111111111111111' });
    const tid = traderTid(TID_KEY, claimed.founding);
    const byTid = SpecTrader.parse(await getJson(`/trader/${tid}`));
    expect(byTid.proxy_wallet).toBe(tid);
    expect(byTid.display.eoa).toBe('');
    expect({ ...byTid, proxy_wallet: '', display: { ...byTid.display, eoa: '' } }).toEqual({ ...byAddress, proxy_wallet: '', display: { ...byAddress.display, eoa: '' } });
    expectNoWallet(byTid);
    const plain = SpecTrader.parse(await getJson(`/trader/${claimed.plain}`));
    expect(plain.display).toMatchObject({ claimed: true, founding: false, x_username: '', eoa: '' });
  });

  it('the empty success body for a known wallet without activity', async () => {
    expect(await getJson(`/trader/${IDLE}`)).toEqual({});
    expect(await getJson(`/trader/${traderTid(TID_KEY, IDLE)}`)).toEqual({});
  });

  it('documented errors', async () => {
    await expectError(`/trader/0x${'1'.repeat(40)}`, 404, 'not_found');
    await expectError(`/trader/t_${'A'.repeat(22)}`, 404, 'not_found');
    await expectError('/trader/0x123', 400, 'invalid_request');
    await expectError('/trader/someone', 400, 'invalid_request');
    await expectError(`/trader/${IDLE}?full=1`, 400, 'invalid_request');
  });
});

describe('tid index', () => {
  it('the SQL HMAC equals traderTid for every wallet, for short, long and binary keys', async () => {
    for (const key of [TID_KEY, 'k'.repeat(100), new Uint8Array(Array.from({ length: 40 }, (_, i) => (i * 37) % 256))]) {
      const idx = new TidIndex(key);
      const got = await db.all<{ address: string; tid: string }>(`SELECT address, ${TidIndex.tidSql('address')} AS tid FROM wallets`, idx.sqlParams());
      for (const r of got) expect(r.tid).toBe(traderTid(key, r.address));
      // a fresh index (nothing remembered) still resolves by scan
      const sample = got[17]!;
      expect(await new TidIndex(key).resolve(db, sample.tid)).toBe(sample.address);
    }
    expect(() => new TidIndex('short')).toThrow();
  });
});

describe('top-ROI trades', () => {
  it('the spec shape, sorted, masked, and every tid opens the trader teaser', async () => {
    const body = SpecTopRoi.parse(await getJson('/trades/top-roi', PUBLIC_CACHE_SECONDS.topRoi));
    expect(body.trades.length).toBeGreaterThan(0);
    expect(body.trades.length).toBeLessThanOrEqual(20);
    body.trades.forEach((t, i) => expect(t.rank).toBe(i + 1));
    for (let i = 1; i < body.trades.length; i++) expect(body.trades[i]!.roi_x).toBeLessThanOrEqual(body.trades[i - 1]!.roi_x);
    expectNoWallet(body);
    for (const t of body.trades.slice(0, 3)) {
      const teaser = SpecTrader.parse(await getJson(`/trader/${t.tid}`));
      expect(teaser.proxy_wallet).toBe(t.tid);
      expect(teaser.display.pseudonym).toBe(t.display.pseudonym);
    }
    const asc = SpecTopRoi.parse(await getJson('/trades/top-roi?sort=profit&dir=asc&limit=5&since_days=365'));
    for (let i = 1; i < asc.trades.length; i++) expect(asc.trades[i]!.profit_usdc).toBeGreaterThanOrEqual(asc.trades[i - 1]!.profit_usdc);
    const cat = body.trades[0]!.category;
    const byCat = SpecTopRoi.parse(await getJson(`/trades/top-roi?category=${cat}&limit=100`));
    expect(byCat.trades.every((t) => t.category === cat)).toBe(true);
  });

  it('documented errors', async () => {
    for (const qs of ['limit=0', 'limit=101', 'since_days=0', 'since_days=366', 'sort=luck', 'dir=up', 'category=Bad%20Cat', 'wallet=1']) {
      await expectError(`/trades/top-roi?${qs}`, 400, 'invalid_request');
    }
  });
});

describe('top events', () => {
  it('open fixtures ranked by own 24 h volume equal a brute-force SQL over fills', async () => {
    const body = SpecTopEvents.parse(await getJson('/events/top?limit=50', PUBLIC_CACHE_SECONDS.topEvents));
    const brute = await rows<{ slug: string; vol: number; q: number }>(
      `WITH st AS (SELECT m.market_id, e.canonical_slug, ${STATE_SQL} AS st FROM markets m JOIN events e USING (event_id) LEFT JOIN resolutions r USING (market_id)),
         open_fx AS (SELECT DISTINCT canonical_slug FROM st WHERE st = 'LIVE')
       SELECT st.canonical_slug AS slug, count(DISTINCT st.market_id) AS q,
         (SELECT coalesce(sum(f.size_usdc), 0) FROM fills f JOIN st s2 USING (market_id) WHERE s2.canonical_slug = st.canonical_slug AND f.ts > ${T} - INTERVAL 24 HOUR AND f.ts <= ${T}) AS vol
       FROM st WHERE st.canonical_slug IN (SELECT * FROM open_fx) GROUP BY 1`,
    );
    const want = brute.filter((b) => Number(b.vol) > 0).sort((a, b) => Number(b.vol) - Number(a.vol) || (a.slug < b.slug ? -1 : 1)).slice(0, 50);
    expect(body.events.map((e) => e.slug)).toEqual(want.map((w) => w.slug));
    body.events.forEach((e, i) => {
      close(e.volume_24h_usdc, Number(want[i]!.vol));
      expect(e.questions).toBe(Number(want[i]!.q));
    });
    const top3 = SpecTopEvents.parse(await getJson('/events/top?limit=3'));
    expect(top3.events).toEqual(body.events.slice(0, 3));
    const dflt = SpecTopEvents.parse(await getJson('/events/top'));
    expect(dflt.events.length).toBe(Math.min(10, body.events.length));
    expect(dflt.as_of).toBe(NOW.toISOString());
  });

  it('documented errors', async () => {
    for (const qs of ['limit=0', 'limit=51', 'limit=abc', 'limit=2.5', 'category=x']) await expectError(`/events/top?${qs}`, 400, 'invalid_request');
  });
});

describe('search', () => {
  it('by condition id and token id finds that market', async () => {
    const [m] = await rows<{ condition_id: string; yes_token_id: string; no_token_id: string }>(`SELECT * FROM markets ORDER BY market_id LIMIT 1 OFFSET 11`);
    const byCond = SpecSearch.parse(await getJson(`/search?q=${m!.condition_id}`, PUBLIC_CACHE_SECONDS.search));
    expect(byCond.kind).toBe('condition_id');
    expect(byCond.results[0]).toMatchObject({ type: 'market', condition_id: m!.condition_id });
    for (const token of [m!.yes_token_id, m!.no_token_id]) {
      const byToken = SpecSearch.parse(await getJson(`/search?q=${token}`));
      expect(byToken.kind).toBe('token_id');
      expect(byToken.results[0]).toMatchObject({ type: 'market', condition_id: m!.condition_id });
    }
  });

  it('by address returns the trader by tid only', async () => {
    const [w] = await rows<{ address: string; pseudonym: string }>(`SELECT address, pseudonym FROM wallets ORDER BY wallet_id LIMIT 1 OFFSET 42`);
    const body = SpecSearch.parse(await getJson(`/search?q=${w!.address.toUpperCase().replace('0X', '0x')}`));
    expect(body.kind).toBe('address');
    expect(body.results).toHaveLength(1);
    expect(body.results[0]).toMatchObject({ type: 'trader', tid: traderTid(TID_KEY, w!.address), pseudonym: w!.pseudonym, has_metrics: true });
    // the echo of q is masked too
    expect(body.query).toBe(traderTid(TID_KEY, w!.address));
    expectNoWallet(body);
    const unknown = SpecSearch.parse(await getJson(`/search?q=0x${'9'.repeat(40)}`));
    expect(unknown).toEqual({ query: traderTid(TID_KEY, `0x${'9'.repeat(40)}`), kind: 'address', results: [] });
  });

  it('a username that is a wallet address is never printed', async () => {
    const [w, other] = await rows<{ wallet_id: number; address: string; pseudonym: string }>(`SELECT wallet_id, address, pseudonym FROM wallets ORDER BY wallet_id LIMIT 2 OFFSET 100`);
    await db.run(`UPDATE wallets SET username = '${other!.address}' WHERE wallet_id = ${w!.wallet_id}`);
    try {
      const body = SpecSearch.parse(await getJson(`/search?q=${w!.address}`));
      expect(body.results[0]).toMatchObject({ type: 'trader', username: '', wallet_label: w!.pseudonym });
      const text = SpecSearch.parse(await getJson(`/search?q=${other!.address.slice(2, 30)}`));
      expect(text.results.some((r) => r.type === 'trader' && r.pseudonym === w!.pseudonym)).toBe(true);
      expectNoWallet(body);
      expectNoWallet(text);
    } finally {
      await db.run(`UPDATE wallets SET username = NULL WHERE wallet_id = ${w!.wallet_id}`);
    }
  });

  it('by username (exact first) and by market text', async () => {
    const [w] = await rows<{ username: string; address: string }>(`SELECT username, address FROM wallets WHERE username IS NOT NULL ORDER BY wallet_id LIMIT 1`);
    const body = SpecSearch.parse(await getJson(`/search?q=${encodeURIComponent(w!.username.toUpperCase())}`));
    expect(body.kind).toBe('username');
    expect(body.results[0]).toMatchObject({ type: 'trader', username: w!.username, tid: traderTid(TID_KEY, w!.address) });
    expectNoWallet(body);

    const [m] = await rows<{ condition_id: string; question: string }>(`SELECT condition_id, question FROM markets ORDER BY market_id LIMIT 1 OFFSET 3`);
    const text = SpecSearch.parse(await getJson(`/search?q=${encodeURIComponent(m!.question.slice(0, 60))}&limit=25`));
    expect(text.kind).toBe('text');
    expect(text.results.some((r) => r.type === 'market' && r.condition_id === m!.condition_id)).toBe(true);
    expectNoWallet(text);

    const [e] = await rows<{ slug: string }>(`SELECT slug FROM events ORDER BY event_id LIMIT 1 OFFSET 5`);
    const ev = SpecSearch.parse(await getJson(`/search?q=${e!.slug}`));
    expect(ev.results[0]).toMatchObject({ type: 'event', slug: e!.slug });
  });

  it('a claimed wallet shows its display name; limit bounds the results', async () => {
    const body = SpecSearch.parse(await getJson(`/search?q=${claimed.founding}`));
    expect(body.results[0]).toMatchObject({ type: 'trader', display_name: 'Sharp One' });
    const many = SpecSearch.parse(await getJson('/search?q=e&limit=25'));
    expect(many.results.length).toBe(25);
    const few = SpecSearch.parse(await getJson('/search?q=e&limit=3'));
    expect(few.results.length).toBe(3);
    expectNoWallet(many);
  });

  it('documented errors', async () => {
    await expectError('/search', 400, 'invalid_request');
    await expectError('/search?q=', 400, 'invalid_request');
    await expectError(`/search?q=${'x'.repeat(101)}`, 400, 'invalid_request');
    await expectError('/search?q=a&limit=0', 400, 'invalid_request');
    await expectError('/search?q=a&limit=26', 400, 'invalid_request');
    await expectError('/search?q=a&type=trader', 400, 'invalid_request');
    await expectError('/search?q=a&q=b', 400, 'invalid_request');
  });
});

describe('leaderboard', () => {
  it('the anonymous top 25 of the default board; calibration z is null exactly below 30 resolved markets', async () => {
    const body = DesignLeaderboard.parse(await getJson('/leaderboard', PUBLIC_CACHE_SECONDS.leaderboard));
    expect(body.preset).toBe(PUBLIC_BOARD);
    expect(body.rows).toHaveLength(25);
    expectNoWallet(body);
    const board = await rows<{ rank: number; address: string; n: number; z: number | null; pct: number | null; composite: number }>(
      `SELECT b.rank, b.address, m.n_resolved_markets AS n, m.calibration_excess_z AS z, m.calibration_excess_z_pctile AS pct, b.composite_score AS composite
       FROM a_board b JOIN (SELECT * FROM a_wallet_metrics JOIN a_wallet_pctiles USING (wallet_id)) m USING (wallet_id) WHERE b.preset = '${PUBLIC_BOARD}' ORDER BY b.rank LIMIT 25`,
    );
    const [total] = await rows<{ n: number }>(`SELECT count(*) AS n FROM a_board WHERE preset = '${PUBLIC_BOARD}'`);
    expect(body.total_rows).toBe(Number(total!.n));
    let nulls = 0;
    body.rows.forEach((r, i) => {
      const b = board[i]!;
      expect(r.rank).toBe(i + 1);
      expect(r.tid).toBe(traderTid(TID_KEY, b.address));
      close(r.composite_score, Number(b.composite));
      expect(r.n_resolved_markets).toBe(Number(b.n));
      if (Number(b.n) < 30) {
        nulls++;
        expect(r.calibration_excess_z).toBeNull();
        expect(r.calibration_excess_z_pctile).toBeNull();
      } else {
        expect(r.calibration_excess_z).not.toBeNull();
        close(r.calibration_excess_z!, Number(b.z));
        close(r.calibration_excess_z_pctile!, Number(b.pct));
      }
    });
    // the venue gives both kinds in the top 25, so the rule is exercised both ways
    expect(nulls).toBeGreaterThan(0);
    expect(nulls).toBeLessThan(25);
    const five = DesignLeaderboard.parse(await getJson('/leaderboard?limit=5'));
    expect(five.rows).toEqual(body.rows.slice(0, 5));
  });

  it('documented errors', async () => {
    for (const qs of ['limit=0', 'limit=26', 'preset=whales', 'offset=5']) await expectError(`/leaderboard?${qs}`, 400, 'invalid_request');
  });
});

describe('preset boards (public)', () => {
  it('lists the ten presets; each board is a_board\'s top rows by tid with a_board_meta\'s funnel, no wallet in it', async () => {
    const list = (await getJson('/boards', PUBLIC_CACHE_SECONDS.leaderboard)) as { presets: { slug: string }[] };
    expect(list.presets.map((p) => p.slug)).toEqual(PRESETS.map((p) => p.slug));
    for (const { slug } of list.presets.slice(0, 3)) {
      const body = (await getJson(`/boards/${slug}?limit=10`)) as { preset: string; rows: { rank: number; tid: string }[]; total_rows: number; explain: { cohort_size: number; gates: { remaining: number; dropped: number }[] } };
      expectNoWallet(body);
      expect(body.preset).toBe(slug);
      const top = await rows<{ rank: number; address: string }>(`SELECT rank, address FROM a_board WHERE preset = '${slug}' AND rank <= 10 ORDER BY rank`);
      expect(body.rows.map((r) => [r.rank, r.tid])).toEqual(top.map((r) => [r.rank, traderTid(TID_KEY, r.address)]));
      const [meta] = await rows<{ cohort_size: number; gate_counts: number[]; scored: number; total_rows: number }>(`SELECT * FROM a_board_meta WHERE preset = '${slug}'`);
      expect(body.explain.cohort_size).toBe(Number(meta!.cohort_size));
      // the funnel: each gate's remaining is the build's count, and each drop the difference from the stage before
      const remaining = [...meta!.gate_counts.map(Number), Number(meta!.scored), Number(meta!.total_rows)];
      expect(body.explain.gates.map((g) => g.remaining)).toEqual(remaining);
      expect(body.explain.gates.map((g) => g.dropped)).toEqual(remaining.map((r, i) => (i === 0 ? Number(meta!.cohort_size) : remaining[i - 1]!) - r));
      expect(body.total_rows).toBe(Number(meta!.total_rows));
    }
    expect((await expectError('/boards/no-such-preset', 404, 'not_found')).reason).toMatch(/valid presets: /);
    await expectError(`/boards/${PRESETS[0]!.slug}?limit=26`, 400, 'invalid_request');
    await expectError('/boards?x=1', 400, 'invalid_request');
  });
});

describe('pulse, founding, referrer', () => {
  it('pulse equals the venue over the last 24 h', async () => {
    const body = DesignPulse.parse(await getJson('/pulse', PUBLIC_CACHE_SECONDS.pulse));
    const [p] = await rows<Record<string, number>>(
      `WITH f AS (SELECT * FROM fills WHERE ts > ${T} - INTERVAL 24 HOUR AND ts <= ${T})
       SELECT (SELECT sum(size_usdc) FROM f) AS vol, (SELECT count(*) FROM f) AS n, (SELECT count(DISTINCT market_id) FROM f) AS mk,
         (SELECT count(DISTINCT w) FROM (SELECT taker_id w FROM f UNION SELECT maker_id FROM f)) AS traders,
         (SELECT count(*) FROM resolutions WHERE resolved_at > ${T} - INTERVAL 24 HOUR AND resolved_at <= ${T}) AS res,
         (SELECT count(*) FROM markets m LEFT JOIN resolutions r USING (market_id) WHERE ${STATE_SQL} = 'LIVE') AS live`,
    );
    close(body.volume_24h_usdc, Number(p!.vol));
    expect(body.fills_24h).toBe(Number(p!.n));
    expect(body.traders_24h).toBe(Number(p!.traders));
    expect(body.markets_traded_24h).toBe(Number(p!.mk));
    expect(body.markets_resolved_24h).toBe(Number(p!.res));
    expect(body.open_markets).toBe(Number(p!.live));
    expect(body.smart_money_volume_share).toBeGreaterThan(0);
    expect(body.smart_money_volume_share).toBeLessThan(1);
    expect(body.smart_money_traders_24h).toBeLessThanOrEqual(body.traders_24h);
    expect(body.as_of).toBe(NOW.toISOString());
    expect(body.labels_as_of).toBe(AS_OF.toISOString());
    await expectError('/pulse?window=1', 400, 'invalid_request');
  });

  it('founding is the directory status', async () => {
    const body = DesignFounding.parse(await getJson('/founding', PUBLIC_CACHE_SECONDS.founding));
    expect(body).toEqual({ ...FOUNDING, as_of: NOW.toISOString() });
    await expectError('/founding?x=1', 400, 'invalid_request');
  });

  it('referrer by invite code', async () => {
    expect(SpecReferrer.parse(await getJson('/referrer?code=FRIEND42', PUBLIC_CACHE_SECONDS.referrer))).toEqual({ display_name: 'Alice Liddell', x_username: 'alice_x' });
    expect(SpecReferrer.parse(await getJson('/referrer?code=quiet_1'))).toEqual({ display_name: '', x_username: '' });
    await expectError('/referrer?code=NOPE', 404, 'not_found');
    await expectError('/referrer', 400, 'invalid_request');
    await expectError('/referrer?code=', 400, 'invalid_request');
    await expectError('/referrer?code=a%20b', 400, 'invalid_request');
    await expectError('/referrer?code=FRIEND42&x=1', 400, 'invalid_request');
    await expectError('/nothing-here', 404, 'not_found');
  });
});

describe('without an analytics build', () => {
  it('build-backed routes answer 503 analytics_missing, venue-only routes still work', async () => {
    // a runner over a venue with no a_* tables: information_schema says nothing exists, every table is empty
    const empty: QueryRunner = {
      all: async <T,>(sql: string) => (sql.includes('information_schema') ? [{ n: 0 }] : []) as T[],
      run: async () => {},
    };
    const app = express();
    app.set('query parser', 'simple');
    app.use(assignTraceId);
    app.use('/v1/public', publicRouter({ db: empty, now: () => NOW, tidKey: TID_KEY, directory: testDirectory(new Map()) }));
    app.use(notFound);
    app.use(errorHandler);
    const s2 = app.listen(0, '127.0.0.1');
    await new Promise((r) => s2.once('listening', r));
    const b2 = `http://127.0.0.1:${(s2.address() as AddressInfo).port}/v1/public`;
    try {
      for (const p of ['/pulse', '/leaderboard', `/trader/${addresses[1]}`, `/market/0x${'a'.repeat(64)}`]) {
        const res = await fetch(`${b2}${p}`);
        expect(res.status, p).toBe(503);
        expect(ErrorBody.parse(await res.json()).error).toBe('analytics_missing');
      }
      expect((await fetch(`${b2}/event/some-event`)).status).toBe(404);
      expect(await (await fetch(`${b2}/events/top`)).json()).toEqual({ events: [], as_of: NOW.toISOString() });
    } finally {
      await new Promise((r) => s2.close(r));
    }
  });
});

describe('OpenAPI fragments', () => {
  it('every route has a path item, and every $ref resolves', () => {
    const paths = publicOpenApiPaths();
    expect(Object.keys(paths).sort()).toEqual(
      ['event/{slug}', 'referrer', 'market/{id}', 'trader/{proxy}', 'trades/top-roi', 'events/top', 'search', 'leaderboard', 'boards', 'boards/{slug}', 'pulse', 'founding'].map((p) => `/v1/public/${p}`).sort(),
    );
    const schemas = publicOpenApiSchemas();
    const refs = [...JSON.stringify(paths).matchAll(/"#\/components\/schemas\/([A-Za-z]+)"/g)].map((m) => m[1]!);
    for (const r of refs) expect(r === 'Error' || r in schemas, r).toBe(true);
    const ev = schemas.PublicEvent as { properties: Record<string, unknown>; required: string[]; additionalProperties: boolean };
    expect(Object.keys(ev.properties).sort()).toEqual(Object.keys(SpecEvent.shape).sort());
    expect(new Set(ev.required)).toEqual(new Set(Object.keys(SpecEvent.shape)));
    expect(ev.additionalProperties).toBe(false);
    for (const [name, spec] of [['PublicMarketTeaser', SpecMarket], ['PublicTraderTeaser', SpecTrader], ['PublicTopRoiTrades', SpecTopRoi], ['PublicTopEvents', SpecTopEvents], ['PublicSearch', SpecSearch], ['PublicReferrer', SpecReferrer]] as const) {
      expect(Object.keys((schemas[name] as { properties: object }).properties).sort(), name).toEqual(Object.keys(spec.shape).sort());
    }
  });
});

describe('fuzz', () => {
  it('never a 500, and every non-2xx body is exactly the error object', async () => {
    const [m] = await rows<{ condition_id: string; yes_token_id: string; slug: string }>(`SELECT * FROM markets LIMIT 1`);
    const [e] = await rows<{ slug: string }>(`SELECT slug FROM events LIMIT 1`);
    const segment = fc.oneof(
      fc.string({ maxLength: 30 }),
      fc.constantFrom(m!.condition_id, m!.yes_token_id, m!.slug, e!.slug, addresses[3]!, IDLE, traderTid(TID_KEY, addresses[5]!), `t_${'-'.repeat(22)}`, '0x', '..', '%', '%E0%A4%A', 'ünï', '1e309', `0x${'f'.repeat(64)}`),
      fc.stringMatching(/^[0-9a-zA-Z_-]{1,80}$/),
    );
    const routes = ['/event/', '/market/', '/trader/', '/trades/top-roi', '/events/top', '/search', '/leaderboard', '/pulse', '/founding', '/referrer', '/'];
    const keys = ['q', 'limit', 'code', 'category', 'since_days', 'sort', 'dir', 'x', 'kind'];
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...routes),
        segment,
        fc.array(fc.tuple(fc.constantFrom(...keys), fc.oneof(fc.string({ maxLength: 12 }), fc.integer().map(String), fc.constantFrom('roi', 'asc', 'FRIEND42', '-1', '1e309', 'NaN', '25', addresses[9]!))), { maxLength: 3 }),
        async (route, seg, params) => {
          const path = route.endsWith('/') && route !== '/' ? `${route}${encodeURIComponent(seg)}` : route;
          const qs = new URLSearchParams(params).toString();
          const res = await fetch(`${base}${path}${qs ? `?${qs}` : ''}`);
          expect(res.status, `${path}?${qs}`).toBeLessThan(500);
          const body = (await res.json()) as Record<string, unknown>;
          if (res.status >= 300) {
            for (const k of Object.keys(body)) expect(ERROR_KEYS.has(k), k).toBe(true);
            ErrorBody.parse(body);
          } else if (['/trades/top-roi', '/search', '/leaderboard'].includes(route)) {
            expectNoWallet(body);
          }
        },
      ),
      { numRuns: Number(process.env.PUBLIC_FUZZ_RUNS ?? 300) },
    );
  }, 300_000);
});
