import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { runIngestCli } from '../../data/ingest/cli.ts';
import { openDuckDB } from '../../data/duckdb.ts';
import { EXCHANGE_V2 } from '../fixtures/ingest/world.ts';
import { FIXTURES, count } from './helpers.ts';

const dir = mkdtempSync(join(tmpdir(), 'ingest-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const f = (name: string) => join(FIXTURES, name);
const allFiles = [
  '--gamma-markets', f('gamma-markets.json'), '--gamma-events', f('gamma-events.json'), '--markets-csv', f('markets-sample.csv'),
  '--logs', f('logs-order-filled.json'), '--logs', f('logs-ctf.json'), '--trades', f('trades.json'), '--activity', f('activity.json'),
  '--positions', f('positions.json'), '--ctf-exchange', EXCHANGE_V2,
];

const ALL_TABLES = ['events', 'markets', 'wallets', 'fills', 'inventory_events', 'inventory_legs', 'resolutions', 'ref_real_markets'];

async function tableCounts(path: string, tables = ALL_TABLES) {
  const { instance, conn } = await openDuckDB({ path });
  try {
    const out: Record<string, number> = {};
    for (const t of tables) out[t] = await count(conn, t);
    return out;
  } finally {
    conn.closeSync();
    instance.closeSync();
  }
}

describe('venue:ingest CLI', () => {
  it('loads every fixture into a DuckDB file in dependency order, and a second run inserts nothing', async () => {
    const db = join(dir, 'venue.duckdb');
    const lines: string[] = [];
    expect(await runIngestCli(['--db', db, ...allFiles], (l) => lines.push(l))).toBe(0);
    const reports = lines.map((l) => JSON.parse(l) as { loader: string; inserted: number });
    expect(reports.map((r) => r.loader)).toEqual(['gamma-events', 'gamma-markets', 'markets-csv', 'logs', 'logs', 'trades', 'activity', 'positions']);
    // data-api trades name no counterparty: the report line says how many fills have none
    expect(reports.find((r) => r.loader === 'trades')).toMatchObject({ inserted: 3, unknown_counterparty: 3, unknown_taker: 0 });
    expect(reports.find((r) => r.loader === 'logs')).toMatchObject({ unknown_counterparty: 0, unknown_taker: 0 });
    // The per-loader expectations of the other test files, summed: markets 4 (events file) + 5 (markets file);
    // fills 7 (logs) + 3 (trades; the activity TRADE row is a duplicate); inventory events 4 (redemptions) + 5
    // (activity), legs 3 + 5; resolutions 2 + 3 from Gamma, + 4 on-chain, - 2 Gamma rows replaced = 7;
    // wallets alice..frank (6) + grace = 7: the data-api trades' unknown counterparty is no wallet (maker_id NULL).
    expect(await tableCounts(db)).toEqual({
      events: 4, markets: 9, wallets: 7, fills: 10, inventory_events: 9, inventory_legs: 8, resolutions: 7, ref_real_markets: 2,
    });

    const again: string[] = [];
    expect(await runIngestCli(['--db', db, ...allFiles], (l) => again.push(l))).toBe(0);
    const inserted = again.map((l) => JSON.parse(l) as { loader: string; inserted: number }).filter((r) => r.loader !== 'positions');
    expect(inserted.every((r) => r.inserted === 0)).toBe(true);
    expect((await tableCounts(db)).fills).toBe(10);
  });

  it('reports an unreadable file, loads the rest and exits 1', async () => {
    const db = join(dir, 'partial.duckdb');
    const lines: string[] = [];
    const code = await runIngestCli(['--db', db, '--gamma-markets', join(dir, 'missing.json'), '--gamma-events', f('gamma-events.json')], (l) => lines.push(l));
    expect(code).toBe(1);
    expect(lines.some((l) => l.includes('missing.json') && l.includes('error'))).toBe(true);
    expect(await tableCounts(db, ['markets', 'events'])).toEqual({ markets: 4, events: 2 });
  });

  it('prints usage without --db', async () => {
    const lines: string[] = [];
    expect(await runIngestCli([], (l) => lines.push(l))).toBe(2);
    expect(lines[0]).toMatch(/usage: venue:ingest --db/);
  });

  it('runs as a script through tsx', async () => {
    const db = join(dir, 'script.duckdb');
    const { stdout } = await promisify(execFile)('npx', ['tsx', 'data/ingest/cli.ts', '--db', db, '--gamma-markets', f('gamma-markets.json')], { cwd: join(FIXTURES, '..', '..', '..') });
    expect(JSON.parse(stdout.trim())).toMatchObject({ loader: 'gamma-markets', inserted: 5 });
  });
});
