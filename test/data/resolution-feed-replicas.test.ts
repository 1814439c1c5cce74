/**
 * The resolution feed (data/resolution-feed.ts) on SQLite and on PostgreSQL with several feed instances on one
 * database standing for replicas (each with its own DuckDB connection to the venue): replicas syncing at once give
 * every resolution exactly one row and one seq, seqs dense from 1 in the order a brute-force reference predicts;
 * every replica issues and accepts the same cursors, and a receiver paging across replicas sees each resolution
 * once; the log is insert-only in the engine; a reopened feed keeps its id and adds nothing twice; and replica
 * processes syncing one venue into a fresh feed at once add each resolution once, with seqs 1..n.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { QueryRunner } from '../../core/query.ts';
import { RESOLUTION_FEED_MIGRATIONS, ResolutionFeed } from '../../data/resolution-feed.ts';
import { duckRunner } from '../../data/runner.ts';
import { openDuckDB } from '../../data/duckdb.ts';
import { createVenueSchema, venueInsert } from '../../data/schema.ts';
import { openServiceDb, type SqlDb } from '../../data/sql/db.ts';
import { closeMemoryVenue, openMemoryVenue } from '../helpers/memory-venue.ts';
import { replicas, SERVICE_ENGINES } from '../helpers/service-engines.ts';

const T0 = Date.UTC(2026, 9, 1);
const HOUR = 3_600_000;
const hex = (n: number, width: number) => n.toString(16).padStart(width, '0');
const conditionOf = (m: number) => `0x${hex(m, 64)}`;

async function addMarket(conn: DuckDBConnection, m: number): Promise<void> {
  await conn.run(
    `${venueInsert('markets')} VALUES ($1, $2, $3, NULL, $4, $5, 'politics', '1', '2', false, NULL,
      make_timestamp($6::BIGINT * 1000), make_timestamp($6::BIGINT * 1000), make_timestamp($7::BIGINT * 1000), NULL, 1000, 1000, 'synthetic')`,
    [m, conditionOf(m), `0x${hex(m + 1_000_000, 64)}`, `Question ${m}?`, `question-${m}`, T0 - 30 * 24 * HOUR, T0 + 30 * 24 * HOUR],
  );
}
async function addResolution(conn: DuckDBConnection, m: number, resolvedMs: number): Promise<void> {
  await conn.run(`${venueInsert('resolutions')} VALUES ($1, 'YES', 0, [1, 0]::INTEGER[], 1, 0, 2, make_timestamp($2::BIGINT * 1000), $3)`, [m, resolvedMs, `0x${hex(m * 7 + 3, 64)}`]);
}

/** Run the replica child: resolves with how many entries it added. */
function startReplica(target: string, venue: string): { ready: Promise<void>; go(): void; inserted: Promise<number> } {
  const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, '../helpers/feed-replica-child.ts'), target, venue], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout });
  let ready!: () => void;
  let done!: (n: number) => void;
  const out = { ready: new Promise<void>((r) => (ready = r)), inserted: new Promise<number>((r) => (done = r)) };
  lines.on('line', (l) => (l === 'ready' ? ready() : done((JSON.parse(l) as { inserted: number }).inserted)));
  const exited = new Promise<number | null>((r) => child.on('exit', r)).then((c) => Promise.reject(new Error(`replica exited ${c}`)));
  exited.catch(() => {});
  return { ready: Promise.race([out.ready, exited]), go: () => child.stdin.write('go\n'), inserted: Promise.race([out.inserted, exited]) };
}

