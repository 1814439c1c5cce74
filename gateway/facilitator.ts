/**
 * x402 v1 facilitators (../shared/design/agent-surfaces.md): the gateway asks one to verify a payment before running
 * a paid handler and to settle it before answering.
 *
 * - `LocalFacilitator` verifies and settles itself against a JSON-RPC endpoint (anvil in tests, any EVM RPC in
 *   production), paying settlement gas from its own key. It delegates the signature, time-window and balance checks
 *   to the `x402` package's own `verify`/`settle`, and first refuses what those do not check: a payload whose
 *   network differs from the requirements' (x402 derives the EIP-712 chain id from the payload's network), requirements
 *   for another network than this facilitator's, a token outside the configured `assets`, a payee that is not
 *   `payTo`, a value that is not exactly `maxAmountRequired` (scheme "exact": x402 accepts overpayment), and an
 *   authorization whose nonce is already used on chain (x402's verify does not look; its settle would then revert).
 *   Settlements from one instance run one at a time (one key, one transaction nonce sequence).
 * - `HttpFacilitator` is a client of any v1 facilitator's HTTP API (`POST /verify`, `POST /settle`,
 *   `GET /supported`), with a timeout; it never throws: transport failures, timeouts and answers that are not a
 *   verdict become `{isValid: false, invalidReason: 'facilitator_unavailable'}` /
 *   `{success: false, errorReason: 'facilitator_unavailable'}` (and `{kinds: []}` for `supported`).
 *
 * Invalid reasons are x402's own codes where one fits (x402/types `ErrorReasons`), plus
 * `invalid_exact_evm_payload_authorization_nonce_used`, `unsupported_asset` and `facilitator_unavailable`.
 * A settle that times out over HTTP is ambiguous (the transfer may still land): the caller must not serve, and the
 * payer's authorization stays single use on chain, so nothing is charged twice.
 */
