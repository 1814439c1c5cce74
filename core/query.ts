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
