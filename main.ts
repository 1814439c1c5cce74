/**
 * Composition root: reads configuration once, then runs the process's role (`--role`, or ROLE):
 * - all (default, `npm start`): everything in one process — the venue (the demo venue generated on first run, with a
 *   progress bar), the live analytics, every surface (REST and the web app, x402, MCP, the stream) and the jobs.
 * - builder: the venue and its live analytics, the event producers (webhooks, push, the fill bus) and the daily
 *   jobs; it publishes analytics states to PUBLISH_DIR for API replicas, and serves only /healthz and /readyz.
 * - api: every surface, on the newest published analytics state (read-only, switched as new ones appear) and the
 *   shared service state (DATABASE_URL, REDIS_URL); as many as the load needs, behind a load balancer.
 * - worker: webhook deliveries only (the outbox in the service database, or the Redis queue).
 * docs/operations.md "Scaling out" shows how to run them.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { openDuckDB, queryRows, sqlString } from './data/duckdb.ts';
import { attachVenue } from './data/venue.ts';
import { createVenueViews, migrateVenue } from './data/schema.ts';
import { generateVenue } from './data/generator/index.ts';
import { DEFAULT_END } from './data/generator/config.ts';
import { DEMO_VENUE, REAL_MARKETS_CSV } from './data/generator/defaults.ts';
import { progressBar } from './data/progress.ts';
import { LiveTail } from './data/live-tail/tail.ts';
import type { TailFill, TailResolution } from './data/live-tail/generator.ts';
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import type { Server } from 'node:http';
import { AnalyticsEngine } from './jobs/analytics/engine.ts';
import { snapshotRunner } from './data/snapshot-runner.ts';
import { PublishedAnalytics, publishAnalytics, type PublishedPointer } from './data/published-analytics.ts';
import { LocalFillBus, RedisFillBus, type FillBus } from './jobs/fill-bus.ts';
import { healthOnlyApp, type HealthCheck } from './web-api/health.ts';
import { keepIdleConnections } from './web-api/keep-alive.ts';
import { RedisSharedCache } from './data/shared-cache.ts';
import { RankerCache } from './jobs/analytics/rankers.ts';
import { ensureWalletLinks } from './core/rankings.ts';
import { SnapshotStore } from './data/snapshot-store.ts';
import { buildUi, uiStale } from './web-api/ui-build.ts';
import { createApp } from './web-api/app.ts';
import { duckRunner } from './data/runner.ts';
import { AccountStore } from './data/account-store.ts';
import { openServiceDb } from './data/sql/db.ts';
import { RedisRateStore, SqlRateStore, type RateStore } from './data/rate-limit.ts';
import { mailerFromEnv } from './web-api/mail.ts';
import { ResolutionFeed } from './data/resolution-feed.ts';
import { startResolutionFeedSync, startSnapshotSchedule } from './jobs/snapshot-schedule.ts';
import { startGateway } from './gateway/index.ts';
import { TOOL_PRICES } from './gateway/payment/pricing.ts';
import { TidIndex } from './core/public/index.ts';
import { mcpRouter } from './mcp/server.ts';
import { WebhookStore } from './data/webhook-store.ts';
import { fillEvents, publishFillEvents, resolutionData, VenueLookup, WebhookService } from './jobs/webhooks/service.ts';
import { FillStream } from './jobs/stream.ts';
import { PushStore } from './data/push-store.ts';
import { PushService } from './jobs/push.ts';
import { devTargetsFromEnvOrExit } from './jobs/webhooks/dev-targets.ts';
import { VenueSelectError, isSyncedVenue, loadDirVenue, parseVenue, storedVenueTime, venueDbPath, venueRoot } from './data/venue-select.ts';
import { POLYMARKET_GAMMA_URL, VenueSync } from './data/sync/index.ts';
import { HttpSource, JsonRpc } from './data/sync/http.ts';
import { blockAtTime } from './data/sync/block-time.ts';
import type { VenueChoice } from './data/venue-select.ts';

const Address = z.string().regex(/^0x[0-9a-fA-F]{40}$/);
const AddressList = z
  .string()
  .default('')
  .transform((v) => v.split(',').map((x) => x.trim()).filter(Boolean))
  .pipe(z.array(Address));
const ROLES = ['all', 'api', 'builder', 'worker'] as const;
type Role = (typeof ROLES)[number];
const Env = z.object({
  /** the process's part (the --role flag wins): all | api | builder | worker */
  ROLE: z.enum(ROLES).default('all'),
  /** where the builder publishes analytics states and API replicas read them; default <venue dir>/published */
  PUBLISH_DIR: z.string().optional(),
  /** the builder publishes at most this often (each publish copies the whole database) */
  PUBLISH_EVERY_MS: z.coerce.number().int().min(0).max(86_400_000).default(30_000),
  /** on SIGTERM: how long /readyz says 503 before the server stops taking connections (the balancer's notice) */
  DRAIN_MS: z.coerce.number().int().min(0).max(300_000).default(0),
  DATA_DIR: z.string().default('var'),
  /** demo (the generated venue, default) | polymarket (synced from the public sources) | a venue directory */
  VENUE: z.string().min(1).default('demo'),
  /** the sync's sources (VENUE=polymarket, or a synced directory to keep following) */
  GAMMA_URL: z.url().optional(),
  POLYGON_RPC_URL: z.url().optional(),
  /** VENUE=polymarket's first backfill starts here: a block number or an ISO date (default: 7 days ago) */
  VENUE_FROM: z.string().regex(/^(\d+|\d{4}-\d{2}-\d{2}(T[\d:.]+Z?)?)$/).optional(),
  VENUE_CONFIRMATIONS: z.coerce.number().int().min(0).max(10_000).default(32),
  /** exchanges beyond the defaults (the V2 contracts), comma-separated */
  VENUE_CTF_EXCHANGES: AddressList,
  VENUE_NEG_RISK_EXCHANGES: AddressList,
  VENUE_POLL_MS: z.coerce.number().int().min(100).default(2000),
  DEMO_WALLETS: z.coerce.number().int().min(100).default(DEMO_VENUE.wallets),
  DEMO_DAYS: z.coerce.number().int().min(2).default(DEMO_VENUE.days),
  DEMO_SEED: z.coerce.number().int().min(0).default(DEMO_VENUE.seed),
  LIVE_TAIL: z.enum(['on', 'off']).default('on'),
  PORT: z.coerce.number().int().min(1).max(65535).default(8080),
  HOST: z.string().default('127.0.0.1'),
  LIVE_TAIL_RATE: z.coerce.number().positive().max(10_000).default(68),
  LIVE_TAIL_SPEED: z.coerce.number().positive().max(100_000).default(1),
  /** pause between analytics refreshes (from the end of one to the start of the next) */
  ANALYTICS_REFRESH_MS: z.coerce.number().int().min(0).max(3_600_000).default(5000),
  /** the origin users reach the service on (SIWE URI, magic links, CSRF check); default http://HOST:PORT */
  PUBLIC_ORIGIN: z.url().optional(),
  SIWE_CHAIN_IDS: z.string().regex(/^\d+(,\d+)*$/).default('137'),
  SIWE_RPC_URL: z.url().optional(),
  /** postgres://… puts the service state (accounts, payments, webhooks, …) in PostgreSQL; default: SQLite next to the venue */
  DATABASE_URL: z.string().regex(/^postgres(ql)?:\/\//, 'DATABASE_URL must be a postgres:// URL').optional(),
  REDIS_URL: z.string().optional(),
  /** the deployment's Redis key prefix: the webhook delivery queue (share it with `npm run webhooks:worker`), rate counters, the fill channel */
  WEBHOOK_QUEUE_PREFIX: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/).default('service'),
  /** express "trust proxy": a hop count (1), true/false, or addresses/subnets (loopback, 10.0.0.0/8) */
  TRUST_PROXY: z
    .string()
    .optional()
    .transform((v) => (v === undefined ? undefined : /^\d+$/.test(v) ? Number(v) : v === 'true' ? true : v === 'false' ? false : v)),
  /** the agent tier: local = anvil + test USDC + local facilitator (offline development); remote = a v1 facilitator */
  X402_MODE: z.enum(['local', 'remote', 'off']).default('local'),
  X402_FACILITATOR_URL: z.url().optional(),
  X402_NETWORK: z.string().optional(),
  X402_PAY_TO: z.string().regex(/^0x[0-9a-fA-F]{40}$/).optional(),
  X402_ASSET: z.string().regex(/^0x[0-9a-fA-F]{40}$/).optional(),
  /** contact push services see in VAPID tokens (mailto: or https:) */
  VAPID_SUBJECT: z.string().regex(/^(mailto:|https:)/).default('mailto:ops@localhost'),
  /** secret keying the public namespace's opaque trader ids; default: a random key kept in <venue dir>/tid.key */
  TID_KEY: z.string().min(16).optional(),
  NODE_ENV: z.string().optional(),
  /** development only: host:port webhook receivers allowed past the SSRF guard (jobs/webhooks/dev-targets.ts) */
  WEBHOOK_DEV_TARGETS: z.string().optional(),
  /** development only: a PEM certificate to trust for them (a self-signed receiver) */
  WEBHOOK_DEV_CA: z.string().optional(),
});

