/**
 * Resolution semantics of a ConditionalTokens payout vector: each outcome token pays numerator / sum(numerators).
 * Shared by the on-chain loader (ConditionResolution) and the Gamma loader (closed markets' outcomePrices).
 */
export type Winner = 'YES' | 'NO' | 'INVALID' | null;

export interface Payouts {
  winner: Winner;
  /** 0 = YES, 1 = NO, -1 when the winner is INVALID or null. */
  winnerIndex: -1 | 0 | 1;
  /** USDC per YES share. */
  payoutYes: number;
  /** USDC per NO share. */
  payoutNo: number;
  /** Set when the vector is legal on chain but surprising for this kind of market. */
  warning?: string;
}

/**
 * [a,0] -> YES, [0,b] -> NO, [k,k] -> INVALID (0.50 each) on a standard binary market. Neg-risk questions never
 * void: an even split there is recorded as winner null with a warning. Any other vector (unequal partial payouts,
 * more than two slots) -> winner null, winner_index -1, payouts from the numerators. All zeros (impossible on
 * chain: reportPayouts rejects it) -> null with zero payouts and a warning.
 */
export function payoutsFromNumerators(numerators: readonly (bigint | number)[], negRisk: boolean): Payouts {
  const n = numerators.map(toUint);
  const sum = n.reduce((a, b) => a + b, 0n);
  if (sum === 0n) return { winner: null, winnerIndex: -1, payoutYes: 0, payoutNo: 0, warning: 'all-zero payout vector' };
  const yes = n[0] ?? 0n;
  const no = n[1] ?? 0n;
  const payoutYes = ratio(yes, sum);
  const payoutNo = ratio(no, sum);
  if (n.length !== 2) return { winner: null, winnerIndex: -1, payoutYes, payoutNo };
  if (no === 0n) return { winner: 'YES', winnerIndex: 0, payoutYes, payoutNo };
  if (yes === 0n) return { winner: 'NO', winnerIndex: 1, payoutYes, payoutNo };
  if (yes === no) {
    if (negRisk) return { winner: null, winnerIndex: -1, payoutYes, payoutNo, warning: 'even split on a neg-risk question (neg-risk never voids)' };
    return { winner: 'INVALID', winnerIndex: -1, payoutYes, payoutNo };
  }
  return { winner: null, winnerIndex: -1, payoutYes, payoutNo };
}

function toUint(v: bigint | number): bigint {
  if (typeof v === 'number' && !Number.isSafeInteger(v)) throw new RangeError(`payout numerator must be an integer, got ${v}`);
  const b = BigInt(v);
  if (b < 0n) throw new RangeError(`payout numerator must be >= 0, got ${b}`);
  return b;
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * n / d as a double. The fraction is reduced first, so equal ratios give identical doubles ([1,3] and [2,6]);
 * operands beyond 2^53 are divided with 128 extra bits before the final rounding.
 */
export function ratio(n: bigint, d: bigint): number {
  if (n === 0n) return 0;
  const g = gcd(n, d);
  const [a, b] = [n / g, d / g];
  if (a <= MAX_SAFE && b <= MAX_SAFE) return Number(a) / Number(b);
  const shift = Math.max(0, 128 + b.toString(2).length - a.toString(2).length);
  return Number((a << BigInt(shift)) / b) / 2 ** shift;
}

const INT32_MAX = 2147483647n;

/**
 * Numerators for resolutions.payout_numerators (INTEGER[]): as reported when they fit, else divided by their gcd
 * (same payouts); null when even that does not fit.
 */
export function storableNumerators(numerators: readonly bigint[]): number[] | null {
  if (numerators.every((x) => x <= INT32_MAX)) return numerators.map(Number);
  const g = numerators.reduce((a, b) => gcd(a, b), 0n);
  const reduced = numerators.map((x) => x / g);
  return reduced.every((x) => x <= INT32_MAX) ? reduced.map(Number) : null;
}

function gcd(a: bigint, b: bigint): bigint {
  while (b !== 0n) [a, b] = [b, a % b];
  return a;
}
