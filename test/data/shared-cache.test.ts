/**
 * The response caches' shared level on the machine's Redis: what one process's cache computed, another's serves
 * (X-Cache: hit without computing), entries expire with their TTL, and prefixes keep deployments apart.
 */
import { Redis } from 'ioredis';
import { afterAll, expect, it } from 'vitest';
import { TtlCache } from '../../core/ttl-cache.ts';
import { RedisSharedCache } from '../../data/shared-cache.ts';

const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: 2 });
const prefix = `sharedcache-test-${process.pid}-${Date.now()}:`;
afterAll(() => redis.disconnect());

it('shares computed answers between processes until they expire, per prefix', async () => {
  const a = new TtlCache<{ n: number }>(300, Date.now, 100, new RedisSharedCache(redis, prefix));
  const b = new TtlCache<{ n: number }>(300, Date.now, 100, new RedisSharedCache(redis, prefix));
  const other = new TtlCache<{ n: number }>(300, Date.now, 100, new RedisSharedCache(redis, `${prefix}other:`));
  let runs = 0;
  const compute = async () => ({ n: ++runs });
  expect(await a.getOrCompute('/v1/rankings/preset/x', compute)).toEqual({ value: { n: 1 }, hit: false });
  for (let i = 0; i < 50 && !(await redis.exists(`${prefix}/v1/rankings/preset/x`)); i++) await new Promise((r) => setTimeout(r, 10));
  expect(await b.getOrCompute('/v1/rankings/preset/x', compute)).toEqual({ value: { n: 1 }, hit: true });
  expect(await other.getOrCompute('/v1/rankings/preset/x', compute)).toEqual({ value: { n: 2 }, hit: false });
  const ttl = await redis.pttl(`${prefix}/v1/rankings/preset/x`);
  expect(ttl).toBeGreaterThan(0);
  expect(ttl).toBeLessThanOrEqual(300);
  await new Promise((r) => setTimeout(r, 350));
  const c = new TtlCache<{ n: number }>(300, Date.now, 100, new RedisSharedCache(redis, prefix));
  expect(await c.getOrCompute('/v1/rankings/preset/x', compute)).toEqual({ value: { n: 3 }, hit: false });
});
