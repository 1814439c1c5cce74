/**
 * A fresh PostgreSQL database per test file on the machine's server (PG_TEST_URL, default the local server as
 * postgres over TCP), dropped afterwards: tests of the service state run against the real engine, never a mock.
 */
import pg from 'pg';

export const PG_ADMIN_URL = process.env.PG_TEST_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export interface TestPostgres {
  url: string;
  drop(): Promise<void>;
}

export async function freshPostgres(prefix = 'sa_test'): Promise<TestPostgres> {
  const name = `${prefix}_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: PG_ADMIN_URL });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}
