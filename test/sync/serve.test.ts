/**
 * `VENUE=<dir> npm start` on a venue synced from the replayed sources: the service serves it, its P&L is the
 * independent reference's (test/core/reference.ts) over the synced rows, and with its sources configured it follows
 * them (new blocks move the analytics' as-of). A reorg the sync undoes makes the engine rebuild.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DuckDBConnection } from '@duckdb/node-api';
import { queryRows } from '../../data/duckdb.ts';
import { VenueReplay, readRealGamma } from '../../data/sync/replay.ts';
import { duckRunner } from '../../data/runner.ts';
import { traderPositions } from '../../core/trader/index.ts';
import { AnalyticsEngine } from '../../jobs/analytics/engine.ts';
import { openDuckDB } from '../../data/duckdb.ts';
import { referencePositions, type Venue } from '../core/reference.ts';
import { startRole } from '../helpers/roles.ts';
import { closeVenue, openVenue, syncOf } from './helpers.ts';

let replay: VenueReplay;
let urls: { gamma: string; rpc: string };
let dir: string;
const children: ChildProcess[] = [];

beforeAll(async () => {
  replay = new VenueReplay({ matchesPerMarket: 6, wallets: 60, seed: 5 });
  urls = await replay.listen();
  dir = await mkdtemp(join(tmpdir(), 'venue-serve-'));
});
afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  await replay?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** main.ts as `npm start` runs it (role all), on a free port; resolves once it listens. */
const startService = (env: Record<string, string>) =>
  startRole('all', { X402_MODE: 'off', TID_KEY: 'serve-test-key-0123456789abcdef', DATA_DIR: join(dir, 'data'), ...env }, { children });

async function stopService(child: ChildProcess): Promise<void> {
  const done = new Promise((ok) => child.once('exit', ok));
  child.kill('SIGTERM');
  await done;
}

async function getJson(url: string): Promise<Record<string, unknown>> {
  const r = await fetch(url);
  expect(r.status, url).toBe(200);
  return (await r.json()) as Record<string, unknown>;
}

/** The venue's rows in the reference's shape (independent of the analytics' own reads). */
async function referenceVenue(conn: DuckDBConnection): Promise<{ v: Venue; address: Map<number, string> }> {
  const n = (x: unknown) => Number(x);
  const t = (x: unknown) => new Date(x as Date).getTime();
  const markets = await queryRows<Record<string, unknown>>(conn, `SELECT market_id, neg_risk_market_id FROM markets`);
  const fills = await queryRows<Record<string, unknown>>(conn, `SELECT * FROM fills`);
  const inv = await queryRows<Record<string, unknown>>(conn, `SELECT * FROM inventory_events`);
  const legs = await queryRows<Record<string, unknown>>(conn, `SELECT * FROM inventory_legs`);
  const res = await queryRows<Record<string, unknown>>(conn, `SELECT * FROM resolutions`);
  const mids = await queryRows<Record<string, unknown>>(conn, `SELECT * FROM mids`);
  const wallets = await queryRows<{ wallet_id: number; address: string }>(conn, `SELECT wallet_id, address FROM wallets`);
  const v: Venue = {
    markets: markets.map((m) => ({ market_id: n(m.market_id), group: (m.neg_risk_market_id as string | null) ?? null })),
    wallets: wallets.map((w) => n(w.wallet_id)),
    fills: fills.map((f) => ({
      tx_hash: String(f.tx_hash), log_index: n(f.log_index), ts: t(f.ts), market_id: n(f.market_id), outcome_index: n(f.outcome_index),
      maker_id: n(f.maker_id), taker_id: n(f.taker_id), side: f.side as 'BUY' | 'SELL', match_type: f.match_type as 'direct' | 'mint' | 'merge',
      price: n(f.price), shares: n(f.shares), fee_usdc: n(f.fee_usdc),
    })),
    inventory: inv.map((e) => ({
      tx_hash: String(e.tx_hash), log_index: n(e.log_index), ts: t(e.ts), wallet_id: n(e.wallet_id), kind: e.kind as 'REDEEM', market_id: e.market_id === null ? null : n(e.market_id),
      group: (e.neg_risk_market_id as string | null) ?? null, amount: n(e.amount), usdc_delta: n(e.usdc_delta),
      legs: legs.filter((l) => l.tx_hash === e.tx_hash && n(l.log_index) === n(e.log_index)).map((l) => ({ market_id: n(l.market_id), outcome_index: n(l.outcome_index), shares_delta: n(l.shares_delta) })),
    })),
    resolutions: res.map((r) => ({ market_id: n(r.market_id), winner: r.winner as 'YES', winner_index: n(r.winner_index), payout_yes: n(r.payout_yes), payout_no: n(r.payout_no), resolved_at: t(r.resolved_at) })),
    mids: mids.map((m) => ({ market_id: n(m.market_id), outcome_index: n(m.outcome_index), ts: t(m.ts), mid: n(m.mid) })),
  };
  return { v, address: new Map(wallets.map((w) => [n(w.wallet_id), w.address])) };
}

