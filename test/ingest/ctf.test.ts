import { encodeAbiParameters, encodeEventTopics, parseAbi, toHex } from 'viem';
import { describe, expect, it } from 'vitest';
import { decodeCtfLog, loadCtfLogs, redeemedShares } from '../../data/ingest/ctf.ts';
import { loadGammaEvents, loadGammaMarkets } from '../../data/ingest/gamma.ts';
import { loadChainLogs } from '../../data/ingest/chain-logs.ts';
import { chainConfig, parseLogsFile, rpcLogSchema } from '../../data/ingest/rpc-log.ts';
import { EXCHANGE_V2, M, W, tx } from '../fixtures/ingest/world.ts';
import { count, fixture, memoryVenue, queryRows } from './helpers.ts';

const file = parseLogsFile(fixture('logs-ctf.json'));
// Market ids after the Gamma fixtures: fed 1, btc 2, nba 3, void 4, pending 5, red 6, blue 7, green 8, ucl 9.
const BTC = 2, NBA = 3, VOID = 4, PENDING = 5, RED = 6, GREEN = 8;

async function venue() {
  const conn = await memoryVenue();
  await loadGammaMarkets(conn, fixture('gamma-markets.json'));
  await loadGammaEvents(conn, fixture('gamma-events.json'));
  return conn;
}

describe('redeemedShares', () => {
  it('YES won [1,0], both sets redeemed for 60 USDC: 60 YES burnt; the NO amount is unknowable (worth 0)', () => {
    expect(redeemedShares([1n, 2n], [1, 0], 60_000_000n)).toEqual([{ outcomeIndex: 0, sharesAtomic: 60_000_000n }]);
  });
  it('voided [1,1], NO set only, 10 USDC: 10 / 0.5 = 20 NO burnt', () => {
    expect(redeemedShares([2n], [1, 1], 10_000_000n)).toEqual([{ outcomeIndex: 1, sharesAtomic: 20_000_000n }]);
  });
  it('voided [1,1], both sets: the split between YES and NO is unknowable -> null', () => {
    expect(redeemedShares([1n, 2n], [1, 1], 30_000_000n)).toBeNull();
  });
  it('only losing sets redeemed: nothing knowable, nothing paid -> no legs', () => {
    expect(redeemedShares([2n], [1, 0], 0n)).toEqual([]);
  });
  it('a partial payout [3,1] on YES only: 75 USDC / 0.75 = 100 YES', () => {
    expect(redeemedShares([1n], [3, 1], 75_000_000n)).toEqual([{ outcomeIndex: 0, sharesAtomic: 100_000_000n }]);
  });
  it('index sets other than 1 and 2 are not binary outcome positions -> null', () => {
    expect(redeemedShares([3n], [1, 0], 5n)).toBeNull();
  });
});

describe('decodeCtfLog', () => {
  it('decodes ConditionResolution with its payout vector', () => {
    const log = rpcLogSchema.parse(file.logs[0]);
    expect(decodeCtfLog(log)).toEqual({
      kind: 'resolution', conditionId: M.pending.conditionId, oracle: '0x6a9d222616c90fca5754cd1333cfd9b7fb6a4f74', questionId: M.pending.questionID, outcomeSlotCount: 2n, payoutNumerators: [1n, 0n],
    });
  });
  it('decodes the CTF and the NegRiskAdapter PayoutRedemption', () => {
    expect(decodeCtfLog(rpcLogSchema.parse(file.logs[5]))).toMatchObject({ kind: 'redemption', redeemer: W.bob, conditionId: M.btc.conditionId, indexSets: [1n, 2n], payout: 60_000_000n });
    expect(decodeCtfLog(rpcLogSchema.parse(file.logs[9]))).toEqual({ kind: 'adapter_redemption', redeemer: W.alice, conditionId: M.green.conditionId, amounts: [0n, 12_000_000n], payout: 12_000_000n });
  });
  it('ignores the same event from a contract that is not configured', () => {
    expect(decodeCtfLog(rpcLogSchema.parse(file.logs[10]))).toBeNull();
  });
});

