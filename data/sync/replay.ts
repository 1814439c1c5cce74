/**
 * A replay of the venue's public sources on loopback, for tests and benchmarks (no internet here): it answers like
 * the real ones, from real records, with their failure modes.
 *
 * - Gamma: `GET /markets/keyset` over real Gamma market objects (data/real-gamma: 292 BTC Up/Down markets,
 *   the venue's own `raw` objects), paged by an opaque cursor (at most 100 a page, `next_cursor` absent on
 *   the last page, `offset` refused with 422), filtered by `closed`, `clob_token_ids`, `condition_ids`,
 *   `end_date_min`, ordered by id or by `updatedAt`. Markets are shown as of the replay's clock: not listed before
 *   their creation, open (mid outcome prices, no resolution) until their close time, then exactly as recorded.
 * - JSON-RPC (`POST /rpc`): eth_blockNumber, eth_getBlockByNumber, eth_getLogs over a chain of 2-second blocks
 *   whose logs are encoded with viem from the real ABIs: the exchanges' OrderFilled (V1 and V2 layouts, each maker
 *   order plus the aggressor's summary), ConditionalTokens' ConditionResolution (payouts from the recorded outcome
 *   prices) and PayoutRedemption. Ranges over `maxRange` blocks or results over `maxResults` are refused as nodes do.
 * - Failure modes: 429 with Retry-After, 503, a truncated body, a keyset page served twice, a reorg that replaces
 *   the newest blocks (new hashes, different logs).
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { encodeAbiParameters, encodeEventTopics, keccak256, toHex, type Hex } from 'viem';
import { CONDITION_RESOLUTION_ABI, CTF_PAYOUT_REDEMPTION_ABI } from '../ingest/ctf.ts';
import { ORDER_FILLED_V1_ABI, ORDER_FILLED_V2_ABI } from '../ingest/order-filled.ts';
import type { ChainConfig } from '../ingest/rpc-log.ts';
import { Rng } from '../generator/rng.ts';

export const REAL_GAMMA_FILE = new URL('../real-gamma/BTC-5m-markets-2026-06-08.jsonl.gz', import.meta.url);

/** Addresses of the replayed chain: Polygon's (the exchanges V1 and V2, ConditionalTokens, USDC.e). */
export const REPLAY_ADDRESSES = {
  exchangeV1: '0x4bfb41d5b3570defd03c39a9a4d8de6bd8b8982e',
  exchangeV2: '0xe111180000d2663c0091e4f400237545b87b996b',
  conditionalTokens: '0x4d97dcd97ec945f40cf65f87097ace5ea0476045',
  usdc: '0x2791bca1f2de4661ed88a30c99a7a9449aa84174',
  oracle: '0x157ce2d672854c848c9b79c49a8cc6cc89176a49',
} as const;

/** The chain config a sync of the replay needs beyond the defaults: none (its contracts are the real ones). */
export const REPLAY_CHAIN: Partial<ChainConfig> = {};

export interface RawLog {
  address: string;
  topics: Hex[];
  data: Hex;
  blockNumber: Hex;
  blockHash: Hex;
  transactionHash: Hex;
  transactionIndex: Hex;
  logIndex: Hex;
  removed: boolean;
}

interface Block {
  number: number;
  ts: number;
  logs: Omit<RawLog, 'blockHash' | 'blockNumber' | 'logIndex'>[];
}

export interface ReplayOptions {
  /** real Gamma records (one JSON object per line, with `raw`); default: the 292-market sample */
  gammaRecords?: unknown[];
  seed?: number;
  /** matches per market (each: one or two maker orders and the aggressor's summary) */
  matchesPerMarket?: number;
  /** distinct trader wallets */
  wallets?: number;
  /** eth_getLogs limits, as nodes enforce them */
  maxRange?: number;
  maxResults?: number;
  /** first block of the replayed chain */
  firstBlock?: number;
}

