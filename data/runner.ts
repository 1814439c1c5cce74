/** The core's QueryRunner over a DuckDB connection. */
import type { DuckDBConnection } from '@duckdb/node-api';
import type { QueryRunner } from '../core/query.ts';
import { queryRows } from './duckdb.ts';

export function duckRunner(conn: DuckDBConnection): QueryRunner {
  return {
    all: <T>(sql: string, params?: readonly unknown[]) => queryRows<T>(conn, sql, params as unknown[] | undefined),
    run: async (sql: string, params?: readonly unknown[]) => {
      if (params && params.length) await conn.run(sql, params as never);
      else await conn.run(sql);
    },
  };
}
