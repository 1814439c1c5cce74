/**
 * Every fill, resolution and redemption from the chain: the exchanges' OrderFilled logs (V1 and V2), the
 * ConditionalTokens' ConditionResolution and PayoutRedemption, and the NegRiskAdapter's PayoutRedemption, read with
 * `eth_getLogs` over a JSON-RPC node and loaded by data/ingest/chain-logs.ts.
 *
 * - Block ranges adapt: a node that refuses a range (too many blocks or results) gets half of it, down to one block;
 *   ranges that come back small grow again (x2, up to `maxRange`).
 * - Only blocks `confirmations` behind the head are read.
 * - Reorgs: before each step the hash of the newest block rows were loaded from is compared with the node's; on a
 *   mismatch the sync walks back through the blocks it loaded rows from to the newest one both agree on, deletes
 *   every row loaded from the blocks after it (chain_logs says which) and reads forward again. The newest
 *   `keepBlocks` such blocks are remembered: a deeper reorg is not undone (with confirmations it does not happen). Logs whose block hash is not the block's (a reorg between two calls) fail the
 *   step, which is retried.
 * - A log's block time comes from the log when the node includes it (`blockTimestamp`), else from
 *   eth_getBlockByNumber.
 * - Each batch (its rows, its derived mids, its provenance, the new cursor) commits in one transaction.
 */
import { DuckDBTimestampValue, type DuckDBConnection } from '@duckdb/node-api';
import { queryRows } from '../duckdb.ts';
import { loadChainLogs } from '../ingest/chain-logs.ts';
import { CTF_TOPICS, decodeCtfLog } from '../ingest/ctf.ts';
import { ORDER_FILLED_V1_TOPIC, ORDER_FILLED_V2_TOPIC, decodeOrderFilled } from '../ingest/order-filled.ts';
import type { IngestReport } from '../ingest/report.ts';
import { rpcLogSchema, type BlockTimestamps, type ChainConfig } from '../ingest/rpc-log.ts';
import { RpcError, type JsonRpc } from './http.ts';
import { deriveMids } from './mids.ts';
import { inTransaction } from '../duckdb.ts';
import { getState, setState } from './state.ts';

const SOURCE = 'chain';
/** the topics read: both OrderFilled layouts and the three CTF / adapter events */
export const SYNC_TOPICS = [ORDER_FILLED_V1_TOPIC, ORDER_FILLED_V2_TOPIC, ...CTF_TOPICS];

export interface ChainSyncOptions {
  config: ChainConfig;
  /** first block of the backfill (used when no cursor is stored) */
  fromBlock: bigint;
  /** last block to read (backfill bound); none: follow the head */
  untilBlock?: bigint;
  /** blocks behind the head left unread (default 32: about a minute on Polygon) */
  confirmations?: number;
  /** first range tried (default 2,000 blocks) and the largest (default 10,000) */
  initialRange?: number;
  maxRange?: number;
  /** the newest blocks with loaded rows whose hashes are kept for reorg checks (default 256) */
  keepBlocks?: number;
  /** markets a batch names that the venue does not know yet: fetched before the batch loads (Gamma) */
  ensureMarkets?: (tokenIds: string[], conditionIds: string[]) => Promise<number>;
}

export interface ChainStep {
  from: bigint;
  to: bigint;
  head: bigint;
  logs: number;
  /** rows per table this batch inserted */
  rows: Record<string, number>;
  skipped: Record<string, number>;
  /** the range now tried per request */
  range: number;
  /** rows removed by a reorg found before this step (0 when none) */
  reorged: number;
  /** the first arrival batch (seq) this step wrote: the event producers read the rows from it on */
  seqFrom: number;
  /** block time of `to` (unix seconds): the venue clock of a synced venue (0 when the step read nothing) */
  toTs: number;
}

interface RpcBlock {
  number: string;
  hash: string;
  parentHash: string;
  timestamp: string;
}

interface RawLog {
  blockNumber: string;
  blockHash?: string;
  transactionHash: string;
  logIndex: string;
  address: string;
  topics: string[];
  blockTimestamp?: string;
  removed?: boolean;
}

const hex = (n: bigint) => `0x${n.toString(16)}`;

/** A batch named markets the venue lacks: rolled back, fetched, loaded again. */
class MissingMarkets extends Error {}

