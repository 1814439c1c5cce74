/**
 * The ranking part of the analytics build, after the wallet metrics: copy style and best category per wallet,
 * lockstep clusters, the per-wallet base table and every preset's board. Each step is timed like the build's own.
 */
import { buildClusters } from './clusters.ts';
import type { AsOf, QueryRunner } from './query.ts';
import { buildBoards, ensureWalletLinks, rankBaseSql } from './rankings.ts';
import { styleBuildSteps } from './wallet-style.ts';

export async function runRankingBuild(db: QueryRunner, asOf: AsOf, onStep: (name: string) => void = () => {}): Promise<Record<string, number>> {
  const seconds: Record<string, number> = {};
  const timed = async (name: string, f: () => Promise<unknown>) => {
    onStep(name);
    const t = performance.now();
    await f();
    seconds[name] = Number(((performance.now() - t) / 1000).toFixed(2));
  };
  for (const step of styleBuildSteps(asOf)) await timed(step.name, () => db.run(step.sql));
  await timed('clusters', () => buildClusters(db, asOf));
  await ensureWalletLinks(db);
  await timed('rank_base', () => db.run(rankBaseSql()));
  await timed('boards', () => buildBoards(db, asOf));
  return seconds;
}
