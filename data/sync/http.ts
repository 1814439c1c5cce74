/**
 * HTTP for the venue's public sources, through undici: a cap on requests in flight per source, retries with
 * exponential backoff and full jitter on what a public API answers when busy or broken (429 with Retry-After, 408,
 * 5xx, a reset connection, a truncated body), and one cool-down for the whole source after a 429 (every request
 * waits the Retry-After, not only the one that got it).
 */
import { Agent, request, type Dispatcher } from 'undici';

export interface SourceOptions {
  /** a name for logs and errors ('gamma', 'rpc') */
  name: string;
  /** base URL; request paths are resolved against it */
  baseUrl: string;
  /** requests in flight at most (default 4) */
  concurrency?: number;
  /** attempts per request before giving up (default 8) */
  maxAttempts?: number;
  /** first backoff step (default 250 ms); step k waits a uniform draw in [0, min(max, base * 2^k)] */
  baseDelayMs?: number;
  /** backoff ceiling, and the longest Retry-After honoured as given (default 60 s) */
  maxDelayMs?: number;
  /** headers + body timeout per attempt (default 30 s) */
  timeoutMs?: number;
  /** jitter source (tests pass a seeded one) */
  random?: () => number;
  sleep?: (ms: number) => Promise<void>;
  /** every retry, with why */
  onRetry?: (e: { source: string; attempt: number; delayMs: number; reason: string }) => void;
}

export class SourceError extends Error {
  constructor(
    message: string,
    readonly source: string,
    readonly status: number | null,
    readonly retryable: boolean,
  ) {
    super(message);
  }
}

export interface SourceStats {
  requests: number;
  retries: number;
  throttled: number;
  failures: number;
}

const RETRYABLE_STATUS = new Set([408, 425, 429, 500, 502, 503, 504]);

