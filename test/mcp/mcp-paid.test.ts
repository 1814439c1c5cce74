/**
 * A keyless agent buys every paid MCP tool exactly as agents do, through the official SDK Client's `callTool` after
 * `listTools` (so the client validates every structured result against the tool's output schema), on a real local
 * chain with the real payment gate: the unpaid call returns the terms in the x402 MCP transport's `x402/error`
 * wrapper, a payment signed by the official x402 client in `_meta["x402/payment"]` returns the answer with its
 * receipt in `_meta["x402/payment-response"]`, balances move by exactly each tool's price, and a replayed or wrong
 * payment is refused with nothing charged. `npm run mcp:pay` does the same round trip from the command line.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import express from 'express';
import { getAddress } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPaymentHeader } from 'x402/client';
import type { PaymentRequirements as X402Requirements } from 'x402/types';
import { fullBuild } from '../../core/analytics/build.ts';
import { AccountStore } from '../../data/account-store.ts';
import { PaymentLedger } from '../../data/payment-ledger.ts';
import { openServiceDb, type SqlDb } from '../../data/sql/db.ts';
import { duckRunner } from '../../data/runner.ts';
import { LocalFacilitator } from '../../gateway/facilitator.ts';
import { startLocalChain, type LocalChain } from '../../gateway/local-chain/chain.ts';
import { PaymentGate } from '../../gateway/payment/gate.ts';
import { NETWORKS, TOOL_PRICES, usdToAtomic } from '../../gateway/payment/pricing.ts';
import type { PaymentRequiredBody, SettleReceipt } from '../../gateway/payment/types.ts';
import { mcpRouter } from '../../mcp/server.ts';
import { PAID_PRICE_KEYS, toolSpec, type ToolName } from '../../mcp/tools.ts';
import { callToolPaying, paymentRequiredOf } from '../../mcp/x402-client.ts';
import { makeVenue, type TestVenue } from '../helpers/venue.ts';

let chain: LocalChain;
let v: TestVenue;
let dir: string;
let ledger: PaymentLedger;
let serviceDb: SqlDb;
let accounts: AccountStore;
let server: Server;
let url: string;
let client: Client;
const payTo = privateKeyToAccount(generatePrivateKey()).address;
let trader: string;
let conditionId: string;

beforeAll(async () => {
  [chain, v] = await Promise.all([startLocalChain(), makeVenue({ wallets: 1500, days: 30, seed: 9 })]);
  const asOf = new Date('2026-10-31T23:59:59Z');
  await fullBuild(duckRunner(v.conn), asOf);
  const [w] = await v.rows<{ address: string }>(`SELECT w.address FROM a_board b JOIN wallets w USING (wallet_id) WHERE b.preset = 'top-pnl' ORDER BY b.rank LIMIT 1`);
  trader = w!.address;
  const [m] = await v.rows<{ condition_id: string }>(`SELECT condition_id FROM markets ORDER BY market_id LIMIT 1`);
  conditionId = m!.condition_id;
  dir = await mkdtemp(join(tmpdir(), 'mcp-paid-'));
  // one connection for both stores on the file (data/sql/db.ts)
  serviceDb = await openServiceDb(join(dir, 'service.sqlite'));
  ledger = await PaymentLedger.open(serviceDb);
  accounts = await AccountStore.open(serviceDb);
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
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  client = new Client({ name: 'paying-agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  // as agents do: list first, so callTool checks every structuredContent against the listed output schemas
  await client.listTools();
}, 600_000);

afterAll(async () => {
  await client?.close();
  await new Promise((r) => (server ? server.close(r) : r(null)));
  await serviceDb?.close();
  await chain?.stop();
  await v?.cleanup();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const text = (r: CallToolResult) => JSON.parse((r.content[0] as { text: string }).text) as Record<string, unknown>;

/** An unpaid answer as the transport shapes it: isError, no structuredContent, the 402 body in the wrapper and in _meta. */
function expectTerms(r: CallToolResult): PaymentRequiredBody {
  expect(r.isError).toBe(true);
  expect(r.structuredContent).toBeUndefined();
  const wrapper = text(r)['x402/error'] as { code: number; message: string; data: PaymentRequiredBody };
  expect(wrapper.code).toBe(402);
  expect(wrapper.data.x402Version).toBe(1);
  expect(wrapper.message).toBe(wrapper.data.error);
  expect(r._meta?.['x402/error']).toEqual(wrapper.data);
  expect(paymentRequiredOf(r)).toEqual(wrapper.data);
  return wrapper.data;
}

