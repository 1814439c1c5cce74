/** Test helper: the whole REST app on a loopback port, with real SQLite account and rate stores in a temp dir. */
import { keepIdleConnections } from '../../web-api/keep-alive.ts';
import { mkdtemp, rm } from 'node:fs/promises';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PlanId } from '../../core/plans.ts';
import type { QueryRunner } from '../../core/query.ts';
import { AccountStore } from '../../data/account-store.ts';
import { openServiceDb, type SqlDb } from '../../data/sql/db.ts';
import { SqlRateStore, type RateStore } from '../../data/rate-limit.ts';
import { ResolutionFeed } from '../../data/resolution-feed.ts';
import { PushStore } from '../../data/push-store.ts';
import { WebhookStore } from '../../data/webhook-store.ts';
import { PushService } from '../../jobs/push.ts';
import { WebhookService } from '../../jobs/webhooks/service.ts';
import { createApp, type AppDeps } from '../../web-api/app.ts';
import type { AuthConfig } from '../../web-api/auth.ts';

export interface TestApp {
  base: string;
  origin: string;
  accounts: AccountStore;
  /** the service database every store of this app shares */
  serviceDb: SqlDb;
  rates: RateStore;
  dir: string;
  /** a fresh user on this plan and a live API key of theirs */
  keyFor(plan: PlanId): Promise<{ key: string; userId: string }>;
  close(): Promise<void>;
}

let users = 0;

export async function startApp(
  db: QueryRunner,
  opts: Partial<Omit<AppDeps, 'db' | 'accounts' | 'rates' | 'auth'>> & { rates?: RateStore; auth?: Omit<AuthConfig, 'origin'>; webhookTargets?: { allowlist: string[]; ca: string } } = {},
): Promise<TestApp> {
  const dir = await mkdtemp(join(tmpdir(), 'app-test-'));
  // one service database for every store of the process (SQLite: one connection whose transactions queue)
  const serviceDb = await openServiceDb(join(dir, 'service.sqlite'));
  const accounts = await AccountStore.open(serviceDb);
  const rates = opts.rates ?? (await SqlRateStore.open(serviceDb));
  // the origin is only known after listen; the app reads the config object lazily, so fill it in then
  const auth: AuthConfig = { ...opts.auth, origin: '' };
  const resolutionFeed = await ResolutionFeed.open(serviceDb);
  // the real webhook and push services on the same file unless a test brings its own
  const webhookStore = await WebhookStore.open(serviceDb);
  const pushStore = await PushStore.open(serviceDb);
  // a test's own receivers on loopback pass the SSRF guard only when it names them (webhookTargets)
  const webhooks = await WebhookService.open({ store: webhookStore, planOf: (u) => accounts.planOf(u), ...(opts.webhookTargets ?? {}) });
  const push = await PushService.open({ store: pushStore, subject: 'mailto:test@example.com' });
  const app = createApp({ resolutionFeed, tidKey: 'test-tid-key-0123456789abcdef', webhooks, push, ...opts, db, accounts, rates, auth });
  // as the service's servers: idle keep-alive connections stay 65 s (a test that pauses between requests on a loaded
  // machine was reset otherwise: Node closes them after 5 s)
  const server: Server = keepIdleConnections(app.listen(0, '127.0.0.1'));
  await new Promise((r) => server.once('listening', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  auth.origin = base;
  return {
    base,
    origin: base,
    accounts,
    serviceDb,
    rates,
    dir,
    async keyFor(plan) {
      const u = await accounts.userForEmail(`user${++users}-${plan}@example.com`, Date.now());
      if (plan !== 'free') await accounts.setPlan(u.user_id, plan, Date.now(), 'test');
      return { key: (await accounts.mintApiKey(u.user_id, 'test', Date.now())).key, userId: u.user_id };
    },
    async close() {
      await new Promise((r) => server.close(r));
      // deliveries in progress end before the database they write to closes
      await webhooks.worker.stop();
      await accounts.close();
      await serviceDb.close();
      await resolutionFeed.close();
      await webhookStore.close();
      await pushStore.close();
      await rates.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
