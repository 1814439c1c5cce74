/**
 * Benchmark: paid agent calls end to end — the official client (x402-fetch) gets the 402, signs an EIP-3009
 * authorization, retries; the gateway verifies, reserves, computes, settles on a local chain (anvil) and answers.
 * Prints p50 / p95 per route for the whole paid round trip, and the payment overhead alone (a route whose
 * computation is trivial), on the demo analytics build.
 *   npm run bench:x402 -- [--db var/demo-w100000-d120-s42/venue.duckdb] [--runs 30]   (DATABASE_URL=postgres://… puts the ledger there)
 * Stop `npm start` first (it holds the DuckDB file).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import express from 'express';
import { privateKeyToAccount, generatePrivateKey } from 'viem/accounts';
import { wrapFetchWithPayment } from 'x402-fetch';
import { openDuckDB, queryRows } from '../data/duckdb.ts';
import { PaymentLedger } from '../data/payment-ledger.ts';
import { duckRunner } from '../data/runner.ts';
import { gatewayRouters } from '../gateway/app.ts';
import { LocalFacilitator } from '../gateway/facilitator.ts';
import { startLocalChain } from '../gateway/local-chain/chain.ts';
import { PaymentGate } from '../gateway/payment/gate.ts';
import { NETWORKS } from '../gateway/payment/pricing.ts';

const { values } = parseArgs({ options: { db: { type: 'string' }, runs: { type: 'string' } } });
const dbPath = resolve(values.db ?? 'var/demo-w100000-d120-s42/venue.duckdb');
const runs = Number(values.runs ?? 30);
const { instance, conn } = await openDuckDB({ path: dbPath, threads: 2, readOnly: true });
const db = duckRunner(conn);
const chain = await startLocalChain();
const dir = await mkdtemp(join(tmpdir(), 'bench-x402-'));
// the ledger on DATABASE_URL (PostgreSQL) when set, else a SQLite file of its own
const ledger = await PaymentLedger.open(process.env.DATABASE_URL ?? join(dir, 'ledger.sqlite'));
const [last] = await queryRows<{ t: Date }>(conn, `SELECT max(ts) AS t FROM fills`);
const payTo = privateKeyToAccount(generatePrivateKey()).address;
const gate = new PaymentGate({ facilitator: new LocalFacilitator({ rpcUrl: chain.rpcUrl, network: chain.network, privateKey: chain.facilitatorPrivateKey }), ledger, terms: { network: { ...NETWORKS['base-sepolia']!, usdc: chain.usdc }, payTo } });
let origin = '';
const { agent, info } = gatewayRouters({
  db,
  gate,
  now: () => new Date(last!.t),
  origin: () => origin,
  tidKey: 'bench-tid-key-0123456789abcdef',
  facilitator: 'local',
  extraRoutes: (r, paid) => r.get('/bench/noop', paid('leaderboard', async () => async () => ({ ok: true }))),
});
const app = express();
app.use(express.json());
app.use('/v1/agent', agent);
app.use('/x402', info);
const server = app.listen(0, '127.0.0.1');
await new Promise((r) => server.once('listening', r));
origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
const payer = (await chain.newPayer(100_000_000n)).account;
const pay = wrapFetchWithPayment(fetch, payer as never, 1_000_000n);

const [w] = await queryRows<{ address: string }>(conn, `SELECT w.address FROM a_board b JOIN wallets w USING (wallet_id) WHERE b.preset = 'sharp-forecasters' ORDER BY b.rank LIMIT 1`);
const [m] = await queryRows<{ condition_id: string }>(conn, `SELECT condition_id FROM markets WHERE closed_at IS NULL ORDER BY volume_usdc DESC NULLS LAST LIMIT 1`);
const routes: [string, string, RequestInit][] = [
  ['payment overhead (no-op route)', '/v1/agent/bench/noop', {}],
  ['leaderboard', '/v1/agent/leaderboard?limit=10', {}],
  ['preset ranking', '/v1/agent/rankings/preset/sharp-forecasters?limit=25', {}],
  ['trader playbook', `/v1/agent/trader/${w!.address}/playbook`, {}],
  ['market flow', `/v1/agent/market/${m!.condition_id}/flow`, {}],
  ['smart-money signals', '/v1/agent/signals/smart-money?limit=20', {}],
  ['custom ranking', '/v1/agent/rankings/custom', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ weights: { calibration: 0.6, alpha_24h: 0.4 }, limit: 25 }) }],
];
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))]!;
console.log(`x402 paid round trips (402 → sign → paid request → verify, reserve, compute, settle on anvil), ${runs} runs each, ${dbPath}`);
console.log(`${'route'.padEnd(32)} ${'p50 ms'.padStart(8)} ${'p95 ms'.padStart(8)} ${'max ms'.padStart(8)}`);
for (const [name, path, init] of routes) {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    const res = await pay(`${origin}${path}`, init);
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`${name}: ${res.status}`);
    times.push(performance.now() - t0);
  }
  console.log(`${name.padEnd(32)} ${pct(times, 0.5).toFixed(1).padStart(8)} ${pct(times, 0.95).toFixed(1).padStart(8)} ${Math.max(...times).toFixed(1).padStart(8)}`);
}
console.log(`settled payments: ${(await ledger.totals()).reduce((n, r) => n + r.settled, 0)}`);
await new Promise((r) => server.close(r));
await ledger.close();
await chain.stop();
conn.closeSync();
instance.closeSync();
await rm(dir, { recursive: true, force: true });
