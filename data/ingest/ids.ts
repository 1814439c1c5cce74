/**
 * Dictionary ids: large tables refer to wallets and markets by small integers. Wallets are resolved-or-inserted
 * (wallet_id = max + 1, dense, in first-seen order), except placeholder addresses, which never become wallets;
 * markets and tokens are looked up (markets are only created by the Gamma loader, which knows their condition and
 * token ids).
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import { queryRows } from '../duckdb.ts';
import { pseudonymFor } from '../names.ts';
import { insertNew, stageKeys } from './insert.ts';
import { isPlaceholder } from './placeholders.ts';
import { DEFAULT_CHAIN_CONFIG, type ChainConfig } from './rpc-log.ts';

export interface WalletProfile {
  address: string;
  username?: string | null;
  pseudonym?: string | null;
  profileImage?: string | null;
}

const ADDRESS_RE = /^0x[0-9a-f]{40}$/;

/** Lowercase and check a wallet address; throws because loaders validate addresses before they get here. */
export function normalizeAddress(address: string): `0x${string}` {
  const a = address.toLowerCase();
  if (!ADDRESS_RE.test(a)) throw new Error(`not a wallet address: ${address}`);
  return a as `0x${string}`;
}

/**
 * Map each address to its wallet_id, inserting unknown ones. A profile (username, pseudonym, image) is used only
 * when the wallet is new; existing rows are never rewritten. A placeholder address (the zero address, a contract or
 * operator of `config`: placeholders.ts) is refused: it gets no wallet and is absent from the map, and the caller
 * stores NULL for that party or skips the row.
 */
export async function resolveWallets(
  conn: DuckDBConnection,
  wallets: Iterable<string | WalletProfile>,
  config: ChainConfig = DEFAULT_CHAIN_CONFIG,
): Promise<Map<string, number>> {
  const profiles = new Map<string, WalletProfile>();
  for (const w of wallets) {
    const p = typeof w === 'string' ? { address: w } : w;
    const address = normalizeAddress(p.address);
    if (isPlaceholder(address, config)) continue;
    const seen = profiles.get(address);
    // Keep the first profile that carries a name.
    if (!seen || (!seen.pseudonym && !seen.username)) profiles.set(address, { ...p, address });
  }
  const ids = new Map<string, number>();
  if (profiles.size === 0) return ids;
  const keys = await stageKeys(conn, 'wallets', profiles.keys());
  const existing = await queryRows<{ address: string; wallet_id: number }>(
    conn,
    `SELECT w.address, w.wallet_id FROM wallets w JOIN ${keys} k ON w.address = k.k`,
  );
  for (const r of existing) ids.set(r.address, r.wallet_id);
  const missing = [...profiles.values()].filter((p) => !ids.has(p.address));
  if (missing.length === 0) return ids;
  let next = await nextId(conn, 'wallets', 'wallet_id');
  const rows = missing.map((p) => {
    const id = next++;
    ids.set(p.address, id);
    return {
      wallet_id: id,
      address: p.address,
      username: p.username || null,
      pseudonym: p.pseudonym || walletPseudonym(p.address),
      profile_image: p.profileImage || null,
      verified: false,
    };
  });
  await insertNew(conn, 'wallets', rows, ['address']);
  return ids;
}

/** One wallet's id; null for a placeholder address (see resolveWallets). */
export async function resolveWallet(conn: DuckDBConnection, wallet: string | WalletProfile, config: ChainConfig = DEFAULT_CHAIN_CONFIG): Promise<number | null> {
  const ids = await resolveWallets(conn, [wallet], config);
  return ids.get(normalizeAddress(typeof wallet === 'string' ? wallet : wallet.address)) ?? null;
}

/** The stable two-word pseudonym shown for an address (data/names.ts). */
export function walletPseudonym(address: string): string {
  return pseudonymFor(normalizeAddress(address));
}

