/**
 * Sign-in, sessions, the account record and API keys (docs/api.md "Accounts").
 *
 * - Wallet sign-in (EIP-4361): a single-use nonce that lives 5 minutes; verify checks every field viem's validator
 *   leaves out (URI origin, chain id, issued-at freshness), the signature offline for EOAs and over RPC for smart
 *   wallets (EIP-1271 / EIP-6492) when SIWE_RPC_URL is set, and only then consumes the nonce, atomically.
 * - Magic link: a random token mailed to the address, stored hashed, single use, 15 minutes; the callback sets the
 *   session cookie and redirects to the validated `next` path.
 * - Session cookie __Secure-service_sid: HttpOnly, Secure, SameSite=Lax; the store keeps only its hash; it ends 7
 *   days after the last request or 30 days after sign-in, whichever is first.
 * - API keys: pk_live_ + 26 base32 characters, shown once, stored hashed; `Authorization: Bearer <key>`.
 */
import express, { type Request, type RequestHandler, type Response, type Router } from 'express';
import { createPublicClient, getAddress, http, verifyMessage, type Hex } from 'viem';
import { generateSiweNonce, parseSiweMessage } from 'viem/siwe';
import { z } from 'zod';
import { PLANS } from '../core/plans.ts';
import type { QueryRunner } from '../core/query.ts';
import { AccountError, type AccountStore, readCookie, SESSION_COOKIE, MAGIC_TOKEN_TTL_MS, NONCE_TTL_MS, SESSION_ABSOLUTE_MS } from '../data/account-store.ts';
import { ApiError } from './errors.ts';
import { emailChangeMail, magicLinkMail, type Mailer, type OutgoingMail } from './mail.ts';
import { principalFor, principalOf, requireAuth } from './principal.ts';
import { clientIp, type RateLimiter } from './rate-limits.ts';

export { SESSION_COOKIE };

/** an issued-at further in the future than this is rejected (clock skew allowance) */
export const SIWE_MAX_SKEW_MS = 60_000;

export interface AuthConfig {
  /** the service's public origin (scheme://host[:port]): SIWE URIs must be on it, magic links point at it, and
   *  cookie-authenticated writes from a browser must come from it */
  origin: string;
  /** the SIWE domain (host[:port]); default: the origin's host */
  siweDomain?: string;
  /** chain ids a SIWE message may name; default [137] (Polygon, where the venue settles) */
  chainIds?: readonly number[];
  /** JSON-RPC endpoint for smart-wallet signatures (EIP-1271 / EIP-6492); without it only EOA signatures verify */
  rpcUrl?: string;
}

export interface AuthDeps {
  store: AccountStore;
  db: QueryRunner;
  mailer: Mailer;
  limiter: RateLimiter;
  config: AuthConfig;
  now: () => Date;
}

// ---------------------------------------------------------------------------------------------------------------
// Request schemas (the spec's limits)
// ---------------------------------------------------------------------------------------------------------------

const NoBody = z.union([z.undefined(), z.strictObject({})]);
export const SiweVerifyBody = z.strictObject({
  message: z.string().min(1).max(4096),
  // 65-byte EOA signatures; EIP-1271 / 6492 signatures are longer, so the cap is generous but bounded
  signature: z.string().regex(/^0x([0-9a-fA-F]{2})+$/, 'signature must be 0x-prefixed hex').max(32_768),
  custodian_session: z.string().min(1).max(4096).optional(),
});
const CONTROL = /[\u0000-\u001f\u007f]/;
/** a same-site path: one leading slash, never // or /\ (protocol-relative tricks), no control characters */
export const NextPath = z
  .string()
  .max(512)
  .refine((s) => s.startsWith('/') && !s.startsWith('//') && !s.startsWith('/\\'), 'next must start with a single / (not // or /\\)')
  .refine((s) => !CONTROL.test(s), 'next must not contain control characters')
  .refine((s) => !s.includes('\\'), 'next must not contain a backslash');
export const MagicStartBody = z.strictObject({ email: z.email().max(254), next: NextPath.optional() });
// not strict: mail clients append tracking parameters to links; unknown keys are dropped
export const MagicCallbackQuery = z.object({ token: z.string().min(1).max(256) });
const Printable = (max: number) => z.string().max(max).refine((s) => !CONTROL.test(s), 'control characters are not allowed');
export const PatchMeBody = z.strictObject({
  display_name: Printable(80).nullable().optional(),
  email: z.email().max(254).nullable().optional(),
  x_username: Printable(40).nullable().optional(),
});
export const DeleteMeBody = z.strictObject({ confirm: z.literal(true, { error: 'confirm must be true' }) });
export const MintKeyBody = z.strictObject({ label: Printable(64).min(1) });
const KeyIdParam = z.string().regex(/^key_[a-z2-7]{16}$/, 'not a key id');

