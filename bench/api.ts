/**
 * Benchmark: the REST API end to end over loopback (HTTP, auth, rate limiting, validation, JSON) on the demo
 * analytics build. Prints p50 / p95 / max latency per route, cold (first request, server cache empty) and warm.
 *   npm run bench:api -- [--db var/demo-w100000-d120-s42/venue.duckdb] [--runs 30]
 * Stop `npm start` first (it holds the DuckDB file); the bench opens it read-only and keeps its own SQLite stores
 * in a temp dir.
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { createSiweMessage } from 'viem/siwe';
import { openDuckDB, queryRows } from '../data/duckdb.ts';
import { duckRunner } from '../data/runner.ts';
import { startBenchApp } from './app.ts';

const { values } = parseArgs({ options: { db: { type: 'string' }, runs: { type: 'string' } } });
const dbPath = resolve(values.db ?? 'var/demo-w100000-d120-s42/venue.duckdb');
const runs = Number(values.runs ?? 30);
const { instance, conn } = await openDuckDB({ path: dbPath, threads: 2, readOnly: true });
const [last] = await queryRows<{ t: Date }>(conn, `SELECT max(ts) AS t FROM fills`);
const { base, bearer, close } = await startBenchApp({ db: duckRunner(conn), venueNow: () => new Date(last!.t) });

const [w] = await queryRows<{ address: string }>(conn, `SELECT w.address FROM a_board b JOIN wallets w USING (wallet_id) WHERE b.preset = 'sharp-forecasters' ORDER BY b.rank LIMIT 1`);
const [m] = await queryRows<{ condition_id: string }>(conn, `SELECT condition_id FROM markets WHERE closed_at IS NULL ORDER BY volume_usdc DESC NULLS LAST LIMIT 1`);
const [ev] = await queryRows<{ slug: string }>(conn, `SELECT e.slug FROM events e JOIN markets m USING (event_id) WHERE m.closed_at IS NULL GROUP BY 1 ORDER BY count(*) DESC LIMIT 1`);
const lb = (await (await fetch(`${base}/v1/public/leaderboard?limit=1`)).json()) as { rows: { tid: string }[] };

const routes: [string, string, Record<string, string>][] = [
  ['public leaderboard', '/v1/public/leaderboard', {}],
  ['public trader teaser (tid)', `/v1/public/trader/${lb.rows[0]!.tid}`, {}],
  ['public market teaser', `/v1/public/market/${m!.condition_id}`, {}],
  ['public event view', `/v1/public/event/${ev!.slug}`, {}],
  ['public top events', '/v1/public/events/top', {}],
  ['public top-ROI', '/v1/public/trades/top-roi', {}],
  ['public search (text)', '/v1/public/search?q=bitcoin', {}],
  ['public pulse', '/v1/public/pulse', {}],
  ['preset ranking', '/v1/rankings/preset/sharp-forecasters?limit=50', bearer],
  ['custom ranking', '/v1/rankings?weights=calibration:0.6,alpha_24h:0.4&limit=50', bearer],
  ['trader calibration', `/v1/trader/${w!.address}/calibration`, bearer],
  ['trader positions', `/v1/trader/${w!.address}/positions?limit=50`, bearer],
  ['trader activity', `/v1/trader/${w!.address}/activity?limit=50`, bearer],
  ['trader copy-fitness', `/v1/trader/${w!.address}/copy-fitness`, bearer],
  ['resolutions feed', '/v1/resolutions?limit=100', bearer],
  ['account plan (key auth only)', '/v1/account/plan', bearer],
];

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))]!;
console.log(`REST API over loopback, ${dbPath}, ${runs} warm runs per route`);
console.log(`${'route'.padEnd(32)} ${'cold ms'.padStart(9)} ${'p50 ms'.padStart(8)} ${'p95 ms'.padStart(8)} ${'max ms'.padStart(8)}`);
for (const [name, path, headers] of routes) {
  const t0 = performance.now();
  const first = await fetch(`${base}${path}`, { headers });
  await first.arrayBuffer();
  const cold = performance.now() - t0;
  if (first.status !== 200) throw new Error(`${name}: ${first.status}`);
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    const r = await fetch(`${base}${path}`, { headers });
    await r.arrayBuffer();
    times.push(performance.now() - t);
  }
  console.log(`${name.padEnd(32)} ${cold.toFixed(1).padStart(9)} ${pct(times, 0.5).toFixed(1).padStart(8)} ${pct(times, 0.95).toFixed(1).padStart(8)} ${Math.max(...times).toFixed(1).padStart(8)}`);
}

// sign-in: nonce + viem-signed SIWE verify, end to end
const signer = privateKeyToAccount(generatePrivateKey());
const siwe: number[] = [];
for (let i = 0; i < runs; i++) {
  const t = performance.now();
  const { nonce } = (await (await fetch(`${base}/v1/auth/siwe/nonce`, { method: 'POST' })).json()) as { nonce: string };
  const message = createSiweMessage({ address: signer.address, chainId: 137, domain: new URL(base).host, nonce, uri: base, version: '1', issuedAt: new Date() });
  const signature = await signer.signMessage({ message });
  const r = await fetch(`${base}/v1/auth/siwe/verify`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message, signature }) });
  if (r.status !== 200) throw new Error(`siwe ${r.status}`);
  await r.arrayBuffer();
  siwe.push(performance.now() - t);
}
console.log(`${'SIWE nonce+sign+verify'.padEnd(32)} ${''.padStart(9)} ${pct(siwe, 0.5).toFixed(1).padStart(8)} ${pct(siwe, 0.95).toFixed(1).padStart(8)} ${Math.max(...siwe).toFixed(1).padStart(8)}`);

await close();
conn.closeSync();
instance.closeSync();
