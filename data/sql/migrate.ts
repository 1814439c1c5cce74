/**
 * Versioned migrations of the service state (umzug), the same for SQLite and PostgreSQL: each store lists its
 * migrations in order (`0001-…`, `0002-…`; a migration's body may branch on `db.dialect`), and `migrate` applies the
 * ones a database has not seen, recording each in `schema_migrations` (store, name, applied_at).
 *
 * All of a store's pending migrations run in one transaction under one lock, so replicas starting together
 * neither apply a migration twice nor see half of one (PostgreSQL and SQLite both roll DDL back with the
 * transaction).
 */
import { Umzug, type UmzugStorage } from 'umzug';
import type { SqlDb } from './db.ts';

export interface Migration {
  name: string;
  up(db: SqlDb): Promise<void>;
}

/** Apply `store`'s pending migrations; returns the names applied. */
export async function migrate(db: SqlDb, store: string, migrations: readonly Migration[]): Promise<string[]> {
  return db.tx(
    async (t) => {
      // under the lock: two replicas creating the table at once would collide in PostgreSQL's catalog
      await t.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (store TEXT NOT NULL, name TEXT NOT NULL, applied_at TEXT NOT NULL, PRIMARY KEY (store, name))`);
      const storage: UmzugStorage<SqlDb> = {
        async executed({ context }) {
          return (await context.all<{ name: string }>(`SELECT name FROM schema_migrations WHERE store = ? ORDER BY name`, [store])).map((r) => r.name);
        },
        async logMigration({ name, context }) {
          await context.run(`INSERT INTO schema_migrations (store, name, applied_at) VALUES (?, ?, ?)`, [store, name, new Date().toISOString()]);
        },
        async unlogMigration({ name, context }) {
          await context.run(`DELETE FROM schema_migrations WHERE store = ? AND name = ?`, [store, name]);
        },
      };
      const umzug = new Umzug<SqlDb>({
        migrations: migrations.map((m) => ({ name: m.name, up: ({ context }) => m.up(context) })),
        context: t,
        storage,
        logger: undefined,
      });
      return (await umzug.up()).map((m) => m.name);
    },
    { lock: 'schema_migrations' },
  );
}
