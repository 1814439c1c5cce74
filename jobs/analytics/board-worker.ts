/**
 * The preset boards scored on a worker thread (a BoardScoring, core/ranking-boards.ts). In the service's thread the
 * scoring ran in steps between requests, and the rows it produced went to DuckDB through the writer's table function,
 * which DuckDB calls through this thread's event loop, one block of 2,048 rows a call: while a step ran no block
 * moved, so the scoring and the storing took turns instead of overlapping. Here the scoring runs on the worker, on
 * the engine's own columns and orders in shared memory (nothing copied in); the slices come back as transferred
 * buffers, and this thread only copies them to the writer and serves its calls.
 *
 * The worker runs core's own RankingEngine and scoreEveryBoard (loaded through tsx, as the service's own modules),
 * so its boards are the ones the in-thread scoring gives. It is started on the first use and kept for the next ones.
 * It stays at most SLICES_AHEAD slices ahead of the writer (a credit counter in shared memory): a whole board set is
 * ~330 MB at full scale. The rank keys it computes come back with the explain counts, and the engine takes them over
 * (RankingEngine.adoptRankKeys), so the service does not compute them again when it warms the version.
 */
import { Worker } from 'node:worker_threads';
import type { BoardScoring, BoardSlice } from '../../core/ranking-boards.ts';
import type { RankKeys } from '../../core/ranking-engine.ts';
import type { ExplainCounts } from '../../core/rankings.ts';

/** What a board set cost on the worker: all of it, and the part spent waiting for the writer to take slices. */
export interface BoardJobFigures {
  seconds: number;
  waited_seconds: number;
  /** rank keys the worker computed (the others came with the engine) */
  rank_keys_computed: number;
}

/**
 * Slices (25k rows each) the worker may score ahead of the slices the writer has taken. (Whole boards, transferred
 * without a copy, took as long and held this thread longer: 130–198 ms against 107–120 ms at full scale.)
 */
const SLICES_AHEAD = 8;

/** A job's messages, tagged with its id: a job called off may still post, and the next job must not take those. */
type FromWorker = { id: number } & (
  | { type: 'slice'; presetNo: number; slice: BoardSlice }
  | { type: 'done'; explains: ExplainCounts[]; keys: RankKeys; figures: BoardJobFigures }
  | { type: 'error'; message: string }
);

const moduleUrl = (path: string) => new URL(path, import.meta.url).href;
// tsx's API by its URL, resolved from here: an evaluated worker resolves a bare name from the working directory
const TSX_API = typeof import.meta.resolve === 'function' ? import.meta.resolve('tsx/esm/api') : 'tsx/esm/api';

