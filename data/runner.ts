/**
 * The core's QueryRunner over a DuckDB connection, with the columnar paths of ColumnarRunner: `scan` streams a
 * SELECT chunk by chunk as typed arrays (no per-value objects: the analytics engine reads hundreds of millions of
 * legs this way), `writer` appends rows as DuckDB data chunks of up to 2,048 rows (one native call per column per
 * chunk instead of one per value).
 */
import { BOOLEAN, DOUBLE, DuckDBDataChunk, INTEGER, TIMESTAMP, UTINYINT, type DuckDBConnection, type DuckDBInstance, type DuckDBResult, type DuckDBType } from '@duckdb/node-api';
import type { ColumnType, ColumnarRunner, QueryRunner, RowWriter, ScanBatch } from '../core/query.ts';
import { queryRows } from './duckdb.ts';

/**
 * `instance` (the connection's) lets `stream` read on a connection of its own, and gives `side`; without it, stream
 * falls back to scan (the result held in memory), which is fine for small venues and tests, and there is no side.
 */
export function duckRunner(conn: DuckDBConnection, instance?: DuckDBInstance): QueryRunner & ColumnarRunner {
  return {
    all: <T>(sql: string, params?: readonly unknown[]) => queryRows<T>(conn, sql, params as unknown[] | undefined),
    run: async (sql: string, params?: readonly unknown[]) => {
      if (params && params.length) await conn.run(sql, params as never);
      else await conn.run(sql);
    },
    scan: (sql, onBatch) => scan(conn, sql, onBatch),
    stream: async (sql, onBatch) => {
      if (!instance) return scan(conn, sql, onBatch);
      const reader = await instance.connect();
      try {
        return await readChunks(await reader.stream(sql), onBatch);
      } finally {
        reader.closeSync();
      }
    },
    writer: (table, columns) => chunkWriter(conn, table, columns),
    ...(instance
      ? {
          side: async () => {
            const other = await instance.connect();
            return {
              run: async (sql: string) => {
                await other.run(sql);
              },
              close: () => other.closeSync(),
            };
          },
        }
      : {}),
  };
}

/** The typed array behind a vector (the node API keeps it in a private field; getItem per value would box). */
const itemsOf = (v: unknown): ArrayLike<number> => (v as { items: ArrayLike<number> }).items;

/**
 * The result is materialized in DuckDB before the first batch: a streaming result would be cut short by the
 * appends the caller makes on this connection while it reads (callers keep each scan to a slice that fits).
 */
async function scan(conn: DuckDBConnection, sql: string, onBatch: (b: ScanBatch) => void): Promise<number> {
  return readChunks(await conn.run(sql), onBatch);
}

async function readChunks(result: DuckDBResult, onBatch: (b: ScanBatch) => void): Promise<number> {
  const names = result.columnNames();
  const index = new Map(names.map((n, i) => [n, i]));
  let total = 0;
  for (;;) {
    const chunk = await result.fetchChunk();
    if (!chunk || chunk.rowCount === 0) break;
    const col = (name: string) => {
      const i = index.get(name);
      if (i === undefined) throw new Error(`scan: no column ${name} in ${names.join(', ')}`);
      return itemsOf(chunk.getColumnVector(i));
    };
    const n = chunk.rowCount;
    onBatch({
      n,
      int: (name) => col(name) as Int32Array,
      u8: (name) => {
        const v = chunk.getColumnVector(index.get(name) ?? -1) as unknown as { items?: Uint8Array; dataView?: DataView };
        if (v.items) return v.items;
        // BOOLEAN vectors keep a DataView over one byte per value
        const dv = v.dataView!;
        return new Uint8Array(dv.buffer, dv.byteOffset, n);
      },
      f64: (name) => col(name) as Float64Array,
    });
    total += n;
  }
  return total;
}

const DUCK_TYPES: Record<ColumnType, DuckDBType> = { INTEGER, UTINYINT, DOUBLE, BOOLEAN, TIMESTAMP };
const CHUNK_ROWS = 2048;

type Buffer = Float64Array | Int32Array | Uint8Array;
const bufferFor = (t: ColumnType): Buffer =>
  t === 'DOUBLE' || t === 'TIMESTAMP' ? new Float64Array(CHUNK_ROWS) : t === 'INTEGER' ? new Int32Array(CHUNK_ROWS) : new Uint8Array(CHUNK_ROWS);

/** Microseconds (a double, exact below 2^53) written as the int64 a TIMESTAMP vector holds, without a BigInt per value. */
function writeMicros(items: BigInt64Array, src: Float64Array, n: number): void {
  const words = new Uint32Array(items.buffer, items.byteOffset, n * 2);
  for (let r = 0; r < n; r++) {
    const x = src[r]!;
    const hi = Math.floor(x / 4294967296);
    words[2 * r] = x - hi * 4294967296;
    words[2 * r + 1] = hi; // little-endian; negative (pre-1970) times wrap as two's complement
  }
}

async function chunkWriter(conn: DuckDBConnection, table: string, columns: readonly { name: string; type: ColumnType }[]): Promise<RowWriter> {
  const appender = await conn.createAppender(table);
  const types = columns.map((c) => DUCK_TYPES[c.type]);
  // typed buffers per column, copied into each chunk's vectors at once; nulls marked apart
  const values = columns.map((c) => bufferFor(c.type));
  const nulls = columns.map(() => new Uint8Array(CHUNK_ROWS));
  const hasNull = new Uint8Array(columns.length);
  let n = 0;
  let rows = 0;
  const flush = () => {
    if (n === 0) return;
    const chunk = DuckDBDataChunk.create(types, n);
    for (let c = 0; c < columns.length; c++) {
      const vec = chunk.getColumnVector(c);
      const src = values[c]!;
      const raw = vec as unknown as { items?: Buffer | BigInt64Array; validity: { setItemValid(i: number, v: boolean): void } };
      const items = raw.items;
      const nl = nulls[c]!;
      if (items) {
        if (columns[c]!.type === 'TIMESTAMP') writeMicros(items as BigInt64Array, src as Float64Array, n);
        else (items as Buffer).set(src.subarray(0, n) as never);
        if (hasNull[c]) for (let r = 0; r < n; r++) if (nl[r]) raw.validity.setItemValid(r, false);
      } else {
        // BOOLEAN vectors keep a DataView: value by value
        for (let r = 0; r < n; r++) vec.setItem(r, (nl[r] ? null : src[r] === 1) as never);
      }
      if (hasNull[c]) {
        nl.fill(0, 0, n);
        hasNull[c] = 0;
      }
      vec.flush();
    }
    appender.appendDataChunk(chunk);
    n = 0;
  };
  return {
    set(column, value) {
      if (value === null) {
        nulls[column]![n] = 1;
        hasNull[column] = 1;
      } else values[column]![n] = typeof value === 'boolean' ? (value ? 1 : 0) : value;
    },
    next() {
      n++;
      rows++;
      if (n === CHUNK_ROWS) flush();
    },
    async close() {
      flush();
      appender.closeSync();
    },
    get rows() {
      return rows;
    },
  };
}
