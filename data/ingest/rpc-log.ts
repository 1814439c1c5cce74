/**
 * Logs as an RPC `eth_getLogs` returns them, the block-timestamp map that dates them, and which contract
 * addresses we trust as the venue's exchanges and ConditionalTokens (a log from any other address is skipped:
 * anyone can deploy a contract that emits an event with the same signature).
 */
import { z } from 'zod';
import { addressSchema, bytes32Schema, optionalField, txHashSchema } from './zod-types.ts';

export interface ChainConfig {
  /** Exchanges whose OrderFilled rows are exchange_kind 'ctf' (V1 and V2 contracts alike). */
  ctfExchanges: string[];
  /** Exchanges whose OrderFilled rows are exchange_kind 'neg_risk'. */
  negRiskExchanges: string[];
  /** ConditionalTokens contracts (ConditionResolution, PayoutRedemption). */
  conditionalTokens: string[];
  /** NegRiskAdapter contracts: their PayoutRedemption names the user; the CTF one under them names the adapter. */
  negRiskAdapters: string[];
  /**
   * The V2 collateral adapters (CtfCollateralAdapter, NegRiskCtfCollateralAdapter): they split, merge and redeem on a
   * user's behalf through ConditionalTokens, whose events then name the adapter, and emit no event naming the user.
   * Never traders; their CTF redemptions are skipped (collateral_adapter_redemption).
   */
  collateralAdapters: string[];
  /**
   * Other addresses a source may put in a party field while acting for a user (an operator filling orders, a relayer):
   * never traders (data/ingest/placeholders.ts). None by default.
   */
  operators: string[];
}

/**
 * Polygon mainnet contracts: the V1 exchanges and the V2 ones (live since 2026-04-28; docs/ingest.md says where the
 * addresses were checked). More can be passed with --ctf-exchange / --neg-risk-exchange (or in the config); logs of
 * any other emitter are skipped as 'unknown_exchange_address'.
 */
export const DEFAULT_CHAIN_CONFIG: ChainConfig = {
  ctfExchanges: ['0x4bfb41d5b3570defd03c39a9a4d8de6bd8b8982e', '0xe111180000d2663c0091e4f400237545b87b996b'],
  negRiskExchanges: ['0xc5d563a36ae78145c45a50134d48a1215220f80a', '0xe2222d279d744050d28e00520010520000310f59'],
  conditionalTokens: ['0x4d97dcd97ec945f40cf65f87097ace5ea0476045'],
  negRiskAdapters: ['0xd91e80cf2e7be2e162c6513ced06f1dd0da35296'],
  // CtfCollateralAdapter, and NegRiskCtfCollateralAdapter as two public sources spell it (both are contracts)
  collateralAdapters: ['0xada100874d00e3331d00f2007a9c336a65009718', '0xada200001000ef00d07553cee7006808f895c6f1', '0xada2005600dec949baf300f4c6120000bdb6eaab'],
  operators: [],
};

/** Defaults plus extra addresses (lists are merged, lowercased). */
export function chainConfig(extra: Partial<ChainConfig> = {}): ChainConfig {
  const merge = (a: string[], b: string[] | undefined) => [...new Set([...a, ...(b ?? [])].map((x) => x.toLowerCase()))];
  return {
    ctfExchanges: merge(DEFAULT_CHAIN_CONFIG.ctfExchanges, extra.ctfExchanges),
    negRiskExchanges: merge(DEFAULT_CHAIN_CONFIG.negRiskExchanges, extra.negRiskExchanges),
    conditionalTokens: merge(DEFAULT_CHAIN_CONFIG.conditionalTokens, extra.conditionalTokens),
    negRiskAdapters: merge(DEFAULT_CHAIN_CONFIG.negRiskAdapters, extra.negRiskAdapters),
    collateralAdapters: merge(DEFAULT_CHAIN_CONFIG.collateralAdapters, extra.collateralAdapters),
    operators: merge(DEFAULT_CHAIN_CONFIG.operators, extra.operators),
  };
}

