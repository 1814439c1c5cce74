/**
 * ConditionalTokens logs: ConditionResolution -> `resolutions`, PayoutRedemption -> REDEEM `inventory_events`
 * (+ `inventory_legs` where the burnt amounts are knowable), plus the NegRiskAdapter's own PayoutRedemption,
 * which names the user and the exact amounts (the CTF event under it names the adapter as redeemer).
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import { decodeEventLog, parseAbi, toEventSelector } from 'viem';
import { queryRows } from '../duckdb.ts';
import { insertNew, type Row } from './insert.ts';
import { lookupMarketsByCondition, resolveWallets, type MarketRef } from './ids.ts';
import { atomicToNumber } from './order-filled.ts';
import { payoutsFromNumerators, storableNumerators } from './payouts.ts';
import { isPlaceholder } from './placeholders.ts';
import { ReportBuilder, type IngestReport } from './report.ts';
import { DEFAULT_CHAIN_CONFIG, logTime, rpcLogSchema, type BlockTimestamps, type ChainConfig, type RpcLog } from './rpc-log.ts';

export { payoutsFromNumerators } from './payouts.ts';

export const CONDITION_RESOLUTION_ABI = parseAbi([
  'event ConditionResolution(bytes32 indexed conditionId, address indexed oracle, bytes32 indexed questionId, uint256 outcomeSlotCount, uint256[] payoutNumerators)',
]);
export const CTF_PAYOUT_REDEMPTION_ABI = parseAbi([
  'event PayoutRedemption(address indexed redeemer, address indexed collateralToken, bytes32 indexed parentCollectionId, bytes32 conditionId, uint256[] indexSets, uint256 payout)',
]);
export const NEG_RISK_PAYOUT_REDEMPTION_ABI = parseAbi([
  'event PayoutRedemption(address indexed redeemer, bytes32 indexed conditionId, uint256[] amounts, uint256 payout)',
]);
export const CONDITION_RESOLUTION_TOPIC = toEventSelector(CONDITION_RESOLUTION_ABI[0]);
export const CTF_PAYOUT_REDEMPTION_TOPIC = toEventSelector(CTF_PAYOUT_REDEMPTION_ABI[0]);
export const NEG_RISK_PAYOUT_REDEMPTION_TOPIC = toEventSelector(NEG_RISK_PAYOUT_REDEMPTION_ABI[0]);
export const CTF_TOPICS: readonly string[] = [CONDITION_RESOLUTION_TOPIC, CTF_PAYOUT_REDEMPTION_TOPIC, NEG_RISK_PAYOUT_REDEMPTION_TOPIC];

const ZERO_BYTES32 = `0x${'0'.repeat(64)}`;

export type DecodedCtfLog =
  | { kind: 'resolution'; conditionId: `0x${string}`; oracle: `0x${string}`; questionId: `0x${string}`; outcomeSlotCount: bigint; payoutNumerators: bigint[] }
  | { kind: 'redemption'; redeemer: `0x${string}`; collateralToken: `0x${string}`; parentCollectionId: `0x${string}`; conditionId: `0x${string}`; indexSets: bigint[]; payout: bigint }
  | { kind: 'adapter_redemption'; redeemer: `0x${string}`; conditionId: `0x${string}`; amounts: bigint[]; payout: bigint };

/**
 * Decode a ConditionalTokens / NegRiskAdapter log; null when topic0 is none of the three events or the emitter is
 * not a configured contract for it. Throws when the data does not decode.
 */
export function decodeCtfLog(log: RpcLog, config: ChainConfig = DEFAULT_CHAIN_CONFIG): DecodedCtfLog | null {
  const topics = log.topics as [`0x${string}`, ...`0x${string}`[]];
  const lower = (a: string) => a.toLowerCase() as `0x${string}`;
  const fromCtf = config.conditionalTokens.includes(log.address);
  if (topics[0] === CONDITION_RESOLUTION_TOPIC && fromCtf) {
    const { args } = decodeEventLog({ abi: CONDITION_RESOLUTION_ABI, topics, data: log.data });
    return { kind: 'resolution', conditionId: lower(args.conditionId), oracle: lower(args.oracle), questionId: lower(args.questionId), outcomeSlotCount: args.outcomeSlotCount, payoutNumerators: [...args.payoutNumerators] };
  }
  if (topics[0] === CTF_PAYOUT_REDEMPTION_TOPIC && fromCtf) {
    const { args } = decodeEventLog({ abi: CTF_PAYOUT_REDEMPTION_ABI, topics, data: log.data });
    return { kind: 'redemption', redeemer: lower(args.redeemer), collateralToken: lower(args.collateralToken), parentCollectionId: lower(args.parentCollectionId), conditionId: lower(args.conditionId), indexSets: [...args.indexSets], payout: args.payout };
  }
  if (topics[0] === NEG_RISK_PAYOUT_REDEMPTION_TOPIC && config.negRiskAdapters.includes(log.address)) {
    const { args } = decodeEventLog({ abi: NEG_RISK_PAYOUT_REDEMPTION_ABI, topics, data: log.data });
    return { kind: 'adapter_redemption', redeemer: lower(args.redeemer), conditionId: lower(args.conditionId), amounts: [...args.amounts], payout: args.payout };
  }
  return null;
}

