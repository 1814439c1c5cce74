/**
 * Which rank-base rows a refresh changes (core/analytics/refresh.ts rankChangedSql), worked by hand: each cause alone
 * — new per-wallet rows, a cluster that forms or grows, a link added or removed, a sharp cutoff that moves past a
 * wallet in either direction — and nothing else. At test scale every such wallet is also dirty (it traded or holds a
 * marked position), so the refresh property test cannot tell these rules apart; here they stand alone.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { rankChangedSql } from '../../core/analytics/refresh.ts';
import { openDuckDB, queryRows } from '../../data/duckdb.ts';

let instance: DuckDBInstance;
let conn: DuckDBConnection;
const INF = Number.POSITIVE_INFINITY;

beforeAll(async () => {
  ({ instance, conn } = await openDuckDB({ path: ':memory:', threads: 1 }));
  await conn.run(`CREATE TABLE dirty_wallets (wallet_id INTEGER)`);
  await conn.run(`CREATE TABLE clusters_before (wallet_id INTEGER, cluster_id INTEGER, cluster_size INTEGER)`);
  await conn.run(`CREATE TABLE a_clusters (wallet_id INTEGER, cluster_id INTEGER, cluster_size INTEGER)`);
  await conn.run(`CREATE TABLE wallet_links (wallet_id INTEGER, user_id VARCHAR)`);
  await conn.run(`CREATE TABLE a_rank_base (wallet_id INTEGER, linked_user_id VARCHAR)`);
  await conn.run(`CREATE TABLE a_calibration (wallet_id INTEGER, calibration_ranked BOOLEAN, skill_deviate DOUBLE)`);
  // wallets 1..20 in the rank base; 5 and 6 linked to user u1 in the previous version
  await conn.run(`INSERT INTO a_rank_base SELECT range, CASE WHEN range IN (5, 6) THEN 'u1' END FROM range(1, 21)`);
  // ranked deviates: 11 -> 2.0, 12 -> 2.5, 13 -> 3.0, 14 -> 3.5; 15 is not ranked (3.2)
  await conn.run(`INSERT INTO a_calibration VALUES (11, true, 2.0), (12, true, 2.5), (13, true, 3.0), (14, true, 3.5), (15, false, 3.2)`);
});
afterAll(() => {
  conn.closeSync();
  instance.closeSync();
});

async function changed(setup: string[], before: number, after: number): Promise<number[]> {
  for (const t of ['dirty_wallets', 'clusters_before', 'a_clusters', 'wallet_links']) await conn.run(`DELETE FROM ${t}`);
  // the links as the previous version had them, unless the case changes them
  await conn.run(`INSERT INTO wallet_links VALUES (5, 'u1'), (6, 'u1')`);
  for (const s of setup) await conn.run(s);
  return (await queryRows<{ wallet_id: number }>(conn, rankChangedSql(before, after))).map((r) => Number(r.wallet_id));
}

it('nothing changed: no row', async () => {
  expect(await changed([], 3, 3)).toEqual([]);
  expect(await changed([], INF, INF)).toEqual([]);
});

it('wallets with new per-wallet rows', async () => {
  expect(await changed([`INSERT INTO dirty_wallets VALUES (3), (9), (3)`], 3, 3)).toEqual([3, 9]);
});

it('a cluster that forms, grows, or is renamed: every member whose id or size changed', async () => {
  // before: {1, 2} (named 1); after: {1, 2, 7} (size 3) and {8, 9} new
  const before = `INSERT INTO clusters_before VALUES (1, 1, 2), (2, 1, 2)`;
  expect(await changed([before, `INSERT INTO a_clusters VALUES (1, 1, 3), (2, 1, 3), (7, 1, 3), (8, 8, 2), (9, 8, 2)`], 3, 3)).toEqual([1, 2, 7, 8, 9]);
  // a cluster that dissolves: its members leave a_clusters
  expect(await changed([before], 3, 3)).toEqual([1, 2]);
  // unchanged clusters: nothing
  expect(await changed([before, `INSERT INTO a_clusters VALUES (1, 1, 2), (2, 1, 2)`], 3, 3)).toEqual([]);
});

it('links added, moved or removed', async () => {
  // 7 joins u1, 6 moves to u2, 5 leaves
  expect(await changed([`DELETE FROM wallet_links`, `INSERT INTO wallet_links VALUES (6, 'u2'), (7, 'u1')`], 3, 3)).toEqual([5, 6, 7]);
});

it('a cutoff that moves: the ranked wallets it passes, in either direction', async () => {
  // 2.5 -> 3.5: 12 (2.5) and 13 (3.0) lose the tag; 14 (3.5) keeps it; 15 is not ranked
  expect(await changed([], 2.5, 3.5)).toEqual([12, 13]);
  expect(await changed([], 3.5, 2.5)).toEqual([12, 13]);
  // no cutoff before (no discovery) -> 3.0: 13 and 14 gain the tag
  expect(await changed([], INF, 3.0)).toEqual([13, 14]);
  expect(await changed([], 2.0, INF)).toEqual([11, 12, 13, 14]);
});
