/**
 * Positions (wallet, token) as of T: a_position_state holds what the position stream computes (position-stream.ts),
 * the view a_positions adds what depends on the market as of T — resolution, payout, the latest mid (a_marks) —
 * and the derived P&L and labels; a_holds has the hold episodes. A full build and a refresh write the same rows.
 *
 * Realized P&L comes from sells, merges, conversions and resolution (the payout realizes every share still held,
 * redeemed or not); unrealized marks open shares to the latest mid (at cost when there is none). Labels follow the
 * methodology's 0.01 USD band; REDEEMABLE (resolved in the holder's favour, not yet claimed) is never overwritten.
 */
import { positionPnlSql } from '../positions.ts';
import { tableDdl, type TableColumns } from '../query.ts';


export const POSITION_STATE_COLUMNS = [
  ['wallet_id', 'INTEGER'], ['market_id', 'INTEGER'], ['outcome_index', 'UTINYINT'], ['shares', 'DOUBLE'], ['cost_basis', 'DOUBLE'],
  ['trade_pnl', 'DOUBLE'], ['bought_shares', 'DOUBLE'], ['entry_price', 'DOUBLE'], ['volume_usdc', 'DOUBLE'], ['trades', 'INTEGER'],
  ['n_taker', 'INTEGER'], ['n_buys', 'INTEGER'], ['n_contra', 'INTEGER'], ['first_ts', 'TIMESTAMP'], ['last_ts', 'TIMESTAMP'],
  ['first_fill_ts', 'TIMESTAMP'], ['last_fill_ts', 'TIMESTAMP'], ['first_buy_ts', 'TIMESTAMP'], ['redeemed_shares', 'DOUBLE'],
  ['a1_num', 'DOUBLE'], ['a1_den', 'DOUBLE'], ['a1_n', 'INTEGER'], ['a24_num', 'DOUBLE'], ['a24_den', 'DOUBLE'], ['a24_n', 'INTEGER'],
  ['ares_num', 'DOUBLE'], ['ares_den', 'DOUBLE'], ['ares_n', 'INTEGER'],
  // the stream's state unrounded, to continue from (PositionOut says what each is); NULL in a state migrated from
  // schema 3 until the position is restreamed
  ['raw_shares', 'DOUBLE'], ['raw_cost', 'DOUBLE'], ['raw_pnl', 'DOUBLE'], ['raw_bought', 'DOUBLE'], ['raw_buy_notional', 'DOUBLE'],
  ['raw_volume', 'DOUBLE'], ['last_leg_ts', 'TIMESTAMP'], ['ep_start', 'TIMESTAMP'], ['ep_exit', 'TIMESTAMP'], ['ep_cost', 'DOUBLE'],
  ['episodes', 'INTEGER'],
] as const satisfies TableColumns;

/** The columns of a_position_state a continued position resumes from (schema 4's). */
export const RESUME_COLUMNS = POSITION_STATE_COLUMNS.slice(POSITION_STATE_COLUMNS.findIndex(([n]) => n === 'raw_shares'));

/** The position stream's output: one row per position as of a_meta.as_of (no derived columns; first_ts null: a wallet that only redeemed). */
export const POSITION_STATE_DDL = tableDdl('a_position_state', POSITION_STATE_COLUMNS, ['wallet_id', 'market_id', 'outcome_index']);

/** The latest mid per token as of T (written from the MidIndex, so every reader agrees on ties). */
export const MARKS_DDL = `CREATE TABLE IF NOT EXISTS a_marks (market_id INTEGER NOT NULL, outcome_index UTINYINT NOT NULL, mark DOUBLE NOT NULL)`;

/**
 * a_positions: the state rows with what depends on the market as of the state's T (a_meta.as_of) — resolution,
 * payout, the latest mid — and the derived P&L and labels. A view, so a resolution or a moved mark changes no
 * stored row: the refresh only restreams positions whose own legs or horizons changed.
 */
export const POSITIONS_VIEW_DDL = `CREATE OR REPLACE VIEW a_positions AS ${positionsSql('a_position_state')}`;

/**
 * a_positions of the wallets listed in `walletTable`: their state rows (of a_position_state, or a copy holding them)
 * filtered before the view's joins.
 */
export function walletPositionsSql(walletTable: string, state = 'a_position_state'): string {
  return positionsSql(`(SELECT * FROM ${state} WHERE wallet_id IN (SELECT wallet_id FROM ${walletTable}))`);
}

/**
 * The SELECT of a_positions over `stateSource` (a_position_state, or a subquery of some of its rows: a refresh reads
 * its wallets' positions this way, so the state is filtered before the joins instead of after them).
 */
export function positionsSql(stateSource: string): string {
  return `WITH t AS (SELECT as_of FROM a_meta LIMIT 1),
  valued AS (
    SELECT s.wallet_id, s.market_id, s.outcome_index, s.shares, s.cost_basis, s.trade_pnl, s.bought_shares, s.entry_price,
      s.volume_usdc, s.trades, s.n_taker, s.n_buys, s.n_contra, s.first_ts, s.last_ts, s.first_fill_ts, s.last_fill_ts, s.first_buy_ts,
      s.redeemed_shares, s.a1_num, s.a1_den, s.a1_n, s.a24_num, s.a24_den, s.a24_n, s.ares_num, s.ares_den, s.ares_n,
      r.market_id IS NOT NULL AS resolved, r.winner_index,
      (r.market_id IS NOT NULL AND (r.winner IS NULL OR r.winner = 'INVALID')) AS is_void,
      CASE WHEN r.market_id IS NULL THEN NULL WHEN s.outcome_index = 0 THEN r.payout_yes ELSE r.payout_no END AS payout,
      k.mark
    FROM ${stateSource} s
      LEFT JOIN (SELECT r.* FROM resolutions r, t WHERE r.resolved_at <= t.as_of) r USING (market_id)
      LEFT JOIN a_marks k USING (market_id, outcome_index)
    WHERE s.first_ts IS NOT NULL),
  ${positionPnlSql(['trade_pnl', 'n_taker', 'n_buys', 'n_contra', 'first_fill_ts', 'last_fill_ts', 'first_buy_ts', 'a1_num', 'a1_den', 'a1_n', 'a24_num', 'a24_den', 'a24_n', 'ares_num', 'ares_den', 'ares_n'])}`;
}

export const HOLDS_COLUMNS = [
  ['wallet_id', 'INTEGER'], ['market_id', 'INTEGER'], ['outcome_index', 'UTINYINT'], ['start_ts', 'TIMESTAMP'], ['exit_ts', 'TIMESTAMP'],
  ['cost_in', 'DOUBLE'], ['end_ts', 'TIMESTAMP'], ['to_resolution', 'BOOLEAN'], ['hold_hours', 'DOUBLE'],
  // 1, 2, ... within the position (the state's episodes names the current one); NULL in a state migrated from schema 3
  ['episode', 'INTEGER'],
] as const satisfies TableColumns;

export const HOLDS_DDL = tableDdl('a_holds', HOLDS_COLUMNS, ['wallet_id', 'market_id', 'outcome_index', 'start_ts', 'cost_in', 'to_resolution']);
