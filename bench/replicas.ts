/**
 * Benchmark: scale-out on this machine.
 *   npm run bench:replicas -- [--parts stores,serve,publish] [--wallets 20000] [--days 30] [--seconds 10] [--concurrency 16]
 * - stores: per-request cost of the service state on SQLite vs PostgreSQL — API-key authentication (one indexed
 *   read) and a payment's ledger writes (reserve + settle), p50 / p99 over N sequential calls.
 * - serve: a builder and 1, then 2 API replicas (PostgreSQL, Redis, a local chain with one facilitator) on loopback;
 *   a closed-loop load of the cached preset ranking (round-robin over the replicas, many Desk keys so no rate limit
 *   binds) and of paid x402 calls (each a fresh EIP-3009 authorization, settled on the local chain): requests/s and
 *   p50 / p99. The load generator runs on the same two cores as the replicas: the ratio is bounded by the machine.
 * - publish: the builder's publish (copy seconds, MB) and the time from a publication to both replicas serving it.
 * Needs PostgreSQL on 127.0.0.1:5432 (PG_TEST_URL) and Redis on 127.0.0.1:6379 (REDIS_URL).
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import express from 'express';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { createPaymentHeader } from 'x402/client';
import type { PaymentRequirements } from 'x402/types';
import { AccountStore } from '../data/account-store.ts';
import { PaymentLedger } from '../data/payment-ledger.ts';
import { readPointer } from '../data/published-analytics.ts';
import { openServiceDb } from '../data/sql/db.ts';
import { LocalFacilitator } from '../gateway/facilitator.ts';
import { facilitatorRouter } from '../gateway/facilitator-server.ts';
import { startLocalChain } from '../gateway/local-chain/chain.ts';
import { freshPostgres } from '../test/helpers/postgres.ts';
import { freePort, startRole, type RoleProcess } from '../test/helpers/roles.ts';

const { values } = parseArgs({
  options: { parts: { type: 'string' }, wallets: { type: 'string' }, days: { type: 'string' }, seconds: { type: 'string' }, concurrency: { type: 'string' } },
});
const parts = new Set((values.parts ?? 'stores,serve,publish').split(','));
const seconds = Number(values.seconds ?? 10);
const concurrency = Number(values.concurrency ?? 16);
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const pct = (xs: number[], p: number) => (xs.length ? [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))]! : NaN);
const ms = (x: number) => x.toFixed(2).padStart(8);

// ---------------------------------------------------------------------------------------------------------------
if (parts.has('stores')) {
  const dir = await mkdtemp(join(tmpdir(), 'bench-stores-'));
  const pg = await freshPostgres('sa_bench');
  console.log('service state per request (sequential calls, p50 / p99 ms)');
  console.log(`${'operation'.padEnd(34)} ${'SQLite p50'.padStart(10)} ${'p99'.padStart(8)} ${'PG p50'.padStart(8)} ${'p99'.padStart(8)}`);
  const rows: Record<string, number[][]> = {};
  for (const [engine, target] of [['sqlite', join(dir, 'service.sqlite')], ['postgres', pg.url]] as const) {
    const db = await openServiceDb(target);
    const accounts = await AccountStore.open(db);
    const ledger = await PaymentLedger.open(db);
    const u = await accounts.userForEmail('bench@example.com', Date.now());
    const { key } = await accounts.mintApiKey(u.user_id, 'bench', Date.now());
    const time = async (n: number, f: (i: number) => Promise<unknown>) => {
      const out: number[] = [];
      for (let i = 0; i < 50; i++) await f(-1 - i); // warm-up
      for (let i = 0; i < n; i++) {
        const t = performance.now();
        await f(i);
        out.push(performance.now() - t);
      }
      return out;
    };
    const auth = await time(3000, () => accounts.authenticateKey(key, Date.now()));
    const pay = await time(1000, async (i) => {
      const r = await ledger.reserve(
        { route: 'leaderboard', resource: 'bench', network: 'base-sepolia', asset: '0xasset', payer: '0xpayer', payTo: '0xpayto', amount: '2000', nonce: `${engine}-${i}-${Math.random()}`, validBefore: 2e9 },
        Date.now(),
      );
      if (!r.ok) throw new Error('reserve refused');
      await ledger.settle(r.key, { transaction: '0xtx' }, Date.now());
    });
    (rows['API-key authentication'] ??= []).push(auth);
    (rows['payment reserve + settle'] ??= []).push(pay);
    await ledger.close();
    await accounts.close();
    await db.close();
  }
  for (const [name, [s, p]] of Object.entries(rows)) console.log(`${name.padEnd(34)} ${ms(pct(s!, 0.5)).padStart(10)} ${ms(pct(s!, 0.99))} ${ms(pct(p!, 0.5))} ${ms(pct(p!, 0.99))}`);
  await pg.drop();
  await rm(dir, { recursive: true, force: true });
}

// ---------------------------------------------------------------------------------------------------------------
if (parts.has('serve') || parts.has('publish')) {
  const children: ChildProcess[] = [];
  const dir = await mkdtemp(join(tmpdir(), 'bench-replicas-'));
  const pg = await freshPostgres('sa_bench_replicas');
  const chain = await startLocalChain();
  const app = express();
  app.use(facilitatorRouter(new LocalFacilitator({ rpcUrl: chain.rpcUrl, network: chain.network, privateKey: chain.facilitatorPrivateKey })));
  const fport = await freePort();
  const facilitator: Server = app.listen(fport, '127.0.0.1');
  const common = {
    DATA_DIR: join(dir, 'data'),
    DEMO_WALLETS: values.wallets ?? '20000',
    DEMO_DAYS: values.days ?? '30',
    DATABASE_URL: pg.url,
    REDIS_URL,
    WEBHOOK_QUEUE_PREFIX: `bench${process.pid}`,
    TID_KEY: 'bench-replicas-tid-key-0123456789',
    NODE_ENV: 'test',
  };
  const payTo = privateKeyToAccount(generatePrivateKey()).address;
  const apiEnv = { ...common, X402_MODE: 'remote', X402_FACILITATOR_URL: `http://127.0.0.1:${fport}`, X402_NETWORK: chain.network, X402_PAY_TO: payTo, X402_ASSET: chain.usdc };
  try {
    console.log(`\nstarting the builder (${common.DEMO_WALLETS} wallets, ${common.DEMO_DAYS} days) ...`);
    const builder = await startRole('builder', { ...common, X402_MODE: 'off', LIVE_TAIL_RATE: '68', PUBLISH_EVERY_MS: '5000' }, { children });
    const replicas: RoleProcess[] = [await startRole('api', apiEnv, { children })];
    // Desk keys, 1,000 requests a minute each, so the load is never refused by a rate limit (made in the shared
    // database directly: sign-ups from one address are rate-limited)
    const keys: string[] = [];
    const accounts = await AccountStore.open(pg.url);
    for (let i = 0; i < 60; i++) {
      const u = await accounts.userForEmail(`bench${i}@example.com`, Date.now());
      await accounts.setPlan(u.user_id, 'desk', Date.now(), 'bench');
      keys.push((await accounts.mintApiKey(u.user_id, 'bench', Date.now())).key);
    }
    await accounts.close();
    const payer = (await chain.newPayer(1_000_000_000n)).account;

    /** closed loop: `conc` workers, each sending one request after another for `secs`, round-robin over replicas */
    const load = async (name: string, n: number, conc: number, secs: number, send: (base: string, i: number) => Promise<Response>) => {
      const lat: number[] = [];
      let errors = 0;
      let i = 0;
      const end = performance.now() + secs * 1000;
      await Promise.all(
        Array.from({ length: conc }, async () => {
          while (performance.now() < end) {
            const k = i++;
            const t = performance.now();
            const r = await send(replicas[k % n]!.base, k).catch(() => null);
            if (r) await r.arrayBuffer();
            if (!r || r.status !== 200) errors++;
            else lat.push(performance.now() - t);
          }
        }),
      );
      console.log(`${name.padEnd(34)} ${String(n).padStart(8)} ${(lat.length / secs).toFixed(0).padStart(8)} ${ms(pct(lat, 0.5))} ${ms(pct(lat, 0.99))} ${String(errors).padStart(7)}`);
      return lat.length / secs;
    };
    const preset = (base: string, i: number) => fetch(`${base}/v1/rankings/preset/sharp-forecasters?limit=50`, { headers: { authorization: `Bearer ${keys[i % keys.length]}` } });
    const paidPath = '/v1/agent/leaderboard?limit=5';
    const required = ((await (await fetch(`${replicas[0]!.base}${paidPath}`)).json()) as { accepts: PaymentRequirements[] }).accepts[0]!;
    const paid = async (base: string) => fetch(`${base}${paidPath}`, { headers: { 'x-payment': await createPaymentHeader(payer as never, 1, required) } });

    if (parts.has('serve')) {
      console.log(`\nload for ${seconds} s each (closed loop), generator on the same machine`);
      console.log(`${'route'.padEnd(34)} ${'replicas'.padStart(8)} ${'req/s'.padStart(8)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)} ${'errors'.padStart(7)}`);
      for (let i = 0; i < 200; i++) await (await preset(replicas[0]!.base, i)).arrayBuffer(); // warm the cache
      const one = { preset: await load('cached preset (Desk keys)', 1, concurrency, seconds, preset), paid: await load('paid x402 call (leaderboard)', 1, 4, seconds, paid) };
      replicas.push(await startRole('api', apiEnv, { children }));
      for (let i = 0; i < 200; i++) await (await preset(replicas[1]!.base, i)).arrayBuffer();
      const two = { preset: await load('cached preset (Desk keys)', 2, concurrency, seconds, preset), paid: await load('paid x402 call (leaderboard)', 2, 4, seconds, paid) };
      console.log(`ratio 2 / 1 replicas: cached preset ${(two.preset / one.preset).toFixed(2)}x, paid call ${(two.paid / one.paid).toFixed(2)}x (two cores shared by the builder, both replicas and the load)`);
    } else replicas.push(await startRole('api', apiEnv, { children }));

    if (parts.has('publish')) {
      const publishDir = /analytics published to (\S+)/.exec(builder.log())![1]!;
      console.log(`\npublications (builder every 5 s) -> both replicas serving`);
      const lags: number[] = [];
      let last = (await readPointer(publishDir))!.version;
      for (let n = 0; n < 5; n++) {
        let p = await readPointer(publishDir);
        while (!p || p.version <= last) {
          await new Promise((r) => setTimeout(r, 50));
          p = await readPointer(publishDir);
        }
        last = p.version;
        const want = p.version;
        const served = await Promise.all(
          replicas.map(async (r) => {
            for (;;) {
              const h = (await (await fetch(`${r.base}/healthz`)).json()) as { version: number };
              if (h.version >= want) return Date.now();
              await new Promise((x) => setTimeout(x, 20));
            }
          }),
        );
        const lag = Math.max(...served) - Date.parse(p.published_at);
        lags.push(lag);
        console.log(`  v${p.version}: copy ${p.copy_seconds.toFixed(2)} s, ${(p.bytes / 2 ** 20).toFixed(0)} MB; publication -> ${replicas.length} replicas serving ${lag} ms`);
      }
      console.log(`  p50 ${pct(lags, 0.5)} ms, max ${Math.max(...lags)} ms`);
    }
  } finally {
    for (const c of children) c.kill('SIGKILL');
    facilitator.close();
    await chain.stop();
    await new Promise((r) => setTimeout(r, 300));
    await pg.drop();
    await rm(dir, { recursive: true, force: true });
  }
}
process.exit(0);
