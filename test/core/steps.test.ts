/**
 * Stepped computations (core/steps.ts): drain and drainPausing give the same answer, and a sliced pause pauses once a
 * slice of work has run since the last pause ended, never after a shorter stretch (a clock driven by the steps).
 */
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { drain, drainPausing, slicedPause, yieldToEventLoop } from '../../core/steps.ts';

/** Steps that each advance the clock by their cost; returns the sum of the costs. */
function* costed(costs: number[], clock: { t: number }): Generator<void, number> {
  let sum = 0;
  for (const c of costs) {
    clock.t += c;
    sum += c;
    yield;
  }
  return sum;
}

describe('a sliced pause', () => {
  it('worked by hand: steps of 4 ms, a slice of 10 ms, pauses of 1 ms', async () => {
    const clock = { t: 0 };
    const at: number[] = [];
    const pause = slicedPause(async () => {
      at.push(clock.t);
      clock.t += 1;
    }, 10, () => clock.t);
    expect(await drainPausing(costed([4, 4, 4, 4, 4, 4, 4], clock), pause)).toBe(28);
    // work since the last pause ended: 4, 8, 12 -> pause at 12 (ends 13); 17, 21, 25 -> 12 ≥ 10 -> pause at 25 (ends 26);
    // then 30: 4 < 10 -> none
    expect(at).toEqual([12, 25]);
  });

  it('pauses exactly when a slice has passed since the last pause ended (random costs and slices, against a brute-force walk)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.integer({ min: 0, max: 30 }), { maxLength: 60 }), fc.integer({ min: 0, max: 50 }), fc.integer({ min: 0, max: 5 }), async (costs, slice, pauseCost) => {
        const clock = { t: 0 };
        const at: number[] = [];
        const pause = slicedPause(async () => {
          at.push(clock.t);
          clock.t += pauseCost;
        }, slice, () => clock.t);
        const sum = await drainPausing(costed(costs, clock), pause);
        expect(sum).toBe(drain(costed(costs, { t: 0 })));
        // brute force: after each step, pause when slice = 0 or the work since the last pause's end reached the slice
        const want: number[] = [];
        let t = 0;
        let last = 0;
        for (const c of costs) {
          t += c;
          if (slice === 0 || t - last >= slice) {
            want.push(t);
            t += pauseCost;
            last = t;
          }
        }
        expect(at).toEqual(want);
      }),
      { numRuns: 300 },
    );
  });
});

describe('the pause between steps', () => {
  it('gives the event loop a turn: timers and I/O run between steps (a microtask would starve them)', async () => {
    // a 1 ms interval and a socket-free I/O callback (a file stat) both run while 300 steps of ~0.2 ms are drained
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    let io = false;
    const { stat } = await import('node:fs');
    stat('.', () => (io = true));
    function* busy(n: number): Generator<void, number> {
      for (let k = 0; k < n; k++) {
        const until = performance.now() + 0.2;
        while (performance.now() < until);
        yield;
      }
      return n;
    }
    try {
      expect(await drainPausing(busy(300), yieldToEventLoop)).toBe(300);
    } finally {
      clearInterval(timer);
    }
    expect(io).toBe(true);
    // ~60 ms of steps: the interval fired along the way, not only once at the end
    expect(ticks).toBeGreaterThanOrEqual(10);
  });

  it('takes no timer: Node holds a 0 ms timer at least 1 ms, which hundreds of pauses a refresh add up', async () => {
    const timers = vi.spyOn(globalThis, 'setTimeout');
    try {
      for (let k = 0; k < 20; k++) await yieldToEventLoop();
      expect(timers).not.toHaveBeenCalled();
    } finally {
      timers.mockRestore();
    }
  });
});
