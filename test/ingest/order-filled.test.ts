import fc from 'fast-check';
import { decodeEventLog, encodeAbiParameters, encodeEventTopics, formatUnits } from 'viem';
import { describe, expect, it } from 'vitest';
import { loadGammaEvents, loadGammaMarkets } from '../../data/ingest/gamma.ts';
import {
  ORDER_FILLED_V1_ABI,
  ORDER_FILLED_V2_ABI,
  fastOrderFilled,
  ORDER_FILLED_V1_TOPIC,
  ORDER_FILLED_V2_TOPIC,
  OrderFilledDecodeError,
  decodeOrderFilled,
  loadOrderFilledLogs,
  takerTrade,
  type DecodedOrderFilled,
} from '../../data/ingest/order-filled.ts';
import { chainConfig, parseLogsFile, type RpcLogInput } from '../../data/ingest/rpc-log.ts';
import { EXCHANGE_V1, EXCHANGE_V2, M, W, h, tx } from '../fixtures/ingest/world.ts';
import { count, fixture, memoryVenue, queryRows } from './helpers.ts';

const config = chainConfig({ ctfExchanges: [EXCHANGE_V2] });
const file = parseLogsFile(fixture('logs-order-filled.json'));
const logs = file.logs as RpcLogInput[];
const logOf = (txName: string, logIndex: number) => logs.find((l) => l.transactionHash === tx(txName) && Number(l.logIndex) === logIndex)!;

/** round(n / d) to `digits` decimals, on the integers: the exact reference for a price. */
const roundedRatio = (n: bigint, d: bigint, digits: number) => (2n * n * 10n ** BigInt(digits) + d) / (2n * d);

describe('golden vectors (V2)', () => {
  it('V2 is the layout the deployed exchanges emit: ten fields (side, tokenId, amounts, fee, builder, metadata), its topic0, and the Polygon V2 exchanges as defaults', () => {
    // topic0 as public decoders of the live V2 exchanges check it (docs/ingest.md)
    expect(ORDER_FILLED_V2_TOPIC).toBe('0xd543adfd945773f1a62f74f0ee55a5e3b9b1a28262980ba90b1a89f2ea84d8ee');
    const e = logOf('E', 0);
    for (const [address, kind] of [['0xE111180000d2663C0091e4f400237545B87B996B', 'ctf'], ['0xe2222d279d744050d28e00520010520000310F59', 'neg_risk']] as const) {
      expect(decodeOrderFilled({ ...e, address }), address).toMatchObject({ version: 2, exchangeKind: kind, side: 'BUY', sharesAtomic: 261_000_000n });
    }
  });

  it('BUY: makerAmount 234,660,000 / takerAmount 261,000,000, fee 74,005 -> 261 shares at 0.8990804598, fee 0.074005', () => {
    const d = decodeOrderFilled(logOf('E', 0), config)!;
    expect(d).toMatchObject({ version: 2, exchangeKind: 'ctf', side: 'BUY', tokenId: M.fed.yes, maker: W.erin, taker: W.frank, isAggressorSummary: false });
    expect(d.sharesAtomic).toBe(261_000_000n);
    expect(d.usdcAtomic).toBe(234_660_000n);
    expect(formatUnits(d.sharesAtomic, 6)).toBe('261');
    expect(formatUnits(d.feeAtomic, 6)).toBe('0.074005');
    // 234.66 / 261 = 0.89908045977... -> 0.8990804598 at 10 significant digits.
    expect(roundedRatio(d.usdcAtomic, d.sharesAtomic, 10)).toBe(8990804598n);
    expect(d.price.toPrecision(10)).toBe('0.8990804598');
    expect(d.price).toBe(234_660_000 / 261_000_000);
  });

  it('SELL: 260.43 shares at 0.9502884844 -> takerAmount = round(0.9502884844 * 260,430,000) = 247,483,630', () => {
    // 0.9502884844 * 260430000 = 247483629.99229... -> 247483630.
    const takerAmount = roundedRatio(9502884844n * 260_430_000n, 10n ** 10n, 0);
    expect(takerAmount).toBe(247_483_630n);
    const d = decodeOrderFilled(logOf('F', 1), config)!;
    expect(d).toMatchObject({ version: 2, side: 'SELL', tokenId: M.fed.no, maker: W.frank, taker: W.erin });
    expect(d.makerAmountFilled).toBe(260_430_000n);
    expect(d.takerAmountFilled).toBe(takerAmount);
    expect(formatUnits(d.sharesAtomic, 6)).toBe('260.43');
    expect(d.usdcAtomic).toBe(takerAmount);
    expect(roundedRatio(d.usdcAtomic, d.sharesAtomic, 10)).toBe(9502884844n);
    expect(d.price.toPrecision(10)).toBe('0.9502884844');
  });

  it('decodes a hand-assembled V2 log (no ABI encoder involved)', () => {
    const word = (n: bigint | number) => BigInt(n).toString(16).padStart(64, '0');
    const addr = (a: string) => `0x${a.slice(2).padStart(64, '0')}`;
    const log = {
      address: EXCHANGE_V2,
      topics: [ORDER_FILLED_V2_TOPIC, h('order:hand'), addr(W.erin), addr(W.frank)],
      // side, tokenId, makerAmount, takerAmount, fee, builder, metadata
      data: `0x${word(0)}${word(BigInt(M.fed.yes))}${word(234_660_000)}${word(261_000_000)}${word(74_005)}${word(0xb0b)}${word(0)}`,
      transactionHash: tx('hand'),
      logIndex: '0x7',
      blockNumber: '0x1',
    };
    expect(decodeOrderFilled(log, config)).toMatchObject({ side: 'BUY', tokenId: M.fed.yes, sharesAtomic: 261_000_000n, usdcAtomic: 234_660_000n, feeAtomic: 74_005n, logIndex: 7 });
  });
});

