/**
 * Exchange `OrderFilled` logs (V1 and V2) -> `fills`, one row per matched maker order, counted once.
 *
 * A match emits one OrderFilled per maker order (taker = the taker's wallet) plus one for the taker's own order
 * whose `taker` is the exchange contract itself (the aggressor's summary row). Summing every log counts each
 * match twice; we keep the maker-order rows and use the summary row only to learn the taker's token and side.
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import { decodeEventLog, formatUnits, parseAbi, toEventSelector } from 'viem';
import { insertFills, type Row } from './insert.ts';
import { lookupMarketsById, lookupTokens, resolveWallets, type TokenRef } from './ids.ts';
import { ratio } from './payouts.ts';
import { ReportBuilder, type IngestReport } from './report.ts';
import { DEFAULT_CHAIN_CONFIG, exchangeKindOf, logTime, rpcLogSchema, type BlockTimestamps, type ChainConfig, type RpcLog, type RpcLogInput } from './rpc-log.ts';

export const ORDER_FILLED_V1_ABI = parseAbi([
  'event OrderFilled(bytes32 indexed orderHash, address indexed maker, address indexed taker, uint256 makerAssetId, uint256 takerAssetId, uint256 makerAmountFilled, uint256 takerAmountFilled, uint256 fee)',
]);
/**
 * V2 (the exchanges live since 2026-04-28): the maker order's side (enum Side: 0 BUY, 1 SELL, ABI uint8), a single
 * outcome token id, and two attribution words (builder code, metadata) that the venue tables do not keep. topic0
 * 0xd543adfd945773f1a62f74f0ee55a5e3b9b1a28262980ba90b1a89f2ea84d8ee (docs/ingest.md says where it was checked).
 */
export const ORDER_FILLED_V2_ABI = parseAbi([
  'event OrderFilled(bytes32 indexed orderHash, address indexed maker, address indexed taker, uint8 side, uint256 tokenId, uint256 makerAmountFilled, uint256 takerAmountFilled, uint256 fee, bytes32 builder, bytes32 metadata)',
]);
export const ORDER_FILLED_V1_TOPIC = toEventSelector(ORDER_FILLED_V1_ABI[0]);
export const ORDER_FILLED_V2_TOPIC = toEventSelector(ORDER_FILLED_V2_ABI[0]);

export type Side = 'BUY' | 'SELL';

/** One OrderFilled log read from the point of view of the order it names (the `maker` field). */
export interface DecodedOrderFilled {
  version: 1 | 2;
  /** Emitting exchange contract, lowercase. */
  exchange: `0x${string}`;
  /** By the emitting address; null when the address is not a configured exchange. */
  exchangeKind: 'ctf' | 'neg_risk' | null;
  txHash: `0x${string}`;
  logIndex: number;
  blockNumber: bigint;
  orderHash: `0x${string}`;
  /** Owner of the filled order (lowercase). */
  maker: `0x${string}`;
  /** Counterparty named by the log; equals `exchange` on the aggressor's summary row. */
  taker: `0x${string}`;
  /** True when `taker` is the exchange itself: the taker order's own summary of the whole match. */
  isAggressorSummary: boolean;
  /** The order owner's side on `tokenId`. */
  side: Side;
  /** Outcome token (decimal uint256) the order owner bought or sold. */
  tokenId: string;
  makerAmountFilled: bigint;
  takerAmountFilled: bigint;
  /** Outcome-token amount and USDC amount of this fill, in atomic units (1e-6). */
  sharesAtomic: bigint;
  usdcAtomic: bigint;
  feeAtomic: bigint;
  /** USDC per share for the order owner = usdcAtomic / sharesAtomic. */
  price: number;
}

export class OrderFilledDecodeError extends Error {
  constructor(
    readonly reason: 'invalid_asset_pair' | 'invalid_side' | 'zero_amount' | 'undecodable',
    message: string,
  ) {
    super(message);
  }
}

