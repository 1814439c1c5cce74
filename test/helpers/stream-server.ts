/**
 * Test helper: the realtime fill stream on a real loopback HTTP server, authenticated by a real account store in a
 * temp dir (2 connections per user). `keyFor(email)` mints an API key for a new or existing user.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { AccountStore } from '../../data/account-store.ts';
import { FillStream, STREAM_PATH } from '../../jobs/stream.ts';

/** An open stream connection: `next()` waits for the next message; `received` keeps every one, in order. */
export interface StreamConn {
  ws: WebSocket;
  next: () => Promise<Record<string, unknown>>;
  received: Record<string, unknown>[];
}

/** A refused upgrade: the HTTP answer. */
export interface StreamRefusal {
  status: number;
  contentType: string;
  body: string;
}

/** Open a connection to `url` with these handshake headers. */
export function connectStream(url: string, headers: Record<string, string>): Promise<StreamConn | StreamRefusal> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, { headers });
    const queue: Record<string, unknown>[] = [];
    const received: Record<string, unknown>[] = [];
    const waiters: ((m: Record<string, unknown>) => void)[] = [];
    ws.on('message', (raw) => {
      const m = JSON.parse(raw.toString()) as Record<string, unknown>;
      received.push(m);
      const w = waiters.shift();
      if (w) w(m);
      else queue.push(m);
    });
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, contentType: String(res.headers['content-type']), body }));
    });
    ws.on('open', () => resolve({ ws, received, next: () => (queue.length ? Promise.resolve(queue.shift()!) : new Promise((r) => waiters.push(r))) }));
  });
}

export interface StreamServer {
  accounts: AccountStore;
  stream: FillStream;
  server: Server;
  /** ws://127.0.0.1:<port>/v1/stream */
  url: string;
  keyFor(email: string): Promise<Awaited<ReturnType<AccountStore['mintApiKey']>> & { userId: string }>;
  close(): Promise<void>;
}

export async function startStreamServer(): Promise<StreamServer> {
  const dir = await mkdtemp(join(tmpdir(), 'stream-'));
  const accounts = await AccountStore.open(join(dir, 'service.sqlite'));
  const server = createServer((_req, res) => res.writeHead(404).end());
  const stream = new FillStream({
    authenticate: async (req) => {
      const who = await accounts.identify(req.headers.authorization, req.headers.cookie, Date.now());
      return who ? { userId: who.user_id, maxConnections: 2 } : null;
    },
  });
  stream.attach(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    accounts,
    stream,
    server,
    url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}${STREAM_PATH}`,
    keyFor: async (email) => {
      const u = await accounts.userForEmail(email, Date.now());
      return { ...(await accounts.mintApiKey(u.user_id, 'stream', Date.now())), userId: u.user_id };
    },
    close: async () => {
      await stream.stop();
      await new Promise((r) => server.close(r));
      await accounts.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
