/**
 * Reads that never see half an analytics update. The builder commits each refresh as one DuckDB transaction; a
 * reader that ran each statement on its own could read a_meta of version N and a_board of version N + 1. Here every
 * request (an async scope: an HTTP request, an MCP call, a job step) reads inside ONE read transaction on a pooled
 * connection, so all its statements see the same committed version: one as-of.
 *
 * - `scope(fn)` runs fn with a scope; its first query takes a connection from the pool and BEGINs, later ones reuse
 *   it (one at a time: DuckDB runs one statement per connection), and the scope's end COMMITs and returns the
 *   connection. A scope that never queries costs nothing.
 * - A long-lived scope (a stream or a slow client) renews its snapshot after `maxScopeMs`, so it never pins an old
 *   version for long; each renewal is again one consistent version.
 * - Outside a scope a query runs in its own autocommit transaction, as before.
 * - `middleware` opens a scope per HTTP request, ended when the response is finished or the client has gone.
 * - `readersIdle` waits (a while at most) until no reader is mid-request: the builder's JavaScript steps let requests
 *   go first (readersFirstPause), since each of a request's statements otherwise waits for the step running when it
 *   completes, and a preset ranking makes five or six.
 * - `acrossCommit` runs the builder's COMMIT with read transactions begun just before it: DuckDB commits a large
 *   transaction's changes under the lock every new transaction needs to start, and a request that began in that
 *   stretch waited for it (session 17's slowest presets at full scale, 5.9 and 7.9 s, were sent during a commit). A
 *   request that arrives meanwhile reads the version before the commit, as it would have a moment earlier; every
 *   request after the commit reads the new one.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import type { QueryRunner } from '../core/query.ts';
import { duckRunner } from './runner.ts';
import { yieldToEventLoop } from '../core/steps.ts';

/** A scope older than this is not waited for by readersIdle (a stream, a slow client: they would hold it always). */
export const READER_FRESH_MS = 5_000;
/** How long a builder's step waits at most for readers (so a steady flow of requests cannot stall a refresh). */
export const READERS_FIRST_MAX_WAIT_MS = 25;

interface Scope {
  conn: DuckDBConnection | null;
  /** statements of the scope, chained: one at a time on its connection */
  chain: Promise<unknown>;
  openedAt: number;
  /** when the scope began (its request arrived) */
  begunAt: number;
  ended: boolean;
}

export interface SnapshotRunner extends QueryRunner {
  /** Run fn inside one read snapshot; the snapshot ends when fn's promise settles. */
  scope<T>(fn: () => Promise<T>): Promise<T>;
  /** Express-style middleware: one snapshot per request. */
  middleware: (req: unknown, res: { once(ev: 'finish' | 'close', f: () => void): unknown }, next: () => void) => void;
  /** Connections currently open (pool size) and lent out; readers mid-request (readersIdle waits for them). */
  stats(): { open: number; busy: number; waiting: number; readers: number; begunAhead: number; tookBegunAhead: number };
  /**
   * Resolves once no reader is mid-request — no scope begun less than READER_FRESH_MS ago is still open and no
   * statement outside a scope runs — or after `maxWaitMs`, whichever comes first.
   */
  readersIdle(maxWaitMs: number): Promise<void>;
  /**
   * Run a writer's commit with the pool's free connections in read transactions begun before it: scopes that start
   * while it runs take one (they read the version before the commit); those left are ended once it settles, before
   * this resolves (a transaction older than the commit would hold back the checkpoint after it).
   */
  acrossCommit<T>(commit: () => Promise<T>): Promise<T>;
  close(): void;
}

export interface SnapshotRunnerOptions {
  /** connections in the pool (requests beyond wait for one) */
  size?: number;
  /** a scope older than this takes a fresh snapshot at its next statement */
  maxScopeMs?: number;
  /** a scope older than this is no longer waited for by readersIdle: default READER_FRESH_MS */
  readerFreshMs?: number;
}

