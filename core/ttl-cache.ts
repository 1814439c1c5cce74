/**
 * A small time-to-live cache (preset rankings are cached 60 s). Keys are canonical JSON of every parameter, so two
 * requests share an entry only when every parameter agrees; the clock is injected so tests control time.
 */
export class TtlCache<V> {
  private readonly entries = new Map<string, { value: V; expires: number }>();
  /** computations under way: concurrent misses on one key share one computation */
  private readonly pending = new Map<string, Promise<V>>();

  constructor(
    readonly ttlMs: number,
    private readonly now: () => number = Date.now,
    readonly maxEntries = 1000,
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
    const p = compute();
    this.pending.set(key, p);
    try {
      const value = await p;
      this.set(key, value);
      return { value, hit: false };
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