export interface MarketRef {
  marketId: number;
  conditionId: string;
  yesTokenId: string;
  noTokenId: string;
  negRisk: boolean;
  negRiskMarketId: string | null;
}

export interface TokenRef {
  tokenId: string;
  marketId: number;
  outcomeIndex: 0 | 1;
  conditionId: string;
  negRisk: boolean;
  negRiskMarketId: string | null;
}

interface MarketRow {
  market_id: number;
  condition_id: string;
  yes_token_id: string;
  no_token_id: string;
  neg_risk: boolean;
  neg_risk_market_id: string | null;
}

const MARKET_COLUMNS = 'm.market_id, m.condition_id, m.yes_token_id, m.no_token_id, m.neg_risk, m.neg_risk_market_id';

function marketRef(r: MarketRow): MarketRef {
  return { marketId: r.market_id, conditionId: r.condition_id, yesTokenId: r.yes_token_id, noTokenId: r.no_token_id, negRisk: r.neg_risk, negRiskMarketId: r.neg_risk_market_id };
}

/** Markets by condition id (matched lowercase); unknown ids are absent from the map. */
export async function lookupMarketsByCondition(conn: DuckDBConnection, conditionIds: Iterable<string>): Promise<Map<string, MarketRef>> {
  const out = new Map<string, MarketRef>();
  const wanted = [...new Set([...conditionIds].map((c) => c.toLowerCase()))];
  if (wanted.length === 0) return out;
  const keys = await stageKeys(conn, 'conditions', wanted);
  const rows = await queryRows<MarketRow>(conn, `SELECT ${MARKET_COLUMNS} FROM markets m JOIN ${keys} k ON m.condition_id = k.k`);
  for (const r of rows) out.set(r.condition_id, marketRef(r));
  return out;
}

/** Markets by internal id. */
export async function lookupMarketsById(conn: DuckDBConnection, marketIds: Iterable<number>): Promise<Map<number, MarketRef>> {
  const out = new Map<number, MarketRef>();
  const wanted = [...new Set(marketIds)];
  if (wanted.length === 0) return out;
  const keys = await stageKeys(conn, 'market_ids', wanted.map(String));
  const rows = await queryRows<MarketRow>(conn, `SELECT ${MARKET_COLUMNS} FROM markets m JOIN ${keys} k ON m.market_id::VARCHAR = k.k`);
  for (const r of rows) out.set(r.market_id, marketRef(r));
  return out;
}

/** Tokens by their uint256 decimal id, with market and outcome index; unknown ids are absent. */
export async function lookupTokens(conn: DuckDBConnection, tokenIds: Iterable<string>): Promise<Map<string, TokenRef>> {
  const out = new Map<string, TokenRef>();
  const wanted = [...new Set(tokenIds)];
  if (wanted.length === 0) return out;
  const keys = await stageKeys(conn, 'tokens', wanted);
  const rows = await queryRows<MarketRow & { token_id: string; outcome_index: number }>(
    conn,
    `SELECT t.token_id, t.outcome_index, ${MARKET_COLUMNS}
     FROM tokens t JOIN ${keys} k ON t.token_id = k.k JOIN markets m ON m.market_id = t.market_id`,
  );
  for (const r of rows) {
    out.set(r.token_id, {
      tokenId: r.token_id,
      marketId: r.market_id,
      outcomeIndex: r.outcome_index === 0 ? 0 : 1,
      conditionId: r.condition_id,
      negRisk: r.neg_risk,
      negRiskMarketId: r.neg_risk_market_id,
    });
  }
  return out;
}

/** max(id) + 1 over a table (1 for an empty table). */
export async function nextId(conn: DuckDBConnection, table: 'wallets' | 'markets', column: 'wallet_id' | 'market_id'): Promise<number> {
  const [row] = await queryRows<{ next: number }>(conn, `SELECT coalesce(max(${column}), 0) + 1 AS next FROM ${table}`);
  return row!.next;
}
