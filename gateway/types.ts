/** Re-export: the x402 shapes live in the payment module (gateway/payment/types.ts), which MCP may import. */
export * from './payment/types.ts';