/** A node's refusal of a range (too many blocks or results): the range is halved, not retried as is. */
export function isRangeRefusal(e: unknown): boolean {
  if (!(e instanceof RpcError)) return false;
  return /range|too (many|large|wide|big)|more than|exceed|limit|response size|10,?000/i.test(e.message) || e.code === -32005 || e.code === -32614;
}

export class ChainSync {
  private range: number;
  private readonly maxRange: number;
  private readonly confirmations: bigint;
  private readonly keepBlocks: number;
  private readonly addresses: string[];

  constructor(
    private readonly rpc: JsonRpc,
    private readonly conn: DuckDBConnection,
    private readonly opts: ChainSyncOptions,
  ) {
    this.range = opts.initialRange ?? 2000;
    this.maxRange = opts.maxRange ?? 10_000;
    this.confirmations = BigInt(opts.confirmations ?? 32);
    this.keepBlocks = opts.keepBlocks ?? 256;
    const c = opts.config;
    this.addresses = [...new Set([...c.ctfExchanges, ...c.negRiskExchanges, ...c.conditionalTokens, ...c.negRiskAdapters])];
  }

  /** The next block to read (the stored cursor, else the configured start). */
  async nextBlock(): Promise<bigint> {
    const v = await getState(this.conn, SOURCE, 'next_block');
    return v === null ? this.opts.fromBlock : BigInt(v);
  }

  async head(): Promise<bigint> {
    return BigInt(await this.rpc.call<string>('eth_blockNumber', []));
  }

  /** The block the sync reads up to now: confirmations behind the head, and not past `untilBlock`. */
  async target(): Promise<{ head: bigint; target: bigint }> {
    const head = await this.head();
    let target = head - this.confirmations;
    if (this.opts.untilBlock !== undefined && this.opts.untilBlock < target) target = this.opts.untilBlock;
    return { head, target };
  }

  /**
   * One batch: check for a reorg, read the next range's logs, load them. Returns null when the cursor is past the
   * target (caught up).
   */
  async step(): Promise<ChainStep | null> {
    const reorged = await this.checkReorg();
    const { head, target } = await this.target();
    const from = await this.nextBlock();
    if (from > target) return reorged ? { from, to: from - 1n, head, logs: 0, rows: {}, skipped: {}, range: this.range, reorged, seqFrom: 0, toTs: 0 } : null;
    for (;;) {
      const to = from + BigInt(this.range) - 1n > target ? target : from + BigInt(this.range) - 1n;
      let logs: RawLog[];
      try {
        logs = await this.rpc.call<RawLog[]>('eth_getLogs', [{ fromBlock: hex(from), toBlock: hex(to), address: this.addresses, topics: [SYNC_TOPICS] }]);
      } catch (e) {
        if (isRangeRefusal(e) && to > from) {
          this.range = Math.max(1, Math.floor(Number(to - from + 1n) / 2));
          continue;
        }
        throw e;
      }
      const live = logs.filter((l) => !l.removed);
      const step = await this.load(from, to, live);
      // a range that came back light may grow; a heavy one stays
      if (live.length < 5000 && Number(to - from + 1n) >= this.range) this.range = Math.min(this.maxRange, this.range * 2);
      return { ...step, head, range: this.range, reorged };
    }
  }

  private async block(n: bigint): Promise<RpcBlock> {
    const b = await this.rpc.call<RpcBlock | null>('eth_getBlockByNumber', [hex(n), false]);
    if (!b) throw new Error(`chain: block ${n} not found`);
    return b;
  }

