/**
 * Computations in steps: a generator yields between steps, so a service can let its event loop run between them
 * (drainPausing), and a batch job or a test runs the same steps at once (drain). Core does no I/O: the pause is a turn of the loop.
 */

/** Run a generator of steps to its end (the synchronous form of a stepped computation). */
export function drain<R>(steps: Generator<void, R>): R {
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
  }
}

/** Run a generator of steps to its end, awaiting `pause` between steps (the asynchronous form of drain). */
export async function drainPausing<R>(steps: Generator<void, R>, pause: () => Promise<void>): Promise<R> {
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
    await pause();
  }
}

/**
 * A pause between the steps of a long computation, so the event loop runs what waits: one turn of the loop (its
 * timers, its I/O, then this). An immediate, not a timer: Node holds a 0 ms timer at least 1 ms (1.2 ms measured
 * here), and a full-scale refresh pauses ~1,000 times, so the timers alone left the refresh idle for over a second.
 */
export const yieldToEventLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * A pause taken only once `sliceMs` of work has run since the last one ended: a computation of many short steps then
 * pauses about once a slice instead of after every step. Each pause costs at least a timer's turn, and a builder's
 * pause also waits for the readers mid-request (data/snapshot-runner.ts readersFirstPause). 0: every step.
 */
export function slicedPause(pause: () => Promise<void>, sliceMs: number, now: () => number = () => performance.now()): () => Promise<void> {
  if (sliceMs <= 0) return pause;
  let last = now();
  return async () => {
    if (now() - last < sliceMs) return;
    await pause();
    last = now();
  };
}
