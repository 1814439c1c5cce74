/**
 * Rate counters: the SQL store (on SQLite, and on PostgreSQL with two stores on two pools as two replicas) and the
 * Redis store (real Redis on 127.0.0.1:6379) agree with a brute-force reference on any interleaving of hits over
 * keys and windows; concurrent hits from two replicas (and two processes' worth on PostgreSQL) count exactly;
 * ended windows are swept; aligned windows by hand; and the whole app limits a key the same way over Redis.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLANS } from '../../core/plans.ts';
import { RATE_MIGRATIONS, RedisRateStore, SqlRateStore, windowOf } from '../../data/rate-limit.ts';
import { openServiceDb, type SqlDb } from '../../data/sql/db.ts';
import { duckRunner } from '../../data/runner.ts';
import { startApp } from '../helpers/app.ts';
import { closeMemoryVenue, openMemoryVenue } from '../helpers/memory-venue.ts';
import { replicas, SERVICE_ENGINES } from '../helpers/service-engines.ts';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
let dir: string;
let redis: Redis;
const runId = `test-${process.pid}-${Date.now()}`;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'rate-'));
  redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  await redis.ping();
});
afterAll(async () => {
  const keys = await redis.keys(`${runId}:*`);
  if (keys.length) await redis.del(...keys);
  redis.disconnect();
  await rm(dir, { recursive: true, force: true });
});

describe('windows', () => {
  it('aligns minutes and calendar months (UTC) by hand', () => {
    const t = Date.UTC(2026, 1, 28, 23, 59, 30); // 2026-02-28 23:59:30
    expect(windowOf(t, 60_000)).toEqual({ start: Date.UTC(2026, 1, 28, 23, 59), end: Date.UTC(2026, 2, 1, 0, 0) });
    expect(windowOf(t, 'month')).toEqual({ start: Date.UTC(2026, 1, 1), end: Date.UTC(2026, 2, 1) });
    expect(windowOf(Date.UTC(2026, 11, 31, 12), 'month')).toEqual({ start: Date.UTC(2026, 11, 1), end: Date.UTC(2027, 0, 1) });
  });
});

describe('stores', () => {
  it('SQLite and Redis count exactly like a brute-force reference', async () => {
    let run = 0;
    // live windows (Redis expires a counter at its window's end)
    const base = windowOf(Date.now(), 60_000).start + 3600_000;
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(fc.constantFrom('a', 'b', 'c'), fc.integer({ min: 0, max: 3 })), { minLength: 1, maxLength: 60 }), async (ops) => {
        run++;
        const sqlite = await SqlRateStore.open(join(dir, `r${run}.sqlite`));
        const rstore = new RedisRateStore(redis, `${runId}:${run}:`);
        const ref = new Map<string, number>();
        const results = await Promise.all(
          ops.map(async ([key, w]) => {
            const start = base + w * 60_000;
            return [await sqlite.hit(key, start, start + 60_000), await rstore.hit(key, start, start + 60_000)];
          }),
        );
        // hits on the same counter are numbered 1..n in some order: compare the multisets per counter
        const seen = new Map<string, { s: number[]; r: number[] }>();
        ops.forEach(([key, w], i) => {
          const k = `${key}:${w}`;
          ref.set(k, (ref.get(k) ?? 0) + 1);
          const e = seen.get(k) ?? { s: [], r: [] };
          e.s.push(results[i]![0]!);
          e.r.push(results[i]![1]!);
          seen.set(k, e);
        });
        for (const [k, n] of ref) {
          const want = Array.from({ length: n }, (_, i) => i + 1);
          expect(seen.get(k)!.s.sort((x, y) => x - y)).toEqual(want);
          expect(seen.get(k)!.r.sort((x, y) => x - y)).toEqual(want);
          const [key, w] = k.split(':');
          expect(await sqlite.peek(key!, base + Number(w) * 60_000)).toBe(n);
          expect(await rstore.peek(key!, base + Number(w) * 60_000)).toBe(n);
        }
        await sqlite.close();
      }),
      { numRuns: 40 },
    );
  });

  it('Redis drops a counter after its window ends', async () => {
    const rstore = new RedisRateStore(redis, `${runId}:ttl:`);
    const end = Date.now() + 60_000;
    await rstore.hit('k', 0, end);
    const ttl = await redis.pttl(`${runId}:ttl:k:0`);
    expect(ttl).toBeGreaterThan(55_000);
    expect(ttl).toBeLessThanOrEqual(61_000);
  });
});

describe.each(SERVICE_ENGINES)('the SQL rate store on $name', (engine) => {
  let drop: () => Promise<void>;
  let dbs: { a: SqlDb; b: SqlDb; close(): Promise<void> };
  let A: SqlRateStore;
  let B: SqlRateStore;
  let target: string;
  // live windows an hour ahead: a sweep (every 5000th hit of a store) never drops them mid-test
  const base = windowOf(Date.now(), 60_000).start + 3600_000;

  beforeAll(async () => {
    ({ target, drop } = await engine.fresh('rates'));
    dbs = await replicas(engine, target);
    // two replicas open (and migrate) the database at the same moment
    [A, B] = await Promise.all([SqlRateStore.open(dbs.a), SqlRateStore.open(dbs.b)]);
  }, 60_000);
  afterAll(async () => {
    await dbs?.close();
    await drop?.();
  });

  it('applies its migration once', async () => {
    const rows = await dbs.a.all<{ name: string }>(`SELECT name FROM schema_migrations WHERE store = 'rate_counters'`);
    expect(rows.map((r) => r.name)).toEqual(RATE_MIGRATIONS.map((m) => m.name));
  });

  it('concurrent hits from two replicas count exactly, like a brute-force reference', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(fc.constantFrom('a', 'b', 'c'), fc.integer({ min: 0, max: 3 }), fc.boolean()), { minLength: 1, maxLength: 80 }), fc.integer(), async (ops, salt) => {
        const prefix = `p${salt}:${Math.random().toString(36).slice(2)}:`;
        // every hit at once, half on each replica
        const results = await Promise.all(ops.map(([key, w, onA]) => (onA ? A : B).hit(prefix + key, base + w * 60_000, base + (w + 1) * 60_000)));
        const ref = new Map<string, number[]>();
        ops.forEach(([key, w], i) => ref.set(`${key}:${w}`, [...(ref.get(`${key}:${w}`) ?? []), results[i]!]));
        for (const [k, counts] of ref) {
          // the hits on one counter got 1..n, each once
          expect(counts.sort((x, y) => x - y)).toEqual(Array.from({ length: counts.length }, (_, i) => i + 1));
          const [key, w] = k.split(':');
          expect(await A.peek(prefix + key!, base + Number(w) * 60_000)).toBe(counts.length);
          expect(await B.peek(prefix + key!, base + Number(w) * 60_000)).toBe(counts.length);
        }
        // a counter nobody hit
        expect(await B.peek(`${prefix}never`, base)).toBe(0);
      }),
      { numRuns: 30 },
    );
  }, 120_000);

  it('many hits on one counter from two replicas (and more connections on PostgreSQL): the last count is the total', async () => {
    // on PostgreSQL, four more pools stand for more replicas; on SQLite every store of the process shares one connection
    const more = engine.name === 'PostgreSQL' ? await Promise.all(Array.from({ length: 4 }, () => openServiceDb(target))) : [];
    const stores = [A, B, ...(await Promise.all(more.map((db) => SqlRateStore.open(db))))];
    const n = 600;
    const counts = await Promise.all(Array.from({ length: n }, (_, i) => stores[i % stores.length]!.hit('hot', base, base + 60_000)));
    expect(counts.sort((x, y) => x - y)).toEqual(Array.from({ length: n }, (_, i) => i + 1));
    expect(await A.peek('hot', base)).toBe(n);
    for (const db of more) await db.close();
  }, 60_000);

  it('sweeps ended windows now and then, keeping live ones', async () => {
    const now = Date.now();
    await A.hit('old', now - 120_000, now - 60_000);
    await A.hit('live', now, now + 60_000);
    // the sweep runs on every 5000th hit of a store
    const fresh = await SqlRateStore.open(dbs.a);
    for (let i = 0; i < 4999; i++) await fresh.hit('filler', now, now + 60_000);
    expect(await A.peek('old', now - 120_000)).toBe(1);
    await fresh.hit('filler', now, now + 60_000);
    expect(await A.peek('old', now - 120_000)).toBe(0);
    expect(await A.peek('live', now)).toBe(1);
    expect(await A.peek('filler', now)).toBe(5000);
  }, 60_000);
});

describe('the app over Redis', () => {
  it("limits a Free key to its plan's per-minute rate", async () => {
    const { instance, conn } = await openMemoryVenue();
    const t = await startApp(duckRunner(conn), { rates: new RedisRateStore(new Redis(REDIS_URL), `${runId}:app:`) });
    try {
      const { key } = await t.keyFor('free');
      const statuses: number[] = [];
      // stay inside one minute: the window is aligned, so start right after a boundary if it is close
      if (Date.now() % 60_000 > 50_000) await new Promise((r) => setTimeout(r, 60_000 - (Date.now() % 60_000) + 50));
      for (let i = 0; i <= PLANS.free.requests_per_minute; i++) statuses.push((await fetch(`${t.base}/v1/account/plan`, { headers: { authorization: `Bearer ${key}` } })).status);
      expect(statuses.slice(0, -1).every((s) => s === 200)).toBe(true);
      expect(statuses.at(-1)).toBe(429);
    } finally {
      await t.close();
      closeMemoryVenue(conn, instance);
    }
  }, 30_000);
});

describe('client IP subjects', () => {
  it('counts IPv4 (also v4-mapped) per address and IPv6 per /64', async () => {
    const { ipSubject } = await import('../../web-api/rate-limits.ts');
    expect(ipSubject('203.0.113.9')).toBe('203.0.113.9');
    expect(ipSubject('::ffff:203.0.113.9')).toBe('203.0.113.9');
    expect(ipSubject('2001:db8:1:2:aaaa:bbbb:cccc:dddd')).toBe('2001:db8:1:2::/64');
    expect(ipSubject('2001:db8:1:2::1')).toBe('2001:db8:1:2::/64');
    expect(ipSubject('2001:0db8:0001:0002:ffff::')).toBe('2001:db8:1:2::/64');
    expect(ipSubject('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(ipSubject('::1')).toBe('0:0:0:0::/64');
    expect(ipSubject('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
  });
});
