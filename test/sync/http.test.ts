/**
 * The sources' HTTP client against a real server on loopback: what it retries (429 with Retry-After, 5xx, a
 * truncated body), what it does not (4xx), the cap on requests in flight, and the backoff's bounds.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpSource, JsonRpc, RpcError, SourceError, backoffMs, retryAfterMs } from '../../data/sync/http.ts';

type Handler = (req: IncomingMessage, res: ServerResponse, n: number) => void;
let handler: Handler = (_q, res) => res.end('{}');
let hits = 0;
let inFlight = 0;
let maxInFlight = 0;
const server = createServer((req, res) => {
  hits++;
  inFlight++;
  maxInFlight = Math.max(maxInFlight, inFlight);
  res.on('finish', () => inFlight--);
  req.resume();
  req.on('end', () => handler(req, res, hits));
});
let base = '';

beforeAll(async () => {
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((ok) => server.close(() => ok())));

const reset = (h: Handler) => {
  handler = h;
  hits = 0;
  maxInFlight = 0;
};
const source = (o: Partial<ConstructorParameters<typeof HttpSource>[0]> = {}) => new HttpSource({ name: 'test', baseUrl: base, baseDelayMs: 5, maxDelayMs: 2000, ...o });

describe('HttpSource', () => {
  it('waits the Retry-After of a 429 (for the whole source) and then succeeds', async () => {
    const times: number[] = [];
    reset((_q, res, n) => {
      times.push(Date.now());
      if (n === 1) {
        res.writeHead(429, { 'retry-after': '1' });
        return res.end('slow down');
      }
      res.end(JSON.stringify({ ok: n }));
    });
    const s = source();
    expect(await s.getJson('x')).toEqual({ ok: 2 });
    expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(990);
    expect(s.stats()).toMatchObject({ requests: 2, retries: 1, throttled: 1, failures: 0 });
    await s.close();
  });

  it('retries 5xx and a truncated body; gives up after maxAttempts with a clear error', async () => {
    reset((_q, res, n) => {
      if (n === 1) return res.writeHead(503).end();
      if (n === 2) return res.end('{"markets": [1, 2');
      res.end('{"markets": [1, 2, 3]}');
    });
    const s = source();
    expect(await s.getJson('markets')).toEqual({ markets: [1, 2, 3] });
    expect(s.stats().retries).toBe(2);
    reset((_q, res) => res.writeHead(502).end('bad gateway'));
    const t = source({ maxAttempts: 3 });
    const e = await t.getJson('markets').catch((x: unknown) => x);
    expect(e).toBeInstanceOf(SourceError);
    expect((e as SourceError).message).toMatch(/HTTP 502.*attempt 3/);
    expect(hits).toBe(3);
    await s.close();
    await t.close();
  });

  it('does not retry a 4xx other than 408/425/429', async () => {
    reset((_q, res) => res.writeHead(422).end('{"error":"offset is not supported"}'));
    const s = source();
    const e = (await s.getJson('markets', { offset: 5 }).catch((x: unknown) => x)) as SourceError;
    expect(e.status).toBe(422);
    expect(e.retryable).toBe(false);
    expect(hits).toBe(1);
    await s.close();
  });

  it('keeps at most `concurrency` requests in flight', async () => {
    reset((_q, res) => setTimeout(() => res.end('{}'), 40));
    const s = source({ concurrency: 3 });
    await Promise.all(Array.from({ length: 12 }, (_, i) => s.getJson(`r${i}`)));
    expect(hits).toBe(12);
    expect(maxInFlight).toBe(3);
    await s.close();
  });

  it('repeats array query values and sends JSON-RPC to the base URL itself', async () => {
    const seen: string[] = [];
    reset((req, res) => {
      seen.push(`${req.method} ${req.url}`);
      res.end(req.method === 'POST' ? '{"jsonrpc":"2.0","id":1,"error":{"code":-32005,"message":"block range is too large"}}' : '{}');
    });
    const s = source();
    await s.getJson('markets/keyset', { clob_token_ids: ['1', '2'], closed: true, cursor: undefined });
    const rpc = new JsonRpc(new HttpSource({ name: 'rpc', baseUrl: `${base}/rpc` }));
    const e = (await rpc.call('eth_getLogs', [{}]).catch((x: unknown) => x)) as RpcError;
    expect(e).toBeInstanceOf(RpcError);
    expect(e.code).toBe(-32005);
    expect(seen).toEqual(['GET /markets/keyset?clob_token_ids=1&clob_token_ids=2&closed=true', 'POST /rpc']);
    await s.close();
    await rpc.source.close();
  });
});

describe('JsonRpc.batch', () => {
  const node = (batches: boolean): Handler => (req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const msg = JSON.parse(body) as { id: number; params: string[] } | { id: number; params: string[] }[];
      const answer = (m: { id: number; params: string[] }) => ({ jsonrpc: '2.0', id: m.id, result: `block ${Number(m.params[0])}` });
      if (Array.isArray(msg)) res.end(JSON.stringify(batches ? [...msg].reverse().map(answer) : { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'batches not supported' } }));
      else res.end(JSON.stringify(answer(msg)));
    });
  };
  const calls = [3, 1, 2].map((n) => ({ method: 'eth_getBlockByNumber', params: [`0x${n.toString(16)}`, false] }));

  it('sends the calls in one request and returns the answers in call order (whatever order the node answers in)', async () => {
    handler = () => {};
    server.removeAllListeners('request');
    server.on('request', (req, res) => {
      hits++;
      node(true)(req, res, hits);
    });
    hits = 0;
    const rpc = new JsonRpc(new HttpSource({ name: 'rpc', baseUrl: `${base}/rpc` }));
    expect(await rpc.batch(calls)).toEqual(['block 3', 'block 1', 'block 2']);
    expect(hits).toBe(1);
    await rpc.source.close();
  });

  it('falls back to one call a request when the node refuses batches, and stays there', async () => {
    server.removeAllListeners('request');
    server.on('request', (req, res) => {
      hits++;
      node(false)(req, res, hits);
    });
    hits = 0;
    const rpc = new JsonRpc(new HttpSource({ name: 'rpc', baseUrl: `${base}/rpc` }));
    expect(await rpc.batch(calls)).toEqual(['block 3', 'block 1', 'block 2']);
    expect(hits).toBe(4); // the refused batch, then three calls
    expect(await rpc.batch(calls)).toEqual(['block 3', 'block 1', 'block 2']);
    expect(hits).toBe(7);
    await rpc.source.close();
  });
});

describe('backoff and Retry-After', () => {
  it('Retry-After: seconds or an HTTP date', () => {
    expect(retryAfterMs('2')).toBe(2000);
    expect(retryAfterMs('0')).toBe(0);
    expect(retryAfterMs(new Date(10_000 + 5000).toUTCString(), 10_000)).toBe(5000);
    expect(retryAfterMs(undefined)).toBeNull();
    expect(retryAfterMs('soon')).toBeNull();
  });

  it('full jitter: every delay lies in [0, min(max, base * 2^k)] (brute-force bound)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 1, max: 5000 }), fc.integer({ min: 1, max: 120_000 }), fc.double({ min: 0, max: 0.999999, noNaN: true }), (k, base, max, r) => {
        const d = backoffMs(k, base, max, () => r);
        let cap = base;
        for (let i = 0; i < k && cap < max; i++) cap *= 2;
        return Number.isInteger(d) && d >= 0 && d <= Math.min(max, cap);
      }),
    );
  });
});
