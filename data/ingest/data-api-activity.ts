/**
 * data-api /activity rows. TRADE -> `fills` (same path and derived key as /trades, so a trade in both files is
 * stored once). SPLIT / MERGE / REDEEM / CONVERSION -> `inventory_events` + `inventory_legs`. Other types
 * (REWARD, YIELD, ...) are skipped as 'unsupported_type:<TYPE>'. docs/ingest.md lists what each row can and
 * cannot tell.
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import type { z } from 'zod';
import { queryRows, sqlString } from '../duckdb.ts';
import { insertNew, type Row } from './insert.ts';
import { lookupMarketsByCondition, resolveWallets, type MarketRef } from './ids.ts';
import {
  dataApiActivityBaseSchema,
  dataApiConversionSchema,
  dataApiRedeemSchema,
  dataApiSplitMergeSchema,
  dataApiTradeSchema,
  derivedLogIndex,
  profileOf,
  type DataApiTrade,
} from './data-api.ts';
import { insertDataApiTrades } from './data-api-trades.ts';
import { isPlaceholder } from './placeholders.ts';
import { ReportBuilder, type IngestReport } from './report.ts';
import { DEFAULT_CHAIN_CONFIG, type ChainConfig } from './rpc-log.ts';

type SplitMerge = z.output<typeof dataApiSplitMergeSchema>;
type Redeem = z.output<typeof dataApiRedeemSchema>;
type Conversion = z.output<typeof dataApiConversionSchema>;
type InventoryRow = { where: string } & ({ kind: 'SPLIT' | 'MERGE'; r: SplitMerge } | { kind: 'REDEEM'; r: Redeem } | { kind: 'CONVERT'; r: Conversion });

/** Load data-api /activity rows; `config` names the contract and operator addresses that are never wallets. */
export async function loadDataApiActivity(conn: DuckDBConnection, json: unknown, config: ChainConfig = DEFAULT_CHAIN_CONFIG): Promise<IngestReport> {
  const rb = new ReportBuilder();
  if (!Array.isArray(json)) {
    rb.skip('invalid:file', 'activity: expected a JSON array');
    return rb.report;
  }
  const trades: { t: DataApiTrade; where: string }[] = [];
  const inventory: InventoryRow[] = [];
  json.forEach((raw, i) => {
    const where = `activity[${i}]`;
    const base = dataApiActivityBaseSchema.safeParse(raw);
    if (!base.success) return rb.reject(where, base.error);
    const type = base.data.type;
    const at = `${where} ${type} ${base.data.transactionHash}`;
    switch (type) {
      case 'TRADE': {
        const r = dataApiTradeSchema.safeParse(raw);
        return r.success ? void trades.push({ t: r.data, where: at }) : rb.reject(at, r.error);
      }
      case 'SPLIT':
      case 'MERGE': {
        const r = dataApiSplitMergeSchema.safeParse(raw);
        return r.success ? void inventory.push({ kind: type, r: r.data, where: at }) : rb.reject(at, r.error);
      }
      case 'REDEEM': {
        const r = dataApiRedeemSchema.safeParse(raw);
        return r.success ? void inventory.push({ kind: 'REDEEM', r: r.data, where: at }) : rb.reject(at, r.error);
      }
      case 'CONVERSION': {
        const r = dataApiConversionSchema.safeParse(raw);
        return r.success ? void inventory.push({ kind: 'CONVERT', r: r.data, where: at }) : rb.reject(at, r.error);
      }
      default:
        return rb.skip(`unsupported_type:${type}`);
    }
  });
  await insertDataApiTrades(conn, trades, rb, config);
  await insertInventory(conn, inventory, rb, config);
  return rb.report;
}

