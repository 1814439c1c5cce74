/**
 * Issue 20, end to end: a venue loaded from Gamma markets and data-api /trades alone. The trades name one party
 * each, so every fill's maker is unknown (NULL): it must become no wallet, no analytics row, no board row, no tid, no
 * search hit, on no route; while every fill still counts for market volume and fill counts.
 */
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fullBuild } from '../../core/analytics/build.ts';
import { PRESETS } from '../../core/rankings.ts';
import { traderTid } from '../../core/trader/index.ts';
import { openDuckDB, queryRows } from '../../data/duckdb.ts';
import { loadDataApiTrades } from '../../data/ingest/data-api-trades.ts';
import { loadGammaMarkets } from '../../data/ingest/gamma.ts';
import { PLACEHOLDER_ADDRESSES } from '../../data/ingest/placeholders.ts';
import type { IngestReport } from '../../data/ingest/report.ts';
import { duckRunner } from '../../data/runner.ts';
import { createVenueSchema } from '../../data/schema.ts';
import { startApp, type TestApp } from '../helpers/app.ts';
import { AS_OF, dataApiWorld } from './data-api-world.ts';

const world = dataApiWorld();
const PLACEHOLDERS = [...PLACEHOLDER_ADDRESSES];
/** startApp's tid key (test/helpers/app.ts) */
const TID_KEY = 'test-tid-key-0123456789abcdef';

let instance: DuckDBInstance;
let conn: DuckDBConnection;
let report: IngestReport;
let app: TestApp;
let proKey: string;
let walletIds: Set<number>;

beforeAll(async () => {
  ({ instance, conn } = await openDuckDB({ path: ':memory:', threads: 2 }));
  await createVenueSchema(conn);
  const markets = await loadGammaMarkets(conn, world.gammaMarkets);
  expect(markets.inserted).toBe(world.gammaMarkets.length);
  report = await loadDataApiTrades(conn, world.trades);
  await fullBuild(duckRunner(conn), AS_OF);
  walletIds = new Set((await queryRows<{ wallet_id: number }>(conn, 'SELECT wallet_id FROM wallets')).map((r) => r.wallet_id));
  app = await startApp(duckRunner(conn), { now: () => AS_OF });
  proKey = (await app.keyFor('pro')).key;
}, 300_000);
afterAll(async () => {
  await app?.close();
  conn?.closeSync();
  instance?.closeSync();
});

/** Every spelling a placeholder could take on a surface: address (any case), its tid, the old stand-in's name. */
function expectNoPlaceholder(what: string, text: string) {
  const lower = text.toLowerCase();
  for (const a of PLACEHOLDERS) {
    expect(lower.includes(a), `${what} names ${a}`).toBe(false);
    expect(text.includes(traderTid(TID_KEY, a)), `${what} carries the tid of ${a}`).toBe(false);
  }
  expect(lower.includes('unknown-counterparty'), `${what} names the old stand-in wallet`).toBe(false);
}

