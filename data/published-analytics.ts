/**
 * One analytics builder, many readers. DuckDB lets one process write a database file, and others open it only when
 * nobody writes it; so the builder (which owns the venue and its live analytics) publishes each state as a file of
 * its own, and API replicas open the newest one read-only and switch to the next when it appears.
 *
 * Builder side, `publishAnalytics`: copies the whole database — venue tables, every a_* table, views, macros — as of
 * one committed version into `<dir>/v<version>.duckdb` (COPY FROM DATABASE into a new file, checkpointed, then
 * renamed into place), then points `<dir>/CURRENT.json` at it (written aside and renamed: readers see the old
 * pointer or the new one, never half of one). Older files are removed once they are neither current nor among the
 * newest `keep`, and older than `graceMs` (default two minutes: a replica switches within seconds, and a request's
 * snapshot lasts at most 30 s).
 *
 * Replica side, `PublishedAnalytics`: opens the current file read-only behind a `SwitchingRunner`, polls the pointer,
 * and on a new version opens the new file and switches: requests that started on the old file finish on it (each
 * HTTP request, MCP call or scope stays on the file it began with), new ones go to the new file, and the old file is
 * closed when its last reader ends. A replica never waits for the builder: it serves the file it has until the next
 * one is ready.
 */
import { EventEmitter } from 'node:events';
import { AsyncLocalStorage } from 'node:async_hooks';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { DuckDBInstance } from '@duckdb/node-api';
import { openDuckDB, queryRows, sqlString } from './duckdb.ts';
import { snapshotRunner, type SnapshotRunner } from './snapshot-runner.ts';

export const CURRENT_FILE = 'CURRENT.json';

export interface PublishedPointer {
  version: number;
  /** file name inside the directory */
  file: string;
  as_of: string;
  published_at: string;
  /** seconds the copy took */
  copy_seconds: number;
  bytes: number;
}

