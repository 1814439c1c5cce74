/** Route a mixed batch of chain logs to the CTF and exchange loaders (CTF first: resolutions before redemptions). */
import type { DuckDBConnection } from '@duckdb/node-api';
import { CTF_TOPICS, loadCtfLogs } from './ctf.ts';
import { ORDER_FILLED_V1_TOPIC, ORDER_FILLED_V2_TOPIC, loadOrderFilledLogs } from './order-filled.ts';
import { ReportBuilder, type IngestReport } from './report.ts';
import { DEFAULT_CHAIN_CONFIG, type BlockTimestamps, type ChainConfig } from './rpc-log.ts';

export async function loadChainLogs(
  conn: DuckDBConnection,
  logs: readonly unknown[],
  blockTimestamps: BlockTimestamps = new Map(),
  config: ChainConfig = DEFAULT_CHAIN_CONFIG,
): Promise<IngestReport> {
  const ctf: unknown[] = [];
  const exchange: unknown[] = [];
  const rb = new ReportBuilder();
  for (const log of logs) {
    const topic0 = topicOf(log);
    if (topic0 === ORDER_FILLED_V1_TOPIC || topic0 === ORDER_FILLED_V2_TOPIC) exchange.push(log);
    else if (topic0 !== undefined && CTF_TOPICS.includes(topic0)) ctf.push(log);
    // Malformed logs go to the exchange loader, whose validation names the bad field.
    else if (topic0 === undefined) exchange.push(log);
    else rb.skip('unsupported_event', `topic0 ${topic0} is neither OrderFilled nor a CTF event we load`);
  }
  const parts = [await loadCtfLogs(conn, ctf, blockTimestamps, config), await loadOrderFilledLogs(conn, exchange, blockTimestamps, config)];
  for (const p of parts) {
    rb.report.inserted += p.inserted;
    rb.report.duplicates += p.duplicates;
    rb.merge(p);
  }
  return rb.report;
}

function topicOf(log: unknown): string | undefined {
  const topics = (log as { topics?: unknown } | null)?.topics;
  return Array.isArray(topics) && typeof topics[0] === 'string' ? topics[0].toLowerCase() : undefined;
}