/**
 * Decode one exchange log. Returns null when topic0 is not an OrderFilled (V1 or V2) event; throws
 * OrderFilledDecodeError when it is but its fields make no sense. Pure: no I/O, usable by the live tail.
 */
export function decodeOrderFilled(input: RpcLog | RpcLogInput, config: ChainConfig = DEFAULT_CHAIN_CONFIG): DecodedOrderFilled | null {
  const log = isParsed(input) ? input : rpcLogSchema.parse(input);
  const topic0 = log.topics[0];
  if (topic0 !== ORDER_FILLED_V1_TOPIC && topic0 !== ORDER_FILLED_V2_TOPIC) return null;
  const topics = log.topics as [`0x${string}`, ...`0x${string}`[]];
  const base = {
    exchange: log.address,
    exchangeKind: exchangeKindOf(log.address, config),
    txHash: log.transactionHash,
    logIndex: log.logIndex,
    blockNumber: log.blockNumber,
  };
  let order: { version: 1 | 2; orderHash: `0x${string}`; maker: string; taker: string; side: Side; tokenId: bigint; makerAmountFilled: bigint; takerAmountFilled: bigint; fee: bigint };
  try {
    if (topic0 === ORDER_FILLED_V1_TOPIC) {
      const { args } = (fastOrderFilled(topics, log.data, 1) as { args: V1Args } | null) ?? decodeEventLog({ abi: ORDER_FILLED_V1_ABI, topics, data: log.data });
      // Asset id 0 is collateral: the order that gives USDC buys the other asset.
      if ((args.makerAssetId === 0n) === (args.takerAssetId === 0n)) {
        throw new OrderFilledDecodeError('invalid_asset_pair', `makerAssetId ${args.makerAssetId} / takerAssetId ${args.takerAssetId}: exactly one must be 0 (USDC)`);
      }
      const buys = args.makerAssetId === 0n;
      order = { version: 1, ...args, side: buys ? 'BUY' : 'SELL', tokenId: buys ? args.takerAssetId : args.makerAssetId };
    } else {
      const { args } = (fastOrderFilled(topics, log.data, 2) as { args: V2Args } | null) ?? decodeEventLog({ abi: ORDER_FILLED_V2_ABI, topics, data: log.data });
      if (args.side !== 0 && args.side !== 1) throw new OrderFilledDecodeError('invalid_side', `side ${args.side}: expected 0 (BUY) or 1 (SELL)`);
      order = { version: 2, ...args, side: args.side === 0 ? 'BUY' : 'SELL' };
    }
  } catch (e) {
    if (e instanceof OrderFilledDecodeError) throw e;
    throw new OrderFilledDecodeError('undecodable', (e as Error).message.split('\n')[0] ?? 'undecodable OrderFilled');
  }
  // BUY: the order pays makerAmount USDC for takerAmount shares; SELL: gives makerAmount shares for takerAmount USDC.
  const sharesAtomic = order.side === 'BUY' ? order.takerAmountFilled : order.makerAmountFilled;
  const usdcAtomic = order.side === 'BUY' ? order.makerAmountFilled : order.takerAmountFilled;
  if (sharesAtomic === 0n || usdcAtomic === 0n) throw new OrderFilledDecodeError('zero_amount', 'a fill with zero shares or zero USDC');
  const maker = order.maker.toLowerCase() as `0x${string}`;
  const taker = order.taker.toLowerCase() as `0x${string}`;
  return {
    ...base,
    version: order.version,
    orderHash: order.orderHash,
    maker,
    taker,
    isAggressorSummary: taker === log.address,
    side: order.side,
    tokenId: order.tokenId.toString(),
    makerAmountFilled: order.makerAmountFilled,
    takerAmountFilled: order.takerAmountFilled,
    sharesAtomic,
    usdcAtomic,
    feeAtomic: order.fee,
    price: ratio(usdcAtomic, sharesAtomic),
  };
}