const signed = async (payer: Parameters<typeof createPaymentHeader>[0], req: PaymentRequiredBody['accepts'][number]) =>
  JSON.parse(Buffer.from(await createPaymentHeader(payer, 1, req as unknown as X402Requirements), 'base64').toString('utf8')) as Record<string, unknown>;

describe('every paid tool through client.callTool', () => {
  const calls: { key: string; tool: ToolName; args: () => Record<string, unknown> }[] = [
    { key: 'rank_traders', tool: 'rank_traders', args: () => ({ preset: 'sharp-forecasters', limit: 2 }) },
    { key: 'rank_traders.custom', tool: 'rank_traders', args: () => ({ config: { weights: { volume: 1 } }, limit: 2 }) },
    { key: 'get_trader', tool: 'get_trader', args: () => ({ trader, sections: ['profile', 'playbook'] }) },
    { key: 'get_trader_positions', tool: 'get_trader_positions', args: () => ({ trader, limit: 3 }) },
    { key: 'get_market', tool: 'get_market', args: () => ({ condition_id: conditionId }) },
    { key: 'get_smart_money_signals', tool: 'get_smart_money_signals', args: () => ({ limit: 3 }) },
  ];

  it('covers every paid price key', () => {
    expect(new Set(calls.map((c) => c.key))).toEqual(new Set([...PAID_PRICE_KEYS, 'rank_traders.custom']));
  });

  for (const c of calls) {
    it(`${c.key}: terms, then paid with the receipt, charged exactly its price`, async () => {
      const payer = (await chain.newPayer(1_000_000n)).account;
      const terms = expectTerms((await client.callTool({ name: c.tool, arguments: c.args() })) as CallToolResult);
      const req = terms.accepts[0]!;
      expect(req.maxAmountRequired).toBe(usdToAtomic(TOOL_PRICES[c.key]!));
      expect(req.payTo).toBe(getAddress(payTo));
      expect(req.resource).toBe(`mcp://tool/${c.key}`);
      expect(terms.error).toMatch(/_meta\["x402\/payment"\]/);

      const before = { payer: await chain.balanceOf(payer.address), payee: await chain.balanceOf(payTo) };
      const paid = (await client.callTool({ name: c.tool, arguments: c.args(), _meta: { 'x402/payment': await signed(payer, req) } })) as CallToolResult;
      expect(paid.isError, JSON.stringify(paid.content)).toBeFalsy();
      toolSpec(c.tool).output.parse(paid.structuredContent);
      expect(text(paid)).toEqual(paid.structuredContent);
      const receipt = paid._meta?.['x402/payment-response'] as SettleReceipt;
      expect(receipt).toMatchObject({ success: true, network: 'base-sepolia', payer: getAddress(payer.address) });
      expect(receipt.transaction).toMatch(/^0x[0-9a-f]{64}$/);
      const price = BigInt(req.maxAmountRequired);
      expect(await chain.balanceOf(payer.address)).toBe(before.payer - price);
      expect(await chain.balanceOf(payTo)).toBe(before.payee + price);
    }, 60_000);
  }
});

