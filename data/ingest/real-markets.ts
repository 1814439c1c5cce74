/**
 * The public CSV export of 9,550 real venue markets (data/real-markets/markets.csv; source: the public
 * repository manja316/polymarket-historical-data, CC-BY-4.0). It has no condition or token ids, so it cannot fill
 * `markets`: the generator reads it for realism, and the CLI can copy it into the reference table ref_real_markets.
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { DuckDBConnection } from '@duckdb/node-api';
import { z } from 'zod';
import { parseCsv } from './csv.ts';
import { insertNew } from './insert.ts';
import { ReportBuilder, type IngestReport } from './report.ts';
import { jsonArray, numberish, venueDateSchema } from './zod-types.ts';

/** The export shipped with the repository (data/real-markets/, with its CC-BY-4.0 attribution). */
export const REAL_MARKETS_CSV = fileURLToPath(new URL('../real-markets/markets.csv', import.meta.url));
export const REAL_MARKETS_ATTRIBUTION =
  'Real market metadata: public repository manja316/polymarket-historical-data, licensed CC-BY-4.0.';

export interface RealMarketRow {
  /** Gamma market id (numeric, kept as text). */
  marketId: string;
  question: string;
  /** Lowercase snake_case: other, crypto, sports, politics, geopolitics, science_tech, economics, ... */
  category: string;
  volume: number;
  volume24h: number;
  liquidity: number;
  /** Scheduled close; null for the few open-ended markets. */
  endDate: Date | null;
  createdDate: Date;
  outcomes: string[];
  outcomePrices: number[];
  bestBid: number | null;
  bestAsk: number | null;
  spread: number | null;
  lastTradePrice: number | null;
  oneDayChange: number | null;
  active: boolean;
}

const emptyToNull = (v: unknown) => (v === '' ? null : v);
const nullableNumber = z.preprocess(emptyToNull, numberish.nullable());

const csvRowSchema = z.object({
  market_id: z.string().regex(/^[0-9]+$/, { error: 'expected a numeric market id' }),
  question: z.string().min(1),
  category: z.string().min(1),
  volume: numberish,
  volume_24h: numberish,
  liquidity: numberish,
  end_date: z.preprocess(emptyToNull, venueDateSchema.nullable()),
  created_date: venueDateSchema,
  outcomes: jsonArray(z.string()),
  outcome_prices: jsonArray(numberish),
  best_bid: nullableNumber,
  best_ask: nullableNumber,
  spread: nullableNumber,
  last_trade_price: nullableNumber,
  one_day_change: nullableNumber,
  active: z.enum(['0', '1', 'true', 'false', 'True', 'False']).transform((s) => s === '1' || s.toLowerCase() === 'true'),
});

/** Parse the CSV text; malformed rows are skipped and counted in the report. */
export function parseRealMarketsCsv(text: string): { rows: RealMarketRow[]; report: IngestReport } {
  const rb = new ReportBuilder();
  const [header, ...records] = parseCsv(text);
  const rows: RealMarketRow[] = [];
  if (!header) return { rows, report: rb.report };
  records.forEach((rec, i) => {
    const where = `csv record ${i + 1}`;
    if (rec.length !== header.length) return rb.skip('invalid:width', `${where}: ${rec.length} fields, header has ${header.length}`);
    const r = csvRowSchema.safeParse(Object.fromEntries(header.map((h, j) => [h, rec[j]!])));
    if (!r.success) return rb.reject(where, r.error);
    const d = r.data;
    if (d.outcomes.length !== d.outcome_prices.length) {
      return rb.skip('invalid:outcome_prices', `${where}: ${d.outcomes.length} outcomes but ${d.outcome_prices.length} prices`);
    }
    rows.push({
      marketId: d.market_id,
      question: d.question,
      category: d.category,
      volume: d.volume,
      volume24h: d.volume_24h,
      liquidity: d.liquidity,
      endDate: d.end_date,
      createdDate: d.created_date,
      outcomes: d.outcomes,
      outcomePrices: d.outcome_prices,
      bestBid: d.best_bid,
      bestAsk: d.best_ask,
      spread: d.spread,
      lastTradePrice: d.last_trade_price,
      oneDayChange: d.one_day_change,
      active: d.active,
    });
  });
  rb.report.inserted = rows.length;
  return { rows, report: rb.report };
}

/** Read the real-markets CSV (default: the shared export). Malformed rows are dropped. */
export async function readRealMarkets(path: string = REAL_MARKETS_CSV): Promise<RealMarketRow[]> {
  return parseRealMarketsCsv(await readFile(path, 'utf8')).rows;
}

/** Reference table for the CSV (not a venue table: the venue schema needs condition and token ids). */
export const REF_REAL_MARKETS_DDL = `CREATE TABLE IF NOT EXISTS ref_real_markets (
  market_id VARCHAR NOT NULL,
  question VARCHAR NOT NULL,
  category VARCHAR NOT NULL,
  volume_usdc DOUBLE NOT NULL,
  volume_24h_usdc DOUBLE NOT NULL,
  liquidity_usdc DOUBLE NOT NULL,
  end_date TIMESTAMP,
  created_at TIMESTAMP NOT NULL,
  outcomes VARCHAR[] NOT NULL,
  outcome_prices DOUBLE[] NOT NULL,
  best_bid DOUBLE,
  best_ask DOUBLE,
  spread DOUBLE,
  last_trade_price DOUBLE,
  one_day_change DOUBLE,
  active BOOLEAN NOT NULL
)`;

/** Copy parsed CSV rows into ref_real_markets (idempotent by market_id). */
export async function loadRealMarketsTable(conn: DuckDBConnection, rows: readonly RealMarketRow[]): Promise<IngestReport> {
  const rb = new ReportBuilder();
  await conn.run(REF_REAL_MARKETS_DDL);
  const inserted = await insertNew(
    conn,
    'ref_real_markets',
    rows.map((r) => ({
      market_id: r.marketId,
      question: r.question,
      category: r.category,
      volume_usdc: r.volume,
      volume_24h_usdc: r.volume24h,
      liquidity_usdc: r.liquidity,
      end_date: r.endDate,
      created_at: r.createdDate,
      outcomes: r.outcomes,
      outcome_prices: r.outcomePrices,
      best_bid: r.bestBid,
      best_ask: r.bestAsk,
      spread: r.spread,
      last_trade_price: r.lastTradePrice,
      one_day_change: r.oneDayChange,
      active: r.active,
    })),
    ['market_id'],
  );
  rb.report.inserted = inserted;
  rb.report.duplicates = rows.length - inserted;
  rb.addRows('ref_real_markets', inserted);
  return rb.report;
}