// ---------------------------------------------------------------------------------------------------------------
// Cookies and authentication
// ---------------------------------------------------------------------------------------------------------------

function setSessionCookie(res: Response, token: string): void {
  res.cookie(SESSION_COOKIE, token, { httpOnly: true, secure: true, sameSite: 'lax', path: '/', maxAge: SESSION_ABSOLUTE_MS });
}
function clearSessionCookie(res: Response): void {
  res.clearCookie(SESSION_COOKIE, { httpOnly: true, secure: true, sameSite: 'lax', path: '/' });
}

const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * Identify the caller: a Bearer key (a malformed or dead key is a 401, never a silent downgrade to anonymous) or
 * the session cookie (a dead cookie is cleared and the caller is anonymous). Cookie-authenticated writes from a
 * browser on another origin are refused (SameSite=Lax already keeps the cookie off cross-site POSTs; this is the
 * second lock).
 */
export function authenticate(deps: AuthDeps): RequestHandler {
  // a wrong credential costs the caller's IP a token: probing keys hits 429 long before it finds one
  const failed = async (req: Request, res: Response, e: ApiError) => {
    await deps.limiter.take(deps.limiter.rule('authFailIp'), clientIp(req), res);
    throw e;
  };
  return async (req, res, next) => {
    const nowMs = deps.now().getTime();
    const authz = req.get('authorization');
    if (authz !== undefined) {
      const m = /^Bearer +(\S+) *$/i.exec(authz);
      if (!m) return failed(req, res, new ApiError(401, 'invalid_authorization', 'Authorization must be "Bearer <API key>"'));
      const k = await deps.store.authenticateKey(m[1]!, nowMs);
      if (!k) return failed(req, res, new ApiError(401, 'invalid_api_key', 'the API key is unknown or revoked'));
      res.locals.principal = principalFor('api_key', k.user_id, k.plan, { keyId: k.key_id });
      return next();
    }
    const token = readCookie(req.headers.cookie, SESSION_COOKIE);
    if (token) {
      const s = token.length <= 128 ? await deps.store.session(token, nowMs) : null;
      if (!s) clearSessionCookie(res);
      else {
        const origin = req.get('origin');
        if (UNSAFE.has(req.method) && origin !== undefined && origin !== deps.config.origin)
          throw new ApiError(403, 'csrf_rejected', 'cross-origin write refused', `requests carrying the session cookie must come from ${deps.config.origin}`);
        res.locals.principal = principalFor('session', s.user_id, s.plan, { sessionId: s.session_id });
      }
    }
    next();
  };
}

// ---------------------------------------------------------------------------------------------------------------
// SIWE
// ---------------------------------------------------------------------------------------------------------------

const reject = (code: string, message: string, reason?: string) => new ApiError(401, code, message, reason);

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const SIWE_FIELDS = [
  { key: 'URI', required: true },
  { key: 'Version', required: true },
  { key: 'Chain ID', required: true },
  { key: 'Nonce', required: true },
  { key: 'Issued At', required: true, time: true },
  { key: 'Expiration Time', required: false, time: true },
  { key: 'Not Before', required: false, time: true },
  { key: 'Request ID', required: false },
] as const;

/**
 * The EIP-4361 grammar, line by line. viem's parser is lenient (it finds fields anywhere and ignores what follows
 * them), so a message with extra text, an unchecksummed address or an unparsable time would otherwise pass; a
 * wallet shows such text as a plain message rather than as a sign-in for this domain. Returns why it is not
 * canonical, or null.
 */
export function siweGrammarError(message: string): string | null {
  const lines = message.split('\n');
  if (!/^(?:[a-zA-Z][a-zA-Z0-9+.-]*:\/\/)?\S+ wants you to sign in with your Ethereum account:$/.test(lines[0] ?? '')) return 'the first line must be "<domain> wants you to sign in with your Ethereum account:"';
  const address = lines[1] ?? '';
  if (!/^0x[0-9a-fA-F]{40}$/.test(address) || getAddress(address) !== address) return 'the second line must be the EIP-55 checksummed address';
  if (lines[2] !== '') return 'a blank line must follow the address';
  let i = 3;
  if (lines[3] === '') i = 4;
  else if (lines[4] === '') i = 5;
  else return 'the statement must be one line between blank lines';
  for (const f of SIWE_FIELDS) {
    const line = lines[i];
    if (line?.startsWith(`${f.key}: `)) {
      const value = line.slice(f.key.length + 2);
      if (!value) return `${f.key} is empty`;
      if ('time' in f && (!RFC3339.test(value) || !Number.isFinite(Date.parse(value)))) return `${f.key} must be an RFC 3339 date-time`;
      i++;
    } else if (f.required) return `expected "${f.key}: …" on line ${i + 1}`;
  }
  if (lines[i] === 'Resources:') {
    i++;
    while (lines[i]?.startsWith('- ')) i++;
  }
  return i === lines.length ? null : `unexpected text on line ${i + 1}`;
}

