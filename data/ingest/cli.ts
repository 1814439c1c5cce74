/**
 * Load the venue's public formats into a DuckDB file:
 *   npm run venue:ingest -- --db venue.duckdb --gamma-events e.json --gamma-markets m.json --markets-csv markets.csv
 *     --logs logs.json [--block-timestamps blocks.json] --trades trades.json --activity activity.json
 * Any subset; each flag may repeat. Files load in dependency order (events, markets, CSV, chain logs, trades,
 * activity), each printing its report as one JSON line. A file that cannot be read or parsed is reported and the
 * rest still load; the exit code is then 1.
 */
import { readFile } from 'node:fs/promises';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import type { DuckDBConnection } from '@duckdb/node-api';
import { openDuckDB } from '../duckdb.ts';
import { createVenueSchema } from '../schema.ts';
import { loadChainLogs } from './chain-logs.ts';
import { loadDataApiActivity } from './data-api-activity.ts';
import { loadDataApiTrades } from './data-api-trades.ts';
import { parsePositions } from './data-api.ts';
import { loadGammaEvents, loadGammaMarkets } from './gamma.ts';
import { placeholderAddresses } from './placeholders.ts';
import { loadRealMarketsTable, parseRealMarketsCsv } from './real-markets.ts';
import type { IngestReport } from './report.ts';
import { chainConfig, parseBlockTimestamps, parseLogsFile, type ChainConfig } from './rpc-log.ts';

const USAGE = `usage: venue:ingest --db <file.duckdb> [--gamma-events f] [--gamma-markets f] [--markets-csv f]
  [--logs f] [--block-timestamps f] [--trades f] [--activity f] [--positions f]
  [--ctf-exchange addr] [--neg-risk-exchange addr] [--conditional-tokens addr] [--neg-risk-adapter addr] [--operator addr]`;

const FILE_FLAGS = ['gamma-events', 'gamma-markets', 'markets-csv', 'logs', 'trades', 'activity', 'positions'] as const;

export async function runIngestCli(argv: string[], print: (line: string) => void = console.log): Promise<number> {
  let values: Record<string, string[] | string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        db: { type: 'string' },
        help: { type: 'boolean' },
        'block-timestamps': { type: 'string', multiple: true },
        'ctf-exchange': { type: 'string', multiple: true },
        'neg-risk-exchange': { type: 'string', multiple: true },
        'conditional-tokens': { type: 'string', multiple: true },
        'neg-risk-adapter': { type: 'string', multiple: true },
        'collateral-adapter': { type: 'string', multiple: true },
        operator: { type: 'string', multiple: true },
        ...Object.fromEntries(FILE_FLAGS.map((f) => [f, { type: 'string', multiple: true }])),
      },
    }));
  } catch (e) {
    print(`${(e as Error).message}\n${USAGE}`);
    return 2;
  }
  if (values.help || typeof values.db !== 'string') {
    print(USAGE);
    return values.help ? 0 : 2;
  }
  const list = (k: string) => (values[k] as string[] | undefined) ?? [];
  const config: ChainConfig = chainConfig({
    ctfExchanges: list('ctf-exchange'),
    negRiskExchanges: list('neg-risk-exchange'),
    conditionalTokens: list('conditional-tokens'),
    negRiskAdapters: list('neg-risk-adapter'),
    collateralAdapters: list('collateral-adapter'),
    operators: list('operator'),
  });

  const { instance, conn } = await openDuckDB({ path: values.db });
  let failed = false;
  try {
    // An older database is migrated here, before anything loads (placeholder wallets out, fill parties nullable).
    const migration = await createVenueSchema(conn, { placeholders: placeholderAddresses(config) });
    if (migration.nullableColumns.length || migration.removedWallets.length) print(JSON.stringify({ migration }));
    const extraBlocks = new Map<bigint, number>();
    for (const path of list('block-timestamps')) {
      const json = await readJson(path, print);
      if (json === undefined) failed = true;
      else for (const [k, v] of parseBlockTimestamps(json)) extraBlocks.set(k, v);
    }
    const step = async (flag: string, load: (conn: DuckDBConnection, path: string) => Promise<IngestReport | undefined>) => {
      for (const path of list(flag)) {
        const report = await load(conn, path);
        if (report) print(JSON.stringify({ file: path, loader: flag, ...report }));
        else failed = true;
      }
    };
    await step('gamma-events', async (c, p) => withJson(p, print, (j) => loadGammaEvents(c, j)));
    await step('gamma-markets', async (c, p) => withJson(p, print, (j) => loadGammaMarkets(c, j)));
    await step('markets-csv', async (c, p) => {
      const text = await readText(p, print);
      if (text === undefined) return undefined;
      const parsed = parseRealMarketsCsv(text);
      const loaded = await loadRealMarketsTable(c, parsed.rows);
      return { ...loaded, skipped: parsed.report.skipped, rejections: parsed.report.rejections };
    });
    await step('logs', async (c, p) =>
      withJson(p, print, (j) => {
        const { logs, blockTimestamps } = parseLogsFile(j);
        for (const [k, v] of extraBlocks) if (!blockTimestamps.has(k)) blockTimestamps.set(k, v);
        return loadChainLogs(c, logs, blockTimestamps, config);
      }),
    );
    await step('trades', async (c, p) => withJson(p, print, (j) => loadDataApiTrades(c, j, config)));
    await step('activity', async (c, p) => withJson(p, print, (j) => loadDataApiActivity(c, j, config)));
    // Positions are a derived view: validated and counted, never stored.
    await step('positions', async (_c, p) => withJson(p, print, async (j) => parsePositions(j).report));
    await conn.run('CHECKPOINT');
  } finally {
    conn.closeSync();
    instance.closeSync();
  }
  return failed ? 1 : 0;
}

async function readText(path: string, print: (line: string) => void): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (e) {
    print(JSON.stringify({ file: path, error: (e as Error).message }));
    return undefined;
  }
}

async function readJson(path: string, print: (line: string) => void): Promise<unknown> {
  const text = await readText(path, print);
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch (e) {
    print(JSON.stringify({ file: path, error: `not JSON: ${(e as Error).message}` }));
    return undefined;
  }
}

async function withJson(path: string, print: (line: string) => void, load: (json: unknown) => Promise<IngestReport>): Promise<IngestReport | undefined> {
  const json = await readJson(path, print);
  return json === undefined ? undefined : load(json);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  runIngestCli(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (e: unknown) => {
      console.error(e);
      process.exit(1);
    },
  );
}
