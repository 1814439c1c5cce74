/**
 * The core's QueryRunner over a DuckDB connection, with the columnar paths of ColumnarRunner: `scan` streams a
 * SELECT chunk by chunk as typed arrays (no per-value objects: the analytics engine reads hundreds of millions of
 * legs this way), `writer` hands rows to INSERT statements in blocks of 2,048 (DuckDB stores them off the event
 * loop; insertWriter).
 */
import { BOOLEAN, DOUBLE, DuckDBTableFunction, INTEGER, TIMESTAMP, UTINYINT, type DuckDBConnection, type DuckDBInstance, type DuckDBResult, type DuckDBType } from '@duckdb/node-api';
import type { ColumnType, ColumnarRunner, QueryRunner, RowWriter, ScanBatch } from '../core/query.ts';
import { queryRows } from './duckdb.ts';

/**
 * `instance` (the connection's) lets `stream` read on a connection of its own, and gives `side`; without it, stream
 * falls back to scan (the result held in memory), which is fine for small venues and tests, and there is no side.
 */
export function duckRunner(conn: DuckDBConnection, instance?: DuckDBInstance): QueryRunner & ColumnarRunner {
  // the writers open on this runner: a scan reads its next chunk only once none has too many rows waiting for DuckDB
  const writers = new Set<RowWriter>();
  const pace = async () => {
    for (const w of writers) await w.ready?.();
  };
  return {
    all: <T>(sql: string, params?: readonly unknown[]) => queryRows<T>(conn, sql, params as unknown[] | undefined),
    run: async (sql: string, params?: readonly unknown[]) => {
      if (params && params.length) await conn.run(sql, params as never);
      else await conn.run(sql);
    },
    scan: (sql, onBatch) => scan(conn, sql, onBatch, pace),
    stream: async (sql, onBatch) => {
      if (!instance) return scan(conn, sql, onBatch, pace);
      const reader = await instance.connect();
      try {
        return await readChunks(await reader.stream(sql), onBatch, pace);
      } finally {
        reader.closeSync();
      }
    },
    writer: async (table, columns) => {
      const w = insertWriter(conn, table, columns);
      writers.add(w);
      const close = w.close.bind(w);
      w.close = () => close().finally(() => writers.delete(w));
      return w;
    },
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
async function scan(conn: DuckDBConnection, sql: string, onBatch: (b: ScanBatch) => void, pace: () => Promise<void>): Promise<number> {
  return readChunks(await conn.run(sql), onBatch, pace);
}

async function readChunks(result: DuckDBResult, onBatch: (b: ScanBatch) => void, pace: () => Promise<void>): Promise<number> {
  const names = result.columnNames();
  const index = new Map(names.map((n, i) => [n, i]));
  let total = 0;
  for (;;) {
    await pace();
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

/** What the writer uses of an output chunk's vector: its typed items (absent for BOOLEAN), its validity, the copy back. */
interface ChunkVector {
  items?: Buffer | BigInt64Array;
  validity: { setItemValid(i: number, v: boolean): void };
  setItem(i: number, v: unknown): void;
  flush(): void;
}

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

/**
 * The rows of one writer, in chunk-sized blocks (typed buffers per column, nulls apart): filled by set/next, read by
 * the table function an INSERT scans, then given back for reuse (fresh memory costs a page fault per 4 KB here).
 */
interface Block {
  n: number;
  values: Buffer[];
  nulls: Uint8Array[];
  hasNull: Uint8Array;
}

/** Rows waiting for an INSERT of theirs to read them: the queue a writer fills and its table function drains. */
interface Source {
  columns: readonly { name: string; type: ColumnType }[];
  queue: Block[];
  done: (b: Block) => void;
}

/** Sources by id, for the table function (one per connection) that their INSERTs name. */
const sources = new Map<number, Source>();
let nextSource = 1;
const ROWS_FUNCTION = 'writer_rows';
/** INSERTs of writers running per connection. */
const inserting = new WeakMap<DuckDBConnection, number>();

/**
 * `writer_rows(id)`: the rows queued in source `id`, a block per call until the queue is empty. DuckDB calls it from
 * the thread running the INSERT, marshalled to this thread, so each call is only a copy of one block; storing the rows
 * (compressing, allocating, writing) is done by DuckDB off the event loop.
 */
function registerRowsFunction(conn: DuckDBConnection): void {
  // registered again for each writer: a registration made inside a transaction that rolled back is gone. Not while
  // an INSERT runs on the connection (it has the function): the call would wait for that INSERT, which waits for
  // this thread to serve its reads
  if (inserting.get(conn)) return;
  conn.registerTableFunction(
    DuckDBTableFunction.create({
      name: ROWS_FUNCTION,
      parameterTypes: [INTEGER],
      bindFunction: (info) => {
        const id = Number(info.getParameter(0));
        const src = sources.get(id);
        if (!src) {
          info.setError(`${ROWS_FUNCTION}: no rows queued as ${id}`);
          return;
        }
        for (const c of src.columns) info.addResultColumn(c.name, DUCK_TYPES[c.type]);
        info.setBindData({ id });
      },
      initFunction: (info) => info.setInitData({}),
      mainFunction: (info, out) => {
        const src = sources.get((info.bindData as { id: number }).id);
        const b = src?.queue.shift();
        if (!src || !b) {
          out.rowCount = 0;
          return;
        }
        out.rowCount = b.n;
        for (let c = 0; c < src.columns.length; c++) {
          const vec = out.getColumnVector(c) as unknown as ChunkVector;
          const values = b.values[c]!;
          const nl = b.nulls[c]!;
          if (vec.items) {
            if (src.columns[c]!.type === 'TIMESTAMP') writeMicros(vec.items as BigInt64Array, values as Float64Array, b.n);
            else (vec.items as Buffer).set(values.subarray(0, b.n) as never);
            if (b.hasNull[c]) for (let r = 0; r < b.n; r++) if (nl[r]) vec.validity.setItemValid(r, false);
          } else {
            // BOOLEAN vectors keep a DataView: value by value
            for (let r = 0; r < b.n; r++) vec.setItem(r, (nl[r] ? null : values[r] === 1) as never);
          }
          vec.flush();
        }
        src.done(b);
      },
    }),
  );
}

/** Rows queued before a writer starts an INSERT, and the backlog past which its producer waits (RowWriter.ready). */
const INSERT_START_ROWS = 32 * CHUNK_ROWS;
const BACKLOG_ROWS = 256 * CHUNK_ROWS;

/**
 * A RowWriter whose rows reach the table through INSERT statements reading them from `writer_rows`, run while the
 * writer fills more: the event loop only copies blocks. An appender stored its rows on the event loop's thread
 * (appendDataChunk, closeSync): at full scale that held the loop for seconds per refresh, and was most of the
 * position stream's time in a cold build, on one core. Statements run on the connection meanwhile are unaffected
 * (the INSERTs only write `table`); its rows are all in once `close()` resolves.
 */
function insertWriter(conn: DuckDBConnection, table: string, columns: readonly { name: string; type: ColumnType }[]): RowWriter {
  registerRowsFunction(conn);
  const free: Block[] = [];
  const block = (): Block =>
    free.pop() ?? { n: 0, values: columns.map((c) => bufferFor(c.type)), nulls: columns.map(() => new Uint8Array(CHUNK_ROWS)), hasNull: new Uint8Array(columns.length) };
  let cur = block();
  let queued = 0;
  let rows = 0;
  let running: Promise<void> | null = null;
  let failure: unknown = null;
  const id = nextSource++;
  const source: Source = {
    columns,
    queue: [],
    done: (b) => {
      queued -= b.n;
      for (let c = 0; c < columns.length; c++) if (b.hasNull[c]) b.nulls[c]!.fill(0, 0, b.n);
      b.hasNull.fill(0);
      b.n = 0;
      free.push(b);
    },
  };
  sources.set(id, source);
  // one INSERT at a time, reading the queue until it is empty; another starts if rows queued meanwhile
  const start = () => {
    if (running || failure || source.queue.length === 0) return;
    inserting.set(conn, (inserting.get(conn) ?? 0) + 1);
    const ended = () => {
      inserting.set(conn, inserting.get(conn)! - 1);
      running = null;
    };
    running = conn.run(`INSERT INTO ${table} SELECT * FROM ${ROWS_FUNCTION}(${id})`).then(
      () => {
        ended();
        if (queued >= INSERT_START_ROWS) start();
      },
      (e: unknown) => {
        ended();
        failure = e;
        source.queue.length = 0;
      },
    );
  };
  const settle = async (below: number) => {
    while (queued > below && !failure) {
      start();
      if (!running) break;
      await running;
    }
  };
  return {
    set(column, value) {
      if (value === null) {
        cur.nulls[column]![cur.n] = 1;
        cur.hasNull[column] = 1;
      } else cur.values[column]![cur.n] = typeof value === 'boolean' ? (value ? 1 : 0) : value;
    },
    next() {
      rows++;
      if (++cur.n < CHUNK_ROWS) return;
      // after a failed INSERT the rows go nowhere: close() reports the failure
      if (failure) {
        cur.n = 0;
        return;
      }
      source.queue.push(cur);
      queued += cur.n;
      cur = block();
      if (queued >= INSERT_START_ROWS) start();
    },
    ready: () => settle(BACKLOG_ROWS),
    async close() {
      if (cur.n > 0) {
        source.queue.push(cur);
        queued += cur.n;
        cur = block();
      }
      try {
        await settle(0);
        if (running) await running;
        if (failure) throw failure;
      } finally {
        sources.delete(id);
      }
    },
    get rows() {
      return rows;
    },
  };
}
