/**
 * The in-memory mid history (core/analytics/mid-index.ts): "the mid at t" is the latest mid stamped at or before t,
 * the larger one among mids of the same microsecond; a repeated (t, mid) counts once. Worked by hand across days and
 * gaps, then against a brute-force scan of every mid added, with adds (in order, late, repeated) and lookups
 * interleaved in any order, through the index and through cursors.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MidIndex, tokenOf } from '../../core/analytics/mid-index.ts';

const DAY = 86_400_000_000;
const H = 3_600_000_000;

describe('MidIndex', () => {
  it('finds the latest mid at or before t across days, gaps and ties, by hand', () => {
    const m = new MidIndex();
    const day = 20_000 * DAY; // a day boundary
    m.add(3, 1, day - 1, 0.4); // the last microsecond of the day before
    m.add(3, 1, day + 2 * H, 0.5);
    m.add(3, 1, day + 5 * DAY, 0.6); // four days without a mid
    m.add(3, 1, day + 5 * DAY, 0.55); // same microsecond, smaller: the larger wins
    m.add(3, 1, day + 2 * H, 0.5); // the very same mid again: counted once
    m.add(3, 1, day + H, 0.45); // late: stamped before the latest
    const t = tokenOf(3, 1);
    expect(m.size).toBe(5);
    expect(m.at(t, day - 2)).toBeNaN(); // before the first mid
    expect(m.at(t, day - 1)).toBe(0.4);
    expect(m.at(t, day)).toBe(0.4); // the day's first microsecond: no mid on it yet
    expect(m.at(t, day + H)).toBe(0.45);
    expect(m.at(t, day + 3 * DAY)).toBe(0.5); // a day with no mid: the last one before it
    expect(m.at(t, day + 5 * DAY - 1)).toBe(0.5);
    expect(m.at(t, day + 5 * DAY)).toBe(0.6);
    expect(m.at(t, day + 400 * DAY)).toBe(0.6); // long after the last
    expect(m.at(tokenOf(3, 0), day)).toBeNaN(); // the other outcome has none
    expect(m.at(tokenOf(99, 0), day)).toBeNaN(); // an unknown market
    expect(m.firstTs(t)).toBe(day - 1);
    // a mid on a later day than any before grows the day table; one before the first moves day 0
    m.add(3, 1, day + 30 * DAY, 0.7);
    m.add(3, 1, day - 3 * DAY, 0.3);
    expect(m.at(t, day + 29 * DAY)).toBe(0.6);
    expect(m.at(t, day + 30 * DAY)).toBe(0.7);
    expect(m.at(t, day - 2 * DAY)).toBe(0.3);
    expect(m.firstTs(t)).toBe(day - 3 * DAY);
    expect([...m.tokens()]).toEqual([t]);
  });

  it('agrees with a brute-force scan of every mid, whatever the order of adds and lookups', () => {
    // times from a few days around a boundary, in hours and odd microseconds, so days, gaps and ties all occur
    const time = fc.tuple(fc.integer({ min: -3 * 24, max: 6 * 24 }), fc.constantFrom(0, 1, -1, 1234)).map(([h, us]) => 20_000 * DAY + h * H + us);
    const op = fc.oneof(
      fc.record({ kind: fc.constant('add' as const), market: fc.integer({ min: 0, max: 3 }), outcome: fc.integer({ min: 0, max: 1 }), t: time, mid: fc.constantFrom(0.1, 0.2, 0.5, 0.9) }),
      fc.record({ kind: fc.constant('at' as const), token: fc.integer({ min: -1, max: 8 }), t: time }),
      fc.record({ kind: fc.constant('cursor' as const), token: fc.integer({ min: 0, max: 7 }), ts: fc.array(time, { maxLength: 6 }) }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 120 }), (ops) => {
        const m = new MidIndex();
        const all: { token: number; t: number; mid: number }[] = [];
        const brute = (token: number, t: number) => {
          let best: { t: number; mid: number } | null = null;
          for (const x of all) {
            if (x.token !== token || x.t > t) continue;
            if (!best || x.t > best.t || (x.t === best.t && x.mid > best.mid)) best = x;
          }
          return best ? best.mid : Number.NaN;
        };
        const cursor = m.cursor(-1);
        for (const o of ops) {
          if (o.kind === 'add') {
            const token = tokenOf(o.market, o.outcome);
            m.add(o.market, o.outcome, o.t, o.mid);
            if (!all.some((x) => x.token === token && x.t === o.t && x.mid === o.mid)) all.push({ token, t: o.t, mid: o.mid });
            expect(m.size).toBe(all.length);
          } else if (o.kind === 'at') {
            expect(m.at(o.token, o.t)).toEqual(brute(o.token, o.t));
          } else {
            m.retarget(cursor, o.token);
            for (const t of o.ts) expect(cursor.at(t)).toEqual(brute(o.token, t));
          }
        }
        const tokens = [...new Set(all.map((x) => x.token))];
        expect([...m.tokens()]).toEqual(tokens);
        for (const token of tokens) expect(m.firstTs(token)).toBe(Math.min(...all.filter((x) => x.token === token).map((x) => x.t)));
      }),
      { numRuns: 400 },
    );
  });
});
