/**
 * The fill bus on the machine's Redis: fills published by one process's connection reach the subscribers of two
 * others (two replicas) in order, each once; an unsubscribed handler receives nothing more; another prefix is
 * another channel; a WebSocket client of replica B's stream sees a fill the builder published.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalFillBus, RedisFillBus } from '../../jobs/fill-bus.ts';
import { connectStream, startStreamServer, type StreamServer } from '../helpers/stream-server.ts';

const REDIS = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const conns: Redis[] = [];
const redis = () => {
  const r = new Redis(REDIS, { maxRetriesPerRequest: 2 });
  conns.push(r);
  return r;
};
const prefix = `fillbus-test-${process.pid}-${Date.now()}`;
let srv: StreamServer;

beforeAll(async () => {
  srv = await startStreamServer();
});
afterAll(async () => {
  await srv?.close();
  for (const c of conns) c.disconnect();
});

const until = async (cond: () => boolean, ms = 5000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 10));
  }
};

describe('the fill bus', () => {
  it('in one process: every subscriber gets every fill in order, until it unsubscribes', async () => {
    const bus = new LocalFillBus();
    const got: number[] = [];
    const off = bus.subscribe((d) => got.push(d.n as number));
    await bus.publish({ n: 1 }, new Date(0));
    await bus.publish({ n: 2 }, new Date(0));
    off();
    await bus.publish({ n: 3 }, new Date(0));
    expect(got).toEqual([1, 2]);
  });

  it('over Redis: two replicas receive what a third process publishes, in order, once each; prefixes separate', async () => {
    const builder = new RedisFillBus(redis(), redis(), prefix);
    const a = new RedisFillBus(redis(), redis(), prefix);
    const b = new RedisFillBus(redis(), redis(), prefix);
    const other = new RedisFillBus(redis(), redis(), `${prefix}-other`);
    const seen = { a: [] as number[], b: [] as number[], other: [] as number[] };
    const at: Date[] = [];
    a.subscribe((d, t) => {
      seen.a.push(d.n as number);
      at.push(t);
    });
    const offB = b.subscribe((d) => seen.b.push(d.n as number));
    other.subscribe((d) => seen.other.push(d.n as number));
    await Promise.all([a.ready(), b.ready(), other.ready()]);
    const emitted = new Date('2026-11-26T08:00:00.123Z');
    for (let n = 1; n <= 200; n++) await builder.publish({ n, trader_proxy: '0x' + 'ab'.repeat(20) }, emitted);
    await until(() => seen.a.length === 200 && seen.b.length === 200);
    const all = Array.from({ length: 200 }, (_, i) => i + 1);
    expect(seen.a).toEqual(all);
    expect(seen.b).toEqual(all);
    expect(at.every((t) => t.getTime() === emitted.getTime())).toBe(true);
    expect(seen.other).toEqual([]);
    offB();
    await builder.publish({ n: 201 }, emitted);
    await until(() => seen.a.length === 201);
    expect(seen.b).toHaveLength(200);
    for (const x of [builder, a, b, other]) await x.close();
  });

  it("a stream client on replica B sees a fill the builder published", async () => {
    const builder = new RedisFillBus(redis(), redis(), `${prefix}-ws`);
    const replicaB = new RedisFillBus(redis(), redis(), `${prefix}-ws`);
    replicaB.subscribe((d, t) => srv.stream.publish(d, t));
    await replicaB.ready();
    const k = await srv.keyFor('bus@example.com');
    const c = await connectStream(srv.url, { authorization: `Bearer ${k.key}` });
    if (!('ws' in c)) throw new Error(`refused ${c.status}`);
    expect(await c.next()).toMatchObject({ type: 'welcome' });
    const fill = { trader_proxy: '0x' + '3c'.repeat(20), condition_id: '0x' + 'ab'.repeat(32), size_usdc: 250, price: 0.4, token_id: '1', taker_side: 'buy', exchange_version: '2', exchange_kind: 'ctf', tx_hash: '0x' + '01'.repeat(32), log_index: '7' };
    await builder.publish(fill, new Date('2026-11-26T08:00:00Z'));
    expect(await c.next()).toMatchObject({ type: 'trader.fill', data: fill });
    c.ws.close();
    await builder.close();
    await replicaB.close();
  });
});
