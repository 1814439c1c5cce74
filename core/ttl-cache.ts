/**
 * A second level shared by several processes (API replicas: Redis, data/shared-cache.ts): values as JSON text, each
 * kept for a time to live. A failing shared level must never fail a request: callers treat errors as misses.
 */
export interface SharedCache {
  get(key: string): Promise<string | undefined>;
  set(key: string, json: string, ttlMs: number): Promise<void>;
}

/**
 * A small time-to-live cache (preset rankings are cached 60 s). Keys are canonical JSON of every parameter, so two
 * requests share an entry only when every parameter agrees; the clock is injected so tests control time. With a
 * shared level, a miss here is looked up there before it is computed, and a computed value is offered to it: one
 * replica's computation serves the others (a value read from the shared level lives here for the rest of the TTL at
 * most once more: entries are JSON values, as the routes send them).
 */
export class TtlCache<V> {
  private readonly entries = new Map<string, { value: V; expires: number }>();
  /** computations under way: concurrent misses on one key share one computation */
  private readonly pending = new Map<string, Promise<V>>();

  constructor(
    readonly ttlMs: number,
    private readonly now: () => number = Date.now,
    readonly maxEntries = 1000,
    private readonly shared?: SharedCache,
  ) {}

  get(key: string): V | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (e.expires <= this.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return e.value;
  }

  set(key: string, value: V): void {
    if (this.entries.size >= this.maxEntries) {
      // drop the oldest insertion (Map keeps insertion order)
      const first = this.entries.keys().next();
      if (!first.done) this.entries.delete(first.value);
    }
    this.entries.set(key, { value, expires: this.now() + this.ttlMs });
  }

  async getOrCompute(key: string, compute: () => Promise<V>): Promise<{ value: V; hit: boolean }> {
    const hit = this.get(key);
    if (hit !== undefined) return { value: hit, hit: true };
    const running = this.pending.get(key);
    if (running) return { value: await running, hit: true };
    let fromShared = false;
    const p = (async () => {
      const remote = this.shared ? await this.shared.get(key).catch(() => undefined) : undefined;
      if (remote !== undefined) {
        fromShared = true;
        return JSON.parse(remote) as V;
      }
      const value = await compute();
      if (this.shared) void this.shared.set(key, JSON.stringify(value), this.ttlMs).catch(() => {});
      return value;
    })();
    this.pending.set(key, p);
    try {
      const value = await p;
      this.set(key, value);
      return { value, hit: fromShared };
    } finally {
      this.pending.delete(key);
    }
  }

  clear(): void {
    this.entries.clear();
  }
}

/** Canonical JSON: object keys sorted at every depth, so parameter order never splits a cache entry. */
export function cacheKey(parts: unknown): string {
  const canon = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(canon);
    if (v && typeof v === 'object') return Object.fromEntries(Object.keys(v).sort().map((k) => [k, canon((v as Record<string, unknown>)[k])]));
    return v;
  };
  return JSON.stringify(canon(parts));
}