  private async load(from: bigint, to: bigint, logs: RawLog[]): Promise<Omit<ChainStep, 'head' | 'range' | 'reorged'>> {
    // block times and hashes: the batch's last block (the cursor's anchor for reorg checks) and every block with logs
    const numbers = new Set<bigint>([to]);
    for (const l of logs) if (l.blockTimestamp === undefined || l.blockHash === undefined) numbers.add(BigInt(l.blockNumber));
    const blocks = new Map<bigint, RpcBlock>();
    // a hundred headers a request (a JSON-RPC batch), the requests in parallel up to the source's cap
    const wanted = [...numbers];
    const chunks: bigint[][] = [];
    for (let i = 0; i < wanted.length; i += 100) chunks.push(wanted.slice(i, i + 100));
    await Promise.all(
      chunks.map(async (chunk) => {
        const got = await this.rpc.batch<RpcBlock | null>(chunk.map((n) => ({ method: 'eth_getBlockByNumber', params: [hex(n), false] })));
        got.forEach((b, i) => {
          if (!b) throw new Error(`chain: block ${chunk[i]} not found`);
          blocks.set(chunk[i]!, b);
        });
      }),
    );
    const times: BlockTimestamps = new Map();
    for (const [n, b] of blocks) times.set(n, Number(BigInt(b.timestamp)));
    for (const l of logs) {
      const b = blocks.get(BigInt(l.blockNumber));
      if (b && l.blockHash !== undefined && l.blockHash.toLowerCase() !== b.hash.toLowerCase()) {
        throw new Error(`chain: log ${l.transactionHash}:${l.logIndex} names block hash ${l.blockHash}, the node now has ${b.hash} (a reorg while reading): retry`);
      }
    }
    const toBlock = blocks.get(to)!;
    // a batch naming a market the venue does not know yet (new on chain before the metadata sync saw it) is rolled
    // back, the market fetched, and the batch loaded again (decoding every log up front cost a fifth of a backfill)
    for (let attempt = 0; ; attempt++) {
      try {
        return await inTransaction(this.conn, async () => {
          // the newest arrival batch before this one, over every table (a batch may write resolutions and no fill)
          const [before] = await queryRows<{ s: number }>(this.conn, `SELECT coalesce(greatest((SELECT max(seq) FROM fills), (SELECT max(seq) FROM resolutions), (SELECT max(seq) FROM inventory_events), (SELECT max(seq) FROM mids)), 0) AS s`);
          const report: IngestReport = await loadChainLogs(this.conn, logs, times, this.opts.config);
          if (attempt === 0 && this.opts.ensureMarkets && (report.skipped.unknown_token || report.skipped.unknown_market)) throw new MissingMarkets();
          await this.recordProvenance(logs, blocks);
          await deriveMids(this.conn, Number(before!.s));
          await this.recordBlocks(to, toBlock, logs, blocks);
          await setState(this.conn, SOURCE, 'next_block', String(to + 1n));
          return { from, to, logs: logs.length, rows: report.rows, skipped: report.skipped, seqFrom: Number(before!.s) + 1, toTs: Number(BigInt(toBlock.timestamp)) };
        });
      } catch (e) {
        if (!(e instanceof MissingMarkets)) throw e;
        await this.fetchMarkets(logs);
      }
    }
  }

  /** The markets the logs name (tokens of fills, conditions of resolutions and redemptions), through ensureMarkets. */
  private async fetchMarkets(logs: RawLog[]): Promise<void> {
    const tokens: string[] = [];
    const conditions: string[] = [];
    for (const raw of logs) {
      const parsed = rpcLogSchema.safeParse(raw);
      if (!parsed.success) continue;
      try {
        const f = decodeOrderFilled(parsed.data, this.opts.config);
        if (f) {
          tokens.push(f.tokenId);
          continue;
        }
        const c = decodeCtfLog(parsed.data, this.opts.config);
        if (c) conditions.push(c.conditionId);
      } catch {
        // undecodable: the loader counts it
      }
    }
    if (tokens.length || conditions.length) await this.opts.ensureMarkets!(tokens, conditions);
  }

  /**
   * The hash of every block this batch loaded rows from, and of its last block: a reorg check walks back through them
   * to the newest one the node still agrees with (blocks without rows need no check: nothing was loaded from them).
   * The newest `keepBlocks` are kept.
   */
  private async recordBlocks(to: bigint, toBlock: RpcBlock, logs: RawLog[], blocks: Map<bigint, RpcBlock>): Promise<void> {
    const rows = new Map<bigint, { hash: string; ts: number }>([[to, { hash: toBlock.hash, ts: Number(BigInt(toBlock.timestamp)) }]]);
    for (const l of logs) {
      const n = BigInt(l.blockNumber);
      const b = blocks.get(n);
      rows.set(n, { hash: l.blockHash ?? b!.hash, ts: l.blockTimestamp !== undefined ? Number(BigInt(l.blockTimestamp)) : Number(BigInt(b!.timestamp)) });
    }
    const a = await this.conn.createAppender('chain_blocks');
    try {
      for (const [n, r] of rows) {
        a.appendBigInt(n);
        a.appendVarchar(r.hash.toLowerCase());
        a.appendTimestamp(new DuckDBTimestampValue(BigInt(r.ts) * 1_000_000n));
        a.endRow();
      }
      a.flushSync();
    } finally {
      a.closeSync();
    }
    await this.conn.run(`DELETE FROM chain_blocks WHERE block_number < (SELECT min(block_number) FROM (SELECT block_number FROM chain_blocks ORDER BY block_number DESC LIMIT ${this.keepBlocks}))`);
  }

