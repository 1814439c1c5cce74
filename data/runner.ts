/**
 * The core's QueryRunner over a DuckDB connection, with the columnar paths of ColumnarRunner: `scan` streams a
 * SELECT chunk by chunk as typed arrays (no per-value objects: the analytics engine reads hundreds of millions of
 * legs this way), `writer` hands rows to INSERT statements in blocks of 2,048 (DuckDB stores them off the event
 * loop; insertWriter).
 */
import { createRequire } from 'node:module';
import { BOOLEAN, DOUBLE, DuckDBTableFunction, INTEGER, TIMESTAMP, UTINYINT, type DuckDBConnection, type DuckDBInstance, type DuckDBResult, type DuckDBType } from '@duckdb/node-api';
import type { ColumnType, ColumnarRunner, QueryRunner, RowWriter, ScanBatch, WriterColumn } from '../core/query.ts';
import { queryRows } from './duckdb.ts';

/** The native bindings behind @duckdb/node-api (the copy it loads itself): the few calls the writer makes directly. */
interface Bindings {
  data_chunk_get_vector(chunk: unknown, column: number): unknown;
  copy_data_to_vector(vector: unknown, offset: number, source: ArrayBufferLike, sourceOffset: number, bytes: number): void;
  vector_ensure_validity_writable(vector: unknown): void;
  copy_data_to_vector_validity(vector: unknown, offset: number, source: ArrayBufferLike, sourceOffset: number, bytes: number): void;
}
const bindings = createRequire(createRequire(import.meta.url).resolve('@duckdb/node-api'))('@duckdb/node-bindings') as Bindings;

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
    writer: async (table, columns, select) => insertWriter(conn, table, columns, writers, select),
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

/** The blocks one INSERT reads, a block per call of the table function, given back to their writer when copied. */
interface Source {
  columns: readonly WriterColumn[];
  blocks: Block[];
  at: number;
  done: (b: Block) => void;
}

/** Sources by id, for the table function (one per connection) that their INSERTs name. */
const sources = new Map<number, Source>();
let nextSource = 1;
const ROWS_FUNCTION = 'writer_rows';
// the scratch of the table function's copies: TIMESTAMPs as int64 µs, a validity mask (calls are on this thread)
const micros = new BigInt64Array(CHUNK_ROWS);
const validity = new Uint32Array(CHUNK_ROWS / 32);
/** INSERTs of writers running per connection. */
const inserting = new WeakMap<DuckDBConnection, number>();

/**
 * `writer_rows(id)`: the blocks of source `id`, one per call until all are read. DuckDB calls it from
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
        const b = src?.blocks[src.at++];
        if (!src || !b) {
          out.rowCount = 0;
          return;
        }
        out.rowCount = b.n;
        // straight into the output vectors' memory: a vector object per column (getColumnVector) copies its data out
        // first, a fresh allocation per call
        for (let c = 0; c < src.columns.length; c++) {
          const vec = bindings.data_chunk_get_vector(out.chunk, c);
          const type = src.columns[c]!.type;
          let data: Buffer | BigInt64Array = b.values[c]!;
          if (type === 'TIMESTAMP') {
            writeMicros(micros, data as Float64Array, b.n);
            data = micros;
          }
          bindings.copy_data_to_vector(vec, 0, data.buffer, data.byteOffset, b.n * data.BYTES_PER_ELEMENT);
          // a NaN of a nanIsNull column is a NULL: found here, once per block, whichever way it was written
          const nan = src.columns[c]!.nanIsNull === true && hasNaN(data as Float64Array, b.n);
          if (b.hasNull[c] || nan) {
            const nl = b.nulls[c]!;
            // little-endian: two 32-bit words are one of DuckDB's 64-bit validity words
            const words = Math.ceil(b.n / 64) * 2;
            validity.fill(0, 0, words);
            const v = data as Float64Array;
            for (let r = 0; r < b.n; r++) if (!nl[r] && (!nan || v[r] === v[r])) validity[r >>> 5]! |= 1 << (r & 31);
            bindings.vector_ensure_validity_writable(vec);
            bindings.copy_data_to_vector_validity(vec, 0, validity.buffer, 0, words * 4);
          }
        }
        src.done(b);
      },
    }),
  );
}

function hasNaN(v: Float64Array, n: number): boolean {
  for (let r = 0; r < n; r++) if (v[r] !== v[r]) return true;
  return false;
}

/**
 * Blocks per INSERT: two of DuckDB's row groups (122,880 rows each). Outside a transaction each INSERT commits; whole
 * row groups are written to the database file as they fill, a partial one goes through the write-ahead log (and a
 * checkpoint rewrites it), so small INSERTs into a 64M-row table cost far more than they write.
 */
const INSERT_BLOCKS = (2 * 122_880) / CHUNK_ROWS;
/** Rows waiting past which a producer that can wait does (RowWriter.ready): two INSERTs' worth. */
const BACKLOG_ROWS = 2 * INSERT_BLOCKS * CHUNK_ROWS;

