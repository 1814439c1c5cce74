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
import { openServiceDb, type SqlDb } from './db.ts';

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

/**
 * A store's database, migrated: `target` itself when it is an open database (shared with the process's other
 * stores; its owner closes it), or one opened from a SQLite path or PostgreSQL URL (`owned`: the store closes it,
 * and it is closed again at once when the migration fails).
 */
export async function openMigrated(target: SqlDb | string, store: string, migrations: readonly Migration[]): Promise<{ db: SqlDb; owned: boolean }> {
  const owned = typeof target === 'string';
  const db = owned ? await openServiceDb(target) : target;
  try {
    await migrate(db, store, migrations);
  } catch (e) {
    if (owned) await db.close();
    throw e;
  }
  return { db, owned };
}

/**
 * Triggers refusing `ops` on `table` with `message`, in either engine (SQLite: RAISE(ABORT); PostgreSQL: one plpgsql
 * function per trigger name), so a store's invariant holds whatever SQL reaches the table. `when` (over OLD) limits
 * the refusal to some rows; `truncate` refuses TRUNCATE too (PostgreSQL has it; SQLite's DELETE trigger covers it).
 */
export async function refuseChanges(db: SqlDb, opts: { name: string; table: string; ops: readonly ('UPDATE' | 'DELETE')[]; message: string; when?: string; truncate?: boolean }): Promise<void> {
  const { name, table, message } = opts;
  const quoted = message.replaceAll("'", "''");
  if (db.dialect === 'sqlite') {
    for (const op of opts.ops) {
      await db.exec(`CREATE TRIGGER IF NOT EXISTS ${name}_${op.toLowerCase()} BEFORE ${op} ON ${table}${opts.when ? ` WHEN ${opts.when}` : ''}
        BEGIN SELECT RAISE(ABORT, '${quoted}'); END;`);
    }
    return;
  }
  await db.exec(`CREATE OR REPLACE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION '${quoted}'; END $$;`);
  for (const op of opts.ops) {
    await db.exec(`DROP TRIGGER IF EXISTS ${name}_${op.toLowerCase()} ON ${table};
      CREATE TRIGGER ${name}_${op.toLowerCase()} BEFORE ${op} ON ${table} FOR EACH ROW${opts.when ? ` WHEN (${opts.when})` : ''} EXECUTE FUNCTION ${name}();`);
  }
  if (opts.truncate) {
    await db.exec(`DROP TRIGGER IF EXISTS ${name}_truncate ON ${table};
      CREATE TRIGGER ${name}_truncate BEFORE TRUNCATE ON ${table} FOR EACH STATEMENT EXECUTE FUNCTION ${name}();`);
  }
}

/** What every store of the service state shares: its database, closed by the store only when it opened it (openMigrated). */
export abstract class ServiceStore {
  protected constructor(
    readonly db: SqlDb,
    private readonly owned: boolean,
  ) {}

  async close(): Promise<void> {
    if (this.owned) await this.db.close();
  }
}