/**
 * Token amounts a CTF PayoutRedemption burnt, where knowable. The event gives the redeemed index sets and the
 * total payout, not the balances: payout = sum(balance_i * num_i / den). When exactly one redeemed set pays,
 * its balance = payout * den / num (up to the contract's rounding, < 1e-6 share); sets that pay 0 were burnt in
 * unknown amounts (worth nothing after resolution). Index set 1 = outcome 0 (YES), 2 = outcome 1 (NO).
 */
export function redeemedShares(indexSets: readonly bigint[], numerators: readonly number[], payoutAtomic: bigint): { outcomeIndex: 0 | 1; sharesAtomic: bigint }[] | null {
  const den = numerators.reduce((a, b) => a + BigInt(b), 0n);
  if (den === 0n || indexSets.some((s) => s !== 1n && s !== 2n)) return null;
  const paying = [...new Set(indexSets)].filter((s) => (numerators[s === 1n ? 0 : 1] ?? 0) > 0);
  if (paying.length !== 1) return paying.length === 0 ? [] : null;
  const outcomeIndex = paying[0] === 1n ? 0 : 1;
  const num = BigInt(numerators[outcomeIndex]!);
  return [{ outcomeIndex, sharesAtomic: (payoutAtomic * den) / num }];
}

interface Dated<T> { d: T; log: RpcLog; ts: Date }

/** Load CTF logs: resolutions first (so this batch's redemptions can use them), then redemptions. */
export async function loadCtfLogs(
  conn: DuckDBConnection,
  logs: readonly unknown[],
  blockTimestamps: BlockTimestamps = new Map(),
  config: ChainConfig = DEFAULT_CHAIN_CONFIG,
): Promise<IngestReport> {
  const rb = new ReportBuilder();
  const resolutions: Dated<Extract<DecodedCtfLog, { kind: 'resolution' }>>[] = [];
  const redemptions: Dated<Exclude<DecodedCtfLog, { kind: 'resolution' }>>[] = [];
  logs.forEach((raw, i) => {
    const where = `log[${i}]`;
    const parsed = rpcLogSchema.safeParse(raw);
    if (!parsed.success) return rb.reject(where, parsed.error);
    const log = parsed.data;
    if (log.removed) return rb.skip('removed', `${where}: removed by a reorg`);
    let d: DecodedCtfLog | null;
    try {
      d = decodeCtfLog(log, config);
    } catch (e) {
      return rb.skip('undecodable', `${where} ${log.transactionHash}#${log.logIndex}: ${(e as Error).message.split('\n')[0]}`);
    }
    if (!d) return rb.skip('not_ctf_event', `${where}: topic0 ${log.topics[0]} from ${log.address} is not a known CTF event of a configured contract`);
    const ts = logTime(log, blockTimestamps);
    if (!ts) return rb.skip('missing_block_timestamp', `${where}: no timestamp for block ${log.blockNumber}`);
    if (d.kind === 'resolution') resolutions.push({ d, log, ts });
    else redemptions.push({ d, log, ts });
  });
  const markets = await lookupMarketsByCondition(conn, [...resolutions, ...redemptions].map((x) => x.d.conditionId));
  await loadResolutions(conn, resolutions, markets, rb);
  await loadRedemptions(conn, redemptions, markets, config, rb);
  return rb.report;
}

async function loadResolutions(conn: DuckDBConnection, items: Dated<Extract<DecodedCtfLog, { kind: 'resolution' }>>[], markets: Map<string, MarketRef>, rb: ReportBuilder): Promise<void> {
  const rows: Row[] = [];
  for (const { d, log, ts } of items) {
    const where = `${log.transactionHash}#${log.logIndex}`;
    const market = markets.get(d.conditionId);
    if (!market) {
      rb.skip('unknown_market', `${where}: condition ${d.conditionId} is not in markets`);
      continue;
    }
    const numerators = storableNumerators(d.payoutNumerators);
    if (!numerators) {
      rb.skip('numerators_too_large', `${where}: payout numerators do not fit INTEGER`);
      continue;
    }
    const p = payoutsFromNumerators(d.payoutNumerators, market.negRisk);
    if (p.warning) rb.warn(`${where} condition ${d.conditionId}: ${p.warning}`);
    rows.push({
      market_id: market.marketId,
      winner: p.winner,
      winner_index: p.winnerIndex,
      payout_numerators: numerators,
      payout_yes: p.payoutYes,
      payout_no: p.payoutNo,
      outcome_slot_count: Number(d.outcomeSlotCount),
      resolved_at: ts,
      tx_hash: log.transactionHash,
    });
  }
  // The on-chain event supersedes a Gamma-derived row (tx_hash '') for the same market.
  const ids = [...new Set(rows.map((r) => r.market_id as number))];
  if (ids.length > 0) {
    const replaced = await conn.run(`DELETE FROM resolutions WHERE tx_hash = '' AND market_id IN (${ids.join(',')})`);
    if (replaced.rowsChanged > 0) rb.warn(`replaced ${replaced.rowsChanged} Gamma-derived resolution(s) with on-chain ones`);
  }
  const inserted = await insertNew(conn, 'resolutions', rows, ['market_id']);
  rb.report.inserted += inserted;
  rb.report.duplicates += rows.length - inserted;
  rb.addRows('resolutions', inserted);
}

