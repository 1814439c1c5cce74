/**
 * The MCP server (mcp/server.ts, mcp/tools.ts) through the SDK's own Client, on a generated venue after a full
 * analytics build: in process (InMemoryTransport pair, every tool free) and over Streamable HTTP on loopback (API
 * keys of a real AccountStore; keyless calls of paid tools through a small in-test ToolPayments). Every structured
 * result is checked against the tool's own output schema, its text twin, the size cap, and independent SQL for
 * ranks and trader values; errors are isError results with a clear message; HTTP auth and method rules.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import express from 'express';
import { getAddress } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fullBuild } from '../../core/analytics/build.ts';
import type { ColumnarRunner, QueryRunner } from '../../core/query.ts';
import { PRESETS } from '../../core/rankings.ts';
import { AccountStore } from '../../data/account-store.ts';
import { openDuckDB } from '../../data/duckdb.ts';
import { duckRunner } from '../../data/runner.ts';
import { attachVenue } from '../../data/venue.ts';
import { createMcpServer, mcpRouter, openAccess, type McpPaidOutcome, type ToolPayments } from '../../mcp/server.ts';
import { DEFAULT_TOOL_PRICES, MAX_RESULT_CHARS, TOOL_NAMES, mcpToolCatalog, toolSpec, type ToolName } from '../../mcp/tools.ts';
import { makeVenue, type TestVenue } from '../helpers/venue.ts';

const BUILD_AS_OF = new Date('2026-10-31T23:59:59Z');
const NOW = new Date('2026-11-01T00:00:00Z');
const TID_KEY = 'mcp-test-tid-key-0123456789abcdef';
const PRICES = { ...DEFAULT_TOOL_PRICES };

let v: TestVenue;
let db: ColumnarRunner;
let local: Client;
let dir: string;
let accounts: AccountStore;
let server: Server;
let base: string;
let freeKey: string;
let proKey: string;

/** What the in-test paywall saw and did. */
const charged: { tool: string; resource: string; payment: unknown }[] = [];
const requested: { tool: string; resource: string }[] = [];
const RECEIPT = { success: true, transaction: '0x' + 'ab'.repeat(32), network: 'base-sepolia', payer: '0x' + '11'.repeat(20) };
const FAILED_RECEIPT = { success: false, transaction: '', network: 'base-sepolia', payer: '0x' + '11'.repeat(20), errorReason: 'insufficient_funds' };

/** payment_required without a payment object; paid with a fake receipt when one is given (settled after compute). */
const payments: ToolPayments = {
  async run<T>(tool: string, resource: string, payment: unknown, compute: () => Promise<T>): Promise<McpPaidOutcome<T>> {
    const accepts = [
      {
        scheme: 'exact' as const,
        network: 'base-sepolia',
        maxAmountRequired: String(Math.round(Number(PRICES[tool as keyof typeof PRICES]) * 1e6)),
        resource,
        description: tool,
        mimeType: 'application/json',
        payTo: '0x' + '22'.repeat(20),
        maxTimeoutSeconds: 60,
        asset: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
        extra: { name: 'USDC', version: '2' },
      },
    ];
    if (payment === undefined || payment === null) {
      requested.push({ tool, resource });
      return { kind: 'payment_required', body: { x402Version: 1, error: 'X-PAYMENT header is required', accepts } };
    }
    let value: T;
    try {
      value = await compute();
    } catch (error) {
      return { kind: 'error', error };
    }
    if ((payment as { payload?: { signature?: string } }).payload?.signature === '0xbad') {
      return { kind: 'payment_required', body: { x402Version: 1, error: 'settlement failed: insufficient_funds', accepts }, receipt: FAILED_RECEIPT };
    }
    charged.push({ tool, resource, payment });
    return { kind: 'paid', value, receipt: RECEIPT };
  },
};

const PAYMENT = {
  x402Version: 1,
  scheme: 'exact',
  network: 'base-sepolia',
  payload: {
    signature: '0x' + 'cd'.repeat(65),
    authorization: { from: '0x' + '11'.repeat(20), to: '0x' + '22'.repeat(20), value: '10000', validAfter: '0', validBefore: '9999999999', nonce: '0x' + '33'.repeat(32) },
  },
};

async function httpClient(key: string | null): Promise<Client> {
  const c = new Client({ name: 'mcp-test-http', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), key ? { requestInit: { headers: { authorization: `Bearer ${key}` } } } : {});
  await c.connect(transport);
  return c;
}

/**
 * A successful call: not an error, its structured content matches the tool's own output schema (parsed here again,
 * beyond the SDK's checks), the text content is the same JSON, and the answer is under the size cap.
 */
