/**
 * Addresses that are never traders. A source puts one in a party field when it does not name the party (the zero
 * address) or when one of the venue's contracts stands between users (an exchange as the taker of its own
 * aggressor summary, the NegRiskAdapter splitting or redeeming on a user's behalf, an operator filling an order).
 * Booked as a wallet, such an address collects one side of every trade it appears in and tops every board
 * (issue 20), so the loaders store NULL for the party instead, or skip the row when the party is the only one it
 * has (docs/ingest.md, "Unknown and placeholder parties").
 */
import { DEFAULT_CHAIN_CONFIG, type ChainConfig } from './rpc-log.ts';

export const ZERO_ADDRESS = '0x0000000000000000000000000000000000000000';

// Loaders ask once per row: each config's set is built once.
const byConfig = new WeakMap<ChainConfig, ReadonlySet<string>>();

/** The zero address plus every contract and operator address of `config`, lowercase. */
export function placeholderAddresses(config: ChainConfig = DEFAULT_CHAIN_CONFIG): ReadonlySet<string> {
  const cached = byConfig.get(config);
  if (cached) return cached;
  const set = new Set(
    [ZERO_ADDRESS, ...config.ctfExchanges, ...config.negRiskExchanges, ...config.negRiskAdapters, ...config.collateralAdapters, ...config.conditionalTokens, ...config.operators].map((a) =>
      a.toLowerCase(),
    ),
  );
  byConfig.set(config, set);
  return set;
}

/** The placeholders of the default (Polygon V1) contracts. */
export const PLACEHOLDER_ADDRESSES: ReadonlySet<string> = placeholderAddresses(DEFAULT_CHAIN_CONFIG);

/** True when `address` (any case) is the zero address or a contract / operator address of `config`. */
export function isPlaceholder(address: string, config: ChainConfig = DEFAULT_CHAIN_CONFIG): boolean {
  return placeholderAddresses(config).has(address.toLowerCase());
}
