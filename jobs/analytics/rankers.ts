/**
 * In-memory rankers of the latest analytics versions (core/ranking-engine.ts), for custom rankings in milliseconds:
 * the builder hands over the engine it scored a version's boards with (`adopt`), or the rank base is read once, in
 * one read transaction that also reads the version it belongs to (`refresh`: at start, or a builder in another
 * process); the latest two are kept (requests still reading the previous version's snapshot use it).
 * A request whose version has no ranker loaded (yet) is ranked in SQL: same answer, slower.
 *
 * It also holds the preset boards' heads of the announced version (core/preset-rankings.ts), which answer plain preset
 * pages without a statement. Announced = the version new read transactions see: a builder's publish (right after its
 * COMMIT returns; the heads were read inside its transaction) or the version a replica switched to, then loaded.
 * Until its heads are here a version's presets read SQL, so a preset page never shows an older version than a
 * request that began after the announcement reads.
 */
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { RankingEngine, VersionRanker } from '../../core/ranking-engine.ts';
import { loadRankColumns, type RankColumns } from '../../core/rank-columns.ts';
import type { Ranker, RankerSource } from '../../core/rankings.ts';
import { loadPresetHeads, type PresetHeads } from '../../core/preset-rankings.ts';
import { queryRows } from '../../data/duckdb.ts';
import { duckRunner } from '../../data/runner.ts';
import { metricOrdersOffThread } from './rank-orders.ts';

/** Borrow a database for the duration of fn. */
export type InstanceAccess = <T>(fn: (instance: DuckDBInstance) => Promise<T>) => Promise<T>;

export class RankerCache implements RankerSource {
  private loaded: VersionRanker[] = [];
  /**
   * The engine of the version being committed (stage): DuckDB lets a new transaction read a commit before the
   * committer's call returns, and a request that read that version before it was announced was ranked in SQL
   * (seconds at full scale). A commit that fails leaves it staged, harmlessly: no request reads that version number
   * until a later commit of it succeeds, and that one stages its own engine first.
   */
  private staged: VersionRanker | null = null;
  private loading: Promise<void> = Promise.resolve();
  private pending = false;
  /** the preset heads' loads: a chain of their own, never queued behind a rank base's (seconds at full scale) */
  private headsLoading: Promise<void> = Promise.resolve();
  private headsPending = false;

  private readonly access: InstanceAccess;

  /**
   * `source`: the database to load rank bases from, or a way to borrow whichever database is current (an API
   * replica's published files: PublishedAnalytics.withInstance keeps the file open while the load reads it).
   */
  constructor(
    source: DuckDBInstance | InstanceAccess,
    private readonly keep = 2,
    private readonly log: (m: string) => void = () => {},
  ) {
    this.access = typeof source === 'function' ? source : (fn) => fn(source);
  }

  /** the newest version announced, and the preset heads loaded last (served when they are of that version) */
  private announced = -1;
  private heads: PresetHeads | null = null;

  presetHeads(): PresetHeads | null {
    return this.heads?.version === this.announced ? this.heads : null;
  }

  /**
   * `version` is what new requests read from now on (a builder published it, a replica switched to it); `heads`: its
   * preset heads when the caller has them (a builder reads them before its commit), else refresh() loads them.
   */
  announce(version: number, heads?: PresetHeads | null): void {
    if (version < this.announced) return;
    this.announced = version;
    if (heads?.version === version) this.heads = heads;
  }

  /**
   * A builder published `version`: its preset heads served, the engine it scored the boards with kept (else loaded);
   * resolves once what had to be loaded is.
   */
  published(version: number, report: { ranker?: RankingEngine; heads?: PresetHeads }): Promise<void> {
    this.announce(version, report.heads);
    if (report.ranker) this.adopt(version, report.ranker);
    return !report.ranker || report.heads?.version !== version ? this.refresh() : Promise.resolve();
  }

  at(version: number): Ranker | null {
    return this.loaded.find((r) => r.version === version) ?? (this.staged?.version === version ? this.staged : null);
  }

  /**
   * The engine a builder is about to commit `version` with, served to that version's requests from now on; null: it
   * has none (the version is loaded after its publish), and any engine staged before is dropped.
   */
  stage(version: number, engine: RankingEngine | null): void {
    this.staged = engine ? new VersionRanker(version, engine) : null;
  }