describe('a venue from Gamma markets and data-api trades only', () => {
  it('books exactly the wallets that traded; every maker is unknown and the report counts them', async () => {
    expect(report).toMatchObject({ inserted: world.trades.length, duplicates: 0, skipped: {}, unknown_counterparty: world.trades.length, unknown_taker: 0 });
    const addresses = (await queryRows<{ address: string }>(conn, 'SELECT address FROM wallets')).map((r) => r.address);
    expect(new Set(addresses)).toEqual(new Set(world.trades.map((t) => t.proxyWallet)));
    expect(addresses).toHaveLength(world.wallets.length);
    expect(await queryRows(conn, `SELECT count(*)::INTEGER AS n, count(maker_id)::INTEGER AS makers, count(taker_id)::INTEGER AS takers FROM fills`)).toEqual([
      { n: world.trades.length, makers: 0, takers: world.trades.length },
    ]);
    // fill_legs: one leg per fill, the taker's
    expect(await queryRows(conn, `SELECT role, count(*)::INTEGER AS n FROM fill_legs GROUP BY 1`)).toEqual([{ role: 'taker', n: world.trades.length }]);
  });

  it('every a_* table and every board holds only those wallets, and names no placeholder', async () => {
    const tables = await queryRows<{ table_name: string }>(conn, `SELECT table_name FROM information_schema.tables WHERE table_name LIKE 'a\\_%' ESCAPE '\\' ORDER BY 1`);
    expect(tables.map((t) => t.table_name)).toEqual(expect.arrayContaining(['a_positions', 'a_calibration', 'a_features', 'a_wallet_metrics', 'a_board', 'a_rank_base']));
    for (const { table_name: t } of tables) {
      const cols = (await queryRows<{ column_name: string }>(conn, `SELECT column_name FROM information_schema.columns WHERE table_name = '${t}'`)).map((c) => c.column_name);
      for (const c of cols.filter((c) => c === 'wallet_id' || c === 'cluster_id')) {
        const ids = await queryRows<{ id: number }>(conn, `SELECT DISTINCT ${c} AS id FROM ${t} WHERE ${c} IS NOT NULL`);
        for (const { id } of ids) expect(walletIds.has(id), `${t}.${c} = ${id} is not a wallet of the input`).toBe(true);
      }
      expectNoPlaceholder(t, JSON.stringify(await queryRows(conn, `SELECT * FROM ${t}`), (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v)));
    }
    // The boards are not empty (a vacuous pass would prove nothing); every row is one of the input's wallets.
    const boards = await queryRows<{ preset: string; n: number }>(conn, `SELECT preset, count(*)::INTEGER AS n FROM a_board GROUP BY 1`);
    const size = Object.fromEntries(boards.map((b) => [b.preset, b.n]));
    expect(size['top-pnl']).toBeGreaterThan(10);
    expect(size['sharp-forecasters']).toBeGreaterThan(0);
    const boardAddresses = await queryRows<{ address: string }>(conn, `SELECT DISTINCT address FROM a_board`);
    for (const { address } of boardAddresses) expect(world.wallets).toContain(address.toLowerCase());
    // Metrics for the traders only: 30 wallets, 30 metric rows.
    expect(await queryRows(conn, `SELECT count(*)::INTEGER AS n FROM a_wallet_metrics`)).toEqual([{ n: world.wallets.length }]);
  });

  it('market volume and fill counts still include every maker-less fill', async () => {
    const open = world.markets.filter((m) => m.winner === null);
    const from = AS_OF.getTime() / 1000 - 86_400;
    const to = AS_OF.getTime() / 1000;
    let checked = 0;
    for (const m of open) {
      const rows = world.trades.filter((t) => t.conditionId === m.conditionId && t.timestamp > from && t.timestamp <= to);
      const res = await fetch(`${app.base}/v1/public/market/${m.conditionId}`);
      expect(res.status).toBe(200);
      const body = (await res.json()) as { last_24h_fills: number; last_24h_volume_usdc: number };
      expect(body.last_24h_fills).toBe(rows.length);
      expect(body.last_24h_volume_usdc).toBeCloseTo(rows.reduce((s, t) => s + t.price * t.size, 0), 6);
      checked += rows.length;
    }
    expect(checked).toBeGreaterThan(0);
    const recent = world.trades.filter((t) => t.timestamp > from && t.timestamp <= to);
    const pulse = (await (await fetch(`${app.base}/v1/public/pulse`)).json()) as { fills_24h: number; volume_24h_usdc: number; traders_24h: number };
    expect(pulse.fills_24h).toBe(recent.length);
    expect(pulse.volume_24h_usdc).toBeCloseTo(recent.reduce((s, t) => s + t.price * t.size, 0), 6);
    // the traders are the wallets that took those trades: no unknown counterparty among them
    expect(pulse.traders_24h).toBe(new Set(recent.map((t) => t.proxyWallet)).size);
  });

  it('no public route and no preset ranking shows a placeholder address', async () => {
    const open = world.markets.find((m) => m.winner === null)!;
    const resolved = world.markets.find((m) => m.winner !== null)!;
    const get = async (path: string, key?: string) => {
      const res = await fetch(`${app.base}${path}`, key ? { headers: { authorization: `Bearer ${key}` } } : {});
      return { status: res.status, text: await res.text() };
    };
    const ok = async (path: string, key?: string) => {
      const r = await get(path, key);
      expect(r.status, `${path}: ${r.text.slice(0, 200)}`).toBe(200);
      const body = JSON.parse(r.text) as Record<string, unknown>;
      // search echoes an address query masked as its tid: that is the caller's input, not a trader it found
      expectNoPlaceholder(path, JSON.stringify(path.startsWith('/v1/public/search') ? { ...body, query: undefined } : body));
      return body;
    };

    const board = await ok('/v1/public/leaderboard?limit=25');
    expect((board.rows as unknown[]).length).toBeGreaterThan(0);
    const market = await ok(`/v1/public/market/${open.conditionId}`);
    expect((market.top_holders as unknown[]).length).toBeGreaterThan(0);
    await ok(`/v1/public/market/${resolved.conditionId}`);
    await ok('/v1/public/trades/top-roi');
    const events = await ok('/v1/public/events/top');
    expect((events.events as unknown[]).length).toBeGreaterThan(0);
    await ok(`/v1/public/event/world-event-${open.slug}`);
    await ok('/v1/public/pulse');
    for (const a of PLACEHOLDERS) {
      // search by the address finds no trader, and the teaser does not know it (404, as for any unknown trader)
      const search = await ok(`/v1/public/search?q=${a}`);
      expect((search.results as { type: string }[]).filter((r) => r.type === 'trader')).toEqual([]);
      const teaser = await get(`/v1/public/trader/${a}`);
      expect(teaser.status).toBe(404);
      expect((await get(`/v1/public/trader/${traderTid(TID_KEY, a)}`)).status).toBe(404);
      expect((await get(`/v1/trader/${a}/positions`, proKey)).status).toBe(404);
    }
    await ok('/v1/rankings/presets', proKey);
    let rows = 0;
    for (const p of PRESETS) {
      const ranking = await ok(`/v1/rankings/preset/${p.slug}?limit=100`, proKey);
      rows += (ranking.rows as unknown[]).length;
    }
    expect(rows).toBeGreaterThan(0);
  });
});

describe('a trader of a data-api venue', () => {
  it('still has a teaser and positions of its own, with no placeholder in them', async () => {
    const who = world.wallets[0]!;
    const teaser = await fetch(`${app.base}/v1/public/trader/${who}`);
    expect(teaser.status).toBe(200);
    const text = await teaser.text();
    expectNoPlaceholder('teaser', text);
    const positions = await fetch(`${app.base}/v1/trader/${who}/positions`, { headers: { authorization: `Bearer ${proKey}` } });
    expect(positions.status).toBe(200);
    expectNoPlaceholder('positions', await positions.text());
  });
});
