import { winnerLabelSql } from '../outcomes.ts';
import { z } from 'zod';
import type { AsOf, QueryRunner } from '../query.ts';

// ---------------------------------------------------------------------------------------------------------------
// Rules and bounds (docs/api-public.md)
// ---------------------------------------------------------------------------------------------------------------

/** The default preset board of the public surfaces (trader teaser rank, leaderboard): every active wallet can enter it. */
export const PUBLIC_BOARD = 'top-pnl';
export const MARKET_STATES = ['UPCOMING', 'LIVE', 'CLOSED', 'RESOLVED'] as const;
export type MarketState = (typeof MARKET_STATES)[number];

// ---------------------------------------------------------------------------------------------------------------
// Errors and small helpers
// ---------------------------------------------------------------------------------------------------------------

export class PublicError extends Error {
  constructor(
    readonly code: 'not_found' | 'analytics_missing',
    message: string,
  ) {
    super(message);
    this.name = 'PublicError';
  }
}

export function num(v: unknown): number | null {
  if (v === null || v === undefined) return null;
  const n = typeof v === 'bigint' ? Number(v) : typeof v === 'number' ? v : Number(v);
  return Number.isFinite(n) ? n : null;
}
export const num0 = (v: unknown): number => num(v) ?? 0;
export const int0 = (v: unknown): number => Math.round(num0(v));
export const str = (v: unknown): string => (v === null || v === undefined ? '' : String(v));
export function isoOrEmpty(v: unknown): string {
  if (v === null || v === undefined) return '';
  const d = v instanceof Date ? v : new Date(typeof v === 'bigint' ? Number(v) : (v as string | number));
  return Number.isNaN(d.getTime()) ? '' : d.toISOString();
}
export const ageSeconds = (t: AsOf, then: Date) => Math.max(0, Math.floor((t.getTime() - then.getTime()) / 1000));
export const sqlStr = (s: string) => `'${s.replaceAll("'", "''")}'`;
export const WALLET_ADDRESS_IN_TEXT = /0x[0-9a-fA-F]{40}(?![0-9a-fA-F])/;
/** A name that would print a wallet address (e.g. a username set to one) is replaced by `fallback`. */
export function safeLabel(s: string, fallback: string): string {
  return WALLET_ADDRESS_IN_TEXT.test(s) ? fallback : s;
}

/** The analytics build's as_of, or null when there is none. */
export async function buildAsOf(db: QueryRunner): Promise<Date | null> {
  const [t] = await db.all<{ n: number }>(`SELECT count(*)::INTEGER AS n FROM information_schema.tables WHERE table_name = 'a_meta'`);
  if (!num0(t?.n)) return null;
  const [m] = await db.all<{ as_of: Date }>(`SELECT as_of FROM a_meta ORDER BY as_of DESC LIMIT 1`);
  return m ? new Date(m.as_of) : null;
}

/** The build's as_of; PublicError analytics_missing without a build (or, with `boards`, without its ranking tables). */
export async function requireBuild(db: QueryRunner, boards = false): Promise<Date> {
  const b = await buildAsOf(db);
  if (!b) throw new PublicError('analytics_missing', 'no analytics build yet');
  if (boards) {
    const [t] = await db.all<{ n: number }>(`SELECT count(DISTINCT table_name)::INTEGER AS n FROM information_schema.tables WHERE table_name IN ('a_board', 'a_rank_base')`);
    if (num0(t?.n) < 2) throw new PublicError('analytics_missing', 'the analytics build has no ranking boards');
  }
  return b;
}

/** The T of a public request: the caller's clock, never before the build (a build is never read as of an earlier T). */
export function publicT(now: AsOf, build: Date | null): Date {
  return build && build.getTime() > now.getTime() ? build : now;
}

/**
 * SQL expression of a market's state at T over markets `m` LEFT JOIN resolutions `r`: RESOLVED once its resolution is
 * stamped <= T; CLOSED once trading ended (actual close <= T, or the scheduled close passed) and no resolution yet;
 * UPCOMING before trading opens; LIVE otherwise.
 */
export function marketStateSql(T: string, m = 'm', r = 'r'): string {
  return `CASE WHEN ${r}.resolved_at IS NOT NULL AND ${r}.resolved_at <= ${T} THEN 'RESOLVED'
    WHEN (${m}.closed_at IS NOT NULL AND ${m}.closed_at <= ${T}) OR ${m}.end_date <= ${T} THEN 'CLOSED'
    WHEN ${m}.trading_opens_at > ${T} THEN 'UPCOMING' ELSE 'LIVE' END`;
}

/**
 * winner_outcome: YES / NO (or the venue's names of the outcomes, core/outcomes.ts) / INVALID once resolved by T; ""
 * before, and for a tie or multi-outcome payout (no winner). `m`: the market's alias (its outcome_labels).
 */
export function winnerSql(T: string, r = 'r', m = 'm'): string {
  return `CASE WHEN ${r}.resolved_at IS NOT NULL AND ${r}.resolved_at <= ${T} THEN coalesce(${winnerLabelSql(m, `${r}.winner`)}, '') ELSE '' END`;
}

// ---------------------------------------------------------------------------------------------------------------
// Output schemas
// ---------------------------------------------------------------------------------------------------------------

export const count = z.number().int().nonnegative();
export const usd = z.number();
export const price = z.number().min(0).max(1);
/** A number the venue or the service may not have: null, never 0 (docs/api-public.md). */
export const maybe = <T extends z.ZodNumber>(s: T) => s.nullable();

// ---------------------------------------------------------------------------------------------------------------
// Query schemas (strict: an unknown parameter is a ZodError, which the surfaces map to 400)
// ---------------------------------------------------------------------------------------------------------------

export const intParam = (b: { min: number; max: number; default: number }) => z.coerce.number().int().min(b.min).max(b.max).default(b.default);
export const NoQuery = z.strictObject({});
