/** Small statistics used by the metrics: the normal CDF and the Benjamini-Hochberg step-up rule. */

/** Standard normal CDF (W. J. Cody's rational erfc approximation via Abramowitz-Stegun 7.1.26 is too coarse in the
 * tail; this uses the complementary error function series of Numerical Recipes erfcc, |error| < 1.2e-7). */
export function normalCdf(x: number): number {
  const z = Math.abs(x) / Math.SQRT2;
  const t = 1 / (1 + 0.5 * z);
  const erfc =
    t *
    Math.exp(
      -z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))),
    );
  return x >= 0 ? 1 - erfc / 2 : erfc / 2;
}

/**
 * Benjamini-Hochberg at false-discovery rate q: the largest p-value still declared a discovery, or null when none.
 * With m tests sorted ascending, discoveries are p_(1..k) for the largest k with p_(k) <= k q / m.
 */
export function benjaminiHochbergCutoff(pValues: ArrayLike<number>, q: number): number | null {
  // a typed array's native numeric sort (no comparator call per pair: the sharp cut-off sorts ~1M at full scale)
  let finite = 0;
  for (let i = 0; i < pValues.length; i++) finite += +Number.isFinite(pValues[i]!);
  const sorted = new Float64Array(finite);
  for (let i = 0, k = 0; i < pValues.length; i++) if (Number.isFinite(pValues[i]!)) sorted[k++] = pValues[i]!;
  sorted.sort();
  const m = sorted.length;
  let cutoff: number | null = null;
  for (let k = 1; k <= m; k++) if (sorted[k - 1]! <= (k * q) / m) cutoff = sorted[k - 1]!;
  return cutoff;
}
