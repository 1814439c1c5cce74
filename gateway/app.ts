/**
 * The x402 agent gateway: `/v1/agent/*` paid per request, and `/x402/info` (docs/gateway.md).
 *
 * Every paid route first validates its input and checks that what it names exists (a malformed request is a 400
 * and an unknown trader a 404, both free), then runs the computation through the PaymentGate: 402 with the
 * requirements when unpaid or refused, the handler's error with nothing charged, or the answer with
 * X-PAYMENT-RESPONSE. Trader addresses in answers are EIP-55; lowercase addresses are accepted.
 */
import type { RankerSource } from '../core/rankings.ts';
import express, { type Request, type Response, type Router } from 'express';
import { getAddress, isAddress } from 'viem';
import { z } from 'zod';
import { marketFlow, marketIdByConditionId, MarketFlowQuery } from '../core/market.ts';
import { publicLeaderboard, TidIndex } from '../core/public/index.ts';
import type { AsOf, QueryRunner } from '../core/query.ts';
import { customRanking, parseExtraMetrics, presetBySlug, PresetOverrides, RankingConfig, RankingError } from '../core/rankings.ts';
import { presetRanking } from '../core/preset-rankings.ts';
import { smartMoneySignals, SmartMoneySignalsQuery, type SmartMoneySignalsQueryInput } from '../core/signals.ts';
import { resolveTrader, traderPlaybook, traderPositions, TraderPositionsQuery } from '../core/trader/index.ts';
import type { SnapshotStore } from '../data/snapshot-store.ts';
import { GatewayError } from './errors.ts';
import { type PaymentEncoding, encodeReceipt, type PaymentGate } from './payment/gate.ts';
import { AGENT_ROUTES, atomicToUsd, usdToAtomic } from './payment/pricing.ts';

export interface GatewayDeps {
  db: QueryRunner;
  /** in-memory rankers of the latest analytics versions (jobs/analytics/rankers.ts); without them custom rankings run in SQL */
  rankers?: RankerSource;
  gate: PaymentGate;
  /** the venue clock for "as of now" answers */
  now: () => Date;
  /** the origin resources are named on (requirements' `resource` = origin + path + query) */
  origin: () => string;
  snapshots?: SnapshotStore;
  tidKey: string | Uint8Array;
  /** the process's shared tid index; default: a new one for tidKey */
  tids?: TidIndex;
  /** a human description of the facilitator (for /x402/info) */
  facilitator: string;
  /** extra paid routes registered by the composition root (paths relative to /v1/agent) */
  extraRoutes?: (r: Router, paid: PaidRoute) => void;
}

/** Sunset of the deprecated payment encodings (RFC 8594 Sunset header). */
export const LEGACY_SUNSET = new Date('2027-03-31T00:00:00Z');
const DEPRECATED_SINCE = new Date('2026-06-01T00:00:00Z');

/** A paid route: `prepare` validates and resolves (free errors), returning the computation to be paid for. */
export type PaidRoute = (id: string, prepare: (req: Request) => Promise<() => Promise<unknown>>) => express.RequestHandler;

/** Any 40-hex address string in an answer, EIP-55 checksummed (tx hashes and condition ids are 64 hex: untouched). */
export function checksumAddresses<T>(v: T): T {
  if (typeof v === 'string') return (/^0x[0-9a-fA-F]{40}$/.test(v) ? getAddress(v.toLowerCase()) : v) as T;
  if (Array.isArray(v)) return v.map(checksumAddresses) as T;
  if (v && typeof v === 'object' && !(v instanceof Date)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, checksumAddresses(x)])) as T;
  return v;
}

/** A trader address: lowercase or EIP-55 (a mixed-case address with a wrong checksum is refused: it is a typo). */
export const TraderAddress = z
  .string()
  .regex(/^0x[0-9a-fA-F]{40}$/, 'a trader is a 0x address of 40 hex digits')
  .refine((s) => s === s.toLowerCase() || s.slice(2) === s.slice(2).toUpperCase() || isAddress(s, { strict: true }), 'mixed-case address with a wrong EIP-55 checksum');
const ConditionId = z.string().regex(/^0x[0-9a-fA-F]{64}$/, 'a condition id is 0x + 64 hex digits');

