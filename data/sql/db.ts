/**
 * The service state's SQL connection, one interface over two engines: SQLite (better-sqlite3, the embedded default,
 * one file) and PostgreSQL (pg, `DATABASE_URL=postgres://…`, shared by every replica). A store is written once in
 * the SQL both engines accept — `?` placeholders (numbered for PostgreSQL here), `ON CONFLICT … DO NOTHING`,
 * `RETURNING`, BIGINT milliseconds, INTEGER 0/1 flags — and its migrations say where the engines differ.
 *
 * Transactions: `tx(fn)` runs fn's statements in one transaction on one connection. `lock` names a check-then-write
 * that two writers must not interleave (the founding-member count, a payment's reservation): SQLite takes the write
 * lock at BEGIN (IMMEDIATE, every process on the file waits its turn), PostgreSQL a transaction advisory lock on the
 * name. Single-use rows (nonces, tokens, payments) need no lock: one conditional UPDATE or INSERT … ON CONFLICT
 * decides, in either engine, across processes and replicas.
 */
import Database from 'better-sqlite3';
import pg from 'pg';

export type Dialect = 'sqlite' | 'postgres';
export type SqlValue = string | number | bigint | boolean | null;

export interface SqlDb {
  readonly dialect: Dialect;
  all<T>(sql: string, params?: readonly SqlValue[]): Promise<T[]>;
  get<T>(sql: string, params?: readonly SqlValue[]): Promise<T | undefined>;
  /** a statement without rows; `changes` = rows inserted, updated or deleted */
  run(sql: string, params?: readonly SqlValue[]): Promise<{ changes: number }>;
  /** several statements without parameters (DDL) */
  exec(sql: string): Promise<void>;
  tx<T>(fn: (db: SqlDb) => Promise<T>, opts?: { lock?: string }): Promise<T>;
  close(): Promise<void>;
}

