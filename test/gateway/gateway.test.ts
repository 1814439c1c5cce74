/**
 * The x402 gateway end to end on a real local chain: the official client (x402-fetch) pays each agent route and
 * balances move by exactly the price; then every way a payment can be wrong — replay, concurrent duplicates,
 * expiry, amount, payee, network, balance, signature, a failed settlement, a failing handler — answers 402 (or the
 * handler's error) and moves nothing. Deprecated encodings are accepted with deprecation headers.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createWalletClient, getAddress, http, publicActions, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPaymentHeader, preparePaymentHeader, signPaymentHeader } from 'x402/client';
import type { PaymentRequirements as X402Requirements } from 'x402/types';
import { wrapFetchWithPayment } from 'x402-fetch';
import { fullBuild } from '../../core/analytics/build.ts';
import { PaymentLedger } from '../../data/payment-ledger.ts';
import { duckRunner } from '../../data/runner.ts';
import { SnapshotStore } from '../../data/snapshot-store.ts';
import { openServiceDb, type SqlDb } from '../../data/sql/db.ts';
import { gatewayRouters } from '../../gateway/app.ts';
import { GatewayError } from '../../gateway/errors.ts';
import { LocalFacilitator } from '../../gateway/facilitator.ts';
import { startLocalChain, testUsdcAbi, type LocalChain } from '../../gateway/local-chain/chain.ts';
import { PaymentGate } from '../../gateway/payment/gate.ts';
import { AGENT_ROUTES, NETWORKS, usdToAtomic } from '../../gateway/payment/pricing.ts';
import type { PaymentRequiredBody, PaymentRequirements } from '../../gateway/payment/types.ts';
import { presetTopK, SNAPSHOT_TOP_K } from '../../core/rankings.ts';
import { startApp, type TestApp } from '../helpers/app.ts';
import { makeVenue, type TestVenue } from '../helpers/venue.ts';

let chain: LocalChain;
let v: TestVenue;
let t: TestApp;
let ledger: PaymentLedger;
let dir: string;
let snapshots: SnapshotStore;
let gatewayDb: SqlDb;
const payTo = privateKeyToAccount(generatePrivateKey()).address;
let payer: PrivateKeyAccount;
let computed = 0;
let drainOnCompute: (() => Promise<void>) | null = null;
let trader: string;
let conditionId: string;

beforeAll(async () => {
  [chain, v] = await Promise.all([startLocalChain(), makeVenue({ wallets: 2000, days: 30, seed: 5 })]);
  const asOf = new Date('2026-10-31T23:59:59Z');
  await fullBuild(duckRunner(v.conn), asOf);
  payer = (await chain.newPayer(1_000_000n)).account; // $1
  const [w] = await v.rows<{ address: string }>(`SELECT w.address FROM a_board b JOIN wallets w USING (wallet_id) WHERE b.preset = 'top-pnl' ORDER BY b.rank LIMIT 1`);
  trader = w!.address;
  const [m] = await v.rows<{ condition_id: string }>(`SELECT m.condition_id FROM markets m JOIN fills f USING (market_id) GROUP BY 1 ORDER BY count(*) DESC LIMIT 1`);
  conditionId = m!.condition_id;
  const facilitator = new LocalFacilitator({ rpcUrl: chain.rpcUrl, network: chain.network, privateKey: chain.facilitatorPrivateKey });
  dir = await mkdtemp(join(tmpdir(), 'gateway-'));
  // the gateway's stores on one connection to their own file (the app's stores share the app's)
  gatewayDb = await openServiceDb(join(dir, 'gateway.sqlite'));
  ledger = await PaymentLedger.open(gatewayDb);
  snapshots = await SnapshotStore.open(gatewayDb);
  await snapshots.put({ preset: 'top-pnl', date: '2026-10-31', as_of: asOf.toISOString(), computed_at: new Date().toISOString(), top_k: SNAPSHOT_TOP_K, rows: await presetTopK(duckRunner(v.conn), 'top-pnl') });
  const gate = new PaymentGate({ facilitator, ledger, terms: { network: { ...NETWORKS['base-sepolia']!, usdc: chain.usdc }, payTo } });
  const { agent, info } = gatewayRouters({
    db: duckRunner(v.conn),
    gate,
    now: () => asOf,
    origin: () => t.origin,
    snapshots,
    tidKey: 'test-tid-key-0123456789abcdef',
    facilitator: `local (${chain.rpcUrl})`,
    extraRoutes: (r, paid) => {
      // test-only routes priced like the leaderboard: one counts its computations, one fails, one drains the payer
      r.get('/test/counter', paid('leaderboard', async () => async () => ({ n: ++computed })));
      r.get('/test/fails', paid('leaderboard', async () => async () => {
        throw new GatewayError(409, 'conflict', 'the handler failed');
      }));
      r.get('/test/drain', paid('leaderboard', async () => async () => {
        await drainOnCompute?.();
        return { drained: true };
      }));
    },
  });
  t = await startApp(duckRunner(v.conn), {
    venueNow: () => asOf,
    mounts: [
      { path: '/v1/agent', router: agent },
      { path: '/x402', router: info },
    ],
  });
}, 600_000);

afterAll(async () => {
  await t?.close();
  await gatewayDb?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
  await chain?.stop();
  await v?.cleanup();
});

const balance = (a: string) => chain.balanceOf(getAddress(a));
const b64json = (s: string) => JSON.parse(Buffer.from(s, 'base64').toString('utf8')) as Record<string, unknown>;

async function requirementsOf(path: string, init: RequestInit = {}): Promise<PaymentRequirements> {
  const res = await fetch(`${t.base}${path}`, init);
  expect(res.status).toBe(402);
  return ((await res.json()) as PaymentRequiredBody).accepts[0]!;
}

async function headerFor(path: string, signer: PrivateKeyAccount = payer, tweak?: (r: X402Requirements) => X402Requirements, init: RequestInit = {}): Promise<string> {
  const req = (await requirementsOf(path, init)) as unknown as X402Requirements;
  return createPaymentHeader(signer, 1, tweak ? tweak(req) : req);
}

const pay = (path: string, header: string, init: RequestInit = {}) => fetch(`${t.base}${path}`, { ...init, headers: { ...(init.headers as Record<string, string>), 'x-payment': header } });

describe('x402 gateway', () => {
  it('lists every route with its price, network and asset at /x402/info', async () => {
    const info = (await (await fetch(`${t.base}/x402/info`)).json()) as { x402Version: number; network: string; asset: string; pay_to: string; routes: { id: string; price_usd: string; max_amount_required: string }[] };
    expect(info).toMatchObject({ x402Version: 1, network: 'base-sepolia', asset: getAddress(chain.usdc), pay_to: getAddress(payTo) });
    expect(info.routes.map((r) => r.id)).toEqual(AGENT_ROUTES.map((r) => r.id));
    for (const r of info.routes) expect(r.max_amount_required).toBe(usdToAtomic(r.price_usd));
  });

  it('answers an unpaid request 402 with v1 requirements', async () => {
    const res = await fetch(`${t.base}/v1/agent/trader/${trader}/playbook`);
    expect(res.status).toBe(402);
    const body = (await res.json()) as PaymentRequiredBody;
    expect(Object.keys(body).sort()).toEqual(['accepts', 'error', 'x402Version']);
    expect(body.x402Version).toBe(1);
    expect(body.accepts).toHaveLength(1);
    expect(body.accepts[0]).toEqual({
      scheme: 'exact',
      network: 'base-sepolia',
      maxAmountRequired: '10000',
      resource: `${t.origin}/v1/agent/trader/${trader}/playbook`,
      description: expect.any(String),
      mimeType: 'application/json',
      payTo: getAddress(payTo),
      maxTimeoutSeconds: 60,
      asset: getAddress(chain.usdc),
      extra: { name: 'USDC', version: '2' },
    });
  });

  it('is paid by the official client on every route; balances move by exactly the prices', async () => {
    const payFetch = wrapFetchWithPayment(fetch, payer as never, 100_000n);
    const before = { payer: await balance(payer.address), payee: await balance(payTo) };
    const calls: [string, RequestInit, string][] = [
      [`/v1/agent/trader/${trader}/playbook`, {}, 'trader.playbook'],
      [`/v1/agent/trader/${trader.toLowerCase()}/positions?limit=5`, {}, 'trader.positions'],
      [`/v1/agent/market/${conditionId}/flow?window_hours=48`, {}, 'market.flow'],
      ['/v1/agent/rankings/custom', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ weights: { calibration: 0.7, alpha_24h: 0.3 }, limit: 5 }) }, 'rankings.custom'],
      ['/v1/agent/rankings/preset/sharp-forecasters?limit=3&extra_metrics=volume', {}, 'rankings.preset'],
      ['/v1/agent/leaderboard?limit=5', {}, 'leaderboard'],
      ['/v1/agent/signals/smart-money?since_hours=168&limit=5&signal_types=large_buy,exit', {}, 'signals.smart_money'],
    ];
    calls.push(['/v1/agent/rankings/published/top-pnl', {}, 'rankings.published']);
    let spent = 0n;
    for (const [path, init, id] of calls) {
      const res = await payFetch(`${t.base}${path}`, init);
      const text = await res.text();
      expect(res.status, `${path}: ${text.slice(0, 200)}`).toBe(200);
      const receipt = b64json(res.headers.get('x-payment-response')!);
      expect(receipt).toMatchObject({ success: true, network: 'base-sepolia', payer: getAddress(payer.address) });
      expect(String(receipt.transaction)).toMatch(/^0x[0-9a-f]{64}$/);
      // address values in answers are EIP-55 (opaque ids such as user_id "w:0x…" are left as they are)
      for (const m of text.matchAll(/"(0x[0-9a-fA-F]{40})"/g)) expect(m[1], `${path}: …${text.slice(Math.max(0, m.index - 60), m.index + 45)}`).toBe(getAddress(m[1]!.toLowerCase()));
      spent += BigInt(usdToAtomic(AGENT_ROUTES.find((r) => r.id === id)!.price_usd));
    }
    expect(await balance(payer.address)).toBe(before.payer - spent);
    expect(await balance(payTo)).toBe(before.payee + spent);
    const lb = (await (await payFetch(`${t.base}/v1/agent/leaderboard?limit=2`)).json()) as { rows: { proxy_wallet: string }[] };
    expect(lb.rows[0]!.proxy_wallet).toBe(getAddress(lb.rows[0]!.proxy_wallet.toLowerCase()));
  }, 120_000);

  it('refuses a replayed payment before running the handler, and runs it once under concurrent duplicates', async () => {
    const header = await headerFor('/v1/agent/test/counter');
    const before = await balance(payTo);
    const first = await pay('/v1/agent/test/counter', header);
    expect(first.status).toBe(200);
    const n = computed;
    const replay = await pay('/v1/agent/test/counter', header);
    expect(replay.status).toBe(402);
    // refused by the chain's nonce check at verify or by the ledger: either way before the handler
    expect(((await replay.json()) as PaymentRequiredBody).error).toMatch(/already used|nonce_used/);
    expect(computed).toBe(n);
    // eight copies of one fresh payment at once: one answer, one computation, one charge
    const h2 = await headerFor('/v1/agent/test/counter');
    const all = await Promise.all(Array.from({ length: 8 }, () => pay('/v1/agent/test/counter', h2)));
    expect(all.filter((r) => r.status === 200)).toHaveLength(1);
    expect(all.filter((r) => r.status === 402)).toHaveLength(7);
    expect(computed).toBe(n + 1);
    expect(await balance(payTo)).toBe(before + 2n * 2000n);
  });

  it('refuses wrong payments with 402 and moves nothing', async () => {
    const path = '/v1/agent/test/counter';
    const poor = privateKeyToAccount(generatePrivateKey()); // holds no USDC
    const expired = async () => {
      const req = (await requirementsOf(path)) as unknown as X402Requirements;
      const unsigned = preparePaymentHeader(payer.address, 1, req);
      const now = Math.floor(Date.now() / 1000);
      unsigned.payload.authorization.validAfter = String(now - 600);
      unsigned.payload.authorization.validBefore = String(now - 10);
      return signPaymentHeader(payer, req, unsigned);
    };
    const tampered = async () => {
      const h = b64json(await headerFor(path)) as { payload: { signature: string } };
      const sig = h.payload.signature;
      h.payload.signature = sig.slice(0, 10) + (sig[10] === 'a' ? 'b' : 'a') + sig.slice(11);
      return Buffer.from(JSON.stringify(h)).toString('base64');
    };
    const cases: [string, () => Promise<string>, RegExp][] = [
      ['expired', expired, /expired/],
      ['less than the price', () => headerFor(path, payer, (r) => ({ ...r, maxAmountRequired: '1999' })), /wrong amount/],
      ['more than the price', () => headerFor(path, payer, (r) => ({ ...r, maxAmountRequired: '2001' })), /wrong amount/],
      ['another payee', () => headerFor(path, payer, (r) => ({ ...r, payTo: poor.address })), /wrong payee/],
      ['another network', () => headerFor(path, payer, (r) => ({ ...r, network: 'base' })), /wrong network/],
      ['insufficient balance', () => headerFor(path, poor), /insufficient_funds/],
      ['tampered signature', tampered, /verification failed/],
      ['not a payment', async () => 'bm90IGpzb24=', /not base64 JSON|not a JSON object/],
    ];
    const before = { payer: await balance(payer.address), payee: await balance(payTo) };
    const n = computed;
    for (const [name, make, why] of cases) {
      const res = await pay(path, await make());
      expect(res.status, name).toBe(402);
      const body = (await res.json()) as PaymentRequiredBody;
      expect(body.error, name).toMatch(why);
      expect(body.accepts, name).toHaveLength(1);
    }
    expect(computed).toBe(n);
    expect(await balance(payer.address)).toBe(before.payer);
    expect(await balance(payTo)).toBe(before.payee);
  });

  it('charges nothing when the handler fails, and answers a failed settlement 402 with its receipt and no data', async () => {
    const before = { payer: await balance(payer.address), payee: await balance(payTo) };
    const failing = await pay('/v1/agent/test/fails', await headerFor('/v1/agent/test/fails'));
    expect(failing.status).toBe(409);
    expect(await failing.json()).toMatchObject({ error: 'conflict' });
    expect(failing.headers.get('x-payment-response')).toBeNull();
    // a payer who empties their wallet while the answer is computed: settlement fails
    const victim = (await chain.newPayer(5000n)).account;
    const header = await headerFor('/v1/agent/test/drain', victim);
    drainOnCompute = async () => {
      const w = createWalletClient({ account: victim, transport: http(chain.rpcUrl), chain: { id: chain.chainId, name: 'local', nativeCurrency: { name: 'ETH', symbol: 'ETH', decimals: 18 }, rpcUrls: { default: { http: [chain.rpcUrl] } } } }).extend(publicActions);
      await chain.fund(victim.address, 0n).catch(() => {});
      await chain.anvil.rpc('anvil_setBalance', [victim.address, '0x56BC75E2D63100000']);
      const hash = await w.writeContract({ address: chain.usdc, abi: testUsdcAbi, functionName: 'transfer', args: [payTo, 5000n] } as never);
      await w.waitForTransactionReceipt({ hash: hash as Hex });
    };
    const payeeMid = await balance(payTo);
    const res = await pay('/v1/agent/test/drain', header);
    drainOnCompute = null;
    expect(res.status).toBe(402);
    const body = (await res.json()) as PaymentRequiredBody & { drained?: boolean };
    expect(body.drained).toBeUndefined();
    expect(body.error).toMatch(/settlement failed/);
    const receipt = b64json(res.headers.get('x-payment-response')!);
    expect(receipt.success).toBe(false);
    // only the victim's own transfer moved money; the payment did not
    expect(await balance(payTo)).toBe(payeeMid + 5000n);
    expect(await balance(payer.address)).toBe(before.payer);
  }, 60_000);

  it('accepts the deprecated encodings with deprecation headers', async () => {
    const flat = async () => {
      const h = b64json(await headerFor('/v1/agent/test/counter')) as { scheme: string; network: string; payload: { signature: string; authorization: unknown } };
      return Buffer.from(JSON.stringify({ scheme: h.scheme, network: h.network, signature: h.payload.signature, authorization: h.payload.authorization })).toString('base64');
    };
    const alias = async () => {
      const { x402Version: _v, ...rest } = b64json(await headerFor('/v1/agent/test/counter'));
      return Buffer.from(JSON.stringify({ ...rest, x402: 0.1 })).toString('base64');
    };
    for (const make of [flat, alias]) {
      const res = await pay('/v1/agent/test/counter', await make());
      expect(res.status).toBe(200);
      expect(res.headers.get('deprecation')).toMatch(/^@\d+$/);
      expect(res.headers.get('sunset')).toBe('Wed, 31 Mar 2027 00:00:00 GMT');
      expect(res.headers.get('x-payment-response')).not.toBeNull();
    }
  });

  it('answers bad input and unknown traders for free, with the error object', async () => {
    const free = async (path: string, status: number, code: string) => {
      const res = await fetch(`${t.base}${path}`);
      expect(res.status, path).toBe(status);
      expect(((await res.json()) as { error: string }).error).toBe(code);
    };
    await free(`/v1/agent/trader/0x${'12'.repeat(20)}/playbook`, 404, 'not_found');
    await free('/v1/agent/trader/0x123/playbook', 400, 'invalid_request');
    const mixed = getAddress(trader);
    const broken = mixed.slice(0, 2) + [...mixed.slice(2)].map((c) => (/[a-f]/.test(c) ? c.toUpperCase() : /[A-F]/.test(c) ? c.toLowerCase() : c)).join('');
    if (broken !== broken.toLowerCase() && broken.slice(2) !== broken.slice(2).toUpperCase()) await free(`/v1/agent/trader/${broken}/playbook`, 400, 'invalid_request');
    // an all-uppercase address is accepted like a lowercase one: it gets to the payment step
    await free(`/v1/agent/trader/0x${trader.slice(2).toUpperCase()}/playbook`, 402, 'X-PAYMENT header is required');
    await free('/v1/agent/rankings/preset/nope', 404, 'not_found');
    await free(`/v1/agent/market/0x${'00'.repeat(32)}/flow`, 404, 'not_found');
    await free('/v1/agent/rankings/published/top-pnl?date=2001-01-01', 404, 'not_found');
    const bad = await fetch(`${t.base}/v1/agent/rankings/custom`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ weights: { nope: 1 } }) });
    expect(bad.status).toBe(400);
    await free('/v1/agent/nothing', 404, 'not_found');
    await free('/v1/agent/signals/smart-money?since_hours=999', 400, 'invalid_request');
    await free('/v1/agent/signals/smart-money?tags=lucky', 400, 'invalid_request');
  });
});
