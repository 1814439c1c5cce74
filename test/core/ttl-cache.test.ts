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