/** A payment-required result as the x402 MCP transport shapes it: isError, the 402 body in the x402/error wrapper. */
function terms(r: CallToolResult): { x402Version: number; error: string; accepts: { maxAmountRequired: string; resource: string }[] } {
  expect(r.isError).toBe(true);
  expect(r.structuredContent).toBeUndefined();
  const w = JSON.parse((r.content[0] as { text: string }).text)['x402/error'];
  expect(w.code).toBe(402);
  expect(w.data.x402Version).toBe(1);
  expect(r._meta?.['x402/error']).toEqual(w.data);
  return w.data;
}

async function ok<T = Record<string, unknown>>(c: Client, name: ToolName, args: Record<string, unknown> = {}): Promise<T> {
  const r = (await c.callTool({ name, arguments: args })) as CallToolResult;
  if (r.isError) throw new Error(`${name} failed: ${JSON.stringify(r.content)}`);
  expect(r.structuredContent, name).toBeDefined();
  toolSpec(name).output.parse(r.structuredContent);
  const text = r.content[0];
  expect(text?.type).toBe('text');
  expect(JSON.parse((text as { text: string }).text)).toEqual(r.structuredContent);
  expect(JSON.stringify(r.structuredContent).length, `${name} size`).toBeLessThanOrEqual(MAX_RESULT_CHARS);
  return r.structuredContent as T;
}

/** An error call: isError, no structured content, and the {error, message} body as text. */
async function fails(c: Client, name: ToolName, args: Record<string, unknown>): Promise<{ error?: string; message: string }> {
  const r = (await c.callTool({ name, arguments: args })) as CallToolResult;
  expect(r.isError, `${name} ${JSON.stringify(args)} should fail`).toBe(true);
  expect(r.structuredContent).toBeUndefined();
  const text = (r.content[0] as { text: string }).text;
  try {
    const body = JSON.parse(text) as { error: string; message: string };
    expect(typeof body.message).toBe('string');
    return body;
  } catch {
    return { message: text }; // the SDK's own input-validation message
  }
}

beforeAll(async () => {
  v = await makeVenue({ wallets: 3000, days: 30, seed: 3 });
  db = duckRunner(v.conn);
  await fullBuild(db, BUILD_AS_OF);

  const s = createMcpServer({ db, now: () => NOW, tidKey: TID_KEY, prices: PRICES, authorize: openAccess });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await s.connect(serverSide);
  local = new Client({ name: 'mcp-test', version: '1.0.0' });
  await local.connect(clientSide);

  dir = await mkdtemp(join(tmpdir(), 'mcp-test-'));
  accounts = await AccountStore.open(join(dir, 'service.sqlite'));
  const mint = async (email: string, plan: 'free' | 'pro') => {
    const u = await accounts.userForEmail(email, Date.now());
    if (plan !== 'free') await accounts.setPlan(u.user_id, plan, Date.now(), 'test');
    return (await accounts.mintApiKey(u.user_id, 'mcp', Date.now())).key;
  };
  freeKey = await mint('free@example.com', 'free');
  proKey = await mint('pro@example.com', 'pro');
  const app = express();
  app.use(express.json({ limit: '256kb' }));
  app.use('/mcp', mcpRouter({ db, now: () => NOW, tidKey: TID_KEY, prices: PRICES, accounts, payments }));
  server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}, 600_000);

afterAll(async () => {
  await local?.close();
  await new Promise((r) => (server ? server.close(r) : r(null)));
  accounts?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
  await v?.cleanup();
});

// ---------------------------------------------------------------------------------------------------------------

describe('catalog', () => {
  it('lists the seven tools with read-only annotations, object schemas and a cost sentence', async () => {
    const { tools } = await local.listTools();
    expect(tools.map((t) => t.name)).toEqual([...TOOL_NAMES]);
    for (const t of tools) {
      expect(t.annotations, t.name).toMatchObject({ readOnlyHint: true, idempotentHint: true, openWorldHint: false, destructiveHint: false });
      expect(t.inputSchema.type, t.name).toBe('object');
      expect(t.outputSchema?.type, t.name).toBe('object');
      expect(t.description, t.name).toMatch(/Cost: /);
      expect(t.title, t.name).toBeTruthy();
    }
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    expect(byName.list_presets!.description).toContain('Cost: free.');
    expect(byName.rank_traders!.description).toContain('$0.01 per call with a preset, $0.05 with a custom config');
    expect(byName.get_market!.description).toContain('$0.005 per call');
    // the catalog for docs matches
    const cat = mcpToolCatalog(PRICES);
    expect(cat.map((c) => c.name)).toEqual([...TOOL_NAMES]);
    expect(cat.find((c) => c.name === 'search')!.price_usd).toBeNull();
    expect(cat.find((c) => c.name === 'get_trader')!.price_usd).toBe('0.01');
    expect(cat.find((c) => c.name === 'rank_traders')!.price_usd_custom).toBe('0.05');
  });

  it('refuses to start without a price for a paid tool', () => {
    const { get_trader: _drop, ...rest } = PRICES;
    expect(() => createMcpServer({ db, now: () => NOW, prices: rest, authorize: openAccess })).toThrow(/no price for the paid MCP tool get_trader/);
  });
});

