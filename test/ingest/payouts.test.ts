import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { payoutsFromNumerators, ratio, storableNumerators } from '../../data/ingest/payouts.ts';

describe('payoutsFromNumerators: standard binary markets', () => {
  it('[1,0] is YES: YES pays 1, NO pays 0', () => {
    expect(payoutsFromNumerators([1n, 0n], false)).toEqual({ winner: 'YES', winnerIndex: 0, payoutYes: 1, payoutNo: 0 });
  });
  it('[0,1] is NO', () => {
    expect(payoutsFromNumerators([0, 1], false)).toEqual({ winner: 'NO', winnerIndex: 1, payoutYes: 0, payoutNo: 1 });
  });
  it('[1,1] is INVALID: both sides pay 0.50, winner_index -1', () => {
    expect(payoutsFromNumerators([1n, 1n], false)).toEqual({ winner: 'INVALID', winnerIndex: -1, payoutYes: 0.5, payoutNo: 0.5 });
  });
  it('scaled vectors mean the same: [5,0] is YES, [7,7] is INVALID', () => {
    expect(payoutsFromNumerators([5n, 0n], false).winner).toBe('YES');
    expect(payoutsFromNumerators([7n, 7n], false)).toMatchObject({ winner: 'INVALID', payoutYes: 0.5, payoutNo: 0.5 });
  });
  it('an unequal partial payout [3,1] has no winner: 0.75 / 0.25', () => {
    expect(payoutsFromNumerators([3n, 1n], false)).toEqual({ winner: null, winnerIndex: -1, payoutYes: 0.75, payoutNo: 0.25 });
  });
  it('a multi-outcome vector [1,1,2] has no winner and pays each slot numerator / 4', () => {
    expect(payoutsFromNumerators([1n, 1n, 2n], false)).toEqual({ winner: null, winnerIndex: -1, payoutYes: 0.25, payoutNo: 0.25 });
  });
  it('a multi-outcome vector [0,0,1] pays nothing on the first two slots', () => {
    expect(payoutsFromNumerators([0n, 0n, 1n], false)).toEqual({ winner: null, winnerIndex: -1, payoutYes: 0, payoutNo: 0 });
  });
  it('all zeros (rejected on chain) is no winner, zero payouts, with a warning', () => {
    const p = payoutsFromNumerators([0n, 0n], false);
    expect(p).toMatchObject({ winner: null, winnerIndex: -1, payoutYes: 0, payoutNo: 0 });
    expect(p.warning).toMatch(/all-zero/);
  });
  it('rejects negative or fractional numerators', () => {
    expect(() => payoutsFromNumerators([-1, 1], false)).toThrow(RangeError);
    expect(() => payoutsFromNumerators([0.5, 0.5], false)).toThrow(RangeError);
  });
  it('handles uint256-sized numerators', () => {
    const big = 2n ** 200n;
    expect(payoutsFromNumerators([big, 3n * big], false)).toMatchObject({ winner: null, payoutYes: 0.25, payoutNo: 0.75 });
  });
});

describe('payoutsFromNumerators: neg-risk questions never void', () => {
  it('[1,1] on neg-risk: winner null (not INVALID), payouts from numerators, warning', () => {
    const p = payoutsFromNumerators([1n, 1n], true);
    expect(p).toMatchObject({ winner: null, winnerIndex: -1, payoutYes: 0.5, payoutNo: 0.5 });
    expect(p.warning).toMatch(/neg-risk/);
  });
  it('[1,0] and [0,1] on neg-risk are still YES and NO, without a warning', () => {
    expect(payoutsFromNumerators([1n, 0n], true)).toEqual({ winner: 'YES', winnerIndex: 0, payoutYes: 1, payoutNo: 0 });
    expect(payoutsFromNumerators([0n, 1n], true)).toEqual({ winner: 'NO', winnerIndex: 1, payoutYes: 0, payoutNo: 1 });
  });
});

describe('payoutsFromNumerators: properties', () => {
  const numerator = fc.bigInt({ min: 0n, max: 2n ** 64n });
  const pair = fc.tuple(numerator, numerator).filter(([a, b]) => a + b > 0n);

  it('binary payouts sum to 1 for every nonzero vector', () => {
    fc.assert(fc.property(pair, fc.boolean(), ([a, b], negRisk) => {
      const p = payoutsFromNumerators([a, b], negRisk);
      expect(p.payoutYes + p.payoutNo).toBeCloseTo(1, 12);
      expect(p.payoutYes).toBeGreaterThanOrEqual(0);
      expect(p.payoutNo).toBeGreaterThanOrEqual(0);
    }));
  });

  it('the winner is named exactly when one side takes everything', () => {
    fc.assert(fc.property(pair, fc.boolean(), ([a, b], negRisk) => {
      const p = payoutsFromNumerators([a, b], negRisk);
      expect(p.winner === 'YES').toBe(b === 0n);
      expect(p.winner === 'NO').toBe(a === 0n);
      expect(p.winnerIndex).toBe(p.winner === 'YES' ? 0 : p.winner === 'NO' ? 1 : -1);
    }));
  });

  it('INVALID only for an even split on a standard market', () => {
    fc.assert(fc.property(pair, fc.boolean(), ([a, b], negRisk) => {
      expect(payoutsFromNumerators([a, b], negRisk).winner === 'INVALID').toBe(a === b && !negRisk);
    }));
  });

  it('swapping the numerators swaps YES and NO', () => {
    fc.assert(fc.property(pair, fc.boolean(), ([a, b], negRisk) => {
      const p = payoutsFromNumerators([a, b], negRisk);
      const q = payoutsFromNumerators([b, a], negRisk);
      expect(q.payoutYes).toBe(p.payoutNo);
      expect(q.payoutNo).toBe(p.payoutYes);
      const swapped = { YES: 'NO', NO: 'YES', INVALID: 'INVALID' } as const;
      expect(q.winner).toBe(p.winner === null ? null : swapped[p.winner]);
    }));
  });

  it('scaling every numerator by k changes nothing', () => {
    fc.assert(fc.property(pair, fc.bigInt({ min: 1n, max: 1000n }), fc.boolean(), ([a, b], k, negRisk) => {
      expect(payoutsFromNumerators([a * k, b * k], negRisk)).toEqual(payoutsFromNumerators([a, b], negRisk));
    }));
  });

  it('multi-outcome vectors never name a winner and pay at most 1 on the first two slots', () => {
    const vec = fc.array(numerator, { minLength: 3, maxLength: 6 }).filter((v) => v.some((x) => x > 0n));
    fc.assert(fc.property(vec, fc.boolean(), (v, negRisk) => {
      const p = payoutsFromNumerators(v, negRisk);
      expect(p.winner).toBeNull();
      expect(p.winnerIndex).toBe(-1);
      expect(p.payoutYes + p.payoutNo).toBeLessThanOrEqual(1 + 1e-12);
    }));
  });
});

describe('ratio and storableNumerators', () => {
  it('ratio divides uint256 operands to double precision', () => {
    expect(ratio(1n, 3n)).toBe(1 / 3);
    expect(ratio(2n ** 255n, 2n ** 256n - 1n)).toBeCloseTo(0.5, 15);
  });
  it('keeps numerators that fit INTEGER and reduces ones that do not by their gcd', () => {
    expect(storableNumerators([1n, 0n])).toEqual([1, 0]);
    expect(storableNumerators([2n, 2n])).toEqual([2, 2]);
    expect(storableNumerators([10n ** 18n, 10n ** 18n])).toEqual([1, 1]);
    expect(storableNumerators([10n ** 18n, 1n])).toBeNull();
  });
});
