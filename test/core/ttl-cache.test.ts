/** TtlCache: concurrent misses on one key share one computation; a failed computation is not cached. */
import { expect, it } from 'vitest';
import { TtlCache } from '../../core/ttl-cache.ts';

it('coalesces concurrent misses and does not cache failures', async () => {
  let now = 0;
  const cache = new TtlCache<number>(1000, () => now);
  let runs = 0;
  let release!: (v: number) => void;
  const slow = () => {
    runs++;
    return new Promise<number>((r) => (release = r));
  };
  const all = Promise.all([cache.getOrCompute('k', slow), cache.getOrCompute('k', slow), cache.getOrCompute('k', slow)]);
  release(42);
  const got = await all;
  expect(runs).toBe(1);
  expect(got.map((g) => g.value)).toEqual([42, 42, 42]);
  expect(got.filter((g) => !g.hit)).toHaveLength(1);
  await expect(cache.getOrCompute('bad', () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
  expect((await cache.getOrCompute('bad', async () => 7)).value).toBe(7);
  now = 1000;
  expect((await cache.getOrCompute('k', async () => 43)).value).toBe(43);
});

/** An in-memory shared level with expiry, standing for Redis (data/shared-cache.ts is tested against Redis itself). */
function memoryShared(now: () => number) {
  const m = new Map<string, { json: string; until: number }>();
  let fail = false;
  return {
    store: m,
    failing: (f: boolean) => (fail = f),
    async get(k: string) {
      if (fail) throw new Error('down');
      const e = m.get(k);
      return e && e.until > now() ? e.json : undefined;
    },
    async set(k: string, json: string, ttl: number) {
      if (fail) throw new Error('down');
      m.set(k, { json, until: now() + ttl });
    },
  };
}

it('with a shared level: one replica computes, the other reads it; a failing shared level only costs a computation', async () => {
  let now = 0;
  const shared = memoryShared(() => now);
  const a = new TtlCache<{ rows: number[] }>(1000, () => now, 100, shared);
  const b = new TtlCache<{ rows: number[] }>(1000, () => now, 100, shared);
  let runs = 0;
  const compute = async () => ({ rows: [++runs, 2, 3] });
  expect(await a.getOrCompute('k', compute)).toEqual({ value: { rows: [1, 2, 3] }, hit: false });
  await new Promise((r) => setImmediate(r)); // the offer to the shared level is not awaited by the request
  expect(await b.getOrCompute('k', compute)).toEqual({ value: { rows: [1, 2, 3] }, hit: true });
  expect(runs).toBe(1);
  // expired everywhere: computed again
  now = 1000;
  expect((await b.getOrCompute('k', compute)).value.rows[0]).toBe(2);
  // the shared level down: answers still come, computed locally
  shared.failing(true);
  const c = new TtlCache<{ rows: number[] }>(1000, () => now, 100, shared);
  expect(await c.getOrCompute('k', compute)).toEqual({ value: { rows: [3, 2, 3] }, hit: false });
});