describe('loadCtfLogs', () => {
  it('loads resolutions (on-chain replacing Gamma-derived ones) and redemptions with knowable legs', async () => {
    const conn = await venue();
    expect(await count(conn, 'resolutions')).toBe(5); // btc, nba, void, blue, green from Gamma
    const report = await loadCtfLogs(conn, file.logs, file.blockTimestamps);
    expect(report).toMatchObject({
      inserted: 8, // 4 resolutions + 4 redemptions
      duplicates: 0,
      skipped: { unknown_market: 1, neg_risk_adapter_redemption: 1, not_ctf_event: 1 },
      rows: { resolutions: 4, inventory_events: 4, inventory_legs: 3 },
    });
    const warnings = report.warnings.join('\n');
    expect(warnings).toMatch(/replaced 2 Gamma-derived/);
    expect(warnings).toMatch(/neg-risk never voids/);
    expect(warnings).toMatch(/several redeemed index sets/);

    const t = (s: number) => new Date(s * 1000);
    expect(await queryRows(conn, `SELECT market_id, winner, winner_index, payout_numerators, payout_yes, payout_no, outcome_slot_count, resolved_at, tx_hash FROM resolutions WHERE tx_hash <> '' ORDER BY market_id`)).toEqual([
      { market_id: BTC, winner: 'YES', winner_index: 0, payout_numerators: [1, 0], payout_yes: 1, payout_no: 0, outcome_slot_count: 2, resolved_at: t(1781900000), tx_hash: tx('R2') },
      { market_id: NBA, winner: 'NO', winner_index: 1, payout_numerators: [0, 1], payout_yes: 0, payout_no: 1, outcome_slot_count: 2, resolved_at: t(1781900100), tx_hash: tx('R4') },
      { market_id: PENDING, winner: 'YES', winner_index: 0, payout_numerators: [1, 0], payout_yes: 1, payout_no: 0, outcome_slot_count: 2, resolved_at: t(1781900000), tx_hash: tx('R1') },
      // Neg-risk [1,1]: not INVALID.
      { market_id: RED, winner: null, winner_index: -1, payout_numerators: [1, 1], payout_yes: 0.5, payout_no: 0.5, outcome_slot_count: 2, resolved_at: t(1781900000), tx_hash: tx('R3') },
    ]);
    expect(await count(conn, 'resolutions')).toBe(7);

    const ids = Object.fromEntries((await queryRows<{ address: string; wallet_id: number }>(conn, 'SELECT address, wallet_id FROM wallets')).map((r) => [r.address, r.wallet_id]));
    expect(await queryRows(conn, 'SELECT tx_hash, log_index, ts, wallet_id, kind, market_id, amount, usdc_delta FROM inventory_events ORDER BY log_index')).toEqual([
      { tx_hash: tx('P1'), log_index: 3, ts: t(1782000000), wallet_id: ids[W.bob], kind: 'REDEEM', market_id: BTC, amount: 60, usdc_delta: 60 },
      { tx_hash: tx('P2'), log_index: 4, ts: t(1782000000), wallet_id: ids[W.carol], kind: 'REDEEM', market_id: VOID, amount: 30, usdc_delta: 30 },
      { tx_hash: tx('P3'), log_index: 5, ts: t(1782000000), wallet_id: ids[W.carol], kind: 'REDEEM', market_id: VOID, amount: 10, usdc_delta: 10 },
      { tx_hash: tx('P4'), log_index: 9, ts: t(1782000000), wallet_id: ids[W.alice], kind: 'REDEEM', market_id: GREEN, amount: 12, usdc_delta: 12 },
    ]);
    expect(await queryRows(conn, 'SELECT tx_hash, wallet_id, market_id, outcome_index, shares_delta FROM inventory_legs ORDER BY log_index')).toEqual([
      { tx_hash: tx('P1'), wallet_id: ids[W.bob], market_id: BTC, outcome_index: 0, shares_delta: -60 },
      { tx_hash: tx('P3'), wallet_id: ids[W.carol], market_id: VOID, outcome_index: 1, shares_delta: -20 },
      { tx_hash: tx('P4'), wallet_id: ids[W.alice], market_id: GREEN, outcome_index: 1, shares_delta: -12 },
    ]);
  });

  it('is idempotent', async () => {
    const conn = await venue();
    await loadCtfLogs(conn, file.logs, file.blockTimestamps);
    const again = await loadCtfLogs(conn, file.logs, file.blockTimestamps);
    expect(again).toMatchObject({ inserted: 0, duplicates: 8, rows: {} });
    expect(again.warnings.join('\n')).not.toMatch(/replaced/);
    expect(await count(conn, 'resolutions')).toBe(7);
    expect(await count(conn, 'inventory_events')).toBe(4);
    expect(await count(conn, 'inventory_legs')).toBe(3);
  });

  it('a redemption whose market has no resolution yet is loaded without legs', async () => {
    const conn = await venue();
    const p1Only = file.logs.filter((l) => (l as { transactionHash: string }).transactionHash === tx('P1'));
    await conn.run(`DELETE FROM resolutions WHERE market_id = ${BTC}`);
    const report = await loadCtfLogs(conn, p1Only, file.blockTimestamps);
    expect(report).toMatchObject({ inserted: 1, rows: { inventory_events: 1 } });
    expect(report.warnings.join('\n')).toMatch(/no resolution yet/);
    expect(await count(conn, 'inventory_legs')).toBe(0);
  });

  it('counts malformed and undated logs instead of throwing', async () => {
    const conn = await venue();
    const first = file.logs[0] as Record<string, unknown>;
    const report = await loadCtfLogs(conn, [{ ...first, topics: 'nope' }, { ...first, blockNumber: '0x1' }, 'garbage'], file.blockTimestamps);
    expect(report.skipped).toEqual({ 'invalid:topics': 1, missing_block_timestamp: 1, 'invalid:(row)': 1 });
  });
});

