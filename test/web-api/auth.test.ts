/**
 * Sign-in and the account area end to end over a real HTTP server on loopback: SIWE with viem-signed messages
 * (every rejection the verifier owes), magic links captured from a real SMTP server, session cookies (attributes,
 * idle and absolute expiry, logout, logout-all), the user record, API keys (mint once, list, revoke), plan limits,
 * single use of nonces and magic tokens under concurrent requests, and a fuzz of every auth route.
 */
import type { AddressInfo } from 'node:net';
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import fc from 'fast-check';
import { SMTPServer } from 'smtp-server';
import { privateKeyToAccount, generatePrivateKey } from 'viem/accounts';
import { createSiweMessage } from 'viem/siwe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { PLANS } from '../../core/plans.ts';
import { SESSION_ABSOLUTE_MS, SESSION_IDLE_MS } from '../../data/account-store.ts';
import { duckRunner } from '../../data/runner.ts';
import { smtpMailer } from '../../web-api/mail.ts';
import { startApp, type TestApp } from '../helpers/app.ts';
import { closeMemoryVenue, openMemoryVenue } from '../helpers/memory-venue.ts';

const ERROR_KEYS = new Set(['error', 'message', 'reason', 'issues', 'trace_id']);
async function expectError(res: Response, status: number, code: string) {
  expect(res.status, `${res.url} → ${status} ${code}`).toBe(status);
  const body = (await res.json()) as Record<string, unknown>;
  for (const k of Object.keys(body)) expect(ERROR_KEYS.has(k), k).toBe(true);
  expect(body.error).toBe(code);
  expect(typeof body.trace_id).toBe('string');
  return body;
}

const UserRecord = z.strictObject({
  user_id: z.string(),
  eoa: z.string().nullable(),
  email: z.string().nullable(),
  display_name: z.string().nullable(),
  x_username: z.string().nullable(),
  created_at: z.string(),
  claimed_proxy_count: z.number().int(),
  primary_claimed_proxy: z.string().nullable(),
  is_founding: z.boolean(),
});
const PatchedUser = UserRecord.omit({ claimed_proxy_count: true, primary_claimed_proxy: true, is_founding: true });

let instance: DuckDBInstance;
let conn: DuckDBConnection;
let t: TestApp;
let mailApp: TestApp;
let smtp: SMTPServer;
const inbox: { to: string; body: string }[] = [];
let clock = new Date('2026-11-01T12:00:00Z');
const now = () => clock;
const advance = (ms: number) => (clock = new Date(clock.getTime() + ms));

const venueSigner = privateKeyToAccount(generatePrivateKey());

beforeAll(async () => {
  ({ instance, conn } = await openMemoryVenue());
  // the signer trades on the venue: signing in with it claims that proxy
  await conn.run(`INSERT INTO wallets VALUES (1, '${venueSigner.address.toLowerCase()}', NULL, 'Brave-Otter', NULL, false)`);
  t = await startApp(duckRunner(conn), { now, rateRules: { magicIp: { limit: 1000 }, magicEmail: { limit: 1000 }, ip: { limit: 100_000 }, nonceIp: { limit: 100_000 }, verifyIp: { limit: 100_000 } } });
  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['AUTH', 'STARTTLS'],
    logger: false,
    onRcptTo(address, _session, cb) {
      if (address.address === 'bounce@example.com') return cb(Object.assign(new Error('no such mailbox'), { responseCode: 550 }));
      cb();
    },
    onData(stream, session, cb) {
      let body = '';
      stream.on('data', (c: Buffer) => (body += c.toString('utf8')));
      stream.on('end', () => {
        inbox.push({ to: session.envelope.rcptTo.map((r) => r.address).join(','), body });
        cb();
      });
    },
  });
  await new Promise<void>((r) => smtp.listen(0, '127.0.0.1', () => r()));
  const smtpPort = (smtp.server.address() as AddressInfo).port;
  mailApp = await startApp(duckRunner(conn), { now, mailer: smtpMailer(`smtp://127.0.0.1:${smtpPort}?ignoreTLS=true`, 'Service <no-reply@example.com>') });
}, 60_000);

afterAll(async () => {
  await t?.close();
  await mailApp?.close();
  await new Promise<void>((r) => (smtp ? smtp.close(() => r()) : r()));
  closeMemoryVenue(conn, instance);
});