describe('decodeOrderFilled (V1)', () => {
  it('makerAssetId 0: the maker BUYs takerAssetId at makerAmount / takerAmount', () => {
    const d = decodeOrderFilled(logOf('B', 5))!;
    expect(d).toMatchObject({ version: 1, exchangeKind: 'ctf', side: 'BUY', tokenId: M.fed.yes, maker: W.dave, taker: W.carol, sharesAtomic: 50_000_000n, usdcAtomic: 30_000_000n, price: 0.6 });
  });
  it('takerAssetId 0: the maker SELLs makerAssetId at takerAmount / makerAmount', () => {
    const d = decodeOrderFilled(logOf('A', 10))!;
    expect(d).toMatchObject({ side: 'SELL', tokenId: M.fed.yes, maker: W.alice, sharesAtomic: 60_000_000n, usdcAtomic: 33_000_000n, price: 0.55 });
  });
  it('flags the summary row whose taker is the exchange itself', () => {
    expect(decodeOrderFilled(logOf('A', 12))).toMatchObject({ isAggressorSummary: true, maker: W.carol, taker: EXCHANGE_V1.toLowerCase(), side: 'BUY', sharesAtomic: 100_000_000n });
  });
  it('names the kind by emitter and returns null for other events', () => {
    expect(decodeOrderFilled(logOf('D', 3))!.exchangeKind).toBe('neg_risk');
    expect(decodeOrderFilled(logOf('E', 0))!.exchangeKind).toBeNull(); // V2 address not in the default config
    expect(decodeOrderFilled({ ...logOf('A', 10), topics: [h('other-event')] })).toBeNull();
  });
  it('throws a typed error when neither or both asset ids are collateral', () => {
    const word = (n: bigint | number) => BigInt(n).toString(16).padStart(64, '0');
    const bad = { ...logOf('A', 10), data: `0x${word(1)}${word(2)}${word(1)}${word(1)}${word(0)}` };
    expect(() => decodeOrderFilled(bad)).toThrow(OrderFilledDecodeError);
    expect(() => decodeOrderFilled(bad)).toThrow(/exactly one must be 0/);
    expect(ORDER_FILLED_V1_TOPIC).toBe('0xd0a08e8c493f9c94f29311604c9de1b4e8c8d4c06bd0c789af57f2d65bfec0f6');
  });
});