/** Retry-After as milliseconds: delta-seconds or an HTTP date; null when absent or unreadable. */
export function retryAfterMs(header: string | string[] | undefined, now = Date.now()): number | null {
  const v = Array.isArray(header) ? header[0] : header;
  if (v === undefined || v.trim() === '') return null;
  if (/^\d+(\.\d+)?$/.test(v.trim())) return Math.round(Number(v) * 1000);
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/** The k-th backoff delay (k from 0): full jitter over an exponentially growing, capped window. */
export function backoffMs(k: number, base: number, max: number, random: () => number): number {
  return Math.floor(random() * Math.min(max, base * 2 ** k));
}

export class HttpSource {
  readonly name: string;
  private readonly base: URL;
  private readonly agent: Dispatcher;
  private readonly o: Required<Omit<SourceOptions, 'onRetry' | 'name' | 'baseUrl'>> & Pick<SourceOptions, 'onRetry'>;
  private inFlight = 0;
  private readonly waiting: (() => void)[] = [];
  private coolUntil = 0;
  private readonly counters: SourceStats = { requests: 0, retries: 0, throttled: 0, failures: 0 };

  constructor(opts: SourceOptions) {
    this.name = opts.name;
    this.base = new URL(opts.baseUrl.endsWith('/') ? opts.baseUrl : `${opts.baseUrl}/`);
    this.o = {
      concurrency: opts.concurrency ?? 4,
      maxAttempts: opts.maxAttempts ?? 8,
      baseDelayMs: opts.baseDelayMs ?? 250,
      maxDelayMs: opts.maxDelayMs ?? 60_000,
      timeoutMs: opts.timeoutMs ?? 30_000,
      random: opts.random ?? Math.random,
      sleep: opts.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms))),
      onRetry: opts.onRetry,
    };
    this.agent = new Agent({ connections: this.o.concurrency, headersTimeout: this.o.timeoutMs, bodyTimeout: this.o.timeoutMs });
  }

  stats(): SourceStats {
    return { ...this.counters };
  }

  async close(): Promise<void> {
    await this.agent.close();
  }

  /** GET a JSON document; query values that are arrays repeat the key (`?id=1&id=2`). */
  getJson(path: string, query: Record<string, string | number | boolean | readonly string[] | undefined> = {}): Promise<unknown> {
    const url = new URL(path.replace(/^\//, ''), this.base);
    for (const [k, v] of Object.entries(query)) {
      if (v === undefined) continue;
      if (Array.isArray(v)) for (const x of v) url.searchParams.append(k, String(x));
      else url.searchParams.set(k, String(v));
    }
    return this.send('GET', url, undefined);
  }

  /** POST a JSON body, read a JSON answer. */
  postJson(path: string, body: unknown): Promise<unknown> {
    // '' is the base URL itself (a JSON-RPC endpoint), without the slash the base gets for resolving paths
    const url = path === '' ? new URL(this.base.href.replace(/\/$/, '')) : new URL(path.replace(/^\//, ''), this.base);
    return this.send('POST', url, JSON.stringify(body));
  }

  private async acquire(): Promise<void> {
    if (this.inFlight < this.o.concurrency) {
      this.inFlight++;
      return;
    }
    await new Promise<void>((r) => this.waiting.push(r));
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.inFlight--;
  }

  private async send(method: 'GET' | 'POST', url: URL, body: string | undefined): Promise<unknown> {
    for (let attempt = 1; ; attempt++) {
      const cool = this.coolUntil - Date.now();
      if (cool > 0) await this.o.sleep(cool);
      await this.acquire();
      let failure: { reason: string; status: number | null; retryAfter: number | null; retryable: boolean };
      try {
        this.counters.requests++;
        const res = await request(url, {
          method,
          dispatcher: this.agent,
          headers: { accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
          body,
        });
        const text = await res.body.text();
        if (res.statusCode >= 200 && res.statusCode < 300) {
          try {
            return JSON.parse(text);
          } catch {
            // a truncated or garbled body: the same request again usually comes back whole
            failure = { reason: `unreadable JSON (${text.length} bytes)`, status: res.statusCode, retryAfter: null, retryable: true };
          }
        } else {
          const retryAfter = retryAfterMs(res.headers['retry-after']);
          if (res.statusCode === 429) this.counters.throttled++;
          failure = { reason: `HTTP ${res.statusCode}${text ? `: ${text.slice(0, 200)}` : ''}`, status: res.statusCode, retryAfter, retryable: RETRYABLE_STATUS.has(res.statusCode) };
        }
      } catch (e) {
        failure = { reason: (e as Error).message || String(e), status: null, retryAfter: null, retryable: true };
      } finally {
        this.release();
      }
      if (!failure.retryable || attempt >= this.o.maxAttempts) {
        this.counters.failures++;
        throw new SourceError(`${this.name}: ${method} ${url.pathname}${url.search}: ${failure.reason} (attempt ${attempt})`, this.name, failure.status, failure.retryable);
      }
      const jitter = backoffMs(attempt - 1, this.o.baseDelayMs, this.o.maxDelayMs, this.o.random);
      // a server that names its wait is obeyed (plus a little jitter so a crowd of clients does not return at once)
      const delayMs = failure.retryAfter !== null ? Math.min(failure.retryAfter, this.o.maxDelayMs) + Math.floor(this.o.random() * this.o.baseDelayMs) : jitter;
      if (failure.status === 429) this.coolUntil = Math.max(this.coolUntil, Date.now() + delayMs);
      this.counters.retries++;
      this.o.onRetry?.({ source: this.name, attempt, delayMs, reason: failure.reason });
      await this.o.sleep(delayMs);
    }
  }
}

/** A JSON-RPC 2.0 error answered by the node (HTTP 200 with an `error`): not retried here, the caller decides. */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

/** JSON-RPC over an HttpSource (an Ethereum node: eth_blockNumber, eth_getLogs, eth_getBlockByNumber). */
export class JsonRpc {
  private id = 0;
  /** false once the node refused a batch: calls go one by one from then on */
  private batching = true;
  constructor(readonly source: HttpSource) {}

  /**
   * Several calls in one HTTP request (a JSON-RPC batch), answers in call order; a node that does not take batches
   * gets them one by one. An error answered for any call throws it (the caller retries the lot).
   */
  async batch<T>(calls: { method: string; params: unknown[] }[]): Promise<T[]> {
    const oneByOne = () => Promise.all(calls.map((c) => this.call<T>(c.method, c.params)));
    if (calls.length === 0) return [];
    if (!this.batching || calls.length === 1) return oneByOne();
    const first = this.id + 1;
    const body = calls.map((c) => ({ jsonrpc: '2.0', id: ++this.id, method: c.method, params: c.params }));
    const res = await this.source.postJson('', body);
    if (!Array.isArray(res)) {
      // a node without batches answers one error object: from now on, one call a request
      this.batching = false;
      return oneByOne();
    }
    const byId = new Map<number, { result?: T; error?: { code: number; message: string; data?: unknown } }>();
    for (const r of res as { id: number; result?: T; error?: { code: number; message: string } }[]) byId.set(Number(r.id), r);
    return calls.map((c, i) => {
      const r = byId.get(first + i);
      if (!r) throw new RpcError(-32603, `${c.method}: the batch answer lacks call ${i}`);
      if (r.error) throw new RpcError(Number(r.error.code), String(r.error.message), r.error.data);
      return r.result as T;
    });
  }

  async call<T>(method: string, params: unknown[]): Promise<T> {
    const res = (await this.source.postJson('', { jsonrpc: '2.0', id: ++this.id, method, params })) as { result?: T; error?: { code: number; message: string; data?: unknown } };
    if (res && typeof res === 'object' && res.error) throw new RpcError(Number(res.error.code), String(res.error.message), res.error.data);
    if (!res || typeof res !== 'object' || !('result' in res)) throw new RpcError(-32603, `${method}: an answer without result or error`);
    return res.result as T;
  }
}
