/**
 * Prices, networks and the v1 PaymentRequirements built from them. Prices are decimal USD strings converted to
 * the asset's atomic units with integer arithmetic only (the reference middleware's float conversion turns
 * "$2.01" into 2009999.9999999998).
 */
import { getAddress } from 'viem';
import type { PaymentRequirements } from './types.ts';

export interface NetworkConfig {
  /** wire name */
  network: string;
  chainId: number;
  /** the USDC contract; the local development chain deploys its own */
  usdc: `0x${string}`;
  /** the token's EIP-712 domain */
  eip712: { name: string; version: string };
  decimals: number;
}

export const NETWORKS: Readonly<Record<string, NetworkConfig>> = {
  base: { network: 'base', chainId: 8453, usdc: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913', eip712: { name: 'USD Coin', version: '2' }, decimals: 6 },
  'base-sepolia': { network: 'base-sepolia', chainId: 84532, usdc: '0x036CbD53842c5426634e7929541eC2318f3dCF7e', eip712: { name: 'USDC', version: '2' }, decimals: 6 },
  polygon: { network: 'polygon', chainId: 137, usdc: '0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359', eip712: { name: 'USD Coin', version: '2' }, decimals: 6 },
  'polygon-amoy': { network: 'polygon-amoy', chainId: 80002, usdc: '0x41E94Eb019C0762f9Bfcf9Fb1E58725BfB0e7582', eip712: { name: 'USDC', version: '2' }, decimals: 6 },
};

/** "0.005" USD → "5000" atomic units (6 decimals), exactly; throws on anything that is not a plain decimal. */
export function usdToAtomic(usd: string, decimals = 6): string {
  const m = /^(\d+)(?:\.(\d+))?$/.exec(usd.trim().replace(/^\$/, ''));
  if (!m) throw new Error(`not a decimal amount: ${usd}`);
  const whole = m[1]!;
  const frac = m[2] ?? '';
  if (frac.length > decimals && /[1-9]/.test(frac.slice(decimals))) throw new Error(`${usd} has more precision than ${decimals} decimals`);
  const atomic = BigInt(whole) * 10n ** BigInt(decimals) + BigInt((frac + '0'.repeat(decimals)).slice(0, decimals) || '0');
  return atomic.toString();
}

/** "5000" atomic units → "0.005" */
export function atomicToUsd(atomic: string, decimals = 6): string {
  const v = BigInt(atomic);
  const d = 10n ** BigInt(decimals);
  const frac = (v % d).toString().padStart(decimals, '0').replace(/0+$/, '');
  return `${v / d}${frac ? `.${frac}` : ''}`;
}

export interface PricedRoute {
  /** stable id, also used by MCP tools */
  id: string;
  method: 'GET' | 'POST';
  /** express path under the gateway mount */
  path: string;
  price_usd: string;
  description: string;
}

/** The agent tier's price list (spec prices where the spec names one; the rest are ours, docs/gateway.md). */
export const AGENT_ROUTES: readonly PricedRoute[] = [
  { id: 'trader.playbook', method: 'GET', path: '/v1/agent/trader/:proxy/playbook', price_usd: '0.01', description: "A trader's playbook: style, edge, entry habits, copy verdict and plain-language rules" },
  { id: 'market.flow', method: 'GET', path: '/v1/agent/market/:conditionId/flow', price_usd: '0.005', description: 'Order flow on a market by cohort (smart money, whales, liquidity providers, everyone else)' },
  { id: 'rankings.custom', method: 'POST', path: '/v1/agent/rankings/custom', price_usd: '0.05', description: 'A custom composite ranking over every wallet (the RankingConfig of GET /v1/rankings, as JSON)' },
  { id: 'rankings.preset', method: 'GET', path: '/v1/agent/rankings/preset/:slug', price_usd: '0.01', description: 'A preset ranking with its breakdown columns' },
  { id: 'rankings.published', method: 'GET', path: '/v1/agent/rankings/published/:slug', price_usd: '0.005', description: "A preset's published daily top-100 board (latest, or ?date=YYYY-MM-DD)" },
  { id: 'leaderboard', method: 'GET', path: '/v1/agent/leaderboard', price_usd: '0.002', description: 'The leaderboard (top P&L board) with calibration excess z and its percentile' },
  { id: 'trader.positions', method: 'GET', path: '/v1/agent/trader/:proxy/positions', price_usd: '0.005', description: "A trader's positions with status and winner_outcome (cursor pages)" },
  { id: 'signals.smart_money', method: 'GET', path: '/v1/agent/signals/smart-money', price_usd: '0.02', description: 'Recent fills of 5,000 USD or more by wallets with a smart-money tag' },
];

/** MCP tools that keyless agents pay for (same prices as their REST counterparts where there is one). */
export const TOOL_PRICES: Readonly<Record<string, string>> = {
  rank_traders: '0.01',
  'rank_traders.custom': '0.05',
  get_trader: '0.01',
  get_trader_positions: '0.005',
  get_market: '0.005',
  get_smart_money_signals: '0.02',
};

export interface PaymentTerms {
  network: NetworkConfig;
  /** the asset to be paid in (default: the network's USDC) */
  asset?: `0x${string}`;
  payTo: `0x${string}`;
  maxTimeoutSeconds?: number;
}

export function requirementsFor(terms: PaymentTerms, priceUsd: string, resource: string, description: string, mimeType = 'application/json'): PaymentRequirements {
  return {
    scheme: 'exact',
    network: terms.network.network,
    maxAmountRequired: usdToAtomic(priceUsd, terms.network.decimals),
    resource,
    description,
    mimeType,
    payTo: getAddress(terms.payTo),
    maxTimeoutSeconds: terms.maxTimeoutSeconds ?? 60,
    asset: getAddress(terms.asset ?? terms.network.usdc),
    extra: { name: terms.network.eip712.name, version: terms.network.eip712.version },
  };
}
