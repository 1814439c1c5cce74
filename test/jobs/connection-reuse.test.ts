/**
 * Keep-alive connection reuse in pinnedPost (jobs/webhooks/ssrf.ts DeliveryAgentPool): real HTTPS receivers on
 * loopback, counting the TLS connections they accept. Reuse must save handshakes without ever lending a socket to a
 * request whose freshly checked address, SNI name or trust options differ, and without weakening the deadline, the
 * no-redirect rule or the body cap.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import https from 'node:https';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeDefaultDeliveryPool, defaultDeliveryPool, DeliveryAgentPool, pinnedPost, type Lookup, type PinnedPostOptions } from '../../jobs/webhooks/ssrf.ts';
import { selfSignedCert } from '../helpers/tls.ts';

interface Hit {
  url: string;
  /** which accepted connection (1-based, per receiver) carried the request */
  conn: number;
  /** the receiver's own address the request arrived on */
  local: string;
  connection: string | undefined;
}
interface Receiver {
  server: https.Server;
  port: number;
  hits: Hit[];
  /** TLS handshakes completed (secureConnection) and TCP connections accepted (connection) */
  tls: number;
  tcp: number;
  /** connections closed, by either side */
  closed: number;
}
type Handler = (req: IncomingMessage, res: ServerResponse, hit: Hit, r: Receiver) => void;

const fixed =
  (...addresses: string[]): Lookup =>
  async () =>
    addresses.map((address) => ({ address, family: net.isIP(address) }));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let cert: { key: string; cert: string };
const servers: https.Server[] = [];

/** Default handler: /ok 204, /redirect/302 to the `elsewhere` receiver, /hang never answers, /big endless body, /small 1 KiB body. */
const standard =
  (elsewhere: () => number): Handler =>
  (req, res) => {
    const path = req.url ?? '/';
    if (path.startsWith('/ok')) res.writeHead(204).end();
    else if (path.startsWith('/small')) res.writeHead(200).end(Buffer.alloc(1024, 0x62));
    else if (path.startsWith('/redirect/')) res.writeHead(Number(path.split('/')[2]), { location: `https://127.0.0.1:${elsewhere()}/stolen` }).end('moved');
    else if (path.startsWith('/hang')) {
      /* never answer */
    } else if (path.startsWith('/big')) {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const chunk = Buffer.alloc(16 * 1024, 0x61);
      let stopped = false;
      res.on('close', () => (stopped = true));
      const pump = () => {
        while (!stopped && res.write(chunk)) {
          /* until back-pressure */
        }
        if (!stopped) res.once('drain', pump);
      };
      pump();
    } else res.writeHead(404).end();
  };

async function receiver(host: string, port: number, handler: Handler, tweak?: (s: https.Server) => void): Promise<Receiver> {
  const connIds = new WeakMap<object, number>();
  const r: Receiver = { server: undefined as unknown as https.Server, port: 0, hits: [], tls: 0, tcp: 0, closed: 0 };
  const server = https.createServer({ key: cert.key, cert: cert.cert }, (req, res) => {
    req.resume();
    req.on('end', () => {
      const hit: Hit = { url: req.url ?? '', conn: connIds.get(req.socket) ?? -1, local: req.socket.localAddress ?? '', connection: req.headers.connection };
      r.hits.push(hit);
      handler(req, res, hit, r);
    });
  });
  server.on('connection', (s: net.Socket) => {
    r.tcp++;
    s.on('close', () => r.closed++);
  });
  server.on('secureConnection', (s: TLSSocket) => connIds.set(s, ++r.tls));
  tweak?.(server);
  r.server = server;
  servers.push(server);
  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(port, host, () => ok());
  });
  r.port = (server.address() as AddressInfo).port;
  return r;
}

/** waits until `cond` holds (polling), for server-side counters that settle asynchronously */
async function until(cond: () => boolean, ms = 2000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (cond()) return true;
    await sleep(10);
  }
  return cond();
}