describe('loadChainLogs', () => {
  it('routes a mixed batch: CTF events and OrderFilled to their loaders, other events counted as unsupported', async () => {
    const conn = await venue();
    const orders = parseLogsFile(fixture('logs-order-filled.json'));
    // OrdersMatched, emitted by the exchange next to every match: not loaded.
    const ordersMatched = { ...(orders.logs[0] as object), topics: ['0x63bf4d16b7fa898ef4c4b2b6d90fd201e9c56313b65638af6088d149d2ce956c'] };
    const blocks = new Map([...file.blockTimestamps, ...orders.blockTimestamps]);
    const report = await loadChainLogs(conn, [...orders.logs, ordersMatched, ...file.logs], blocks, chainConfig({ ctfExchanges: [EXCHANGE_V2] }));
    expect(report).toMatchObject({ inserted: 7 + 8, duplicates: 0, rows: { fills: 7, resolutions: 4, inventory_events: 4, inventory_legs: 3 } });
    expect(report.skipped).toMatchObject({ unsupported_event: 1, aggressor_summary_row: 3, neg_risk_adapter_redemption: 1 });
  });
});

describe('V2 collateral adapters', () => {
  it('a CTF PayoutRedemption whose redeemer is the CtfCollateralAdapter books no wallet (the adapter redeems for a user no event names)', async () => {
    const conn = await venue();
    // the BTC market resolved YES on chain first, then the adapter redeems 40 YES for 40 USDC (encoded with viem only)
    const res = parseAbi(['event ConditionResolution(bytes32 indexed conditionId, address indexed oracle, bytes32 indexed questionId, uint256 outcomeSlotCount, uint256[] payoutNumerators)']);
    const red = parseAbi(['event PayoutRedemption(address indexed redeemer, address indexed collateralToken, bytes32 indexed parentCollectionId, bytes32 conditionId, uint256[] indexSets, uint256 payout)']);
    const ctf = '0x4d97dcd97ec945f40cf65f87097ace5ea0476045';
    const adapter = '0xada100874d00e3331d00f2007a9c336a65009718';
    const log = (i: number, topics: readonly unknown[], data: `0x${string}`) => ({ address: ctf, topics, data, transactionHash: tx(`adapter-${i}`), logIndex: toHex(i), blockNumber: toHex(90000000), blockTimestamp: toHex(1781000000) });
    const logs = [
      log(0, encodeEventTopics({ abi: res, eventName: 'ConditionResolution', args: { conditionId: M.btc.conditionId as `0x${string}`, oracle: W.alice as `0x${string}`, questionId: M.btc.questionID as `0x${string}` } }), encodeAbiParameters([{ type: 'uint256' }, { type: 'uint256[]' }], [2n, [1n, 0n]])),
      log(1, encodeEventTopics({ abi: red, eventName: 'PayoutRedemption', args: { redeemer: adapter, collateralToken: '0x2791bca1f2de4661ed88a30c99a7a9449aa84174', parentCollectionId: `0x${'0'.repeat(64)}` } }), encodeAbiParameters([{ type: 'bytes32' }, { type: 'uint256[]' }, { type: 'uint256' }], [M.btc.conditionId as `0x${string}`, [1n], 40_000_000n])),
    ];
    const report = await loadCtfLogs(conn, logs, new Map());
    expect(report.skipped).toMatchObject({ collateral_adapter_redemption: 1 });
    expect(await count(conn, 'inventory_events')).toBe(0);
    expect(await count(conn, 'wallets', `address = '${adapter}'`)).toBe(0);
  });
});
