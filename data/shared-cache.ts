/**
 * The response caches' shared level in Redis (core/ttl-cache.ts SharedCache): keys under the deployment's prefix,
 * each with its time to live, so a preset ranking or a heavy public answer computed by one API replica is served by
 * the others until it expires. Redis errors are the caller's misses (the cache never fails a request).
 */
import type { Redis } from 'ioredis';
import type { SharedCache } from '../core/ttl-cache.ts';

export class RedisSharedCache implements SharedCache {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  async get(key: string): Promise<string | undefined> {
    return (await this.redis.get(this.prefix + key)) ?? undefined;
  }

  async set(key: string, json: string, ttlMs: number): Promise<void> {
    await this.redis.set(this.prefix + key, json, 'PX', ttlMs);
  }
}