describe('VENUE=<dir> npm start', () => {
  it('serves a synced venue; every trader teaser shows the reference realized P&L over the synced rows', async () => {
    const venueDir = join(dir, 'stored');
    const conn = await openVenue(join(venueDir, 'venue.duckdb'));
    const sync = await syncOf(conn, replay, urls);
    await sync.backfill();
    await sync.close();
    const { v, address } = await referenceVenue(conn);
    closeVenue(conn);
    expect(v.fills.length).toBe(replay.matches.length);

    const svc = await startService({ VENUE: venueDir });
    const board = await getJson(`${svc.base}/v1/public/leaderboard`);
    expect((board.rows as unknown[]).length).toBeGreaterThan(0);
    const asOf = Date.parse(String(board.as_of));
    // a stored venue's clock: its newest synced block (the replay's last)
    expect(asOf).toBe(replay.endTs * 1000);
    const realized = new Map<number, number>();
    for (const p of referencePositions(v, asOf)) realized.set(p.wallet_id, (realized.get(p.wallet_id) ?? 0) + p.realized_pnl);
    expect(realized.size).toBeGreaterThan(30);
    for (const [w, pnl] of realized) {
      const teaser = await getJson(`${svc.base}/v1/public/trader/${address.get(w)}`);
      expect(Number(teaser.realized_pnl), address.get(w)).toBeCloseTo(pnl, 6);
    }
    // the venue's own outcome names (Up / Down), not YES / NO, with the winner the record names
    const records = readRealGamma() as { condition_id: string; outcome_prices: string[] }[];
    for (const rec of records.slice(0, 20)) {
      const m = await getJson(`${svc.base}/v1/public/market/${rec.condition_id}`);
      expect(m.winner_outcome).toBe(rec.outcome_prices[0] === '1' ? 'Up' : 'Down');
      for (const h of m.top_holders as { outcome_side: string }[]) expect(['Up', 'Down']).toContain(h.outcome_side);
    }
    expect(svc.log()).toMatch(/as stored/);
    await stopService(svc.child);
  });

  it('follows its sources when they are configured: new blocks reach the analytics', async () => {
    const venueDir = join(dir, 'followed');
    const active = replay.blocksWithLogs();
    const t0 = replay.blockTs(active[Math.floor(active.length / 2)]!);
    replay.now = t0;
    const conn = await openVenue(join(venueDir, 'venue.duckdb'));
    const sync = await syncOf(conn, replay, urls);
    await sync.backfill();
    await sync.close();
    const [before] = await queryRows<{ f: number }>(conn, `SELECT count(*) AS f FROM fills`);
    closeVenue(conn);

    const svc = await startService({ VENUE: venueDir, GAMMA_URL: urls.gamma, POLYGON_RPC_URL: urls.rpc, VENUE_CONFIRMATIONS: '0', VENUE_POLL_MS: '200', ANALYTICS_REFRESH_MS: '300' });
    expect(Date.parse(String((await getJson(`${svc.base}/v1/public/leaderboard`)).as_of))).toBe(t0 * 1000);
    // a trader who trades 30 to 40 replayed minutes later (public routes allow 120 requests a minute: one teaser)
    const later = replay.matches.find((m) => m.ts > t0 + 1800 && m.ts < t0 + 2400 && !replay.matches.some((x) => x.taker === m.taker && x.ts > t0 && x.ts < m.ts))!;
    const lastTrade = async () => {
      const t = (await getJson(`${svc.base}/v1/public/trader/${later.taker}`)).last_trade_at;
      return typeof t === 'string' ? Date.parse(t) : 0;
    };
    expect(await lastTrade()).toBeLessThanOrEqual(t0 * 1000);
    // the venue goes on: ten replayed minutes per second
    replay.run(t0, 600);
    let seen = 0;
    for (let i = 0; i < 40 && seen < later.ts * 1000; i++) {
      await new Promise((r) => setTimeout(r, 600));
      seen = await lastTrade();
    }
    expect(seen, svc.log()).toBeGreaterThanOrEqual(later.ts * 1000);
    replay.now = replay.endTs;
    await stopService(svc.child);
    const after = await openVenue(join(venueDir, 'venue.duckdb'));
    const [a] = await queryRows<{ f: number }>(after, `SELECT count(*) AS f FROM fills`);
    closeVenue(after);
    expect(Number(a!.f)).toBeGreaterThan(Number(before!.f));
  });
});