describe('tools in process', () => {
  it('list_presets: every preset and the metric catalogue', async () => {
    const r = await ok<{ presets: { slug: string }[]; metrics: { id: string }[] }>(local, 'list_presets');
    expect(r.presets.map((p) => p.slug)).toEqual(PRESETS.map((p) => p.slug));
    expect(r.metrics.map((m) => m.id)).toContain('calibration');
  });

  it('rank_traders with a preset: the stored board order, paged by cursor, values from the build', async () => {
    type Out = { rows: { rank: number; proxy_wallet: string; realized_pnl: number; win_rate_pct: number | null }[]; next_cursor: string | null; total_rows: number; offset: number; as_of: string };
    const p1 = await ok<Out>(local, 'rank_traders', { preset: 'top-pnl', limit: 10 });
    const board = await v.rows<{ rank: number; address: string; wallet_id: number }>(
      `SELECT b.rank, w.address, b.wallet_id FROM a_board b JOIN wallets w USING (wallet_id) WHERE b.preset = 'top-pnl' ORDER BY b.rank LIMIT 20`,
    );
    const [{ n }] = (await v.rows<{ n: number }>(`SELECT count(*)::INTEGER AS n FROM a_board WHERE preset = 'top-pnl'`)) as [{ n: number }];
    expect(p1.total_rows).toBe(n);
    expect(p1.as_of).toBe(BUILD_AS_OF.toISOString());
    expect(p1.rows.map((r) => [r.rank, r.proxy_wallet])).toEqual(board.slice(0, 10).map((b) => [b.rank, getAddress(b.address)]));
    const [m] = await v.rows<{ realized_pnl: number; win_rate_pct: number | null }>(`SELECT realized_pnl, win_rate_pct FROM a_wallet_metrics WHERE wallet_id = ${board[0]!.wallet_id}`);
    expect(p1.rows[0]!.realized_pnl).toBeCloseTo(m!.realized_pnl, 6);
    expect(p1.rows[0]!.win_rate_pct).toEqual(m!.win_rate_pct === null ? null : expect.closeTo(m!.win_rate_pct, 6));
    expect(p1.next_cursor).toEqual(expect.any(String));
    const p2 = await ok<Out>(local, 'rank_traders', { preset: 'top-pnl', limit: 10, cursor: p1.next_cursor });
    expect(p2.offset).toBe(10);
    expect(p2.rows.map((r) => [r.rank, r.proxy_wallet])).toEqual(board.slice(10, 20).map((b) => [b.rank, getAddress(b.address)]));
    // a cursor is bound to its ranking
    const wrong = await fails(local, 'rank_traders', { preset: 'whales', limit: 10, cursor: p1.next_cursor });
    expect(wrong.message).toMatch(/another ranking/);
  });

  it('rank_traders with a custom config: scored at request time, in the order of independent SQL', async () => {
    type Out = { kind: string; rows: { proxy_wallet: string; composite_score: number }[]; total_rows: number; normalized_weights: Record<string, number>; gates: { condition: string }[] };
    const r = await ok<Out>(local, 'rank_traders', { config: { weights: { realized_pnl: 1 }, gates: [{ field: 'trade_count', op: 'gte', value: 5 }] }, limit: 8 });
    expect(r.kind).toBe('custom');
    expect(r.normalized_weights).toEqual({ realized_pnl: 1 });
    expect(r.gates[0]!.condition).toBe('trade_count >= 5');
    const want = await v.rows<{ address: string }>(
      `SELECT w.address FROM a_wallet_metrics m JOIN wallets w USING (wallet_id)
       WHERE m.trade_count >= 5 AND m.realized_pnl IS NOT NULL ORDER BY m.realized_pnl DESC, m.wallet_id LIMIT 8`,
    );
    expect(r.rows.map((x) => x.proxy_wallet)).toEqual(want.map((w) => getAddress(w.address)));
    const [{ n }] = (await v.rows<{ n: number }>(`SELECT count(*)::INTEGER AS n FROM a_wallet_metrics WHERE trade_count >= 5 AND realized_pnl IS NOT NULL`)) as [{ n: number }];
    expect(r.total_rows).toBe(n);
    for (let i = 1; i < r.rows.length; i++) expect(r.rows[i]!.composite_score).toBeLessThanOrEqual(r.rows[i - 1]!.composite_score);
  });

  it('rank_traders errors: unknown preset, both forms, bad config, limit over the cap; no arguments is the flagship preset', async () => {
    const unknown = await fails(local, 'rank_traders', { preset: 'nope' });
    expect(unknown.message).toMatch(/preset/);
    expect(unknown.message).toMatch(/sharp-forecasters/);
    expect((await fails(local, 'rank_traders', { preset: 'top-pnl', config: { weights: { volume: 1 } } })).message).toMatch(/not both/);
    // neither: the flagship board, the same as naming it (its cursor continues either call)
    const bare = await ok<{ preset: string; rows: unknown[]; next_cursor: string }>(local, 'rank_traders', {});
    const named = await ok<{ preset: string; rows: unknown[]; next_cursor: string }>(local, 'rank_traders', { preset: 'sharp-forecasters' });
    expect(bare).toEqual(named);
    expect(bare.preset).toBe('sharp-forecasters');
    expect((await fails(local, 'rank_traders', { config: { weights: { volume: 0 } } })).message).toMatch(/at least one metric needs a weight/);
    expect((await fails(local, 'rank_traders', { preset: 'top-pnl', limit: 26 })).message).toMatch(/limit/);
  });

  it('get_trader: every section, checked against the build and the core', async () => {
    const [w] = await v.rows<{ wallet_id: number; address: string; realized_pnl: number; trade_count: number; n_resolved_markets: number }>(
      `SELECT m.wallet_id, w.address, m.realized_pnl, m.trade_count, m.n_resolved_markets FROM a_wallet_metrics m JOIN wallets w USING (wallet_id)
       WHERE m.calibration_ranked ORDER BY m.trade_count DESC, m.wallet_id LIMIT 1`,
    );
    type Out = {
      trader: string;
      sections: string[];
      profile: { metrics: { realized_pnl: number; trade_count: number; n_resolved_markets: number; calibration_ranked: boolean } };
      calibration: { proxy_wallet: string; bins: unknown[]; n_markets: number };
      playbook: { rules: string[] };
      copy_fitness: { verdict: { overall: number } };
    };
    const r = await ok<Out>(local, 'get_trader', { trader: w!.address, sections: ['profile', 'calibration', 'playbook', 'copy_fitness'] });
    expect(r.trader).toBe(getAddress(w!.address));
    expect(r.sections).toEqual(['profile', 'calibration', 'playbook', 'copy_fitness']);
    expect(r.profile.metrics.realized_pnl).toBeCloseTo(w!.realized_pnl, 6);
    expect(r.profile.metrics.trade_count).toBe(w!.trade_count);
    expect(r.profile.metrics.calibration_ranked).toBe(true);
    expect(r.calibration.proxy_wallet).toBe(getAddress(w!.address));
    expect(r.calibration.bins).toHaveLength(10);
    expect(r.calibration.n_markets).toBe(w!.n_resolved_markets);
    expect(r.playbook.rules.length).toBeGreaterThanOrEqual(3);
    // the default sections, and a lowercase / uppercase address is the same trader
    const d = await ok<{ trader: string; sections: string[]; profile?: unknown; playbook?: unknown; calibration?: unknown }>(local, 'get_trader', { trader: w!.address.toUpperCase().replace('0X', '0x') });
    expect(d.trader).toBe(getAddress(w!.address));
    expect(d.sections).toEqual(['profile', 'playbook']);
    expect(d.calibration).toBeUndefined();
  });

  it('get_trader errors: malformed address, unknown trader, bad scope', async () => {
    const bad = await fails(local, 'get_trader', { trader: '0x1234' });
    expect(bad.message).toMatch(/trader must be a proxy wallet \(0x \+ 40 hex/);
    const unknown = await fails(local, 'get_trader', { trader: '0x' + '0'.repeat(39) + '1' });
    expect(unknown.error).toBe('not_found');
    expect(unknown.message).toMatch(/unknown trader 0x0{39}1/);
    expect((await fails(local, 'get_trader', { trader: '0x' + '0'.repeat(39) + '1', sections: [] })).message).toMatch(/sections/);
    const [w] = await v.rows<{ address: string }>(`SELECT address FROM wallets ORDER BY wallet_id LIMIT 1`);
    expect((await fails(local, 'get_trader', { trader: w!.address, sections: ['calibration'], calibration_scope: 'yesterday' })).message).toMatch(/scope/);
  });

  it('get_trader_positions: the busiest wallet, capped by size, every position once across pages', async () => {
    const [w] = await v.rows<{ wallet_id: number; address: string; n: number }>(
      `SELECT p.wallet_id, w.address, count(*)::INTEGER AS n FROM a_positions p JOIN wallets w USING (wallet_id) GROUP BY ALL ORDER BY n DESC, p.wallet_id LIMIT 1`,
    );
    type Out = { trader: string; total_rows: number; rows: { condition_id: string; outcome: string; status: string }[]; next_cursor: string | null; truncated: { requested: number; returned: number } | null };
    const first = await ok<Out>(local, 'get_trader_positions', { trader: w!.address, limit: 100 });
    expect(first.trader).toBe(getAddress(w!.address));
    // the build is one second before "now" and the venue ends then: the positions as of now are the build's
    expect(first.total_rows).toBe(w!.n);
    expect(w!.n).toBeGreaterThan(100);
    // 100 full position rows do not fit the cap: fewer come back, with the reason
    expect(first.rows.length).toBeLessThan(100);
    expect(first.truncated).toMatchObject({ requested: 100, returned: first.rows.length });
    const seen = new Set<string>();
    let page: Out = first;
    for (let i = 0; i < 50; i++) {
      for (const r of page.rows) {
        const k = `${r.condition_id}:${r.outcome}`;
        expect(seen.has(k)).toBe(false);
        seen.add(k);
      }
      if (!page.next_cursor) break;
      page = await ok<Out>(local, 'get_trader_positions', { trader: w!.address, limit: 100, cursor: page.next_cursor });
    }
    expect(seen.size).toBe(w!.n);
    const won = await ok<Out>(local, 'get_trader_positions', { trader: w!.address, status: ['WON'], limit: 5 });
    expect(won.rows.every((r) => r.status === 'WON')).toBe(true);
    expect(won.truncated).toBeNull();
    expect((await fails(local, 'get_trader_positions', { trader: w!.address, limit: 101 })).message).toMatch(/limit/);
    expect((await fails(local, 'get_trader_positions', { trader: w!.address, cursor: 'garbage' })).message).toMatch(/invalid cursor/);
  });

  it('get_market: teaser, flow and consensus of the busiest market, against SQL', async () => {
    const [m] = await v.rows<{ market_id: number; condition_id: string }>(
      `SELECT f.market_id, m.condition_id FROM fills f JOIN markets m USING (market_id) WHERE f.ts > TIMESTAMP '2026-10-31 00:00:00' GROUP BY ALL ORDER BY count(*) DESC, f.market_id LIMIT 1`,
    );
    type Out = {
      condition_id: string;
      as_of: string;
      teaser: { condition_id: string; last_24h_fills: number; positioner_count: number; consensus_latest: { service_consensus_yes: number | null; n_positioners: number } };
      flow: { window_hours: number; window_fills: number; totals: { n_fills: number } };
      consensus: { service_consensus_yes: number | null; n_positioners: number; top_holders: unknown[] };
    };
    const r = await ok<Out>(local, 'get_market', { condition_id: m!.condition_id.toUpperCase().replace('0X', '0x') });
    expect(r.condition_id).toBe(m!.condition_id);
    expect(r.as_of).toBe(NOW.toISOString());
    expect(r.teaser.condition_id).toBe(m!.condition_id);
    const [f] = await v.rows<{ n: number }>(`SELECT count(*)::INTEGER AS n FROM fills WHERE market_id = ${m!.market_id} AND ts > TIMESTAMP '2026-10-31 00:00:00' AND ts <= TIMESTAMP '2026-11-01 00:00:00'`);
    expect(r.teaser.last_24h_fills).toBe(f!.n);
    expect(r.flow.window_hours).toBe(24);
    expect(r.flow.window_fills).toBe(f!.n);
    expect(r.flow.totals.n_fills).toBe(2 * f!.n); // a taker leg and a maker leg per fill
    expect(r.consensus.n_positioners).toBe(r.teaser.consensus_latest.n_positioners);
    expect(r.consensus.service_consensus_yes).toBe(r.teaser.consensus_latest.service_consensus_yes);
    expect(r.consensus.top_holders.length).toBeLessThanOrEqual(10);
    const flowOnly = await ok<{ sections: string[]; teaser?: unknown; flow: { window_hours: number } }>(local, 'get_market', { condition_id: m!.condition_id, sections: ['flow'], window_hours: 6 });
    expect(flowOnly.sections).toEqual(['flow']);
    expect(flowOnly.teaser).toBeUndefined();
    expect(flowOnly.flow.window_hours).toBe(6);
    expect((await fails(local, 'get_market', { condition_id: '0x12' })).message).toMatch(/condition_id must be 0x followed by 64 hex/);
    const unknown = await fails(local, 'get_market', { condition_id: '0x' + 'f'.repeat(64) });
    expect(unknown.error).toBe('not_found');
  });

  it('get_smart_money_signals: the same fills as independent SQL, newest first, capped and paged', async () => {
    const want = await v.rows<{ tx_hash: string; log_index: number }>(
      `SELECT f.tx_hash, f.log_index FROM fills f JOIN a_wallet_metrics a ON a.wallet_id = f.taker_id
       WHERE f.size_usdc >= 5000 AND len(a.smart_money_tags) > 0 AND f.ts > TIMESTAMP '2026-10-31 00:00:00' AND f.ts <= TIMESTAMP '2026-11-01 00:00:00'
       ORDER BY f.ts DESC, f.tx_hash DESC, f.log_index DESC`,
    );
    expect(want.length).toBeGreaterThan(10);
    type Out = { signals: { tx_hash: string; log_index: number; size_usdc: number; signal_type: string; smart_money_tags: string[] }[]; next_cursor: string | null; truncated: unknown; labels_as_of: string };
    const got: { tx_hash: string; log_index: number }[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < 50; i++) {
      const r: Out = await ok<Out>(local, 'get_smart_money_signals', { limit: 7, ...(cursor ? { cursor } : {}) });
      expect(r.labels_as_of).toBe(BUILD_AS_OF.toISOString());
      for (const s of r.signals) {
        expect(s.size_usdc).toBeGreaterThanOrEqual(5000);
        expect(s.smart_money_tags.length).toBeGreaterThan(0);
      }
      got.push(...r.signals.map((s) => ({ tx_hash: s.tx_hash, log_index: s.log_index })));
      if (!r.next_cursor) break;
      cursor = r.next_cursor;
    }
    expect(got).toEqual(want.map((w) => ({ tx_hash: w.tx_hash, log_index: w.log_index })));
    const exits = await ok<Out>(local, 'get_smart_money_signals', { signal_types: ['exit'], since_hours: 168, limit: 50 });
    expect(exits.signals.every((s) => s.signal_type === 'exit')).toBe(true);
    expect((await fails(local, 'get_smart_money_signals', { since_hours: 169 })).message).toMatch(/since_hours/);
    expect((await fails(local, 'get_smart_money_signals', { limit: 51 })).message).toMatch(/limit/);
  });

  it('search: traders come back by tid only, and the tid works in get_trader (masked)', async () => {
    const [w] = await v.rows<{ address: string; realized_pnl: number }>(
      `SELECT w.address, m.realized_pnl FROM a_wallet_metrics m JOIN wallets w USING (wallet_id) ORDER BY m.trade_count DESC, m.wallet_id LIMIT 1`,
    );
    const s = await ok<{ kind: string; results: { type: string; tid: string }[]; query: string }>(local, 'search', { q: w!.address });
    expect(s.kind).toBe('address');
    expect(JSON.stringify(s)).not.toContain(w!.address.slice(2));
    const tid = s.results[0]!.tid;
    expect(tid).toMatch(/^t_/);
    const t = await ok<{ trader: string; calibration: { proxy_wallet: string }; profile: { metrics: { realized_pnl: number } } }>(local, 'get_trader', { trader: tid, sections: ['profile', 'calibration'] });
    expect(t.trader).toBe(tid);
    expect(t.calibration.proxy_wallet).toBe(tid);
    expect(t.profile.metrics.realized_pnl).toBeCloseTo(w!.realized_pnl, 6);
    expect(JSON.stringify(t)).not.toContain(w!.address.slice(2));
    const text = await ok<{ kind: string; results: { type: string }[] }>(local, 'search', { q: 'will', limit: 25 });
    expect(text.results.length).toBeLessThanOrEqual(25);
    expect((await fails(local, 'search', { q: '' })).message).toMatch(/q/);
    expect((await fails(local, 'get_trader', { trader: 't_' + 'A'.repeat(22) })).error).toBe('not_found');
  });
});

// ---------------------------------------------------------------------------------------------------------------

describe('Streamable HTTP', () => {
  it('with a Pro key every tool is free, copy_fitness included', async () => {
    const c = await httpClient(proKey);
    try {
      const { tools } = await c.listTools();
      expect(tools).toHaveLength(TOOL_NAMES.length);
      const board = await ok<{ rows: { proxy_wallet: string }[] }>(c, 'rank_traders', { preset: 'sharp-forecasters', limit: 3 });
      const want = await v.rows<{ address: string }>(`SELECT w.address FROM a_board b JOIN wallets w USING (wallet_id) WHERE b.preset = 'sharp-forecasters' ORDER BY b.rank LIMIT 3`);
      expect(board.rows.map((r) => r.proxy_wallet)).toEqual(want.map((w) => getAddress(w.address)));
      const t = await ok<{ copy_fitness: unknown }>(c, 'get_trader', { trader: want[0]!.address, sections: ['copy_fitness'] });
      expect(t.copy_fitness).toBeDefined();
      expect(requested).toHaveLength(0);
      expect(charged).toHaveLength(0);
    } finally {
      await c.close();
    }
  });

  it('with a Free key: free within the plan, but plan features are refused', async () => {
    const c = await httpClient(freeKey);
    try {
      const [w] = await v.rows<{ address: string }>(`SELECT w.address FROM a_board b JOIN wallets w USING (wallet_id) WHERE b.preset = 'top-pnl' ORDER BY b.rank LIMIT 1`);
      await ok(c, 'get_trader', { trader: w!.address, sections: ['profile'] });
      const denied = await fails(c, 'get_trader', { trader: w!.address, sections: ['copy_fitness'] });
      expect(denied.error).toBe('plan_required');
      expect(denied.message).toMatch(/metrics_full/);
      expect((await fails(c, 'rank_traders', { preset: 'top-pnl', overrides: { extra_metrics: ['sharpe'] } })).error).toBe('plan_required');
      expect(charged).toHaveLength(0);
    } finally {
      await c.close();
    }
  });

  it('without a key: free tools run; a paid tool answers the 402 body; a payment in _meta buys the result and its receipt', async () => {
    const c = await httpClient(null);
    try {
      await ok(c, 'list_presets');
      await ok(c, 'search', { q: 'will' });
      // as agents do: list first, so callTool checks every structured result against the output schemas
      await c.listTools();
      const unpaid = (await c.callTool({ name: 'rank_traders', arguments: { preset: 'top-pnl', limit: 3 } })) as CallToolResult;
      const body = terms(unpaid);
      expect(body.error).toEqual(expect.any(String));
      expect(body.accepts[0]).toMatchObject({ maxAmountRequired: '10000', resource: 'mcp://tool/rank_traders' });
      expect(unpaid._meta?.['x402/payment-response']).toBeUndefined();
      // a custom config is priced under its own key
      const custom = (await c.callTool({ name: 'rank_traders', arguments: { config: { weights: { volume: 1 } }, limit: 3 } })) as CallToolResult;
      expect(terms(custom).accepts[0]).toMatchObject({ maxAmountRequired: '50000', resource: 'mcp://tool/rank_traders.custom' });

      // paid: the same call with a payment object in _meta
      const paid = (await c.callTool({ name: 'rank_traders', arguments: { preset: 'top-pnl', limit: 3 }, _meta: { 'x402/payment': PAYMENT } })) as CallToolResult;
      expect(paid.isError).toBeFalsy();
      expect(paid._meta?.['x402/payment-response']).toEqual(RECEIPT);
      toolSpec('rank_traders').output.parse(paid.structuredContent);
      expect((paid.structuredContent as { rows: unknown[] }).rows).toHaveLength(3);
      expect(charged.at(-1)).toEqual({ tool: 'rank_traders', resource: 'mcp://tool/rank_traders', payment: PAYMENT });

      // the tool's own error is never charged
      const before = charged.length;
      const err = (await c.callTool({ name: 'get_trader', arguments: { trader: '0x' + '0'.repeat(39) + '1' }, _meta: { 'x402/payment': PAYMENT } })) as CallToolResult;
      expect(err.isError).toBe(true);
      expect(JSON.parse((err.content[0] as { text: string }).text)).toMatchObject({ error: 'not_found' });
      expect(charged).toHaveLength(before);

      // a failed settlement withholds the output and carries the failed receipt
      const bad = { 'x402/payment': { ...PAYMENT, payload: { ...PAYMENT.payload, signature: '0xbad' } } };
      const failed = (await c.callTool({ name: 'get_market', arguments: { condition_id: '0x' + 'f'.repeat(64) }, _meta: bad })) as CallToolResult;
      expect(failed.isError).toBe(true);
      // (the unknown market is the tool's error: compute runs before settlement, so it comes back uncharged)
      expect(JSON.parse((failed.content[0] as { text: string }).text)).toMatchObject({ error: 'not_found' });
      const [m] = await v.rows<{ condition_id: string }>(`SELECT condition_id FROM markets ORDER BY market_id LIMIT 1`);
      const refused = (await c.callTool({ name: 'get_market', arguments: { condition_id: m!.condition_id, sections: ['teaser'] }, _meta: bad })) as CallToolResult;
      const refusedBody = terms(refused) as typeof body & { 'x402/payment-response'?: unknown };
      expect(refusedBody.error).toMatch(/settlement failed/);
      expect(refusedBody['x402/payment-response']).toEqual(FAILED_RECEIPT);
      expect(refused._meta?.['x402/payment-response']).toEqual(FAILED_RECEIPT);
    } finally {
      await c.close();
    }
  });

  it('an invalid or malformed key is an HTTP 401 with the error object', async () => {
    const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } };
    const post = (authorization: string) =>
      fetch(`${base}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization }, body: JSON.stringify(init) });
    const dead = await post('Bearer pk_live_' + 'a'.repeat(26));
    expect(dead.status).toBe(401);
    expect(dead.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect(await dead.json()).toEqual({ error: 'invalid_api_key', message: 'the API key is unknown or revoked' });
    const malformed = await post('Basic abc');
    expect(malformed.status).toBe(401);
    expect(((await malformed.json()) as { error: string }).error).toBe('invalid_authorization');
    await expect(httpClient('pk_live_' + 'b'.repeat(26))).rejects.toThrow();
    // a good key initializes
    const good = await post(`Bearer ${proKey}`);
    expect(good.status).toBe(200);
  });

  it('GET and DELETE are 405; a foreign Host header is refused (DNS rebinding)', async () => {
    for (const method of ['GET', 'DELETE']) {
      const r = await fetch(`${base}/mcp`, { method, headers: { accept: 'text/event-stream' } });
      expect(r.status, method).toBe(405);
      expect(r.headers.get('allow')).toBe('POST');
      expect(((await r.json()) as { error: { code: number } }).error.code).toBe(-32000);
    }
    const { port } = new URL(base);
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port: Number(port), path: '/mcp', method: 'POST', headers: { host: 'evil.example', 'content-type': 'application/json' } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }));
    });
    expect(status).toBe(403);
  });

  it('mounted without a body parser, the transport reads the body itself (a parse error is JSON-RPC -32700)', async () => {
    const bare = express().use('/mcp', mcpRouter({ db, now: () => NOW, tidKey: TID_KEY, prices: PRICES, accounts }));
    const s2: Server = bare.listen(0, '127.0.0.1');
    await new Promise((r) => s2.once('listening', r));
    const url = `http://127.0.0.1:${(s2.address() as AddressInfo).port}/mcp`;
    try {
      const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
      const bad = await fetch(url, { method: 'POST', headers, body: '{not json' });
      expect(bad.status).toBe(400);
      expect(((await bad.json()) as { error: { code: number } }).error.code).toBe(-32700);
      const c = new Client({ name: 'mcp-test-bare', version: '1.0.0' });
      await c.connect(new StreamableHTTPClientTransport(new URL(url)));
      try {
        await ok(c, 'list_presets');
        // no payments configured: a keyless paid call is refused with a pointer to API keys
        const r = (await c.callTool({ name: 'get_trader', arguments: { trader: '0x' + '1'.repeat(40) } })) as CallToolResult;
        expect(r.isError).toBe(true);
        expect(JSON.parse((r.content[0] as { text: string }).text)).toMatchObject({ error: 'auth_required', message: expect.stringMatching(/Authorization: Bearer/) });
      } finally {
        await c.close();
      }
    } finally {
      await new Promise((r) => s2.close(r));
    }
  });
});