  private async recordProvenance(logs: RawLog[], blocks: Map<bigint, RpcBlock>): Promise<void> {
    if (!logs.length) return;
    // a log read again after a crash between its load and the cursor cannot happen (one transaction); after a reorg
    // the orphaned rows were deleted first: plain appends (in the batch's transaction)
    const a = await this.conn.createAppender('chain_logs');
    try {
      for (const l of logs) {
        const n = BigInt(l.blockNumber);
        a.appendVarchar(l.transactionHash.toLowerCase());
        a.appendInteger(Number(BigInt(l.logIndex)));
        a.appendBigInt(n);
        a.appendVarchar((l.blockHash ?? blocks.get(n)?.hash ?? '').toLowerCase());
        a.appendVarchar(l.address.toLowerCase());
        a.appendVarchar((l.topics[0] ?? '').toLowerCase());
        a.endRow();
      }
      a.flushSync();
    } finally {
      a.closeSync();
    }
  }

  /**
   * Compare the newest stored block hashes with the node's; on a mismatch delete what the orphaned blocks loaded and
   * move the cursor back. Returns the number of rows removed.
   */
  async checkReorg(): Promise<number> {
    const stored = await queryRows<{ n: bigint; h: string }>(this.conn, `SELECT block_number AS n, block_hash AS h FROM chain_blocks ORDER BY block_number DESC LIMIT ${this.keepBlocks}`);
    if (!stored.length) return 0;
    let forkAt: bigint | null = null;
    for (const s of stored) {
      const b = await this.block(BigInt(s.n));
      if (b.hash.toLowerCase() === s.h) {
        forkAt = BigInt(s.n);
        break;
      }
    }
    const newest = BigInt(stored[0]!.n);
    if (forkAt === newest) return 0;
    // no stored block agrees: go back to before the oldest one kept (deeper reorgs than that are not handled)
    const keep = forkAt ?? BigInt(stored[stored.length - 1]!.n) - 1n;
    return inTransaction(this.conn, async () => {
      const orphan = `SELECT tx_hash, log_index FROM chain_logs WHERE block_number > ${keep}`;
      let removed = 0;
      // the mids derived from the orphaned fills go with them (mids.ts: one per token and fill time)
      await this.conn.run(`DELETE FROM mids WHERE (market_id, ts) IN (SELECT (market_id, ts) FROM fills WHERE (tx_hash, log_index) IN (${orphan}))`);
      for (const t of ['fills', 'inventory_legs', 'inventory_events']) {
        removed += (await this.conn.run(`DELETE FROM ${t} WHERE (tx_hash, log_index) IN (${orphan})`)).rowsChanged;
      }
      removed += (await this.conn.run(`DELETE FROM resolutions WHERE tx_hash IN (SELECT tx_hash FROM chain_logs WHERE block_number > ${keep})`)).rowsChanged;
      await this.conn.run(`DELETE FROM chain_logs WHERE block_number > ${keep}`);
      await this.conn.run(`DELETE FROM chain_blocks WHERE block_number > ${keep}`);
      await setState(this.conn, SOURCE, 'next_block', String(keep + 1n));
      await setState(this.conn, SOURCE, 'reorgs', String(Number((await getState(this.conn, SOURCE, 'reorgs')) ?? '0') + 1));
      // rows the analytics may have seen are gone: they rebuild (an incremental refresh only ever adds)
      if (removed > 0) await this.conn.run(`INSERT INTO venue_retractions VALUES (nextval('venue_seq'), now()::TIMESTAMP, ${removed}, 'reorg below block ${keep + 1n}')`);
      return removed;
    });
  }
}
