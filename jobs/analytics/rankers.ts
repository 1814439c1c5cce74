/**
 * In-memory rankers of the latest analytics versions (core/ranking-engine.ts), for custom rankings in milliseconds:
 * after each published version the rank base is read once, in one read transaction that also reads the version it
 * belongs to, and kept beside the previous one (requests still reading the previous version's snapshot use it).
 * A request whose version has no ranker loaded (yet) is ranked in SQL: same answer, slower.
 */
import type { DuckDBInstance } from '@duckdb/node-api';
import { RankingEngine, VersionRanker, loadRankColumns } from '../../core/ranking-engine.ts';
import type { Ranker, RankerSource } from '../../core/rankings.ts';
import { queryRows } from '../../data/duckdb.ts';
import { duckRunner } from '../../data/runner.ts';

export class RankerCache implements RankerSource {
  private loaded: VersionRanker[] = [];
  private loading: Promise<void> = Promise.resolve();
  private pending = false;

  constructor(
    private readonly instance: DuckDBInstance,
    private readonly keep = 2,
    private readonly log: (m: string) => void = () => {},
  ) {}

  at(version: number): Ranker | null {
    return this.loaded.find((r) => r.version === version) ?? null;
  }

  /** Load the latest committed version (coalescing: versions published while one loads are skipped to the newest). */
  refresh(): Promise<void> {
    if (this.pending) return this.loading;
    this.pending = true;
    this.loading = this.loading.then(async () => {
      this.pending = false;
      try {
        await this.loadLatest();
      } catch (e) {
        this.log(`rankers: load failed: ${(e as Error).message}`);
      }
    });
    return this.loading;
  }

  private async loadLatest(): Promise<void> {
    const t = performance.now();
    const conn = await this.instance.connect();
    try {
      await conn.run('BEGIN TRANSACTION');
      const [m] = await queryRows<{ version: number }>(conn, `SELECT version FROM a_meta LIMIT 1`);
      const version = Number(m?.version);
      if (!Number.isFinite(version) || this.at(version)) return;
      const engine = new RankingEngine(await loadRankColumns(duckRunner(conn)));
      this.loaded = [new VersionRanker(version, engine), ...this.loaded].slice(0, this.keep);
      this.log(`rankers: version ${version} loaded (${engine.cols.n.toLocaleString()} wallets) in ${((performance.now() - t) / 1000).toFixed(1)} s`);
    } finally {
      await conn.run('COMMIT').catch(() => {});
      conn.closeSync();
    }
  }
}