// ---------------------------------------------------------------------------------------------------------------

describe('stdio', () => {
  it('serves a DuckDB file read-only to a client that spawns it; stdout carries JSON-RPC only', async () => {
    // the generated venue written to a database file with its analytics build, as main.ts leaves it
    const file = join(dir, 'venue.duckdb');
    const { instance, conn } = await openDuckDB({ path: file, threads: 2 });
    await attachVenue(conn, join(v.dir, 'venue'), { materialize: true });
    await fullBuild(duckRunner(conn), BUILD_AS_OF);
    conn.closeSync();
    instance.closeSync();

    const transport = new StdioClientTransport({ command: join(process.cwd(), 'node_modules', '.bin', 'tsx'), args: ['mcp/stdio.ts', '--db', file], stderr: 'pipe' });
    let stderr = '';
    transport.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    const errors: Error[] = [];
    const c = new Client({ name: 'mcp-test-stdio', version: '1.0.0' });
    c.onerror = (e) => errors.push(e);
    await c.connect(transport);
    try {
      expect((await c.listTools()).tools.map((t) => t.name)).toEqual([...TOOL_NAMES]);
      // the clock is the venue's (the latest stored fill); a custom ranking needs a temp table on the read-only file
      const r = await ok<{ kind: string; as_of: string; rows: { proxy_wallet: string }[] }>(c, 'rank_traders', { config: { weights: { volume: 1 } }, limit: 3 });
      expect(r.kind).toBe('custom');
      const want = await v.rows<{ address: string }>(`SELECT w.address FROM a_wallet_metrics m JOIN wallets w USING (wallet_id) ORDER BY m.lifetime_volume_usdc DESC, m.wallet_id LIMIT 3`);
      expect(r.rows.map((x) => x.proxy_wallet)).toEqual(want.map((w) => getAddress(w.address)));
      await ok(c, 'get_smart_money_signals', { limit: 3 });
      await ok(c, 'search', { q: 'will' });
      expect(errors).toEqual([]);
      expect(stderr).toMatch(/serving .*venue\.duckdb read-only, as of 2026-10-31T23:59:59\.000Z/);
    } finally {
      await c.close();
    }
  });
});
