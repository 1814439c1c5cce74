/**
 * Idempotent bulk insert: rows are appended to a TEMP staging copy of the target table, then moved over with an
 * anti-join on the table's natural key (the venue schema has no PRIMARY KEYs on purpose), keeping the first of
 * any duplicates inside the batch.
 */
import { DuckDBTypeId, listValue, timestampValue, type DuckDBAppender, type DuckDBConnection } from '@duckdb/node-api';
import { queryRows } from '../duckdb.ts';
import type { ReportBuilder } from './report.ts';
import { nextVenueSeq } from '../schema.ts';

export type Cell = string | number | bigint | boolean | Date | null | undefined | readonly number[] | readonly string[];
export type Row = Record<string, Cell>;

/** Insert the rows whose `key` columns are not yet in `table`; returns how many were inserted. */
export async function insertNew(conn: DuckDBConnection, table: string, rows: readonly Row[], key: readonly string[]): Promise<number> {
  return (await insertNewCounting(conn, table, rows, key, {})).inserted;
}

/**
 * insertNew, also counting the inserted rows (not the duplicates) that satisfy each SQL predicate over the table's
 * columns, e.g. `{ unknown_taker: 'taker_id IS NULL' }`.
 */
export async function insertNewCounting<K extends string>(
  conn: DuckDBConnection,
  table: string,
  rows: readonly Row[],
  key: readonly string[],
  predicates: Record<K, string>,
): Promise<{ inserted: number; counts: Record<K, number> }> {
  const names = Object.keys(predicates) as K[];
  const counts = Object.fromEntries(names.map((k) => [k, 0])) as Record<K, number>;
  if (rows.length === 0) return { inserted: 0, counts };
  const stage = `_ingest_stage_${table}`;
  await conn.run(`CREATE OR REPLACE TEMP TABLE ${stage} AS SELECT *, 0::BIGINT AS _ord FROM ${table} LIMIT 0`);
  const columns = await tableColumns(conn, table);
  const appender = await conn.createAppender(stage, 'main', 'temp');
  try {
    rows.forEach((row, ord) => {
      columns.forEach((col, i) => appendCell(appender, i, row[col], `${table}.${col}`));
      appender.appendBigInt(BigInt(ord));
      appender.endRow();
    });
    appender.flushSync();
  } finally {
    appender.closeSync();
  }
  const on = key.map((k) => `t.${k} = s.${k}`).join(' AND ');
  // rows of an arrival-tracked table are stamped with this insert's batch (schema.ts SEQ_TABLES), unless they carry one
  const seq = columns.includes('seq') ? await nextVenueSeq(conn) : null;
  const select = seq === null ? '* EXCLUDE (_ord)' : `* EXCLUDE (_ord) REPLACE (coalesce(seq, ${seq}) AS seq)`;
  // rows keyed by a transaction (fills, inventory events) are stamped with its time, which a copy of the row repeats:
  // only the table's rows from the batch's earliest time on can match, and zone maps skip the older row groups (a
  // venue appended in time order: the sync's 100M-row fills are not read whole per batch)
  const existing =
    columns.includes('ts') && key.includes('tx_hash') ? `(SELECT ${key.join(', ')} FROM ${table} WHERE ts >= (SELECT min(ts) FROM ${stage}))` : table;
  const insert = `INSERT INTO ${table} BY NAME SELECT ${select} FROM ${stage} s ANTI JOIN ${existing} t ON ${on}
     QUALIFY row_number() OVER (PARTITION BY ${key.map((k) => `s.${k}`).join(', ')} ORDER BY s._ord) = 1`;
  let inserted: number;
  if (names.length === 0) {
    inserted = (await conn.run(insert)).rowsChanged;
  } else {
    // One flag row per inserted row: the predicates see exactly what went in.
    const flags = await queryRows<Record<K, boolean>>(conn, `${insert} RETURNING ${names.map((k) => `coalesce(${predicates[k]}, false) AS "${k}"`).join(', ')}`);
    inserted = flags.length;
    for (const f of flags) for (const k of names) if (f[k]) counts[k]++;
  }
  await conn.run(`DROP TABLE ${stage}`);
  return { inserted, counts };
}

const columnCache = new WeakMap<DuckDBConnection, Map<string, string[]>>();

async function tableColumns(conn: DuckDBConnection, table: string): Promise<string[]> {
  let perConn = columnCache.get(conn);
  if (!perConn) columnCache.set(conn, (perConn = new Map()));
  const cached = perConn.get(table);
  if (cached) return cached;
  const cols = await queryRows<{ column_name: string }>(
    conn,
    `SELECT column_name FROM information_schema.columns WHERE table_name = ? AND table_schema = 'main' AND table_catalog = current_database() ORDER BY ordinal_position`,
    [table],
  );
  const names = cols.map((c) => c.column_name);
  perConn.set(table, names);
  return names;
}

function appendCell(appender: DuckDBAppender, index: number, value: Cell, where: string): void {
  if (value === null || value === undefined) {
    appender.appendNull();
    return;
  }
  const type = appender.columnType(index);
  switch (type.typeId) {
    case DuckDBTypeId.VARCHAR:
      appender.appendVarchar(String(value));
      return;
    case DuckDBTypeId.INTEGER:
      appender.appendInteger(Number(value));
      return;
    case DuckDBTypeId.UTINYINT:
      appender.appendUTinyInt(Number(value));
      return;
    case DuckDBTypeId.BIGINT:
      appender.appendBigInt(BigInt(value as number | bigint | string));
      return;
    case DuckDBTypeId.DOUBLE:
      appender.appendDouble(Number(value));
      return;
    case DuckDBTypeId.BOOLEAN:
      appender.appendBoolean(Boolean(value));
      return;
    case DuckDBTypeId.TIMESTAMP:
      if (!(value instanceof Date)) throw new Error(`${where}: expected a Date`);
      appender.appendTimestamp(timestampValue(BigInt(value.getTime()) * 1000n));
      return;
    case DuckDBTypeId.LIST:
      if (!Array.isArray(value)) throw new Error(`${where}: expected an array`);
      appender.appendList(listValue(value as readonly (number | string)[]), type as never);
      return;
    default:
      throw new Error(`${where}: unsupported column type ${type.toString()}`);
  }
}

/** Stage string keys in a one-column TEMP table so lookups join instead of building huge IN lists. */
export async function stageKeys(conn: DuckDBConnection, name: string, keys: Iterable<string>): Promise<string> {
  const table = `_ingest_keys_${name}`;
  await conn.run(`CREATE OR REPLACE TEMP TABLE ${table} (k VARCHAR)`);
  const appender = await conn.createAppender(table, 'main', 'temp');
  try {
    for (const k of new Set(keys)) {
      appender.appendVarchar(k);
      appender.endRow();
    }
    appender.flushSync();
  } finally {
    appender.closeSync();
  }
  return table;
}

/**
 * Write `fills` rows for the trade loaders (data-api and OrderFilled), counting into the report the inserted fills
 * whose maker or taker the source does not name.
 */
export async function insertFills(conn: DuckDBConnection, rows: readonly Row[], rb: ReportBuilder): Promise<number> {
  const { inserted, counts } = await insertNewCounting(conn, 'fills', rows, ['tx_hash', 'log_index'], {
    unknown_counterparty: 'maker_id IS NULL',
    unknown_taker: 'taker_id IS NULL',
  });
  rb.addRows('fills', inserted);
  rb.report.unknown_counterparty += counts.unknown_counterparty;
  rb.report.unknown_taker += counts.unknown_taker;
  return inserted;
}
