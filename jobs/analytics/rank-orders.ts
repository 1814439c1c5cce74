/**
 * The metric orders of a RankingEngine computed on a worker thread: sorting 2.8M values per metric takes the
 * better part of a second each, which on the service's event loop would stall every request while a new version's
 * ranker loads. The columns are shared (loadRankColumns with shared: true), so nothing is copied in; each order
 * comes back in shared memory too. The worker runs core's own sortedMeasured and what it calls (sortedMeasuredSteps,
 * inOrder: their source, so the two can never differ).
 */
import { Worker } from 'node:worker_threads';
import { METRIC_IDS, type MetricId } from '../../core/rankings.ts';
import type { RankColumns } from '../../core/rank-columns.ts';
import { ORDER_SLICE_ROWS, inOrder, metricOrders, sortedMeasured, sortedMeasuredSteps } from '../../core/ranking-orders.ts';

const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const __name = (f) => f; // the helper a transpiler may wrap named functions in
const ORDER_SLICE_ROWS = ${ORDER_SLICE_ROWS};
const inOrder = ${inOrder.toString()};
const sortedMeasuredSteps = ${sortedMeasuredSteps.toString()};
const sortedMeasured = ${sortedMeasured.toString()};
const out = {};
for (const [id, measured, value] of workerData) {
  const order = sortedMeasured(measured, value);
  // in shared memory, as the columns are: the boards' worker reads the orders too, and a patch keeps them shared
  const shared = new Int32Array(new SharedArrayBuffer(4 * order.length));
  shared.set(order);
  out[id] = shared;
}
parentPort.postMessage(out);
`;

/** Each metric's order, computed off the event loop when the columns are shared (else here, synchronously). */
export function metricOrdersOffThread(cols: RankColumns): Promise<Record<MetricId, Int32Array>> {
  const shared = METRIC_IDS.every((id) => cols.measured[id].buffer instanceof SharedArrayBuffer && cols.value[id].buffer instanceof SharedArrayBuffer);
  if (!shared || cols.n === 0) return Promise.resolve(metricOrders(cols));
  return new Promise((resolve, reject) => {
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: METRIC_IDS.map((id) => [id, cols.measured[id], cols.value[id]]) });
    worker.once('message', (orders: Record<MetricId, Int32Array>) => {
      resolve(orders);
      void worker.terminate();
    });
    worker.once('error', reject);
    worker.once('exit', (code) => {
      if (code !== 0) reject(new Error(`rank orders worker exited with ${code}`));
    });
  });
}
