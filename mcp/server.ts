/**
 * The MCP server over the core (SDK 1.32): createMcpServer() registers the tool catalog (mcp/tools.ts) behind an
 * access policy, and mcpRouter() serves it over Streamable HTTP at POST /mcp in stateless mode (a new server and
 * transport per request, JSON responses, DNS-rebinding protection by Host allow-list).
 *
 * Who pays, decided per call by `authorize`:
 * - stdio and in-process (openAccess): every tool is free; whoever runs the process holds the database.
 * - HTTP with `Authorization: Bearer <API key>` (planAccess): every tool is free within the key owner's plan; a call
 *   that needs a plan feature (copy_fitness: metrics_full, extra_metrics) is refused on plans without it.
 * - HTTP without a key (x402Access): free tools run; a paid tool goes through x402's MCP transport: the payment is
 *   read from the request's `_meta["x402/payment"]` and `payments.run` verifies it, computes, settles and returns a
 *   PaidOutcome. Unpaid or refused: an isError result carrying the 402 body {x402Version, error, accepts} in the
 *   transport's `x402/error` wrapper (paymentRequiredResult; with `_meta["x402/payment-response"]` when a settlement
 *   failed); paid: the normal result with the receipt in `_meta["x402/payment-response"]`.
 * The tool's output is computed and validated against its output schema before settlement, so a failure is never
 * charged. Business and validation errors are isError results carrying {error, message} (never protocol errors).
 */
import type { RankerSource } from '../core/rankings.ts';
import { randomBytes } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { hostHeaderValidation } from '@modelcontextprotocol/sdk/server/middleware/hostHeaderValidation.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import express, { type Request, type Response } from 'express';
import { PLANS, type Feature, type PlanId } from '../core/plans.ts';
import { TidIndex } from '../core/public/index.ts';
import type { QueryRunner } from '../core/query.ts';
import type { AccountStore } from '../data/account-store.ts';
import type { PaidOutcome, PaymentRequiredBody, SettleReceipt } from '../gateway/payment/types.ts';
import { TOOLS, annotationsFor, checkPrices, toolDescription, toolErrorBody, type ToolContext, type ToolName } from './tools.ts';

export const MCP_SERVER_NAME = 'skill-analytics';
export const MCP_SERVER_VERSION = '1.0.0';

// ---------------------------------------------------------------------------------------------------------------
// Payments: the gateway's payment module (gateway/payment/*) is the one place that defines them
// ---------------------------------------------------------------------------------------------------------------

export type McpPaymentRequiredBody = PaymentRequiredBody;
export type McpSettleReceipt = SettleReceipt;
export type McpPaidOutcome<T> = PaidOutcome<T>;

/**
 * Pay-per-call for keyless callers (implemented by gateway/payment/gate.ts PaymentGate, adapted by tool price key): given the price key (a tool name, or
 * rank_traders.custom), the resource URL, and the raw `_meta["x402/payment"]` (a PaymentPayload object, or undefined
 * when the caller sent none), it answers payment_required (with the 402 body) or verifies, runs `compute`, settles
 * before answering, and returns the value with its receipt; `compute`'s own error comes back as kind error, uncharged.
 */
export interface ToolPayments {
  run<T>(tool: string, resourceUrl: string, payment: unknown, compute: () => Promise<T>): Promise<McpPaidOutcome<T>>;
}

// ---------------------------------------------------------------------------------------------------------------
// Access policies
// ---------------------------------------------------------------------------------------------------------------

export interface ToolCall {
  tool: ToolName;
  /** the `prices` key the call is charged under; null: a free tool */
  priceKey: string | null;
  /** USD price of the call for keyless callers; null: free */
  price: string | null;
  /** plan features an API-key caller needs for this call */
  features: readonly Feature[];
  /** the request's `_meta` (x402 payments travel in `_meta["x402/payment"]`) */
  meta: Record<string, unknown> | undefined;
}

export type AccessOutcome<T> = { kind: 'free'; value: T } | { kind: 'denied'; error: string; message: string } | McpPaidOutcome<T>;

/** Decides how a call runs: free, refused, or paid (then `compute` runs inside the payment). */
export type Authorize = <T>(call: ToolCall, compute: () => Promise<T>) => Promise<AccessOutcome<T>>;

/** Everything free: stdio (the operator holds the database) and in-process use. */
export const openAccess: Authorize = async (_call, compute) => ({ kind: 'free', value: await compute() });

/** An API-key caller: free within the plan; a call needing a feature the plan lacks is refused (plan_required). */
export function planAccess(plan: PlanId): Authorize {
  return async (call, compute) => {
    const missing = call.features.filter((f) => !PLANS[plan].features.includes(f));
    if (missing.length) {
      const plans = Object.values(PLANS).filter((p) => missing.every((f) => p.features.includes(f))).map((p) => p.name);
      return { kind: 'denied', error: 'plan_required', message: `${missing.join(', ')} needs a paid plan: your plan (${plan}) does not include it; plans that do: ${plans.join(', ')}` };
    }
    return { kind: 'free', value: await compute() };
  };
}

