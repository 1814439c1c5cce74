/**
 * The realtime fill stream over a real WebSocket on loopback: auth at the upgrade (key, revoked key, none), the
 * per-user connection cap, the welcome, filters with the webhook semantics, live filter changes, bad messages,
 * ping/pong, and per-connection ordering.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { AccountStore } from '../../data/account-store.ts';
import type { FillStream } from '../../jobs/stream.ts';
import { connectStream, startStreamServer, type StreamServer } from '../helpers/stream-server.ts';

let srv: StreamServer;
let accounts: AccountStore;
let stream: FillStream;
let url: string;

beforeAll(async () => {
  srv = await startStreamServer();
  ({ accounts, stream, url } = srv);
});
afterAll(() => srv.close());

const keyFor = (email: string) => srv.keyFor(email);

const connect = (headers: Record<string, string>) => connectStream(url, headers);

const fill = (trader: string, size: number, tx: string) => ({ trader_proxy: trader, condition_id: '0x' + 'ab'.repeat(32), size_usdc: size, price: 0.4, token_id: '1', taker_side: 'buy', exchange_version: '2', exchange_kind: 'ctf', tx_hash: tx, log_index: '0' });
const A = '0x' + '1a'.repeat(20);
const B = '0x' + '2b'.repeat(20);

it('refuses the upgrade without a valid credential and beyond the connection cap', async () => {
  expect(await connect({})).toMatchObject({ status: 401 });
  const k = await keyFor('revoked@example.com');
  await accounts.revokeApiKey(k.userId, k.info.id, Date.now());
  const refused = await connect({ authorization: `Bearer ${k.key}` });
  expect(refused).toMatchObject({ status: 401 });
  expect(JSON.parse((refused as { body: string }).body)).toMatchObject({ error: 'auth_required' });
  const capped = await keyFor('capped@example.com');
  const c1 = await connect({ authorization: `Bearer ${capped.key}` });
  const c2 = await connect({ authorization: `Bearer ${capped.key}` });
  expect(await connect({ authorization: `Bearer ${capped.key}` })).toMatchObject({ status: 429 });
  for (const c of [c1, c2]) if ('ws' in c) c.ws.close();
});

it('streams the fills a filter matches, in order, and follows filter changes', async () => {
  const k = await keyFor('trader@example.com');
  const c = await connect({ authorization: `Bearer ${k.key}` });
  if (!('ws' in c)) throw new Error(`refused ${c.status}`);
  const welcome = await c.next();
  expect(welcome).toMatchObject({ type: 'welcome', filter: {}, heartbeat_seconds: 30 });
  c.ws.send(JSON.stringify({ op: 'subscribe', filter: { trader_proxy: A.toUpperCase().replace('0X', '0x'), min_size_usdc: 100 } }));
  expect(await c.next()).toMatchObject({ type: 'subscribed' });
  const t0 = new Date();
  stream.publish(fill(A, 99.99, '0x01'), t0); // under the size floor
  stream.publish(fill(B, 500, '0x02'), t0); // another trader
  stream.publish(fill(A, 100, '0x03'), t0);
  stream.publish(fill(A, 7000, '0x04'), t0);
  const m1 = await c.next();
  const m2 = await c.next();
  expect([m1, m2].map((m) => (m.data as { tx_hash: string }).tx_hash)).toEqual(['0x03', '0x04']);
  expect(m1).toMatchObject({ type: 'trader.fill', emitted_at: t0.toISOString() });
  expect((m2.seq as number) > (m1.seq as number)).toBe(true);
  // a new filter replaces the old one
  c.ws.send(JSON.stringify({ op: 'subscribe', filter: { trader_proxy: [B] } }));
  expect(await c.next()).toMatchObject({ type: 'subscribed' });
  stream.publish(fill(A, 7000, '0x05'), t0);
  stream.publish(fill(B, 1, '0x06'), t0);
  expect(((await c.next()).data as { tx_hash: string }).tx_hash).toBe('0x06');
  // bad messages get an error and the connection stays
  c.ws.send('not json');
  expect(await c.next()).toMatchObject({ type: 'error', error: 'invalid_json' });
  c.ws.send(JSON.stringify({ op: 'subscribe', filter: { min_size_usdc: -5 } }));
  expect(await c.next()).toMatchObject({ type: 'error', error: 'invalid_request' });
  c.ws.send(JSON.stringify({ op: 'dance' }));
  expect(await c.next()).toMatchObject({ type: 'error', error: 'invalid_request' });
  c.ws.send(JSON.stringify({ op: 'ping' }));
  expect(await c.next()).toMatchObject({ type: 'pong' });
  c.ws.close();
  await new Promise((r) => setTimeout(r, 50));
  expect(stream.connections).toBe(0);
});

it('authenticates browsers by the session cookie', async () => {
  const u = await accounts.userForEmail('browser@example.com', Date.now());
  const s = await accounts.createSession(u.user_id, 'magic', Date.now());
  const c = await connect({ cookie: `__Secure-service_sid=${s.token}` });
  expect('ws' in c).toBe(true);
  if ('ws' in c) {
    expect(await c.next()).toMatchObject({ type: 'welcome' });
    c.ws.close();
  }
});
