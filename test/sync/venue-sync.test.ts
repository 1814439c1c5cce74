/**
 * The venue sync against a faithful replay of the public sources (data/sync/replay.ts: the 292 real Gamma markets,
 * OrderFilled / ConditionResolution / PayoutRedemption logs encoded with viem from the real ABIs): what a sync loads
 * is the replayed venue; failures, a kill and resume, and a reorg leave the same venue as a clean sync.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows } from '../../data/duckdb.ts';
import { duckRunner } from '../../data/runner.ts';
import { MID_SOURCE, MID_SOURCE_LAST_TRADE, midSource } from '../../core/public/events.ts';
import { CONDITION_RESOLUTION_TOPIC } from '../../data/ingest/ctf.ts';
import { REPLAY_ADDRESSES, VenueReplay, readRealGamma } from '../../data/sync/replay.ts';
import { closeVenue, counts, dumpVenue, openVenue, syncOf } from './helpers.ts';

const REPLAY = { matchesPerMarket: 4, wallets: 120, seed: 11 };
let replay: VenueReplay;
let urls: { gamma: string; rpc: string };
let clean: Record<string, string[]>;
let dir: string;

beforeAll(async () => {
  replay = new VenueReplay(REPLAY);
  urls = await replay.listen();
  dir = await mkdtemp(join(tmpdir(), 'venue-sync-'));
  const conn = await openVenue();
  const sync = await syncOf(conn, replay, urls);
  await sync.backfill();
  await sync.close();
  clean = await dumpVenue(conn);
  closeVenue(conn);
});
afterAll(async () => {
  await replay?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('a clean sync of the replayed venue', () => {
  it('holds every market as Gamma describes it: ids, token order, winner', async () => {
    const records = readRealGamma() as { condition_id: string; token_ids: string[]; outcome_prices: string[] }[];
    expect(clean.markets!.length).toBe(records.length);
    const conn = await openVenue();
    const sync = await syncOf(conn, replay, urls);
    await sync.backfill();
    await sync.close();
    const rows = await queryRows<{ c: string; y: string; n: string; winner: string; tx: string }>(
      conn,
      `SELECT m.condition_id AS c, yes_token_id AS y, no_token_id AS n, r.winner, r.tx_hash AS tx FROM markets m JOIN resolutions r USING (market_id)`,
    );
    const byCondition = new Map(rows.map((r) => [r.c, r]));
    for (const rec of records) {
      const r = byCondition.get(rec.condition_id)!;
      expect([r.y, r.n]).toEqual(rec.token_ids);
      // "Up" is the first outcome: ["1","0"] pays it
      expect(r.winner).toBe(rec.outcome_prices[0] === '1' ? 'YES' : 'NO');
      // the chain's resolution replaced Gamma's (it names its transaction)
      expect(r.tx).toMatch(/^0x[0-9a-f]{64}$/);
    }
    closeVenue(conn);
  });

  it('holds one fills row per replayed match, with the taker, token, side, shares and price the logs encode', () => {
    expect(clean.fills!.length).toBe(replay.matches.length);
    const fills = clean.fills!.map((j) => JSON.parse(j) as Record<string, unknown>);
    const byTx = new Map(fills.map((f) => [f.tx_hash as string, f]));
    const tokenOf = new Map<string, { c: string; o: number }>();
    for (const m of replay.markets) (JSON.parse(String(m.clobTokenIds)) as string[]).forEach((t, o) => tokenOf.set(t, { c: String(m.conditionId).toLowerCase(), o }));
    for (const m of replay.matches) {
      const f = byTx.get(m.txHash)!;
      expect(f, m.txHash).toBeDefined();
      expect(f.taker).toBe(m.taker);
      expect(f.maker).toBe(m.maker);
      expect(f.c).toBe(tokenOf.get(m.tokenId)!.c);
      expect(f.outcome_index).toBe(tokenOf.get(m.tokenId)!.o);
      expect(f.side).toBe('BUY');
      expect(f.match_type).toBe(m.matchType);
      expect(f.shares).toBeCloseTo(m.shares, 9);
      expect(f.price).toBeCloseTo(m.usdc / m.shares, 12);
      expect(f.exchange_version).toBe(m.version);
      expect(new Date(`${f.ts as string}Z`).getTime() / 1000).toBe(m.ts);
    }
  });

  it('derives the mids from the fills: at each fill time the YES mid is the last fill\'s YES price', () => {
    const fills = clean.fills!.map((j) => JSON.parse(j) as { c: string; ts: string; outcome_index: number; price: number; log_index: number });
    const mids = new Map(clean.mids!.map((j) => JSON.parse(j) as { c: string; outcome_index: number; ts: string; mid: number }).map((m) => [`${m.c}|${m.outcome_index}|${m.ts}`, m.mid]));
    const last = new Map<string, { log: number; yes: number }>();
    for (const f of fills) {
      const k = `${f.c}|${f.ts}`;
      const yes = f.outcome_index === 0 ? f.price : 1 - f.price;
      const cur = last.get(k);
      if (!cur || f.log_index > cur.log) last.set(k, { log: f.log_index, yes });
    }
    expect(mids.size).toBe(2 * last.size);
    for (const [k, v] of last) {
      const [c, ts] = k.split('|');
      expect(mids.get(`${c}|0|${ts}`)).toBe(v.yes);
      expect(mids.get(`${c}|1|${ts}`)).toBe(1 - v.yes);
    }
  });

  it("says where its mids come from: the events' mid freshness reads last_trade on a synced venue", async () => {
    const conn = await openVenue();
    expect(await midSource(duckRunner(conn))).toBe(MID_SOURCE);
    const sync = await syncOf(conn, replay, urls, { untilBlock: BigInt(replay.firstBlock) });
    await sync.close();
    expect(await midSource(duckRunner(conn))).toBe(MID_SOURCE_LAST_TRADE);
    closeVenue(conn);
  });

  it('books the redemptions as REDEEM with one leg of winning shares', () => {
    expect(clean.inventory_events!.length).toBeGreaterThan(100);
    const ev = clean.inventory_events!.map((j) => JSON.parse(j) as { kind: string; amount: number; usdc_delta: number });
    expect(ev.every((e) => e.kind === 'REDEEM' && e.amount === e.usdc_delta && e.amount > 0)).toBe(true);
    expect(clean.inventory_legs!.length).toBe(clean.inventory_events!.length);
  });

  it('a second sync over the same venue adds nothing (cursors at the end, idempotent writes)', async () => {
    const conn = await openVenue();
    const sync = await syncOf(conn, replay, urls);
    await sync.backfill();
    const again = await sync.backfill();
    await sync.close();
    expect(again).toMatchObject({ blocks: 0, fills: 0 });
    expect(await dumpVenue(conn)).toEqual(clean);
    closeVenue(conn);
  });
});

describe('markets the chain names before Gamma was read', () => {
  it('are fetched by token and condition id before their batch loads: nothing is skipped', async () => {
    const conn = await openVenue();
    const sync = await syncOf(conn, replay, urls);
    const pages: string[] = [];
    sync.on('gamma', (p) => pages.push(p.phase));
    // the chain alone, no Gamma backfill first
    const skipped: Record<string, number> = {};
    for (let s = await sync.chain.step(); s; s = await sync.chain.step()) for (const [k, v] of Object.entries(s.skipped)) skipped[k] = (skipped[k] ?? 0) + v;
    await sync.close();
    expect(skipped.unknown_token ?? 0).toBe(0);
    expect(skipped.unknown_market ?? 0).toBe(0);
    expect(pages.length).toBeGreaterThan(0);
    expect(new Set(pages)).toEqual(new Set(['lookup']));
    const d = await dumpVenue(conn);
    expect(d.fills!.length).toBe(clean.fills!.length);
    expect(d.resolutions!.length).toBe(clean.resolutions!.length);
    closeVenue(conn);
  });
});

describe('the failure modes of the real sources', () => {
  it('429 with Retry-After, 503, truncated bodies, a duplicated page, ranges refused as too large and batches refused: the same venue', async () => {
    const flaky = new VenueReplay({ ...REPLAY, maxRange: 700 });
    // and a node that refuses JSON-RPC batches (the block headers then come one a request)
    Object.assign(flaky.failures, { rateLimitEvery: 17, retryAfterSeconds: 0, serverErrorEvery: 23, truncateEvery: 29, duplicatePage: true, noBatches: true });
    const u = await flaky.listen();
    const conn = await openVenue();
    const sync = await syncOf(conn, flaky, u);
    await sync.backfill();
    const stats = { gamma: sync.gammaSource.stats(), rpc: sync.rpcSource.stats() };
    await sync.close();
    await flaky.close();
    expect(flaky.stats.failed).toBeGreaterThan(50);
    expect(flaky.stats.refused).toBeGreaterThan(0);
    expect(stats.rpc.throttled + stats.gamma.throttled).toBeGreaterThan(10);
    const d = await dumpVenue(conn);
    expect(counts(d)).toEqual(counts(clean));
    expect(d).toEqual(clean);
    closeVenue(conn);
  });
});

describe('crash and resume', () => {
  it('a sync killed mid-backfill (SIGKILL) and run again leaves the venue an uninterrupted sync leaves, row for row', async () => {
    const slow = new VenueReplay({ ...REPLAY, maxRange: 1500 });
    const u = await slow.listen();
    const venueDir = join(dir, 'killed');
    const args = ['--import', 'tsx', 'data/sync/cli.ts', '--dir', venueDir, '--gamma', u.gamma, '--rpc', u.rpc, '--from', String(slow.firstBlock), '--confirmations', '0', '--ctf-exchange', REPLAY_ADDRESSES.exchangeV2, '--json'];
    // the first run is killed after its fifth committed batch
    const batches = await new Promise<number>((ok, fail) => {
      const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
      let seen = 0;
      let buf = '';
      child.stdout.on('data', (c: Buffer) => {
        buf += c.toString();
        const lines = buf.split('\n');
        buf = lines.pop()!;
        for (const l of lines) if (l.startsWith('{"batch"')) seen++;
        if (seen >= 5) child.kill('SIGKILL');
      });
      child.on('exit', (code, signal) => (signal === 'SIGKILL' ? ok(seen) : fail(new Error(`the sync ended (${code}) before it was killed`))));
    });
    expect(batches).toBeGreaterThanOrEqual(5);
    const mid = await openVenue(join(venueDir, 'venue.duckdb'));
    const [part] = await queryRows<{ f: number; next: string }>(mid, `SELECT (SELECT count(*) FROM fills) AS f, (SELECT value FROM sync_state WHERE source = 'chain' AND key = 'next_block') AS next`);
    closeVenue(mid);
    expect(Number(part!.f)).toBeLessThan(clean.fills!.length);
    expect(BigInt(part!.next)).toBeGreaterThan(BigInt(slow.firstBlock));
    // the second run resumes from the committed cursor and finishes
    let stderr = '';
    const code = await new Promise<number | null>((ok) => {
      const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] });
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      child.on('exit', ok);
    });
    expect(code, stderr).toBe(0);
    await slow.close();
    const conn = await openVenue(join(venueDir, 'venue.duckdb'));
    expect(await dumpVenue(conn)).toEqual(clean);
    closeVenue(conn);
  });
});

describe('reorgs', () => {
  it('a reorg that replaces the newest blocks: the orphaned rows are removed and the new fork loaded', async () => {
    const chain = new VenueReplay(REPLAY);
    const u = await chain.listen();
    // the clock stops at a block with logs, so the replaced blocks hold some
    const active = chain.blocksWithLogs();
    const at = active[Math.floor(active.length / 2)]!;
    chain.now = chain.blockTs(at);
    const conn = await openVenue();
    const sync = await syncOf(conn, chain, u);
    await sync.backfill();
    const before = (await dumpVenue(conn)).fills!.length;
    const depth = at - active[Math.floor(active.length / 2) - 2]! + 1;
    const dropped = chain.reorg(depth);
    expect(dropped).toBeGreaterThan(0);
    const step = await sync.chain.step();
    expect(step?.reorged).toBeGreaterThan(0);
    while (await sync.chain.step());
    await sync.close();
    const after = await dumpVenue(conn);
    expect(after.fills!.length).toBeLessThan(before);
    // the same venue as a sync that only ever saw the new fork
    const fresh = await openVenue();
    const s2 = await syncOf(fresh, chain, u);
    await s2.backfill();
    await s2.close();
    expect(after).toEqual(await dumpVenue(fresh));
    closeVenue(fresh);
    closeVenue(conn);
    await chain.close();
  });
});

describe('following', () => {
  it('picks up new blocks and market updates, and tells its listeners of the new fills and resolutions', async () => {
    const live = new VenueReplay(REPLAY);
    const u = await live.listen();
    const active = live.blocksWithLogs();
    const t0 = live.blockTs(active[Math.floor(active.length / 3)]!);
    live.now = t0;
    const conn = await openVenue();
    const sync = await syncOf(conn, live, u);
    await sync.backfill();
    const h0 = live.head();
    const [b] = await queryRows<{ f: number; closed: number; r: number }>(conn, `SELECT (SELECT count(*) FROM fills) AS f, (SELECT count(*) FROM markets WHERE closed_at IS NOT NULL) AS closed, (SELECT count(*) FROM resolutions) AS r`);
    const t1 = live.blockTs(active[Math.floor((2 * active.length) / 3)]!);
    live.now = t1;
    const fills: string[] = [];
    const resolved: number[] = [];
    sync.on('fill', (f) => fills.push(f.txHash));
    sync.on('resolution', (r) => resolved.push(r.marketId));
    sync.on('progress', (p) => {
      if (p.phase === 'follow') void sync.stop();
    });
    await sync.follow({ pollMs: 10, gammaEveryMs: 0 });
    await sync.close();
    const head = live.head();
    const expected = live.matches.filter((m) => live.blockAt(m.ts) <= head);
    const [a] = await queryRows<{ f: number; closed: number; r: number }>(conn, `SELECT (SELECT count(*) FROM fills) AS f, (SELECT count(*) FROM markets WHERE closed_at IS NOT NULL) AS closed, (SELECT count(*) FROM resolutions) AS r`);
    expect(Number(a!.f)).toBe(expected.length);
    expect(fills.length).toBe(Number(a!.f) - Number(b!.f));
    // the fills announced are those of the blocks read while following
    expect(new Set(fills)).toEqual(new Set(expected.filter((m) => live.blockAt(m.ts) > h0).map((m) => m.txHash)));
    // markets that closed between the two clocks are closed now, and their resolutions were announced
    const closedBy = (t: number) => live.markets.filter((m) => Date.parse(String(m.closedTime).replace(' ', 'T').replace(/\+00$/, 'Z')) / 1000 <= t).length;
    expect(Number(a!.closed)).toBe(closedBy(t1));
    expect(Number(a!.closed)).toBeGreaterThan(Number(b!.closed));
    // announced once each, when the chain's resolution lands (a Gamma-derived row it replaces was not announced)
    const onChain = live.logsIn(h0 + 1, head).filter((l) => l.topics[0] === CONDITION_RESOLUTION_TOPIC).length;
    expect(resolved.length).toBe(onChain);
    expect(new Set(resolved).size).toBe(resolved.length);
    expect(resolved.length).toBeGreaterThan(0);
    closeVenue(conn);
    await live.close();
  });
});
