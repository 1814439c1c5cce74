/**
 * Columnar staging: the generator appends numeric rows through DuckDB appenders in 2,048-row chunks (one DuckDB
 * vector), into a disk-backed staging database, so the venue is never held in memory. Export turns the numeric
 * staging rows into the venue schema (hashes, addresses, timestamps) and writes sorted Parquet.
 */
import { DOUBLE, INTEGER, UTINYINT, DuckDBDataChunk, type DuckDBAppender, type DuckDBConnection, type DuckDBType } from '@duckdb/node-api';

type Col = { name: string; type: DuckDBType; sql: string; array: Float64Array | Int32Array | Uint8Array };
const CHUNK = 2048;

function column(name: string, kind: 'f64' | 'i32' | 'u8'): Col {
  if (kind === 'f64') return { name, type: DOUBLE, sql: 'DOUBLE', array: new Float64Array(CHUNK) };
  if (kind === 'i32') return { name, type: INTEGER, sql: 'INTEGER', array: new Int32Array(CHUNK) };
  return { name, type: UTINYINT, sql: 'UTINYINT', array: new Uint8Array(CHUNK) };
}

export class ChunkedTable {
  private n = 0;
  rows = 0;
  private appender!: DuckDBAppender;
  readonly cols: Col[];

  constructor(readonly name: string, spec: [string, 'f64' | 'i32' | 'u8'][]) {
    this.cols = spec.map(([n, k]) => column(n, k));
  }

  async open(conn: DuckDBConnection): Promise<void> {
    await conn.run(`CREATE OR REPLACE TABLE ${this.name} (${this.cols.map((c) => `${c.name} ${c.sql}`).join(', ')})`);
    this.appender = await conn.createAppender(this.name);
  }

  /** Append one row; values in column order. */
  push(...values: number[]): void {
    const i = this.n;
    for (let c = 0; c < this.cols.length; c++) (this.cols[c] as Col).array[i] = values[c] as number;
    if (++this.n === CHUNK) this.flush();
  }

  flush(): void {
    if (this.n === 0) return;
    const chunk = DuckDBDataChunk.create(this.cols.map((c) => c.type), this.n);
    this.cols.forEach((c, i) => chunk.setColumnValues(i, (this.n === CHUNK ? c.array : c.array.subarray(0, this.n)) as never));
    this.appender.appendDataChunk(chunk);
    this.rows += this.n;
    this.n = 0;
  }

  close(): void {
    this.flush();
    this.appender.closeSync();
  }
}