import {
  createWalletClient,
  getAddress,
  http,
  publicActions,
  type Address,
  type Hex,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { settle as x402Settle, verify as x402Verify } from 'x402/facilitator';
import {
  evm,
  SupportedEVMNetworks,
  type PaymentPayload as X402PaymentPayload,
  type PaymentRequirements as X402PaymentRequirements,
  type Signer as X402Signer,
} from 'x402/types';
import { z } from 'zod';
import {
  PaymentPayload,
  PaymentRequirements,
  X402_VERSION,
  type Facilitator,
  type SettleReceipt,
  type SupportedKinds,
  type VerifyResult,
} from './payment/types.ts';

/** The reasons a facilitator in this module gives for an invalid payment or a failed settlement. */
export const FacilitatorReasons = {
  invalidPayload: 'invalid_payload',
  invalidRequirements: 'invalid_payment_requirements',
  invalidNetwork: 'invalid_network',
  unsupportedAsset: 'unsupported_asset',
  recipientMismatch: 'invalid_exact_evm_payload_recipient_mismatch',
  valueMismatch: 'invalid_exact_evm_payload_authorization_value',
  nonceUsed: 'invalid_exact_evm_payload_authorization_nonce_used',
  /** from x402: signature does not recover to `from` */
  invalidSignature: 'invalid_exact_evm_payload_signature',
  /** from x402: validBefore is less than 6 s away (or past) */
  expired: 'invalid_exact_evm_payload_authorization_valid_before',
  /** from x402: validAfter is in the future */
  notYetValid: 'invalid_exact_evm_payload_authorization_valid_after',
  /** from x402: the payer's balance is below the amount */
  insufficientFunds: 'insufficient_funds',
  /** from x402: the settlement transaction reverted */
  transactionFailed: 'invalid_transaction_state',
  unexpectedVerifyError: 'unexpected_verify_error',
  unexpectedSettleError: 'unexpected_settle_error',
  facilitatorUnavailable: 'facilitator_unavailable',
} as const;

const authorizationStateAbi = [
  {
    type: 'function',
    name: 'authorizationState',
    stateMutability: 'view',
    inputs: [
      { name: 'authorizer', type: 'address' },
      { name: 'nonce', type: 'bytes32' },
    ],
    outputs: [{ type: 'bool' }],
  },
] as const;

function payerOf(payment: unknown): string {
  const from = (payment as { payload?: { authorization?: { from?: unknown } } } | undefined)?.payload?.authorization?.from;
  return typeof from === 'string' ? from : '';
}

function networkOf(payment: unknown, requirements: unknown): string {
  const n = (payment as { network?: unknown } | undefined)?.network ?? (requirements as { network?: unknown } | undefined)?.network;
  return typeof n === 'string' ? n : '';
}

// ---------------------------------------------------------------------------------------------------------------
// LocalFacilitator

export interface LocalFacilitatorOptions {
  /** JSON-RPC endpoint of the chain (anvil's URL in tests). */
  rpcUrl: string;
  /** x402 wire name of the chain behind `rpcUrl`, e.g. `base-sepolia`; the viem chain definition is x402's own. */
  network: string;
  /** Key of a funded account that submits `transferWithAuthorization` and pays its gas. */
  privateKey: Hex;
  /** Tokens this facilitator settles (requirements.asset); default: any. */
  assets?: Address[];
  /** viem polling interval while waiting for a settlement receipt; default viem's for the chain. */
  pollingIntervalMs?: number;
  /** Called with unexpected errors (RPC failures, reverts during gas estimation); default: none. */
  onError?: (op: 'verify' | 'settle', error: unknown) => void;
}

export class LocalFacilitator implements Facilitator {
  readonly network: string;
  /** Address of the settlement key. */
  readonly address: Address;
  private readonly client: ReturnType<typeof makeClient>;
  private readonly assets: Set<string> | undefined;
  private readonly onError: LocalFacilitatorOptions['onError'];
  private settling: Promise<unknown> = Promise.resolve();

  constructor(opts: LocalFacilitatorOptions) {
    if (!(SupportedEVMNetworks as readonly string[]).includes(opts.network)) throw new Error(`LocalFacilitator: unsupported network ${opts.network}`);
    const chain = evm.getChainFromNetwork(opts.network);
    if (evm.isZkStackChain(chain)) throw new Error(`LocalFacilitator: zkSync-stack network ${opts.network} is not supported`);
    this.network = opts.network;
    this.client = makeClient(opts.rpcUrl, chain, opts.privateKey, opts.pollingIntervalMs);
    this.address = this.client.account.address;
    this.assets = opts.assets ? new Set(opts.assets.map((a) => a.toLowerCase())) : undefined;
    this.onError = opts.onError;
  }

  async supported(): Promise<SupportedKinds> {
    return { kinds: [{ x402Version: X402_VERSION, scheme: 'exact', network: this.network }] };
  }

  async verify(payment: PaymentPayload, requirements: PaymentRequirements): Promise<VerifyResult> {
    const invalid = (invalidReason: string): VerifyResult => ({ isValid: false, invalidReason, payer: payerOf(payment) });
    const p = PaymentPayload.safeParse(payment);
    if (!p.success) return invalid(FacilitatorReasons.invalidPayload);
    const r = PaymentRequirements.safeParse(requirements);
    if (!r.success) return invalid(FacilitatorReasons.invalidRequirements);
    const pay = p.data;
    const req = r.data;
    const auth = pay.payload.authorization;
    if (req.network !== this.network || pay.network !== req.network) return invalid(FacilitatorReasons.invalidNetwork);
    if (this.assets && !this.assets.has(req.asset.toLowerCase())) return invalid(FacilitatorReasons.unsupportedAsset);
    if (getAddress(auth.to) !== getAddress(req.payTo)) return invalid(FacilitatorReasons.recipientMismatch);
    if (BigInt(auth.value) !== BigInt(req.maxAmountRequired)) return invalid(FacilitatorReasons.valueMismatch);
    try {
      if (await this.nonceUsed(req.asset as Address, auth.from as Address, auth.nonce as Hex)) return invalid(FacilitatorReasons.nonceUsed);
      const res = await x402Verify(this.client as unknown as X402Signer, pay as X402PaymentPayload, req as X402PaymentRequirements);
      return res.isValid
        ? { isValid: true, payer: res.payer ?? auth.from }
        : { isValid: false, invalidReason: res.invalidReason ?? FacilitatorReasons.unexpectedVerifyError, payer: res.payer ?? auth.from };
    } catch (e) {
      this.onError?.('verify', e);
      return invalid(FacilitatorReasons.unexpectedVerifyError);
    }
  }

  /** Verifies (all of the checks above, again) then submits the transfer and waits for its receipt. */
  settle(payment: PaymentPayload, requirements: PaymentRequirements): Promise<SettleReceipt> {
    const run = this.settling.then(() => this.settleNow(payment, requirements));
    this.settling = run.catch(() => undefined);
    return run;
  }

  private async settleNow(payment: PaymentPayload, requirements: PaymentRequirements): Promise<SettleReceipt> {
    const failed = (errorReason: string, transaction = ''): SettleReceipt => ({
      success: false,
      errorReason,
      transaction,
      network: networkOf(payment, requirements),
      payer: payerOf(payment),
    });
    const verdict = await this.verify(payment, requirements);
    if (!verdict.isValid) return failed(verdict.invalidReason ?? FacilitatorReasons.unexpectedVerifyError);
    const auth = payment.payload.authorization;
    try {
      const res = await x402Settle(this.client as unknown as X402Signer, payment as X402PaymentPayload, requirements as X402PaymentRequirements);
      if (res.success) return { success: true, transaction: res.transaction, network: res.network, payer: res.payer ?? auth.from };
      return failed(res.errorReason ?? FacilitatorReasons.unexpectedSettleError, res.transaction);
    } catch (e) {
      // e.g. the transfer reverts in gas estimation because another facilitator settled the same authorization
      this.onError?.('settle', e);
      try {
        if (await this.nonceUsed(requirements.asset as Address, auth.from as Address, auth.nonce as Hex)) return failed(FacilitatorReasons.nonceUsed);
      } catch {
        // the RPC is down: report the original failure
      }
      return failed(FacilitatorReasons.unexpectedSettleError);
    }
  }

  private nonceUsed(asset: Address, from: Address, nonce: Hex): Promise<boolean> {
    return this.client.readContract({ address: asset, abi: authorizationStateAbi, functionName: 'authorizationState', args: [from, nonce] });
  }
}

function makeClient(rpcUrl: string, chain: ReturnType<typeof evm.getChainFromNetwork>, privateKey: Hex, pollingIntervalMs: number | undefined) {
  return createWalletClient({
    chain,
    transport: http(rpcUrl),
    account: privateKeyToAccount(privateKey),
    ...(pollingIntervalMs !== undefined ? { pollingInterval: pollingIntervalMs } : {}),
  }).extend(publicActions);
}

// ---------------------------------------------------------------------------------------------------------------
// HttpFacilitator

export interface HttpFacilitatorOptions {
  /** Base URL; `/verify`, `/settle` and `/supported` are appended. */
  url: string;
  /** Timeout of a verify or supported call; default 10 s. */
  timeoutMs?: number;
  /** Timeout of a settle call (it waits for a block); default 30 s. */
  settleTimeoutMs?: number;
  /** Extra request headers (e.g. a facilitator's auth), fixed or computed per call. */
  headers?: Record<string, string> | ((op: 'verify' | 'settle' | 'supported') => Promise<Record<string, string>> | Record<string, string>);
  /** Called when a call fails or answers something that is not a verdict; default: none. */
  onError?: (op: 'verify' | 'settle' | 'supported', error: unknown) => void;
}

const VerifyResponseBody = z.object({
  isValid: z.boolean(),
  invalidReason: z.string().nullish(),
  payer: z.string().nullish(),
});
const SettleResponseBody = z.object({
  success: z.boolean(),
  errorReason: z.string().nullish(),
  payer: z.string().nullish(),
  transaction: z.string().nullish(),
  network: z.string().nullish(),
});
const SupportedResponseBody = z.object({
  kinds: z.array(z.object({ x402Version: z.number().int(), scheme: z.string(), network: z.string() })),
});

class NotAVerdict extends Error {}

export class HttpFacilitator implements Facilitator {
  private readonly base: string;
  private readonly timeoutMs: number;
  private readonly settleTimeoutMs: number;
  private readonly opts: HttpFacilitatorOptions;

  constructor(opts: HttpFacilitatorOptions) {
    this.base = opts.url.replace(/\/+$/, '');
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.settleTimeoutMs = opts.settleTimeoutMs ?? 30_000;
    this.opts = opts;
  }

  async verify(payment: PaymentPayload, requirements: PaymentRequirements): Promise<VerifyResult> {
    try {
      const { status, body } = await this.call('verify', 'POST', this.timeoutMs, { x402Version: X402_VERSION, paymentPayload: payment, paymentRequirements: requirements });
      const v = VerifyResponseBody.safeParse(body);
      // a facilitator may answer an invalid payment with a 4xx and a verdict; a valid one only with a 200
      if (!v.success || (v.data.isValid && status !== 200) || status >= 500) throw new NotAVerdict(`verify answered ${status} without a verdict`);
      const payer = v.data.payer ?? payerOf(payment);
      return v.data.isValid ? { isValid: true, payer } : { isValid: false, invalidReason: v.data.invalidReason ?? 'invalid_payment', payer };
    } catch (e) {
      this.opts.onError?.('verify', e);
      return { isValid: false, invalidReason: FacilitatorReasons.facilitatorUnavailable, payer: payerOf(payment) };
    }
  }

  async settle(payment: PaymentPayload, requirements: PaymentRequirements): Promise<SettleReceipt> {
    try {
      const { status, body } = await this.call('settle', 'POST', this.settleTimeoutMs, { x402Version: X402_VERSION, paymentPayload: payment, paymentRequirements: requirements });
      const s = SettleResponseBody.safeParse(body);
      if (!s.success || status >= 500) throw new NotAVerdict(`settle answered ${status} without a receipt`);
      const d = s.data;
      // a success must come with a 200 and the transaction that moved the money
      if (d.success && (status !== 200 || !d.transaction)) throw new NotAVerdict(`settle answered success without a transaction (status ${status})`);
      return {
        success: d.success,
        transaction: d.transaction ?? '',
        network: d.network ?? payment.network,
        payer: d.payer ?? payerOf(payment),
        ...(d.success ? {} : { errorReason: d.errorReason ?? 'unexpected_settle_error' }),
      };
    } catch (e) {
      this.opts.onError?.('settle', e);
      return { success: false, errorReason: FacilitatorReasons.facilitatorUnavailable, transaction: '', network: payment.network, payer: payerOf(payment) };
    }
  }

  async supported(): Promise<SupportedKinds> {
    try {
      const { status, body } = await this.call('supported', 'GET', this.timeoutMs);
      const s = SupportedResponseBody.safeParse(body);
      if (status !== 200 || !s.success) throw new NotAVerdict(`supported answered ${status} without a list of kinds`);
      return { kinds: s.data.kinds.map(({ x402Version, scheme, network }) => ({ x402Version, scheme, network })) };
    } catch (e) {
      this.opts.onError?.('supported', e);
      return { kinds: [] };
    }
  }

  private async call(op: 'verify' | 'settle' | 'supported', method: 'GET' | 'POST', timeoutMs: number, body?: unknown): Promise<{ status: number; body: unknown }> {
    const h = this.opts.headers;
    const extra = typeof h === 'function' ? await h(op) : (h ?? {});
    const res = await fetch(`${this.base}/${op}`, {
      method,
      headers: { accept: 'application/json', ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...extra },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      signal: AbortSignal.timeout(timeoutMs), // covers reading the body too
    });
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new NotAVerdict(`${op} answered ${res.status} with a body that is not JSON`);
    }
    return { status: res.status, body: parsed };
  }
}
