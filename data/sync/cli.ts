/**
 * npm run venue:sync -- [--dir DIR] [--gamma URL] [--rpc URL] [--from BLOCK|DATE] [--until BLOCK|DATE] [--follow]
 *   [--confirmations N] [--ctf-exchange 0x..] [--neg-risk-exchange 0x..] [--operator 0x..] [--json]
 *
 * Backfills the venue in DIR/venue.duckdb (default var/polymarket) from Gamma (GAMMA_URL) and a Polygon JSON-RPC node
 * (POLYGON_RPC_URL), then with --follow keeps following both until Ctrl-C. Resumable: run it again and it goes on
 * from the last committed batch. docs/venue-sync.md says which source gives what.
 */
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { openDuckDB } from '../duckdb.ts';
import { progressBar } from '../progress.ts';
import { JsonRpc, HttpSource } from './http.ts';
import { blockAtTime } from './block-time.ts';
import { VenueSync } from './index.ts';

const { values } = parseArgs({
  options: {
    dir: { type: 'string' },
    gamma: { type: 'string' },
    rpc: { type: 'string' },
    from: { type: 'string' },
    until: { type: 'string' },
    follow: { type: 'boolean' },
    confirmations: { type: 'string' },
    'ctf-exchange': { type: 'string', multiple: true },
    'neg-risk-exchange': { type: 'string', multiple: true },
    operator: { type: 'string', multiple: true },
    'poll-ms': { type: 'string' },
    json: { type: 'boolean' },
  },
});

const Address = z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'an 0x address');
const Point = z.string().regex(/^(\d+|\d{4}-\d{2}-\d{2}(T[\d:.]+Z?)?)$/, 'a block number or an ISO date');
const Args = z.object({
  dir: z.string().default(process.env.VENUE_DIR ?? 'var/polymarket'),
  gamma: z.url({ error: '--gamma (or GAMMA_URL): the Gamma API base URL' }),
  rpc: z.url({ error: '--rpc (or POLYGON_RPC_URL): a Polygon JSON-RPC endpoint' }),
  from: Point.optional(),
  until: Point.optional(),
  follow: z.boolean().default(false),
  confirmations: z.coerce.number().int().min(0).max(10_000).default(32),
  'ctf-exchange': z.array(Address).default([]),
  'neg-risk-exchange': z.array(Address).default([]),
  operator: z.array(Address).default([]),
  'poll-ms': z.coerce.number().int().min(100).default(2000),
  json: z.boolean().default(false),
});
const parsed = Args.safeParse({ ...values, gamma: values.gamma ?? process.env.GAMMA_URL, rpc: values.rpc ?? process.env.POLYGON_RPC_URL });
if (!parsed.success) {
  console.error(`venue:sync: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  process.exit(2);
}
const a = parsed.data;
const dir = resolve(a.dir);
mkdirSync(dir, { recursive: true });
const { conn } = await openDuckDB({ path: join(dir, 'venue.duckdb'), threads: 2 });

// a date bound becomes the first block at or after it (a binary search over block times)
const probe = new JsonRpc(new HttpSource({ name: 'rpc', baseUrl: a.rpc }));
const toBlock = async (p: string | undefined): Promise<{ block?: bigint; date?: Date }> => {
  if (p === undefined) return {};
  if (/^\d+$/.test(p)) return { block: BigInt(p) };
  const date = new Date(p);
  return { block: await blockAtTime(probe, date), date };
};
const from = await toBlock(a.from);
const until = await toBlock(a.until);
await probe.source.close();

const sync = await VenueSync.open(conn, {
  gammaUrl: a.gamma,
  rpcUrl: a.rpc,
  chain: { ctfExchanges: a['ctf-exchange'], negRiskExchanges: a['neg-risk-exchange'], operators: a.operator },
  fromBlock: from.block ?? 0n,
  untilBlock: until.block,
  fromDate: from.date,
  confirmations: a.confirmations,
  retry: { onRetry: (r) => a.json && console.log(JSON.stringify({ retry: r })) },
});
let stopping = false;
const stop = () => {
  if (stopping) process.exit(130);
  stopping = true;
  console.error('\nvenue:sync: stopping after the batch in progress (Ctrl-C again to quit at once; nothing committed is lost)');
  void sync.stop();
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);

const bar = progressBar('venue:sync');
let markets = 0;
sync.on('gamma', (p) => {
  markets += p.markets;
  bar.update(`gamma ${p.phase}`, markets, Math.max(markets, 1));
  if (a.json) console.log(JSON.stringify({ gamma: p }));
});
sync.on('batch', (s) => {
  if (a.json) console.log(JSON.stringify({ batch: { from: String(s.from), to: String(s.to), head: String(s.head), logs: s.logs, rows: s.rows, skipped: s.skipped, range: s.range, reorged: s.reorged } }));
});
sync.on('progress', (p) => {
  if (p.phase === 'chain' && p.done !== undefined && p.total !== undefined) bar.update('chain', Math.min(p.done, p.total), p.total);
  if (p.phase === 'follow' && p.head !== undefined && p.next !== undefined) {
    const lag = Number(p.head - p.next + 1n);
    process.stderr.write(`\rvenue:sync following: next block ${p.next}, head ${p.head}, lag ${lag} blocks (~${lag * 2} s)   `);
  }
});
sync.on('error', (e) => console.error(`\nvenue:sync: ${e.message} (retrying)`));

const t0 = performance.now();
const r = await sync.backfill();
bar.stop();
const seconds = (performance.now() - t0) / 1000;
console.log(JSON.stringify({ backfill: { ...r, seconds: Number(seconds.toFixed(1)), gamma: sync.gammaSource.stats(), rpc: sync.rpcSource.stats() } }));
if (a.follow && !stopping) await sync.follow({ pollMs: a['poll-ms'] });
await sync.close();
conn.closeSync();
