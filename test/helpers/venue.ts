/** Test helpers: generate a small synthetic venue once per test file and open it in an in-memory DuckDB. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { openDuckDB, queryRows } from '../../data/duckdb.ts';
import { attachVenue } from '../../data/venue.ts';
import { generateVenue, type GenerateResult } from '../../data/generator/index.ts';
import { DEFAULT_END } from '../../data/generator/config.ts';
import { REAL_MARKETS_CSV } from '../../data/generator/defaults.ts';
import { sqlString } from '../../data/duckdb.ts';

export interface TestVenue {
  dir: string;
  result: GenerateResult;
  instance: DuckDBInstance;
  conn: DuckDBConnection;
  rows<T = Record<string, unknown>>(sql: string): Promise<T[]>;
  cleanup(): Promise<void>;
}

export async function makeVenue(opts: { wallets: number; days: number; seed: number }): Promise<TestVenue> {
  const dir = await mkdtemp(join(tmpdir(), 'venue-test-'));
  const result = await generateVenue({ ...opts, end: DEFAULT_END, realMarketsCsv: REAL_MARKETS_CSV }, dir);
  const { instance, conn } = await openDuckDB({ path: ':memory:', threads: 2 });
  await attachVenue(conn, join(dir, 'venue'), { materialize: true });
  await conn.run(`CREATE TABLE truth_wallets AS SELECT * FROM read_parquet(${sqlString(join(dir, 'truth', 'wallets.parquet'))})`);
  await conn.run(`CREATE TABLE truth_markets AS SELECT * FROM read_parquet(${sqlString(join(dir, 'truth', 'markets.parquet'))})`);
  await conn.run(`CREATE TABLE truth_paths AS SELECT * FROM read_parquet(${sqlString(join(dir, 'truth', 'paths.parquet'))})`);
  return {
    dir,
    result,
    instance,
    conn,
    rows: (sql) => queryRows(conn, sql),
    async cleanup() {
      conn.closeSync();
      instance.closeSync();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