/** A keyless caller: free tools run, paid tools go through x402 (refused when the server has no payments). */
export function x402Access(payments: ToolPayments | undefined, resourceUrl: (priceKey: string) => string): Authorize {
  return async (call, compute) => {
    if (call.priceKey === null) return { kind: 'free', value: await compute() };
    if (!payments) {
      return { kind: 'denied', error: 'auth_required', message: `${call.tool} is a paid tool: send Authorization: Bearer <API key> (this server takes no x402 payments)` };
    }
    return payments.run(call.priceKey, resourceUrl(call.priceKey), call.meta?.['x402/payment'], compute);
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Server
// ---------------------------------------------------------------------------------------------------------------

export interface McpServerDeps {
  db: QueryRunner;
  /** in-memory rankers of the latest analytics versions (jobs/analytics/rankers.ts); without them custom rankings run in SQL */
  rankers?: RankerSource;
  /** the venue's clock: tools answer "as of now" (never before the analytics build) */
  now: () => Date;
  /** secret (>= 16 bytes) keying the opaque trader ids of search; default: a random key (tids then last a process) */
  tidKey?: string | Uint8Array;
  /** a shared tid index (the HTTP router keeps one per process so a tid from one request resolves in the next) */
  tids?: TidIndex;
  /** USD per call of every paid tool (keys: tool names, optionally rank_traders.custom); see mcp/tools.ts */
  prices: Readonly<Record<string, string>>;
  authorize: Authorize;
}

/** The result of a successful call: structured content and the same JSON as text. */
function okResult(value: unknown, receipt?: McpSettleReceipt): CallToolResult {
  const r: CallToolResult = { content: [{ type: 'text', text: JSON.stringify(value) }], structuredContent: value as Record<string, unknown> };
  if (receipt) r._meta = { 'x402/payment-response': receipt };
  return r;
}

/** A business / validation error: {error, message, ...} as text (no structuredContent: it is not the tool's output). */
function errorResult(e: unknown, tool: string): CallToolResult {
  const body = toolErrorBody(e);
  if (body.error === 'internal') console.error(`[mcp] ${tool}:`, e);
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(body) }] };
}

/** The `code` of the x402 MCP transport's error wrapper: HTTP 402's number, as its JSON-RPC binding uses. */
export const X402_MCP_ERROR_CODE = 402;

/**
 * The x402 MCP transport's "payment required" tool result (also for a refused payment and a failed settlement):
 * `isError: true`, and the 402 body {x402Version, error, accepts} in three places clients look:
 *  - `content[0].text`: `{"x402/error": {code: 402, message, data: <402 body>}}`, the wrapper the transport requires
 *    (the official x402 MCP client reads it there);
 *  - `_meta["x402/error"]`: the body itself (where other x402 MCP clients read it);
 *  - after a failed settlement, the failed receipt in `_meta["x402/payment-response"]` and in the body.
 * Never in `structuredContent`: the MCP client SDK validates structuredContent against the tool's output schema even
 * on isError results, so a 402 body there makes an agent's `client.callTool` throw instead of returning the terms
 * (the transport makes structuredContent optional; the MCP spec wants it to match the output schema).
 */
export function paymentRequiredResult(body: McpPaymentRequiredBody, receipt?: McpSettleReceipt): CallToolResult {
  const data = receipt ? { ...body, 'x402/payment-response': receipt } : body;
  const wrapper = { 'x402/error': { code: X402_MCP_ERROR_CODE, message: body.error, data } };
  return {
    isError: true,
    content: [{ type: 'text', text: JSON.stringify(wrapper) }],
    _meta: { 'x402/error': data, ...(receipt ? { 'x402/payment-response': receipt } : {}) },
  };
}