/** Check a parsed EIP-4361 message against the service's expectations; returns the signer address. */
export function checkSiweFields(msg: ReturnType<typeof parseSiweMessage>, cfg: AuthConfig, nowMs: number): `0x${string}` {
  const domain = cfg.siweDomain ?? new URL(cfg.origin).host;
  const chains = cfg.chainIds ?? [137];
  if (!msg.address || !msg.domain || !msg.uri || !msg.version || msg.chainId === undefined || !msg.nonce || !msg.issuedAt)
    throw new ApiError(400, 'invalid_siwe_message', 'the message is not an EIP-4361 message', 'domain, address, URI, version, chain id, nonce and issued-at are required');
  if (msg.version !== '1') throw reject('siwe_rejected', 'unsupported SIWE version', `version must be 1`);
  if (msg.domain !== domain) throw reject('siwe_rejected', 'the message is for another domain', `domain must be ${domain}`);
  let uriOrigin: string;
  try {
    uriOrigin = new URL(msg.uri).origin;
  } catch {
    throw reject('siwe_rejected', 'the message URI is not a URL');
  }
  if (uriOrigin !== cfg.origin) throw reject('siwe_rejected', 'the message URI is for another origin', `URI must be on ${cfg.origin}`);
  if (!chains.includes(msg.chainId)) throw reject('siwe_rejected', 'unsupported chain id', `chain id must be one of ${chains.join(', ')}`);
  const issued = msg.issuedAt.getTime();
  if (!Number.isFinite(issued)) throw new ApiError(400, 'invalid_siwe_message', 'issued-at is not a date');
  if (issued > nowMs + SIWE_MAX_SKEW_MS) throw reject('siwe_rejected', 'the message is issued in the future');
  if (nowMs - issued > NONCE_TTL_MS) throw reject('siwe_rejected', 'the message is stale', `issued-at must be within ${NONCE_TTL_MS / 60_000} minutes`);
  if (msg.expirationTime && !(msg.expirationTime.getTime() > nowMs)) throw reject('siwe_rejected', 'the message has expired');
  if (msg.notBefore && !(msg.notBefore.getTime() <= nowMs)) throw reject('siwe_rejected', 'the message is not valid yet');
  return getAddress(msg.address);
}

