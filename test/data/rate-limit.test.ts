/**
 * Rate counters: the embedded SQLite store and the Redis store (real Redis on 127.0.0.1:6379) agree with a
 * brute-force reference on any interleaving of hits over keys and windows; aligned windows by hand; and the whole
 * app limits a key the same way over Redis.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLANS } from '../../core/plans.ts';
import { RedisRateStore, SqliteRateStore, windowOf } from '../../data/rate-limit.ts';
import { duckRunner } from '../../data/runner.ts';
import { startApp } from '../helpers/app.ts';
import { closeMemoryVenue, openMemoryVenue } from '../helpers/memory-venue.ts';

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
        const sqlite = new SqliteRateStore(join(dir, `r${run}.sqlite`));
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
