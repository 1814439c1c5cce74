/**
 * The resolution feed (data/resolution-feed.ts) and GET /v1/resolutions (web-api/resolutions.ts): resolutions land
 * in DuckDB in batches, some late with a resolved_at earlier than rows already served, some before their market row;
 * a receiver that persists its cursor in a file between pages, across re-openings of the feed file (process
 * restarts), sees every resolution exactly once, in the order a brute-force reference model predicts. Plus the
 * route's auth, parameters, cursor validation and body shape over a real HTTP server.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import express from 'express';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PlanId } from '../../core/plans.ts';
import type { QueryRunner } from '../../core/query.ts';
import { ResolutionFeed, syncResolutionFeed } from '../../data/resolution-feed.ts';
import { duckRunner } from '../../data/runner.ts';
import { assignTraceId, errorHandler, notFound } from '../../web-api/errors.ts';
import { principalFor } from '../../web-api/principal.ts';
import { ResolutionsPage, resolutionsOpenApiPaths, resolutionsOpenApiSchemas, resolutionsRouter } from '../../web-api/resolutions.ts';
import { closeMemoryVenue, openMemoryVenue } from '../helpers/memory-venue.ts';
import { venueInsert } from '../../data/schema.ts';

const T0 = Date.UTC(2026, 9, 1);
const HOUR = 3_600_000;
const hex = (n: number, width: number) => n.toString(16).padStart(width, '0');
const conditionOf = (m: number) => `0x${hex(m, 64)}`;

let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'resolution-feed-'));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

/** A hand-built venue: markets and resolutions only (the feed reads nothing else). */
class Venue {
  private constructor(
    readonly instance: DuckDBInstance,
    readonly conn: DuckDBConnection,
    readonly db: QueryRunner,
  ) {}
  static async open(): Promise<Venue> {
    const { instance, conn } = await openMemoryVenue(1);
    return new Venue(instance, conn, duckRunner(conn));
  }
  async market(m: number, title = `Question ${m}?`): Promise<void> {
    await this.conn.run(
      `${venueInsert('markets')} VALUES ($1, $2, $3, NULL, $4, $5, 'politics', '1', '2', false, NULL,
        make_timestamp($6::BIGINT * 1000), make_timestamp($6::BIGINT * 1000), make_timestamp($7::BIGINT * 1000), NULL, 1000, 1000, 'synthetic')`,
      [m, conditionOf(m), `0x${hex(m + 1_000_000, 64)}`, title, title ? `question-${m}` : '', T0 - 30 * 24 * HOUR, T0 + 30 * 24 * HOUR],
    );
  }
  async resolve(m: number, resolvedMs: number, winner: 'YES' | 'NO' | 'INVALID' | null = 'YES'): Promise<void> {
    const idx = winner === 'YES' ? 0 : winner === 'NO' ? 1 : -1;
    const [y, n] = winner === 'YES' ? [1, 0] : winner === 'NO' ? [0, 1] : [1, 1];
    await this.conn.run(
      `${venueInsert('resolutions')} VALUES ($1, $2, $3, [$4, $5]::INTEGER[], $6, $7, 2, make_timestamp($8::BIGINT * 1000), $9)`,
      [m, winner, idx, y, n, y / (y + n), n / (y + n), resolvedMs, `0x${hex(m * 7 + 3, 64)}`],
    );
  }
  close(): void {
    closeMemoryVenue(this.conn, this.instance);
  }
}

/** A receiver that keeps its cursor in a file, as a webhook consumer would. */
class Receiver {
  readonly seen: string[] = [];
  readonly seqs: number[] = [];
  constructor(readonly cursorFile: string) {}
  async cursor(): Promise<string | undefined> {
    try {
      return JSON.parse(await readFile(this.cursorFile, 'utf8')).cursor as string;
    } catch {
      return undefined;
    }
  }
  /** One page straight from the feed, the way the route serves it (sync, then page after the cursor). */
  async pollFeed(feed: ResolutionFeed, db: QueryRunner, limit: number): Promise<boolean> {
    await syncResolutionFeed(db, feed);
    const c = await this.cursor();
    let after = 0;
    if (c !== undefined) {
      const check = await feed.checkCursor(c);
      if (!check.ok) throw new Error(check.reason);
      after = check.seq;
    }
    const { rows, hasMore } = await feed.page(after, limit);
    for (const r of rows) {
      this.seen.push(r.condition_id);
      this.seqs.push(r.seq);
    }
    await writeFile(this.cursorFile, JSON.stringify({ cursor: feed.cursorFor(rows.length ? rows[rows.length - 1]!.seq : after) }));
    return hasMore;
  }
}

