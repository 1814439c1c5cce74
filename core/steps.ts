/**
 * Computations in steps: a generator yields between steps, so a service can let its event loop run between them
 * (drainPausing), and a batch job or a test runs the same steps at once (drain). Core does no I/O: the pause is a timer.
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

/** A pause between the steps of a long computation, so the event loop runs what waits (a timer: core does no I/O). */
export const yieldToEventLoop = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 0));
