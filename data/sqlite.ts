/**
 * Opening the service's SQLite file: every store (accounts, rate counters, snapshots, the resolutions feed, the
 * payment ledger, webhooks, push) opens its own connection to the same file, so each needs WAL (readers never block
 * the writer) and a busy timeout (writers from other connections wait instead of failing with SQLITE_BUSY).
 */
import Database from 'better-sqlite3';

export function openSqlite(path: string, opts: { synchronous?: 'NORMAL' | 'FULL'; foreignKeys?: boolean } = {}): Database.Database {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${opts.synchronous ?? 'NORMAL'}`);
  db.pragma('busy_timeout = 5000');
  if (opts.foreignKeys) db.pragma('foreign_keys = ON');
  return db;
}

/**
 * Add the columns a table gained after it first shipped, to a file made before: each `[name, definition]` missing
 * from the table is added (existing rows get the definition's default). Checked and added under one write lock, so
 * two processes opening the same old file do not both add a column.
 */
export function addMissingColumns(db: Database.Database, table: string, columns: readonly (readonly [string, string])[]): void {
  db.transaction(() => {
    const have = new Set((db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[]).map((c) => c.name));
    for (const [name, def] of columns) if (!have.has(name)) db.exec(`ALTER TABLE ${table} ADD COLUMN ${name} ${def}`);
  }).immediate();
}