/**
 * A RowWriter whose rows reach the table through INSERT statements reading them from `writer_rows`, run while the
 * writer fills more: the event loop only copies blocks. An appender stored its rows on the event loop's thread
 * (appendDataChunk, closeSync): at full scale that held the loop for seconds per refresh. Statements run on the
 * connection meanwhile are unaffected (the INSERTs only write `table`); its rows are all in once `close()` resolves.
 * The writer is in `open` (the runner's writers, whose backlog its scans wait on) until it is closed.
 */
function insertWriter(conn: DuckDBConnection, table: string, columns: readonly WriterColumn[], open: Set<RowWriter>, select = '*'): RowWriter {
  registerRowsFunction(conn);
  const free: Block[] = [];
  const block = (): Block =>
    free.pop() ?? { n: 0, values: columns.map((c) => bufferFor(c.type)), nulls: columns.map(() => new Uint8Array(CHUNK_ROWS)), hasNull: new Uint8Array(columns.length) };
  let cur = block();
  const queue: Block[] = [];
  // rows not yet copied to DuckDB: queued, or in the batch of the INSERT running
  let waiting = 0;
  let rows = 0;
  let closing = false;
  let running: Promise<void> | null = null;
  let failure: unknown = null;
  const done = (b: Block) => {
    waiting -= b.n;
    for (let c = 0; c < columns.length; c++) if (b.hasNull[c]) b.nulls[c]!.fill(0, 0, b.n);
    b.hasNull.fill(0);
    b.n = 0;
    free.push(b);
  };
  // one INSERT at a time, of a full batch (at close, of what is left); the next starts when it ends
  const start = () => {
    if (running || failure || queue.length === 0 || (queue.length < INSERT_BLOCKS && !closing)) return;
    const id = nextSource++;
    sources.set(id, { columns, blocks: queue.splice(0, INSERT_BLOCKS), at: 0, done });
    inserting.set(conn, (inserting.get(conn) ?? 0) + 1);
    const ended = () => {
      inserting.set(conn, inserting.get(conn)! - 1);
      sources.delete(id);
      running = null;
    };
    running = conn.run(`INSERT INTO ${table} SELECT ${select} FROM ${ROWS_FUNCTION}(${id})`).then(
      () => {
        ended();
        start();
      },
      (e: unknown) => {
        ended();
        failure = e;
        queue.length = 0;
      },
    );
  };
  const settle = async (below: number) => {
    while (waiting > below && !failure) {
      start();
      if (!running) break;
      await running;
    }
  };
  // the current block is full: queue it for an INSERT (after a failed INSERT the rows go nowhere: close() reports it)
  const full = () => {
    if (failure) {
      cur.n = 0;
      return;
    }
    queue.push(cur);
    waiting += cur.n;
    cur = block();
    start();
  };
  const writer: RowWriter = {
    set(column, value) {
      if (value === null) {
        cur.nulls[column]![cur.n] = 1;
        cur.hasNull[column] = 1;
      } else cur.values[column]![cur.n] = typeof value === 'boolean' ? (value ? 1 : 0) : value;
    },
    row(values, nulls) {
      const n = cur.n;
      for (let c = 0; c < columns.length; c++) {
        if (nulls?.[c]) {
          cur.nulls[c]![n] = 1;
          cur.hasNull[c] = 1;
        } else cur.values[c]![n] = values[c]!;
      }
      writer.next();
    },
    next() {
      rows++;
      if (++cur.n === CHUNK_ROWS) full();
    },
    columns(n, cols) {
      if (cols.length !== columns.length) throw new Error(`writer ${table}: ${cols.length} columns given for ${columns.length}`);
      // a short column would leave a reused block's old values in the rows
      for (let c = 0; c < cols.length; c++) if (cols[c]!.length < n) throw new Error(`writer ${table}: column ${columns[c]!.name} has ${cols[c]!.length} values for ${n} rows`);
      for (let at = 0; at < n; ) {
        const run = Math.min(n - at, CHUNK_ROWS - cur.n);
        for (let c = 0; c < columns.length; c++) {
          const from = cols[c]!;
          const to = cur.values[c]!;
          if (ArrayBuffer.isView(from)) to.set((from as Float64Array).subarray(at, at + run), cur.n);
          else for (let k = 0; k < run; k++) to[cur.n + k] = from[at + k]!;
        }
        at += run;
        rows += run;
        cur.n += run;
        if (cur.n === CHUNK_ROWS) full();
      }
    },
    ready: () => settle(BACKLOG_ROWS),
    async close() {
      if (cur.n > 0 && !failure) {
        queue.push(cur);
        waiting += cur.n;
        cur = block();
      }
      closing = true;
      try {
        await settle(0);
        if (running) await running;
      } finally {
        open.delete(writer);
      }
      if (failure) throw failure;
    },
    get rows() {
      return rows;
    },
  };
  open.add(writer);
  return writer;
}