/** The newest link to `path` in mail captured for `to` (quoted-printable undone). */
function mailedLink(to: string, path: string): string {
  const mail = [...inbox].reverse().find((m) => m.to === to);
  if (!mail) throw new Error(`no mail to ${to}`);
  const text = mail.body.replace(/=\r?\n/g, '').replace(/=3D/g, '=');
  const m = new RegExp(`(http://127\\.0\\.0\\.1:\\d+${path.replaceAll('/', '\\/')}\\?token=[A-Za-z0-9_%-]+)`).exec(text);
  if (!m) throw new Error(`no ${path} link in the mail to ${to}`);
  return m[1]!;
}

const json = (body: unknown, headers: Record<string, string> = {}) => ({ method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
const cookieOf = (res: Response) => res.headers.getSetCookie().find((c) => c.startsWith('__Secure-service_sid='));
const sidOf = (res: Response) => cookieOf(res)!.split(';')[0]!;
const withSid = (sid: string, init: RequestInit = {}): RequestInit => ({ ...init, headers: { ...(init.headers as Record<string, string>), cookie: sid } });

async function nonce(app = t): Promise<string> {
  const res = await fetch(`${app.base}/v1/auth/siwe/nonce`, { method: 'POST' });
  expect(res.status).toBe(200);
  const body = z.strictObject({ nonce: z.string(), expires_at: z.string() }).parse(await res.json());
  expect(new Date(body.expires_at).getTime() - clock.getTime()).toBe(5 * 60_000);
  return body.nonce;
}

type Signer = ReturnType<typeof privateKeyToAccount>;
async function siweMessage(signer: Signer, over: Partial<Parameters<typeof createSiweMessage>[0]> = {}, app = t) {
  const message = createSiweMessage({
    address: signer.address,
    chainId: 137,
    domain: new URL(app.origin).host,
    nonce: over.nonce ?? (await nonce(app)),
    uri: `${app.origin}/login`,
    version: '1',
    issuedAt: clock,
    statement: 'Sign in to the skill-analytics service',
    ...over,
  });
  return { message, signature: await signer.signMessage({ message }) };
}
const verify = (body: unknown, app = t) => fetch(`${app.base}/v1/auth/siwe/verify`, json(body));

async function signIn(signer: Signer = privateKeyToAccount(generatePrivateKey())) {
  const res = await verify(await siweMessage(signer));
  expect(res.status).toBe(200);
  const body = z.strictObject({ ok: z.literal(true), user_id: z.string(), eoa: z.string(), expires_at: z.string() }).parse(await res.json());
  return { sid: sidOf(res), body, res };
}

describe('wallet sign-in (SIWE)', () => {
  it('verifies a viem-signed message, sets the session cookie and claims the venue proxy', async () => {
    const { sid, body, res } = await signIn(venueSigner);
    expect(body.eoa).toBe(venueSigner.address); // EIP-55
    const cookie = cookieOf(res)!;
    for (const attr of ['HttpOnly', 'Secure', 'SameSite=Lax', 'Path=/']) expect(cookie).toContain(attr);
    expect(cookie).toMatch(/Max-Age=2592000/);
    // the store keeps a hash, never the token
    const token = sid.split('=')[1]!;
    const rows = await t.accounts.db.all<{ token_hash: string }>(`SELECT token_hash FROM sessions`);
    expect(rows.some((r) => r.token_hash === token)).toBe(false);
    const me = await fetch(`${t.base}/v1/auth/me`, withSid(sid));
    const { user } = z.strictObject({ user: UserRecord }).parse(await me.json());
    expect(user).toMatchObject({ user_id: body.user_id, eoa: venueSigner.address, email: null, claimed_proxy_count: 1, primary_claimed_proxy: venueSigner.address.toLowerCase(), is_founding: true });
    // the same wallet signs in again: same user
    const again = await signIn(venueSigner);
    expect(again.body.user_id).toBe(body.user_id);
  });

  it('rejects every field the verifier must check', async () => {
    const s = privateKeyToAccount(generatePrivateKey());
    const other = privateKeyToAccount(generatePrivateKey());
    const cases: [string, () => Promise<unknown>, number, string][] = [
      ['wrong domain', () => siweMessage(s, { domain: 'evil.example' }), 401, 'siwe_rejected'],
      ['wrong URI origin', () => siweMessage(s, { uri: 'https://evil.example/login' }), 401, 'siwe_rejected'],
      ['wrong chain', () => siweMessage(s, { chainId: 1 }), 401, 'siwe_rejected'],
      ['stale issued-at', () => siweMessage(s, { issuedAt: new Date(clock.getTime() - 6 * 60_000) }), 401, 'siwe_rejected'],
      ['future issued-at', () => siweMessage(s, { issuedAt: new Date(clock.getTime() + 5 * 60_000) }), 401, 'siwe_rejected'],
      ['expired', () => siweMessage(s, { expirationTime: new Date(clock.getTime() - 1000) }), 401, 'siwe_rejected'],
      ['not before', () => siweMessage(s, { notBefore: new Date(clock.getTime() + 60_000) }), 401, 'siwe_rejected'],
      ['unknown nonce', () => siweMessage(s, { nonce: 'abcdefgh12345678' }), 401, 'invalid_nonce'],
      ['signed by another key', async () => ({ message: (await siweMessage(s)).message, signature: (await siweMessage(other)).signature }), 401, 'invalid_signature'],
      ['not a SIWE message', async () => ({ message: 'hello', signature: '0x' + 'ab'.repeat(65) }), 400, 'invalid_siwe_message'],
      ['message too long', async () => ({ message: 'x'.repeat(4097), signature: '0x00' }), 400, 'invalid_request'],
      ['signature not hex', async () => ({ ...(await siweMessage(s)), signature: 'zz' }), 400, 'invalid_request'],
      ['empty custodian_session', async () => ({ ...(await siweMessage(s)), custodian_session: '' }), 400, 'invalid_request'],
      ['unknown body key', async () => ({ ...(await siweMessage(s)), extra: 1 }), 400, 'invalid_request'],
      ['trailing text', async () => { const m = (await siweMessage(s)).message + '\nP.S. also approve this'; return { message: m, signature: await s.signMessage({ message: m }) }; }, 400, 'invalid_siwe_message'],
      ['text before URI', async () => { const m = (await siweMessage(s)).message.replace('\nURI:', '\nhidden\nURI:'); return { message: m, signature: await s.signMessage({ message: m }) }; }, 400, 'invalid_siwe_message'],
      ['lowercase address', async () => { const m = (await siweMessage(s)).message.replace(s.address, s.address.toLowerCase()); return { message: m, signature: await s.signMessage({ message: m }) }; }, 400, 'invalid_siwe_message'],
      ['unparsable expiry', async () => { const m = (await siweMessage(s)).message.replace(/(Issued At: [^\n]+)/, '$1\nExpiration Time: 2020-01-01'); return { message: m, signature: await s.signMessage({ message: m }) }; }, 400, 'invalid_siwe_message'],
    ];
    for (const [name, make, status, code] of cases) {
      const body = await make();
      await expectError(await verify(body), status, code).catch((e: Error) => {
        throw new Error(`${name}: ${e.message}`);
      });
    }
    // a long custodian_session within bounds is accepted
    const ok = await verify({ ...(await siweMessage(s)), custodian_session: 'c'.repeat(4096) });
    expect(ok.status).toBe(200);
  });

  it('uses a nonce once, even under concurrent requests, and never after 5 minutes', async () => {
    const s = privateKeyToAccount(generatePrivateKey());
    const signed = await siweMessage(s);
    const results = await Promise.all(Array.from({ length: 12 }, () => verify(signed)));
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    for (const r of results.filter((x) => x.status !== 200)) await expectError(r, 401, 'invalid_nonce');
    // expiry: a nonce issued now is dead 5 minutes later (the message itself is re-dated so only the nonce is stale)
    const n = await nonce();
    advance(5 * 60_000);
    await expectError(await verify(await siweMessage(s, { nonce: n })), 401, 'invalid_nonce');
  });
});

describe('magic link', () => {
  const start = (body: unknown, app = mailApp, headers: Record<string, string> = {}) => fetch(`${app.base}/v1/auth/magic/start`, json(body, headers));
  const linkFor = (email: string) => {
    const mail = [...inbox].reverse().find((m) => m.to === email);
    const m = /(http:\/\/127\.0\.0\.1:\d+\/v1\/auth\/magic\/callback\?token=[A-Za-z0-9_%-]+)/.exec((mail?.body ?? '').replace(/=\r?\n/g, ''));
    return m![1]!.replace(/=3D/g, '=');
  };

  it('mails a single-use link over SMTP; the callback sets the cookie and redirects to next', async () => {
    const res = await start({ email: 'Alice@Example.com', next: '/dashboard?tab=keys' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true }); // a real transport: no dev_link
    const link = linkFor('alice@example.com');
    const token = new URL(link).searchParams.get('token')!;
    expect(await mailApp.accounts.db.get(`SELECT count(*) AS n FROM magic_tokens WHERE token_hash = ?`, [token])).toEqual({ n: 0 });
    const cb = await fetch(link, { redirect: 'manual' });
    expect(cb.status).toBe(302);
    expect(cb.headers.get('location')).toBe('/dashboard?tab=keys');
    const sid = sidOf(cb);
    const me = z.strictObject({ user: UserRecord }).parse(await (await fetch(`${mailApp.base}/v1/auth/me`, withSid(sid))).json());
    expect(me.user.email).toBe('alice@example.com');
    await expectError(await fetch(link, { redirect: 'manual' }), 400, 'invalid_token');
  });

  it('redirects to / without next, and consumes a token once under concurrent callbacks', async () => {
    await start({ email: 'bob@example.com' });
    const link = `${linkFor('bob@example.com')}&utm_source=newsletter`; // mail clients append tracking parameters
    const results = await Promise.all(Array.from({ length: 10 }, () => fetch(link, { redirect: 'manual' })));
    const won = results.filter((r) => r.status === 302);
    expect(won).toHaveLength(1);
    expect(won[0]!.headers.get('location')).toBe('/');
    for (const r of results.filter((x) => x.status !== 302)) await expectError(r, 400, 'invalid_token');
  });

  it('answers ok when the mail relay refuses the address (no 500, no probing)', async () => {
    const res = await start({ email: 'bounce@example.com' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true });
  });

  it('expires tokens after 15 minutes', async () => {
    await start({ email: 'late@example.com' });
    const link = linkFor('late@example.com');
    advance(15 * 60_000);
    await expectError(await fetch(link, { redirect: 'manual' }), 400, 'invalid_token');
  });

  it('returns dev_link in development (no SMTP configured)', async () => {
    const res = await start({ email: 'dev@example.com' }, t);
    const body = z.strictObject({ ok: z.literal(true), dev_link: z.string() }).parse(await res.json());
    const cb = await fetch(body.dev_link, { redirect: 'manual' });
    expect(cb.status).toBe(302);
    expect(cookieOf(cb)).toBeDefined();
  });

  it('validates email and next', async () => {
    // on the app with loose rate limits: this test is about validation
    for (const next of ['//evil.example', '/\\evil.example', 'https://evil.example', 'dashboard', '/a\tb', '/a\nb', '/\u0000', '/' + 'a'.repeat(512)])
      await expectError(await start({ email: 'x@example.com', next }, t), 400, 'invalid_request');
    expect((await start({ email: 'x@example.com', next: '/' + 'a'.repeat(511) }, t)).status).toBe(200);
    for (const email of ['not-an-email', `${'a'.repeat(250)}@x.io`, ''])
      await expectError(await start({ email }, t), 400, 'invalid_request');
    await expectError(await start({ email: 'x@example.com', extra: true }, t), 400, 'invalid_request');
    await expectError(await fetch(`${mailApp.base}/v1/auth/magic/callback`, { redirect: 'manual' }), 400, 'invalid_request');
    await expectError(await fetch(`${mailApp.base}/v1/auth/magic/callback?token=nope`, { redirect: 'manual' }), 400, 'invalid_token');
  });

  it('limits starts per email and per IP with 429 and Retry-After', async () => {
    // mailApp runs the default rules: 3 per email and 10 per IP per 15 minutes
    advance(15 * 60_000);
    for (let i = 0; i < 3; i++) expect((await start({ email: 'spam@example.com' })).status).toBe(200);
    const limited = await start({ email: 'spam@example.com' });
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    await expectError(limited, 429, 'rate_limited');
    advance(15 * 60_000);
    const codes: number[] = [];
    for (let i = 0; i < 11; i++) codes.push((await start({ email: `ip${i}@example.com` })).status);
    expect(codes.slice(0, 10).every((c) => c === 200)).toBe(true);
    expect(codes[10]).toBe(429);
  });
});

describe('sessions', () => {
  it('logout ends the session; logout-all revokes every session and returns the count', async () => {
    const signer = privateKeyToAccount(generatePrivateKey());
    const a = await signIn(signer);
    const b = await signIn(signer);
    const c = await signIn(signer);
    const out = await fetch(`${t.base}/v1/auth/logout`, withSid(a.sid, { method: 'POST' }));
    expect(await out.json()).toEqual({ ok: true });
    expect(cookieOf(out)).toMatch(/Expires=Thu, 01 Jan 1970/);
    expect(await (await fetch(`${t.base}/v1/auth/me`, withSid(a.sid))).json()).toEqual({ user: null });
    await expectError(await fetch(`${t.base}/v1/auth/logout`, { method: 'POST' }), 401, 'auth_required');
    const all = await fetch(`${t.base}/v1/auth/logout-all`, withSid(b.sid, { method: 'POST' }));
    expect(await all.json()).toEqual({ ok: true, revoked: 2 });
    for (const s of [b.sid, c.sid]) expect(await (await fetch(`${t.base}/v1/auth/me`, withSid(s))).json()).toEqual({ user: null });
    await expectError(await fetch(`${t.base}/v1/auth/logout-all`, { method: 'POST' }), 401, 'auth_required');
  });

  it('ends a session after 7 idle days and 30 days after sign-in at the latest', async () => {
    const idle = await signIn();
    advance(SESSION_IDLE_MS - 60_000);
    expect(((await (await fetch(`${t.base}/v1/auth/me`, withSid(idle.sid))).json()) as { user: unknown }).user).not.toBeNull();
    advance(SESSION_IDLE_MS);
    expect(await (await fetch(`${t.base}/v1/auth/me`, withSid(idle.sid))).json()).toEqual({ user: null });
    const busy = await signIn();
    let alive = 0;
    for (let d = 0; d < 6; d++) {
      advance(6 * 24 * 3600_000);
      const me = (await (await fetch(`${t.base}/v1/auth/me`, withSid(busy.sid))).json()) as { user: unknown };
      if (me.user) alive += 6;
    }
    // touched every 6 days it never idles out, yet it ends at day 30 (alive at days 6..24, dead from day 30)
    expect(SESSION_ABSOLUTE_MS).toBe(30 * 24 * 3600_000);
    expect(alive).toBe(24);
  });

  it('refuses cookie-authenticated writes from another origin', async () => {
    const s = await signIn();
    await expectError(await fetch(`${t.base}/v1/auth/logout`, withSid(s.sid, { method: 'POST', headers: { origin: 'https://evil.example' } })), 403, 'csrf_rejected');
    const ok = await fetch(`${t.base}/v1/auth/logout`, withSid(s.sid, { method: 'POST', headers: { origin: t.origin } }));
    expect(ok.status).toBe(200);
  });
});

describe('the user record', () => {
  it('GET is {user: null} anonymously; PATCH changes only what is sent and returns the six fields', async () => {
    expect(await (await fetch(`${t.base}/v1/auth/me`)).json()).toEqual({ user: null });
    const s = await signIn();
    const patch = (body: unknown, sid = s.sid) => fetch(`${t.base}/v1/auth/me`, withSid(sid, { ...json(body), method: 'PATCH' }));
    const r1 = z.strictObject({ user: PatchedUser }).parse(await (await patch({ display_name: 'Ada', x_username: 'ada_l' })).json());
    expect(r1.user).toMatchObject({ display_name: 'Ada', x_username: 'ada_l', email: null });
    const r3 = z.strictObject({ user: PatchedUser }).parse(await (await patch({ display_name: null })).json());
    expect(r3.user).toMatchObject({ display_name: null, x_username: 'ada_l' });
    for (const bad of [{ display_name: 'x'.repeat(81) }, { x_username: 'x'.repeat(41) }, { email: 'nope' }, { email: `${'a'.repeat(250)}@x.io` }, { plan: 'desk' }, { display_name: 'a\u0007b' }])
      await expectError(await patch(bad), 400, 'invalid_request');
    await expectError(await fetch(`${t.base}/v1/auth/me`, { ...json({ display_name: 'x' }), method: 'PATCH' }), 401, 'auth_required');
    // an API key reads the account but cannot change or delete it
    const { key } = await t.keyFor('free');
    await expectError(await fetch(`${t.base}/v1/auth/me`, { ...json({ email: 'attacker@evil.example' }), method: 'PATCH', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` } }), 403, 'session_required');
    await expectError(await fetch(`${t.base}/v1/auth/me`, { ...json({ confirm: true }), method: 'DELETE', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` } }), 403, 'session_required');
  });

  it('changes the email only when the link mailed to the new address is used', async () => {
    const signer = privateKeyToAccount(generatePrivateKey());
    const res = await verify(await siweMessage(signer, {}, mailApp), mailApp);
    const sid = sidOf(res);
    const patch = (body: unknown, who = sid) => fetch(`${mailApp.base}/v1/auth/me`, withSid(who, { ...json(body), method: 'PATCH' }));
    expect(res.status).toBe(200);
    const pres = await patch({ email: 'New@Example.com' });
    const pbody = await pres.json();
    expect(pres.status, JSON.stringify(pbody)).toBe(200);
    const pending = z.strictObject({ user: PatchedUser }).parse(pbody);
    expect(pending.user.email).toBeNull(); // not yet: the owner of the address must confirm
    const link = mailedLink('new@example.com', '/v1/auth/email/confirm');
    // a sign-in callback does not accept a confirmation token
    await expectError(await fetch(link.replace('/email/confirm', '/magic/callback'), { redirect: 'manual' }), 400, 'invalid_token');
    const ok = await fetch(link, { redirect: 'manual' });
    expect(ok.status).toBe(302);
    const me = z.strictObject({ user: UserRecord }).parse(await (await fetch(`${mailApp.base}/v1/auth/me`, withSid(sid))).json());
    expect(me.user.email).toBe('new@example.com');
    await expectError(await fetch(link, { redirect: 'manual' }), 400, 'invalid_token');
    // another account asking for the same address learns nothing at PATCH time; its confirmation is a conflict
    const other = sidOf(await verify(await siweMessage(privateKeyToAccount(generatePrivateKey()), {}, mailApp), mailApp));
    expect((await patch({ email: 'new@example.com' }, other)).status).toBe(200);
    const link2 = mailedLink('new@example.com', '/v1/auth/email/confirm');
    expect(link2).not.toBe(link);
    await expectError(await fetch(link2, { redirect: 'manual' }), 409, 'email_taken');
    // removing the email needs no confirmation
    expect((await (await patch({ email: null })).json() as { user: { email: unknown } }).user.email).toBeNull();
  });

  it('DELETE with confirm: true anonymizes irreversibly and kills sessions and keys', async () => {
    const signer = privateKeyToAccount(generatePrivateKey());
    const s = await signIn(signer);
    const del = (body: unknown) => fetch(`${t.base}/v1/auth/me`, withSid(s.sid, { ...json(body), method: 'DELETE' }));
    const minted = (await (await fetch(`${t.base}/v1/api-keys`, withSid(s.sid, json({ label: 'bot' })))).json()) as { key: string };
    await expectError(await del({}), 400, 'invalid_request');
    await expectError(await del({ confirm: false }), 400, 'invalid_request');
    const res = await del({ confirm: true });
    expect(await res.json()).toEqual({ deleted: true });
    expect(await (await fetch(`${t.base}/v1/auth/me`, withSid(s.sid))).json()).toEqual({ user: null });
    await expectError(await fetch(`${t.base}/v1/api-keys`, { headers: { authorization: `Bearer ${minted.key}` } }), 401, 'invalid_api_key');
    const row = (await t.accounts.db.get<Record<string, unknown>>(`SELECT eoa, email, display_name, x_username, deleted_at FROM users WHERE user_id = ?`, [s.body.user_id]))!;
    expect(row).toMatchObject({ eoa: null, email: null, display_name: null, x_username: null });
    expect(row.deleted_at).not.toBeNull();
    const back = await signIn(signer);
    expect(back.body.user_id).not.toBe(s.body.user_id);
    // an email account's outstanding sign-in link dies with the account
    await fetch(`${mailApp.base}/v1/auth/magic/start`, json({ email: 'leaving@example.com' }));
    const first = mailedLink('leaving@example.com', '/v1/auth/magic/callback');
    const leaving = sidOf(await fetch(first, { redirect: 'manual' }));
    await fetch(`${mailApp.base}/v1/auth/magic/start`, json({ email: 'leaving@example.com' }));
    const outstanding = mailedLink('leaving@example.com', '/v1/auth/magic/callback');
    expect((await fetch(`${mailApp.base}/v1/auth/me`, withSid(leaving, { ...json({ confirm: true }), method: 'DELETE' }))).status).toBe(200);
    await expectError(await fetch(outstanding, { redirect: 'manual' }), 400, 'invalid_token');
  });
});

describe('API keys and plans', () => {
  const KeyInfo = z.strictObject({ id: z.string(), label: z.string(), prefix: z.string(), created_at: z.string(), last_used_at: z.string().nullable(), revoked_at: z.string().nullable() });

  it('mints a key once from a session, lists it by prefix, and revokes it', async () => {
    const s = await signIn();
    const res = await fetch(`${t.base}/v1/api-keys`, withSid(s.sid, json({ label: 'research bot' })));
    expect(res.status).toBe(201);
    const minted = KeyInfo.extend({ key: z.string().regex(/^pk_live_[a-z2-7]{26}$/) }).parse(await res.json());
    expect(minted.key.startsWith(minted.prefix)).toBe(true);
    const auth = { headers: { authorization: `Bearer ${minted.key}` } };
    const list = z.strictObject({ rows: z.array(KeyInfo) }).parse(await (await fetch(`${t.base}/v1/api-keys`, auth)).json());
    expect(list.rows.map((r) => r.id)).toEqual([minted.id]);
    expect(JSON.stringify(list)).not.toContain(minted.key);
    expect(list.rows[0]!.last_used_at).not.toBeNull();
    // a key cannot mint keys
    await expectError(await fetch(`${t.base}/v1/api-keys`, { ...json({ label: 'x' }), headers: { ...json({}).headers, authorization: `Bearer ${minted.key}` } }), 403, 'session_required');
    // someone else cannot revoke it
    const other = await signIn();
    await expectError(await fetch(`${t.base}/v1/api-keys/${minted.id}`, withSid(other.sid, { method: 'DELETE' })), 404, 'not_found');
    const del = await fetch(`${t.base}/v1/api-keys/${minted.id}`, withSid(s.sid, { method: 'DELETE' }));
    expect(await del.json()).toEqual({ ok: true, id: minted.id, revoked: true });
    await expectError(await fetch(`${t.base}/v1/api-keys`, auth), 401, 'invalid_api_key');
    await expectError(await fetch(`${t.base}/v1/api-keys/${minted.id}`, withSid(s.sid, { method: 'DELETE' })), 404, 'not_found');
    await expectError(await fetch(`${t.base}/v1/api-keys/nope`, withSid(s.sid, { method: 'DELETE' })), 400, 'invalid_request');
  });

  it('limits minting to 5 keys an hour', async () => {
    const s = await signIn();
    const codes: number[] = [];
    for (let i = 0; i < 6; i++) codes.push((await fetch(`${t.base}/v1/api-keys`, withSid(s.sid, json({ label: `k${i}` })))).status);
    expect(codes).toEqual([201, 201, 201, 201, 201, 429]);
  });

  it("reports and enforces the plan's per-minute rate and monthly quota on key traffic", async () => {
    advance(60_000 - (clock.getTime() % 60_000)); // start of a minute
    const { key, userId } = await t.keyFor('free');
    const plan = PLANS.free;
    const auth = { headers: { authorization: `Bearer ${key}` } };
    const first = await fetch(`${t.base}/v1/account/plan`, auth);
    expect(first.headers.get('x-ratelimit-limit')).toBe(String(plan.requests_per_minute));
    expect(first.headers.get('x-ratelimit-remaining')).toBe(String(plan.requests_per_minute - 1));
    expect(first.headers.get('x-plan-quota-monthly')).toBe(String(plan.requests_per_month));
    expect(first.headers.get('x-plan-quota-used')).toBe('1');
    expect(((await first.json()) as { plan: { id: string } }).plan.id).toBe('free');
    for (let i = 1; i < plan.requests_per_minute; i++) expect((await fetch(`${t.base}/v1/account/plan`, auth)).status).toBe(200);
    const over = await fetch(`${t.base}/v1/account/plan`, auth);
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
    await expectError(over, 429, 'rate_limited');
    advance(60_000);
    expect((await fetch(`${t.base}/v1/account/plan`, auth)).status).toBe(200);
    // the monthly quota counts per user across keys: fill it up, the next request is refused until the month turns
    const d = clock;
    const month = { start: Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1), end: Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) };
    while ((await t.rates.peek(`key-month:${userId}`, month.start)) < plan.requests_per_month) await t.rates.hit(`key-month:${userId}`, month.start, month.end);
    advance(60_000);
    await expectError(await fetch(`${t.base}/v1/account/plan`, auth), 429, 'quota_exceeded');
  });

  it('counts the per-minute rate per user, not per key', async () => {
    advance(60_000 - (clock.getTime() % 60_000));
    const s = await signIn();
    const keys: string[] = [];
    for (let i = 0; i < 2; i++) keys.push(((await (await fetch(`${t.base}/v1/api-keys`, withSid(s.sid, json({ label: `k${i}` })))).json()) as { key: string }).key);
    const statuses: number[] = [];
    for (let i = 0; i <= PLANS.free.requests_per_minute; i++) statuses.push((await fetch(`${t.base}/v1/account/plan`, { headers: { authorization: `Bearer ${keys[i % 2]}` } })).status);
    expect(statuses.filter((x) => x === 200)).toHaveLength(PLANS.free.requests_per_minute);
    expect(statuses.at(-1)).toBe(429);
  });

  it('answers wrong keys with 401 until the IP has failed too often, then 429', async () => {
    advance(60_000 - (clock.getTime() % 60_000));
    const codes: number[] = [];
    for (let i = 0; i < 61; i++) codes.push((await fetch(`${t.base}/v1/account/plan`, { headers: { authorization: `Bearer pk_live_${'q'.repeat(26)}` } })).status);
    expect(codes.slice(0, 60).every((c) => c === 401)).toBe(true);
    expect(codes[60]).toBe(429);
    advance(60_000);
  });

  it('sends a Pro user the paid plan and features', async () => {
    const { key } = await t.keyFor('pro');
    const body = (await (await fetch(`${t.base}/v1/account/plan`, { headers: { authorization: `Bearer ${key}` } })).json()) as { plan: { id: string; features: string[]; webhook_events_per_month: number } };
    expect(body.plan).toMatchObject({ id: 'pro', features: ['metrics_full', 'extra_metrics'], webhook_events_per_month: PLANS.pro.webhook_events_per_month });
  });
});

