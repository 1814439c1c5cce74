/**
 * The one port between the pure core and storage: a query runner. data/ provides it over a DuckDB connection;
 * tests can provide it over anything that speaks the same SQL. The core builds SQL and shapes rows, never opens
 * files, sockets or the environment.
 */
export interface QueryRunner {
  /** Rows as plain objects; BIGINTs that fit are numbers, timestamps are Date. */
  all<T = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<T[]>;
  /** A statement without a result (DDL, INSERT, CREATE TABLE AS). */
  run(sql: string, params?: readonly unknown[]): Promise<void>;
}

/** A moment in time for "as of" queries: only data stamped at or before it is used. */
export type AsOf = Date;

/** SQL literal for a timestamp (UTC, microseconds). */
export function tsLiteral(t: AsOf): string {
  if (!(t instanceof Date) || Number.isNaN(t.getTime())) throw new Error('as-of must be a valid Date');
  return `make_timestamp(${Math.round(t.getTime()) * 1000}::BIGINT)`;
}

/** Drop a table or view of the current schema, whichever it is (a relation that changed kind between versions). */
export async function dropRelation(db: QueryRunner, name: string): Promise<void> {
  const [r] = await db.all<{ k: string }>(`SELECT table_type AS k FROM information_schema.tables WHERE table_name = '${name}' AND table_schema = current_schema() AND table_catalog = current_database()`);
  if (r) await db.run(`DROP ${r.k === 'VIEW' ? 'VIEW' : 'TABLE'} ${name}`);
}

/** Column types the columnar port moves between storage and the core without per-value objects. */
/**
 * SQL rounding `expr` to `digits` decimals, for figures summed in an order that varies (a refresh vs a rebuild,
 * parallel aggregation): equal figures stay equal for ties, and a rounded -0 reads +0.
 */
export function roundedSql(expr: string, digits: number): string {
  return `(round(${expr}, ${digits}) + 0.0)`;
}

export type ColumnType = 'INTEGER' | 'UTINYINT' | 'DOUBLE' | 'BOOLEAN' | 'TIMESTAMP';

/** A table's columns for the columnar writer (name, type), in table order. */
export type TableColumns = readonly (readonly [string, ColumnType])[];

/** CREATE TABLE IF NOT EXISTS for `columns`, NOT NULL on the names in `notNull`: the DDL and the writer share one list. */
export function tableDdl(table: string, columns: TableColumns, notNull: readonly string[]): string {
  return `CREATE TABLE IF NOT EXISTS ${table} (${columns.map(([n, t]) => `${n} ${t}${notNull.includes(n) ? ' NOT NULL' : ''}`).join(', ')})`;
}

/** One batch of a scan: typed columns by name (INTEGER: Int32Array, UTINYINT/BOOLEAN: Uint8Array, DOUBLE: Float64Array). */
export interface ScanBatch {
  n: number;
  int(name: string): Int32Array;
  u8(name: string): Uint8Array;
  f64(name: string): Float64Array;
}

/**
 * A column a RowWriter fills. `nanIsNull` (DOUBLE only): a NaN written to it, however written, is stored as NULL
 * (elsewhere a NaN stays a NaN).
 */
export interface WriterColumn {
  name: string;
  type: ColumnType;
  nanIsNull?: boolean;
}

/** Appends rows to a table column by column: set each column of the current row, then `next()`; `close()` flushes. */
export interface RowWriter {
  set(column: number, value: number | boolean | null): void;
  next(): void;
  /**
   * A whole row at once, then the next: column c gets values[c], or NULL where nulls[c] is 1 (for writers of many
   * rows: one call per row, not a call per column).
   */
  row(values: Float64Array, nulls?: Uint8Array): void;
  /**
   * `n` rows at once, column by column: column c gets cols[c][0..n) (a typed array is copied in runs, not a call per
   * value). No NULL but a NaN in a column declared `nanIsNull`. For writers of wide rows already held as columns
   * (the boards: 1.9M rows of 23 columns a refresh, where a `set` per value cost ~1.2 s of the event loop). Between
   * rows only (not after a `set` whose row has no `next` yet).
   */
  columns(n: number, cols: readonly ArrayLike<number>[]): void;
  close(): Promise<void>;
  /** Resolves once the rows written so far are few enough to write more (a producer that can wait, waits here). */
  ready?(): Promise<void>;
  readonly rows: number;
}

/**
 * The query runner plus bulk paths for the analytics engine: streaming a SELECT in row order as typed columns, and
 * appending rows without a statement per row. data/runner.ts implements it over DuckDB.
 */
export interface ColumnarRunner extends QueryRunner {
  /**
   * Run a SELECT whose columns are INTEGER, UTINYINT, BOOLEAN or DOUBLE (no NULLs); hand each batch over in order.
   * The whole result is held in memory before the first batch (writers may append meanwhile): scan in slices.
   */
  scan(sql: string, onBatch: (b: ScanBatch) => void): Promise<number>;
  /**
   * Like scan, but streamed on a connection of its own (nothing is held in memory; rows committed before the call
   * only): for full builds reading hundreds of millions of rows while writers append on this connection.
   */
  stream(sql: string, onBatch: (b: ScanBatch) => void): Promise<number>;
  /**
   * A writer appending to `table`, whose columns are exactly `columns` in this order (TIMESTAMP values are µs), or
   * what `select` makes of them: a SELECT list over `columns` by name giving the table's columns (e.g. a text
   * column from a code, which a writer cannot take), so that rows need no copy through a table of their own.
   */
  writer(table: string, columns: readonly WriterColumn[], select?: string): Promise<RowWriter>;
  /**
   * A connection of its own to the same database, for statements that run while this one works (each commits on
   * its own: what it writes is seen here once its statement ends). Absent where there is none (the runner of a
   * transaction, tests): callers then do the work here, in order.
   */
  side?(): Promise<SideRunner>;
}

/** ColumnarRunner.side: statements on a connection of its own, until closed. */
export interface SideRunner {
  run(sql: string): Promise<void>;
  close(): void;
}