describe('takerTrade', () => {
  const base: DecodedOrderFilled = decodeOrderFilled(logOf('B', 5))!; // dave BUYs 50 YES @0.60
  const complement = (id: string) => (id === M.fed.yes ? M.fed.no : id === M.fed.no ? M.fed.yes : undefined);

  it('without a summary row assumes direct: taker on the other side at the maker price', () => {
    expect(takerTrade(base, undefined, complement)).toEqual({ tokenId: M.fed.yes, side: 'SELL', matchType: 'direct', usdcAtomic: 30_000_000n, sharesAtomic: 50_000_000n, price: 0.6 });
  });
  it('maker BUYs the complement of the taker token: mint, taker BUYs at 1 - 0.60', () => {
    const t = takerTrade(base, decodeOrderFilled(logOf('B', 6))!, complement);
    expect(t).toEqual({ tokenId: M.fed.no, side: 'BUY', matchType: 'mint', usdcAtomic: 20_000_000n, sharesAtomic: 50_000_000n, price: 0.4 });
  });
  it('maker SELLs the complement: merge, taker SELLs at 1 - 0.30', () => {
    const t = takerTrade(decodeOrderFilled(logOf('C', 7))!, decodeOrderFilled(logOf('C', 8))!, complement);
    expect(t).toMatchObject({ tokenId: M.fed.yes, side: 'SELL', matchType: 'merge', usdcAtomic: 17_500_000n, price: 0.7 });
  });
  it('a summary row on an unrelated token falls back to direct with a warning', () => {
    const unrelated = { ...decodeOrderFilled(logOf('B', 6))!, tokenId: M.btc.no };
    const t = takerTrade(base, unrelated, complement);
    expect(t.matchType).toBe('direct');
    expect(t.warning).toMatch(/neither/);
  });
});

async function venue() {
  const conn = await memoryVenue();
  await loadGammaMarkets(conn, fixture('gamma-markets.json'));
  await loadGammaEvents(conn, fixture('gamma-events.json'));
  return conn;
}
const FED = 1, RED = 6;