async function verifySignature(address: `0x${string}`, message: string, signature: Hex, cfg: AuthConfig): Promise<boolean> {
  try {
    if (await verifyMessage({ address, message, signature })) return true;
  } catch {
    // not an ECDSA signature (e.g. a smart-wallet one): fall through to the RPC check
  }
  if (!cfg.rpcUrl) return false;
  const client = createPublicClient({ transport: http(cfg.rpcUrl, { timeout: 10_000, retryCount: 1 }) });
  try {
    return await client.verifyMessage({ address, message, signature });
  } catch {
    return false;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Routes
// ---------------------------------------------------------------------------------------------------------------

function parseBody<T extends z.ZodType>(schema: T, req: Request): z.infer<T> {
  return schema.parse(req.body) as z.infer<T>;
}

function shortRecord(u: { user_id: string; eoa: string | null; email: string | null; display_name: string | null; x_username: string | null; created_at: string }) {
  return { user_id: u.user_id, eoa: u.eoa, email: u.email, display_name: u.display_name, x_username: u.x_username, created_at: u.created_at };
}

export function authRouter(deps: AuthDeps): Router {
  const r = express.Router();
  const nowMs = () => deps.now().getTime();

  r.post('/siwe/nonce', deps.limiter.perIp('nonceIp'), async (req, res) => {
    NoBody.parse(req.body);
    const nonce = generateSiweNonce();
    const expires = await deps.store.issueNonce(nonce, nowMs());
    res.setHeader('Cache-Control', 'no-store');
    res.json({ nonce, expires_at: expires.toISOString() });
  });

  r.post('/siwe/verify', deps.limiter.perIp('verifyIp'), async (req, res) => {
    const body = parseBody(SiweVerifyBody, req);
    let msg: ReturnType<typeof parseSiweMessage>;
    try {
      msg = parseSiweMessage(body.message);
    } catch {
      throw new ApiError(400, 'invalid_siwe_message', 'the message is not an EIP-4361 message');
    }
    const grammar = siweGrammarError(body.message);
    if (grammar) throw new ApiError(400, 'invalid_siwe_message', 'the message is not a canonical EIP-4361 message', grammar);
    const address = checkSiweFields(msg, deps.config, nowMs());
    // cheap check first, so an unissued nonce never costs a signature check (or an RPC call)
    if (!(await deps.store.nonceLive(msg.nonce!, nowMs()))) throw reject('invalid_nonce', 'the nonce is unknown, expired or already used', 'request a new nonce');
    if (!(await verifySignature(address, body.message, body.signature as Hex, deps.config)))
      throw reject('invalid_signature', 'the signature does not match the message and address', deps.config.rpcUrl ? undefined : 'smart-wallet (EIP-1271/6492) signatures verify only when the service has an RPC endpoint');
    // consumed last, atomically: of two requests racing with one nonce exactly one passes this line
    if (!(await deps.store.consumeNonce(msg.nonce!, nowMs()))) throw reject('invalid_nonce', 'the nonce is unknown, expired or already used', 'request a new nonce');
    const user = await deps.store.userForEoa(address, nowMs());
    // the signer proved control of its address; if that address trades on the venue, it is a claimed proxy
    const venue = await deps.db.all<{ address: string }>(`SELECT address FROM wallets WHERE address = $1`, [address.toLowerCase()]);
    if (venue.length) await deps.store.claimProxies(user.user_id, venue.map((v) => v.address), 'siwe', nowMs());
    const s = await deps.store.createSession(user.user_id, 'siwe', nowMs(), body.custodian_session);
    setSessionCookie(res, s.token);
    res.setHeader('Cache-Control', 'no-store');
    res.json({ ok: true, user_id: user.user_id, eoa: address, expires_at: s.expires_at.toISOString() });
  });

  r.post('/magic/start', deps.limiter.perIp('magicIp'), async (req, res) => {
    const body = parseBody(MagicStartBody, req);
    const email = body.email.toLowerCase();
    await deps.limiter.take(deps.limiter.rule('magicEmail'), email, res);
    if (!deps.mailer.available) throw new ApiError(503, 'mail_unavailable', 'sign-in by email is not configured on this server', 'set SMTP_URL');
    const token = await deps.store.issueMagicToken(email, body.next ?? null, nowMs());
    const link = `${deps.config.origin}/v1/auth/magic/callback?token=${encodeURIComponent(token)}`;
    await sendOrLog(deps.mailer, magicLinkMail(email, link, MAGIC_TOKEN_TTL_MS / 60_000), res);
    res.setHeader('Cache-Control', 'no-store');
    res.json(deps.mailer.devLinks ? { ok: true, dev_link: link } : { ok: true });
  });

  r.get('/magic/callback', async (req, res) => {
    const q = MagicCallbackQuery.parse(req.query);
    const t = await deps.store.consumeMagicToken(q.token, nowMs());
    if (!t) throw new ApiError(400, 'invalid_token', 'the sign-in link is invalid, expired or already used', 'ask for a new link');
    const user = await deps.store.userForEmail(t.email, nowMs());
    const s = await deps.store.createSession(user.user_id, 'magic', nowMs());
    setSessionCookie(res, s.token);
    res.setHeader('Cache-Control', 'no-store');
    res.redirect(302, t.next ?? '/');
  });

  r.post('/logout', async (req, res) => {
    NoBody.parse(req.body);
    const p = principalOf(res);
    if (p.kind !== 'session' || !p.sessionId) throw new ApiError(401, 'auth_required', 'no session to end', 'logout ends the session of the cookie it is sent with');
    await deps.store.revokeSession(p.sessionId, nowMs());
    clearSessionCookie(res);
    res.json({ ok: true });
  });

  r.post('/logout-all', async (req, res) => {
    NoBody.parse(req.body);
    const p = requireAuth(res);
    const revoked = await deps.store.revokeAllSessions(p.userId, nowMs());
    if (p.kind === 'session') clearSessionCookie(res);
    res.json({ ok: true, revoked });
  });

  r.get('/me', async (_req, res) => {
    const p = principalOf(res);
    res.setHeader('Cache-Control', 'no-store');
    res.json({ user: p.userId ? await deps.store.record(p.userId) : null });
  });

  r.patch('/me', async (req, res) => {
    const p = requireSession(res);
    const body = parseBody(PatchMeBody, req);
    const { email, ...rest } = body;
    const user = await deps.store.updateProfile(p.userId, { ...rest, ...(email === null ? { email: null } : {}) });
    // a new email takes effect when the link mailed to it is used: whoever changes it must own it
    const wanted = email?.toLowerCase();
    if (wanted && wanted !== user.email) {
      await deps.limiter.take(deps.limiter.rule('magicEmail'), wanted, res);
      const token = await deps.store.issueMagicToken(wanted, null, nowMs(), p.userId);
      const link = `${deps.config.origin}/v1/auth/email/confirm?token=${encodeURIComponent(token)}`;
      await sendOrLog(deps.mailer, emailChangeMail(wanted, link, MAGIC_TOKEN_TTL_MS / 60_000), res);
    }
    res.json({ user: shortRecord(user) });
  });

  r.get('/email/confirm', async (req, res) => {
    const q = MagicCallbackQuery.parse(req.query);
    let done: { user_id: string; email: string } | null;
    try {
      done = await deps.store.confirmEmailChange(q.token, nowMs());
    } catch (e) {
      if (e instanceof AccountError && e.code === 'email_taken') throw new ApiError(409, 'email_taken', e.message);
      throw e;
    }
    if (!done) throw new ApiError(400, 'invalid_token', 'the confirmation link is invalid, expired or already used', 'change the email again to get a new link');
    res.setHeader('Cache-Control', 'no-store');
    res.redirect(302, '/');
  });

  r.delete('/me', async (req, res) => {
    const p = requireSession(res);
    parseBody(DeleteMeBody, req);
    await deps.store.anonymize(p.userId, nowMs());
    clearSessionCookie(res);
    res.json({ deleted: true });
  });

  return r;
}

/** Changes to the account itself need a signed-in session: a leaked API key must not take over or delete it. */
function requireSession(res: Response) {
  const p = requireAuth(res);
  if (p.kind !== 'session') throw new ApiError(403, 'session_required', 'this change needs a signed-in session', 'API keys read and revoke; they cannot change or delete the account');
  return p;
}

/** Send, and if the transport refuses, log under the trace id instead of failing the request (no address probing). */
async function sendOrLog(mailer: Mailer, mail: OutgoingMail, res: Response): Promise<void> {
  try {
    await mailer.send(mail);
  } catch (e) {
    console.error(`[${String(res.locals.traceId ?? '')}] mail to ${mail.to} failed:`, (e as Error).message);
  }
}

/** The account area: API keys and the plan. Minting needs a session (a key cannot mint keys). */
export function accountRouter(deps: AuthDeps): Router {
  const r = express.Router();
  const nowMs = () => deps.now().getTime();

  r.get('/api-keys', async (_req, res) => {
    const p = requireAuth(res);
    res.json({ rows: await deps.store.listApiKeys(p.userId) });
  });

  r.post('/api-keys', async (req, res) => {
    const p = requireSession(res);
    const body = parseBody(MintKeyBody, req);
    await deps.limiter.take(deps.limiter.rule('keyMint'), p.userId, res);
    try {
      const { key, info } = await deps.store.mintApiKey(p.userId, body.label, nowMs());
      res.setHeader('Cache-Control', 'no-store');
      res.status(201).json({ ...info, key });
    } catch (e) {
      if (e instanceof AccountError && e.code === 'key_limit') throw new ApiError(409, 'key_limit', e.message);
      throw e;
    }
  });

  r.delete('/api-keys/:id', async (req, res) => {
    const p = requireAuth(res);
    const id = KeyIdParam.parse(req.params.id);
    if (!(await deps.store.revokeApiKey(p.userId, id, nowMs()))) throw new ApiError(404, 'not_found', 'no active key with this id on your account');
    res.json({ ok: true, id, revoked: true });
  });

  r.get('/account/invite', async (_req, res) => {
    const p = requireAuth(res);
    const u = (await deps.store.user(p.userId))!;
    res.json({ code: u.invite_code, url: `${deps.config.origin}/?ref=${u.invite_code}` });
  });

  r.get('/account/plan', (_req, res) => {
    const p = requireAuth(res);
    const plan = PLANS[p.plan];
    res.json({ plan: { ...plan, features: [...plan.features] } });
  });

  // API requests this month against the plan (API-key traffic is what counts; this read does not add to it)
  r.get('/account/usage', async (_req, res) => {
    const p = requireAuth(res);
    res.json({ plan: p.plan, api_requests: await deps.limiter.monthlyUsage(p.userId, p.plan), requests_per_minute: PLANS[p.plan].requests_per_minute });
  });

  return r;
}