describe('fuzz', () => {
  it('never answers 500 or a non-error body on any auth route', async () => {
    const routes: [string, string][] = [
      ['POST', '/v1/auth/siwe/nonce'],
      ['POST', '/v1/auth/siwe/verify'],
      ['POST', '/v1/auth/magic/start'],
      ['GET', '/v1/auth/magic/callback'],
      ['POST', '/v1/auth/logout'],
      ['POST', '/v1/auth/logout-all'],
      ['GET', '/v1/auth/me'],
      ['PATCH', '/v1/auth/me'],
      ['DELETE', '/v1/auth/me'],
      ['GET', '/v1/api-keys'],
      ['POST', '/v1/api-keys'],
      ['DELETE', '/v1/api-keys/key_aaaaaaaaaaaaaaaa'],
    ];
    const s = await signIn();
    const value = fc.oneof(fc.string({ maxLength: 30 }), fc.integer(), fc.boolean(), fc.constant(null), fc.constant('0x' + 'ab'.repeat(65)), fc.constant('//evil'), fc.array(fc.string(), { maxLength: 2 }));
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...routes),
        fc.oneof(fc.dictionary(fc.constantFrom('message', 'signature', 'custodian_session', 'email', 'next', 'display_name', 'x_username', 'confirm', 'label', 'token', 'x'), value, { maxKeys: 4 }), fc.string({ maxLength: 40 })),
        fc.constantFrom('json', 'raw', 'none'),
        fc.constantFrom<'none' | 'session' | 'badkey' | 'garbage'>('none', 'session', 'badkey', 'garbage'),
        async ([method, path], body, mode, cred) => {
          const headers: Record<string, string> = {};
          if (cred === 'session') headers.cookie = s.sid;
          if (cred === 'badkey') headers.authorization = 'Bearer pk_live_' + 'z'.repeat(26);
          const text = typeof body === 'string' ? body : JSON.stringify(body);
          if (cred === 'garbage') headers.authorization = text.replace(/[^\x20-\x7e]/g, '').slice(0, 20) || 'x';
          let url = `${t.base}${path}`;
          const init: RequestInit = { method, headers, redirect: 'manual' };
          if (method === 'GET') {
            if (typeof body === 'object') url += `?${new URLSearchParams(Object.entries(body).map(([k, v]): [string, string] => [k, JSON.stringify(v)]))}`;
          } else if (mode === 'json') Object.assign(init, { body: JSON.stringify(body), headers: { ...headers, 'content-type': 'application/json' } });
          else if (mode === 'raw') Object.assign(init, { body: text, headers: { ...headers, 'content-type': 'application/json' } });
          // never sign the fuzz session out: DELETE /me and logout would end the fixture
          if (cred === 'session' && (path === '/v1/auth/me' && method === 'DELETE' || path.startsWith('/v1/auth/logout'))) return;
          const res = await fetch(url, init);
          expect(res.status, `${method} ${path}`).toBeLessThan(500);
          if (res.status >= 400) {
            const b = (await res.json()) as Record<string, unknown>;
            for (const k of Object.keys(b)) expect(ERROR_KEYS.has(k), k).toBe(true);
            expect(typeof b.error).toBe('string');
          }
        },
      ),
      { numRuns: 300 },
    );
  }, 120_000);
});
