/**
 * data-api trade rows -> `fills`. A row shows one wallet's side of one trade: no counterparty, no log index, no
 * fee, no match type. The wallet is recorded as the taker, the maker is unknown (NULL: never a wallet, so it gets no
 * positions, metrics or rank), the match is 'direct' and the log index is derived from the row's content (see
 * derivedLogIndex).
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import { insertFills, type Row } from './insert.ts';
import { lookupTokens, resolveWallets } from './ids.ts';
import { dataApiTradeSchema, derivedLogIndex, profileOf, tradeKey, type DataApiTrade } from './data-api.ts';
import { EXCHANGE_V2_LIVE_AT } from './order-filled.ts';
import { ReportBuilder, type IngestReport } from './report.ts';
import { DEFAULT_CHAIN_CONFIG, type ChainConfig } from './rpc-log.ts';

/** Load data-api /trades rows; `config` names the contract and operator addresses that are never wallets. */
export async function loadDataApiTrades(conn: DuckDBConnection, json: unknown, config: ChainConfig = DEFAULT_CHAIN_CONFIG): Promise<IngestReport> {
  const rb = new ReportBuilder();
  if (!Array.isArray(json)) {
    rb.skip('invalid:file', 'trades: expected a JSON array');
    return rb.report;
  }
  const trades: { t: DataApiTrade; where: string }[] = [];
  json.forEach((raw, i) => {
    const r = dataApiTradeSchema.safeParse(raw);
    if (!r.success) return rb.reject(`trade[${i}]`, r.error);
    trades.push({ t: r.data, where: `trade[${i}] ${r.data.transactionHash}` });
  });
  await insertDataApiTrades(conn, trades, rb, config);
  return rb.report;
}

/** Shared with the activity loader (TRADE rows), so a trade present in both files is stored once. */
export async function insertDataApiTrades(conn: DuckDBConnection, trades: { t: DataApiTrade; where: string }[], rb: ReportBuilder, config: ChainConfig): Promise<void> {
  const tokens = await lookupTokens(conn, trades.map((x) => x.t.asset));
  const ok = trades.filter(({ t, where }) => {
    const token = tokens.get(t.asset);
    if (!token) {
      rb.skip('unknown_token', `${where}: asset ${t.asset} is not in markets`);
      return false;
    }
    if (t.conditionId && t.conditionId !== token.conditionId) {
      rb.skip('token_condition_mismatch', `${where}: asset belongs to ${token.conditionId}, row says ${t.conditionId}`);
      return false;
    }
    if (t.outcomeIndex !== undefined && t.outcomeIndex !== token.outcomeIndex) {
      rb.skip('token_outcome_mismatch', `${where}: asset is outcome ${token.outcomeIndex}, row says ${t.outcomeIndex}`);
      return false;
    }
    return true;
  });
  if (ok.length === 0) return;
  // A placeholder proxyWallet (the zero address, a venue contract) gets no wallet: the taker is then unknown too.
  const wallets = await resolveWallets(conn, ok.map(({ t }) => profileOf(t)), config);
  const rows: Row[] = ok.map(({ t }) => {
    const token = tokens.get(t.asset)!;
    const ts = new Date(t.timestamp * 1000);
    return {
      tx_hash: t.transactionHash,
      log_index: derivedLogIndex(tradeKey(t)),
      ts,
      market_id: token.marketId,
      outcome_index: token.outcomeIndex,
      maker_id: null,
      taker_id: wallets.get(t.proxyWallet) ?? null,
      side: t.side,
      match_type: 'direct',
      price: t.price,
      shares: t.size,
      size_usdc: t.price * t.size,
      fee_usdc: 0,
      exchange_version: ts >= EXCHANGE_V2_LIVE_AT ? 2 : 1,
      exchange_kind: token.negRisk ? 'neg_risk' : 'ctf',
    };
  });
  const inserted = await insertFills(conn, rows, rb);
  rb.report.inserted += inserted;
  rb.report.duplicates += rows.length - inserted;
}
