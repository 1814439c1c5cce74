/**
 * Facilitators against a real local chain (anvil + TestUSDC): payments are built the way the official client builds
 * them (x402/client createPaymentHeader, then decoded from base64), verified and settled by LocalFacilitator directly
 * and by HttpFacilitator through facilitatorRouter(local) on a loopback express server; balances are read on chain.
 */
import type { Server } from 'node:http';
import { createServer as createNetServer, type AddressInfo, type Server as NetServer, type Socket } from 'node:net';
import express from 'express';
import {
  createPublicClient,
  createWalletClient,
  hashDomain,
  http,
  parseEventLogs,
  parseSignature,
  publicActions,
  type Address,
  type Hex,
} from 'viem';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { baseSepolia } from 'viem/chains';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPaymentHeader, preparePaymentHeader, signPaymentHeader } from 'x402/client';
import type { PaymentRequirements as X402PaymentRequirements, Signer as X402Signer } from 'x402/types';
import { FacilitatorReasons, HttpFacilitator, LocalFacilitator } from '../../gateway/facilitator.ts';
import { facilitatorRouter } from '../../gateway/facilitator-server.ts';
import { startLocalChain, testUsdcAbi, type LocalChain } from '../../gateway/local-chain/chain.ts';
import { PaymentPayload, type Facilitator, type PaymentRequirements } from '../../gateway/payment/types.ts';

const PRICE = 10_000n; // $0.01
const payee = privateKeyToAccount(generatePrivateKey()).address;
const stranger = privateKeyToAccount(generatePrivateKey()).address;

let chain: LocalChain;
let local: LocalFacilitator;
let remote: HttpFacilitator;
let server: Server;
let base: string;

