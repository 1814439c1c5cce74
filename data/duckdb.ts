/** Small helpers around @duckdb/node-api shared by ingest, the generator and the analytics build. */
import { DuckDBInstance, type DuckDBAppender, type DuckDBConnection } from '@duckdb/node-api';

export interface OpenOptions {
  /** Path of the database file, or ':memory:'. */
  path: string;
  threads?: number;
  memoryLimit?: string;
  tempDirectory?: string;
  /** open the file read-only (other read-only processes may share it) */
  readOnly?: boolean;
}

export async function openDuckDB(opts: OpenOptions): Promise<{ instance: DuckDBInstance; conn: DuckDBConnection }> {
  const config: Record<string, string> = {};
  if (opts.threads) config.threads = String(opts.threads);
  if (opts.memoryLimit) config.memory_limit = opts.memoryLimit;
  if (opts.tempDirectory) config.temp_directory = opts.tempDirectory;
  if (opts.readOnly) config.access_mode = 'READ_ONLY';
  const instance = await DuckDBInstance.create(opts.path, config);
  const conn = await instance.connect();
  return { instance, conn };
}

/** Run a query and return plain row objects (BIGINTs that fit become numbers). */
export async function queryRows<T = Record<string, unknown>>(conn: DuckDBConnection, sql: string, params?: unknown[]): Promise<T[]> {
  const reader = params ? await conn.runAndReadAll(sql, params as never) : await conn.runAndReadAll(sql);
  return reader.getRowObjectsJS().map((row) => normalizeRow(row)) as T[];
}

function normalizeRow(row: Record<string, unknown>): Record<string, unknown> {
  for (const [k, v] of Object.entries(row)) {
    if (typeof v === 'bigint' && v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= BigInt(Number.MIN_SAFE_INTEGER)) row[k] = Number(v);
  }
  return row;
}

/** Run `f` in one transaction: its writes commit together or not at all (a failure rolls back and rethrows). */
export async function inTransaction<T>(conn: DuckDBConnection, f: () => Promise<T>): Promise<T> {
  await conn.run('BEGIN TRANSACTION');
  try {
    const r = await f();
    await conn.run('COMMIT');
    return r;
  } catch (e) {
    await conn.run('ROLLBACK').catch(() => {});
    throw e;
  }
}

/** SQL string literal. */
export function sqlString(s: string): string {
  return `'${s.replaceAll("'", "''")}'`;
}

/**
 * Append rows to a table of the database without holding the event loop. An appender's close commits on the
 * calling thread, and a commit runs the checkpoint DuckDB left pending (it skips one while another transaction is
 * open — a service's readers hold snapshots — and the next commit that finds the log past its threshold runs it):
 * a whole checkpoint on the event loop, seconds at full scale, every request waiting (test/data/duckdb-append.test.ts).
 * The rows go to an empty temporary copy of the table, whose close writes no log, then one INSERT, awaited off the
 * thread, moves them (its own transaction, as the appender's close was).
 */
export async function appendRows(conn: DuckDBConnection, table: string, rows: (appender: DuckDBAppender) => void): Promise<void> {
  const stage = `append_stage_${table}`;
  await conn.run(`CREATE OR REPLACE TEMP TABLE ${stage} AS SELECT * FROM ${table} LIMIT 0`);
  const appender = await conn.createAppender(stage, 'main', 'temp');
  rows(appender);
  appender.closeSync();
  await conn.run(`INSERT INTO ${table} SELECT * FROM ${stage}`);
  await conn.run(`DROP TABLE ${stage}`);
}
