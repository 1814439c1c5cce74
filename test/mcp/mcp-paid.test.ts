/**
 * A keyless agent pays for MCP tools through x402's MCP transport, end to end on a real local chain with the real
 * payment gate: the unpaid call returns the requirements, a payment built by the official x402 client in
 * `_meta["x402/payment"]` returns the answer with the receipt in `_meta["x402/payment-response"]`, balances move
 * by exactly the tool's price, and a replayed payment is refused with nothing computed or charged.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import express from 'express';
import { getAddress } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createPaymentHeader } from 'x402/client';
import type { PaymentRequirements as X402Requirements } from 'x402/types';
import { runAnalyticsBuild } from '../../core/analytics-build.ts';
import { AccountStore } from '../../data/account-store.ts';
import { PaymentLedger } from '../../data/payment-ledger.ts';
import { duckRunner } from '../../data/runner.ts';
import { LocalFacilitator } from '../../gateway/facilitator.ts';
import { startLocalChain, type LocalChain } from '../../gateway/local-chain/chain.ts';
import { PaymentGate } from '../../gateway/payment/gate.ts';
import { NETWORKS, TOOL_PRICES, usdToAtomic } from '../../gateway/payment/pricing.ts';
import type { PaymentRequiredBody } from '../../gateway/payment/types.ts';
import { mcpRouter } from '../../mcp/server.ts';
import { makeVenue, type TestVenue } from '../helpers/venue.ts';

let chain: LocalChain;
let v: TestVenue;
let dir: string;
let ledger: PaymentLedger;
let accounts: AccountStore;
let server: Server;
let client: Client;
const payTo = privateKeyToAccount(generatePrivateKey()).address;
let trader: string;

beforeAll(async () => {
  [chain, v] = await Promise.all([startLocalChain(), makeVenue({ wallets: 1500, days: 30, seed: 9 })]);
  const asOf = new Date('2026-10-31T23:59:59Z');
  await runAnalyticsBuild(duckRunner(v.conn), asOf);
  const [w] = await v.rows<{ address: string }>(`SELECT w.address FROM a_board b JOIN wallets w USING (wallet_id) WHERE b.preset = 'top-pnl' ORDER BY b.rank LIMIT 1`);
  trader = w!.address;
  dir = await mkdtemp(join(tmpdir(), 'mcp-paid-'));
  ledger = new PaymentLedger(join(dir, 'service.sqlite'));
  accounts = new AccountStore(join(dir, 'service.sqlite'));
  const gate = new PaymentGate({
    facilitator: new LocalFacilitator({ rpcUrl: chain.rpcUrl, network: chain.network, privateKey: chain.facilitatorPrivateKey }),
    ledger,
    terms: { network: { ...NETWORKS['base-sepolia']!, usdc: chain.usdc }, payTo },
  });
  const app = express();
  app.use(express.json());
  app.use('/mcp', mcpRouter({ db: duckRunner(v.conn), now: () => asOf, tidKey: 'test-tid-key-0123456789abcdef', prices: TOOL_PRICES, accounts, payments: gate.forTools() }));
  server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  client = new Client({ name: 'paying-agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`)));
}, 600_000);

afterAll(async () => {
  await client?.close();
  await new Promise((r) => (server ? server.close(r) : r(null)));
  ledger?.close();
  accounts?.close();
  await chain?.stop();
  await v?.cleanup();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const call = (args: Record<string, unknown>, payment?: unknown) =>
  client.request({ method: 'tools/call', params: { name: 'get_trader', arguments: args, ...(payment ? { _meta: { 'x402/payment': payment } } : {}) } }, CallToolResultSchema) as Promise<CallToolResult>;

it('charges exactly the tool price through _meta and refuses a replay', async () => {
  const payer = (await chain.newPayer(100_000n)).account;
  const args = { trader, sections: ['profile', 'playbook'] };
  const unpaid = await call(args);
  expect(unpaid.isError).toBe(true);
  const body = unpaid.structuredContent as unknown as PaymentRequiredBody;
  expect(body.x402Version).toBe(1);
  const req = body.accepts[0]!;
  expect(req.maxAmountRequired).toBe(usdToAtomic(TOOL_PRICES.get_trader!));
  expect(req.payTo).toBe(getAddress(payTo));

  const payment = JSON.parse(Buffer.from(await createPaymentHeader(payer, 1, req as unknown as X402Requirements), 'base64').toString('utf8'));
  const before = { payer: await chain.balanceOf(payer.address), payee: await chain.balanceOf(payTo) };
  const paid = await call(args, payment);
  expect(paid.isError).toBeFalsy();
  const receipt = paid._meta?.['x402/payment-response'] as { success: boolean; transaction: string; payer: string };
  expect(receipt).toMatchObject({ success: true, network: 'base-sepolia', payer: getAddress(payer.address) });
  expect(receipt.transaction).toMatch(/^0x[0-9a-f]{64}$/);
  expect((paid.structuredContent as { trader?: string }).trader?.toLowerCase()).toBe(trader.toLowerCase());
  const price = BigInt(req.maxAmountRequired);
  expect(await chain.balanceOf(payer.address)).toBe(before.payer - price);
  expect(await chain.balanceOf(payTo)).toBe(before.payee + price);

  const replay = await call(args, payment);
  expect(replay.isError).toBe(true);
  expect((replay.structuredContent as unknown as PaymentRequiredBody).error).toMatch(/already used|nonce_used/);
  expect(await chain.balanceOf(payTo)).toBe(before.payee + price);
  // free tools need no payment
  const presets = (await client.request({ method: 'tools/call', params: { name: 'list_presets', arguments: {} } }, CallToolResultSchema)) as CallToolResult;
  expect(presets.isError).toBeFalsy();
}, 120_000);