export function exchangeKindOf(address: string, config: ChainConfig): 'ctf' | 'neg_risk' | null {
  const a = address.toLowerCase();
  if (config.ctfExchanges.includes(a)) return 'ctf';
  if (config.negRiskExchanges.includes(a)) return 'neg_risk';
  return null;
}

/** RPC quantity: 0x-hex string (as eth_getLogs sends it) or a plain non-negative integer. */
const quantitySchema = z
  .union([z.string().regex(/^0x[0-9a-fA-F]+$/, { error: 'expected a 0x-hex quantity' }), z.number().int().nonnegative()])
  .transform((v) => BigInt(v));

export const rpcLogSchema = z.object({
  address: addressSchema,
  topics: z.array(bytes32Schema).min(1, { error: 'a log needs topic0' }).max(4),
  data: z
    .string()
    .regex(/^0x([0-9a-fA-F]{2})*$/, { error: 'expected 0x-hex bytes' })
    .transform((s) => s.toLowerCase() as `0x${string}`),
  transactionHash: txHashSchema,
  logIndex: quantitySchema.refine((n) => n <= 2147483647n, { error: 'log index exceeds INTEGER' }).transform(Number),
  blockNumber: quantitySchema,
  /** Some nodes include the block time in each log; it wins over the block-timestamp map. */
  blockTimestamp: optionalField(quantitySchema),
  removed: optionalField(z.boolean()),
});
export type RpcLog = z.output<typeof rpcLogSchema>;
/** The raw JSON shape of one log. */
export type RpcLogInput = z.input<typeof rpcLogSchema>;

/** Block number -> unix seconds. */
export type BlockTimestamps = Map<bigint, number>;

/**
 * Accept `{ "<block number, decimal or 0x-hex>": <unix seconds, number or 0x-hex> }`; entries that are not
 * numbers are ignored (the loaders then skip those blocks' logs as 'missing_block_timestamp').
 */
export function parseBlockTimestamps(raw: unknown): BlockTimestamps {
  const out: BlockTimestamps = new Map();
  if (raw instanceof Map) {
    for (const [k, v] of raw) addTimestamp(out, k, v);
  } else if (raw && typeof raw === 'object') {
    for (const [k, v] of Object.entries(raw)) addTimestamp(out, k, v);
  }
  return out;
}

function addTimestamp(out: BlockTimestamps, k: unknown, v: unknown): void {
  const block = toBigInt(k);
  const ts = toBigInt(v);
  if (block !== null && ts !== null) out.set(block, Number(ts));
}

function toBigInt(v: unknown): bigint | null {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return BigInt(v);
  if (typeof v === 'string' && /^(0x[0-9a-fA-F]+|[0-9]+)$/.test(v)) return BigInt(v);
  return null;
}

/** The timestamp of a log, or null when neither the log nor the map knows its block. */
export function logTime(log: RpcLog, blocks: BlockTimestamps): Date | null {
  const seconds = log.blockTimestamp !== undefined ? Number(log.blockTimestamp) : blocks.get(log.blockNumber);
  return seconds === undefined ? null : new Date(seconds * 1000);
}

/**
 * A logs file as the CLI reads it: a bare array of logs, a JSON-RPC response `{ result: [...] }`, or
 * `{ logs: [...], blockTimestamps: {...} }`.
 */
export function parseLogsFile(json: unknown): { logs: unknown[]; blockTimestamps: BlockTimestamps } {
  if (Array.isArray(json)) return { logs: json, blockTimestamps: new Map() };
  const o = (json ?? {}) as { logs?: unknown; result?: unknown; blockTimestamps?: unknown };
  const logs = Array.isArray(o.logs) ? o.logs : Array.isArray(o.result) ? o.result : [];
  return { logs, blockTimestamps: parseBlockTimestamps(o.blockTimestamps) };
}