let main: Receiver; // 127.0.0.1:P
let other: Receiver; // 127.0.0.2:P (same port: only the dialed address tells them apart)
let elsewhere: Receiver; // redirect Location target
let P = 0;
let opts: (extra?: PinnedPostOptions) => PinnedPostOptions;

beforeAll(async () => {
  cert = await selfSignedCert();
  elsewhere = await receiver('127.0.0.1', 0, (_q, res) => res.writeHead(204).end());
  main = await receiver('127.0.0.1', 0, standard(() => elsewhere.port));
  P = main.port;
  other = await receiver('127.0.0.2', P, standard(() => elsewhere.port));
  const allowlist = [`localhost:${P}`, `127.0.0.1:${P}`, `127.0.0.2:${P}`, `127.0.0.1:${elsewhere.port}`];
  opts = (extra = {}) => ({ allowlist, ca: cert.cert, lookup: fixed('127.0.0.1'), ...extra });
});

afterAll(async () => {
  closeDefaultDeliveryPool();
  for (const s of servers) {
    s.closeAllConnections();
    await new Promise<void>((r) => s.close(() => r()));
  }
});

/** runs `fn` with a fresh pool that is closed afterwards */
async function withPool<T>(fn: (pool: DeliveryAgentPool) => Promise<T>): Promise<T> {
  const pool = new DeliveryAgentPool();
  try {
    return await fn(pool);
  } finally {
    pool.close();
  }
}

describe('connection reuse (a): pooled posts share connections', () => {
  it('50 sequential posts through an explicit pool open one TLS connection', async () => {
    await withPool(async (pool) => {
      const tls0 = main.tls;
      const tcp0 = main.tcp;
      const hits0 = main.hits.length;
      for (let i = 0; i < 50; i++) {
        const r = await pinnedPost(`https://localhost:${P}/ok`, `{"i":${i}}`, {}, opts({ pool }));
        expect(r).toEqual({ status: 204, ok: true, address: '127.0.0.1' });
      }
      expect(main.hits.length - hits0).toBe(50);
      expect(main.tls - tls0).toBe(1);
      expect(main.tcp - tcp0).toBe(1);
      // keep-alive is asked for, not Connection: close
      expect(main.hits.slice(hits0).every((h) => h.connection === 'keep-alive')).toBe(true);
      expect(pool.stats()).toMatchObject({ active: 0, idle: 1, waiting: 0 });
    });
  });

  it('50 sequential posts with no pool option use the shared default pool (one TLS connection)', async () => {
    closeDefaultDeliveryPool();
    const tls0 = main.tls;
    for (let i = 0; i < 50; i++) expect((await pinnedPost(`https://localhost:${P}/ok`, '{}', {}, opts())).ok).toBe(true);
    expect(main.tls - tls0).toBe(1);
    expect(defaultDeliveryPool().stats().idle).toBe(1);
    closeDefaultDeliveryPool();
    expect(await until(() => main.closed === main.tcp)).toBe(true);
  });

  it('16 in flight: at most 16 connections for 160 posts, and responses with a body still return sockets to the pool', async () => {
    await withPool(async (pool) => {
      const tls0 = main.tls;
      for (let wave = 0; wave < 10; wave++) {
        const rs = await Promise.all(Array.from({ length: 16 }, (_, i) => pinnedPost(`https://localhost:${P}/${i % 2 ? 'ok' : 'small'}`, '{}', {}, opts({ pool }))));
        expect(rs.every((r) => r.ok)).toBe(true);
      }
      expect(main.tls - tls0).toBeLessThanOrEqual(16);
      expect(pool.stats().idle).toBe(main.tls - tls0);
    });
  });
});

