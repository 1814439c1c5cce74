/**
 * The MCP server over stdio, for a local agent (Claude Desktop, an IDE, an agent framework):
 *
 *   npx tsx mcp/stdio.ts --db var/demo-w.../venue.duckdb [--now 2026-11-01T00:00:00Z | --now wall] [--tid-key-file PATH]
 *
 * Opens the DuckDB file read-only (it must already hold the analytics build; another process may not have it open
 * for writing) and serves every tool free. The clock defaults to the venue's: the latest stored fill. stdout carries
 * JSON-RPC only; every log line goes to stderr.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { venueRoot } from '../data/venue-select.ts';
import { openDuckDB, queryRows } from '../data/duckdb.ts';
import { duckRunner } from '../data/runner.ts';
import { createMcpServer, openAccess } from './server.ts';
import { DEFAULT_TOOL_PRICES } from './tools.ts';

const log = (...a: unknown[]) => console.error('[mcp-stdio]', ...a);

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      db: { type: 'string' },
      now: { type: 'string' },
      'tid-key-file': { type: 'string' },
      help: { type: 'boolean' },
    },
    strict: true,
  });
  if (values.help) {
    console.error('usage: tsx mcp/stdio.ts [--db PATH] [--now ISO|wall] [--tid-key-file PATH]   (default: the venue npm start serves: VENUE, DATA_DIR)');
    process.exit(0);
  }
  // the venue npm start serves with the same environment, unless --db names one
  values.db ??= join(venueRoot(process.env), 'venue.duckdb');
  if (!existsSync(values.db)) {
    log(`no database file ${values.db}`);
    process.exit(2);
  }
  const { instance, conn } = await openDuckDB({ path: values.db, readOnly: true });
  const db = duckRunner(conn);

  let now: () => Date;
  if (values.now === 'wall') now = () => new Date();
  else if (values.now) {
    const t = new Date(values.now);
    if (Number.isNaN(t.getTime())) {
      log(`--now must be an ISO time or "wall", got ${values.now}`);
      process.exit(2);
    }
    now = () => t;
  } else {
    const [r] = await queryRows<{ t: Date | null }>(conn, `SELECT max(ts) AS t FROM fills`);
    const t = r?.t ? new Date(r.t) : new Date();
    now = () => t;
  }
  // the REST API's key (main.ts keeps it next to the database) makes search tids the same as the public namespace's
  const keyFile = values['tid-key-file'] ?? join(dirname(values.db), 'tid.key');
  const tidKey = process.env.TID_KEY ?? (existsSync(keyFile) ? readFileSync(keyFile, 'utf8').trim() : undefined);

  const server = createMcpServer({ db, now, tidKey: tidKey && tidKey.length >= 16 ? tidKey : undefined, prices: DEFAULT_TOOL_PRICES, authorize: openAccess });
  // the client went away (closed our stdout): that ends the session, it is not a crash
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(0);
    throw e;
  });
  const transport = new StdioServerTransport();
  const close = async () => {
    await server.close().catch(() => {});
    conn.closeSync();
    instance.closeSync();
    process.exit(0);
  };
  process.on('SIGINT', close);
  process.on('SIGTERM', close);
  process.stdin.on('end', close);
  await server.connect(transport);
  log(`serving ${values.db} read-only, as of ${now().toISOString()}`);
}

main().catch((e) => {
  log('failed:', e);
  process.exit(1);
});
