/**
 * The pay-per-call gate shared by the x402 HTTP gateway and the MCP server's paid tools.
 *
 * Order (docs/gateway.md): decode → check the terms (scheme, network, payee, exact amount, time window) →
 * facilitator verify (signature, balance) → reserve the authorization in the durable ledger (a replay or a
 * concurrent duplicate stops here, before any work) → compute → if the computation fails, release: nothing is
 * charged → settle → record the receipt. A failed settlement answers 402 with its receipt and no data.
 */
import { getAddress } from 'viem';
import { z } from 'zod';
import type { PaymentLedger } from '../../data/payment-ledger.ts';
import { AGENT_ROUTES, type PaymentTerms, requirementsFor, TOOL_PRICES } from './pricing.ts';
import { type Facilitator, type PaidOutcome, PaymentPayload, type PaymentRequirements, type SettleReceipt, X402_VERSION } from './types.ts';

export const MAX_PAYMENT_HEADER = 16_384;

/** What an unpaid MCP call is told (an MCP client has no X-PAYMENT header: the payment rides in the request's _meta). */
export const MCP_PAYMENT_MISSING = 'payment required: repeat the call with a signed PaymentPayload in params._meta["x402/payment"]';

/** How a payment arrived: the v1 object, the legacy flat form, or the v1 form with the `x402: 0.1` version alias. */
export type PaymentEncoding = 'v1' | 'legacy_flat' | 'version_alias';

const LegacyFlat = z.object({ scheme: z.string(), network: z.string(), signature: z.string(), authorization: z.unknown() });

/** A payment from an X-PAYMENT header (base64 JSON) or an MCP `_meta["x402/payment"]` object. */
export function decodePayment(input: unknown): { ok: true; payment: PaymentPayload; encoding: PaymentEncoding } | { ok: false; reason: string } {
  let obj: unknown = input;
  if (typeof input === 'string') {
    if (input.length > MAX_PAYMENT_HEADER) return { ok: false, reason: 'the payment header is too large' };
    const b64 = input.trim().replace(/-/g, '+').replace(/_/g, '/');
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64)) return { ok: false, reason: 'the payment header is not base64' };
    try {
      obj = JSON.parse(Buffer.from(b64, 'base64').toString('utf8'));
    } catch {
      return { ok: false, reason: 'the payment header is not base64 JSON' };
    }
  }
  if (!obj || typeof obj !== 'object' || Array.isArray(obj)) return { ok: false, reason: 'the payment is not a JSON object' };
  const o = obj as Record<string, unknown>;
  let encoding: PaymentEncoding = 'v1';
  let candidate: unknown = o;
  if (o.x402Version === undefined && (o.x402 === 0.1 || o.x402 === '0.1')) {
    encoding = 'version_alias';
    const { x402: _alias, ...rest } = o;
    candidate = { ...rest, x402Version: X402_VERSION };
  }
  if (o.payload === undefined && LegacyFlat.safeParse(o).success) {
    encoding = 'legacy_flat';
    const flat = LegacyFlat.parse(o);
    candidate = { x402Version: X402_VERSION, scheme: flat.scheme, network: flat.network, payload: { signature: flat.signature, authorization: flat.authorization } };
  }
  const parsed = PaymentPayload.safeParse(candidate);
  if (!parsed.success) {
    const i = parsed.error.issues[0]!;
    return { ok: false, reason: `invalid payment: ${i.path.join('.') || '(root)'}: ${i.message}` };
  }
  return { ok: true, payment: parsed.data, encoding };
}

export function encodeReceipt(r: SettleReceipt): string {
  return Buffer.from(JSON.stringify(r), 'utf8').toString('base64');
}

/** Settlement failures that do not prove the transfer did not happen. */
const UNKNOWN_OUTCOME = /facilitator_unavailable|unexpected_settle_error|settlement error/;

/** Seconds of clock slack on the authorization's validBefore (a request must have time to be settled). */
const SETTLE_MARGIN_S = 6;

export interface PaymentGateOptions {
  facilitator: Facilitator;
  ledger: PaymentLedger;
  terms: PaymentTerms;
  now?: () => Date;
  log?: (msg: string) => void;
}

export class PaymentGate {
  private readonly prices = new Map<string, { price: string; description: string }>();
  private readonly now: () => Date;

  constructor(private readonly opts: PaymentGateOptions) {
    this.now = opts.now ?? (() => new Date());
    for (const r of AGENT_ROUTES) this.prices.set(r.id, { price: r.price_usd, description: r.description });
    for (const [tool, price] of Object.entries(TOOL_PRICES)) this.prices.set(`mcp.${tool}`, { price, description: `MCP tool ${tool}` });
  }

  get terms(): PaymentTerms {
    return this.opts.terms;
  }

  priceOf(id: string): string | null {
    return this.prices.get(id)?.price ?? null;
  }

  requirements(id: string, resource: string): PaymentRequirements {
    const p = this.prices.get(id);
    if (!p) throw new Error(`no price for ${id}`);
    return requirementsFor(this.opts.terms, p.price, resource, p.description);
  }