type V1Args = { orderHash: `0x${string}`; maker: `0x${string}`; taker: `0x${string}`; makerAssetId: bigint; takerAssetId: bigint; makerAmountFilled: bigint; takerAmountFilled: bigint; fee: bigint };
type V2Args = { orderHash: `0x${string}`; maker: `0x${string}`; taker: `0x${string}`; side: number; tokenId: bigint; makerAmountFilled: bigint; takerAmountFilled: bigint; fee: bigint; builder: `0x${string}`; metadata: `0x${string}` };

const HEX_WORD = /^[0-9a-f]{64}$/;

/**
 * Both OrderFilled layouts are three indexed words and static data words (5 for V1, 7 for V2): read them by slicing
 * (the ABI decoder took a quarter of a backfill's time). Null when the log is not exactly that shape, and the ABI
 * decoder decides (test/ingest/order-filled.test.ts checks both agree on random logs). Addresses come back
 * lowercase (callers lowercase them anyway); uint8 `side` is the whole word's value, as the decoder reads it.
 */
export function fastOrderFilled(topics: readonly string[], data: string, version: 1 | 2): { args: V1Args | V2Args } | null {
  const words = version === 1 ? 5 : 7;
  if (topics.length !== 4 || data.length !== 2 + 64 * words) return null;
  const hex = data.slice(2).toLowerCase();
  const w: string[] = [];
  for (let i = 0; i < words; i++) {
    const x = hex.slice(64 * i, 64 * i + 64);
    if (!HEX_WORD.test(x)) return null;
    w.push(x);
  }
  const t = topics.map((x) => x.toLowerCase());
  if (!t.every((x) => /^0x[0-9a-f]{64}$/.test(x))) return null;
  const head = { orderHash: t[1] as `0x${string}`, maker: `0x${t[2]!.slice(26)}` as `0x${string}`, taker: `0x${t[3]!.slice(26)}` as `0x${string}` };
  const u = (i: number) => BigInt(`0x${w[i]}`);
  if (version === 1) return { args: { ...head, makerAssetId: u(0), takerAssetId: u(1), makerAmountFilled: u(2), takerAmountFilled: u(3), fee: u(4) } };
  const side = u(0);
  return {
    args: {
      ...head,
      side: side <= 255n ? Number(side) : Number.NaN,
      tokenId: u(1),
      makerAmountFilled: u(2),
      takerAmountFilled: u(3),
      fee: u(4),
      builder: `0x${w[5]}` as `0x${string}`,
      metadata: `0x${w[6]}` as `0x${string}`,
    },
  };
}

function isParsed(l: RpcLog | RpcLogInput): l is RpcLog {
  return typeof l.logIndex === 'number' && typeof l.blockNumber === 'bigint';
}

export type MatchType = 'direct' | 'mint' | 'merge';

/** The taker's trade behind one maker-order log, as a fills row describes it. */
export interface TakerTrade {
  tokenId: string;
  side: Side;
  matchType: MatchType;
  /** Taker's USDC for this match, atomic: the maker's for 'direct', shares - maker's for 'mint'/'merge'. */
  usdcAtomic: bigint;
  sharesAtomic: bigint;
  price: number;
  /** Set when the summary row disagrees with the rule that was applied. */
  warning?: string;
}

const opposite = (s: Side): Side => (s === 'BUY' ? 'SELL' : 'BUY');

/**
 * Work out the taker's trade from a maker-order log and (if present) the aggressor's summary row.
 * 'direct': same token, taker on the other side at the maker's price. 'mint': the maker BUYs the complement, so the
 * taker BUYs at 1 - maker price. 'merge': the maker SELLs the complement, the taker SELLs at 1 - maker price.
 * No summary row: assume direct. `complementOf` maps a token id to its market's other outcome token id.
 */
