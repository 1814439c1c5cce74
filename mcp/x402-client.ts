/**
 * The agent's side of x402 over MCP, on the official MCP SDK `Client`: call a tool; when the result says payment is
 * required, sign the exact payment with the official x402 client (`x402/client` createPaymentHeader) and repeat
 * the call with it in `_meta["x402/payment"]`; the receipt comes back in `_meta["x402/payment-response"]`.
 *
 * `paymentRequiredOf` reads the terms wherever an x402 MCP server may put them, in the transport's order:
 * structuredContent (the bare body, or its `x402/error` wrapper), then `content[0].text` (the wrapper or the bare
 * body), then `_meta["x402/error"]`. Used by `npm run mcp:pay` and the tests; agents can copy it.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { createPaymentHeader } from 'x402/client';
import type { PaymentRequirements as X402Requirements } from 'x402/types';
import type { PaymentRequiredBody, SettleReceipt } from '../gateway/payment/types.ts';

type Signer = Parameters<typeof createPaymentHeader>[0];

const isBody = (v: unknown): v is PaymentRequiredBody =>
  !!v && typeof v === 'object' && typeof (v as { x402Version?: unknown }).x402Version === 'number' && Array.isArray((v as { accepts?: unknown }).accepts);

const unwrap = (v: unknown): PaymentRequiredBody | null => {
  if (isBody(v)) return v;
  const inner = (v as { 'x402/error'?: { data?: unknown } } | null)?.['x402/error']?.data;
  return isBody(inner) ? inner : null;
};

/** The 402 body of a payment-required tool result, or null when the result is anything else. */
export function paymentRequiredOf(result: CallToolResult): PaymentRequiredBody | null {
  if (!result.isError) return null;
  const fromStructured = unwrap(result.structuredContent);
  if (fromStructured) return fromStructured;
  const first = result.content?.[0];
  if (first?.type === 'text') {
    try {
      const fromText = unwrap(JSON.parse(first.text));
      if (fromText) return fromText;
    } catch {
      /* plain text: not a payment answer */
    }
  }
  return unwrap(result._meta?.['x402/error']);
}

export interface PaidCall {
  result: CallToolResult;
  /** the terms the first call answered with (null: the tool was free, or the caller holds a key) */
  required: PaymentRequiredBody | null;
  /** the settlement receipt of the paid call */
  receipt: SettleReceipt | null;
}

/**
 * Call `name` with `args`, paying when asked: at most `maxAtomic` atomic units of the asset (USDC: 6 decimals), on a
 * network the signer's chain serves. Throws when the price is above the cap; any other refusal comes back as the
 * isError result of the paid call.
 */
export async function callToolPaying(client: Client, signer: Signer, name: string, args: Record<string, unknown>, maxAtomic: bigint): Promise<PaidCall> {
  const first = (await client.callTool({ name, arguments: args })) as CallToolResult;
  const required = paymentRequiredOf(first);
  if (!required) return { result: first, required: null, receipt: null };
  const req = required.accepts[0];
  if (!req) throw new Error(`${name}: the server asked for payment but offered no way to pay`);
  if (BigInt(req.maxAmountRequired) > maxAtomic) throw new Error(`${name} costs ${req.maxAmountRequired} atomic units, above the cap of ${maxAtomic}`);
  const header = await createPaymentHeader(signer, required.x402Version, req as unknown as X402Requirements);
  const payment = JSON.parse(Buffer.from(header, 'base64').toString('utf8')) as unknown;
  const result = (await client.callTool({ name, arguments: args, _meta: { 'x402/payment': payment } })) as CallToolResult;
  const receipt = (result._meta?.['x402/payment-response'] as SettleReceipt | undefined) ?? null;
  return { result, required, receipt };
}