/** Brute-force reference: on every sync, unseen resolutions whose market exists, by (resolved_at, condition_id). */
class Reference {
  readonly order: string[] = [];
  private readonly inFeed = new Set<string>();
  readonly markets = new Set<number>();
  /** market -> earliest resolved_at among its resolution rows */
  readonly resolutions = new Map<number, number>();
  sync(): void {
    const fresh = [...this.resolutions.entries()]
      .filter(([m]) => this.markets.has(m) && !this.inFeed.has(conditionOf(m)))
      .sort((a, b) => a[1] - b[1] || (conditionOf(a[0]) < conditionOf(b[0]) ? -1 : 1));
    for (const [m] of fresh) {
      this.inFeed.add(conditionOf(m));
      this.order.push(conditionOf(m));
    }
  }
}

describe('resolution feed log', () => {
  it('late and out-of-order resolutions: a receiver persisting its cursor across restarts sees each exactly once', async () => {
    const v = await Venue.open();
    const path = join(tmp, 'scenario.sqlite');
    const receiver = new Receiver(join(tmp, 'scenario-cursor.json'));
    let feed = await ResolutionFeed.open(path, { now: () => new Date(T0 + 99 * HOUR) });
    try {
      for (let m = 1; m <= 40; m++) await v.market(m);
      // batch 1: markets 1..10 resolve at hours 10..19
      for (let m = 1; m <= 10; m++) await v.resolve(m, T0 + (9 + m) * HOUR, m % 3 === 0 ? 'NO' : 'YES');
      expect(await receiver.pollFeed(feed, v.db, 4)).toBe(true);
      expect(await receiver.pollFeed(feed, v.db, 4)).toBe(true);
      // batch 2 arrives late: resolved before everything served so far (hours 1..5), plus a tie (winner null)
      for (let m = 11; m <= 15; m++) await v.resolve(m, T0 + (m - 10) * HOUR, m === 15 ? null : 'NO');
      await v.resolve(16, T0 + 12 * HOUR, 'INVALID');
      expect(await receiver.pollFeed(feed, v.db, 4)).toBe(true);
      // process restart: the feed file is reopened, the receiver reads its cursor file
      await feed.close();
      feed = await ResolutionFeed.open(path, { now: () => new Date(T0 + 100 * HOUR) });
      // batch 3: a resolution whose market row is not there yet, and a duplicate row of an already-fed market
      await v.resolve(50, T0 + 2 * HOUR);
      await v.resolve(3, T0 + HOUR);
      while (await receiver.pollFeed(feed, v.db, 3));
      expect(receiver.seen).toHaveLength(16);
      // the market row of 50 lands: it joins the feed after everything else, though it resolved at hour 2
      await v.market(50, '');
      expect(await receiver.pollFeed(feed, v.db, 100)).toBe(false);
      expect(receiver.seen).toHaveLength(17);
      expect(receiver.seen.at(-1)).toBe(conditionOf(50));
      expect(new Set(receiver.seen).size).toBe(receiver.seen.length);
      expect(receiver.seqs).toEqual([...receiver.seqs].sort((a, b) => a - b));
      const expected = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 50].map(conditionOf).sort();
      expect([...receiver.seen].sort()).toEqual(expected);
      // nothing new: the next poll is empty and the cursor stays put
      const before = await receiver.cursor();
      expect(await receiver.pollFeed(feed, v.db, 10)).toBe(false);
      expect(await receiver.cursor()).toBe(before);
      expect(receiver.seen).toHaveLength(17);

      // the stored fields are the spec's market.resolved data
      const all = (await feed.page(0, 100)).rows;
      const tie = all.find((r) => r.condition_id === conditionOf(15))!;
      expect(tie).toMatchObject({ winner_outcome: null, winner_index: -1, outcome_slot_count: 2, market_kind: 'binary', category: 'politics', resolved_time: new Date(T0 + 5 * HOUR).toISOString() });
      expect(all.find((r) => r.condition_id === conditionOf(16))!.winner_outcome).toBe('INVALID');
      // the duplicate row of market 3 did not change its entry (first seen wins)
      expect(all.find((r) => r.condition_id === conditionOf(3))!.resolved_time).toBe(new Date(T0 + 12 * HOUR).toISOString());
      const young = all.find((r) => r.condition_id === conditionOf(50))!;
      expect(young.title).toBe('');
      expect(young.slug).toBe('');
      expect(young.recorded_at).toBe(new Date(T0 + 100 * HOUR).toISOString());

      // insert-only
      await expect(feed.db.run(`UPDATE resolution_feed SET title = 'x'`)).rejects.toThrow(/insert-only/);
      await expect(feed.db.run(`DELETE FROM resolution_feed`)).rejects.toThrow(/insert-only/);
    } finally {
      await feed.close();
      v.close();
    }
  });

  it('concurrent syncs coalesce: no duplicate, nothing lost', async () => {
    const v = await Venue.open();
    const feed = await ResolutionFeed.open(join(tmp, 'concurrent.sqlite'));
    try {
      for (let m = 1; m <= 300; m++) await v.market(m);
      const jobs: Promise<unknown>[] = [];
      for (let m = 1; m <= 300; m++) {
        await v.resolve(m, T0 + ((m * 37) % 300) * HOUR);
        if (m % 25 === 0) for (let k = 0; k < 4; k++) jobs.push(feed.sync(v.db));
      }
      await Promise.all(jobs);
      const last = await feed.sync(v.db);
      expect(last.total).toBe(300);
      const rows = (await feed.page(0, 1000)).rows;
      expect(new Set(rows.map((r) => r.condition_id)).size).toBe(300);
      expect(rows.map((r) => r.seq)).toEqual([...rows.map((r) => r.seq)].sort((a, b) => a - b));
      // an unchanged venue is not read again
      expect((await feed.sync(v.db)).skipped).toBe(true);
    } finally {
      await feed.close();
      v.close();
    }
  });

  it('cursors: opaque, versioned, bound to their feed, validated', async () => {
    const v = await Venue.open();
    const a = await ResolutionFeed.open(join(tmp, 'cursor-a.sqlite'));
    const b = await ResolutionFeed.open(join(tmp, 'cursor-b.sqlite'));
    try {
      for (let m = 1; m <= 5; m++) {
        await v.market(m);
        await v.resolve(m, T0 + m * HOUR);
      }
      await a.sync(v.db);
      await b.sync(v.db);
      expect(a.feedId).not.toBe(b.feedId);
      const c3 = a.cursorFor(3);
      expect(c3).toMatch(/^[A-Za-z0-9_-]+$/);
      expect(await a.checkCursor(c3)).toEqual({ ok: true, seq: 3 });
      expect(await a.checkCursor(a.cursorFor(0))).toEqual({ ok: true, seq: 0 });
      expect((await b.checkCursor(c3)).ok).toBe(false);
      expect((await a.checkCursor(a.cursorFor(6))).ok).toBe(false);
      for (const bad of ['', 'abc', '!!!', `${c3}=`, Buffer.from('rf1:zz:1').toString('base64url'), Buffer.from(`rf2:${a.feedId}:1`).toString('base64url'), Buffer.from(`rf1:${a.feedId}:01`).toString('base64url'), Buffer.from(`rf1:${a.feedId}:-1`).toString('base64url'), Buffer.from(`rf1:${a.feedId}:99999999999999999`).toString('base64url')]) {
        expect((await a.checkCursor(bad)).ok, bad).toBe(false);
      }
    } finally {
      await a.close();
      await b.close();
      v.close();
    }
  });

  it('property: any batch schedule, any page sizes, restarts: exactly the reference sequence, once each', async () => {
    type Step =
      | { kind: 'resolve'; markets: { m: number; hoursAgo: number; withMarket: boolean }[] }
      | { kind: 'poll'; limit: number; pages: number }
      | { kind: 'restart' }
      | { kind: 'list_markets' };
    const step: fc.Arbitrary<Step> = fc.oneof(
      {
        weight: 4,
        arbitrary: fc
          .array(fc.record({ m: fc.integer({ min: 1, max: 60 }), hoursAgo: fc.integer({ min: -50, max: 200 }), withMarket: fc.boolean() }), { minLength: 1, maxLength: 12 })
          .map((markets) => ({ kind: 'resolve' as const, markets })),
      },
      { weight: 4, arbitrary: fc.record({ kind: fc.constant('poll' as const), limit: fc.integer({ min: 1, max: 7 }), pages: fc.integer({ min: 1, max: 3 }) }) },
      { weight: 1, arbitrary: fc.constant({ kind: 'restart' as const }) },
      { weight: 1, arbitrary: fc.constant({ kind: 'list_markets' as const }) },
    );
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 14 }), async (steps) => {
        run++;
        const v = await Venue.open();
        const path = join(tmp, `prop-${run}.sqlite`);
        const receiver = new Receiver(join(tmp, `prop-${run}-cursor.json`));
        const ref = new Reference();
        let feed = await ResolutionFeed.open(path);
        const addMarket = async (m: number) => {
          if (ref.markets.has(m)) return;
          await v.market(m);
          ref.markets.add(m);
        };
        const poll = async (limit: number) => {
          ref.sync();
          return receiver.pollFeed(feed, v.db, limit);
        };
        try {
          for (const s of steps) {
            if (s.kind === 'resolve') {
              for (const r of s.markets) {
                if (r.withMarket) await addMarket(r.m);
                // "hours ago" relative to a moving clock: later batches often resolved before earlier ones
                const at = T0 + (1000 - r.hoursAgo) * HOUR;
                await v.resolve(r.m, at);
                const prev = ref.resolutions.get(r.m);
                // a repeated row of a market already in the feed changes nothing; before that, the earliest row counts
                if (prev === undefined || (!ref.order.includes(conditionOf(r.m)) && at < prev)) ref.resolutions.set(r.m, at);
              }
            } else if (s.kind === 'poll') {
              for (let i = 0; i < s.pages; i++) if (!(await poll(s.limit))) break;
            } else if (s.kind === 'restart') {
              await feed.close();
              feed = await ResolutionFeed.open(path);
            } else {
              for (const m of ref.resolutions.keys()) await addMarket(m);
            }
          }
          // drain
          while (await poll(5));
          expect(receiver.seen).toEqual(ref.order);
          expect(new Set(receiver.seen).size).toBe(receiver.seen.length);
          for (let i = 1; i < receiver.seqs.length; i++) expect(receiver.seqs[i]!).toBeGreaterThan(receiver.seqs[i - 1]!);
          const eligible = [...ref.resolutions.keys()].filter((m) => ref.markets.has(m)).map(conditionOf).sort();
          expect([...receiver.seen].sort()).toEqual(eligible);
        } finally {
          await feed.close();
          v.close();
        }
      }),
      { numRuns: 60 },
    );
  }, 170_000);
});

