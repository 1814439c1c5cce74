/**
 * The OpenAPI description of the realtime stream (GET /v1/stream, x-websocket) against a real WebSocket on
 * loopback: every server frame a real connection receives (welcome, subscribed, trader.fill with and without
 * condition_id, lagged, pong, error) validates against the documented StreamServerMessage (chosen by its
 * discriminator), and every documented server frame type is seen; the client frames sent validate against
 * StreamClientMessage; the refusals before the upgrade are the documented error object; the figures in the
 * description are jobs/stream.ts's.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { HEARTBEAT_MS, MAX_BUFFERED_BYTES, STREAM_PATH, type FillStream } from '../../jobs/stream.ts';
import { connectStream, startStreamServer, type StreamConn as Conn, type StreamServer } from '../helpers/stream-server.ts';
import { openApiDocument } from '../../web-api/openapi.ts';

type Schema = Record<string, unknown>;
const doc = openApiDocument() as { paths: Record<string, Record<string, Schema>>; components: { schemas: Record<string, Schema> } };
const schemas = doc.components.schemas;

// ---------------------------------------------------------------------------------------------------------------
// A small JSON Schema (2020-12) checker: the keywords the document uses. Returns the problems found ([] = valid).
// ---------------------------------------------------------------------------------------------------------------

function resolve(s: Schema): Schema {
  const r = s.$ref;
  if (typeof r !== 'string') return s;
  const name = r.replace('#/components/schemas/', '');
  const target = schemas[name];
  if (!target) throw new Error(`dangling $ref ${r}`);
  // a $ref with siblings (description) keeps the target's constraints
  return { ...resolve(target), ...Object.fromEntries(Object.entries(s).filter(([k]) => k !== '$ref' && k !== 'description')) };
}

const typeOf = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'array' : Number.isInteger(v) ? 'integer' : typeof v);

function check(value: unknown, schema: Schema, at = '$'): string[] {
  const s = resolve(schema);
  const out: string[] = [];
  if ('const' in s && JSON.stringify(value) !== JSON.stringify(s.const)) out.push(`${at}: expected ${JSON.stringify(s.const)}`);
  if (Array.isArray(s.enum) && !s.enum.some((e) => JSON.stringify(e) === JSON.stringify(value))) out.push(`${at}: not in ${JSON.stringify(s.enum)}`);
  if (s.type !== undefined) {
    const want = Array.isArray(s.type) ? (s.type as string[]) : [s.type as string];
    const got = typeOf(value);
    if (!want.includes(got) && !(got === 'integer' && want.includes('number'))) return [...out, `${at}: expected ${want.join('|')}, got ${got}`];
  }
  if (typeof value === 'string') {
    if (typeof s.pattern === 'string' && !new RegExp(s.pattern).test(value)) out.push(`${at}: does not match ${s.pattern}`);
    if (s.format === 'date-time' && Number.isNaN(Date.parse(value))) out.push(`${at}: not a date-time`);
    if (typeof s.maxLength === 'number' && Array.from(value).length > s.maxLength) out.push(`${at}: longer than ${s.maxLength}`);
  }
  if (typeof value === 'number' && typeof s.minimum === 'number' && value < s.minimum) out.push(`${at}: below ${s.minimum}`);
  if (Array.isArray(value)) {
    if (typeof s.minItems === 'number' && value.length < s.minItems) out.push(`${at}: fewer than ${s.minItems} items`);
    if (typeof s.maxItems === 'number' && value.length > s.maxItems) out.push(`${at}: more than ${s.maxItems} items`);
    if (s.items) value.forEach((v, i) => out.push(...check(v, s.items as Schema, `${at}[${i}]`)));
  }
  if (typeOf(value) === 'object') {
    const o = value as Record<string, unknown>;
    for (const k of (s.required as string[] | undefined) ?? []) if (!(k in o)) out.push(`${at}: missing ${k}`);
    const props = (s.properties as Record<string, Schema> | undefined) ?? {};
    for (const [k, v] of Object.entries(o)) {
      if (props[k]) out.push(...check(v, props[k]!, `${at}.${k}`));
      else if (s.additionalProperties === false) out.push(`${at}: unexpected key ${k}`);
    }
    if (typeof s.maxProperties === 'number' && Object.keys(o).length > s.maxProperties) out.push(`${at}: more than ${s.maxProperties} keys`);
  }
  if (Array.isArray(s.anyOf) && !(s.anyOf as Schema[]).some((b) => check(value, b, at).length === 0)) out.push(`${at}: matches no anyOf branch`);
  if (Array.isArray(s.oneOf)) {
    const disc = s.discriminator as { propertyName: string; mapping: Record<string, string> } | undefined;
    if (disc) {
      const tag = (value as Record<string, unknown> | null)?.[disc.propertyName];
      const target = typeof tag === 'string' ? disc.mapping[tag] : undefined;
      if (!target) out.push(`${at}: ${disc.propertyName} ${JSON.stringify(tag)} is not a documented message`);
      else out.push(...check(value, { $ref: target }, at));
    }
    const n = (s.oneOf as Schema[]).filter((b) => check(value, b, at).length === 0).length;
    if (n !== 1) out.push(`${at}: matches ${n} oneOf branches (exactly one expected)`);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// A real stream on loopback
// ---------------------------------------------------------------------------------------------------------------

let srv: StreamServer;
let stream: FillStream;
let url: string;
let key: string;

beforeAll(async () => {
  srv = await startStreamServer();
  ({ stream, url } = srv);
  key = (await srv.keyFor('stream-openapi@example.com')).key;
});
afterAll(() => srv.close());

const connect = (headers: Record<string, string>) => connectStream(url, headers);

const A = '0x' + '1a'.repeat(20);
const fill = (trader: string, size: number, over: Record<string, unknown> = {}) => ({
  trader_proxy: trader,
  condition_id: '0x' + 'ab'.repeat(32),
  size_usdc: size,
  price: 0.4,
  token_id: '1',
  taker_side: 'buy',
  exchange_version: '2',
  exchange_kind: 'ctf',
  tx_hash: '0x' + 'cd'.repeat(32),
  log_index: '0',
  ...over,
});

it('documents GET /v1/stream as the WebSocket upgrade, with the figures jobs/stream.ts uses', () => {
  const op = doc.paths[STREAM_PATH]?.get as Schema & { responses: Record<string, Schema>; description: string };
  expect(op).toBeDefined();
  expect(op['x-websocket']).toBe(true);
  expect(Object.keys(op.responses).sort()).toEqual(['101', '400', '401', '404', '429']);
  expect(op['x-websocket-messages']).toEqual({ client: { $ref: '#/components/schemas/StreamClientMessage' }, server: { $ref: '#/components/schemas/StreamServerMessage' } });
  expect(op.description).toContain(`Pings every ${HEARTBEAT_MS / 1000} s`);
  expect(MAX_BUFFERED_BYTES).toBe(1 << 20);
  expect(JSON.stringify(schemas.StreamLagged)).toContain('more than 1 MB unsent');
  // the route walker of test/web-api/rankings-routes.test.ts skips x-websocket routes: this is the only one
  const ws = Object.entries(doc.paths).flatMap(([p, ops]) => Object.entries(ops).filter(([, o]) => o['x-websocket'] === true).map(([m]) => `${m} ${p}`));
  expect(ws).toEqual([`get ${STREAM_PATH}`]);
});

it('refuses before the upgrade with the documented error object', async () => {
  const none = await connect({});
  expect(none).toMatchObject({ status: 401 });
  expect(check(JSON.parse((none as { body: string }).body), { $ref: '#/components/schemas/Error' })).toEqual([]);
  const a = (await connect({ authorization: `Bearer ${key}` })) as Conn;
  const b = (await connect({ authorization: `Bearer ${key}` })) as Conn;
  const over = await connect({ authorization: `Bearer ${key}` });
  expect(over).toMatchObject({ status: 429 });
  const body = JSON.parse((over as { body: string }).body) as { error: string };
  expect(body.error).toBe('rate_limited');
  expect(check(body, { $ref: '#/components/schemas/Error' })).toEqual([]);
  a.ws.close();
  b.ws.close();
  await new Promise((r) => setTimeout(r, 50));
});

it('every frame a real connection receives is a documented StreamServerMessage, and every documented one occurs', async () => {
  const c = (await connect({ authorization: `Bearer ${key}` })) as Conn;
  const sent: unknown[] = [];
  const send = (m: unknown) => {
    sent.push(m);
    c.ws.send(typeof m === 'string' ? m : JSON.stringify(m));
  };

  const welcome = await c.next();
  expect(welcome).toMatchObject({ type: 'welcome', heartbeat_seconds: HEARTBEAT_MS / 1000 });
  send({ op: 'subscribe', filter: { trader_proxy: A, min_size_usdc: 100, some_future_key: 1 } });
  expect(await c.next()).toMatchObject({ type: 'subscribed' });
  send({ op: 'subscribe', filter: { min_size_usdc: -1 } });
  expect(await c.next()).toMatchObject({ type: 'error', error: 'invalid_request' });
  c.ws.send('not json');
  expect(await c.next()).toMatchObject({ type: 'error', error: 'invalid_json' });
  c.ws.send(JSON.stringify({ op: 'unsubscribe' }));
  expect(await c.next()).toMatchObject({ type: 'error', error: 'invalid_request' });
  send({ op: 'ping' });
  expect(await c.next()).toMatchObject({ type: 'pong' });
  stream.publish(fill(A, 500), new Date('2026-03-01T12:00:00Z'));
  const { condition_id: _no, ...unknownMarket } = fill(A, 600, { token_id: '' });
  stream.publish(unknownMarket, new Date('2026-03-01T12:00:01Z'));
  expect(await c.next()).toMatchObject({ type: 'trader.fill', data: { size_usdc: 500 } });
  expect(await c.next()).toMatchObject({ type: 'trader.fill', data: { size_usdc: 600 } });

  // lagged: stop reading until the server holds more than 1 MB unsent, then catch up
  send({ op: 'subscribe', filter: { trader_proxy: A } });
  expect(await c.next()).toMatchObject({ type: 'subscribed' });
  c.ws.pause();
  const big = fill(A, 700, { exchange_kind: 'x'.repeat(64 * 1024) });
  let delivered = 0;
  let dropped = 0;
  for (let i = 0; i < 5000 && dropped < 3; i++) {
    if (stream.publish(big, new Date()) === 1) delivered++;
    else dropped++;
    await new Promise((r) => setImmediate(r));
  }
  expect(dropped).toBe(3);
  c.ws.resume();
  for (let i = 0; i < delivered; i++) expect(await c.next()).toMatchObject({ type: 'trader.fill', data: { size_usdc: 700 } });
  await new Promise((r) => setTimeout(r, 50));
  expect(stream.publish(fill(A, 800), new Date())).toBe(1);
  expect(await c.next()).toEqual({ type: 'lagged', dropped: 3 });
  expect(await c.next()).toMatchObject({ type: 'trader.fill', data: { size_usdc: 800 } });

  // every frame validates; every documented type was seen
  const server = { $ref: '#/components/schemas/StreamServerMessage' };
  for (const m of c.received) expect(check(m, server), JSON.stringify(m).slice(0, 200)).toEqual([]);
  const mapping = (schemas.StreamServerMessage!.discriminator as { mapping: Record<string, string> }).mapping;
  expect(new Set(c.received.map((m) => m.type))).toEqual(new Set(Object.keys(mapping)));
  // and the documented required properties are exactly the keys a real frame has
  for (const m of c.received) {
    const s = resolve({ $ref: mapping[m.type as string]! });
    expect(Object.keys(m).sort(), String(m.type)).toEqual([...(s.required as string[])].sort());
  }
  // (the checker does reject what the schema forbids)
  const aFill = c.received.find((m) => m.type === 'trader.fill')!;
  expect(check({ ...welcome, extra: 1 }, server)).not.toEqual([]);
  expect(check({ ...aFill, data: { ...(aFill.data as object), log_index: 0 } }, server)).not.toEqual([]);
  expect(check({ ...aFill, seq: undefined }, server)).not.toEqual([]);
  expect(check({ type: 'trader.fills' }, server)).not.toEqual([]);
  const fillData = resolve({ $ref: '#/components/schemas/TraderFillData' });
  expect(Object.keys((c.received.find((m) => m.type === 'trader.fill') as { data: object }).data).sort()).toEqual(Object.keys(fillData.properties as object).sort());

  // the client frames sent validate, and the ones the server refused do not
  const client = { $ref: '#/components/schemas/StreamClientMessage' };
  expect(check(sent[0], client)).toEqual([]);
  expect(check({ op: 'ping' }, client)).toEqual([]);
  expect(check({ op: 'subscribe' }, client)).toEqual([]);
  expect(check({ op: 'subscribe', filter: { min_size_usdc: -1 } }, client)).not.toEqual([]);
  expect(check({ op: 'unsubscribe' }, client)).not.toEqual([]);
  c.ws.close();
});

it('closes the connection with 1009 on a client frame over 16 KB, as documented', async () => {
  expect(JSON.stringify(schemas.StreamClientMessage)).toContain('16 KB');
  const c = (await connect({ authorization: `Bearer ${key}` })) as Conn;
  await c.next();
  const closed = new Promise<number>((r) => c.ws.on('close', (code) => r(code)));
  c.ws.send(JSON.stringify({ op: 'ping', pad: 'x'.repeat(16 * 1024) }));
  expect(await closed).toBe(1009);
});
