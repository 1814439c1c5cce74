/**
 * The realtime fill stream: a WebSocket at /v1/stream that pushes every taker fill of the live tail matching the
 * connection's filter (the same filter_json keys and semantics as webhooks, matched through the same index).
 * docs/stream.md has the message format.
 *
 * - Auth at the upgrade: `Authorization: Bearer <API key>` (programs) or the session cookie (browsers); anything
 *   else is refused with an HTTP 401 before the handshake. Connections per user are capped (429).
 * - Server → client: `welcome` {connection_id, filter, heartbeat_seconds}, `subscribed` {filter}, `trader.fill`
 *   {seq, emitted_at, data}, `lagged` {dropped}, `error` {error, message}. Client → server: `{"op": "subscribe",
 *   "filter": {...}}` (replaces the filter) and `{"op": "ping"}` (answered `pong`).
 * - A slow client is not allowed to grow the server's memory: beyond 1 MB of unsent data its fills are dropped and
 *   it is told how many (`lagged`) once it has caught up. Pings every 30 s; a client that misses one is closed.
 */
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { FilterJson, SubscriptionIndex } from '../core/webhook-filters.ts';
import { shortId } from '../data/webhook-store.ts';

export const STREAM_PATH = '/v1/stream';
export const HEARTBEAT_MS = 30_000;
export const MAX_BUFFERED_BYTES = 1 << 20;

export interface StreamPrincipal {
  userId: string;
  /** connections this user may hold at once */
  maxConnections: number;
}

export interface StreamDeps {
  /** who is connecting (from the upgrade request's headers), or null */
  authenticate: (req: IncomingMessage) => StreamPrincipal | null | Promise<StreamPrincipal | null>;
  now?: () => Date;
  heartbeatMs?: number;
}

interface Conn {
  id: string;
  userId: string;
  ws: WebSocket;
  alive: boolean;
  dropped: number;
}

export class FillStream {
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: 16 * 1024 });
  private readonly index = new SubscriptionIndex();
  private readonly conns = new Map<string, Conn>();
  private readonly perUser = new Map<string, number>();
  private seq = 0;
  private readonly heartbeat: NodeJS.Timeout;

  constructor(private readonly deps: StreamDeps) {
    this.heartbeat = setInterval(() => this.beat(), deps.heartbeatMs ?? HEARTBEAT_MS);
    this.heartbeat.unref();
  }

  get connections(): number {
    return this.conns.size;
  }

  /** Serve the stream on an HTTP server's upgrade requests for STREAM_PATH (other upgrades are left alone). */
  attach(server: Server): void {
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      const path = (req.url ?? '').split('?')[0];
      if (path !== STREAM_PATH) return;
      const refuse = (status: number, code: string, message: string) => {
        const body = JSON.stringify({ error: code, message });
        socket.end(`HTTP/1.1 ${status} ${status === 401 ? 'Unauthorized' : 'Too Many Requests'}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
      };
      void (async () => {
        const who = await this.deps.authenticate(req);
        if (!who) return refuse(401, 'auth_required', 'send Authorization: Bearer <API key> or the session cookie');
        if ((this.perUser.get(who.userId) ?? 0) >= who.maxConnections) return refuse(429, 'rate_limited', `at most ${who.maxConnections} stream connections at once`);
        this.wss.handleUpgrade(req, socket, head, (ws) => this.open(ws, who));
      })().catch(() => socket.destroy());
    });
  }

  private send(c: Conn, msg: unknown): void {
    if (c.ws.readyState === c.ws.OPEN) c.ws.send(JSON.stringify(msg));
  }

  private open(ws: WebSocket, who: StreamPrincipal): void {
    const c: Conn = { id: shortId('ws'), userId: who.userId, ws, alive: true, dropped: 0 };
    this.conns.set(c.id, c);
    this.perUser.set(who.userId, (this.perUser.get(who.userId) ?? 0) + 1);
    this.index.add({ id: c.id, event_types: ['trader.fill'], filter: {}, active: true });
    ws.on('pong', () => (c.alive = true));
    ws.on('message', (raw) => this.onMessage(c, raw.toString()));
    ws.on('close', () => this.close(c));
    ws.on('error', () => this.close(c));
    this.send(c, { type: 'welcome', connection_id: c.id, filter: {}, heartbeat_seconds: (this.deps.heartbeatMs ?? HEARTBEAT_MS) / 1000 });
  }

  private close(c: Conn): void {
    if (!this.conns.delete(c.id)) return;
    this.index.remove(c.id);
    this.perUser.set(c.userId, (this.perUser.get(c.userId) ?? 1) - 1);
  }

  private onMessage(c: Conn, text: string): void {
    let msg: unknown;
    try {
      msg = JSON.parse(text);
    } catch {
      return this.send(c, { type: 'error', error: 'invalid_json', message: 'messages are JSON objects' });
    }
    const op = (msg as { op?: unknown })?.op;
    if (op === 'ping') return this.send(c, { type: 'pong', server_time: (this.deps.now ?? (() => new Date()))().toISOString() });
    if (op === 'subscribe') {
      const f = FilterJson.safeParse((msg as { filter?: unknown }).filter ?? {});
      if (!f.success) return this.send(c, { type: 'error', error: 'invalid_request', message: f.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') });
      this.index.update({ id: c.id, event_types: ['trader.fill'], filter: f.data, active: true });
      return this.send(c, { type: 'subscribed', filter: f.data });
    }
    this.send(c, { type: 'error', error: 'invalid_request', message: 'op must be "subscribe" or "ping"' });
  }

  /** Push one fill (the trader.fill data of webhooks) to every connection whose filter matches. */
  publish(data: Record<string, unknown>, emittedAt: Date): number {
    const ids = this.index.match('trader.fill', data);
    if (!ids.length) return 0;
    const seq = ++this.seq;
    const text = JSON.stringify({ type: 'trader.fill', seq, emitted_at: emittedAt.toISOString(), data });
    let sent = 0;
    for (const id of ids) {
      const c = this.conns.get(id);
      if (!c || c.ws.readyState !== c.ws.OPEN) continue;
      if (c.ws.bufferedAmount > MAX_BUFFERED_BYTES) {
        c.dropped++;
        continue;
      }
      if (c.dropped) {
        c.ws.send(JSON.stringify({ type: 'lagged', dropped: c.dropped }));
        c.dropped = 0;
      }
      c.ws.send(text);
      sent++;
    }
    return sent;
  }

  private beat(): void {
    for (const c of this.conns.values()) {
      if (!c.alive) {
        c.ws.terminate();
        this.close(c);
        continue;
      }
      c.alive = false;
      c.ws.ping();
    }
  }

  async stop(): Promise<void> {
    clearInterval(this.heartbeat);
    for (const c of this.conns.values()) c.ws.close(1001, 'server shutting down');
    await new Promise<void>((r) => this.wss.close(() => r()));
  }
}