// ---------------------------------------------------------------------------------------------------------------
// GET /v1/resolutions over HTTP
// ---------------------------------------------------------------------------------------------------------------

describe('GET /v1/resolutions', () => {
  let v: Venue;
  let feed: ResolutionFeed;
  let other: ResolutionFeed;
  let server: Server;
  let base: string;
  const ERROR_KEYS = new Set(['error', 'message', 'reason', 'issues', 'trace_id']);
  const get = (path: string, plan: PlanId | 'none' = 'free') => fetch(`${base}${path}`, { headers: { 'x-test-plan': plan } });
  async function expectError(res: Response, status: number, code: string) {
    expect(res.status).toBe(status);
    const body = (await res.json()) as Record<string, unknown>;
    for (const k of Object.keys(body)) expect(ERROR_KEYS.has(k), k).toBe(true);
    expect(body.error).toBe(code);
    expect(typeof body.trace_id).toBe('string');
    return body;
  }

  beforeAll(async () => {
    v = await Venue.open();
    feed = await ResolutionFeed.open(join(tmp, 'route.sqlite'));
    other = await ResolutionFeed.open(join(tmp, 'route-other.sqlite'));
    for (let m = 1; m <= 30; m++) {
      await v.market(m);
      await v.resolve(m, T0 + (31 - m) * HOUR, m % 2 ? 'YES' : 'NO');
    }
    const app = express();
    app.set('query parser', 'simple');
    app.use(assignTraceId);
    app.use((req, res, next) => {
      const plan = String(req.headers['x-test-plan'] ?? 'none');
      if (plan === 'free' || plan === 'pro') res.locals.principal = principalFor('api_key', 'u1', plan);
      next();
    });
    app.use('/v1/resolutions', resolutionsRouter({ db: v.db, feed, now: () => new Date(T0 + 100 * HOUR) }));
    // the same feed behind a venue connection that fails: pages are still served from the log
    const broken: QueryRunner = { all: () => Promise.reject(new Error('venue down')), run: () => Promise.reject(new Error('venue down')) };
    app.use('/broken/resolutions', resolutionsRouter({ db: broken, feed, now: () => new Date(T0 + 100 * HOUR) }));
    app.use(notFound);
    app.use(errorHandler);
    server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((r) => server?.close(r));
    await feed?.close();
    await other?.close();
    v?.close();
  });

  it('needs a session or key', async () => {
    await expectError(await get('/v1/resolutions', 'none'), 401, 'auth_required');
  });

  it('pages in the spec shape; a receiver resumes from next_cursor and sees every resolution once', async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let guard = 0; guard < 20; guard++) {
      const res = await get(`/v1/resolutions?limit=7${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('cache-control')).toBe('no-store');
      const page = ResolutionsPage.strict().parse(await res.json());
      for (const r of page.rows) {
        expect(Object.keys(r).sort()).toEqual(Object.keys(ResolutionsPage.shape.rows.element.shape).sort());
        seen.push(r.condition_id);
      }
      if (page.rows.length) expect(page.rows.at(-1)!.cursor).toBe(page.next_cursor);
      cursor = page.next_cursor;
      if (!page.has_more) break;
    }
    expect(seen).toHaveLength(30);
    // the first sync took them all at once: resolved_at order (market 30 resolved first)
    expect(seen[0]).toBe(conditionOf(30));
    // a late one, resolved before all of them, comes after the cursor
    await v.market(99);
    await v.resolve(99, T0 - 100 * HOUR, 'INVALID');
    const res = await get(`/v1/resolutions?cursor=${cursor}`);
    const page = ResolutionsPage.parse(await res.json());
    expect(page.rows.map((r) => r.condition_id)).toEqual([conditionOf(99)]);
    expect(page.rows[0]).toMatchObject({ winner_outcome: 'INVALID', winner_index: -1, seq: 31 });
    expect(page.has_more).toBe(false);
    // empty page: the cursor comes back unchanged
    const empty = ResolutionsPage.parse(await (await get(`/v1/resolutions?cursor=${page.next_cursor}`)).json());
    expect(empty.rows).toEqual([]);
    expect(empty.next_cursor).toBe(page.next_cursor);
    // default limit 100 and max 1000
    expect(ResolutionsPage.parse(await (await get('/v1/resolutions')).json()).rows).toHaveLength(31);
    expect((await get('/v1/resolutions?limit=1000')).status).toBe(200);
  });

  it('a failed sync serves the log as recorded (X-Feed-Sync: failed)', async () => {
    const errors: unknown[] = [];
    const orig = console.error;
    console.error = (...a: unknown[]) => void errors.push(a);
    try {
      const res = await get('/broken/resolutions?limit=2');
      expect(res.status).toBe(200);
      expect(res.headers.get('x-feed-sync')).toBe('failed');
      expect(ResolutionsPage.strict().parse(await res.json()).rows.map((r) => r.seq)).toEqual([1, 2]);
      expect(errors).toHaveLength(1);
    } finally {
      console.error = orig;
    }
  });

  it('documented errors', async () => {
    for (const q of ['limit=0', 'limit=1001', 'limit=abc', 'limit=', 'limit=1.5', 'limit=-1', 'since=1', 'cursor=', 'cursor=nope', 'cursor=%00', `cursor=${other.cursorFor(0)}`, `cursor=${feed.cursorFor(10_000)}`, 'limit=5&limit=6']) {
      await expectError(await get(`/v1/resolutions?${q}`), 400, 'invalid_request');
    }
  });

  it('fuzz: never a 500, every error is the error object', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.constantFrom('cursor', 'limit', 'x'), fc.oneof(fc.string({ maxLength: 20 }), fc.integer().map(String), fc.constant(feed.cursorFor(3)))), { maxLength: 3 }),
        fc.constantFrom<PlanId | 'none'>('none', 'free', 'pro'),
        async (params, plan) => {
          const qs = new URLSearchParams(params).toString();
          const res = await get(`/v1/resolutions${qs ? `?${qs}` : ''}`, plan);
          expect(res.status).toBeLessThan(500);
          const body = (await res.json()) as Record<string, unknown>;
          if (res.status >= 400) {
            for (const k of Object.keys(body)) expect(ERROR_KEYS.has(k), k).toBe(true);
            expect(typeof body.error).toBe('string');
          } else ResolutionsPage.strict().parse(body);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('OpenAPI pieces', () => {
    const paths = resolutionsOpenApiPaths() as Record<string, { get: { responses: Record<string, unknown> } }>;
    expect(Object.keys(paths)).toEqual(['/v1/resolutions']);
    expect(Object.keys(paths['/v1/resolutions']!.get.responses)).toEqual(expect.arrayContaining(['200', '400', '401']));
    const schemas = resolutionsOpenApiSchemas() as Record<string, { properties: Record<string, unknown>; required: string[] }>;
    expect(Object.keys(schemas.ResolutionsPage!.properties).sort()).toEqual(['has_more', 'next_cursor', 'rows']);
  });
});