async function loadRedemptions(
  conn: DuckDBConnection,
  items: Dated<Exclude<DecodedCtfLog, { kind: 'resolution' }>>[],
  markets: Map<string, MarketRef>,
  config: ChainConfig,
  rb: ReportBuilder,
): Promise<void> {
  const known = items.filter(({ d, log }) => {
    const where = `${log.transactionHash}#${log.logIndex}`;
    if (d.kind === 'redemption' && config.negRiskAdapters.includes(d.redeemer)) {
      rb.skip('neg_risk_adapter_redemption', `${where}: redeemer is the NegRiskAdapter; its own PayoutRedemption names the user`);
      return false;
    }
    if (d.kind === 'redemption' && config.collateralAdapters.includes(d.redeemer)) {
      rb.skip('collateral_adapter_redemption', `${where}: redeemer is a V2 collateral adapter redeeming for a user no event names`);
      return false;
    }
    // The zero address, an exchange or an operator redeeming holds tokens for users we cannot name: no wallet to book.
    if (isPlaceholder(d.redeemer, config)) {
      rb.skip('placeholder_redeemer', `${where}: redeemer ${d.redeemer} is a placeholder address, not a trader`);
      return false;
    }
    if (d.kind === 'redemption' && d.parentCollectionId !== ZERO_BYTES32) {
      rb.skip('nested_collection', `${where}: positions under a parent collection are not venue tokens`);
      return false;
    }
    if (!markets.has(d.conditionId)) {
      rb.skip('unknown_market', `${where}: condition ${d.conditionId} is not in markets`);
      return false;
    }
    return true;
  });
  const numerators = await resolutionNumerators(conn, known.map((x) => markets.get(x.d.conditionId)!.marketId));
  const wallets = await resolveWallets(conn, known.map((x) => x.d.redeemer), config);
  const events: Row[] = [];
  const legs: Row[] = [];
  for (const { d, log, ts } of known) {
    const where = `${log.transactionHash}#${log.logIndex}`;
    const market = markets.get(d.conditionId)!;
    const walletId = wallets.get(d.redeemer)!;
    const usdc = atomicToNumber(d.payout);
    events.push({
      tx_hash: log.transactionHash,
      log_index: log.logIndex,
      ts,
      wallet_id: walletId,
      kind: 'REDEEM',
      market_id: market.marketId,
      neg_risk_market_id: market.negRiskMarketId,
      amount: usdc,
      usdc_delta: usdc,
    });
    let burnt: { outcomeIndex: 0 | 1; sharesAtomic: bigint }[] | null;
    if (d.kind === 'adapter_redemption') {
      burnt = d.amounts.slice(0, 2).flatMap((a, i) => (a > 0n ? [{ outcomeIndex: i as 0 | 1, sharesAtomic: a }] : []));
    } else {
      const nums = numerators.get(market.marketId);
      burnt = nums ? redeemedShares(d.indexSets, nums, d.payout) : null;
      if (!nums) rb.warn(`${where}: market ${market.marketId} has no resolution yet; redeemed token amounts unknown`);
      else if (!burnt) rb.warn(`${where}: several redeemed index sets pay out; per-token amounts unknown`);
    }
    for (const b of burnt ?? []) {
      legs.push({ tx_hash: log.transactionHash, log_index: log.logIndex, wallet_id: walletId, market_id: market.marketId, outcome_index: b.outcomeIndex, shares_delta: -atomicToNumber(b.sharesAtomic) });
    }
  }
  const inserted = await insertNew(conn, 'inventory_events', events, ['tx_hash', 'log_index']);
  rb.report.inserted += inserted;
  rb.report.duplicates += events.length - inserted;
  rb.addRows('inventory_events', inserted);
  rb.addRows('inventory_legs', await insertNew(conn, 'inventory_legs', legs, ['tx_hash', 'log_index', 'wallet_id', 'market_id', 'outcome_index']));
}

async function resolutionNumerators(conn: DuckDBConnection, marketIds: number[]): Promise<Map<number, number[]>> {
  const ids = [...new Set(marketIds)];
  const out = new Map<number, number[]>();
  if (ids.length === 0) return out;
  const rows = await queryRows<{ market_id: number; payout_numerators: number[] }>(
    conn,
    `SELECT market_id, payout_numerators FROM resolutions WHERE market_id IN (${ids.join(',')})`,
  );
  for (const r of rows) out.set(r.market_id, r.payout_numerators);
  return out;
}