export function takerTrade(makerLog: DecodedOrderFilled, summary: DecodedOrderFilled | undefined, complementOf: (tokenId: string) => string | undefined): TakerTrade {
  const direct: TakerTrade = {
    tokenId: makerLog.tokenId,
    side: opposite(makerLog.side),
    matchType: 'direct',
    usdcAtomic: makerLog.usdcAtomic,
    sharesAtomic: makerLog.sharesAtomic,
    price: makerLog.price,
  };
  if (!summary || summary.tokenId === makerLog.tokenId) {
    if (summary && summary.side === makerLog.side) return { ...direct, warning: `summary row trades the same token on the same side (${summary.side})` };
    return direct;
  }
  if (complementOf(makerLog.tokenId) !== summary.tokenId) {
    return { ...direct, warning: `summary row token ${summary.tokenId} is neither the maker's token nor its complement; assumed direct` };
  }
  const matchType: MatchType = makerLog.side === 'BUY' ? 'mint' : 'merge';
  const usdcAtomic = makerLog.sharesAtomic - makerLog.usdcAtomic;
  const trade: TakerTrade = {
    tokenId: summary.tokenId,
    side: makerLog.side,
    matchType,
    usdcAtomic,
    sharesAtomic: makerLog.sharesAtomic,
    price: ratio(usdcAtomic, makerLog.sharesAtomic),
  };
  if (summary.side !== makerLog.side) trade.warning = `${matchType} match but the summary row ${summary.side}s`;
  return trade;
}

/** Exchange version by time, for rows that do not say (data-api): V2 went live 2026-04-28T00:00:00Z. */
export const EXCHANGE_V2_LIVE_AT = new Date('2026-04-28T00:00:00Z');

/**
 * Load OrderFilled logs into `fills`. Every input log ends up inserted, duplicate, or skipped with a reason;
 * summary rows are counted as skipped['aggressor_summary_row'] (used, not stored).
 */