describe('connection reuse (b): pool: false is one connection per post', () => {
  it('50 posts open 50 TLS connections, each with Connection: close', async () => {
    const tls0 = main.tls;
    const hits0 = main.hits.length;
    for (let i = 0; i < 50; i++) expect(await pinnedPost(`https://localhost:${P}/ok`, '{}', {}, opts({ pool: false }))).toEqual({ status: 204, ok: true, address: '127.0.0.1' });
    expect(main.tls - tls0).toBe(50);
    const hits = main.hits.slice(hits0);
    expect(new Set(hits.map((h) => h.conn)).size).toBe(50);
    expect(hits.every((h) => h.connection === 'close')).toBe(true);
  });
});

describe('connection reuse (c): the response body cap', () => {
  it('an endless body is cut at the cap, that socket is destroyed (not pooled), and the next post succeeds on a new connection', async () => {
    await withPool(async (pool) => {
      const tls0 = main.tls;
      expect((await pinnedPost(`https://localhost:${P}/ok`, '{}', {}, opts({ pool }))).ok).toBe(true);
      const closed0 = main.closed;
      const t0 = Date.now();
      // the pooled socket carries the capped response
      expect(await pinnedPost(`https://localhost:${P}/big`, '{}', {}, opts({ pool, timeoutMs: 5000 }))).toEqual({ status: 200, ok: true, address: '127.0.0.1' });
      expect(Date.now() - t0).toBeLessThan(2500);
      expect(main.tls - tls0).toBe(1);
      expect(await until(() => main.closed === closed0 + 1)).toBe(true);
      expect(pool.stats()).toMatchObject({ active: 0, idle: 0 });
      const hits0 = main.hits.length;
      expect(await pinnedPost(`https://localhost:${P}/ok`, '{}', {}, opts({ pool }))).toEqual({ status: 204, ok: true, address: '127.0.0.1' });
      expect(main.tls - tls0).toBe(2);
      expect(main.hits[hits0]!.conn).toBe(main.tls);
    });
  });

  it('a small body below the cap is read to the end and the socket is reused', async () => {
    await withPool(async (pool) => {
      const tls0 = main.tls;
      for (let i = 0; i < 5; i++) expect(await pinnedPost(`https://localhost:${P}/small`, '{}', {}, opts({ pool }))).toMatchObject({ ok: true, status: 200 });
      expect(main.tls - tls0).toBe(1);
      // a cap smaller than the body: destroyed, so the next request needs a new connection
      expect(await pinnedPost(`https://localhost:${P}/small`, '{}', {}, opts({ pool, maxResponseBytes: 100 }))).toMatchObject({ ok: true, status: 200 });
      expect(await pinnedPost(`https://localhost:${P}/small`, '{}', {}, opts({ pool }))).toMatchObject({ ok: true, status: 200 });
      expect(main.tls - tls0).toBe(2);
    });
  });
});