export async function readPointer(dir: string): Promise<PublishedPointer | null> {
  try {
    return JSON.parse(await readFile(join(dir, CURRENT_FILE), 'utf8')) as PublishedPointer;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
}

/**
 * Publish the builder's latest committed analytics state (the database of `instance`) to `dir`. Returns the
 * pointer written, or the current one when that version is published already.
 */
export async function publishAnalytics(instance: DuckDBInstance, dir: string, opts: { keep?: number; graceMs?: number; now?: () => Date } = {}): Promise<PublishedPointer> {
  await mkdir(dir, { recursive: true });
  const now = opts.now ?? (() => new Date());
  const conn = await instance.connect();
  const tmp = join(dir, `publishing-${process.pid}-${Date.now()}.duckdb`);
  const t0 = performance.now();
  try {
    const [{ db }] = await queryRows<{ db: string }>(conn, `SELECT current_database() AS db`) as [{ db: string }];
    const [meta] = await queryRows<{ version: number; as_of: Date }>(conn, `SELECT version, as_of FROM a_meta LIMIT 1`);
    const current = await readPointer(dir);
    if (meta && current && current.version >= Number(meta.version)) return current;
    await conn.run(`ATTACH ${sqlString(tmp)} AS publishing`);
    try {
      // one statement: a consistent copy of one committed state, whatever the builder commits meanwhile
      await conn.run(`COPY FROM DATABASE ${db} TO publishing`);
      await conn.run(`CHECKPOINT publishing`);
      const [copied] = await queryRows<{ version: number; as_of: Date }>(conn, `SELECT version, as_of FROM publishing.a_meta LIMIT 1`);
      if (!copied) throw new Error('the database has no analytics state (a_meta) to publish');
      await conn.run(`DETACH publishing`);
      const version = Number(copied.version);
      const file = `v${version}.duckdb`;
      await rename(tmp, join(dir, file));
      const pointer: PublishedPointer = {
        version,
        file,
        as_of: new Date(copied.as_of).toISOString(),
        published_at: now().toISOString(),
        copy_seconds: (performance.now() - t0) / 1000,
        bytes: statSync(join(dir, file)).size,
      };
      const aside = join(dir, `${CURRENT_FILE}.${process.pid}.tmp`);
      await writeFile(aside, JSON.stringify(pointer));
      await rename(aside, join(dir, CURRENT_FILE));
      await prune(dir, pointer.file, opts.keep ?? 3, opts.graceMs ?? 2 * 60_000, now().getTime());
      return pointer;
    } catch (e) {
      await conn.run(`DETACH DATABASE IF EXISTS publishing`).catch(() => {});
      throw e;
    }
  } finally {
    conn.closeSync();
    await rm(tmp, { force: true });
    await rm(`${tmp}.wal`, { force: true });
  }
}

async function prune(dir: string, current: string, keep: number, graceMs: number, nowMs: number): Promise<void> {
  const files = readdirSync(dir)
    .filter((f) => /^v\d+\.duckdb$/.test(f))
    .sort((a, b) => Number(b.slice(1, -7)) - Number(a.slice(1, -7)));
  for (const f of files.slice(keep)) {
    if (f === current) continue;
    const p = join(dir, f);
    if (nowMs - statSync(p).mtimeMs < graceMs) continue;
    await rm(p, { force: true });
    await rm(`${p}.wal`, { force: true });
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Readers
// ---------------------------------------------------------------------------------------------------------------

interface Entry {
  version: number;
  instance: DuckDBInstance;
  runner: SnapshotRunner;
  /** requests, scopes and calls still reading this file */
  inflight: number;
  retired: boolean;
}

type ResLike = { once(ev: 'finish' | 'close', f: () => void): unknown };

/** A SnapshotRunner over whichever published file is current when a request starts. */
export interface SwitchingRunner extends SnapshotRunner {
  /** the version new requests read */
  version(): number;
  /** the current file's DuckDB instance (for readers that open their own connections, e.g. the rankers) */
  instance(): DuckDBInstance;
}

export class PublishedAnalytics extends EventEmitter<{ switched: [PublishedPointer, number]; error: [Error] }> {
  private current!: Entry;
  private pointer!: PublishedPointer;
  private readonly als = new AsyncLocalStorage<Entry>();
  private timer: NodeJS.Timeout | null = null;
  private checking: Promise<boolean> | null = null;
  readonly db: SwitchingRunner;

  private constructor(
    readonly dir: string,
    private readonly opts: { threads: number; poolSize: number },
  ) {
    super();
    const self = this;
    const pick = (): Entry => this.als.getStore() ?? this.current;
    // a call outside any request still holds its file open until it returns
    const counted = async <T>(f: (e: Entry) => Promise<T>): Promise<T> => {
      const inScope = this.als.getStore();
      const e = inScope ?? this.current;
      if (inScope) return f(e);
      e.inflight++;
      try {
        return await f(e);
      } finally {
        this.release(e);
      }
    };
    this.db = {
      all: <T>(sql: string, params?: readonly unknown[]) => counted((e) => e.runner.all<T>(sql, params)),
      run: (sql: string, params?: readonly unknown[]) => counted((e) => e.runner.run(sql, params)),
      scope<T>(fn: () => Promise<T>): Promise<T> {
        const e = self.current;
        e.inflight++;
        return self.als.run(e, () => e.runner.scope(fn)).finally(() => self.release(e));
      },
      middleware(req: unknown, res: ResLike, next: () => void) {
        const e = self.current;
        e.inflight++;
        let done = false;
        const end = () => {
          if (done) return;
          done = true;
          self.release(e);
        };
        res.once('finish', end);
        res.once('close', end);
        self.als.run(e, () => e.runner.middleware(req, res, next));
      },
      stats: () => pick().runner.stats(),
      // an API replica builds nothing: its readers wait for no builder, but the interface is the same
      readersIdle: (maxWaitMs: number) => self.current.runner.readersIdle(maxWaitMs),
      // its files are written by no one: a commit here is the current file's runner's
      acrossCommit: <T>(commit: () => Promise<T>) => self.current.runner.acrossCommit(commit),
      close: () => void self.close(),
      version: () => self.current.version,
      instance: () => self.current.instance,
    };
  }

  /** Open the current published state of `dir` (waiting up to `waitMs` for the builder's first one). */
  static async open(dir: string, opts: { threads?: number; poolSize?: number; waitMs?: number } = {}): Promise<PublishedAnalytics> {
    const p = new PublishedAnalytics(dir, { threads: opts.threads ?? 2, poolSize: opts.poolSize ?? 8 });
    const until = Date.now() + (opts.waitMs ?? 0);
    let pointer = await readPointer(dir);
    while (!pointer && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 250));
      pointer = await readPointer(dir);
    }
    if (!pointer) throw new Error(`no published analytics state in ${dir} (is the builder running with the same PUBLISH_DIR?)`);
    p.current = await p.openEntry(pointer);
    p.pointer = pointer;
    return p;
  }

  published(): PublishedPointer {
    return this.pointer;
  }

  /** Run fn with the current file's DuckDB instance, kept open until fn settles (the rankers load from it). */
  async withInstance<T>(fn: (instance: DuckDBInstance) => Promise<T>): Promise<T> {
    const e = this.current;
    e.inflight++;
    try {
      return await fn(e.instance);
    } finally {
      this.release(e);
    }
  }

  private async openEntry(pointer: PublishedPointer): Promise<Entry> {
    const path = join(this.dir, pointer.file);
    if (!existsSync(path)) throw new Error(`published file ${path} is missing`);
    // The builder's DuckDB lets go of a file it detached once its transactions that began while the file was
    // attached have ended (an analytics refresh: a second or so), so a replica quick to the pointer can find it still
    // locked: it tries again for a while before it keeps serving the file it has.
    let opened: Awaited<ReturnType<typeof openDuckDB>> | undefined;
    const deadline = Date.now() + 15_000;
    for (let wait = 50; !opened; wait = Math.min(wait * 2, 1000)) {
      try {
        opened = await openDuckDB({ path, readOnly: true, threads: this.opts.threads });
      } catch (e) {
        if (!/Could not set lock/i.test((e as Error).message) || Date.now() > deadline) throw e;
        await new Promise((r) => setTimeout(r, wait));
      }
    }
    const { instance, conn } = opened;
    conn.closeSync();
    return { version: pointer.version, instance, runner: snapshotRunner(instance, { size: this.opts.poolSize }), inflight: 0, retired: false };
  }

  private release(e: Entry): void {
    e.inflight--;
    if (e.retired && e.inflight <= 0) this.closeEntry(e);
  }

  private closeEntry(e: Entry): void {
    e.runner.close();
    try {
      e.instance.closeSync();
    } catch {
      /* already closed */
    }
  }

  /** Switch to a newer published version if there is one; true when it switched. */
  check(): Promise<boolean> {
    this.checking ??= (async () => {
      try {
        const pointer = await readPointer(this.dir);
        if (!pointer || pointer.version <= this.current.version) return false;
        const t = performance.now();
        const next = await this.openEntry(pointer);
        const old = this.current;
        this.current = next;
        this.pointer = pointer;
        old.retired = true;
        if (old.inflight <= 0) this.closeEntry(old);
        this.emit('switched', pointer, performance.now() - t);
        return true;
      } catch (e) {
        this.emit('error', e as Error);
        return false;
      } finally {
        this.checking = null;
      }
    })();
    return this.checking;
  }

  /** Poll the pointer every `everyMs`. */
  start(everyMs = 1000): void {
    this.timer ??= setInterval(() => void this.check(), everyMs);
    this.timer.unref();
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.checking;
    this.current.retired = true;
    if (this.current.inflight <= 0) this.closeEntry(this.current);
  }
}
