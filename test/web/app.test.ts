/**
 * The web app in a real browser (Debian's chromium driven by playwright-core) against the whole REST app on loopback:
 * a visitor's leaderboard, sign-in by magic link, a preset's gates funnel, a trader's reliability diagram checked
 * against /v1/trader/{proxy}/calibration, an API error shown in the service's words, axe-core on each page, and a
 * screenshot of each page (var/screenshots, looked at).
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { wrapFetchWithPayment } from 'x402-fetch';
import { fullBuild } from '../../core/analytics/build.ts';
import { PaymentLedger } from '../../data/payment-ledger.ts';
import { duckRunner } from '../../data/runner.ts';
import { SnapshotStore } from '../../data/snapshot-store.ts';
import { openServiceDb, type SqlDb } from '../../data/sql/db.ts';
import { gatewayRouters } from '../../gateway/app.ts';
import { LocalFacilitator } from '../../gateway/facilitator.ts';
import { startLocalChain, type LocalChain } from '../../gateway/local-chain/chain.ts';
import { PaymentGate } from '../../gateway/payment/gate.ts';
import { NETWORKS, usdToAtomic, AGENT_ROUTES } from '../../gateway/payment/pricing.ts';
import { buildUi, uiStale } from '../../web-api/ui-build.ts';
import { startApp, type TestApp } from '../helpers/app.ts';
import { startHttpsReceiver, type HttpsReceiver } from '../helpers/https-receiver.ts';
import { SIGNATURE_HEADER, verifySignature } from '../../jobs/webhooks/signing.ts';
import { makeVenue, type TestVenue } from '../helpers/venue.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const AS_OF = new Date('2026-10-31T23:59:59Z');
const SHOTS = join('var', 'screenshots');
const axeSource = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

let v: TestVenue;
let app: TestApp;
let browser: Browser;
let receiver: HttpsReceiver;
// the agent tier on a local chain, so the builder's "agent POST" is paid by the official x402 client
let chain: LocalChain;
let payDir: string;
let ledger: PaymentLedger;
let snapshots: SnapshotStore;
let payDb: SqlDb;
const payTo = privateKeyToAccount(generatePrivateKey()).address;
const timings: Record<string, number> = {};

beforeAll(async () => {
  if (uiStale()) await buildUi();
  [v, chain] = await Promise.all([makeVenue({ wallets: 3000, days: 30, seed: 3 }), startLocalChain()]);
  const db = duckRunner(v.conn);
  await fullBuild(db, AS_OF);
  // a webhook receiver of the person's own, on loopback HTTPS (allowed past the SSRF guard for this test)
  receiver = await startHttpsReceiver();
  payDir = mkdtempSync(join(tmpdir(), 'web-pay-'));
  // the agent tier's stores on one connection to their own file (the app's stores share the app's)
  payDb = await openServiceDb(join(payDir, 'gateway.sqlite'));
  ledger = await PaymentLedger.open(payDb);
  snapshots = await SnapshotStore.open(payDb);
  const facilitator = new LocalFacilitator({ rpcUrl: chain.rpcUrl, network: chain.network, privateKey: chain.facilitatorPrivateKey });
  const gate = new PaymentGate({ facilitator, ledger, terms: { network: { ...NETWORKS['base-sepolia']!, usdc: chain.usdc }, payTo } });
  const { agent, info } = gatewayRouters({ db, gate, now: () => AS_OF, origin: () => app.origin, snapshots, tidKey: 'web-test-tid-key-0123456789abcdef', facilitator: `local (${chain.rpcUrl})` });
  app = await startApp(db, {
    venueNow: () => AS_OF,
    webhookTargets: { allowlist: [`127.0.0.1:${receiver.port}`], ca: receiver.ca },
    mounts: [
      { path: '/v1/agent', router: agent },
      { path: '/x402', router: info },
    ],
  });
  if (!existsSync(CHROMIUM)) throw new Error(`no chromium at ${CHROMIUM}: apt-get install chromium (or set CHROMIUM_PATH)`);
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  mkdirSync(SHOTS, { recursive: true });
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
  await receiver?.close();
  await payDb?.close();
  if (payDir) rmSync(payDir, { recursive: true, force: true });
  await chain?.stop();
  v?.conn.closeSync();
  if (Object.keys(timings).length) console.log(`web app timings (ms): ${JSON.stringify(timings)}`);
});

/** axe-core on the page: no serious or critical violation. */
async function axe(page: Page, name: string): Promise<void> {
  await page.addScriptTag({ path: axeSource });
  const r = (await page.evaluate(async () => {
    const result = await (globalThis as unknown as { axe: { run: () => Promise<{ violations: { id: string; impact: string; nodes: unknown[] }[] }> } }).axe.run();
    return result.violations.map((x) => ({ id: x.id, impact: x.impact, nodes: x.nodes.length }));
  })) as { id: string; impact: string; nodes: number }[];
  const bad = r.filter((x) => x.impact === 'serious' || x.impact === 'critical');
  expect(bad, `${name}: ${JSON.stringify(bad)}`).toEqual([]);
}

