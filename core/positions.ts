/**
 * Positions per (wallet, token) with average-cost accounting, as of a moment T (only data stamped <= T).
 *
 * Average cost is a recurrence: a buy of q at p adds q*p to the cost basis; a sell of q scales the basis by
 * (held - q) / held and realizes q * (p - basis/held). It is solved in SQL with window sums:
 * cost_i = a_i * cost_{i-1} + b_i  =>  cost_i = exp(L_i) * sum_{j<=i} b_j exp(-L_j),  L_i = sum_{k<=i} ln a_k,
 * restarted at every full close (an "episode"), so 100M events need no row-by-row loop.
 *
 * Inventory moves are valued at the mid at their time, scaled so that value is conserved: a split's two tokens
 * cost exactly the USDC paid, a merge's two tokens sell for exactly the USDC received, a neg-risk conversion's
 * NO tokens leave at their mid value and the YES tokens received carry that value (less any USDC received). When
 * the USDC received alone is worth more than the NO tokens' mids say, or is all that is received (every question's
 * NO converted), the NO tokens leave for exactly that USDC and the YES tokens received cost nothing.
 * A wallet's total P&L is therefore exact whatever the split between its tokens. Resolution realizes every share
 * still held at its payout (redeemed or not); redemptions after it move tokens to USDC at the value already
 * realized. Fees are the taker's: they raise a buy's cost and lower a sell's proceeds. Money and shares are rounded
 * to 6 decimals (USDC's atomic unit), prices to 9: a rebuild gives the same figures whatever order threads summed in.
 */
import { tsLiteral, type AsOf, type QueryRunner } from './query.ts';

/** Shares below this count as a closed position (dust left by rounding). */
export const DUST_SHARES = 1e-6;
/** The +/- USD band inside which the winning side decides WON/LOST (spec: position dust band). */
export const PNL_BAND_USD = 0.01;

/** Position key packed in one BIGINT (wallet << 32 | market << 1 | outcome): one integer to partition and sort on. */
const PK = `(wallet_id::BIGINT << 32) | (market_id::BIGINT << 1) | outcome_index::BIGINT`;

/**
 * Every position-changing event up to T, with a signed quantity and an effective price per share. Events of one
 * position are ordered by (ts, log_index): on chain, log_index numbers a block's logs in execution order; at equal
 * (ts, log_index) inventory comes first, and of two legs of one self-matched fill the buy.
 */
export function positionEventsSql(asOf: AsOf): string {
  const T = tsLiteral(asOf);
  return `
  fill_ev AS (
    SELECT ${PK} AS pk, ts, 1 AS ord, log_index,
           CASE side WHEN 'BUY' THEN shares ELSE -shares END AS q,
           CASE side WHEN 'BUY' THEN price + fee_usdc / shares ELSE price - fee_usdc / shares END AS px,
           CASE side WHEN 'BUY' THEN shares ELSE 0 END AS buy_q,
           CASE side WHEN 'BUY' THEN price * shares ELSE 0 END AS buy_notional,
           size_usdc, 1 AS is_trade
    FROM fill_legs WHERE ts <= ${T}),
  inv_legs AS (
    SELECT l.wallet_id, l.market_id, l.outcome_index, i.ts, i.kind, i.tx_hash, i.log_index, i.usdc_delta,
           l.shares_delta AS q, coalesce(m.mid, 0.5) AS mid
    FROM inventory_legs l JOIN inventory_events i USING (tx_hash, log_index)
    ASOF LEFT JOIN mids m ON m.market_id = l.market_id AND m.outcome_index = l.outcome_index AND m.ts <= i.ts
    WHERE i.ts <= ${T} AND i.kind <> 'REDEEM'),
  inv_valued AS (
    SELECT *,
      sum(CASE WHEN q < 0 THEN -q * mid ELSE 0 END) OVER ev AS out_value,
      sum(CASE WHEN q > 0 THEN q * mid ELSE 0 END) OVER ev AS in_value
    FROM inv_legs WINDOW ev AS (PARTITION BY tx_hash, log_index)),
  inv_ev AS (
    SELECT ${PK} AS pk, ts, 0 AS ord, log_index, q,
      round(CASE
        WHEN kind = 'SPLIT' THEN mid * (-usdc_delta) / nullif(in_value, 0)
        WHEN kind = 'MERGE' THEN mid * usdc_delta / nullif(out_value, 0)
        -- CONVERT: the NO legs leave at their mid, unless nothing is received but USDC (every NO of the group
        -- converted) or the mids value them below the USDC received: then they leave for exactly that USDC.
        WHEN q < 0 AND (in_value = 0 OR out_value < usdc_delta) THEN mid * usdc_delta / out_value
        WHEN q < 0 THEN mid
        ELSE mid * greatest(out_value - usdc_delta, 0) / nullif(in_value, 0)
      END, 12) AS px,
      0.0 AS buy_q, 0.0 AS buy_notional, 0.0 AS size_usdc, 0 AS is_trade
    FROM inv_valued),
  ev AS (SELECT * FROM fill_ev UNION ALL SELECT * FROM inv_ev)`;
}

