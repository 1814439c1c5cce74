import { describe, expect, it } from 'vitest';
import { loadDataApiActivity } from '../../data/ingest/data-api-activity.ts';
import { loadDataApiTrades } from '../../data/ingest/data-api-trades.ts';
import { derivedLogIndex, parsePositions } from '../../data/ingest/data-api.ts';
import { loadGammaEvents, loadGammaMarkets } from '../../data/ingest/gamma.ts';
import { M, RURITANIA_GROUP, W, tx } from '../fixtures/ingest/world.ts';
import { count, fixture, memoryVenue, queryRows } from './helpers.ts';

// Market ids after loading the Gamma fixtures: markets file 1..5 (fed, btc, nba, void, pending), events file 6..9 (red, blue, green, ucl).
const FED = 1, BTC = 2, VOID = 4, RED = 6;

async function venueWithMarkets() {
  const conn = await memoryVenue();
  await loadGammaMarkets(conn, fixture('gamma-markets.json'));
  await loadGammaEvents(conn, fixture('gamma-events.json'));
  return conn;
}

const walletId = async (conn: Awaited<ReturnType<typeof memoryVenue>>, address: string) =>
  (await queryRows<{ id: number }>(conn, `SELECT wallet_id AS id FROM wallets WHERE address = '${address}'`))[0]!.id;

describe('loadDataApiTrades', () => {
  it('loads each trade as the taker side against an unknown counterparty (maker_id NULL); skips and counts the bad rows', async () => {
    const conn = await venueWithMarkets();
    const report = await loadDataApiTrades(conn, fixture('trades.json'));
    expect(report).toMatchObject({
      inserted: 3,
      duplicates: 1, // the repeated t1 row
      skipped: { unknown_token: 1, 'invalid:side': 1, token_condition_mismatch: 1, 'invalid:timestamp': 1 },
      rows: { fills: 3 },
      unknown_counterparty: 3,
      unknown_taker: 0,
    });
    expect(report.rejections.join('\n')).toMatch(/side: expected BUY or SELL/);
    expect(report.rejections.join('\n')).toMatch(/timestamp: expected unix seconds/);

    const grace = await walletId(conn, W.grace);
    const alice = await walletId(conn, W.alice);
    const fills = await queryRows<Record<string, unknown>>(conn, 'SELECT * FROM fills ORDER BY ts');
    expect(fills).toHaveLength(3);
    // 150 @ 0.42 on 2026-04-24 (before V2) -> 63 USDC, V1, standard market.
    expect(fills[0]).toMatchObject({ tx_hash: tx('t1'), ts: new Date(1777000000 * 1000), market_id: FED, outcome_index: 0, maker_id: null, taker_id: grace, side: 'BUY', match_type: 'direct', price: 0.42, shares: 150, fee_usdc: 0, exchange_version: 1, exchange_kind: 'ctf' });
    expect(fills[0]!.size_usdc).toBeCloseTo(63, 9);
    // Red-NO on the neg-risk market: exchange_kind follows the market; 10 @ 0.3 = 3 USDC.
    expect(fills[1]).toMatchObject({ tx_hash: tx('t3'), market_id: RED, outcome_index: 1, taker_id: alice, side: 'BUY', shares: 10, price: 0.3, exchange_version: 1, exchange_kind: 'neg_risk' });
    expect(fills[1]!.size_usdc).toBeCloseTo(3, 9);
    // 2026-04-28T18:13:20Z is after the V2 switch.
    expect(fills[2]).toMatchObject({ tx_hash: tx('t2'), side: 'SELL', shares: 50, exchange_version: 2 });
    expect(fills[2]!.size_usdc).toBeCloseTo(23.5, 9);
    // Derived log indexes are negative so they never collide with on-chain ones.
    expect(fills.every((f) => (f.log_index as number) < 0)).toBe(true);

    expect(await queryRows(conn, `SELECT username, pseudonym FROM wallets WHERE address = '${W.grace}'`)).toEqual([{ username: 'grace', pseudonym: 'Grace-Pseudo' }]);
    expect(fills.every((f) => f.maker_id === null)).toBe(true);
    // Only the wallets the rows name: no stand-in for the counterparty.
    expect((await queryRows<{ address: string }>(conn, 'SELECT address FROM wallets ORDER BY address')).map((r) => r.address)).toEqual([W.alice, W.grace].sort());
  });

  it('is idempotent', async () => {
    const conn = await venueWithMarkets();
    await loadDataApiTrades(conn, fixture('trades.json'));
    const again = await loadDataApiTrades(conn, fixture('trades.json'));
    // The counters count inserted fills only.
    expect(again).toMatchObject({ inserted: 0, duplicates: 4, unknown_counterparty: 0 });
    expect(await count(conn, 'fills')).toBe(3);
  });

  it('switches to exchange_version 2 exactly at 2026-04-28T00:00:00Z', async () => {
    const conn = await venueWithMarkets();
    const row = (timestamp: number, t: string) => ({ proxyWallet: W.bob, side: 'BUY', asset: M.fed.no, size: 1, price: 0.5, timestamp, transactionHash: tx(t) });
    await loadDataApiTrades(conn, [row(1777334399, 'before'), row(1777334400, 'at')]);
    expect(await queryRows(conn, 'SELECT tx_hash, exchange_version FROM fills ORDER BY ts')).toEqual([
      { tx_hash: tx('before'), exchange_version: 1 },
      { tx_hash: tx('at'), exchange_version: 2 },
    ]);
  });

  it('derives the log index from content, not position: reordered or overlapping pages map to the same rows', async () => {
    const conn = await venueWithMarkets();
    const trades = fixture<unknown[]>('trades.json');
    await loadDataApiTrades(conn, trades.slice(0, 3));
    const report = await loadDataApiTrades(conn, [...trades].reverse());
    expect(report).toMatchObject({ inserted: 0, duplicates: 4 });
    expect(derivedLogIndex('x')).toBe(derivedLogIndex('x'));
    expect(derivedLogIndex('x')).not.toBe(derivedLogIndex('y'));
  });
});