export function createMcpServer(deps: McpServerDeps): McpServer {
  checkPrices(deps.prices);
  const ctx: ToolContext = { db: deps.db, rankers: deps.rankers, now: deps.now, tids: deps.tids ?? new TidIndex(deps.tidKey ?? randomBytes(32)) };
  const server = new McpServer(
    { name: MCP_SERVER_NAME, version: MCP_SERVER_VERSION, title: 'Prediction-market skill analytics' },
    {
      instructions:
        'Skill analytics for traders of a prediction-market venue: rankings (rank_traders, list_presets), one trader (get_trader, get_trader_positions), one market (get_market), smart-money fills (get_smart_money_signals) and search. A null metric is unmeasured, never 0. Each answer says its as-of time.',
    },
  );
  for (const spec of TOOLS) {
    server.registerTool(
      spec.name,
      { title: spec.title, description: toolDescription(spec, deps.prices), inputSchema: spec.input, outputSchema: spec.output, annotations: annotationsFor(spec.title) },
      (async (args: Record<string, unknown>, extra: { _meta?: Record<string, unknown> }): Promise<CallToolResult> => {
        const a = args as never;
        let call: ToolCall;
        try {
          const priceKey = spec.priceKey(a, deps.prices);
          call = { tool: spec.name, priceKey, price: priceKey === null ? null : (deps.prices[priceKey] ?? null), features: spec.features(a), meta: extra._meta };
        } catch (e) {
          return errorResult(e, spec.name);
        }
        // validated before any settlement: a result that does not match the schema is never charged
        const compute = async () => spec.output.parse(await spec.run(a, ctx)) as Record<string, unknown>;
        let outcome: AccessOutcome<Record<string, unknown>>;
        try {
          outcome = await deps.authorize(call, compute);
        } catch (e) {
          return errorResult(e, spec.name);
        }
        switch (outcome.kind) {
          case 'free':
            return okResult(outcome.value);
          case 'paid':
            return okResult(outcome.value, outcome.receipt);
          case 'denied':
            return { isError: true, content: [{ type: 'text', text: JSON.stringify({ error: outcome.error, message: outcome.message }) }] };
          case 'error':
            return errorResult(outcome.error, spec.name);
          case 'payment_required':
            return paymentRequiredResult(outcome.body, outcome.receipt);
        }
      }) as never,
    );
  }
  return server;
}

// ---------------------------------------------------------------------------------------------------------------
// Streamable HTTP
// ---------------------------------------------------------------------------------------------------------------

export interface McpRouterDeps extends Omit<McpServerDeps, 'authorize'> {
  accounts: Pick<AccountStore, 'authenticateKey'>;
  /** x402 payments for keyless callers; without it, paid tools need an API key */
  payments?: ToolPayments;
  /** Host header names accepted (DNS-rebinding protection); default localhost, 127.0.0.1, [::1] */
  allowedHosts?: string[];
  /** the x402 `resource` of a price key; default mcp://tool/<key> */
  resourceUrl?: (priceKey: string) => string;
  /** wall clock for API-key bookkeeping; default Date.now */
  wallNow?: () => Date;
}

/** POST bodies the transport parses itself (tool arguments are small; a custom ranking config is the largest). */
export const MAX_BODY_BYTES = 256 * 1024;

const jsonRpcError = (res: Response, status: number, code: number, message: string) => {
  res.status(status).json({ jsonrpc: '2.0', error: { code, message }, id: null });
};

/**
 * POST /mcp (stateless Streamable HTTP). A present Authorization header must be `Bearer <live API key>` (HTTP 401
 * with {error, message} otherwise); without one, paid tools ask for x402 payment. GET and DELETE: 405 (no sessions,
 * no server-initiated stream).
 */
export function mcpRouter(deps: McpRouterDeps): express.Router {
  const router = express.Router();
  const hosts = hostHeaderValidation(deps.allowedHosts ?? ['localhost', '127.0.0.1', '[::1]']);
  const tids = deps.tids ?? new TidIndex(deps.tidKey ?? randomBytes(32));
  const resourceUrl = deps.resourceUrl ?? ((k: string) => `mcp://tool/${k}`);
  const wallNow = deps.wallNow ?? (() => new Date());
  checkPrices(deps.prices);

  router.post('/', hosts, async (req: Request, res: Response) => {
    let authorize: Authorize;
    const authz = req.headers.authorization;
    if (authz !== undefined) {
      const unauthorized = (error: string, message: string) => {
        res.setHeader('WWW-Authenticate', 'Bearer realm="mcp"');
        res.status(401).json({ error, message });
      };
      const m = /^Bearer +(\S+) *$/i.exec(authz);
      if (!m) return unauthorized('invalid_authorization', 'Authorization must be "Bearer <API key>"');
      const k = await deps.accounts.authenticateKey(m[1]!, wallNow().getTime());
      if (!k) return unauthorized('invalid_api_key', 'the API key is unknown or revoked');
      authorize = planAccess(k.plan);
    } else {
      authorize = x402Access(deps.payments, resourceUrl);
    }
    const server = createMcpServer({ db: deps.db, rankers: deps.rankers, now: deps.now, tids, prices: deps.prices, authorize });
    // stateless: no session id; one JSON answer per POST (no SSE stream); bodies the transport reads itself are capped
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true, maxRequestBodySize: MAX_BODY_BYTES });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    try {
      await server.connect(transport);
      // an upstream express.json() may have parsed the body already; otherwise the transport reads and parses it
      await transport.handleRequest(req, res, req.body);
    } catch (e) {
      console.error('[mcp] request failed:', e);
      if (!res.headersSent) jsonRpcError(res, 500, -32603, 'Internal server error');
    }
  });

  const notAllowed = (_req: Request, res: Response) => {
    res.setHeader('Allow', 'POST');
    jsonRpcError(res, 405, -32000, 'Method not allowed: this MCP endpoint is stateless, use POST');
  };
  router.get('/', hosts, notAllowed);
  router.delete('/', hosts, notAllowed);
  return router;
}