async function insertInventory(conn: DuckDBConnection, all: InventoryRow[], rb: ReportBuilder, config: ChainConfig): Promise<void> {
  // An inventory row has one party: when it is a placeholder (a contract acting for a user) nobody can be booked.
  const items = all.filter((x) => {
    if (!isPlaceholder(x.r.proxyWallet, config)) return true;
    rb.skip('placeholder_wallet', `${x.where}: ${x.r.proxyWallet} is a placeholder address, not a trader`);
    return false;
  });
  if (items.length === 0) return;
  const markets = await lookupMarketsByCondition(conn, items.map((x) => x.r.conditionId));
  // A CONVERSION may name the neg-risk group (negRiskMarketID) rather than one of its questions.
  const groups = await knownNegRiskGroups(conn, items.filter((x) => x.kind === 'CONVERT').map((x) => x.r.conditionId));
  const ok = items.filter((x) => {
    if (markets.has(x.r.conditionId) || (x.kind === 'CONVERT' && groups.has(x.r.conditionId))) return true;
    rb.skip('unknown_market', `${x.where}: condition ${x.r.conditionId} is not in markets`);
    return false;
  });
  const resolutions = await winners(conn, ok.filter((x) => x.kind === 'REDEEM').map((x) => markets.get(x.r.conditionId)!.marketId));
  const wallets = await resolveWallets(conn, ok.map((x) => profileOf(x.r)), config);
  const events: Row[] = [];
  const legs: Row[] = [];
  for (const x of ok) {
    const { r } = x;
    const market = markets.get(r.conditionId);
    const walletId = wallets.get(r.proxyWallet)!;
    const usdcSize = x.kind === 'REDEEM' ? x.r.usdcSize : (x.r.usdcSize ?? x.r.size);
    const tx = r.transactionHash;
    const logIndex = derivedLogIndex(['activity', tx, r.proxyWallet, x.kind, r.conditionId, r.size ?? '', usdcSize].join('|'));
    const event: Row = {
      tx_hash: tx,
      log_index: logIndex,
      ts: new Date(r.timestamp * 1000),
      wallet_id: walletId,
      kind: x.kind,
      market_id: x.kind === 'CONVERT' ? null : market!.marketId,
      neg_risk_market_id: market ? market.negRiskMarketId : r.conditionId,
      amount: x.kind === 'REDEEM' ? usdcSize : x.r.size,
      usdc_delta: x.kind === 'SPLIT' ? -usdcSize : usdcSize,
    };
    events.push(event);
    const leg = (m: MarketRef, outcomeIndex: 0 | 1, sharesDelta: number): Row => ({ tx_hash: tx, log_index: logIndex, wallet_id: walletId, market_id: m.marketId, outcome_index: outcomeIndex, shares_delta: sharesDelta });
    if (x.kind === 'SPLIT' || x.kind === 'MERGE') {
      const delta = x.kind === 'SPLIT' ? x.r.size : -x.r.size;
      legs.push(leg(market!, 0, delta), leg(market!, 1, delta));
    } else if (x.kind === 'REDEEM') {
      const outcome = redeemedOutcome(x.r, market!, resolutions.get(market!.marketId));
      if (outcome !== null && x.r.size) legs.push(leg(market!, outcome, -x.r.size));
      else rb.warn(`${x.where}: redeemed token amounts unknown (no legs)`);
    }
    // CONVERT: which questions' NO tokens were burnt and which YES tokens minted is not in the row: no legs.
  }
  const inserted = await insertNew(conn, 'inventory_events', events, ['tx_hash', 'log_index']);
  rb.report.inserted += inserted;
  rb.report.duplicates += events.length - inserted;
  rb.addRows('inventory_events', inserted);
  rb.addRows('inventory_legs', await insertNew(conn, 'inventory_legs', legs, ['tx_hash', 'log_index', 'wallet_id', 'market_id', 'outcome_index']));
}

/**
 * Which token a REDEEM row burnt: the one it names (asset or outcomeIndex 0/1), else the winner when the row's
 * numbers show only winning tokens were paid (usdcSize = size * winner payout). Null when not knowable.
 */
function redeemedOutcome(r: Redeem, market: MarketRef, resolution: { winnerIndex: number; payoutYes: number; payoutNo: number } | undefined): 0 | 1 | null {
  if (r.asset === market.yesTokenId) return 0;
  if (r.asset === market.noTokenId) return 1;
  if (r.outcomeIndex === 0 || r.outcomeIndex === 1) return r.outcomeIndex;
  if (!resolution || r.size === undefined || (resolution.winnerIndex !== 0 && resolution.winnerIndex !== 1)) return null;
  const payout = resolution.winnerIndex === 0 ? resolution.payoutYes : resolution.payoutNo;
  return Math.abs(r.size * payout - r.usdcSize) < 1e-6 ? resolution.winnerIndex : null;
}

async function winners(conn: DuckDBConnection, marketIds: number[]): Promise<Map<number, { winnerIndex: number; payoutYes: number; payoutNo: number }>> {
  const ids = [...new Set(marketIds)];
  const out = new Map<number, { winnerIndex: number; payoutYes: number; payoutNo: number }>();
  if (ids.length === 0) return out;
  const rows = await queryRows<{ market_id: number; winner_index: number; payout_yes: number; payout_no: number }>(
    conn,
    `SELECT market_id, winner_index, payout_yes, payout_no FROM resolutions WHERE market_id IN (${ids.join(',')})`,
  );
  for (const r of rows) out.set(r.market_id, { winnerIndex: r.winner_index, payoutYes: r.payout_yes, payoutNo: r.payout_no });
  return out;
}

async function knownNegRiskGroups(conn: DuckDBConnection, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const list = [...new Set(ids)].map(sqlString).join(',');
  const rows = await queryRows<{ g: string }>(conn, `SELECT DISTINCT neg_risk_market_id AS g FROM markets WHERE neg_risk_market_id IN (${list})`);
  return new Set(rows.map((r) => r.g));
}
