/**
 * Row schemas of the venue's data-api (/trades, /activity, /positions), the derived log index for rows that lack
 * one, and the positions parser (positions are a derived view: parsed for reconciliation, never stored).
 */
import { keccak256, stringToHex } from 'viem';
import { z } from 'zod';
import { ReportBuilder, type IngestReport } from './report.ts';
import { addressSchema, bytes32Schema, numberish, optionalField, tokenIdSchema, txHashSchema, unixSecondsSchema } from './zod-types.ts';

const sideSchema = z
  .string()
  .transform((s) => s.toUpperCase())
  .pipe(z.enum(['BUY', 'SELL'], { error: 'expected BUY or SELL' }));

/** Profile fields the data-api repeats on every row; used only when the wallet is new to us. */
const profileFields = {
  name: optionalField(z.string()),
  pseudonym: optionalField(z.string()),
  profileImage: optionalField(z.string()),
};

export const dataApiTradeSchema = z.object({
  proxyWallet: addressSchema,
  side: sideSchema,
  asset: tokenIdSchema,
  conditionId: optionalField(bytes32Schema),
  size: numberish.refine((n) => n > 0, { error: 'size must be > 0' }),
  price: numberish.refine((n) => n > 0 && n < 1, { error: 'price must be in (0,1)' }),
  timestamp: unixSecondsSchema,
  transactionHash: txHashSchema,
  outcomeIndex: optionalField(z.number().int()),
  outcome: optionalField(z.string()),
  title: optionalField(z.string()),
  slug: optionalField(z.string()),
  ...profileFields,
});
export type DataApiTrade = z.output<typeof dataApiTradeSchema>;

/** Fields every activity row has; the per-type schemas below add what that type needs. */
export const dataApiActivityBaseSchema = z.object({
  proxyWallet: addressSchema,
  type: z.string().min(1).transform((s) => s.toUpperCase()),
  timestamp: unixSecondsSchema,
  transactionHash: txHashSchema,
  conditionId: optionalField(bytes32Schema),
  ...profileFields,
});

const amount = numberish.refine((n) => n >= 0, { error: 'must be >= 0' });

/** SPLIT / MERGE: `size` shares of each outcome for `usdcSize` USDC (defaults to size: a full set is 1 USDC). */
export const dataApiSplitMergeSchema = dataApiActivityBaseSchema.extend({
  conditionId: bytes32Schema,
  size: amount,
  usdcSize: optionalField(amount),
});

/** REDEEM: `usdcSize` paid out; `size` tokens redeemed; asset/outcomeIndex only sometimes name the token. */
export const dataApiRedeemSchema = dataApiActivityBaseSchema.extend({
  conditionId: bytes32Schema,
  usdcSize: amount,
  size: optionalField(amount),
  asset: optionalField(tokenIdSchema),
  outcomeIndex: optionalField(z.number().int()),
});

/** CONVERSION (neg-risk): `size` NO shares converted per question, `usdcSize` USDC released. */
export const dataApiConversionSchema = dataApiActivityBaseSchema.extend({
  conditionId: bytes32Schema,
  size: amount,
  usdcSize: optionalField(amount),
});

export const dataApiPositionSchema = z.object({
  proxyWallet: addressSchema,
  asset: tokenIdSchema,
  conditionId: bytes32Schema,
  size: numberish,
  avgPrice: numberish,
  initialValue: numberish,
  currentValue: numberish,
  cashPnl: numberish,
  realizedPnl: numberish,
  redeemable: z.boolean(),
  outcomeIndex: z.number().int().nonnegative(),
  percentPnl: optionalField(numberish),
  totalBought: optionalField(numberish),
  percentRealizedPnl: optionalField(numberish),
  curPrice: optionalField(numberish),
  mergeable: optionalField(z.boolean()),
  negativeRisk: optionalField(z.boolean()),
  outcome: optionalField(z.string()),
  oppositeAsset: optionalField(tokenIdSchema),
  title: optionalField(z.string()),
  slug: optionalField(z.string()),
  endDate: optionalField(z.string()),
});

/** One data-api position, typed, for reconciling our computed positions against the venue's. */
export interface PositionRow {
  wallet: `0x${string}`;
  tokenId: string;
  conditionId: `0x${string}`;
  outcomeIndex: number;
  outcome: string | null;
  size: number;
  avgPrice: number;
  initialValue: number;
  currentValue: number;
  curPrice: number | null;
  cashPnl: number;
  percentPnl: number | null;
  realizedPnl: number;
  totalBought: number | null;
  redeemable: boolean;
  mergeable: boolean | null;
  negativeRisk: boolean | null;
  oppositeTokenId: string | null;
  title: string | null;
  slug: string | null;
}

/** Validate /positions rows; bad rows are skipped and counted. */
export function parsePositions(json: unknown): { rows: PositionRow[]; report: IngestReport } {
  const rb = new ReportBuilder();
  const rows: PositionRow[] = [];
  if (!Array.isArray(json)) {
    rb.skip('invalid:file', 'positions: expected a JSON array');
    return { rows, report: rb.report };
  }
  json.forEach((raw, i) => {
    const r = dataApiPositionSchema.safeParse(raw);
    if (!r.success) return rb.reject(`position[${i}]`, r.error);
    const p = r.data;
    rows.push({
      wallet: p.proxyWallet,
      tokenId: p.asset,
      conditionId: p.conditionId,
      outcomeIndex: p.outcomeIndex,
      outcome: p.outcome ?? null,
      size: p.size,
      avgPrice: p.avgPrice,
      initialValue: p.initialValue,
      currentValue: p.currentValue,
      curPrice: p.curPrice ?? null,
      cashPnl: p.cashPnl,
      percentPnl: p.percentPnl ?? null,
      realizedPnl: p.realizedPnl,
      totalBought: p.totalBought ?? null,
      redeemable: p.redeemable,
      mergeable: p.mergeable ?? null,
      negativeRisk: p.negativeRisk ?? null,
      oppositeTokenId: p.oppositeAsset ?? null,
      title: p.title ?? null,
      slug: p.slug ?? null,
    });
  });
  rb.report.inserted = rows.length;
  return { rows, report: rb.report };
}

/**
 * Log index for a data-api row, which has none: -(1 + low 31 bits of keccak256(key)), in [-2^31, -1]. Negative so
 * it can never collide with a real on-chain log index; derived from the row's content (not its position in the
 * file) so overlapping pages and re-fetches map to the same (tx_hash, log_index).
 */
export function derivedLogIndex(key: string): number {
  const h = keccak256(stringToHex(key));
  return -(1 + (parseInt(h.slice(2, 10), 16) & 0x7fffffff));
}

/** Key of a data-api trade: the fields both /trades and /activity TRADE rows carry. */
export function tradeKey(t: { transactionHash: string; proxyWallet: string; asset: string; side: string; size: number; price: number }): string {
  return ['trade', t.transactionHash, t.proxyWallet, t.asset, t.side, t.size, t.price].join('|');
}

/** Wallet profile from a data-api row: `name` is a username only when it is not just the pseudonym or an address. */
export function profileOf(row: { proxyWallet: string; name?: string | undefined; pseudonym?: string | undefined; profileImage?: string | undefined }) {
  const name = row.name?.trim();
  const username = name && name !== row.pseudonym && !/^0x[0-9a-fA-F]{40}(-\d+)?$/.test(name) ? name : null;
  return { address: row.proxyWallet, username, pseudonym: row.pseudonym ?? null, profileImage: row.profileImage ?? null };
}