export async function loadOrderFilledLogs(
  conn: DuckDBConnection,
  logs: readonly unknown[],
  blockTimestamps: BlockTimestamps = new Map(),
  config: ChainConfig = DEFAULT_CHAIN_CONFIG,
): Promise<IngestReport> {
  const rb = new ReportBuilder();
  const decoded: { d: DecodedOrderFilled; ts: Date }[] = [];
  logs.forEach((raw, i) => {
    const where = `log[${i}]`;
    const parsed = rpcLogSchema.safeParse(raw);
    if (!parsed.success) return rb.reject(where, parsed.error);
    const log = parsed.data;
    if (log.removed) return rb.skip('removed', `${where}: removed by a reorg`);
    let d: DecodedOrderFilled | null;
    try {
      d = decodeOrderFilled(log, config);
    } catch (e) {
      const reason = e instanceof OrderFilledDecodeError ? e.reason : 'undecodable';
      return rb.skip(reason, `${where} ${log.transactionHash}#${log.logIndex}: ${(e as Error).message}`);
    }
    if (!d) return rb.skip('not_order_filled', `${where}: topic0 ${log.topics[0]} is not OrderFilled`);
    if (!d.exchangeKind) return rb.skip('unknown_exchange_address', `${where}: ${d.exchange} is not a configured exchange`);
    const ts = logTime(log, blockTimestamps);
    if (!ts) return rb.skip('missing_block_timestamp', `${where}: no timestamp for block ${log.blockNumber}`);
    decoded.push({ d, ts });
  });

  const summaries = decoded.filter((x) => x.d.isAggressorSummary).map((x) => x.d);
  const makerLogs = decoded.filter((x) => !x.d.isAggressorSummary);
  summaries.forEach(() => rb.skip('aggressor_summary_row'));
  const summaryIndex = indexSummaries(summaries);

  const tokens = await lookupTokens(conn, decoded.map((x) => x.d.tokenId));
  const complements = await complementsOf(conn, tokens);

  interface Pending { d: DecodedOrderFilled; ts: Date; trade: TakerTrade; token: TokenRef }
  const pending: Pending[] = [];
  for (const { d, ts } of makerLogs) {
    const where = `${d.txHash}#${d.logIndex}`;
    if (!tokens.has(d.tokenId)) {
      rb.skip('unknown_token', `${where}: token ${d.tokenId} is not in markets`);
      continue;
    }
    const summary = findSummary(d, summaryIndex);
    const trade = takerTrade(d, summary, (id) => complements.get(id));
    if (trade.warning) rb.warn(`${where}: ${trade.warning}`);
    const token = tokens.get(trade.tokenId);
    if (!token) {
      rb.skip('unknown_token', `${where}: taker token ${trade.tokenId} is not in markets`);
      continue;
    }
    if (!(trade.price > 0 && trade.price < 1)) {
      rb.skip('price_out_of_range', `${where}: taker price ${trade.price} outside (0,1)`);
      continue;
    }
    pending.push({ d, ts, trade, token });
  }

  // A placeholder party (a contract or operator standing in for a user) gets no wallet: NULL, the real side is kept.
  const wallets = await resolveWallets(conn, pending.flatMap((p) => [p.d.maker, p.d.taker]), config);
  const rows: Row[] = pending.map(({ d, ts, trade, token }) => ({
    tx_hash: d.txHash,
    log_index: d.logIndex,
    ts,
    market_id: token.marketId,
    outcome_index: token.outcomeIndex,
    maker_id: wallets.get(d.maker) ?? null,
    taker_id: wallets.get(d.taker) ?? null,
    side: trade.side,
    match_type: trade.matchType,
    price: trade.price,
    shares: atomicToNumber(trade.sharesAtomic),
    size_usdc: atomicToNumber(trade.usdcAtomic),
    // The fee this maker-order log records; the summary row's fee covers the whole taker order and is not split.
    fee_usdc: atomicToNumber(d.feeAtomic),
    exchange_version: d.version,
    exchange_kind: d.exchangeKind,
  }));
  const inserted = await insertFills(conn, rows, rb);
  rb.report.inserted = inserted;
  rb.report.duplicates = rows.length - inserted;
  return rb.report;
}

/** token id -> the other outcome token of its market, for every known token. */
async function complementsOf(conn: DuckDBConnection, tokens: Map<string, TokenRef>): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const markets = await lookupMarketsById(conn, [...tokens.values()].map((t) => t.marketId));
  for (const t of tokens.values()) {
    const m = markets.get(t.marketId);
    if (m) out.set(t.tokenId, t.outcomeIndex === 0 ? m.noTokenId : m.yesTokenId);
  }
  return out;
}

/** Summary rows indexed by (tx, exchange, order owner): the key a maker log reaches through its `taker`. */
function indexSummaries(summaries: readonly DecodedOrderFilled[]): Map<string, DecodedOrderFilled[]> {
  const index = new Map<string, DecodedOrderFilled[]>();
  for (const s of summaries) {
    const key = `${s.txHash}|${s.exchange}|${s.maker}`;
    index.set(key, [...(index.get(key) ?? []), s].sort((a, b) => a.logIndex - b.logIndex));
  }
  return index;
}

/**
 * The summary row of the taker order that consumed this maker log: same tx and exchange, owned by the log's
 * taker, and (the exchange emits it after its maker rows) the first one at a later log index; else any.
 */
function findSummary(makerLog: DecodedOrderFilled, index: Map<string, DecodedOrderFilled[]>): DecodedOrderFilled | undefined {
  const candidates = index.get(`${makerLog.txHash}|${makerLog.exchange}|${makerLog.taker}`) ?? [];
  return candidates.find((s) => s.logIndex > makerLog.logIndex) ?? candidates[0];
}

/** Atomic (1e-6) amount as the double nearest to its exact decimal value (260430000n -> 260.43). */
export function atomicToNumber(atomic: bigint): number {
  return Number(formatUnits(atomic, 6));
}