describe.each(SERVICE_ENGINES)('the resolution feed across replicas on $name', (engine) => {
  let target: string;
  let drop: () => Promise<void>;
  let dbs: { a: SqlDb; b: SqlDb; close(): Promise<void> };
  /** more PostgreSQL pools (more replicas); none on SQLite, where a process has one connection */
  let more: SqlDb[] = [];
  let feeds: ResolutionFeed[];
  let instance: DuckDBInstance;
  let conn: DuckDBConnection;
  let sources: QueryRunner[];
  const sourceConns: DuckDBConnection[] = [];

  beforeAll(async () => {
    ({ target, drop } = await engine.fresh('feed'));
    dbs = await replicas(engine, target);
    more = engine.name === 'PostgreSQL' ? await Promise.all([openServiceDb(target), openServiceDb(target)]) : [];
    // every replica opens (and migrates) the database at the same moment
    feeds = await Promise.all([dbs.a, dbs.b, ...more].map((db) => ResolutionFeed.open(db)));
    ({ instance, conn } = await openMemoryVenue(1));
    // each replica reads the venue on a connection of its own
    for (let i = 0; i < feeds.length; i++) sourceConns.push(await instance.connect());
    sources = sourceConns.map((c) => duckRunner(c));
  }, 60_000);
  afterAll(async () => {
    for (const c of sourceConns) c.closeSync();
    closeMemoryVenue(conn, instance);
    for (const db of more) await db.close();
    await dbs?.close();
    await drop?.();
  });

  it('applies its migration once; every replica has the same feed id and the same cursors', async () => {
    const rows = await dbs.a.all<{ name: string }>(`SELECT name FROM schema_migrations WHERE store = 'resolution_feed'`);
    expect(rows.map((r) => r.name)).toEqual(RESOLUTION_FEED_MIGRATIONS.map((m) => m.name));
    expect(new Set(feeds.map((f) => f.feedId)).size).toBe(1);
    expect(feeds[0]!.feedId).toMatch(/^[0-9a-f]{16}$/);
    expect(feeds[1]!.parseCursor(feeds[0]!.cursorFor(0))).toEqual({ ok: true, seq: 0 });
  });

  it('replicas syncing at once: one row and one seq per resolution, dense seqs in the reference order; a receiver paging across replicas sees each once', async () => {
    const order: string[] = []; // the reference: each round, the new eligible resolutions by (resolved_at, condition_id)
    const inFeed = new Set<string>();
    const markets = new Set<number>();
    const resolvedAt = new Map<number, number>();
    const seen: string[] = [];
    let cursor: string | undefined;
    let m = 0;
    for (let round = 0; round < 8; round++) {
      // new resolutions, resolved before or after everything so far; a few before their market row exists
      for (let i = 0; i < 40; i++) {
        m++;
        const at = T0 + (((m * 7919) % 500) - round * 10) * HOUR;
        if (m % 9 !== 0) {
          await addMarket(conn, m);
          markets.add(m);
        }
        await addResolution(conn, m, at);
        resolvedAt.set(m, at);
      }
      // a market row that was missing lands in a later round
      for (const late of [...resolvedAt.keys()].filter((x) => !markets.has(x) && x % 18 === 0)) {
        await addMarket(conn, late);
        markets.add(late);
      }
      const fresh = [...resolvedAt.entries()].filter(([x]) => markets.has(x) && !inFeed.has(conditionOf(x))).sort((p, q) => p[1] - q[1] || (conditionOf(p[0]) < conditionOf(q[0]) ? -1 : 1));
      for (const [x] of fresh) {
        inFeed.add(conditionOf(x));
        order.push(conditionOf(x));
      }
      // every replica syncs, several times, all at once
      const results = await Promise.all(feeds.flatMap((f, i) => [f.sync(sources[i]!), f.sync(sources[i]!)]));
      expect(results.reduce((n, r) => n + r.inserted, 0)).toBe(fresh.length);

      const all = await dbs.b.all<{ seq: number; condition_id: string }>(`SELECT seq, condition_id FROM resolution_feed ORDER BY seq`);
      expect(all.map((r) => Number(r.seq))).toEqual(Array.from({ length: order.length }, (_, i) => i + 1));
      expect(all.map((r) => r.condition_id)).toEqual(order);
      for (const f of feeds) expect(await f.maxSeq()).toBe(order.length);

      // a receiver pages from whichever replica answers, resuming from the cursor the previous one gave
      for (let page = 0; ; page++) {
        const f = feeds[(round + page) % feeds.length]!;
        let after = 0;
        if (cursor !== undefined) {
          const c = await f.checkCursor(cursor);
          if (!c.ok) throw new Error(c.reason);
          after = c.seq;
        }
        const { rows, hasMore } = await f.page(after, 7);
        seen.push(...rows.map((r) => r.condition_id));
        cursor = f.cursorFor(rows.length ? rows.at(-1)!.seq : after);
        if (!hasMore) break;
      }
      expect(seen).toEqual(order);
    }
    expect(order.length).toBeGreaterThan(250);
    // the stored fields of one entry
    const [one] = (await feeds[1]!.page(0, 1)).rows;
    expect(one).toMatchObject({ seq: 1, condition_id: order[0], winner_outcome: 'YES', winner_index: 0, outcome_slot_count: 2, market_kind: 'binary', category: 'politics' });
    // nothing new: every replica's next sync adds nothing
    for (const [i, f] of feeds.entries()) expect((await f.sync(sources[i]!)).inserted).toBe(0);
    // a cursor past the end is refused by every replica
    for (const f of feeds) expect((await f.checkCursor(f.cursorFor(order.length + 1))).ok).toBe(false);
  }, 120_000);

  it('insert-only in the engine; a reopened feed keeps its id and adds nothing twice', async () => {
    await expect(dbs.a.run(`UPDATE resolution_feed SET title = 'x'`)).rejects.toThrow(/insert-only/);
    await expect(dbs.b.run(`DELETE FROM resolution_feed WHERE seq = 1`)).rejects.toThrow(/insert-only/);
    const before = await feeds[0]!.size();
    const reopened = await ResolutionFeed.open(dbs.b);
    expect(reopened.feedId).toBe(feeds[0]!.feedId);
    const r = await reopened.sync(sources[1]!);
    expect(r).toMatchObject({ inserted: 0, total: before, skipped: false });
    expect(await reopened.size()).toBe(before);
  });

  it('three replica processes syncing one venue into a fresh feed at once: each resolution once, seqs 1..n', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'feed-procs-'));
    const fresh = await engine.fresh('feed_procs');
    try {
      // a venue file the processes open read-only
      const venue = join(dir, 'venue.duckdb');
      const v = await openDuckDB({ path: venue, threads: 1 });
      await createVenueSchema(v.conn);
      const n = 1500;
      // the same rows as addMarket and addResolution, in two statements
      await v.conn.run(
        `${venueInsert('markets')} SELECT m, '0x' || lpad(lower(hex(m)), 64, '0'), '0x' || lpad(lower(hex(m + 1000000)), 64, '0'), NULL, 'Question ' || m || '?', 'question-' || m,
          'politics', '1', '2', false, NULL, make_timestamp(${T0 - 30 * 24 * HOUR}::BIGINT * 1000), make_timestamp(${T0 - 30 * 24 * HOUR}::BIGINT * 1000),
          make_timestamp(${T0 + 30 * 24 * HOUR}::BIGINT * 1000), NULL, 1000, 1000, 'synthetic' FROM range(1, ${n + 1}) t(m)`,
      );
      await v.conn.run(
        `${venueInsert('resolutions')} SELECT m, 'YES', 0, [1, 0]::INTEGER[], 1, 0, 2, make_timestamp((${T0} + ((m * 7919) % 997) * ${HOUR})::BIGINT * 1000), '0x' || lpad(lower(hex(m * 7 + 3)), 64, '0')
          FROM range(1, ${n + 1}) t(m)`,
      );
      v.conn.closeSync();
      v.instance.closeSync();
      const procs = [0, 1, 2].map(() => startReplica(fresh.target, venue));
      await Promise.all(procs.map((p) => p.ready));
      for (const p of procs) p.go();
      const inserted = await Promise.all(procs.map((p) => p.inserted));
      expect(inserted.reduce((x, y) => x + y, 0)).toBe(n);
      const db = await openServiceDb(fresh.target);
      try {
        const rows = await db.all<{ seq: number; condition_id: string }>(`SELECT seq, condition_id FROM resolution_feed ORDER BY seq`);
        expect(rows.map((r) => Number(r.seq))).toEqual(Array.from({ length: n }, (_, i) => i + 1));
        expect(new Set(rows.map((r) => r.condition_id)).size).toBe(n);
      } finally {
        await db.close();
      }
    } finally {
      await fresh.drop();
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
