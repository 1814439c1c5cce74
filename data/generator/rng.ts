/**
 * Deterministic random numbers for the synthetic venue. Every wallet, market and cluster draws from its own stream
 * (seed, kind, id), so any entity can be regenerated on demand in any order with identical results.
 */

/** 32-bit avalanche mix (splitmix32 finalizer). */
export function mix32(x: number): number {
  x = Math.imul(x ^ (x >>> 16), 0x21f0aaad);
  x = Math.imul(x ^ (x >>> 15), 0x735a2d97);
  return (x ^ (x >>> 15)) >>> 0;
}

/** Hash of several integers into 32 bits. */
export function hashInts(...xs: number[]): number {
  let h = 0x9e3779b9;
  for (const x of xs) h = mix32((h ^ mix32((x | 0) + 0x7f4a7c15)) + 0x165667b1);
  return h;
}

/** Uniform in [0,1) from integer inputs, without a stream. */
export function hashUniform(...xs: number[]): number {
  return hashInts(...xs) / 4294967296;
}

/** sfc32: small, fast, passes PractRand to 2^40+; enough for simulation. */
export class Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;
  private spare: number | null = null;

  constructor(...seedParts: number[]) {
    this.a = hashInts(...seedParts, 1);
    this.b = hashInts(...seedParts, 2);
    this.c = hashInts(...seedParts, 3);
    this.d = 1;
    for (let i = 0; i < 12; i++) this.nextU32();
  }

  nextU32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /** Uniform in [0,1). */
  next(): number {
    return this.nextU32() / 4294967296;
  }

  uniform(lo: number, hi: number): number {
    return lo + (hi - lo) * this.next();
  }

  /** Integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  bool(p: number): boolean {
    return this.next() < p;
  }

  normal(): number {
    if (this.spare !== null) {
      const s = this.spare;
      this.spare = null;
      return s;
    }
    let u = 0;
    while (u === 0) u = this.next();
    const v = this.next();
    const r = Math.sqrt(-2 * Math.log(u));
    this.spare = r * Math.sin(2 * Math.PI * v);
    return r * Math.cos(2 * Math.PI * v);
  }

  logNormal(median: number, sigma: number): number {
    return median * Math.exp(sigma * this.normal());
  }

  /** Discrete Pareto-like count >= min with tail exponent alpha, capped. */
  paretoInt(min: number, alpha: number, cap: number): number {
    const u = 1 - this.next();
    return Math.min(cap, Math.floor(min * Math.pow(u, -1 / alpha)));
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)] as T;
  }

  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      const tmp = items[i] as T;
      items[i] = items[j] as T;
      items[j] = tmp;
    }
    return items;
  }
}

/** Walker alias table: O(1) sampling from a fixed discrete distribution. */
export class AliasTable {
  readonly size: number;
  private readonly prob: Float64Array;
  private readonly alias: Int32Array;

  constructor(weights: ArrayLike<number>) {
    const n = weights.length;
    this.size = n;
    this.prob = new Float64Array(n);
    this.alias = new Int32Array(n);
    let total = 0;
    for (let i = 0; i < n; i++) total += weights[i] as number;
    if (n === 0 || !(total > 0)) return;
    const scaled = new Float64Array(n);
    const small: number[] = [];
    const large: number[] = [];
    for (let i = 0; i < n; i++) {
      scaled[i] = ((weights[i] as number) * n) / total;
      ((scaled[i] as number) < 1 ? small : large).push(i);
    }
    while (small.length && large.length) {
      const s = small.pop() as number;
      const l = large.pop() as number;
      this.prob[s] = scaled[s] as number;
      this.alias[s] = l;
      scaled[l] = (scaled[l] as number) + (scaled[s] as number) - 1;
      ((scaled[l] as number) < 1 ? small : large).push(l);
    }
    for (const i of large) this.prob[i] = 1;
    for (const i of small) this.prob[i] = 1;
  }

  sample(rng: Rng): number {
    const i = rng.int(this.size);
    return rng.next() < (this.prob[i] as number) ? i : (this.alias[i] as number);
  }
}