describe('connection reuse (d): a socket is only reused for the same checked address, SNI name and trust options', () => {
  it('two allowlisted loopback addresses (same name, same port) never share a socket', async () => {
    await withPool(async (pool) => {
      const m0 = { tls: main.tls, hits: main.hits.length };
      const o0 = { tls: other.tls, hits: other.hits.length };
      // the same host name answers alternately with two checked addresses (each is checked on every send)
      let n = 0;
      const alternating: Lookup = async () => [{ address: n++ % 2 === 0 ? '127.0.0.1' : '127.0.0.2', family: 4 }];
      for (let i = 0; i < 20; i++) {
        const r = await pinnedPost(`https://localhost:${P}/ok`, '{}', {}, opts({ pool, lookup: alternating }));
        expect(r).toEqual({ status: 204, ok: true, address: i % 2 === 0 ? '127.0.0.1' : '127.0.0.2' });
      }
      const mh = main.hits.slice(m0.hits);
      const oh = other.hits.slice(o0.hits);
      expect(mh).toHaveLength(10);
      expect(oh).toHaveLength(10);
      // every request arrived at the address it was checked for, one connection per address, reused
      expect(mh.every((h) => h.local === '127.0.0.1')).toBe(true);
      expect(oh.every((h) => h.local === '127.0.0.2')).toBe(true);
      expect(main.tls - m0.tls).toBe(1);
      expect(other.tls - o0.tls).toBe(1);
      expect(pool.stats().idle).toBe(2);
    });
  });

  it('rebinding with a warm pool: the new answer is checked again and refused; a pooled socket to the old address is not used', async () => {
    await withPool(async (pool) => {
      const hits0 = main.hits.length + other.hits.length;
      expect((await pinnedPost(`https://localhost:${P}/ok`, '{}', {}, opts({ pool }))).ok).toBe(true);
      expect(pool.stats().idle).toBe(1);
      for (const bad of ['10.0.0.1', '169.254.169.254', '127.0.0.3']) {
        const r = await pinnedPost(`https://localhost:${P}/ok`, '{}', {}, opts({ pool, lookup: fixed(bad) }));
        expect(r).toMatchObject({ ok: false, status: 0, error: `refused: address_not_public: ${bad}` });
        expect(r.address).toBeUndefined();
      }
      expect(main.hits.length + other.hits.length - hits0).toBe(1);
    });
  });

  it('the same address under a different SNI name (IP literal vs host name) gets its own connection', async () => {
    await withPool(async (pool) => {
      const tls0 = main.tls;
      for (let i = 0; i < 3; i++) {
        expect((await pinnedPost(`https://localhost:${P}/ok`, '{}', {}, opts({ pool }))).ok).toBe(true);
        expect((await pinnedPost(`https://127.0.0.1:${P}/ok`, '{}', {}, opts({ pool }))).ok).toBe(true);
      }
      expect(main.tls - tls0).toBe(2);
    });
  });

  it('a socket verified with a custom CA is not lent to a request without it (that one still fails verification)', async () => {
    await withPool(async (pool) => {
      expect((await pinnedPost(`https://localhost:${P}/ok`, '{}', {}, opts({ pool }))).ok).toBe(true);
      const tls0 = main.tls;
      const hits0 = main.hits.length;
      const r = await pinnedPost(`https://localhost:${P}/ok`, '{}', {}, { ...opts({ pool }), ca: undefined });
      expect(r).toMatchObject({ ok: false, status: 0 });
      expect(r.error).toMatch(/SELF_SIGNED|self[- ]signed|certificate/i);
      expect(main.hits.length).toBe(hits0);
      expect(main.tls).toBe(tls0); // the handshake was refused by the client
      // and the verified socket is still there for the next request with the CA
      expect((await pinnedPost(`https://localhost:${P}/ok`, '{}', {}, opts({ pool }))).ok).toBe(true);
      expect(main.tls).toBe(tls0);
    });
  });
});