/**
 * SQL (a SELECT) of every position as of T. Columns: wallet_id, market_id, outcome_index, shares, cost_basis,
 * avg_price, bought_shares, entry_price, realized_pnl, unrealized_pnl, total_pnl, volume_usdc, trades,
 * first_ts, last_ts, resolved, winner_index, is_void, payout, redeemed_shares, mark, status, pnl_label.
 */
export function positionsSql(asOf: AsOf): string {
  const T = tsLiteral(asOf);
  return `WITH ${positionEventsSql(asOf)},
  seq AS (
    SELECT *, sum(q) OVER k AS held_after, row_number() OVER k AS n
    FROM ev WINDOW k AS (PARTITION BY pk ORDER BY ts, log_index, ord, q DESC ROWS UNBOUNDED PRECEDING)),
  epi AS (
    SELECT *, held_after - q AS held_before,
      -- an event that finds the position empty opens a new episode (the average restarts)
      sum(CASE WHEN held_after - q <= ${DUST_SHARES} THEN 1 ELSE 0 END) OVER (PARTITION BY pk ORDER BY n ROWS UNBOUNDED PRECEDING) AS episode,
      CASE WHEN q < 0 AND held_after - q > ${DUST_SHARES} AND held_after > ${DUST_SHARES} THEN ln(held_after / (held_after - q)) ELSE 0 END AS ln_a,
      CASE WHEN q > 0 THEN q * px ELSE 0 END AS b
    FROM seq),
  cum AS (
    SELECT *, sum(ln_a) OVER (PARTITION BY pk, episode ORDER BY n ROWS UNBOUNDED PRECEDING) AS big_l FROM epi),
  cost AS (
    SELECT *, sum(b * exp(-big_l)) OVER (PARTITION BY pk, episode ORDER BY n ROWS UNBOUNDED PRECEDING) AS g FROM cum),
  -- cost after event i = e^L_i * g_i; cost before it = the same one step back: e^(L_i - ln a_i) * (g_i - b_i e^-L_i)
  steps AS (
    SELECT *,
      CASE WHEN held_after <= ${DUST_SHARES} THEN 0 ELSE exp(big_l) * g END AS cost_after,
      CASE WHEN held_before <= ${DUST_SHARES} THEN 0 ELSE exp(big_l - ln_a) * (g - b * exp(-big_l)) END AS cost_before
    FROM cost),
  pos AS (
    SELECT (pk >> 32)::INTEGER AS wallet_id, ((pk >> 1) & 2147483647)::INTEGER AS market_id, (pk & 1)::UTINYINT AS outcome_index,
      round(greatest(arg_max(held_after, n), 0), 6) AS shares,
      round(arg_max(cost_after, n), 6) AS cost_basis,
      round(sum(CASE WHEN q < 0 THEN -q * (px - CASE WHEN held_before > ${DUST_SHARES} THEN cost_before / held_before ELSE px END) ELSE 0 END), 6) AS trade_pnl,
      round(sum(buy_q), 6) AS bought_shares,
      round(sum(buy_notional) / nullif(sum(buy_q), 0), 9) AS entry_price,
      round(sum(size_usdc), 6) AS volume_usdc,
      sum(is_trade)::INTEGER AS trades,
      min(ts) AS first_ts, max(ts) AS last_ts
    FROM steps GROUP BY pk),
  res AS (SELECT * FROM resolutions WHERE resolved_at <= ${T}),
  redeemed AS (
    SELECT l.wallet_id, l.market_id, l.outcome_index, -sum(l.shares_delta) AS redeemed_shares
    FROM inventory_legs l JOIN inventory_events i USING (tx_hash, log_index)
    WHERE i.kind = 'REDEEM' AND i.ts <= ${T} GROUP BY ALL),
  latest_mid AS (SELECT market_id, outcome_index, arg_max(mid, ts) AS mark FROM mids WHERE ts <= ${T} GROUP BY ALL),
  marks AS (SELECT p.*, mk.mark FROM pos p LEFT JOIN latest_mid mk USING (market_id, outcome_index)),
  valued AS (
    SELECT m.*, r.market_id IS NOT NULL AS resolved, r.winner_index, (r.market_id IS NOT NULL AND (r.winner IS NULL OR r.winner = 'INVALID')) AS is_void,
      CASE WHEN r.market_id IS NULL THEN NULL WHEN m.outcome_index = 0 THEN r.payout_yes ELSE r.payout_no END AS payout,
      coalesce(d.redeemed_shares, 0) AS redeemed_shares
    FROM marks m LEFT JOIN res r USING (market_id) LEFT JOIN redeemed d USING (wallet_id, market_id, outcome_index)),
  ${positionPnlSql()}`;
}

