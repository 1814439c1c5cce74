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