/** A page signed in by magic link as `email` (the development link the sign-in page shows). */
async function signedIn(email: string, page?: Page): Promise<Page> {
  page ??= await browser.newPage();
  await page.goto(`${app.base}/signin`);
  await page.fill('#email', email);
  await page.click('button[type=submit]');
  await page.click('[data-testid=dev-link]');
  await page.waitForSelector('header button:has-text("Sign out")');
  return page;
}

describe('the web app', () => {
  it('a visitor sees the public leaderboard as the API serves it, unmeasured calibration shown as such', async () => {
    const page = await browser.newPage();
    const t0 = Date.now();
    await page.goto(`${app.base}/`);
    await page.waitForSelector('[data-testid=leaderboard] tbody tr');
    timings.leaderboard_first_paint = Date.now() - t0;
    const api = (await (await fetch(`${app.base}/v1/public/leaderboard?limit=25`)).json()) as { rows: { rank: number; wallet_label: string; tid: string; calibration_excess_z: number | null }[] };
    const rows = await page.$$eval('[data-testid=leaderboard] tbody tr', (trs) => trs.map((tr) => ({ tid: tr.getAttribute('data-tid'), cells: [...tr.querySelectorAll('td')].map((td) => td.textContent ?? '') })));
    expect(rows.map((r) => r.tid)).toEqual(api.rows.map((r) => r.tid));
    rows.forEach((r, i) => {
      expect(r.cells[0]).toBe(String(api.rows[i]!.rank));
      expect(r.cells[1]).toBe(api.rows[i]!.wallet_label);
      if (api.rows[i]!.calibration_excess_z === null) expect(r.cells[8]).toBe('unmeasured');
    });
    await page.screenshot({ path: join(SHOTS, 'leaderboard.png'), fullPage: true });
    await axe(page, 'leaderboard');
    // a trader's public teaser, from the board's link
    await page.click('[data-testid=leaderboard] tbody tr:first-child a');
    await page.waitForSelector('.cards');
    expect(await page.textContent('main')).toContain('Sign in to see the calibration record');
    await page.screenshot({ path: join(SHOTS, 'trader-teaser.png'), fullPage: true });
    await axe(page, 'trader teaser');
    // every preset with its gates funnel, without signing in (the public boards)
    await page.goto(`${app.base}/presets`);
    await page.waitForSelector('main ul a');
    const slugs = await page.$$eval('main ul a', (as) => as.map((a) => a.getAttribute('href')));
    expect(slugs.length).toBe(10);
    await page.goto(`${app.base}${slugs[1]}`);
    await page.waitForSelector('[data-testid=public-board] tbody tr');
    const board = (await (await fetch(`${app.base}/v1/public/boards/${slugs[1]!.split('/').pop()}?limit=25`)).json()) as { rows: { tid: string }[]; explain: { gates: { label: string; remaining: number }[] } };
    const funnel = await page.$$eval('[data-testid=funnel] li', (lis) => lis.map((li) => [...li.querySelectorAll('span')].map((x) => x.textContent ?? '')));
    expect(funnel.slice(1).map((f) => f[0])).toEqual(board.explain.gates.map((g) => g.label));
    expect(funnel.slice(1).map((f) => Number(f[2]!.replace(/,/g, '')))).toEqual(board.explain.gates.map((g) => g.remaining));
    expect(await page.$$eval('[data-testid=public-board] tbody tr a', (as) => as.map((a) => a.getAttribute('href')))).toEqual(board.rows.map((r) => `/trader/${r.tid}`));
    await axe(page, 'public preset');
    await page.close();
  });

  it('signs in by magic link, opens a preset with its gates funnel, and a trader whose plotted bins are the API calibration', async () => {
    const page = await browser.newPage();
    await page.goto(`${app.base}/signin`);
    await axe(page, 'sign in');
    await page.fill('#email', 'browser@example.com');
    await page.click('button[type=submit]');
    await page.waitForSelector('[data-testid=dev-link]');
    await page.click('[data-testid=dev-link]');
    await page.waitForSelector('header button:has-text("Sign out")');
    expect(await page.textContent('header')).toContain('browser@example.com');

    const t0 = Date.now();
    await page.goto(`${app.base}/presets/sharp-forecasters`);
    await page.waitForSelector('[data-testid=funnel] li');
    timings.preset_board = Date.now() - t0;
    const ranking = (await page.evaluate(async () => (await fetch('/v1/rankings/preset/sharp-forecasters?limit=25')).json())) as {
      rows: { proxy_wallet: string }[];
      explain: { cohort_size: number; gates: { label: string; remaining: number }[] };
    };
    const funnel = await page.$$eval('[data-testid=funnel] li', (lis) => lis.map((li) => [...li.querySelectorAll('span')].map((s) => s.textContent ?? '')));
    expect(funnel.length).toBe(ranking.explain.gates.length + 1);
    expect(funnel.slice(1).map((f) => f[0])).toEqual(ranking.explain.gates.map((g) => g.label));
    expect(funnel.slice(1).map((f) => Number(f[2]!.replace(/,/g, '')))).toEqual(ranking.explain.gates.map((g) => g.remaining));
    await page.screenshot({ path: join(SHOTS, 'preset.png'), fullPage: true });
    await axe(page, 'preset');

    // the first trader of the board: the reliability diagram's points are the API's bins
    const proxy = ranking.rows[0]!.proxy_wallet;
    await page.click(`a[href="/trader/${proxy}"]`);
    await page.waitForSelector('[data-testid=reliability] circle.bin');
    const cal = (await page.evaluate(async (p) => (await fetch(`/v1/trader/${p}/calibration`)).json(), proxy)) as {
      bins: { bin_idx: number; predicted_mean: number | null; observed_rate: number | null; n: number }[];
    };
    const plotted = await page.$$eval('[data-testid=reliability] circle.bin', (cs) =>
      cs.map((c) => ({ bin: Number(c.getAttribute('data-bin')), predicted: Number(c.getAttribute('data-predicted')), observed: Number(c.getAttribute('data-observed')), n: Number(c.getAttribute('data-n')) })),
    );
    const expected = cal.bins.filter((b) => b.n > 0).map((b) => ({ bin: b.bin_idx, predicted: b.predicted_mean, observed: b.observed_rate, n: b.n }));
    expect(plotted).toEqual(expected);
    expect(plotted.length).toBeGreaterThan(3);
    // each point sits where its numbers say: x from the price paid, y from the rate that came true
    const geometry = await page.$$eval('[data-testid=reliability] circle.bin', (cs) => cs.map((c) => [Number(c.getAttribute('cx')), Number(c.getAttribute('cy'))]));
    geometry.forEach(([cx, cy], i) => {
      // a 360-unit square with 46 of margin: 268 units from 0% to 100%
      expect(cx).toBeCloseTo(46 + plotted[i]!.predicted * 268, 6);
      expect(cy).toBeCloseTo(360 - 46 - plotted[i]!.observed * 268, 6);
    });
    await page.waitForSelector('main table');
    // P&L over time: the chart holds the API's series
    const perf = (await page.evaluate(async (p) => (await fetch(`/v1/trader/${p}/performance`)).json(), proxy)) as { daily: { cumulative_pnl: number }[] };
    const chart = await page.waitForSelector('[data-testid=pnl-chart] canvas').then(() => page.$('[data-testid=pnl-chart]'));
    expect(Number(await chart!.getAttribute('data-points'))).toBe(perf.daily.length);
    expect(Number(await chart!.getAttribute('data-last'))).toBeCloseTo(perf.daily[perf.daily.length - 1]!.cumulative_pnl, 6);
    // copy-fitness is paid: a free plan sees what the plan unlocks, in the service's words, not a failure
    expect(await (await page.waitForSelector('[data-testid=locked]')).textContent()).toMatch(/paid plan: .*plan/i);
    await page.screenshot({ path: join(SHOTS, 'trader.png'), fullPage: true });
    await axe(page, 'trader');
    await page.close();
  });

  it('signs in with a wallet: an injected EIP-1193 provider backed by a viem account signs the EIP-4361 message', async () => {
    const account = privateKeyToAccount(generatePrivateKey());
    const page = await browser.newPage();
    const signed: string[] = [];
    await page.exposeFunction('__walletSign', async (hex: string) => {
      signed.push(hex);
      return account.signMessage({ message: { raw: hex as `0x${string}` } });
    });
    // the provider a wallet extension injects, answering the two calls a sign-in makes
    await page.addInitScript(`window.ethereum = { request: async ({ method, params }) => {
      if (method === 'eth_requestAccounts' || method === 'eth_accounts') return ['${account.address.toLowerCase()}'];
      if (method === 'eth_chainId') return '0x89';
      if (method === 'personal_sign') return window.__walletSign(params[0]);
      throw new Error('unsupported ' + method);
    } };`);
    await page.goto(`${app.base}/signin`);
    await page.click('[data-testid=wallet-signin]');
    await page.waitForSelector('header button:has-text("Sign out")');
    expect(signed.length).toBe(1);
    const message = Buffer.from(signed[0]!.slice(2), 'hex').toString('utf8');
    expect(message).toContain(`${new URL(app.base).host} wants you to sign in with your Ethereum account:\n${account.address}`);
    expect(message).toContain('Chain ID: 137');
    // the session is the wallet's: the account page works
    await page.goto(`${app.base}/account`);
    await page.waitForSelector('[data-testid=plan]');
    await page.close();
  });

  it('the account: mints a key whose secret shows once, lists it by prefix, revokes it (then the API refuses it); signs out everywhere', async () => {
    const page = await signedIn('keys@example.com');
    await page.goto(`${app.base}/account`);
    await page.waitForSelector('[data-testid=plan]');
    await axe(page, 'account');
    await page.fill('#key-label', 'laptop');
    await page.click('form.inline button[type=submit]');
    const secret = (await (await page.waitForSelector('[data-testid=secret]')).textContent())!.trim();
    expect(secret.length).toBeGreaterThan(20);
    // the key works against the API
    expect((await fetch(`${app.base}/v1/account/plan`, { headers: { authorization: `Bearer ${secret}` } })).status).toBe(200);
    await page.screenshot({ path: join(SHOTS, 'account.png'), fullPage: true });
    // shown once: a fresh load lists the key by its prefix only
    await page.reload();
    await page.waitForSelector('[data-testid=keys] tbody tr');
    expect(await page.textContent('main')).not.toContain(secret);
    // usage against the plan: the one request made with the key counts (reading the usage does not)
    const usage = (await page.evaluate(async () => (await fetch('/v1/account/usage')).json())) as { api_requests: { used: number; limit: number } };
    expect(usage.api_requests.used).toBe(1);
    expect(await page.textContent('[data-testid=usage]')).toContain(`${usage.api_requests.used} of ${usage.api_requests.limit.toLocaleString('en-US')}`);
    const row = await page.$('[data-testid=keys] tbody tr:has-text("laptop")');
    expect(secret.startsWith(((await row!.$eval('code', (c) => c.textContent ?? '')) as string).replace('…', ''))).toBe(true);
    await page.click('button[aria-label="Revoke laptop"]');
    await page.waitForSelector('[data-testid=keys] tbody tr:has-text("revoked")');
    expect((await fetch(`${app.base}/v1/account/plan`, { headers: { authorization: `Bearer ${secret}` } })).status).toBe(401);
    // sign out everywhere: a second browser signed in as the same person is signed out too
    const other = await browser.newContext();
    const second = await signedIn('keys@example.com', await other.newPage());
    await page.click('button:has-text("Sign out everywhere")');
    await page.waitForSelector('header a:has-text("Sign in")');
    await second.reload();
    await second.waitForSelector('header a:has-text("Sign in")');
    expect(await second.evaluate(async () => (await fetch('/v1/auth/me')).json())).toEqual({ user: null });
    await other.close();
    await page.close();
  });

  it('the ranking builder: edits update the funnel and rows; the copied curl (with a key) and agent POST (paid by x402-fetch) return the same ranking', async () => {
    const page = await signedIn('builder@example.com');
    await page.goto(`${app.base}/builder`);
    await page.waitForSelector('[data-testid=builder-rows] tbody tr');
    const before = await page.$$eval('[data-testid=builder-rows] tbody tr', (trs) => trs.map((t) => t.getAttribute('data-proxy')));
    // weigh 24 h alpha instead of calibration, and require 30 resolved markets
    await page.fill('input[name=w-calibration]', '0');
    await page.fill('input[name=w-alpha_24h]', '2');
    await page.click('button:has-text("Add a gate")');
    // (browser-side expressions as strings: this file is type-checked without the DOM)
    await page.waitForFunction(`(() => { const rows = [...document.querySelectorAll('[data-testid=builder-rows] tbody tr')].map((t) => t.getAttribute('data-proxy')); return rows.length > 0 && rows.join() !== ${JSON.stringify(before.join())}; })()`);
    await page.waitForFunction(`document.querySelectorAll('[data-testid=funnel] li').length >= 4`);
    const shown = await page.$$eval('[data-testid=builder-rows] tbody tr', (trs) => trs.map((t) => t.getAttribute('data-proxy')));
    const gates = await page.$$eval('[data-testid=funnel] li span:first-child', (ss) => ss.map((x) => x.textContent));
    expect(gates.join('|')).toMatch(/trade_count.*n_resolved_markets/);
    const curl = (await page.textContent('[data-testid=copy-curl]'))!;
    const url = curl.match(/'(http[^']+)'/)![1]!;
    expect(url).toContain('weights=alpha_24h%3A2');
    const { key } = await app.keyFor('free');
    const r = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
    expect(r.status).toBe(200);
    const body = (await r.json()) as { rows: { proxy_wallet: string }[] };
    expect(body.rows.map((x) => x.proxy_wallet)).toEqual(shown);
    // the agent body and the MCP call are the same config as JSON
    const agent = JSON.parse((await page.textContent('[data-testid=copy-agent]'))!.split('\n\n')[1]!) as { weights: Record<string, number>; gates: unknown[] };
    expect(agent.weights).toEqual({ alpha_24h: 2 });
    expect(agent.gates).toEqual([{ field: 'trade_count', op: 'gte', value: 20 }, { field: 'n_resolved_markets', op: 'gte', value: 30 }]);
    const mcp = JSON.parse((await page.textContent('[data-testid=copy-mcp]'))!) as { params: { arguments: { config: unknown } } };
    expect(mcp.params.arguments.config).toEqual({ cohort: {}, gates: agent.gates, weights: agent.weights, sort_by: 'composite' });
    // the agent POST, as copied, paid by the official x402 client: the same rows, at the route's price
    const copied = (await page.textContent('[data-testid=copy-agent]'))!;
    const [method, agentUrl] = copied.split('\n')[0]!.split(' ');
    const payer = (await chain.newPayer(1_000_000n)).account;
    const payFetch = wrapFetchWithPayment(fetch, payer as never, 100_000n);
    const paidBefore = await chain.balanceOf(payer.address);
    const paid = await payFetch(agentUrl!, { method, headers: { 'content-type': 'application/json' }, body: copied.split('\n\n')[1]! });
    expect(paid.status).toBe(200);
    expect(paid.headers.get('x-payment-response')).toBeTruthy();
    const paidRows = ((await paid.json()) as { rows: { proxy_wallet: string }[] }).rows.map((x) => x.proxy_wallet);
    expect(paidRows).toEqual(shown.slice(0, paidRows.length));
    expect(paidRows.length).toBe(Math.min(10, shown.length));
    const price = BigInt(usdToAtomic(AGENT_ROUTES.find((x) => x.id === 'rankings.custom')!.price_usd));
    expect(paidBefore - (await chain.balanceOf(payer.address))).toBe(price);
    // an invalid edit shows the service's message
    await page.fill('input[name=w-alpha_24h]', '0');
    expect(await (await page.waitForSelector('[data-testid=builder-error]')).textContent()).toMatch(/weight/);
    await page.screenshot({ path: join(SHOTS, 'builder.png'), fullPage: true });
    await axe(page, 'builder');
    await page.close();
  });

  it('webhooks: creates one (the secret shown once), sends a test the receiver verifies with that secret, reads the log, rotates the secret, deletes it', async () => {
    const email = 'hooks@example.com';
    const page = await signedIn(email);
    // webhooks are a paid feature: this person is on Pro
    await app.accounts.setPlan((await app.accounts.userForEmail(email, Date.now())).user_id, 'pro', Date.now(), 'test');
    await page.goto(`${app.base}/webhooks`);
    await page.waitForSelector('[data-testid=webhooks]');
    await axe(page, 'webhooks');
    await page.fill('input[name=target_url]', receiver.url);
    await page.click('button:has-text("Create webhook")');
    const secret = (await (await page.waitForSelector('[data-testid=webhook-secret] code')).textContent())!.trim();
    expect(secret).toMatch(/^whsec_/);
    await page.waitForSelector(`[data-testid=webhooks] tbody tr:has-text("${receiver.url}")`);
    const before = receiver.received.length;
    await page.click('[data-testid=webhooks] tbody tr button:has-text("Send a test")');
    expect(await (await page.waitForSelector('[data-testid=notice]')).textContent()).toMatch(/Test delivered \(HTTP 200\)/);
    const got = receiver.received.slice(before);
    expect(got.length).toBe(1);
    expect(verifySignature({ header: got[0]!.headers[SIGNATURE_HEADER], rawBody: got[0]!.body, secret })).toMatchObject({ ok: true });
    await page.click('[data-testid=webhooks] tbody tr button:has-text("Deliveries")');
    await page.waitForSelector('[data-testid=deliveries] tbody tr:has-text("service.test")');
    // rotate: a new secret, shown once, signs the next test; during the grace period (a day by default) the old one
    // still verifies it too (two v1= signatures), so a receiver can switch without missing a delivery
    await page.click('[data-testid=webhook-secret] button:has-text("Done")');
    await page.click('[data-testid=webhooks] tbody tr button:has-text("Rotate secret")');
    const rotated = (await (await page.waitForSelector('[data-testid=webhook-secret] code')).textContent())!.trim();
    expect(rotated).toMatch(/^whsec_/);
    expect(rotated).not.toBe(secret);
    const mark = receiver.received.length;
    await page.click('[data-testid=webhooks] tbody tr button:has-text("Send a test")');
    await page.waitForFunction(`/Test delivered/.test(document.querySelector('[data-testid=notice]')?.textContent ?? '')`);
    await expect.poll(() => receiver.received.length).toBe(mark + 1);
    const next = receiver.received[mark]!;
    expect(verifySignature({ header: next.headers[SIGNATURE_HEADER], rawBody: next.body, secret: rotated })).toMatchObject({ ok: true });
    expect(verifySignature({ header: next.headers[SIGNATURE_HEADER], rawBody: next.body, secret })).toMatchObject({ ok: true });
    expect(String(next.headers[SIGNATURE_HEADER]).match(/v1=/g)?.length).toBe(2);
    await page.screenshot({ path: join(SHOTS, 'webhooks.png'), fullPage: true });
    page.once('dialog', (d) => void d.accept());
    await page.click('[data-testid=webhooks] tbody tr button:has-text("Delete")');
    await page.waitForFunction(`document.querySelectorAll('[data-testid=webhooks] tbody tr').length === 0`);
    await page.close();
  });

  it('the account record: name and X username saved, an email change waits for its link, push opt-in registers the service worker, delete ends it all', async () => {
    const context = await browser.newContext({ permissions: ['notifications'] });
    const page = await signedIn('record@example.com', await context.newPage());
    await page.goto(`${app.base}/account`);
    await page.fill('input[name=display_name]', 'Record Keeper');
    await page.fill('input[name=x_username]', 'record_keeper');
    await page.click('button:has-text("Save")');
    expect(await (await page.waitForSelector('[data-testid=profile-msg]')).textContent()).toBe('Saved.');
    const me = (await page.evaluate(async () => (await fetch('/v1/auth/me')).json())) as { user: { display_name: string; x_username: string; email: string } };
    expect(me.user).toMatchObject({ display_name: 'Record Keeper', x_username: 'record_keeper', email: 'record@example.com' });
    await page.fill('input[name=email]', 'new-record@example.com');
    await page.click('button:has-text("Save")');
    await page.waitForSelector('[data-testid=profile-msg]:has-text("new-record@example.com")');
    // the old email stays until the link is opened
    expect(((await page.evaluate(async () => (await fetch('/v1/auth/me')).json())) as { user: { email: string } }).user.email).toBe('record@example.com');
    await page.click('button:has-text("Turn on browser notifications")');
    // the service worker is registered and active; subscribing needs the browser's push service (not reachable
    // offline): either way the page says what happened
    await page.waitForFunction(`navigator.serviceWorker.getRegistrations().then((r) => r.length === 1 && !!r[0].active)`);
    await page.waitForSelector('[data-testid=profile-msg]');
    expect((await page.textContent('[data-testid=profile-msg]'))!.length).toBeGreaterThan(5);
    await page.screenshot({ path: join(SHOTS, 'account-record.png'), fullPage: true });
    const cookies = await context.cookies();
    page.once('dialog', (d) => void d.accept());
    await page.click('button:has-text("Delete my account")');
    await page.waitForSelector('header a:has-text("Sign in")');
    // the old session no longer works
    const sid = cookies.find((c) => c.name.includes('service_sid'))!;
    expect((await fetch(`${app.base}/v1/auth/me`, { headers: { cookie: `${sid.name}=${sid.value}` } }).then((r) => r.json())) as { user: unknown }).toEqual({ user: null });
    await context.close();
  });

  it('search finds a trader and a market; the market page shows its teaser', async () => {
    const page = await browser.newPage();
    await page.goto(`${app.base}/`);
    const board = (await (await fetch(`${app.base}/v1/public/leaderboard?limit=1`)).json()) as { rows: { wallet_label: string }[] };
    const label = board.rows[0]!.wallet_label;
    await page.fill('header input[name=q]', label);
    await page.press('header input[name=q]', 'Enter');
    await page.waitForSelector(`[data-testid=results] a:has-text("${label}")`);
    await axe(page, 'search');
    // a market by words of its title
    const [m] = await v.conn.runAndReadAll(`SELECT condition_id, question FROM markets ORDER BY market_id LIMIT 1`).then((r) => r.getRowObjectsJS() as { condition_id: string; question: string }[]);
    const word = m!.question.split(/\s+/).slice(1, 3).join(' ');
    await page.fill('header input[name=q]', word);
    await page.press('header input[name=q]', 'Enter');
    await page.waitForSelector(`[data-testid=results] a[href="/market/${m!.condition_id}"]`);
    await page.click(`[data-testid=results] a[href="/market/${m!.condition_id}"]`);
    await page.waitForSelector('[data-testid=market]');
    const teaser = (await (await fetch(`${app.base}/v1/public/market/${m!.condition_id}`)).json()) as { market_title: string };
    expect(await page.textContent('h1')).toBe(teaser.market_title);
    await page.screenshot({ path: join(SHOTS, 'market.png'), fullPage: true });
    await axe(page, 'market');
    // an event: its questions as the public event view lists them
    const [ev] = await v.conn.runAndReadAll(`SELECT e.slug FROM events e JOIN markets m USING (event_id) GROUP BY e.slug ORDER BY count(*) DESC, e.slug LIMIT 1`).then((r) => r.getRowObjectsJS() as { slug: string }[]);
    await page.goto(`${app.base}/event/${ev!.slug}`);
    await page.waitForSelector('[data-testid=questions] tbody tr');
    const view = (await (await fetch(`${app.base}/v1/public/event/${ev!.slug}`)).json()) as { questions: { title: string; condition_id: string }[] };
    expect(await page.$$eval('[data-testid=questions] tbody tr td:first-child', (tds) => tds.map((t) => t.textContent))).toEqual(view.questions.map((q) => q.title));
    // each question's consensus is its market teaser's
    const q0 = (await (await fetch(`${app.base}/v1/public/market/${view.questions[0]!.condition_id}`)).json()) as { consensus_latest: { service_consensus_yes: number | null } };
    const c0 = q0.consensus_latest.service_consensus_yes;
    await page.waitForFunction(`document.querySelector('[data-testid=questions] tbody tr td:nth-child(5)').textContent === ${JSON.stringify(c0 === null ? '—' : `${(c0 * 100).toFixed(1)}%`)}`);
    await axe(page, 'event');
    await page.close();
  });

  it('a market page: the consensus beside the mid for anyone; the flow by cohort locked on Free, the API\'s own figures on Pro, per window', async () => {
    const [m] = await v.conn
      .runAndReadAll(`SELECT m.condition_id FROM fills f JOIN markets m USING (market_id) WHERE f.ts > TIMESTAMP '2026-10-30 23:59:59' AND f.ts <= TIMESTAMP '2026-10-31 23:59:59' GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1`)
      .then((r) => r.getRowObjectsJS() as { condition_id: string }[]);
    const cid = m!.condition_id;
    const teaser = (await (await fetch(`${app.base}/v1/public/market/${cid}`)).json()) as { consensus_latest: { service_consensus_yes: number | null; market_mid: number | null; n_positioners: number } };
    const cents = (p: number | null) => (p === null ? '—' : `${(p * 100).toFixed(1)}¢`);
    // a visitor: the consensus, and an invitation to sign in for the flow
    const visitor = await browser.newPage();
    await visitor.goto(`${app.base}/market/${cid}`);
    await visitor.waitForSelector('[data-testid=consensus]');
    const cards = await visitor.$$eval('[data-testid=consensus] .card .value', (xs) => xs.map((x) => x.textContent));
    expect(cards.slice(0, 2)).toEqual([cents(teaser.consensus_latest.service_consensus_yes), cents(teaser.consensus_latest.market_mid)]);
    expect(await visitor.textContent('[data-testid=flow-locked]')).toMatch(/sign in/i);
    await visitor.close();
    // Free: the plan's message
    const page = await signedIn('market-free@example.com');
    await page.goto(`${app.base}/market/${cid}`);
    expect(await (await page.waitForSelector('[data-testid=flow-locked]')).textContent()).toMatch(/paid plan/);
    await page.close();
    // Pro: the table is the API's flow, and the window radio reloads it
    const email = 'market-pro@example.com';
    const pro = await signedIn(email);
    await app.accounts.setPlan((await app.accounts.userForEmail(email, Date.now())).user_id, 'pro', Date.now(), 'test');
    const { key } = await app.keyFor('pro');
    for (const hours of [24, 1]) {
      if (hours === 24) await pro.goto(`${app.base}/market/${cid}`);
      else await pro.check(`input[name=flow-window][value="${hours}"]`);
      const flow = (await (await fetch(`${app.base}/v1/market/${cid}/flow?window_hours=${hours}`, { headers: { authorization: `Bearer ${key}` } })).json()) as {
        cohorts: { cohort: string; n_fills: number; net_yes_shares: number }[];
        smart_money: { cohort: string; n_fills: number; net_yes_shares: number };
        totals: { cohort: string; n_fills: number; net_yes_shares: number };
      };
      // the rows as the page shows them (cohort: fills) once this window's answer is in
      const want = [...flow.cohorts, flow.smart_money, flow.totals].map((c) => `${c.cohort}:${c.n_fills.toLocaleString('en-US')}`).join();
      await pro.waitForFunction(`[...document.querySelectorAll('[data-testid=flow] tbody tr')].map((t) => t.getAttribute('data-cohort') + ':' + t.querySelectorAll('td')[1].textContent).join() === ${JSON.stringify(want)}`);
      const nets = await pro.$$eval('[data-testid=flow] tbody tr', (trs) => trs.map((t) => Number(t.querySelectorAll('td')[4]!.getAttribute('data-net')) + 0));
      expect(nets.slice(0, flow.cohorts.length)).toEqual(flow.cohorts.map((c) => Number(c.net_yes_shares.toFixed(6)) + 0));
      expect(nets.at(-1)).toBe(Number(flow.totals.net_yes_shares.toFixed(6)) + 0);
    }
    await pro.screenshot({ path: join(SHOTS, 'market-flow.png'), fullPage: true });
    await axe(pro, 'market flow');
    await pro.close();
  });

  it('GET /v1/trader/{proxy}/performance: the build\'s daily P&L with its running sum, risk, alpha and tags; auth and errors', async () => {
    const [w] = await v.conn.runAndReadAll(`SELECT w.address, w.wallet_id FROM a_risk r JOIN wallets w USING (wallet_id) WHERE r.sharpe IS NOT NULL ORDER BY r.risk_days DESC, w.wallet_id LIMIT 1`).then((r) => r.getRowObjectsJS() as { address: string; wallet_id: number }[]);
    const { key } = await app.keyFor('free');
    const get = (path: string, auth = true) => fetch(`${app.base}${path}`, { headers: auth ? { authorization: `Bearer ${key}` } : {} });
    const r = await get(`/v1/trader/${w!.address}/performance`);
    expect(r.status).toBe(200);
    const body = (await r.json()) as { daily: { day: string; pnl: number; cumulative_pnl: number }[]; risk: { sharpe: number }; alpha: { alpha_24h_cents: number | null }; smart_money_tags: string[]; as_of: string };
    // the same rows, read here with SQL of their own, and the running sum by hand
    const rows = await v.conn.runAndReadAll(`SELECT epoch_ms(day) AS d, pnl FROM a_risk_daily WHERE wallet_id = ${w!.wallet_id} ORDER BY day`).then((x) => x.getRowObjectsJS() as { d: bigint; pnl: number }[]);
    expect(body.daily.map((d) => Date.parse(d.day))).toEqual(rows.map((x) => Number(x.d)));
    let sum = 0;
    body.daily.forEach((d, i) => {
      sum += rows[i]!.pnl;
      expect(d.pnl).toBe(rows[i]!.pnl);
      expect(d.cumulative_pnl).toBeCloseTo(sum, 9);
    });
    const [risk] = await v.conn.runAndReadAll(`SELECT sharpe FROM a_risk WHERE wallet_id = ${w!.wallet_id}`).then((x) => x.getRowObjectsJS() as { sharpe: number }[]);
    expect(body.risk.sharpe).toBe(risk!.sharpe);
    expect(body.as_of).toBe(AS_OF.toISOString());
    expect((await get(`/v1/trader/${w!.address}/performance`, false)).status).toBe(401);
    expect((await get(`/v1/trader/0x00000000000000000000000000000000000000aa/performance`)).status).toBe(404);
    expect((await get(`/v1/trader/nope/performance`)).status).toBe(400);
    expect((await get(`/v1/trader/${w!.address}/performance?x=1`)).status).toBe(400);
  });

  it('shows an API error in the service\'s words, not a blank page', async () => {
    const page = await browser.newPage();
    await page.goto(`${app.base}/trader/0x00000000000000000000000000000000000000aa`);
    const alert = await page.waitForSelector('[role=alert]');
    const body = (await (await fetch(`${app.base}/v1/public/trader/0x00000000000000000000000000000000000000aa`)).json()) as { message: string };
    expect(await alert.textContent()).toContain(body.message);
    // the API itself still answers JSON for an unknown path
    const r = await fetch(`${app.base}/v1/nope`, { headers: { accept: 'text/html' } });
    expect(r.headers.get('content-type')).toMatch(/json/);
    await page.close();
  });
});
