import { positionsSql } from '../positions.ts';
import type { AsOf, QueryRunner } from '../query.ts';
import { num0 } from './shared.ts';

// ---------------------------------------------------------------------------------------------------------------
// Identity and scoping
// ---------------------------------------------------------------------------------------------------------------

export interface TraderIdentity {
  wallet_id: number;
  /** the proxy wallet, 0x + 40 hex, lowercase */
  address: string;
  username: string | null;
  pseudonym: string;
}

/**
 * A wallet by its internal id (number) or its proxy address (0x + 40 hex, any case). Null when unknown or when the
 * reference is neither form.
 */
export async function resolveTrader(db: QueryRunner, wallet: number | string): Promise<TraderIdentity | null> {
  let where: string;
  let value: unknown;
  if (typeof wallet === 'number') {
    if (!Number.isSafeInteger(wallet) || wallet < 0 || wallet > 2 ** 31 - 1) return null;
    where = 'wallet_id = $1::INTEGER';
    value = wallet;
  } else if (/^0x[0-9a-fA-F]{40}$/.test(wallet)) {
    where = 'address = $1';
    value = wallet.toLowerCase();
  } else return null;
  const [row] = await db.all<TraderIdentity>(`SELECT wallet_id, address, username, pseudonym FROM wallets WHERE ${where} LIMIT 1`, [value]);
  return row ? { wallet_id: num0(row.wallet_id), address: row.address, username: row.username ?? null, pseudonym: row.pseudonym } : null;
}

/**
 * positionEventsSql's `ev` rows carry the position as one packed key, pk = wallet << 32 | market << 1 | outcome,
 * and positionsSql orders a position's events by (ts, log_index, ord, q desc). The episode and top-ROI queries
 * below read `ev` directly, so they decode the key and use the same order (tested against positionsSql).
 */
export const PK_WALLET = '(pk >> 32)::INTEGER';
export const PK_MARKET = '((pk >> 1) & 2147483647)::INTEGER';
export const PK_OUTCOME = '(pk & 1)::UTINYINT';
export const EVENT_ORDER = 'ts, log_index, ord, q DESC';

const schemaCache = new WeakMap<QueryRunner, string>();
/** The schema the unqualified venue names resolve to (the CTEs below must name the real relations explicitly). */
export async function venueSchema(db: QueryRunner): Promise<string> {
  const cached = schemaCache.get(db);
  if (cached) return cached;
  const [row] = await db.all<{ s: string }>(`SELECT current_schema() AS s`);
  const s = `"${(row?.s ?? 'main').replaceAll('"', '""')}"`;
  schemaCache.set(db, s);
  return s;
}

/**
 * CTEs (without the WITH keyword) that shadow the venue relations read by positionsSql, walletAlphaSql and
 * walletFeaturesSql with one wallet's rows: its fill legs, its inventory events and legs (every leg of an inventory
 * event belongs to the event's wallet), and the mids of the markets it touched.
 */
export function walletScopeSql(schema: string, walletId: number): string {
  if (!Number.isSafeInteger(walletId)) throw new Error('wallet id must be an integer');
  return `fill_legs AS (SELECT * FROM ${schema}.fill_legs WHERE wallet_id = ${walletId}),
  inventory_events AS (SELECT * FROM ${schema}.inventory_events WHERE wallet_id = ${walletId}),
  inventory_legs AS (SELECT * FROM ${schema}.inventory_legs WHERE wallet_id = ${walletId}),
  mids AS (SELECT * FROM ${schema}.mids WHERE market_id IN (SELECT market_id FROM fill_legs UNION SELECT market_id FROM inventory_legs))`;
}

/** SQL (a SELECT) of one wallet's positions as of T: positionsSql over the wallet-scoped venue. */
export function walletPositionsSql(schema: string, walletId: number, asOf: AsOf): string {
  return `WITH ${walletScopeSql(schema, walletId)}
    SELECT * FROM (${positionsSql(asOf)}) wp WHERE wallet_id = ${walletId}`;
}
