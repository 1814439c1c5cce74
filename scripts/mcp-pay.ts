/**
 * Call one MCP tool as a keyless agent, paying through x402 with the official MCP client and the official x402
 * client (mcp/x402-client.ts): list the tools, call, and when payment is required sign it and call again.
 *   npm run mcp:pay -- <mcp url> <tool> ['<json arguments>'] --key 0x<private key> [--max 0.10]
 * With `npm start` in development, use the demo payer it prints (10 test USDC on the local chain).
 */
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { privateKeyToAccount } from 'viem/accounts';
import { usdToAtomic } from '../gateway/payment/pricing.ts';
import { callToolPaying } from '../mcp/x402-client.ts';

const { values, positionals } = parseArgs({ allowPositionals: true, options: { key: { type: 'string' }, max: { type: 'string' } } });
const [url, tool, json] = positionals;
if (!url || !tool || !values.key) {
  console.error(`usage: npm run mcp:pay -- <mcp url> <tool> ['{"preset":"sharp-forecasters","limit":3}'] --key 0x<private key> [--max 0.10]`);
  process.exit(2);
}
let args: Record<string, unknown> = {};
try {
  args = json ? (JSON.parse(json) as Record<string, unknown>) : {};
} catch {
  console.error('the tool arguments must be a JSON object');
  process.exit(2);
}
const client = new Client({ name: 'mcp-pay', version: '1.0.0' });
await client.connect(new StreamableHTTPClientTransport(new URL(url)));
try {
  // listing first, as agents do: the client then checks every result against the tool's output schema
  await client.listTools();
  const t0 = performance.now();
  const { result, required, receipt } = await callToolPaying(client, privateKeyToAccount(values.key as `0x${string}`), tool, args, BigInt(usdToAtomic(values.max ?? '0.10')));
  const ms = performance.now() - t0;
  const price = required?.accepts[0]?.maxAmountRequired;
  console.error(`${result.isError ? 'error' : 'ok'} in ${ms.toFixed(0)} ms${price ? `; paid ${Number(price) / 1e6} USDC` : '; free'}${receipt ? `; receipt ${JSON.stringify(receipt)}` : ''}`);
  console.log(JSON.stringify(result.structuredContent ?? result.content, null, 2));
  process.exitCode = result.isError ? 1 : 0;
} finally {
  await client.close();
}