function setDeprecation(res: Response, encoding: PaymentEncoding | undefined): void {
  if (!encoding || encoding === 'v1') return;
  res.setHeader('Deprecation', `@${Math.floor(DEPRECATED_SINCE.getTime() / 1000)}`);
  res.setHeader('Sunset', LEGACY_SUNSET.toUTCString());
  res.setHeader('X-Payment-Deprecated', encoding === 'legacy_flat' ? 'the flat payment encoding is deprecated: send the x402 v1 payload' : 'x402: 0.1 is deprecated: send x402Version: 1');
}

async function traderIdOrThrow(db: QueryRunner, proxy: string): Promise<number> {
  const t = await resolveTrader(db, TraderAddress.parse(proxy));
  if (!t) throw new GatewayError(404, 'not_found', `no trader ${getAddress(proxy.toLowerCase())} on the venue`);
  return t.wallet_id;
}

/** The gateway's two routers: `agent` mounted at /v1/agent, `info` at /x402. */
export function gatewayRouters(deps: GatewayDeps): { agent: Router; info: Router } {
  const r = express.Router();
  const info = express.Router();
  const tids = deps.tids ?? new TidIndex(deps.tidKey);
  const asOf = (): AsOf => deps.now();

  const paid: PaidRoute = (id, prepare) => async (req, res, next) => {
    const compute = await prepare(req);
    const resource = `${deps.origin()}${req.originalUrl}`;
    const out = await deps.gate.run(id, resource, req.get('x-payment'), compute);
    setDeprecation(res, out.encoding);
    if (out.kind === 'payment_required') {
      if (out.receipt) res.setHeader('X-PAYMENT-RESPONSE', encodeReceipt(out.receipt));
      res.status(402).json(out.body);
      return;
    }
    if (out.kind === 'error') return next(out.error);
    res.setHeader('X-PAYMENT-RESPONSE', encodeReceipt(out.receipt));
    res.setHeader('Access-Control-Expose-Headers', 'X-PAYMENT-RESPONSE');
    res.json(checksumAddresses(out.value));
  };

  info.get('/info', (_req, res) => {
    const terms = deps.gate.terms;
    const req0 = deps.gate.requirements(AGENT_ROUTES[0]!.id, deps.origin());
    res.json({
      x402Version: 1,
      network: terms.network.network,
      chain_id: terms.network.chainId,
      asset: req0.asset,
      asset_eip712: req0.extra,
      decimals: terms.network.decimals,
      pay_to: req0.payTo,
      max_timeout_seconds: req0.maxTimeoutSeconds,
      facilitator: deps.facilitator,
      routes: AGENT_ROUTES.map((rt) => ({
        id: rt.id,
        method: rt.method,
        path: rt.path.replace(/:(\w+)/g, '{$1}'),
        price_usd: rt.price_usd,
        max_amount_required: usdToAtomic(rt.price_usd, terms.network.decimals),
        description: rt.description,
      })),
      payment: {
        header: 'X-PAYMENT: base64 of {x402Version: 1, scheme: "exact", network, payload: {signature, authorization}}',
        receipt_header: 'X-PAYMENT-RESPONSE: base64 of {success, transaction, network, payer}',
        deprecated: { legacy_flat: 'base64 of {scheme, network, signature, authorization}', version_alias: 'x402: 0.1 in place of x402Version: 1', sunset: LEGACY_SUNSET.toISOString() },
      },
      price_units: `USD; 1 USD = ${atomicToUsd(usdToAtomic('1', terms.network.decimals), terms.network.decimals)} USD = 10^${terms.network.decimals} atomic units`,
    });
  });

  r.get(
    '/trader/:proxy/playbook',
    paid('trader.playbook', async (req) => {
      z.strictObject({}).parse(req.query);
      const id = await traderIdOrThrow(deps.db, String(req.params.proxy));
      return async () => traderPlaybook(deps.db, id, asOf());
    }),
  );

  r.get(
    '/trader/:proxy/positions',
    paid('trader.positions', async (req) => {
      TraderPositionsQuery.strict().parse(req.query); // validate before payment; the core parses the raw input itself
      const input = req.query as Record<string, string>;
      const id = await traderIdOrThrow(deps.db, String(req.params.proxy));
      return async () => traderPositions(deps.db, id, asOf(), input);
    }),
  );

  r.get(
    '/market/:conditionId/flow',
    paid('market.flow', async (req) => {
      const cid = ConditionId.parse(req.params.conditionId);
      const q = MarketFlowQuery.strict().parse(req.query);
      const marketId = await marketIdByConditionId(deps.db, cid.toLowerCase());
      if (marketId === null) throw new GatewayError(404, 'not_found', `no market with condition id ${cid}`);
      return async () => marketFlow(deps.db, marketId, asOf(), q.window_hours);
    }),
  );

  r.post(
    '/rankings/custom',
    paid('rankings.custom', async (req) => {
      const parsed = RankingConfig.safeParse(req.body ?? {});
      if (!parsed.success) throw new RankingError('invalid_ranking', 'the ranking config is invalid', { issues: parsed.error.issues });
      return async () => customRanking(deps.db, parsed.data, asOf(), undefined, deps.rankers);
    }),
  );

  const PresetQuery = z.strictObject({
    active_within_days: z.string().max(20).optional(),
    best_category: z.string().max(100).optional(),
    sort_by: z.string().max(64).optional(),
    limit: z.string().max(10).optional(),
    offset: z.string().max(10).optional(),
    extra_metrics: z.string().max(2000).optional(),
  });
  r.get(
    '/rankings/preset/:slug',
    paid('rankings.preset', async (req) => {
      const slug = z.string().max(64).parse(req.params.slug);
      presetBySlug(slug);
      const q = PresetQuery.parse(req.query);
      const overrides = PresetOverrides.parse({ ...q, extra_metrics: parseExtraMetrics(q.extra_metrics) });
      return async () => presetRanking(deps.db, slug, overrides, asOf(), deps.rankers);
    }),
  );

  r.get(
    '/rankings/published/:slug',
    paid('rankings.published', async (req) => {
      const slug = z.string().max(64).parse(req.params.slug);
      presetBySlug(slug);
      const { date } = z.strictObject({ date: z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'date must be YYYY-MM-DD').optional() }).parse(req.query);
      const s = deps.snapshots ? await (date ? deps.snapshots.get(slug, date) : deps.snapshots.latest(slug)) : null;
      if (!s) throw new GatewayError(404, 'not_found', date ? `no published board of ${slug} for ${date}` : `no published board of ${slug} yet`);
      return async () => s;
    }),
  );

  r.get(
    '/leaderboard',
    paid('leaderboard', async (req) => {
      const { limit } = z.strictObject({ limit: z.coerce.number().int().min(1).max(25).optional() }).parse(req.query);
      return async () => {
        const board = await publicLeaderboard(deps.db, asOf(), limit, tids);
        // agents pay, so they get the addresses they need to call the other routes
        const rows = await Promise.all(board.rows.map(async (row) => ({ ...row, proxy_wallet: await tids.resolve(deps.db, row.tid) })));
        return { ...board, rows };
      };
    }),
  );

  const SignalsQuery = z.strictObject({
    since_hours: z.coerce.number().int().optional(),
    limit: z.coerce.number().int().optional(),
    tags: z.string().max(200).optional(),
    signal_types: z.string().max(100).optional(),
    condition_id: z.string().max(66).optional(),
    cursor: z.string().max(2000).optional(),
  });
  const list = (s: string | undefined) => (s === undefined ? undefined : s.split(',').map((x) => x.trim()).filter(Boolean));
  r.get(
    '/signals/smart-money',
    paid('signals.smart_money', async (req) => {
      const q = SignalsQuery.parse(req.query);
      const input = Object.fromEntries(
        Object.entries({ sinceHours: q.since_hours, limit: q.limit, tags: list(q.tags), signalTypes: list(q.signal_types), conditionId: q.condition_id, cursor: q.cursor }).filter(([, x]) => x !== undefined),
      ) as SmartMoneySignalsQueryInput;
      SmartMoneySignalsQuery.parse(input); // a bad parameter is a free 400, not a paid error
      return async () => smartMoneySignals(deps.db, asOf(), input);
    }),
  );

  deps.extraRoutes?.(r, paid);
  return { agent: r, info };
}