export function snapshotRunner(instance: DuckDBInstance, opts: SnapshotRunnerOptions = {}): SnapshotRunner {
  const size = opts.size ?? 8;
  const maxScopeMs = opts.maxScopeMs ?? 30_000;
  const readerFreshMs = opts.readerFreshMs ?? READER_FRESH_MS;
  const als = new AsyncLocalStorage<Scope>();
  const idle: DuckDBConnection[] = [];
  const waiters: ((c: DuckDBConnection) => void)[] = [];
  let open = 0;
  let busy = 0;
  let closed = false;
  // readers mid-request: the open scopes, and the statements running outside any scope
  const scopes = new Set<Scope>();
  let loose = 0;
  // connections in a read transaction begun ahead of a writer's commit (acrossCommit), and how many scopes took one
  let begunAhead: DuckDBConnection[] = [];
  let tookBegunAhead = 0;
  const readers = (now: number): number => {
    let n = loose;
    for (const s of scopes) if (now - s.begunAt < readerFreshMs) n++;
    return n;
  };

  async function acquire(): Promise<DuckDBConnection> {
    const c = idle.pop();
    if (c) {
      busy++;
      return c;
    }
    if (open < size) {
      open++;
      busy++;
      try {
        return await instance.connect();
      } catch (e) {
        open--;
        busy--;
        throw e;
      }
    }
    // handed over by release(), still counted as busy
    return new Promise((resolve) => waiters.push(resolve));
  }

  function release(c: DuckDBConnection): void {
    const w = waiters.shift();
    if (w) return w(c);
    busy--;
    if (closed) c.closeSync();
    else idle.push(c);
  }

  /** COMMIT (a read transaction: nothing to write) and give the connection back. */
  async function endSnapshot(s: Scope): Promise<void> {
    const c = s.conn;
    if (!c) return;
    s.conn = null;
    try {
      await c.run('COMMIT');
    } catch {
      await c.run('ROLLBACK').catch(() => {});
    }
    release(c);
  }

  async function snapshotConn(s: Scope): Promise<DuckDBConnection> {
    if (s.conn && Date.now() - s.openedAt > maxScopeMs) await endSnapshot(s);
    if (!s.conn && begunAhead.length) {
      s.conn = begunAhead.pop()!;
      busy++;
      tookBegunAhead++;
      s.openedAt = Date.now();
    }
    if (!s.conn) {
      const c = await acquire();
      try {
        await c.run('BEGIN TRANSACTION');
      } catch (e) {
        release(c);
        throw e;
      }
      s.conn = c;
      s.openedAt = Date.now();
    }
    return s.conn;
  }

  /** Run one statement: in the current scope's snapshot, else on a pooled connection in autocommit. */
  function exec<T>(f: (c: DuckDBConnection) => Promise<T>): Promise<T> {
    const s = als.getStore();
    if (!s || s.ended) {
      loose++;
      return (async () => {
        try {
          const c = await acquire();
          try {
            return await f(c);
          } finally {
            release(c);
          }
        } finally {
          loose--;
        }
      })();
    }
    const next = s.chain.then(async () => {
      const c = await snapshotConn(s);
      try {
        return await f(c);
      } catch (e) {
        // a failed statement aborts DuckDB's transaction: end it, so the scope's next statement can run
        await endSnapshot(s);
        throw e;
      }
    });
    s.chain = next.catch(() => undefined);
    return next;
  }

  function begin(): Scope {
    const s: Scope = { conn: null, chain: Promise.resolve(), openedAt: 0, begunAt: performance.now(), ended: false };
    scopes.add(s);
    return s;
  }

  function finish(s: Scope): void {
    if (s.ended) return;
    s.ended = true;
    scopes.delete(s);
    // after the statements already queued; a failed one has been reported to its caller
    s.chain = s.chain.then(() => endSnapshot(s)).catch(() => undefined);
  }

  return {
    all: <T>(sql: string, params?: readonly unknown[]) => exec((c) => duckRunner(c).all<T>(sql, params)),
    run: (sql: string, params?: readonly unknown[]) => exec((c) => duckRunner(c).run(sql, params)),
    async scope<T>(fn: () => Promise<T>): Promise<T> {
      const s = begin();
      try {
        return await als.run(s, fn);
      } finally {
        finish(s);
        await s.chain;
      }
    },
    middleware(_req, res, next) {
      const s = begin();
      const done = () => finish(s);
      res.once('finish', done);
      res.once('close', done);
      als.run(s, next);
    },
    stats: () => ({ open, busy, waiting: waiters.length, readers: readers(performance.now()), begunAhead: begunAhead.length, tookBegunAhead }),
    async readersIdle(maxWaitMs) {
      // polled each millisecond: a request's statements follow one another within one turn of the loop, so a
      // notification at the moment one ends would wake the builder before the next begins
      const until = performance.now() + maxWaitMs;
      while (readers(performance.now()) > 0 && performance.now() < until) await new Promise((r) => setTimeout(r, 1));
    },
    async acrossCommit(commit) {
      // the pool's free connections, opened up to its size, each in a read transaction that has started on the
      // database (BEGIN alone starts it lazily, at the first statement: which would wait for the commit's lock)
      const ahead: DuckDBConnection[] = [];
      try {
        while (!closed && waiters.length === 0 && (idle.length || open < size)) {
          const c = await acquire();
          busy--;
          try {
            await c.run('BEGIN TRANSACTION');
            await c.run('SELECT 1 FROM information_schema.schemata LIMIT 1');
            ahead.push(c);
          } catch {
            await c.run('ROLLBACK').catch(() => {});
            busy++;
            release(c);
            break;
          }
        }
      } catch {
        // no connection could be opened: the commit runs without
      }
      begunAhead = ahead;
      try {
        return await commit();
      } finally {
        const left = begunAhead;
        begunAhead = [];
        for (const c of left) {
          await c.run('COMMIT').catch(() => c.run('ROLLBACK').catch(() => {}));
          busy++;
          release(c);
        }
      }
    },
    close() {
      closed = true;
      for (const c of idle.splice(0)) c.closeSync();
    },
  };
}

/**
 * A pause between a builder's JavaScript steps that lets readers go first: a turn of the event loop, then until no
 * reader is mid-request (at most `maxWaitMs`). Without it, a request's every statement that completed during a step
 * waited for that step (~100 ms each on a busy machine).
 */
export function readersFirstPause(readers: Pick<SnapshotRunner, 'readersIdle'>, maxWaitMs = READERS_FIRST_MAX_WAIT_MS): () => Promise<void> {
  return async () => {
    await yieldToEventLoop();
    await readers.readersIdle(maxWaitMs);
  };
}