  /** Keep the engine the builder scored `version`'s boards with (no reload: the same rank base). */
  adopt(version: number, engine: RankingEngine): void {
    this.keepVersion(version, engine);
  }

  /** Keep `engine` for `version` among the newest `keep` versions (unless that version is kept already). */
  private keepVersion(version: number, engine: RankingEngine): void {
    const staged = this.staged?.version === version && this.staged.engine === engine ? this.staged : null;
    if (staged || (this.staged && this.staged.version <= version)) this.staged = null;
    if (this.loaded.some((r) => r.version === version)) return;
    this.loaded = [staged ?? new VersionRanker(version, engine), ...this.loaded].sort((a, b) => b.version - a.version).slice(0, this.keep);
  }

  /**
   * Load the latest committed version: its preset heads (a fraction of a second) and its rank base, each coalescing
   * (versions published while one loads are skipped to the newest). The heads do not wait for a rank base still
   * loading: a replica that switched files while the previous one's rank base loaded would otherwise have answered
   * its plain presets in SQL until that load ended.
   */
  refresh(): Promise<void> {
    const heads = this.refreshHeads();
    if (!this.pending) {
      this.pending = true;
      this.loading = this.loading.then(async () => {
        this.pending = false;
        try {
          await this.access((instance) => this.loadFrom(instance));
        } catch (e) {
          this.log(`rankers: load failed: ${(e as Error).message}`);
        }
      });
    }
    return Promise.all([heads, this.loading]).then(() => undefined);
  }

  private refreshHeads(): Promise<void> {
    if (this.headsPending) return this.headsLoading;
    this.headsPending = true;
    this.headsLoading = this.headsLoading.then(async () => {
      this.headsPending = false;
      try {
        await this.access(async (instance) => {
          const conn = await instance.connect();
          try {
            await this.loadHeads(conn);
          } finally {
            conn.closeSync();
          }
        });
      } catch (e) {
        this.log(`rankers: preset heads not loaded (plain presets read SQL): ${(e as Error).message}`);
      }
    });
    return this.headsLoading;
  }

  /** The heads of the version conn reads, unless loaded (a failure is logged: presets read SQL meanwhile). */
  private async loadHeads(conn: DuckDBConnection): Promise<void> {
    await conn.run('BEGIN TRANSACTION');
    try {
      const [m] = await queryRows<{ version: number }>(conn, `SELECT version FROM a_meta LIMIT 1`);
      const version = Number(m?.version);
      // the version this snapshot reads is one new requests read (it committed), whether announced yet or not
      if (Number.isFinite(version) && this.heads?.version !== version && version >= this.announced) {
        const heads = await loadPresetHeads(duckRunner(conn));
        this.announce(heads.version, heads);
      }
      await conn.run('COMMIT');
    } catch (e) {
      await conn.run('ROLLBACK').catch(() => {});
      this.log(`rankers: preset heads not loaded (plain presets read SQL): ${(e as Error).message}`);
    }
  }

  private async loadFrom(instance: DuckDBInstance): Promise<void> {
    const t = performance.now();
    const conn = await instance.connect();
    let version = Number.NaN;
    let cols: RankColumns;
    try {
      await conn.run('BEGIN TRANSACTION');
      const [m] = await queryRows<{ version: number }>(conn, `SELECT version FROM a_meta LIMIT 1`);
      version = Number(m?.version);
      if (!Number.isFinite(version) || this.at(version)) return;
      cols = await loadRankColumns(duckRunner(conn), 'a_rank_base', { shared: true });
    } finally {
      await conn.run('COMMIT').catch(() => {});
      conn.closeSync();
    }
    // the sorts run on a worker thread: requests go on meanwhile
    const engine = new RankingEngine(cols, await metricOrdersOffThread(cols));
    this.keepVersion(version, engine); // unless adopted meanwhile
    // every metric's rank keys now, between requests: a ranking meanwhile computes the few it needs itself (a
    // version without its engine would be ranked by the SQL pipeline, seconds at full scale)
    if ((this.at(version) as VersionRanker | null)?.engine === engine) await engine.warm();
    this.log(`rankers: version ${version} loaded (${engine.cols.n.toLocaleString()} wallets) in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  }
}