/**
 * The P&L and label columns of positions, as the tail of a WITH: a CTE `pnl` over a relation `valued` (the position
 * columns plus resolved, winner_index, is_void, payout, redeemed_shares, mark), then the SELECT of every public
 * position column followed by `extra` columns of `valued`. Shared by positionsSql and the live engine's a_positions.
 */
export function positionPnlSql(extra: readonly string[] = []): string {
  return `pnl AS (
    SELECT *,
      round(CASE WHEN resolved THEN trade_pnl + shares * payout - cost_basis ELSE trade_pnl END, 6) AS realized_pnl,
      CASE WHEN resolved THEN 0 ELSE ${openUnrealizedPnlSql('mark')} END AS unrealized_pnl
    FROM valued)
  SELECT wallet_id, market_id, outcome_index, shares, cost_basis,
    cost_basis / nullif(shares, 0) AS avg_price, bought_shares, entry_price,
    realized_pnl, unrealized_pnl, realized_pnl + unrealized_pnl AS total_pnl, volume_usdc, trades, first_ts, last_ts,
    resolved, winner_index, is_void, payout, redeemed_shares, mark,
    CASE WHEN resolved THEN ${labelSql('realized_pnl', 'outcome_index', 'winner_index', 'is_void')} END AS pnl_label,
    CASE WHEN NOT resolved THEN 'OPEN'
         WHEN payout > 0 AND shares - redeemed_shares > ${DUST_SHARES} THEN 'REDEEMABLE'
         ELSE ${labelSql('realized_pnl', 'outcome_index', 'winner_index', 'is_void')} END AS status${extra.map((c) => `, ${c}`).join('')}
  FROM pnl`;
}

/**
 * The unrealized P&L of a position not resolved (columns shares and cost_basis) at the mark `mark`: its shares at the
 * mark (at cost when there is none) less their cost, in micro-USDC. A refresh that moves marks adds the change of this
 * figure to the wallets' sums (core/analytics/refresh.ts), so both read it here.
 */
export function openUnrealizedPnlSql(mark: string): string {
  return `round(shares * coalesce(${mark}, cost_basis / nullif(shares, 0), 0) - cost_basis, 6)`;
}

/** The methodology's label rule as SQL over a resolved position's final P&L (NULL when unresolved). */
export function labelSql(pnl: string, outcome: string, winnerIndex: string, isVoid: string): string {
  return `CASE WHEN ${pnl} > ${PNL_BAND_USD} THEN 'WON'
    WHEN ${pnl} < -${PNL_BAND_USD} THEN 'LOST'
    WHEN ${isVoid} THEN 'VOID'
    WHEN ${winnerIndex} = ${outcome} THEN 'WON'
    ELSE 'LOST' END`;
}

export type PositionLabel = 'WON' | 'LOST' | 'VOID';
export type PositionStatus = PositionLabel | 'REDEEMABLE' | 'OPEN';

/**
 * The same rule in TypeScript. `isVoid` covers INVALID and ties / multi-outcome payouts (winner null): both sides
 * are paid by numerators, so no side "won" and the band case reads VOID.
 */
export function labelPosition(pnl: number, outcome: number, winnerIndex: number, isVoid: boolean): PositionLabel {
  if (pnl > PNL_BAND_USD) return 'WON';
  if (pnl < -PNL_BAND_USD) return 'LOST';
  if (isVoid) return 'VOID';
  return winnerIndex === outcome ? 'WON' : 'LOST';
}

/** win_rate_pct = 100 * WON / (WON + LOST); null (never 0) when nothing is resolved. */
export function winRatePct(labels: readonly PositionLabel[]): number | null {
  let won = 0;
  let lost = 0;
  for (const l of labels) {
    if (l === 'WON') won++;
    else if (l === 'LOST') lost++;
  }
  return won + lost === 0 ? null : (100 * won) / (won + lost);
}

export interface PositionRow {
  wallet_id: number;
  market_id: number;
  outcome_index: number;
  shares: number;
  cost_basis: number;
  avg_price: number | null;
  bought_shares: number;
  entry_price: number | null;
  realized_pnl: number;
  unrealized_pnl: number;
  total_pnl: number;
  volume_usdc: number;
  trades: number;
  resolved: boolean;
  winner_index: number | null;
  is_void: boolean;
  payout: number | null;
  redeemed_shares: number;
  mark: number | null;
  pnl_label: PositionLabel | null;
  status: PositionStatus;
}

export async function positionsAsOf(db: QueryRunner, asOf: AsOf, where = ''): Promise<PositionRow[]> {
  return db.all<PositionRow>(`SELECT * FROM (${positionsSql(asOf)}) ${where ? `WHERE ${where}` : ''} ORDER BY wallet_id, market_id, outcome_index`);
}