  private required(req: PaymentRequirements, error: string, receipt?: SettleReceipt): PaidOutcome<never> {
    return { kind: 'payment_required', body: { x402Version: X402_VERSION, error, accepts: [req] }, ...(receipt ? { receipt } : {}) };
  }

  /** Check the payment against this resource's terms before asking the facilitator anything. */
  private termsError(p: PaymentPayload, req: PaymentRequirements): string | null {
    const a = p.payload.authorization;
    const nowS = Math.floor(this.now().getTime() / 1000);
    if (p.scheme !== req.scheme) return `unsupported scheme ${p.scheme}; pay with ${req.scheme}`;
    if (p.network !== req.network) return `wrong network ${p.network}; pay on ${req.network}`;
    if (getAddress(a.to) !== getAddress(req.payTo)) return `wrong payee ${a.to}; pay ${req.payTo}`;
    if (a.value !== req.maxAmountRequired) return `wrong amount ${a.value}; this resource costs exactly ${req.maxAmountRequired} atomic units`;
    if (Number(a.validAfter) > nowS) return 'the authorization is not valid yet (validAfter is in the future)';
    if (Number(a.validBefore) < nowS + SETTLE_MARGIN_S) return 'the authorization has expired (validBefore has passed)';
    return null;
  }

  /** The gate as the MCP server's ToolPayments: a tool's price key `k` is priced as `mcp.k`. */
  forTools(): { run<T>(priceKey: string, resource: string, payment: unknown, compute: () => Promise<T>): Promise<PaidOutcome<T>> } {
    return { run: (priceKey, resource, payment, compute) => this.run(`mcp.${priceKey}`, resource, payment, compute, MCP_PAYMENT_MISSING) };
  }

  /**
   * Run `compute` as a paid call of `id`. `payment` is the X-PAYMENT header value or an MCP payment object (or
   * undefined). The outcome says what to answer; `encoding` tells the caller to add deprecation headers.
   */
  async run<T>(
    id: string,
    resource: string,
    payment: unknown,
    compute: () => Promise<T>,
    missing = 'X-PAYMENT header is required',
  ): Promise<PaidOutcome<T> & { encoding?: PaymentEncoding }> {
    const req = this.requirements(id, resource);
    if (payment === undefined || payment === null || payment === '') return this.required(req, missing);
    const decoded = decodePayment(payment);
    if (!decoded.ok) return this.required(req, decoded.reason);
    const { payment: p, encoding } = decoded;
    const termsError = this.termsError(p, req);
    if (termsError) return { ...this.required(req, termsError), encoding };
    const verified = await this.opts.facilitator.verify(p, req);
    if (!verified.isValid) return { ...this.required(req, `payment verification failed: ${verified.invalidReason ?? 'invalid'}`), encoding };
    const a = p.payload.authorization;
    const nowMs = () => this.now().getTime();
    const held = await this.opts.ledger.reserve(
      { route: id, resource, network: p.network, asset: req.asset, payer: a.from, payTo: a.to, amount: a.value, nonce: a.nonce, validBefore: Number(a.validBefore) },
      nowMs(),
    );
    if (!held.ok) return { ...this.required(req, `this payment authorization was already used (${held.status}); sign a new one`), encoding };
    let value: T;
    try {
      value = await compute();
    } catch (error) {
      await this.opts.ledger.release(held.key, error instanceof Error ? error.message : String(error), nowMs());
      return { kind: 'error', error, encoding };
    }
    let receipt: SettleReceipt;
    try {
      receipt = await this.opts.facilitator.settle(p, req);
    } catch (e) {
      receipt = { success: false, transaction: '', network: p.network, payer: a.from, errorReason: `settlement error: ${(e as Error).message}` };
    }
    if (!receipt.success) {
      // a facilitator that could not answer may still have settled: such an authorization is never reused
      const unknownOutcome = !receipt.errorReason || UNKNOWN_OUTCOME.test(receipt.errorReason);
      if (unknownOutcome) await this.opts.ledger.markUncertain(held.key, receipt, receipt.errorReason ?? 'settlement outcome unknown', nowMs());
      else await this.opts.ledger.fail(held.key, receipt, receipt.errorReason ?? 'settlement failed', nowMs());
      this.opts.log?.(`x402 settlement failed for ${id} (${a.from}): ${receipt.errorReason ?? 'unknown'}`);
      const why = unknownOutcome ? 'the settlement outcome is unknown; this authorization will not be accepted again' : 'nothing was charged';
      return { ...this.required(req, `settlement failed: ${receipt.errorReason ?? 'unknown'}; ${why}`, receipt), encoding };
    }
    // the transfer happened: the caller gets what they paid for even if the ledger cannot record it now (the row
    // stays reserved, is never reused, and expireStale leaves it for reconciliation against the chain)
    await this.opts.ledger.settle(held.key, receipt, nowMs()).catch((e: Error) => this.opts.log?.(`x402: settled ${receipt.transaction} for ${id} but the ledger did not record it: ${e.message}`));
    return { kind: 'paid', value, receipt, encoding };
  }
}