// CommonJS, evaluated: the worker registers tsx, then imports the engine's modules by URL
const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
let modules = null;
const load = async () => {
  (await import(${JSON.stringify(TSX_API)})).register();
  const [engine, boards] = await Promise.all([import(${JSON.stringify(moduleUrl('../../core/ranking-engine.ts'))}), import(${JSON.stringify(moduleUrl('../../core/ranking-boards.ts'))})]);
  return { RankingEngine: engine.RankingEngine, scoreEveryBoard: boards.scoreEveryBoard };
};
parentPort.on('message', async (job) => {
  try {
    modules ??= await load();
    const t0 = performance.now();
    let waited = 0;
    const engine = new modules.RankingEngine(job.cols, job.orders);
    const given = engine.adoptRankKeys(job.keys);
    // credits[0]: slices the writer has taken; credits[1]: 1 once the scoring is called off
    const credits = new Int32Array(job.credits);
    let sent = 0;
    const explains = modules.scoreEveryBoard(engine, job.asOfUs, (presetNo, slice) => {
      for (;;) {
        if (Atomics.load(credits, 1) === 1) throw new Error('board scoring called off');
        const taken = Atomics.load(credits, 0);
        if (sent - taken < ${SLICES_AHEAD}) break;
        const w0 = performance.now();
        Atomics.wait(credits, 0, taken, 1000);
        waited += performance.now() - w0;
      }
      parentPort.postMessage({ id: job.id, type: 'slice', presetNo, slice }, [slice.wallets.buffer, slice.composite.buffer, ...slice.pct.map((p) => p.buffer)]);
      sent++;
    });
    const keys = engine.computedRankKeys();
    const figures = { seconds: (performance.now() - t0) / 1000, waited_seconds: waited / 1000, rank_keys_computed: Object.keys(keys).length - given };
    parentPort.postMessage({ id: job.id, type: 'done', explains, keys, figures });
  } catch (e) {
    parentPort.postMessage({ id: job.id, type: 'error', message: e instanceof Error ? e.message : String(e) });
  }
});
`;

/** A worker thread scoring boards, one board set at a time; `score` is the BoardScoring to hand to a build or refresh. */
export class BoardWorker {
  private worker: Worker | null = null;
  /** the job running: a board set at a time (each refresh or build awaits its boards before the next) */
  private running: Promise<unknown> = Promise.resolve();
  private jobs = 0;
  /** the last board set's figures */
  last: BoardJobFigures | null = null;

  readonly score: BoardScoring = (engine, asOfUs, onSlice) => {
    const job = this.running.then(() => this.run(engine, asOfUs, onSlice));
    this.running = job.catch(() => {});
    return job;
  };

  private run(engine: Parameters<BoardScoring>[0], asOfUs: number, onSlice: Parameters<BoardScoring>[2]): Promise<ExplainCounts[]> {
    const worker = (this.worker ??= this.spawn());
    const credits = new Int32Array(new SharedArrayBuffer(8));
    const id = ++this.jobs;
    return new Promise<ExplainCounts[]>((resolve, reject) => {
      // the slices are written in order, one after the other: each waits for the one before
      let chain: Promise<void> = Promise.resolve();
      let failed = false;
      const fail = (e: unknown) => {
        if (failed) return;
        failed = true;
        Atomics.store(credits, 1, 1);
        Atomics.notify(credits, 0);
        cleanup();
        reject(e);
      };
      const onMessage = (m: FromWorker) => {
        if (m.id !== id) return;
        if (m.type === 'slice') {
          // once failed, the slices still queued go nowhere (the caller has given up on its writer)
          chain = chain
            .then(() => (failed ? undefined : onSlice(m.presetNo, m.slice)))
            .then(() => {
              Atomics.add(credits, 0, 1);
              Atomics.notify(credits, 0);
            })
            .catch(fail);
        } else if (m.type === 'done') {
          void chain.then(() => {
            if (failed) return;
            try {
              engine.adoptRankKeys(m.keys);
            } catch (e) {
              fail(e);
              return;
            }
            cleanup();
            this.last = m.figures;
            resolve(m.explains);
          });
        } else fail(new Error(`board worker: ${m.message}`));
      };
      // the worker died (a crash, terminate()): the next job starts another (spawn's listeners forget it)
      const onExit = (code: number) => fail(new Error(`board worker exited with ${code}`));
      const onError = (e: Error) => fail(e);
      // a slice that cannot be read would leave the board short: the job fails instead
      const onMessageError = (e: Error) => fail(new Error(`board worker: a message could not be read (${e.message})`));
      const cleanup = () => {
        worker.unref();
        worker.off('message', onMessage);
        worker.off('messageerror', onMessageError);
        worker.off('exit', onExit);
        worker.off('error', onError);
      };
      // held while a job runs (a CLI whose only work left is the boards must wait for them), let go when idle
      worker.ref();
      worker.on('message', onMessage);
      worker.on('messageerror', onMessageError);
      worker.once('exit', onExit);
      worker.once('error', onError);
      // the columns, orders and rank keys are in shared memory (loadRankColumns' shared, the patch keeps them so):
      // posting shares them; a column that is not shared is copied
      try {
        worker.postMessage({ id, cols: engine.cols, orders: engine.orders(), keys: engine.computedRankKeys(), asOfUs, credits: credits.buffer });
      } catch (e) {
        fail(e);
      }
    });
  }

  private spawn(): Worker {
    const w = new Worker(WORKER_SOURCE, { eval: true });
    // an idle worker does not keep the process alive
    w.unref();
    // for the worker's whole life, not only a job's: one that dies between jobs is forgotten (the next job starts
    // another, instead of posting to a dead one and waiting forever), and an error with no job running is not an
    // unhandled 'error' event, which would end the service
    w.on('error', () => {});
    w.once('exit', () => {
      if (this.worker === w) this.worker = null;
    });
    return w;
  }

  /** Stop the worker (a job running fails). */
  async close(): Promise<void> {
    const w = this.worker;
    this.worker = null;
    if (w) await w.terminate();
  }
}
