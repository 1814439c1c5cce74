/**
 * The fill-band invariant (core/analytics/median-fill.ts), checked against the sizes themselves: every banded wallet's
 * run equals its sorted sizes at ranks [below, below + m), with `above` sizes after it. Returns what breaks it.
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import { queryRows } from '../../data/duckdb.ts';

export async function bandViolations(conn: DuckDBConnection, sizes: string): Promise<string[]> {
  const out: string[] = [];
  const counts = await queryRows<{ wallet_id: number; below: number; above: number }>(conn, `SELECT wallet_id, below, above FROM a_fill_band_wallets ORDER BY wallet_id`);
  const runs = new Map<number, number[]>();
  for (const r of await queryRows<{ wallet_id: number; v: number }>(conn, `SELECT wallet_id, size_usdc AS v FROM a_fill_band ORDER BY wallet_id, v`)) {
    runs.set(r.wallet_id, [...(runs.get(r.wallet_id) ?? []), r.v]);
  }
  const all = new Map<number, number[]>();
  for (const r of await queryRows<{ wallet_id: number; v: number }>(conn, `SELECT wallet_id, size_usdc AS v FROM ${sizes} WHERE wallet_id IN (SELECT wallet_id FROM a_fill_band_wallets) ORDER BY wallet_id, v`)) {
    all.set(r.wallet_id, [...(all.get(r.wallet_id) ?? []), r.v]);
  }
  for (const w of runs.keys()) if (!counts.some((c) => c.wallet_id === w)) out.push(`wallet ${w}: a run without counts`);
  for (const c of counts) {
    const run = runs.get(c.wallet_id) ?? [];
    const sorted = all.get(c.wallet_id) ?? [];
    const below = Number(c.below);
    const above = Number(c.above);
    if (run.length === 0) out.push(`wallet ${c.wallet_id}: an empty run`);
    if (below + run.length + above !== sorted.length) out.push(`wallet ${c.wallet_id}: ${below} + ${run.length} + ${above} sizes, ${sorted.length} seen`);
    else if (JSON.stringify(sorted.slice(below, below + run.length)) !== JSON.stringify(run)) out.push(`wallet ${c.wallet_id}: run ${JSON.stringify(run)} is not ranks ${below}.. of ${JSON.stringify(sorted)}`);
  }
  return out;
}