describe('loadDataApiActivity', () => {
  it('writes SPLIT / MERGE / REDEEM / CONVERT events with their legs, dedupes the TRADE row against /trades', async () => {
    const conn = await venueWithMarkets();
    await loadDataApiTrades(conn, fixture('trades.json'));
    const report = await loadDataApiActivity(conn, fixture('activity.json'));
    expect(report).toMatchObject({
      inserted: 5,
      duplicates: 1, // the TRADE row is t1, already loaded from /trades
      skipped: { 'unsupported_type:REWARD': 1, unknown_market: 1, 'invalid:type': 1, 'invalid:size': 1 },
      rows: { inventory_events: 5, inventory_legs: 5 },
    });
    expect(report.warnings.join('\n')).toMatch(/REDEEM.*redeemed token amounts unknown/);
    expect(await count(conn, 'fills')).toBe(3);

    const grace = await walletId(conn, W.grace);
    const bob = await walletId(conn, W.bob);
    const carol = await walletId(conn, W.carol);
    const alice = await walletId(conn, W.alice);
    const events = await queryRows(conn, 'SELECT ts, wallet_id, kind, market_id, neg_risk_market_id, amount, usdc_delta FROM inventory_events ORDER BY ts');
    expect(events).toEqual([
      { ts: new Date(1776900000 * 1000), wallet_id: grace, kind: 'SPLIT', market_id: FED, neg_risk_market_id: null, amount: 100, usdc_delta: -100 },
      { ts: new Date(1776950000 * 1000), wallet_id: grace, kind: 'MERGE', market_id: FED, neg_risk_market_id: null, amount: 40, usdc_delta: 40 },
      // CONVERSION names the neg-risk group; the questions involved are not in the row.
      { ts: new Date(1779000000 * 1000), wallet_id: alice, kind: 'CONVERT', market_id: null, neg_risk_market_id: RURITANIA_GROUP, amount: 10, usdc_delta: 10 },
      { ts: new Date(1780200000 * 1000), wallet_id: bob, kind: 'REDEEM', market_id: BTC, neg_risk_market_id: null, amount: 60, usdc_delta: 60 },
      { ts: new Date(1780400000 * 1000), wallet_id: carol, kind: 'REDEEM', market_id: VOID, neg_risk_market_id: null, amount: 10, usdc_delta: 10 },
    ]);
    const legs = await queryRows(conn, `SELECT e.kind, l.wallet_id, l.market_id, l.outcome_index, l.shares_delta
      FROM inventory_legs l JOIN inventory_events e USING (tx_hash, log_index) ORDER BY e.ts, l.outcome_index`);
    expect(legs).toEqual([
      { kind: 'SPLIT', wallet_id: grace, market_id: FED, outcome_index: 0, shares_delta: 100 },
      { kind: 'SPLIT', wallet_id: grace, market_id: FED, outcome_index: 1, shares_delta: 100 },
      { kind: 'MERGE', wallet_id: grace, market_id: FED, outcome_index: 0, shares_delta: -40 },
      { kind: 'MERGE', wallet_id: grace, market_id: FED, outcome_index: 1, shares_delta: -40 },
      // BTC resolved YES at 1.00 and 60 tokens paid 60 USDC: the 60 burnt tokens were YES.
      { kind: 'REDEEM', wallet_id: bob, market_id: BTC, outcome_index: 0, shares_delta: -60 },
      // carol's REDEEM on the voided market (20 tokens -> 10 USDC) cannot be split between YES and NO: no legs.
    ]);
  });

  it('is idempotent and order-independent with /trades', async () => {
    const conn = await venueWithMarkets();
    const first = await loadDataApiActivity(conn, fixture('activity.json'));
    expect(first).toMatchObject({ inserted: 6, rows: { fills: 1, inventory_events: 5, inventory_legs: 5 } });
    const again = await loadDataApiActivity(conn, fixture('activity.json'));
    expect(again).toMatchObject({ inserted: 0, duplicates: 6, rows: {} });
    const trades = await loadDataApiTrades(conn, fixture('trades.json'));
    expect(trades).toMatchObject({ inserted: 2, duplicates: 2 });
    expect(await count(conn, 'fills')).toBe(3);
    expect(await count(conn, 'inventory_legs')).toBe(5);
  });
});

describe('parsePositions', () => {
  it('returns typed rows (numbers from numeric strings) and counts the invalid one', () => {
    const { rows, report } = parsePositions(fixture('positions.json'));
    expect(report.skipped).toEqual({ 'invalid:asset': 1 });
    expect(rows).toHaveLength(2);
    expect(rows[0]).toMatchObject({ wallet: W.grace, tokenId: M.fed.yes, conditionId: M.fed.conditionId, outcomeIndex: 0, size: 100, avgPrice: 0.42, cashPnl: -0.5, realizedPnl: 2.5, redeemable: false, mergeable: true, oppositeTokenId: M.fed.no, negativeRisk: false });
    expect(rows[1]).toMatchObject({ wallet: W.bob, tokenId: M.btc.yes, size: 60, avgPrice: 0.81, initialValue: 48.6, currentValue: 60, cashPnl: 11.4, redeemable: true, curPrice: null, mergeable: null });
  });
  it('rejects a file that is not an array', () => {
    expect(parsePositions({}).report.skipped).toEqual({ 'invalid:file': 1 });
  });
});