export interface FailurePlan {
  /** every n-th request answers 429 with Retry-After (seconds) */
  rateLimitEvery?: number;
  retryAfterSeconds?: number;
  /** every n-th request answers 503 */
  serverErrorEvery?: number;
  /** every n-th successful JSON body is cut in half */
  truncateEvery?: number;
  /** the first keyset page of the next walk is served twice (its next_cursor points at itself once) */
  duplicatePage?: boolean;
  /** JSON-RPC batches are refused (some public nodes do) */
  noBatches?: boolean;
}

const hex = (n: number | bigint) => toHex(n);
const addressOf = (label: string) => `0x${keccak256(toHex(label)).slice(26)}` as Hex;
const pad32 = (a: string) => `0x${a.slice(2).padStart(64, '0')}` as Hex;

export function readRealGamma(path: URL | string = REAL_GAMMA_FILE): Record<string, unknown>[] {
  return gunzipSync(readFileSync(path))
    .toString('utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** One match as the replay generated it: what a sync must turn into one fills row. */
export interface ReplayMatch {
  txHash: string;
  ts: number;
  taker: string;
  maker: string;
  /** the token the taker bought */
  tokenId: string;
  /** the maker's side: SELL of the taker's token (direct) or BUY of its complement (mint) */
  matchType: 'direct' | 'mint';
  shares: number;
  /** USDC the taker paid */
  usdc: number;
  version: 1 | 2;
}

export class VenueReplay {
  private fixedNow: number;
  private live: { baseTs: number; wallMs: number; speed: number } | null = null;
  /** a chain that goes on past the recorded day: a block every 2 wall seconds with generated matches */
  private tail: { wallMs: number; fillsPerSecond: number; rng: Rng; txn: number; generated: number } | null = null;
  /** every match generated, in generation order */
  readonly matches: ReplayMatch[] = [];
  readonly markets: Record<string, unknown>[];
  readonly firstBlock: number;
  readonly genesisTs: number;
  readonly wallets: string[];
  readonly failures: FailurePlan = {};
  readonly stats = { requests: 0, gamma: 0, rpc: 0, refused: 0, failed: 0 };
  private readonly blocks = new Map<number, Block>();
  private fork = 0;
  /** blocks at or above this number belong to the current fork (hashes and logs differ from the original) */
  private forkFrom = Number.POSITIVE_INFINITY;
  private readonly maxRange: number;
  private readonly maxResults: number;
  private readonly lastBlock: number;
  private server: Server | null = null;
  private duplicateServed = false;
  private orders = 0;

  constructor(opts: ReplayOptions = {}) {
    const records = (opts.gammaRecords ?? readRealGamma()) as { raw: Record<string, unknown>; start_sec: number; end_sec: number; outcome_prices: string[] }[];
    this.markets = records.map((r) => r.raw);
    this.maxRange = opts.maxRange ?? 3000;
    this.maxResults = opts.maxResults ?? 10_000;
    this.firstBlock = opts.firstBlock ?? 70_000_000;
    const rng = new Rng(opts.seed ?? 7, 15);
    this.wallets = Array.from({ length: opts.wallets ?? 400 }, (_, i) => addressOf(`replay-wallet-${opts.seed ?? 7}-${i}`).toLowerCase());
    const times = records.flatMap((r) => [Date.parse(String(r.raw.createdAt)) / 1000, r.end_sec]);
    this.genesisTs = Math.floor(Math.min(...times)) - 600;
    const endTs = Math.max(...records.map((r) => Date.parse(String(r.raw.closedTime ?? r.raw.endDate).replace(' ', 'T').replace(/\+00$/, 'Z')) / 1000)) + 3600;
    this.lastBlock = this.blockAt(endTs);
    this.fixedNow = endTs;
    const matches = opts.matchesPerMarket ?? 12;
    let txn = 0;
    for (const r of records) {
      const tokens = JSON.parse(String(r.raw.clobTokenIds)) as string[];
      const conditionId = String(r.raw.conditionId).toLowerCase();
      const v2 = true;
      const buyers: { wallet: string; outcome: number; shares: bigint }[] = [];
      for (let k = 0; k < matches; k++) {
        const t = r.start_sec + Math.floor(rng.next() * Math.max(1, r.end_sec - r.start_sec - 2));
        const outcome = rng.next() < 0.5 ? 0 : 1;
        const taker = this.wallets[Math.floor(rng.next() * this.wallets.length)]!;
        let maker = this.wallets[Math.floor(rng.next() * this.wallets.length)]!;
        if (maker === taker) maker = this.wallets[(this.wallets.indexOf(taker) + 1) % this.wallets.length]!;
        const priceTicks = 5 + Math.floor(rng.next() * 90); // 0.05 .. 0.94 in cents
        const shares = BigInt(5 + Math.floor(rng.next() * 200)) * 1_000_000n;
        const usdc = (shares * BigInt(priceTicks)) / 100n;
        // a quarter of the matches on the V1 exchange layout (both are read by topic0)
        const useV1 = !v2 || rng.next() < 0.25;
        const exchange = useV1 ? REPLAY_ADDRESSES.exchangeV1 : REPLAY_ADDRESSES.exchangeV2;
        const mint = rng.next() < 0.2;
        const tx = keccak256(toHex(`replay-tx-${opts.seed ?? 7}-${txn++}`));
        const token = tokens[outcome]!;
        const complement = tokens[1 - outcome]!;
        // the maker's order: SELLs the taker's token (direct), or BUYs the complement at 1 - price (mint)
        const makerLog = mint
          ? this.orderFilled(useV1, exchange, maker, taker, 'BUY', complement, shares - usdc, shares)
          : this.orderFilled(useV1, exchange, maker, taker, 'SELL', token, shares, usdc);
        const summary = this.orderFilled(useV1, exchange, taker, exchange, 'BUY', token, usdc, shares);
        this.push(t, { ...makerLog, transactionHash: tx }, { ...summary, transactionHash: tx });
        this.matches.push({ txHash: tx, ts: this.blockTs(this.blockAt(t)), taker, maker, tokenId: token, matchType: mint ? 'mint' : 'direct', shares: Number(shares) / 1e6, usdc: Number(usdc) / 1e6, version: useV1 ? 1 : 2 });
        buyers.push({ wallet: taker, outcome, shares });
      }
      // resolution a minute after the close, payouts from the recorded outcome prices
      const prices = r.outcome_prices.map(Number);
      const numerators = prices.map((p) => BigInt(Math.round(p)));
      const resolvedAt = r.end_sec + 60;
      const rtx = keccak256(toHex(`replay-resolution-${conditionId}`));
      this.push(resolvedAt, this.resolution(conditionId, numerators, rtx));
      // a few winners redeem an hour later
      const winner = prices[0]! > prices[1]! ? 0 : 1;
      for (const b of buyers.filter((x) => x.outcome === winner).slice(0, 2)) {
        const redeemTx = keccak256(toHex(`replay-redeem-${conditionId}-${b.wallet}`));
        this.push(resolvedAt + 3600, this.redemption(b.wallet, conditionId, winner === 0 ? 1n : 2n, b.shares, redeemTx));
      }
    }
  }

  /** The replay's clock (unix seconds): Gamma's view and the chain head follow it. */
  get now(): number {
    if (this.tail) return this.blockTs(this.head());
    if (!this.live) return this.fixedNow;
    return Math.floor(this.live.baseTs + ((Date.now() - this.live.wallMs) / 1000) * this.live.speed);
  }

  set now(ts: number) {
    this.fixedNow = ts;
    this.live = null;
    this.tail = null;
  }

  /** Let the clock run from `ts` at `speed` replay seconds per wall second (a venue that goes on). */
  run(ts: number, speed: number): void {
    this.live = { baseTs: ts, wallMs: Date.now(), speed };
  }

  /** The time of the newest block (the last generated event plus an hour). */
  get endTs(): number {
    return this.blockTs(this.lastBlock);
  }

  blockTs(n: number): number {
    return this.genesisTs + (n - this.firstBlock) * 2;
  }

  /** The block holding time `ts` (2-second blocks from the genesis). */
  blockAt(ts: number): number {
    return this.firstBlock + Math.max(0, Math.floor((ts - this.genesisTs) / 2));
  }

  /** The chain head as of the replay clock (or, past the recorded day, of the wall clock: extend()). */
  head(): number {
    if (this.tail) {
      const head = this.lastBlock + Math.floor((Date.now() - this.tail.wallMs) / 2000);
      this.generateTail(head);
      return head;
    }
    return Math.min(this.lastBlock, this.blockAt(this.now));
  }

  /**
   * Go on past the recorded day in real time: a new block every 2 s (Polygon's cadence) holding `fillsPerSecond`
   * x 2 matches on the replayed markets (their maker orders and summaries). The clock reads the chain's.
   */
  extend(fillsPerSecond: number, seed = 99): void {
    this.now = this.endTs;
    this.tail = { wallMs: Date.now(), fillsPerSecond, rng: new Rng(seed, 3), txn: 0, generated: this.lastBlock };
  }

  /** The wall time (ms) at which block n appeared (a block of the extension); NaN before it. */
  appearedAt(n: number): number {
    return this.tail && n > this.lastBlock ? this.tail.wallMs + (n - this.lastBlock) * 2000 : Number.NaN;
  }

  private generateTail(head: number): void {
    const t = this.tail!;
    for (let n = t.generated + 1; n <= head; n++) {
      const ts = this.blockTs(n);
      const k = Math.round(t.fillsPerSecond * 2);
      for (let i = 0; i < k; i++) {
        const m = this.markets[Math.floor(t.rng.next() * this.markets.length)]!;
        const tokens = JSON.parse(String(m.clobTokenIds)) as string[];
        const outcome = t.rng.next() < 0.5 ? 0 : 1;
        const taker = this.wallets[Math.floor(t.rng.next() * this.wallets.length)]!;
        const maker = this.wallets[(this.wallets.indexOf(taker) + 1 + Math.floor(t.rng.next() * (this.wallets.length - 1))) % this.wallets.length]!;
        const shares = BigInt(5 + Math.floor(t.rng.next() * 200)) * 1_000_000n;
        const usdc = (shares * BigInt(5 + Math.floor(t.rng.next() * 90))) / 100n;
        const tx = keccak256(toHex(`replay-tail-${t.txn++}`));
        const ex = REPLAY_ADDRESSES.exchangeV2;
        this.push(
          ts,
          { ...this.orderFilled(false, ex, maker, taker, 'SELL', tokens[outcome]!, shares, usdc), transactionHash: tx },
          { ...this.orderFilled(false, ex, taker, ex, 'BUY', tokens[outcome]!, usdc, shares), transactionHash: tx },
        );
        this.matches.push({ txHash: tx, ts, taker, maker, tokenId: tokens[outcome]!, matchType: 'direct', shares: Number(shares) / 1e6, usdc: Number(usdc) / 1e6, version: 2 });
      }
    }
    t.generated = Math.max(t.generated, head);
  }

  hashOf(n: number): Hex {
    // any 32 bytes serve as a block hash: the native sha256 (keccak in JS cost the replay seconds per backfill)
    return `0x${createHash('sha256').update(`replay-block-${n >= this.forkFrom ? this.fork : 0}-${n}`).digest('hex')}`;
  }

  private orderFilled(v1: boolean, exchange: string, maker: string, taker: string, side: 'BUY' | 'SELL', token: string, makerAmount: bigint, takerAmount: bigint) {
    const orderHash = keccak256(toHex(`order-${this.orders++}`));
    if (v1) {
      const [makerAssetId, takerAssetId] = side === 'BUY' ? [0n, BigInt(token)] : [BigInt(token), 0n];
      return {
        address: exchange,
        topics: encodeEventTopics({ abi: ORDER_FILLED_V1_ABI, eventName: 'OrderFilled', args: { orderHash, maker: maker as Hex, taker: taker as Hex } }) as Hex[],
        data: encodeAbiParameters(
          [{ type: 'uint256' }, { type: 'uint256' }, { type: 'uint256' }, { type: 'uint256' }, { type: 'uint256' }],
          [makerAssetId, takerAssetId, makerAmount, takerAmount, 0n],
        ),
      };
    }
    return {
      address: exchange,
      topics: encodeEventTopics({ abi: ORDER_FILLED_V2_ABI, eventName: 'OrderFilled', args: { orderHash, maker: maker as Hex, taker: taker as Hex } }) as Hex[],
      data: encodeAbiParameters(
        [{ type: 'uint8' }, { type: 'uint256' }, { type: 'uint256' }, { type: 'uint256' }, { type: 'uint256' }, { type: 'bytes32' }, { type: 'bytes32' }],
        [side === 'BUY' ? 0 : 1, BigInt(token), makerAmount, takerAmount, 0n, pad32('0x0'), pad32('0x0')],
      ),
    };
  }

  private resolution(conditionId: string, numerators: bigint[], tx: Hex) {
    return {
      address: REPLAY_ADDRESSES.conditionalTokens,
      topics: encodeEventTopics({
        abi: CONDITION_RESOLUTION_ABI,
        eventName: 'ConditionResolution',
        args: { conditionId: conditionId as Hex, oracle: REPLAY_ADDRESSES.oracle as Hex, questionId: keccak256(toHex(`q-${conditionId}`)) },
      }) as Hex[],
      data: encodeAbiParameters([{ type: 'uint256' }, { type: 'uint256[]' }], [BigInt(numerators.length), numerators]),
      transactionHash: tx,
    };
  }

  private redemption(redeemer: string, conditionId: string, indexSet: bigint, payout: bigint, tx: Hex) {
    return {
      address: REPLAY_ADDRESSES.conditionalTokens,
      topics: encodeEventTopics({
        abi: CTF_PAYOUT_REDEMPTION_ABI,
        eventName: 'PayoutRedemption',
        args: { redeemer: redeemer as Hex, collateralToken: REPLAY_ADDRESSES.usdc as Hex, parentCollectionId: pad32('0x0') },
      }) as Hex[],
      data: encodeAbiParameters([{ type: 'bytes32' }, { type: 'uint256[]' }, { type: 'uint256' }], [conditionId as Hex, [indexSet], payout]),
      transactionHash: tx,
    };
  }

  private push(ts: number, ...logs: { address: string; topics: Hex[]; data: Hex; transactionHash: Hex }[]): void {
    const n = this.blockAt(ts);
    let b = this.blocks.get(n);
    if (!b) this.blocks.set(n, (b = { number: n, ts: this.blockTs(n), logs: [] }));
    for (const l of logs) b.logs.push({ ...l, transactionIndex: hex(0), removed: false });
  }

  /** Every log of blocks [from, to] as eth_getLogs answers (no filter). */
  logsIn(from: number, to: number): RawLog[] {
    const out: RawLog[] = [];
    for (const [n, b] of [...this.blocks].filter(([n]) => n >= from && n <= to).sort((x, y) => x[0] - y[0])) {
      b.logs.forEach((l, i) => out.push({ ...l, blockNumber: hex(n), blockHash: this.hashOf(n), logIndex: hex(i) }));
    }
    return out;
  }

  /** Totals of what the chain holds up to `toBlock` (tests compare a sync with them). */
  count(toBlock = this.lastBlock): { logs: number; blocks: number } {
    let logs = 0;
    let blocks = 0;
    for (const [n, b] of this.blocks) if (n <= toBlock) {
      logs += b.logs.length;
      blocks++;
    }
    return { logs, blocks };
  }

  /**
   * Replace the newest `depth` blocks up to the head: new hashes, and their logs changed (each block's first log
   * is dropped: a transaction the new fork did not include). Returns the logs dropped.
   */
  reorg(depth: number): number {
    const head = this.head();
    this.fork++;
    this.forkFrom = head - depth + 1;
    let dropped = 0;
    for (let n = this.forkFrom; n <= head; n++) {
      const b = this.blocks.get(n);
      if (b && b.logs.length) {
        // drop a whole transaction (its maker log and summary), as a fork leaves a transaction out
        const tx = b.logs[0]!.transactionHash;
        const before = b.logs.length;
        b.logs = b.logs.filter((l) => l.transactionHash !== tx);
        dropped += before - b.logs.length;
      }
    }
    return dropped;
  }

  /** The numbers of the blocks that hold logs, ascending (tests aim reorgs and clocks at real activity). */
  blocksWithLogs(): number[] {
    return [...this.blocks.keys()].sort((a, b) => a - b);
  }

  // ------------------------------------------------------------------ Gamma
  /** A market as Gamma shows it at the replay clock (null: not listed yet). */
  gammaView(raw: Record<string, unknown>): Record<string, unknown> | null {
    const created = Date.parse(String(raw.createdAt)) / 1000;
    if (created > this.now) return null;
    const closedAt = Date.parse(String(raw.closedTime ?? raw.endDate).replace(' ', 'T').replace(/\+00$/, 'Z')) / 1000;
    if (closedAt <= this.now) return raw;
    return {
      ...raw,
      closed: false,
      closedTime: undefined,
      acceptingOrders: true,
      outcomePrices: '["0.5", "0.5"]',
      umaResolutionStatus: undefined,
      updatedAt: raw.startDate ?? raw.createdAt,
    };
  }

  private gammaKeyset(q: URLSearchParams): { status: number; body: unknown } {
    if (q.has('offset')) return { status: 422, body: { error: 'offset is not supported on keyset endpoints; use cursor' } };
    const limit = Number(q.get('limit') ?? 20);
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) return { status: 422, body: { error: 'limit must be 1..100' } };
    const closed = (q.get('closed') ?? 'false') === 'true';
    const tokenIds = q.getAll('clob_token_ids');
    const conditionIds = q.getAll('condition_ids').map((c) => c.toLowerCase());
    const endMin = q.get('end_date_min');
    let rows = this.markets.map((m) => this.gammaView(m)).filter((m): m is Record<string, unknown> => m !== null);
    rows = rows.filter((m) => Boolean(m.closed) === closed);
    if (tokenIds.length) rows = rows.filter((m) => (JSON.parse(String(m.clobTokenIds)) as string[]).some((t) => tokenIds.includes(t)));
    if (conditionIds.length) rows = rows.filter((m) => conditionIds.includes(String(m.conditionId).toLowerCase()));
    if (endMin) rows = rows.filter((m) => Date.parse(String(m.endDate)) >= Date.parse(endMin));
    if (q.get('order') === 'updatedAt') {
      const asc = q.get('ascending') === 'true';
      rows.sort((a, b) => (Date.parse(String(a.updatedAt)) - Date.parse(String(b.updatedAt))) * (asc ? 1 : -1) || Number(a.id) - Number(b.id));
    } else rows.sort((a, b) => Number(a.id) - Number(b.id));
    const cursor = q.get('cursor');
    let start = 0;
    if (cursor) {
      try {
        start = Number(JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')).i);
      } catch {
        return { status: 400, body: { error: 'bad cursor' } };
      }
    }
    const page = rows.slice(start, start + limit);
    let next = start + limit < rows.length ? start + limit : null;
    if (this.failures.duplicatePage && !this.duplicateServed && start === 0 && next !== null) {
      this.duplicateServed = true;
      next = 0;
    }
    return { status: 200, body: { markets: page, ...(next === null ? {} : { next_cursor: Buffer.from(JSON.stringify({ i: next })).toString('base64url') }) } };
  }

  // ------------------------------------------------------------------ JSON-RPC
  private rpc(method: string, params: unknown[]): { result?: unknown; error?: { code: number; message: string } } {
    const head = this.head();
    if (method === 'eth_blockNumber') return { result: hex(head) };
    if (method === 'eth_chainId') return { result: hex(137) };
    if (method === 'eth_getBlockByNumber') {
      const tag = String(params[0]);
      const n = tag === 'latest' ? head : Number(BigInt(tag));
      if (n > head || n < this.firstBlock) return { result: null };
      return { result: { number: hex(n), hash: this.hashOf(n), parentHash: this.hashOf(n - 1), timestamp: hex(this.blockTs(n)), transactions: [] } };
    }
    if (method === 'eth_getLogs') {
      const f = (params[0] ?? {}) as { fromBlock?: string; toBlock?: string; address?: string | string[]; topics?: (string | string[] | null)[] };
      const from = f.fromBlock ? Number(BigInt(f.fromBlock)) : head;
      const to = f.toBlock === undefined || f.toBlock === 'latest' ? head : Math.min(head, Number(BigInt(f.toBlock)));
      if (to - from + 1 > this.maxRange) {
        this.stats.refused++;
        return { error: { code: -32005, message: `block range is too large (max ${this.maxRange} blocks)` } };
      }
      const addresses = f.address === undefined ? null : (Array.isArray(f.address) ? f.address : [f.address]).map((a) => a.toLowerCase());
      const t0 = f.topics?.[0];
      const topic0 = t0 === undefined || t0 === null ? null : (Array.isArray(t0) ? t0 : [t0]).map((t) => t.toLowerCase());
      const logs = this.logsIn(from, to).filter((l) => (!addresses || addresses.includes(l.address.toLowerCase())) && (!topic0 || topic0.includes(l.topics[0]!.toLowerCase())));
      if (logs.length > this.maxResults) {
        this.stats.refused++;
        return { error: { code: -32005, message: `query returned more than ${this.maxResults} results` } };
      }
      return { result: logs };
    }
    return { error: { code: -32601, message: `method ${method} not found` } };
  }

  // ------------------------------------------------------------------ HTTP
  private handle(req: IncomingMessage, res: ServerResponse, body: string): void {
    this.stats.requests++;
    const n = this.stats.requests;
    const f = this.failures;
    const send = (status: number, payload: unknown, headers: Record<string, string> = {}) => {
      let text = JSON.stringify(payload);
      if (status === 200 && f.truncateEvery && n % f.truncateEvery === 0) {
        text = text.slice(0, Math.floor(text.length / 2));
        this.stats.failed++;
      }
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(text);
    };
    if (f.rateLimitEvery && n % f.rateLimitEvery === 0) {
      this.stats.failed++;
      return send(429, { error: 'Too Many Requests' }, { 'retry-after': String(f.retryAfterSeconds ?? 1) });
    }
    if (f.serverErrorEvery && n % f.serverErrorEvery === 0) {
      this.stats.failed++;
      return send(503, { error: 'Service Unavailable' });
    }
    const url = new URL(req.url ?? '/', 'http://replay');
    if (req.method === 'GET' && url.pathname === '/gamma/markets/keyset') {
      this.stats.gamma++;
      const r = this.gammaKeyset(url.searchParams);
      return send(r.status, r.body);
    }
    if (req.method === 'POST' && url.pathname === '/rpc') {
      this.stats.rpc++;
      let msg: unknown;
      try {
        msg = JSON.parse(body);
      } catch {
        return send(200, { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'parse error' } });
      }
      const one = (m: { id?: unknown; method?: unknown; params?: unknown }) => ({ jsonrpc: '2.0', id: m.id ?? null, ...this.rpc(String(m.method), Array.isArray(m.params) ? m.params : []) });
      // a batch (an array of calls), as nodes take them, unless this replay plays a node that refuses batches
      if (Array.isArray(msg)) {
        if (this.failures.noBatches) return send(200, { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'batch requests are not supported' } });
        if (msg.length > 1000) return send(200, { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'batch too large' } });
        return send(200, msg.map((m) => one(m as { id?: unknown })));
      }
      return send(200, one(msg as { id?: unknown }));
    }
    send(404, { error: 'not found' });
  }

  /** Listen on loopback; returns the base URLs of both sources. */
  async listen(port = 0): Promise<{ gamma: string; rpc: string; port: number }> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => this.handle(req, res, Buffer.concat(chunks).toString('utf8')));
    });
    await new Promise<void>((ok) => this.server!.listen(port, '127.0.0.1', ok));
    const addr = this.server.address();
    const p = typeof addr === 'object' && addr ? addr.port : port;
    return { gamma: `http://127.0.0.1:${p}/gamma`, rpc: `http://127.0.0.1:${p}/rpc`, port: p };
  }

  async close(): Promise<void> {
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise<void>((ok) => this.server!.close(() => ok()));
    this.server = null;
  }
}
