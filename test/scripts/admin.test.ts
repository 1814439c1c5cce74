/** The operator's set-plan command: it changes the plan a live API key is served under, and says why it refuses. */
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PLANS } from '../../core/plans.ts';
import { AccountStore } from '../../data/account-store.ts';
import { duckRunner } from '../../data/runner.ts';
import { runAdmin } from '../../scripts/admin.ts';
import { startApp, type TestApp } from '../helpers/app.ts';
import { closeMemoryVenue, openMemoryVenue } from '../helpers/memory-venue.ts';

let t: TestApp;
let instance: DuckDBInstance;
let conn: DuckDBConnection;
beforeAll(async () => {
  ({ instance, conn } = await openMemoryVenue());
  t = await startApp(duckRunner(conn));
});
afterAll(async () => {
  await t.close();
  closeMemoryVenue(conn, instance);
});

it('set-plan upgrades a user by email; their key is served under the new plan at once', async () => {
  const db = join(t.dir, 'service.sqlite');
  const { key, userId } = await t.keyFor('free');
  const email = (await t.accounts.user(userId))!.email!;
  const planOf = async () => ((await (await fetch(`${t.base}/v1/account/plan`, { headers: { authorization: `Bearer ${key}` } })).json()) as { plan: { id: string } }).plan.id;
  expect(await planOf()).toBe('free');
  const lines: string[] = [];
  expect(await runAdmin(['set-plan', email, 'quant', '--note', 'invoice 7', '--db', db], {}, (l) => lines.push(l))).toBe(0);
  expect(lines.at(-1)).toBe(`${userId}: plan free -> quant`);
  expect(await planOf()).toBe('quant');
  const res = await fetch(`${t.base}/v1/account/plan`, { headers: { authorization: `Bearer ${key}` } });
  expect(res.headers.get('x-ratelimit-limit')).toBe(String(PLANS.quant.requests_per_minute));
  const store = await AccountStore.open(db);
  expect(await store.db.all(`SELECT plan, note FROM plan_changes WHERE user_id = ?`, [userId])).toEqual([{ plan: 'quant', note: 'invoice 7' }]);
  await store.close();
  // show prints the record with the plan; refusals have their own exit codes
  const shown: string[] = [];
  expect(await runAdmin(['show', userId, '--db', db], {}, (l) => shown.push(l))).toBe(0);
  expect(JSON.parse(shown[0]!)).toMatchObject({ user_id: userId, plan: 'quant' });
  expect(await runAdmin(['set-plan', 'nobody@example.com', 'pro', '--db', db], {}, () => {})).toBe(1);
  expect(await runAdmin(['set-plan', userId, 'platinum', '--db', db], {}, () => {})).toBe(2);
  expect(await runAdmin(['set-plan', userId, 'pro', '--db', join(t.dir, 'missing.sqlite')], {}, () => {})).toBe(1);
  expect(await runAdmin(['frobnicate'], {}, () => {})).toBe(2);
});