it('rank_traders with no arguments ranks the flagship preset, and its terms are the preset price', async () => {
  const spec = (await client.listTools()).tools.find((t) => t.name === 'rank_traders')!;
  expect(spec.description).toMatch(/no arguments.*sharp-forecasters/);
  expect((spec.inputSchema.required ?? []) as string[]).toEqual([]);
  const payer = (await chain.newPayer(100_000n)).account;
  const terms = expectTerms((await client.callTool({ name: 'rank_traders', arguments: {} })) as CallToolResult);
  expect(terms.accepts[0]!.maxAmountRequired).toBe(usdToAtomic(TOOL_PRICES.rank_traders!));
  const paid = (await client.callTool({ name: 'rank_traders', arguments: {}, _meta: { 'x402/payment': await signed(payer, terms.accepts[0]!) } })) as CallToolResult;
  expect(paid.isError).toBeFalsy();
  const out = paid.structuredContent as { kind: string; preset: string; rows: { proxy_wallet: string }[] };
  expect(out).toMatchObject({ kind: 'preset', preset: 'sharp-forecasters' });
  const want = await v.rows<{ address: string }>(`SELECT w.address FROM a_board b JOIN wallets w USING (wallet_id) WHERE b.preset = 'sharp-forecasters' ORDER BY b.rank LIMIT 10`);
  expect(out.rows.map((r) => r.proxy_wallet)).toEqual(want.map((w) => getAddress(w.address)));
}, 60_000);

it('a replayed payment and a payment of the wrong amount are refused through callTool, nothing charged', async () => {
  const payer = (await chain.newPayer(1_000_000n)).account;
  const args = { trader, sections: ['profile'] };
  const req = expectTerms((await client.callTool({ name: 'get_trader', arguments: args })) as CallToolResult).accepts[0]!;
  const payment = await signed(payer, req);
  expect(((await client.callTool({ name: 'get_trader', arguments: args, _meta: { 'x402/payment': payment } })) as CallToolResult).isError).toBeFalsy();
  const after = await chain.balanceOf(payTo);
  const replay = expectTerms((await client.callTool({ name: 'get_trader', arguments: args, _meta: { 'x402/payment': payment } })) as CallToolResult);
  expect(replay.error).toMatch(/already used|nonce_used/);
  // signed for the preset price but spent on the pricier custom ranking
  const cheap = await signed(payer, { ...req, maxAmountRequired: usdToAtomic(TOOL_PRICES.rank_traders!) });
  const wrong = expectTerms((await client.callTool({ name: 'rank_traders', arguments: { config: { weights: { volume: 1 } } }, _meta: { 'x402/payment': cheap } })) as CallToolResult);
  expect(wrong.error).toMatch(/wrong amount/);
  // the same payment as the base64 X-PAYMENT string some clients send: decoded, and refused as a replay
  const asHeader = Buffer.from(JSON.stringify(payment)).toString('base64');
  expect(expectTerms((await client.callTool({ name: 'get_trader', arguments: args, _meta: { 'x402/payment': asHeader } })) as CallToolResult).error).toMatch(/already used|nonce_used/);
  expect(await chain.balanceOf(payTo)).toBe(after);
  // free tools need no payment
  expect(((await client.callTool({ name: 'list_presets', arguments: {} })) as CallToolResult).isError).toBeFalsy();
}, 60_000);

it('callToolPaying and npm run mcp:pay do the whole round trip', async () => {
  const payer = (await chain.newPayer(1_000_000n)).account;
  const r = await callToolPaying(client, payer, 'get_market', { condition_id: conditionId, sections: ['teaser'] }, 100_000n);
  expect(r.result.isError).toBeFalsy();
  expect(r.receipt?.success).toBe(true);
  expect(r.required?.accepts[0]?.maxAmountRequired).toBe(usdToAtomic(TOOL_PRICES.get_market!));
  await expect(callToolPaying(client, payer, 'get_market', { condition_id: conditionId }, 1000n)).rejects.toThrow(/above the cap/);

  const { privateKey: key } = await chain.newPayer(1_000_000n);
  const before = await chain.balanceOf(payTo);
  const { stdout, stderr } = await promisify(execFile)(join(process.cwd(), 'node_modules', '.bin', 'tsx'), ['scripts/mcp-pay.ts', url, 'rank_traders', '{"limit":2}', '--key', key]);
  expect(stderr).toMatch(/^ok in \d+ ms; paid 0\.01 USDC; receipt/);
  expect(JSON.parse(stdout)).toMatchObject({ kind: 'preset', preset: 'sharp-forecasters' });
  expect(await chain.balanceOf(payTo)).toBe(before + BigInt(usdToAtomic(TOOL_PRICES.rank_traders!)));
}, 60_000);