describe('a reorg under the analytics', () => {
  it('rows the engine had seen are removed: the next refresh is a full build without them', async () => {
    const chain = new VenueReplay({ matchesPerMarket: 6, wallets: 60, seed: 5 });
    const u = await chain.listen();
    const active = chain.blocksWithLogs();
    const at = active[Math.floor(active.length / 2)]!;
    chain.now = chain.blockTs(at);
    const { instance, conn } = await openDuckDB({ path: ':memory:', threads: 2 });
    const sync = await syncOf(conn, chain, u);
    await sync.backfill();
    const engine = await AnalyticsEngine.open(instance, { now: () => new Date(chain.now * 1000) });
    const dropped = chain.reorg(at - active[Math.floor(active.length / 2) - 3]! + 1);
    expect(dropped).toBeGreaterThan(0);
    const fillLegs = async () => {
      const [r] = await queryRows<{ a: number; v: number }>(conn, `SELECT (SELECT count(*) FROM a_legs WHERE kind IN (1, 2)) AS a, (SELECT count(*) FROM fill_legs) AS v`);
      return { analytics: Number(r!.a), venue: Number(r!.v) };
    };
    // positions name the venue's outcomes, and the winner by its name
    const [w] = await queryRows<{ address: string }>(conn, `SELECT w.address FROM a_positions p JOIN wallets w USING (wallet_id) WHERE p.resolved LIMIT 1`);
    const pos = await traderPositions(duckRunner(conn), w!.address, new Date(chain.now * 1000), { limit: 50 });
    expect(pos!.rows.length).toBeGreaterThan(0);
    for (const r of pos!.rows) {
      expect(r.outcome).toBe(r.outcome_index === 0 ? 'Up' : 'Down');
      if (r.winner_outcome !== null) expect(['Up', 'Down']).toContain(r.winner_outcome);
    }
    const before = await fillLegs();
    expect(before.analytics).toBe(before.venue);
    const step = await sync.chain.step();
    expect(step?.reorged).toBeGreaterThan(0);
    while (await sync.chain.step());
    // the sync removed fills the analytics hold: an incremental refresh could not take them out
    const removed = await fillLegs();
    expect(removed.venue).toBeLessThan(before.venue);
    const version = engine.published().version;
    const report = await engine.refreshNow();
    expect(report && 'new_legs' in report).toBe(false);
    expect(engine.published().version).toBe(version + 1);
    expect(await fillLegs()).toEqual({ analytics: removed.venue, venue: removed.venue });
    // the next refresh is incremental again
    const next = await engine.refreshNow();
    expect(next && 'new_legs' in next).toBe(true);
    await sync.close();
    await engine.stop();
    conn.closeSync();
    instance.closeSync();
    await chain.close();
  });
});
