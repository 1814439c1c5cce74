/**
 * The two engines of the service state for store suites (describe.each): SQLite on a file in a temp dir, and
 * PostgreSQL on a fresh database of the machine's server (test/helpers/postgres.ts). `replicas()` opens the
 * connections two replicas have: two pools on PostgreSQL; on SQLite one connection for both, because replicas on one
 * file are processes, and a second connection in the same process would wait for the first's lock while blocking the
 * event loop the first needs to finish (data/sql/db.ts). Cross-process behaviour is tested with child processes.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openServiceDb, type SqlDb } from '../../data/sql/db.ts';
import { freshPostgres } from './postgres.ts';

export interface ServiceEngine {
  name: 'SQLite' | 'PostgreSQL';
  /** a fresh, empty service database: its target (path or URL) and how to throw it away */
  fresh(prefix: string): Promise<{ target: string; drop(): Promise<void> }>;
}

export const SERVICE_ENGINES: ServiceEngine[] = [
  {
    name: 'SQLite',
    async fresh(prefix) {
      const dir = await mkdtemp(join(tmpdir(), `${prefix}-`));
      return { target: join(dir, 'service.sqlite'), drop: () => rm(dir, { recursive: true, force: true }) };
    },
  },
  {
    name: 'PostgreSQL',
    async fresh(prefix) {
      const pg = await freshPostgres(`sa_${prefix.replace(/[^a-z0-9]/g, '_')}`);
      return { target: pg.url, drop: () => pg.drop() };
    },
  },
];

/** Two replicas' connections to `target` (one shared connection on SQLite, two pools on PostgreSQL), and a closer. */
export async function replicas(engine: ServiceEngine, target: string): Promise<{ a: SqlDb; b: SqlDb; close(): Promise<void> }> {
  const a = await openServiceDb(target);
  const b = engine.name === 'SQLite' ? a : await openServiceDb(target);
  return {
    a,
    b,
    async close() {
      await a.close();
      if (b !== a) await b.close();
    },
  };
}