beforeAll(async () => {
  chain = await startLocalChain({ pollingIntervalMs: 20 });
  local = new LocalFacilitator({ rpcUrl: chain.rpcUrl, network: chain.network, privateKey: chain.facilitatorPrivateKey, assets: [chain.usdc], pollingIntervalMs: 20 });
  const app = express();
  app.use('/facilitator', facilitatorRouter(local));
  server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/facilitator`;
  remote = new HttpFacilitator({ url: base, timeoutMs: 5_000 });
}, 60_000);

afterAll(async () => {
  await new Promise((r) => server?.close(r));
  await chain?.stop();
});

function requirements(over: Partial<PaymentRequirements> = {}): PaymentRequirements {
  return {
    scheme: 'exact',
    network: 'base-sepolia',
    maxAmountRequired: PRICE.toString(),
    resource: 'http://127.0.0.1/v1/agent/leaderboard',
    description: 'leaderboard',
    mimeType: 'application/json',
    payTo: payee,
    maxTimeoutSeconds: 60,
    asset: chain.usdc,
    extra: { name: 'USDC', version: '2' },
    ...over,
  };
}

function decode(header: string): PaymentPayload {
  return PaymentPayload.parse(JSON.parse(Buffer.from(header, 'base64').toString('utf8')));
}

/** What x402-fetch sends: createPaymentHeader with the payer's account, decoded. */
async function pay(payer: PrivateKeyAccount, req: PaymentRequirements): Promise<PaymentPayload> {
  return decode(await createPaymentHeader(payer, 1, req as X402PaymentRequirements));
}

async function balances(...who: Address[]): Promise<bigint[]> {
  return Promise.all(who.map((a) => chain.balanceOf(a)));
}

describe('TestUSDC', () => {
  it('has the USDC EIP-712 domain and 6 decimals; only the deployer mints', async () => {
    const pub = createPublicClient({ chain: baseSepolia, transport: http(chain.rpcUrl) });
    const read = <F extends 'name' | 'version' | 'decimals' | 'DOMAIN_SEPARATOR'>(functionName: F) => pub.readContract({ address: chain.usdc, abi: testUsdcAbi, functionName });
    expect([await read('name'), await read('version'), await read('decimals')]).toEqual(['USDC', '2', 6]);
    expect(await read('DOMAIN_SEPARATOR')).toBe(hashDomain({ domain: { name: 'USDC', version: '2', chainId: 84532n, verifyingContract: chain.usdc }, types: { EIP712Domain: [{ name: 'name', type: 'string' }, { name: 'version', type: 'string' }, { name: 'chainId', type: 'uint256' }, { name: 'verifyingContract', type: 'address' }] } }));
    await expect(pub.simulateContract({ account: chain.facilitator, address: chain.usdc, abi: testUsdcAbi, functionName: 'mint', args: [stranger, 1n] })).rejects.toThrow(/not the minter/);
  });

  it('settles through the bytes overload, and refuses high-s, not-yet-valid and reused authorizations', async () => {
    const { account: payer } = await chain.newPayer(50_000n);
    const wallet = createWalletClient({ chain: baseSepolia, transport: http(chain.rpcUrl), account: privateKeyToAccount(chain.facilitatorPrivateKey), pollingInterval: 20 }).extend(publicActions);
    const now = BigInt(Math.floor(Date.now() / 1000));
    const sign = (message: { validAfter: bigint; nonce: Hex }) =>
      payer.signTypedData({
        domain: { name: 'USDC', version: '2', chainId: 84532, verifyingContract: chain.usdc },
        types: { TransferWithAuthorization: [{ name: 'from', type: 'address' }, { name: 'to', type: 'address' }, { name: 'value', type: 'uint256' }, { name: 'validAfter', type: 'uint256' }, { name: 'validBefore', type: 'uint256' }, { name: 'nonce', type: 'bytes32' }] },
        primaryType: 'TransferWithAuthorization',
        message: { from: payer.address, to: stranger, value: 1_000n, validBefore: now + 300n, ...message },
      });
    const args = (validAfter: bigint, nonce: Hex) => [payer.address, stranger, 1_000n, validAfter, now + 300n, nonce] as const;
    const nonce1 = `0x${'11'.repeat(32)}` as Hex;
    const sig = await sign({ validAfter: now - 60n, nonce: nonce1 });
    const hash = await wallet.writeContract({ address: chain.usdc, abi: testUsdcAbi, functionName: 'transferWithAuthorization', args: [...args(now - 60n, nonce1), sig] });
    const receipt = await wallet.waitForTransactionReceipt({ hash });
    expect(receipt.status).toBe('success');
    expect(parseEventLogs({ abi: testUsdcAbi, logs: receipt.logs, eventName: 'AuthorizationUsed' })[0]?.args).toEqual({ authorizer: payer.address, nonce: nonce1 });
    expect(await balances(payer.address, stranger)).toEqual([49_000n, 1_000n]);
    const simulate = (a: readonly unknown[]) => wallet.simulateContract({ address: chain.usdc, abi: testUsdcAbi, functionName: 'transferWithAuthorization', args: a as never });
    // reuse of a nonce
    await expect(simulate([...args(now - 60n, nonce1), sig])).rejects.toThrow(/used or canceled/);
    // the malleable twin (s -> n - s, v flipped) of a valid signature
    const nonce2 = `0x${'22'.repeat(32)}` as Hex;
    const { r, s, yParity } = parseSignature(await sign({ validAfter: now - 60n, nonce: nonce2 }));
    const n = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
    const highS = `0x${(n - BigInt(s)).toString(16).padStart(64, '0')}` as Hex;
    await expect(simulate([...args(now - 60n, nonce2), yParity === 0 ? 28 : 27, r, highS])).rejects.toThrow(/'s' value/);
    // validAfter in the future
    const nonce3 = `0x${'33'.repeat(32)}` as Hex;
    const early = parseSignature(await sign({ validAfter: now + 120n, nonce: nonce3 }));
    await expect(simulate([...args(now + 120n, nonce3), 27 + early.yParity, early.r, early.s])).rejects.toThrow(/not yet valid/);
    expect(await balances(payer.address, stranger)).toEqual([49_000n, 1_000n]);
  });
});

const facilitators: [string, () => Facilitator][] = [
  ['LocalFacilitator', () => local],
  ['HttpFacilitator via facilitatorRouter', () => remote],
];

describe.each(facilitators)('%s', (_name, get) => {
  it('verifies a valid payment, settles it (balances move by exactly the value), then refuses to settle it again', async () => {
    const f = get();
    const { account: payer } = await chain.newPayer(1_000_000n);
    // the official client with a viem wallet client (x402-fetch's usual signer)
    const walletClient = createWalletClient({ chain: baseSepolia, transport: http(chain.rpcUrl), account: payer }).extend(publicActions);
    const req = requirements();
    // (viem's OP-stack chain types do not fit x402's declared SignerWallet<Chain>; the runtime check is isSignerWallet)
    const payment = decode(await createPaymentHeader(walletClient as unknown as X402Signer, 1, req as X402PaymentRequirements));
    const [payer0, payee0] = await balances(payer.address, payee);

    expect(await f.verify(payment, req)).toEqual({ isValid: true, payer: payer.address });
    const receipt = await f.settle(payment, req);
    expect(receipt).toMatchObject({ success: true, network: 'base-sepolia', payer: payer.address });
    expect(receipt.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    expect(receipt.errorReason).toBeUndefined();
    const onChain = await createPublicClient({ chain: baseSepolia, transport: http(chain.rpcUrl) }).getTransactionReceipt({ hash: receipt.transaction as Hex });
    expect(onChain.status).toBe('success');
    expect(parseEventLogs({ abi: testUsdcAbi, logs: onChain.logs, eventName: 'Transfer' })[0]?.args).toEqual({ from: payer.address, to: payee, value: PRICE });
    expect(await balances(payer.address, payee)).toEqual([payer0! - PRICE, payee0! + PRICE]);

    // replay: the nonce is spent on chain
    expect(await f.verify(payment, req)).toEqual({ isValid: false, invalidReason: FacilitatorReasons.nonceUsed, payer: payer.address });
    expect(await f.settle(payment, req)).toEqual({ success: false, errorReason: FacilitatorReasons.nonceUsed, transaction: '', network: 'base-sepolia', payer: payer.address });
    expect(await balances(payer.address, payee)).toEqual([payer0! - PRICE, payee0! + PRICE]);
  });

  it('refuses each bad payment with its own reason and moves nothing', async () => {
    const f = get();
    const { account: payer } = await chain.newPayer(1_000_000n);
    const { account: poor } = await chain.newPayer(PRICE - 1n);
    const req = requirements();
    const valid = await pay(payer, req);
    const sig = valid.payload.signature;
    const flipped = sig.slice(0, 20) + (sig[20] === 'a' ? 'b' : 'a') + sig.slice(21);
    const unsigned = preparePaymentHeader(payer.address, 1, req as X402PaymentRequirements);
    const past = String(Math.floor(Date.now() / 1000) - 60);
    const expiredHeader = await signPaymentHeader(payer, req as X402PaymentRequirements, { ...unsigned, payload: { ...unsigned.payload, authorization: { ...unsigned.payload.authorization, validBefore: past } } });

    const cases: [string, PaymentPayload, PaymentRequirements, string][] = [
      ['tampered signature', { ...valid, payload: { ...valid.payload, signature: flipped as Hex } }, req, FacilitatorReasons.invalidSignature],
      ['wrong payee', await pay(payer, requirements({ payTo: stranger })), req, FacilitatorReasons.recipientMismatch],
      ['more than the price', await pay(payer, requirements({ maxAmountRequired: String(PRICE + 1n) })), req, FacilitatorReasons.valueMismatch],
      ['less than the price', await pay(payer, requirements({ maxAmountRequired: String(PRICE - 1n) })), req, FacilitatorReasons.valueMismatch],
      ['signed for another network', await pay(payer, requirements({ network: 'base' })), req, FacilitatorReasons.invalidNetwork],
      ['requirements for another network', await pay(payer, requirements({ network: 'base' })), requirements({ network: 'base' }), FacilitatorReasons.invalidNetwork],
      ['a token the facilitator does not settle', await pay(payer, requirements({ asset: stranger })), requirements({ asset: stranger }), FacilitatorReasons.unsupportedAsset],
      ['expired (validBefore in the past)', decode(expiredHeader), req, FacilitatorReasons.expired],
      ['insufficient balance', await pay(poor, req), req, FacilitatorReasons.insufficientFunds],
    ];
    const before = await balances(payer.address, poor.address, payee);
    for (const [name, payment, r, reason] of cases) {
      const from = payment.payload.authorization.from;
      expect(await f.verify(payment, r), name).toEqual({ isValid: false, invalidReason: reason, payer: from });
      expect(await f.settle(payment, r), name).toEqual({ success: false, errorReason: reason, transaction: '', network: payment.network, payer: from });
    }
    expect(await balances(payer.address, poor.address, payee)).toEqual(before);
    // the untampered original is still good: the refusals spent nothing
    expect((await f.verify(valid, req)).isValid).toBe(true);
  });
});

describe('LocalFacilitator under concurrency', () => {
  it('settles different payments concurrently and the same payment once', async () => {
    const { account: a } = await chain.newPayer(100_000n);
    const { account: b } = await chain.newPayer(100_000n);
    const req = requirements();
    const [pa, pb] = await Promise.all([pay(a, req), pay(b, req)]);
    const payee0 = await chain.balanceOf(payee);
    const results = await Promise.all([local.settle(pa, req), local.settle(pb, req), local.settle(pa, req), remote.settle(pb, req)]);
    expect(results.map((r) => r.success)).toEqual([true, true, false, false]);
    expect(results.slice(2).map((r) => r.errorReason)).toEqual([FacilitatorReasons.nonceUsed, FacilitatorReasons.nonceUsed]);
    expect(await balances(a.address, b.address, payee)).toEqual([100_000n - PRICE, 100_000n - PRICE, payee0 + 2n * PRICE]);
  });
});

describe('facilitatorRouter', () => {
  it('lists the supported kind and answers malformed requests with {error, message}', async () => {
    expect(await remote.supported()).toEqual({ kinds: [{ x402Version: 1, scheme: 'exact', network: 'base-sepolia' }] });
    const post = (path: string, body: string) => fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    const missing = await post('/verify', JSON.stringify({ x402Version: 1, paymentRequirements: requirements() }));
    expect(missing.status).toBe(400);
    expect(await missing.json()).toMatchObject({ error: 'invalid_request', message: expect.stringContaining('paymentPayload') });
    const broken = await post('/settle', '{"x402Version": 1,');
    expect(broken.status).toBe(400);
    expect(await broken.json()).toMatchObject({ error: 'invalid_json', message: expect.any(String) });
  });
});

describe('HttpFacilitator failures', () => {
  let hanging: NetServer;
  const sockets = new Set<Socket>();
  let hangingPort: number;
  let closedPort: number;
  beforeAll(async () => {
    hanging = createNetServer((socket) => void sockets.add(socket)); // accepts connections and never answers
    hangingPort = await new Promise<number>((resolve) => hanging.listen(0, '127.0.0.1', () => resolve((hanging.address() as AddressInfo).port)));
    const probe = createNetServer();
    closedPort = await new Promise<number>((resolve) => probe.listen(0, '127.0.0.1', () => resolve((probe.address() as AddressInfo).port)));
    await new Promise((r) => probe.close(r));
  });
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((r) => hanging?.close(r));
  });

  it.each([
    ['an unreachable URL', () => `http://127.0.0.1:${closedPort}`],
    ['a server that never answers', () => `http://127.0.0.1:${hangingPort}`],
  ])('maps %s to facilitator_unavailable quickly, without throwing', async (_name, url) => {
    const f = new HttpFacilitator({ url: url(), timeoutMs: 300, settleTimeoutMs: 300 });
    const { account: payer } = await chain.newPayer(0n);
    const req = requirements();
    const payment = await pay(payer, req);
    const t0 = performance.now();
    expect(await f.verify(payment, req)).toEqual({ isValid: false, invalidReason: 'facilitator_unavailable', payer: payer.address });
    expect(await f.settle(payment, req)).toEqual({ success: false, errorReason: 'facilitator_unavailable', transaction: '', network: 'base-sepolia', payer: payer.address });
    expect(await f.supported()).toEqual({ kinds: [] });
    expect(performance.now() - t0).toBeLessThan(3_000);
  });
});