describe('connection reuse (e): receivers that close keep-alive connections', () => {
  it('a receiver closing idle connections (short keepAliveTimeout, no Keep-Alive hint) does not fail the next post', async () => {
    const idle = await receiver(
      '127.0.0.1',
      0,
      (_q, res) => {
        // an explicit Connection header suppresses Node's "Keep-Alive: timeout=" hint, so the client keeps the socket
        // in its pool, unaware that the server will close it
        res.setHeader('connection', 'keep-alive');
        res.writeHead(204).end();
      },
      // Node closes an idle connection keepAliveTimeout + an internal 1 s buffer after the last response
      (s) => (s.keepAliveTimeout = 100),
    );
    const o = opts({ allowlist: [`127.0.0.1:${idle.port}`] });
    await withPool(async (pool) => {
      for (let i = 1; i <= 3; i++) {
        expect(await pinnedPost(`https://127.0.0.1:${idle.port}/ok`, '{}', {}, { ...o, pool })).toEqual({ ok: true, status: 204, address: '127.0.0.1' });
        expect(pool.stats().idle).toBe(1);
        // the server closes the idle pooled socket; the client notices the close and drops it from the pool
        expect(await until(() => idle.closed === i, 3000)).toBe(true);
        expect(await until(() => pool.stats().idle === 0)).toBe(true);
      }
      expect(idle.tls).toBe(3);
      expect(idle.hits).toHaveLength(3);
    });
  });

  it('a reused socket reset before any response is retried once, immediately, on a new connection', async () => {
    // the race a stale keep-alive socket produces: the server drops the connection just as the next request arrives
    const perSocket = new WeakMap<object, number>();
    const racing = await receiver('127.0.0.1', 0, (req, res) => {
      const n = (perSocket.get(req.socket) ?? 0) + 1;
      perSocket.set(req.socket, n);
      if (n > 1) req.socket.destroy();
      else res.writeHead(204).end();
    });
    const o = opts({ allowlist: [`127.0.0.1:${racing.port}`] });
    await withPool(async (pool) => {
      expect(await pinnedPost(`https://127.0.0.1:${racing.port}/ok`, '{}', {}, { ...o, pool })).toMatchObject({ ok: true, status: 204 });
      expect(racing.tls).toBe(1);
      const t0 = Date.now();
      const r = await pinnedPost(`https://127.0.0.1:${racing.port}/ok`, '{"n":2}', {}, { ...o, pool });
      expect(r).toEqual({ ok: true, status: 204, address: '127.0.0.1' });
      expect(Date.now() - t0).toBeLessThan(1000);
      // the first copy went out on the reused connection 1 and was dropped; the retry used a new connection (2),
      // unpooled (Connection: close)
      expect(racing.hits.map((h) => [h.conn, h.connection])).toEqual([
        [1, 'keep-alive'],
        [1, 'keep-alive'],
        [2, 'close'],
      ]);
    });
  });

  it('no retry when the connection was fresh: a reset is a failed try, one request per post', async () => {
    const resetting = await receiver('127.0.0.1', 0, (req) => req.socket.destroy());
    const o = opts({ allowlist: [`127.0.0.1:${resetting.port}`] });
    await withPool(async (pool) => {
      for (const p of [pool, false] as const) {
        const before = resetting.hits.length;
        const r = await pinnedPost(`https://127.0.0.1:${resetting.port}/ok`, '{}', {}, { ...o, pool: p });
        expect(r).toMatchObject({ ok: false, status: 0, error: 'error: ECONNRESET', address: '127.0.0.1' });
        expect(resetting.hits.length - before).toBe(1);
      }
    });
  });
});