/** A UNIQUE or PRIMARY KEY violation, in either engine. */
export function isUniqueViolation(e: unknown): boolean {
  const code = (e as { code?: string } | null)?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

export const isPostgresUrl = (target: string) => /^postgres(ql)?:\/\//.test(target);

/** The service state at `target`: a PostgreSQL URL, else a SQLite file path. */
export async function openServiceDb(target: string, opts: { poolSize?: number } = {}): Promise<SqlDb> {
  return isPostgresUrl(target) ? PostgresDb.connect(target, opts.poolSize) : SqliteDb.open(target);
}

// ---------------------------------------------------------------------------------------------------------------
// SQLite
// ---------------------------------------------------------------------------------------------------------------

/**
 * One better-sqlite3 connection (WAL, a busy timeout for the other processes on the file). Statements run
 * synchronously, so the only thing to order is a transaction's awaits: while one is open, statements from outside it
 * wait for it to end instead of running inside it.
 */
export class SqliteDb implements SqlDb {
  readonly dialect = 'sqlite' as const;
  private readonly statements = new Map<string, Database.Statement>();
  private open: Promise<void> | null = null;

  private constructor(readonly raw: Database.Database) {}

  static async open(path: string, opts: { synchronous?: 'NORMAL' | 'FULL' } = {}): Promise<SqliteDb> {
    const raw = new Database(path);
    // the timeout first: switching to WAL takes a lock that another process opening the file may hold
    raw.pragma('busy_timeout = 5000');
    raw.pragma('journal_mode = WAL');
    raw.pragma(`synchronous = ${opts.synchronous ?? 'FULL'}`);
    raw.pragma('foreign_keys = ON');
    return new SqliteDb(raw);
  }

  private stmt(sql: string): Database.Statement {
    let s = this.statements.get(sql);
    if (!s) {
      s = this.raw.prepare(sql);
      if (this.statements.size > 500) this.statements.clear();
      this.statements.set(sql, s);
    }
    return s;
  }

  // the statements themselves, for use inside a transaction (no waiting on it)
  private readonly direct: SqlDb = {
    dialect: 'sqlite',
    all: async <T>(sql: string, params: readonly SqlValue[] = []) => {
      const s = this.stmt(sql);
      return (s.reader ? s.all(...sqliteParams(params)) : (s.run(...sqliteParams(params)), [])) as T[];
    },
    get: async <T>(sql: string, params: readonly SqlValue[] = []) => {
      const s = this.stmt(sql);
      return (s.reader ? s.get(...sqliteParams(params)) : (s.run(...sqliteParams(params)), undefined)) as T | undefined;
    },
    run: async (sql: string, params: readonly SqlValue[] = []) => ({ changes: this.stmt(sql).run(...sqliteParams(params)).changes }),
    exec: async (sql: string) => void this.raw.exec(sql),
    tx: async <T>(fn: (db: SqlDb) => Promise<T>) => fn(this.direct),
    close: async () => {},
  };

  async all<T>(sql: string, params?: readonly SqlValue[]): Promise<T[]> {
    // the check and the statement with no await between them: a transaction cannot open in the gap
    while (this.open) await this.open;
    return this.direct.all<T>(sql, params);
  }

  async get<T>(sql: string, params?: readonly SqlValue[]): Promise<T | undefined> {
    while (this.open) await this.open;
    return this.direct.get<T>(sql, params);
  }

  async run(sql: string, params?: readonly SqlValue[]): Promise<{ changes: number }> {
    while (this.open) await this.open;
    return this.direct.run(sql, params);
  }

  async exec(sql: string): Promise<void> {
    while (this.open) await this.open;
    this.raw.exec(sql);
  }

  async tx<T>(fn: (db: SqlDb) => Promise<T>, opts: { lock?: string } = {}): Promise<T> {
    while (this.open) await this.open;
    let done!: () => void;
    this.open = new Promise<void>((r) => (done = r));
    try {
      this.raw.exec(opts.lock ? 'BEGIN IMMEDIATE' : 'BEGIN');
      try {
        const out = await fn(this.direct);
        this.raw.exec('COMMIT');
        return out;
      } catch (e) {
        if (this.raw.inTransaction) this.raw.exec('ROLLBACK');
        throw e;
      }
    } finally {
      this.open = null;
      done();
    }
  }

  async close(): Promise<void> {
    while (this.open) await this.open;
    this.raw.close();
  }
}

// booleans as 0/1 (SQLite has no boolean type; better-sqlite3 refuses JS booleans)
const sqliteParams = (params: readonly SqlValue[]) => params.map((p) => (typeof p === 'boolean' ? (p ? 1 : 0) : p));

// ---------------------------------------------------------------------------------------------------------------
// PostgreSQL
// ---------------------------------------------------------------------------------------------------------------

// BIGINT (milliseconds, counts) as numbers: every value the stores keep in one is far below 2^53
pg.types.setTypeParser(20, (v) => Number(v));

/** `?` placeholders numbered ($1, $2, …); the stores put no `?` in literals. */
export function numberPlaceholders(sql: string): string {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
}

type PgQueryable = pg.Pool | pg.PoolClient;

export class PostgresDb implements SqlDb {
  readonly dialect = 'postgres' as const;
  private readonly texts = new Map<string, string>();

  private constructor(
    private readonly on: PgQueryable,
    private readonly pool: pg.Pool,
    private readonly inTx: boolean,
  ) {}

  static async connect(url: string, poolSize = 10): Promise<PostgresDb> {
    const pool = new pg.Pool({ connectionString: url, max: poolSize });
    // an idle client's error (the server restarted) must not crash the process: the pool replaces it
    pool.on('error', () => {});
    const db = new PostgresDb(pool, pool, false);
    await db.get('SELECT 1');
    return db;
  }

  private text(sql: string): string {
    let t = this.texts.get(sql);
    if (t === undefined) {
      t = numberPlaceholders(sql);
      if (this.texts.size > 500) this.texts.clear();
      this.texts.set(sql, t);
    }
    return t;
  }

  private async query(sql: string, params: readonly SqlValue[] = []): Promise<pg.QueryResult> {
    return this.on.query(this.text(sql), params.map((p) => (typeof p === 'bigint' ? p.toString() : p)));
  }

  async all<T>(sql: string, params?: readonly SqlValue[]): Promise<T[]> {
    return (await this.query(sql, params)).rows as T[];
  }

  async get<T>(sql: string, params?: readonly SqlValue[]): Promise<T | undefined> {
    return (await this.query(sql, params)).rows[0] as T | undefined;
  }

  async run(sql: string, params?: readonly SqlValue[]): Promise<{ changes: number }> {
    return { changes: (await this.query(sql, params)).rowCount ?? 0 };
  }

  async exec(sql: string): Promise<void> {
    await this.on.query(sql);
  }

  async tx<T>(fn: (db: SqlDb) => Promise<T>, opts: { lock?: string } = {}): Promise<T> {
    if (this.inTx) return fn(this);
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      try {
        if (opts.lock) await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [opts.lock]);
        const out = await fn(new PostgresDb(client, this.pool, true));
        await client.query('COMMIT');
        return out;
      } catch (e) {
        await client.query('ROLLBACK').catch(() => {});
        throw e;
      }
    } finally {
      client.release();
    }
  }

  async close(): Promise<void> {
    if (!this.inTx) await this.pool.end();
  }
}
