/**
 * The REST app for benchmarks: real SQLite account, rate and feed stores (one service database) in a temp dir, rate limits lifted (a bench
 * measures the work, not the limiter), on a loopback port, with a Desk-plan user and its API key.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AccountStore } from '../data/account-store.ts';
import { SqlRateStore } from '../data/rate-limit.ts';
import { ResolutionFeed } from '../data/resolution-feed.ts';
import { openServiceDb } from '../data/sql/db.ts';
import { createApp, type AppDeps } from '../web-api/app.ts';
import { keepIdleConnections } from '../web-api/keep-alive.ts';

export interface BenchApp {
  base: string;
  /** Authorization header of the Desk-plan key */
  bearer: { authorization: string };
  close(): Promise<void>;
}

export async function startBenchApp(deps: Omit<AppDeps, 'accounts' | 'rates' | 'resolutionFeed' | 'auth' | 'tidKey' | 'rateRules'>): Promise<BenchApp> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-app-'));
  // one connection for every store of the process (data/sql/db.ts)
  const serviceDb = await openServiceDb(join(dir, 'service.sqlite'));
  const accounts = await AccountStore.open(serviceDb);
  const rates = await SqlRateStore.open(serviceDb);
  const resolutionFeed = await ResolutionFeed.open(serviceDb);
  const auth = { origin: '' };
  const app = createApp({
    ...deps,
    accounts,
    rates,
    resolutionFeed,
    auth,
    tidKey: 'bench-tid-key-0123456789abcdef',
    rateRules: { ip: { limit: 1e9 }, publicIp: { limit: 1e9 }, nonceIp: { limit: 1e9 }, verifyIp: { limit: 1e9 } },
  });
  // as main.ts serves it
  const server = keepIdleConnections(app.listen(0, '127.0.0.1'));
  await new Promise((r) => server.once('listening', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  auth.origin = base;
  const user = await accounts.userForEmail('bench@example.com', Date.now());
  await accounts.setPlan(user.user_id, 'desk', Date.now());
  const bearer = { authorization: `Bearer ${(await accounts.mintApiKey(user.user_id, 'bench', Date.now())).key}` };
  return {
    base,
    bearer,
    async close() {
      await new Promise((r) => server.close(r));
      await accounts.close();
      await resolutionFeed.close();
      await rates.close();
      await serviceDb.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