describe('connection reuse (f): redirects and the deadline on a pooled socket', () => {
  it('a 302 on a reused socket is still a failure, the Location is never contacted, and the socket stays usable', async () => {
    await withPool(async (pool) => {
      const tls0 = main.tls;
      expect((await pinnedPost(`https://localhost:${P}/ok`, '{}', {}, opts({ pool }))).ok).toBe(true);
      const away = elsewhere.hits.length;
      for (const code of [301, 302, 303, 307, 308]) {
        expect(await pinnedPost(`https://localhost:${P}/redirect/${code}`, '{}', {}, opts({ pool }))).toEqual({ ok: false, status: code, error: `redirect not followed (${code})`, address: '127.0.0.1' });
      }
      await sleep(50);
      expect(elsewhere.hits.length).toBe(away);
      expect(main.tls - tls0).toBe(1);
    });
  });

  it('the deadline applies on a reused socket, which is then destroyed; the next post opens a new connection', async () => {
    await withPool(async (pool) => {
      const tls0 = main.tls;
      expect((await pinnedPost(`https://localhost:${P}/ok`, '{}', {}, opts({ pool }))).ok).toBe(true);
      const closed0 = main.closed;
      const hits0 = main.hits.length;
      const t0 = Date.now();
      const r = await pinnedPost(`https://localhost:${P}/hang`, '{}', {}, opts({ pool, timeoutMs: 300 }));
      const took = Date.now() - t0;
      expect(r).toEqual({ ok: false, status: 0, error: 'timeout after 300 ms', address: '127.0.0.1' });
      expect(took).toBeGreaterThanOrEqual(290);
      expect(took).toBeLessThan(1500);
      expect(main.hits[hits0]!.conn).toBe(main.tls); // it really went out on the pooled connection
      expect(main.tls - tls0).toBe(1);
      expect(await until(() => main.closed === closed0 + 1)).toBe(true);
      expect(pool.stats()).toMatchObject({ active: 0, idle: 0 });
      expect((await pinnedPost(`https://localhost:${P}/ok`, '{}', {}, opts({ pool }))).ok).toBe(true);
      expect(main.tls - tls0).toBe(2);
    });
  });

  it('time spent waiting for a socket counts against the deadline (per-origin limit reached)', async () => {
    const pool = new DeliveryAgentPool({ maxSocketsPerOrigin: 1 });
    try {
      const hanging = pinnedPost(`https://localhost:${P}/hang`, '{}', {}, opts({ pool, timeoutMs: 600 }));
      await sleep(50);
      const t0 = Date.now();
      const queued = await pinnedPost(`https://localhost:${P}/ok`, '{}', {}, opts({ pool, timeoutMs: 200 }));
      expect(queued).toMatchObject({ ok: false, status: 0, error: 'timeout after 200 ms' });
      expect(Date.now() - t0).toBeLessThan(500);
      expect(await hanging).toMatchObject({ ok: false, error: 'timeout after 600 ms' });
      // Node's agent drops a destroyed queued request lazily (it hands it a socket, which comes straight back)
      expect(await until(() => pool.stats().waiting === 0)).toBe(true);
      expect((await pinnedPost(`https://localhost:${P}/ok`, '{}', {}, opts({ pool }))).ok).toBe(true);
    } finally {
      pool.close();
    }
  });
});

describe('connection reuse: shutdown', () => {
  it('close() destroys idle sockets; the pool still works afterwards', async () => {
    await withPool(async (pool) => {
      expect((await pinnedPost(`https://localhost:${P}/ok`, '{}', {}, opts({ pool }))).ok).toBe(true);
      const closed0 = main.closed;
      pool.close();
      expect(await until(() => main.closed === closed0 + 1)).toBe(true);
      expect(await until(() => pool.stats().idle === 0)).toBe(true);
      expect((await pinnedPost(`https://localhost:${P}/ok`, '{}', {}, opts({ pool }))).ok).toBe(true);
    });
  });

  it('an idle pooled socket does not keep a process alive', async () => {
    // a receiver that never closes idle connections itself
    const forever = await receiver('127.0.0.1', 0, (_q, res) => res.writeHead(204).end(), (s) => (s.keepAliveTimeout = 0));
    const dir = await mkdtemp(join(tmpdir(), 'pool-exit-'));
    try {
      const script = join(dir, 'child.mts'); // ESM, for the top-level await
      const ssrf = resolve('jobs/webhooks/ssrf.ts');
      await writeFile(
        script,
        `import { pinnedPost, defaultDeliveryPool } from ${JSON.stringify(ssrf)};\n` +
          `const r = await pinnedPost('https://127.0.0.1:${forever.port}/ok', '{}', {}, { allowlist: ['127.0.0.1:${forever.port}'], ca: process.env.CA });\n` +
          `console.log(JSON.stringify({ ok: r.ok, idle: defaultDeliveryPool().stats().idle }));\n`,
      );
      const t0 = Date.now();
      const child = spawn(process.execPath, ['--import', 'tsx', script], { env: { ...process.env, CA: cert.cert }, stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      child.stdout.on('data', (c: Buffer) => (out += c.toString()));
      const code = await new Promise<number | null>((r) => child.once('exit', r));
      expect(code).toBe(0);
      expect(JSON.parse(out.trim())).toEqual({ ok: true, idle: 1 });
      // well under the 15 s idle timeout: the idle socket was unref'd
      expect(Date.now() - t0).toBeLessThan(10_000);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
