/**
 * Pay for one agent-tier request with the official x402 client, as an agent would.
 *   npm run x402:pay -- <url> --key 0x<private key> [--method POST --body '{"weights":{"calibration":1}}'] [--max 0.10]
 * With `npm start` in development, use the demo payer it prints (10 test USDC on the local chain).
 */
import { parseArgs } from 'node:util';
import { privateKeyToAccount } from 'viem/accounts';
import { decodeXPaymentResponse, wrapFetchWithPayment } from 'x402-fetch';
import { usdToAtomic } from '../gateway/payment/pricing.ts';

const { values, positionals } = parseArgs({ allowPositionals: true, options: { key: { type: 'string' }, method: { type: 'string' }, body: { type: 'string' }, max: { type: 'string' } } });
const url = positionals[0];
if (!url || !values.key) {
  console.error('usage: npm run x402:pay -- <url> --key 0x<private key> [--method POST --body JSON] [--max 0.10]');
  process.exit(2);
}
const account = privateKeyToAccount(values.key as `0x${string}`);
const pay = wrapFetchWithPayment(fetch, account as never, BigInt(usdToAtomic(values.max ?? '0.10')));
const t0 = performance.now();
const res = await pay(url, { method: values.method ?? 'GET', ...(values.body ? { body: values.body, headers: { 'content-type': 'application/json' } } : {}) });
const ms = performance.now() - t0;
const receipt = res.headers.get('x-payment-response');
console.error(`${res.status} in ${ms.toFixed(0)} ms${receipt ? `; receipt ${JSON.stringify(decodeXPaymentResponse(receipt))}` : ''}`);
console.log(await res.text());
