/**
 * x402 protocol v1 shapes shared by the gateway, the facilitators and the MCP server's paid tools
 * (../shared/design/agent-surfaces.md has the checked facts). All amounts are atomic-unit integer strings.
 */
import { z } from 'zod';

export const X402_VERSION = 1 as const;

const Hex = z.string().regex(/^0x[0-9a-fA-F]*$/);
const Address = z.string().regex(/^0x[0-9a-fA-F]{40}$/);
const UintString = z.string().regex(/^\d{1,78}$/);

/** What a resource costs and how to pay it (one entry of a 402 body's `accepts`). */
export const PaymentRequirements = z.object({
  scheme: z.literal('exact'),
  network: z.string(),
  maxAmountRequired: UintString,
  resource: z.string(),
  description: z.string(),
  mimeType: z.string(),
  outputSchema: z.record(z.string(), z.unknown()).optional(),
  payTo: Address,
  maxTimeoutSeconds: z.number().int().positive(),
  asset: Address,
  extra: z.object({ name: z.string(), version: z.string() }),
});
export type PaymentRequirements = z.infer<typeof PaymentRequirements>;

/** EIP-3009 TransferWithAuthorization fields, as strings. */
export const Authorization = z.object({
  from: Address,
  to: Address,
  value: UintString,
  validAfter: UintString,
  validBefore: UintString,
  nonce: z.string().regex(/^0x[0-9a-fA-F]{64}$/),
});
export type Authorization = z.infer<typeof Authorization>;

/** The decoded X-PAYMENT header (v1, scheme exact on EVM). */
export const PaymentPayload = z.object({
  x402Version: z.literal(1),
  scheme: z.literal('exact'),
  network: z.string(),
  payload: z.object({ signature: Hex, authorization: Authorization }),
});
export type PaymentPayload = z.infer<typeof PaymentPayload>;

export interface VerifyResult {
  isValid: boolean;
  invalidReason?: string;
  payer?: string;
}

/** The settlement receipt; base64 of its JSON is the X-PAYMENT-RESPONSE header. */
export interface SettleReceipt {
  success: boolean;
  transaction: string;
  network: string;
  payer: string;
  errorReason?: string;
}

export interface SupportedKinds {
  kinds: { x402Version: number; scheme: string; network: string }[];
}

/** A v1 facilitator: verifies and settles payments (over HTTP, or locally against a chain). */
export interface Facilitator {
  verify(payment: PaymentPayload, requirements: PaymentRequirements): Promise<VerifyResult>;
  settle(payment: PaymentPayload, requirements: PaymentRequirements): Promise<SettleReceipt>;
  supported(): Promise<SupportedKinds>;
}

/** The body of a 402 answer. */
export interface PaymentRequiredBody {
  x402Version: 1;
  error: string;
  accepts: PaymentRequirements[];
}

/**
 * The outcome of a paid call (gateway/payment/gate.ts): payment required or refused (402 body, maybe with the failed
 * settlement's receipt), the handler's own error (nothing charged), or the value with its receipt.
 */
export type PaidOutcome<T> =
  | { kind: 'payment_required'; body: PaymentRequiredBody; receipt?: SettleReceipt }
  | { kind: 'error'; error: unknown }
  | { kind: 'paid'; value: T; receipt: SettleReceipt };