describe('loadOrderFilledLogs', () => {
  it('writes one fill per maker-order log from the taker point of view, and accounts for every other log', async () => {
    const conn = await venue();
    const report = await loadOrderFilledLogs(conn, file.logs, file.blockTimestamps, config);
    expect(report).toMatchObject({
      inserted: 7,
      duplicates: 0,
      skipped: { aggressor_summary_row: 3, unknown_token: 1, unknown_exchange_address: 1, removed: 1, 'invalid:transactionHash': 1, missing_block_timestamp: 1 },
      rows: { fills: 7 },
    });
    expect(report.warnings).toEqual([]);
    const ids = Object.fromEntries((await queryRows<{ address: string; wallet_id: number }>(conn, 'SELECT address, wallet_id FROM wallets')).map((r) => [r.address, r.wallet_id]));
    const fills = await queryRows(conn, `SELECT tx_hash, log_index, ts, market_id, outcome_index, maker_id, taker_id, side, match_type, price, shares, size_usdc, fee_usdc, exchange_version, exchange_kind
      FROM fills ORDER BY ts, log_index`);
    const t = (s: number) => new Date(s * 1000);
    expect(fills).toEqual([
      { tx_hash: tx('A'), log_index: 10, ts: t(1776000000), market_id: FED, outcome_index: 0, maker_id: ids[W.alice], taker_id: ids[W.carol], side: 'BUY', match_type: 'direct', price: 0.55, shares: 60, size_usdc: 33, fee_usdc: 0, exchange_version: 1, exchange_kind: 'ctf' },
      { tx_hash: tx('A'), log_index: 11, ts: t(1776000000), market_id: FED, outcome_index: 0, maker_id: ids[W.bob], taker_id: ids[W.carol], side: 'BUY', match_type: 'direct', price: 0.56, shares: 40, size_usdc: 22.4, fee_usdc: 0, exchange_version: 1, exchange_kind: 'ctf' },
      // Block 70000002's timestamp comes from a hex key and a hex value in the map.
      { tx_hash: tx('B'), log_index: 5, ts: t(1776000500), market_id: FED, outcome_index: 1, maker_id: ids[W.dave], taker_id: ids[W.carol], side: 'BUY', match_type: 'mint', price: 0.4, shares: 50, size_usdc: 20, fee_usdc: 0, exchange_version: 1, exchange_kind: 'ctf' },
      { tx_hash: tx('C'), log_index: 7, ts: t(1776001000), market_id: FED, outcome_index: 0, maker_id: ids[W.bob], taker_id: ids[W.alice], side: 'SELL', match_type: 'merge', price: 0.7, shares: 25, size_usdc: 17.5, fee_usdc: 0, exchange_version: 1, exchange_kind: 'ctf' },
      { tx_hash: tx('D'), log_index: 3, ts: t(1776002000), market_id: RED, outcome_index: 0, maker_id: ids[W.dave], taker_id: ids[W.erin], side: 'SELL', match_type: 'direct', price: 0.25, shares: 10, size_usdc: 2.5, fee_usdc: 0.001, exchange_version: 1, exchange_kind: 'neg_risk' },
      { tx_hash: tx('E'), log_index: 0, ts: t(1777400000), market_id: FED, outcome_index: 0, maker_id: ids[W.erin], taker_id: ids[W.frank], side: 'SELL', match_type: 'direct', price: 234_660_000 / 261_000_000, shares: 261, size_usdc: 234.66, fee_usdc: 0.074005, exchange_version: 2, exchange_kind: 'ctf' },
      { tx_hash: tx('F'), log_index: 1, ts: t(1777400100), market_id: FED, outcome_index: 1, maker_id: ids[W.frank], taker_id: ids[W.erin], side: 'BUY', match_type: 'direct', price: 247_483_630 / 260_430_000, shares: 260.43, size_usdc: 247.48363, fee_usdc: 0, exchange_version: 2, exchange_kind: 'ctf' },
    ]);
  });

  it('is idempotent', async () => {
    const conn = await venue();
    await loadOrderFilledLogs(conn, file.logs, file.blockTimestamps, config);
    const again = await loadOrderFilledLogs(conn, file.logs, file.blockTimestamps, config);
    expect(again).toMatchObject({ inserted: 0, duplicates: 7, rows: {} });
    expect(await count(conn, 'fills')).toBe(7);
  });

  it('skips V2 logs when the V2 exchange is not configured', async () => {
    const conn = await venue();
    const report = await loadOrderFilledLogs(conn, file.logs, file.blockTimestamps);
    expect(report.inserted).toBe(5);
    expect(report.skipped.unknown_exchange_address).toBe(3);
  });

  it('a naive sum over all logs double-counts; the deduped load counts each match once', async () => {
    const matchTxs = new Set<string>([tx('A'), tx('B'), tx('C')]);
    const matchLogs = logs.filter((l) => matchTxs.has(l.transactionHash));
    // Naive: every OrderFilled in txs A, B, C. A: 60 + 40 + 100 (summary); B: 50 + 50; C: 25 + 25.
    const naiveShares = matchLogs.map((l) => decodeOrderFilled(l, config)!).reduce((s, d) => s + Number(d.sharesAtomic) / 1e6, 0);
    expect(naiveShares).toBe(350);

    const conn = await venue();
    await loadOrderFilledLogs(conn, matchLogs, file.blockTimestamps, config);
    // Each match once: 100 shares in A, 50 in B, 25 in C.
    const [fills] = await queryRows<{ n: number; shares: number; taker_usdc: number }>(conn, 'SELECT count(*)::INTEGER AS n, sum(shares) AS shares, sum(size_usdc) AS taker_usdc FROM fills');
    expect(fills).toEqual({ n: 4, shares: 175, taker_usdc: 92.9 });
    expect(naiveShares).toBe(2 * fills!.shares);

    // Both parties still appear once each through fill_legs: maker legs carry what the maker logs said.
    const legs = await queryRows(conn, `SELECT tx_hash, role, outcome_index, side, price, shares, size_usdc FROM fill_legs WHERE tx_hash IN ('${tx('B')}', '${tx('C')}') ORDER BY tx_hash, role`);
    const byTx = (name: string) => legs.filter((l) => l.tx_hash === tx(name)).map(({ tx_hash: _, ...rest }) => rest);
    expect(byTx('B')).toEqual([
      { role: 'maker', outcome_index: 0, side: 'BUY', price: 0.6, shares: 50, size_usdc: 30 }, // dave's 30 USDC for 50 YES
      { role: 'taker', outcome_index: 1, side: 'BUY', price: 0.4, shares: 50, size_usdc: 20 },
    ]);
    const [makerC, takerC] = byTx('C');
    expect(takerC).toEqual({ role: 'taker', outcome_index: 0, side: 'SELL', price: 0.7, shares: 25, size_usdc: 17.5 });
    // bob's SELL of 25 NO at 0.30 for 7.5 USDC (the view computes 1 - 0.7 in floating point).
    expect(makerC).toMatchObject({ role: 'maker', outcome_index: 1, side: 'SELL', shares: 25 });
    expect(makerC!.price).toBeCloseTo(0.3, 12);
    expect(makerC!.size_usdc).toBeCloseTo(7.5, 12);
  });
});