const parsed = Env.safeParse(process.env);
if (!parsed.success) {
  console.error(`configuration error: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  process.exit(2);
}
const env = parsed.data;
const roleFlag = process.argv.indexOf('--role');
const roleArg = roleFlag >= 0 ? process.argv[roleFlag + 1] : undefined;
if (roleArg !== undefined && !(ROLES as readonly string[]).includes(roleArg)) {
  console.error(`configuration error: --role must be one of ${ROLES.join(', ')}`);
  process.exit(2);
}
const role: Role = (roleArg as Role | undefined) ?? env.ROLE;
const builds = role === 'all' || role === 'builder';
const log = (m: string) => console.log(`  ${m}`);
// checked before anything is built: a development allow-list in production stops the start
const devTargets = await devTargetsFromEnvOrExit(env);
const venueOpts = { wallets: env.DEMO_WALLETS, days: env.DEMO_DAYS, seed: env.DEMO_SEED, end: DEFAULT_END, realMarketsCsv: REAL_MARKETS_CSV };
let venue: VenueChoice;
let dbPath: string;
try {
  venue = parseVenue(env.VENUE, env.DATA_DIR);
  dbPath = venue.kind === 'demo' ? '' : venueDbPath(venue);
} catch (e) {
  if (!(e instanceof VenueSelectError)) throw e;
  console.error(`configuration error: ${e.message}`);
  process.exit(2);
}
const root = venueRoot(process.env);
if (venue.kind === 'demo') dbPath = join(root, 'venue.duckdb');
await mkdir(root, { recursive: true });

// The venue and its analytics live in the builder (and in the one process of role all); API replicas read what it
// publishes, workers need neither.
let instance!: DuckDBInstance;
let conn!: DuckDBConnection;
let engine!: AnalyticsEngine;
let sync: VenueSync | undefined;
let storedClockMs = Date.now();
let clock: () => Date = () => new Date(storedClockMs);
const publishDir = env.PUBLISH_DIR ?? join(root, 'published');
if (builds) {
  if (venue.kind === 'demo' && !existsSync(join(root, 'manifest.json'))) {
    console.error(`Generating the demo venue (${venueOpts.wallets.toLocaleString()} wallets, ${venueOpts.days} days, seed ${venueOpts.seed}) in ${root}`);
    const bar = progressBar('demo venue');
    const r = await generateVenue(venueOpts, root, bar.update);
    bar.stop();
    console.error(`  done in ${r.seconds.toFixed(1)} s: ${r.counts.fills!.toLocaleString()} fills, ${r.counts.markets!.toLocaleString()} markets`);
  }

  ({ instance, conn } = await openDuckDB({ path: dbPath, threads: 2 }));
  if (venue.kind === 'demo') {
    // The marker is written last, so a load interrupted half-way is redone on the next start.
    const loaded = await queryRows(conn, `SELECT 1 FROM information_schema.tables WHERE table_name = 'venue_loaded'`);
    if (loaded.length === 0) {
      console.error('Loading the venue into DuckDB ...');
      await attachVenue(conn, join(root, 'venue'), { materialize: true });
      await conn.run(`CREATE TABLE venue_loaded AS SELECT now() AS loaded_at`);
    }
  } else if (venue.kind === 'dir') {
    await loadDirVenue(conn, root, (m) => console.error(m));
  }

  // The sync: VENUE=polymarket always; a directory written by `npm run venue:sync` keeps following its sources when
  // they are configured (else it is served as it is).
  if (venue.kind === 'polymarket' || (venue.kind === 'dir' && (await isSyncedVenue(conn)) && env.POLYGON_RPC_URL)) {
    if (!env.POLYGON_RPC_URL) {
      console.error('configuration error: VENUE=polymarket needs POLYGON_RPC_URL (a Polygon JSON-RPC endpoint); GAMMA_URL defaults to the public Gamma API');
      process.exit(2);
    }
    const resuming = await isSyncedVenue(conn);
    let fromBlock = 0n;
    if (!resuming) {
      // the first backfill's start: VENUE_FROM (a block or a date), else a week back
      const from = env.VENUE_FROM ?? new Date(Date.now() - 7 * 86_400_000).toISOString();
      const probe = new JsonRpc(new HttpSource({ name: 'rpc', baseUrl: env.POLYGON_RPC_URL }));
      fromBlock = /^\d+$/.test(from) ? BigInt(from) : await blockAtTime(probe, new Date(from));
      await probe.source.close();
    }
    sync = await VenueSync.open(conn, {
      gammaUrl: env.GAMMA_URL ?? POLYMARKET_GAMMA_URL,
      rpcUrl: env.POLYGON_RPC_URL,
      chain: { ctfExchanges: env.VENUE_CTF_EXCHANGES, negRiskExchanges: env.VENUE_NEG_RISK_EXCHANGES },
      fromBlock,
      confirmations: env.VENUE_CONFIRMATIONS,
    });
    console.error(`${resuming ? 'Resuming' : 'Starting'} the venue sync (${env.GAMMA_URL ?? POLYMARKET_GAMMA_URL}, chain from block ${await sync.chain.nextBlock()})`);
    const bar = progressBar('venue sync');
    sync.on('progress', (p) => {
      if (p.phase === 'chain' && p.done !== undefined && p.total !== undefined) bar.update('chain', Math.min(p.done, p.total), p.total);
    });
    sync.on('gamma', (p) => bar.update(`gamma ${p.phase}`, p.markets, Math.max(p.markets, 1)));
    const r = await sync.backfill();
    bar.stop();
    sync.removeAllListeners('progress');
    sync.removeAllListeners('gamma');
    console.error(`  backfill: ${r.markets.toLocaleString()} markets read, ${r.blocks.toLocaleString()} blocks, ${r.fills.toLocaleString()} fills`);
  }
  // a database written by an older version gets the current venue schema (arrival seqs, nullable parties)
  await migrateVenue(conn);
  await createVenueViews(conn);
  const [summary] = await queryRows<Record<string, number | string>>(
    conn,
    `SELECT (SELECT count(*) FROM wallets) AS wallets, (SELECT count(*) FROM markets) AS markets, (SELECT count(*) FROM fills) AS fills,
       (SELECT count(*) FROM resolutions) AS resolutions, (SELECT max(ts)::VARCHAR FROM fills) AS last_fill`,
  );
  console.log(`Venue ready: ${dbPath}`);
  console.log(`  ${JSON.stringify(summary)}`);
  if (venue.kind === 'demo') console.log(`  Parquet tables: ${join(root, 'venue')}   ground truth: ${join(root, 'truth')}`);

  // Demo accounts: the generator's multi-wallet owners stand for users who linked their wallets (issue 5's accounts
  // write the same table); rankings show one row per user.
  await ensureWalletLinks(duckRunner(conn));
  const [links] = await queryRows<{ n: number }>(conn, `SELECT count(*) AS n FROM wallet_links`);
  const truthWallets = join(root, 'truth', 'wallets.parquet');
  if (links!.n === 0 && existsSync(truthWallets)) {
    await conn.run(`INSERT INTO wallet_links SELECT wallet_id, 'demo-owner-' || owner_id FROM read_parquet(${sqlString(truthWallets)}) WHERE owner_id IS NOT NULL ORDER BY wallet_id`);
  }
  // Analytics: the engine resumes its persisted state or builds it (as of the latest stored fill), then keeps it live
  // (jobs/analytics/engine.ts): every refresh recomputes what the new venue rows changed and commits a new version.
  const [lastStored] = await queryRows<{ t: Date }>(conn, `SELECT max(ts) AS t FROM fills`);
  // a stored venue's clock is its newest fill or synced block; a followed one's advances with each synced batch
  storedClockMs = venue.kind === 'demo' ? new Date(lastStored!.t).getTime() : (await storedVenueTime(conn)).getTime();
  sync?.on('batch', (s) => {
    if (s.toTs * 1000 > storedClockMs) storedClockMs = s.toTs * 1000;
  });
  let buildBar: ReturnType<typeof progressBar> | null = null;
  engine = await AnalyticsEngine.open(instance, {
    now: () => clock(),
    // a_position_state by wallet beside the database: refreshes read their wallets' rows from it (filled after the open)
    stateStore: `${dbPath}.state-rows.sqlite`,
    log: (m) => console.error(`  ${m}`),
    onBuildStep: (name, i, n) => {
      buildBar ??= progressBar('analytics');
      if (name === 'done') buildBar.stop();
      else buildBar.update(name, i, n);
    },
  });
  const [meta] = await queryRows<Record<string, unknown>>(
    conn,
    `SELECT (SELECT as_of::VARCHAR FROM a_meta) AS as_of, count(*) AS wallets, count(*) FILTER (WHERE calibration_ranked) AS ranked_on_calibration,
       count(*) FILTER (WHERE len(smart_money_tags) > 0) AS tagged FROM a_wallet_metrics`,
  );
  console.log(`Analytics ready, version ${engine.published().version} (tables a_positions, a_wallet_metrics, a_board and the other a_* tables in the same database):`);
  console.log(`  ${JSON.stringify(meta)}`);
  const top = await queryRows<{ rank: number; address: string; composite_score: number }>(
    conn,
    `SELECT b.rank, w.address, round(b.composite_score, 1) AS composite_score FROM a_board b JOIN wallets w USING (wallet_id) WHERE b.preset = 'sharp-forecasters' ORDER BY b.rank LIMIT 3`,
  );
  console.log(`  sharp-forecasters top 3: ${top.map((r) => `#${r.rank} ${r.address} (${r.composite_score})`).join(', ')}`);
}

if (role === 'worker') await runWorker();
else if (!builds || env.LIVE_TAIL === 'on') {
  const serves = role !== 'builder';
  const servicePath = join(root, 'service.sqlite');
  // the service state: PostgreSQL with DATABASE_URL (shared by replicas), else the venue's service.sqlite; one
  // connection (SQLite) or pool (PostgreSQL) for every store of the process
  const serviceDb = await openServiceDb(env.DATABASE_URL ?? servicePath);
  const accounts = await AccountStore.open(serviceDb);
  const snapshots = await SnapshotStore.open(serviceDb);
  const resolutionFeed = await ResolutionFeed.open(serviceDb);
  let rates: RateStore;
  if (env.REDIS_URL) {
    const { Redis } = await import('ioredis');
    // under the deployment's prefix: several deployments (or test runs) can share one Redis
    rates = new RedisRateStore(new Redis(env.REDIS_URL, { maxRetriesPerRequest: 2 }), `${env.WEBHOOK_QUEUE_PREFIX}:rl:`);
  } else rates = await SqlRateStore.open(serviceDb);
  // the live fill stream between processes: the producer publishes, every process serving the stream subscribes
  const bus = await fillBusFromEnv();
  // The demo venue keeps its own clock: it resumes at the last stored fill and advances with the tail. "As of now"
  // analytics and the daily snapshots read that clock (an API replica: its published state's as-of); sessions,
  // nonces and rate windows read the wall clock.
  let tail: LiveTail | undefined;
  let published: PublishedAnalytics | undefined;
  let venueNow: () => Date;
  const origin = env.PUBLIC_ORIGIN ?? `http://${env.HOST}:${env.PORT}`;
  const tidKeyPath = join(root, 'tid.key');
  if (!env.TID_KEY && !existsSync(tidKeyPath)) writeFileSync(tidKeyPath, randomBytes(32).toString('hex'), { mode: 0o600 });
  const tidKey = env.TID_KEY ?? readFileSync(tidKeyPath, 'utf8').trim();
  // one tid index for the process: the public routes, the agent gateway and MCP resolve the same opaque ids
  const tids = new TidIndex(tidKey);
  // The HTTP API reads on a pool of its own connections, each request in one read snapshot: it sees one committed
  // analytics version whatever the builder commits meanwhile (the live tail writes on the main connection). An API
  // replica reads the builder's published files the same way, switching to each new one as it appears.
  let apiDb: ReturnType<typeof snapshotRunner>;
  let rankers: RankerCache;
  if (role === 'api') {
    console.log(`Waiting for the builder's analytics in ${publishDir} ...`);
    const p = await PublishedAnalytics.open(publishDir, { waitMs: 60 * 60_000 });
    published = p;
    apiDb = p.db;
    venueNow = () => new Date(p.published().as_of);
    // custom rankings in memory: the rank base of the current file, reloaded at each switch
    rankers = new RankerCache((fn) => p.withInstance(fn), 2, log);
    p.on('switched', (ptr, ms) => {
      log(`analytics v${ptr.version} as of ${ptr.as_of} served: opened in ${ms.toFixed(0)} ms, ${Date.now() - Date.parse(ptr.published_at)} ms after its publication`);
      // the new file's preset heads are loaded first: its plain presets read SQL until then, never the old file's heads
      rankers.announce(ptr.version);
      void rankers.refresh();
    });
    p.on('error', (e) => console.error(`  published analytics: ${e.message} (serving v${p.db.version()})`));
    p.start(1000);
    console.log(`Analytics: published v${p.published().version} as of ${p.published().as_of}`);
  } else {
    venueNow = () => (tail ? new Date(tail.stats().venueTime) : new Date(storedClockMs));
    clock = venueNow;
    apiDb = snapshotRunner(instance, { size: 8 });
    // the refresh's JavaScript steps let a request mid-way go first (each of its statements would wait for a step)
    engine.setReaders(apiDb);
    // custom rankings in memory: the rank base of the latest versions, reloaded after each publish
    rankers = new RankerCache(instance, 2, log);
  }
  if (serves) await rankers.refresh();
  const gateway =
    env.X402_MODE === 'off' || !serves
      ? undefined
      : await startGateway({
          mode: env.X402_MODE,
          facilitatorUrl: env.X402_FACILITATOR_URL,
          network: env.X402_NETWORK,
          payTo: env.X402_PAY_TO,
          asset: env.X402_ASSET,
          serviceDb,
          db: apiDb,
          rankers,
          now: venueNow,
          origin: () => new URL(origin).origin,
          snapshots,
          tidKey,
          tids,
          log: (m) => console.log(`  ${m}`),
        });
  const originUrl = new URL(origin);
  const mcp = mcpRouter({
    db: apiDb,
    rankers,
    now: venueNow,
    tids,
    prices: TOOL_PRICES,
    accounts,
    payments: gateway?.gate.forTools(),
    allowedHosts: [...new Set([originUrl.hostname, 'localhost', '127.0.0.1', '[::1]'])],
    resourceUrl: (k) => `${originUrl.origin}/mcp#tool=${k}`,
  });
  const webhookStore = await WebhookStore.open(serviceDb);
  const { webhooks, queueRedis } = await openWebhooks(webhookStore, accounts);
  if (devTargets) console.log(`  webhooks: ${devTargets.describe}`);
  // settled outbox rows are kept 30 days (monthly usage is counted separately and stays); pruned in small batches
  // with the event loop free in between, so deliveries and requests go on
  const pruneOutbox = setInterval(async () => {
    const before = Date.now() - 30 * 24 * 3600_000;
    try {
      while ((await webhookStore.prune(before, 2000)) === 2000) await new Promise((r) => setImmediate(r));
    } catch (e) {
      console.error(`  webhooks: outbox prune failed: ${(e as Error).message}`);
    }
  }, 3600_000);
  pruneOutbox.unref();
  // deliveries run where the events are produced (and in workers): an API replica only takes subscriptions
  if (builds) await webhooks.start();
  const pushStore = await PushStore.open(serviceDb);
  // live push notifications share the plan's monthly webhook event quota (the webhook usage counter)
  const push = await PushService.open({ store: pushStore, subject: env.VAPID_SUBJECT, planOf: (u) => accounts.planOf(u), usage: webhookStore, log: (m) => console.log(`  ${m}`) });
  // the event producers' lookups (builder): market and wallet labels, smart-money tags
  const venueLookup = new VenueLookup(apiDb);
  if (builds) await venueLookup.load();
  // another replica's new subscriptions reach this producer's match indexes within 5 s
  const reloadSubs = builds
    ? setInterval(() => void Promise.all([webhooks.reload(), push.reload()]).catch((e: Error) => console.error(`  subscriptions reload failed: ${e.message}`)), 5000)
    : undefined;
  reloadSubs?.unref();
  // the web app at / (npm install built it; a source newer than the build, or no build, is built now)
  if (serves && uiStale()) {
    await buildUi().then(
      (s) => console.log(`  web app built in ${s.toFixed(1)} s`),
      (e: Error) => console.error(`  web app not built (${e.message.split('\n')[0]}): the API is served without it`),
    );
  }
  let draining = false;
  const analyticsCheck: HealthCheck = {
    name: 'analytics',
    check: async () => {
      if (role === 'api') await apiDb.all(`SELECT version FROM a_meta LIMIT 1`);
      else if (!engine.published()) throw new Error('no analytics version published yet');
    },
  };
  const health = { role, checks: [analyticsCheck], draining: () => draining, version: () => (published ? published.db.version() : engine.published()?.version ?? null) };
  // the response caches' shared level: one replica's computation serves the others until it expires
  const sharedCache = serves && env.REDIS_URL ? new RedisSharedCache(new (await import('ioredis')).Redis(env.REDIS_URL, { maxRetriesPerRequest: 1, commandTimeout: 1000 }), `${env.WEBHOOK_QUEUE_PREFIX}:cache:`) : undefined;
  const api = !serves
    ? healthOnlyApp({ ...health, checks: [{ name: 'service_db', check: async () => void (await serviceDb.get('SELECT 1 AS one')) }, analyticsCheck] })
    : createApp({
    health,
    sharedCache,
    webhooks,
    push,
    mounts: [...(gateway?.mounts ?? []), { path: '/mcp', router: mcp }],
    db: apiDb,
    dbScope: apiDb.middleware,
    rankers,
    snapshots,
    accounts,
    rates,
    resolutionFeed,
    venueNow,
    tidKey,
    tids,
    mailer: mailerFromEnv(process.env),
    auth: { origin: new URL(origin).origin, chainIds: env.SIWE_CHAIN_IDS.split(',').map(Number), rpcUrl: env.SIWE_RPC_URL },
    trustProxy: env.TRUST_PROXY,
  });
  // the realtime fill stream (WebSocket at /v1/stream): Bearer key or session cookie; 3 connections on Free, 10 paid
  const stream = new FillStream({
    authenticate: async (req) => {
      const who = await accounts.identify(req.headers.authorization, req.headers.cookie, Date.now());
      return who ? { userId: who.user_id, maxConnections: who.plan === 'free' ? 3 : 10 } : null;
    },
  });
  const server: Server = keepIdleConnections(api.listen(env.PORT, env.HOST, () => {
    if (!serves) return console.log(`Role ${role}: health at ${origin}/healthz and ${origin}/readyz; analytics published to ${publishDir}`);
    console.log(`Web app: ${origin}/   API: ${origin}/v1/openapi.json  (try ${origin}/v1/public/leaderboard)`);
    if (gateway) console.log(`Agent tier (x402): ${origin}/x402/info   MCP (Streamable HTTP): ${origin}/mcp`);
    console.log(`Realtime fills (WebSocket): ${origin.replace(/^http/, 'ws')}/v1/stream`);
    if (gateway?.demoPayer) console.log(`  local chain ${gateway.chain!.rpcUrl}: demo payer ${gateway.demoPayer.address} holds 10 test USDC (private key ${gateway.demoPayer.privateKey})`);
  }));
  if (serves) {
    stream.attach(server);
    bus.subscribe((data, emittedAt) => stream.publish(data, emittedAt));
  }
  // the venue's new rows: the demo's generated tail, or the sync following the real sources
  if (builds && venue.kind === 'demo') tail = await LiveTail.start(conn, venueOpts, { ratePerSecond: env.LIVE_TAIL_RATE, speed: env.LIVE_TAIL_SPEED });
  let syncStatus = 'not following (a stored venue)';
  let following: Promise<void> = Promise.resolve();
  if (sync) {
    sync.on('progress', (p) => {
      if (p.phase === 'follow' && p.head !== undefined && p.next !== undefined) syncStatus = `next block ${p.next}, head ${p.head}, ${Number(p.head - p.next + 1n)} blocks behind the head`;
    });
    sync.on('error', (e) => console.error(`  venue sync: ${e.message} (retrying)`));
    following = sync.follow({ pollMs: env.VENUE_POLL_MS });
  }
  const onFill = (h: (f: TailFill) => void) => {
    tail?.on('fill', h);
    sync?.on('fill', h);
  };
  const onResolution = (h: (r: TailResolution) => void) => {
    tail?.on('resolution', h);
    sync?.on('resolution', h);
  };
  // event producers: every taker fill (trader.fill, and signal.smart_money when it qualifies) and every resolution,
  // in order, into the durable outbox; the worker delivers
  let producing: Promise<void> = Promise.resolve();
  const produce = (f: () => Promise<void>) => {
    producing = producing.then(f).catch((e) => console.error('  webhooks: producer failed:', (e as Error).message));
  };
  onFill((f) =>
    produce(async () => {
      const ev = await fillEvents(venueLookup, f);
      if (!ev) return;
      await publishFillEvents(webhooks, ev);
      await bus.publish(ev.fill, ev.emitted).catch((e: Error) => console.error(`  fill bus: ${e.message}`));
      if (ev.signal) await push.publish('signal.smart_money', ev.signal, ev.emitted); // never rejects; best effort
    }),
  );
  onResolution((r) =>
    produce(async () => {
      // one market.resolved data for both channels
      const data = await resolutionData(venueLookup, r);
      await webhooks.publish('market.resolved', data);
      await push.publish('market.resolved', data); // never rejects; best effort
    }),
  );
  if (builds) console.log(`Webhook deliveries: ${queueRedis ? 'Redis queue (BullMQ), a worker in this process' : 'outbox worker (the service database)'}`);
  if (!builds) console.log(`Role ${role}; Ctrl-C to stop.`);
  else if (tail) console.log(`Live tail: ~${env.LIVE_TAIL_RATE} taker fills/s (speed x${env.LIVE_TAIL_SPEED}); Ctrl-C to stop.`);
  else console.log(`Venue: ${root} (${sync ? 'following its sources' : 'as stored'}); Ctrl-C to stop.`);
  const schedule = builds ? startSnapshotSchedule({ instance, store: snapshots, now: venueNow, log: (m) => console.log(`  ${m}`) }) : undefined;
  // the builder publishes analytics states for API replicas (role all: only when PUBLISH_DIR is set)
  let publishing: Promise<PublishedPointer | void> = Promise.resolve();
  let lastPublish = 0;
  const publishes = role === 'builder' || (role === 'all' && env.PUBLISH_DIR !== undefined);
  const publishNow = () => {
    lastPublish = Date.now();
    publishing = publishing
      .then(() => publishAnalytics(instance, publishDir))
      .then((p) => log(`published analytics v${p.version} as of ${p.as_of} to ${publishDir} (${(p.bytes / 2 ** 20).toFixed(0)} MB in ${p.copy_seconds.toFixed(1)} s)`))
      .catch((e: Error) => console.error(`  publish failed: ${e.message}`));
  };
  if (publishes) {
    publishNow();
    await publishing;
  }
  // the analytics follow the venue: each refresh commits a version; signals then act on the current tags
  // a request may read a version before it is announced (DuckDB shows a commit before the committer's call returns):
  // its custom rankings use the engine it is committed with
  if (builds) engine.on('committing', (version, r) => rankers.stage(version, r.ranker ?? null));
  if (builds) engine.on('published', (p, r) => {
    if (publishes && Date.now() - lastPublish >= env.PUBLISH_EVERY_MS) publishNow();
    void venueLookup.reloadTags().catch(() => {});
    // the engine the builder scored the boards with serves this version's custom rankings, its preset heads the plain
    // preset pages
    void rankers.published(p.version, r);
    if ('new_legs' in r) {
      // the slowest steps, so an operator sees where a refresh spends its time
      const steps = Object.entries(r.seconds).sort((x, y) => y[1] - x[1]).slice(0, 4).map(([k, v]) => `${k} ${v.toFixed(1)}`).join(', ');
      console.log(`  analytics v${p.version} as of ${p.asOf.toISOString()}: ${r.new_legs} new legs, ${r.positions} positions, ${r.wallets} wallets in ${r.total_seconds.toFixed(1)} s (${steps})`);
    }
  });
  // the checkpoint after a publish (the version is served meanwhile): an operator sees what it costs
  if (builds) engine.on('checkpointed', (p, seconds) => {
    if (seconds >= 1) console.log(`  analytics v${p.version}: log checkpointed in ${seconds.toFixed(1)} s`);
  });
  if (builds) engine.start(env.ANALYTICS_REFRESH_MS);
  const feedSync = builds ? startResolutionFeedSync({ db: apiDb, feed: resolutionFeed, log: (m) => console.log(`  ${m}`) }) : undefined;
  const purge = setInterval(() => void accounts.purgeExpired(Date.now()).catch((e: Error) => console.error(`  accounts: purge failed: ${e.message}`)), 3600_000);
  purge.unref();
  // paid plans for the webhook and push quotas: a plan set elsewhere (npm run admin, another replica) counts within 10 s
  const plansReload = setInterval(() => void accounts.refreshPlans().catch((e: Error) => console.error(`  accounts: plan reload failed: ${e.message}`)), 10_000);
  plansReload.unref();
  const timer = setInterval(() => {
    if (tail) {
      const s = tail.stats();
      console.log(`  tail: ${s.fills} fills (${s.fillsPerSecond.toFixed(1)}/s), ${s.resolutions} resolutions, venue time ${s.venueTime}`);
    } else if (sync) console.log(`  venue sync: ${syncStatus}, venue time ${venueNow().toISOString()}`);
  }, 10_000);
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    // drain: readiness fails first, so the balancer stops sending; then no new connections, and the requests in
    // flight finish (at most 10 s)
    draining = true;
    if (env.DRAIN_MS) {
      log(`draining for ${env.DRAIN_MS} ms`);
      await new Promise((r) => setTimeout(r, env.DRAIN_MS));
    }
    clearInterval(timer);
    clearInterval(purge);
    clearInterval(plansReload);
    clearInterval(reloadSubs);
    const closed = new Promise((r) => server.close(r));
    server.closeIdleConnections();
    await Promise.race([closed, new Promise((r) => setTimeout(r, 10_000))]);
    server.closeAllConnections();
    // a snapshot in progress may take a minute: give the jobs a few seconds, then go (stores are transactional)
    await Promise.race([Promise.all([schedule?.stop(), feedSync?.stop()]), new Promise((r) => setTimeout(r, 5000))]);
    await tail?.stop();
    await sync?.stop();
    await following;
    await sync?.close();
    // a refresh in progress is rolled back by the close (the next start resumes from the last committed version)
    if (builds) await Promise.race([engine.stop(), new Promise((r) => setTimeout(r, 5000))]);
    await producing;
    await publishing;
    await bus.close();
    await published?.close();
    clearInterval(pruneOutbox);
    await webhooks.stop();
    queueRedis?.disconnect();
    await stream.stop();
    // live pushes in flight get a few seconds (they are best effort)
    await Promise.race([push.drain(), new Promise((r) => setTimeout(r, 3000))]);
    await webhookStore.close();
    await pushStore.close();
    await gateway?.stop();
    await snapshots.close();
    await resolutionFeed.close();
    await rates.close();
    await accounts.close();
    await serviceDb.close();
    if (builds) {
      conn.closeSync();
      instance.closeSync();
    }
    process.exit(0);
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
} else {
  await engine.stop();
  await sync?.close();
  conn.closeSync();
  instance.closeSync();
}

/**
 * The webhook service on the store: with REDIS_URL, deliveries go through the Redis queue (BullMQ; more workers can
 * join with `npm run webhooks:worker` or `--role worker`), else the outbox worker.
 */
async function openWebhooks(store: WebhookStore, accounts: AccountStore): Promise<{ webhooks: WebhookService; queueRedis?: import('ioredis').Redis }> {
  let queueRedis: import('ioredis').Redis | undefined;
  if (env.REDIS_URL) {
    const { Redis } = await import('ioredis');
    // fail fast while Redis is down (requests answer 503, rows wait in the outbox); blocking work gets duplicates
    queueRedis = new Redis(env.REDIS_URL, { enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: 5000 });
    const r = queueRedis;
    await Promise.race([new Promise((ok) => r.once('ready', ok)), new Promise((ok) => setTimeout(ok, 3000))]);
  }
  const webhooks = await WebhookService.open({
    store,
    planOf: (u) => accounts.planOf(u),
    log,
    ...(queueRedis ? { redis: { connection: queueRedis, prefix: env.WEBHOOK_QUEUE_PREFIX } } : {}),
    ...(devTargets ? { allowlist: devTargets.allowlist, ca: devTargets.ca } : {}),
  });
  return { webhooks, queueRedis };
}

/** The fill bus: Redis pub/sub with REDIS_URL (replicas share it), else in-process. */
async function fillBusFromEnv(): Promise<FillBus> {
  if (!env.REDIS_URL) return new LocalFillBus();
  const { Redis } = await import('ioredis');
  const bus = new RedisFillBus(new Redis(env.REDIS_URL, { maxRetriesPerRequest: 2 }), new Redis(env.REDIS_URL), env.WEBHOOK_QUEUE_PREFIX, (e) => console.error(`  fill bus: ${e.message}`));
  return bus;
}

/**
 * Role worker: webhook deliveries from the service database's outbox (or, with REDIS_URL, the relay and the queue's
 * worker), health on PORT; nothing else.
 */
async function runWorker(): Promise<void> {
  const serviceDb = await openServiceDb(env.DATABASE_URL ?? join(root, 'service.sqlite'));
  const accounts = await AccountStore.open(serviceDb);
  const store = await WebhookStore.open(serviceDb);
  const { webhooks, queueRedis } = await openWebhooks(store, accounts);
  await webhooks.start();
  const plansReload = setInterval(() => void accounts.refreshPlans().catch(() => {}), 10_000);
  let draining = false;
  const server = keepIdleConnections(
    healthOnlyApp({ role, checks: [{ name: 'service_db', check: async () => void (await serviceDb.get('SELECT 1 AS one')) }], draining: () => draining }).listen(env.PORT, env.HOST, () =>
      console.log(`Role worker: delivering webhooks (${queueRedis ? 'Redis queue' : 'outbox'}); health at http://${env.HOST}:${env.PORT}/healthz`),
    ),
  );
  const stop = async () => {
    draining = true;
    clearInterval(plansReload);
    server.close();
    await webhooks.stop();
    queueRedis?.disconnect();
    await store.close();
    await accounts.close();
    await serviceDb.close();
    process.exit(0);
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