describe('fastOrderFilled (word slicing) agrees with the ABI decoder', () => {
  const word = fc.bigInt({ min: 0n, max: 2n ** 256n - 1n });
  const addr = fc.uint8Array({ minLength: 20, maxLength: 20 }).map((b) => `0x${Buffer.from(b).toString('hex')}` as `0x${string}`);
  const b32 = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => `0x${Buffer.from(b).toString('hex')}` as `0x${string}`);
  const lower = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, typeof v === 'string' ? v.toLowerCase() : v]));

  it('V1: random logs decode to the same arguments', () => {
    fc.assert(
      fc.property(b32, addr, addr, word, word, word, word, word, (orderHash, maker, taker, a, b, c, d, fee) => {
        const topics = encodeEventTopics({ abi: ORDER_FILLED_V1_ABI, eventName: 'OrderFilled', args: { orderHash, maker, taker } }) as `0x${string}`[];
        const data = encodeAbiParameters([{ type: 'uint256' }, { type: 'uint256' }, { type: 'uint256' }, { type: 'uint256' }, { type: 'uint256' }], [a, b, c, d, fee]);
        const slow = decodeEventLog({ abi: ORDER_FILLED_V1_ABI, topics: topics as [`0x${string}`], data }).args;
        expect(fastOrderFilled(topics, data, 1)!.args).toEqual(lower(slow as Record<string, unknown>));
      }),
      { numRuns: 300 },
    );
  });

  it('V2: random logs decode to the same arguments (side 0..255)', () => {
    fc.assert(
      fc.property(b32, addr, addr, fc.integer({ min: 0, max: 255 }), word, word, word, word, b32, b32, (orderHash, maker, taker, side, tokenId, m, t, fee, builder, metadata) => {
        const topics = encodeEventTopics({ abi: ORDER_FILLED_V2_ABI, eventName: 'OrderFilled', args: { orderHash, maker, taker } }) as `0x${string}`[];
        const data = encodeAbiParameters(
          [{ type: 'uint8' }, { type: 'uint256' }, { type: 'uint256' }, { type: 'uint256' }, { type: 'uint256' }, { type: 'bytes32' }, { type: 'bytes32' }],
          [side, tokenId, m, t, fee, builder, metadata],
        );
        const slow = decodeEventLog({ abi: ORDER_FILLED_V2_ABI, topics: topics as [`0x${string}`], data }).args;
        expect(fastOrderFilled(topics, data, 2)!.args).toEqual(lower(slow as Record<string, unknown>));
      }),
      { numRuns: 300 },
    );
  });

  it('leaves any other shape to the ABI decoder (null)', () => {
    const l = logOf('E', 0);
    expect(fastOrderFilled(l.topics, `${l.data}00`, 2)).toBeNull();
    expect(fastOrderFilled(l.topics.slice(0, 3), l.data, 2)).toBeNull();
    expect(fastOrderFilled(l.topics, l.data.replace(/.$/, 'g'), 2)).toBeNull();
  });
});
