/**
 * Accounts (the service state: SQLite by default, PostgreSQL with DATABASE_URL — data/sql/db.ts): users, sessions,
 * API keys, SIWE nonces, magic-link tokens and proxy claims. Secrets (session tokens, API keys, magic tokens) are stored only as SHA-256 hashes: they
 * carry 128+ bits of entropy, so a fast hash is enough (a slow password hash guards low-entropy secrets).
 *
 * Single-use things (nonces, magic tokens) are consumed with one conditional UPDATE, so two concurrent requests
 * (even from two replicas on one database) can never both succeed.
 */
import { createHash, randomBytes } from 'node:crypto';
import { isUniqueViolation, type SqlDb } from './sql/db.ts';
import { ServiceStore, openMigrated, type Migration } from './sql/migrate.ts';
import { PlanId, type PlanId as PlanIdT } from '../core/plans.ts';
import type { AccountDirectory, FoundingStatus, ProxyClaim } from '../web-api/directory.ts';

export const NONCE_TTL_MS = 5 * 60_000;
export const MAGIC_TOKEN_TTL_MS = 15 * 60_000;
/** a session ends after this long without a request… */
export const SESSION_IDLE_MS = 7 * 24 * 3600_000;
/** …and at the latest this long after sign-in */
export const SESSION_ABSOLUTE_MS = 30 * 24 * 3600_000;
/** last_seen is written at most this often per session (idle expiry needs no finer grain) */
const TOUCH_EVERY_MS = 60_000;
export const FOUNDING_SPOTS = 500;
export const MAX_ACTIVE_KEYS = 20;
export const API_KEY_PREFIX = 'pk_live_';
/** key = pk_live_ + 26 base32 characters (130 bits); the first 12 characters are shown as its prefix */
export const API_KEY_RE = /^pk_live_[a-z2-7]{26}$/;
const DISPLAY_PREFIX_LEN = 12;

/** The session cookie's name (the spec's). */
export const SESSION_COOKIE = '__Secure-service_sid';

/** A cookie's value from a Cookie header. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const i = part.indexOf('=');
    if (i > 0 && part.slice(0, i).trim() === name) return part.slice(i + 1).trim();
  }
  return undefined;
}

export const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

const B32 = 'abcdefghijklmnopqrstuvwxyz234567';
function base32(bytes: Buffer, chars: number): string {
  let bits = 0;
  let value = 0;
  let out = '';
  for (const b of bytes) {
    value = (value << 8) | b;
    bits += 8;
    while (bits >= 5 && out.length < chars) {
      out += B32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  return out;
}
const randomId = (prefix: string) => `${prefix}_${base32(randomBytes(10), 16)}`;
export const randomToken = () => randomBytes(32).toString('base64url');

export interface UserRow {
  user_id: string;
  eoa: string | null;
  email: string | null;
  display_name: string | null;
  x_username: string | null;
  created_at: string;
  plan: PlanIdT;
  invite_code: string;
  referred_by: string | null;
  founding: number;
  deleted_at: string | null;
}

/** The spec's user record (GET form). */
export interface UserRecord {
  user_id: string;
  eoa: string | null;
  email: string | null;
  display_name: string | null;
  x_username: string | null;
  created_at: string;
  claimed_proxy_count: number;
  primary_claimed_proxy: string | null;
  is_founding: boolean;
}

export interface SessionInfo {
  session_id: string;
  user_id: string;
  plan: PlanIdT;
  expires_at: Date;
}

export interface ApiKeyInfo {
  id: string;
  label: string;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

export class AccountError extends Error {
  constructor(
    readonly code: 'email_taken' | 'key_limit' | 'not_found' | 'user_deleted',
    message: string,
  ) {
    super(message);
  }
}

const iso = (ms: number) => new Date(ms).toISOString();

/** The account tables, version by version (data/sql/migrate.ts). */
export const ACCOUNT_MIGRATIONS: readonly Migration[] = [
  {
    name: '0001-accounts',
    async up(db) {
      // IF NOT EXISTS: a SQLite file from before versioned migrations already has these tables
      await db.exec(`
      CREATE TABLE IF NOT EXISTS users (
        user_id TEXT PRIMARY KEY, eoa TEXT UNIQUE, email TEXT UNIQUE, display_name TEXT, x_username TEXT,
        created_at TEXT NOT NULL, plan TEXT NOT NULL DEFAULT 'free', invite_code TEXT NOT NULL UNIQUE,
        referred_by TEXT REFERENCES users(user_id), founding INTEGER NOT NULL DEFAULT 0, deleted_at TEXT);
      CREATE TABLE IF NOT EXISTS sessions (
        session_id TEXT PRIMARY KEY, token_hash TEXT NOT NULL UNIQUE, user_id TEXT NOT NULL REFERENCES users(user_id),
        method TEXT NOT NULL, created_ms BIGINT NOT NULL, last_seen_ms BIGINT NOT NULL, expires_ms BIGINT NOT NULL,
        revoked_ms BIGINT, custodian_session_hash TEXT);
      CREATE INDEX IF NOT EXISTS sessions_user ON sessions(user_id);
      CREATE TABLE IF NOT EXISTS api_keys (
        key_id TEXT PRIMARY KEY, user_id TEXT NOT NULL REFERENCES users(user_id), key_hash TEXT NOT NULL UNIQUE,
        prefix TEXT NOT NULL, label TEXT NOT NULL, created_at TEXT NOT NULL, last_used_ms BIGINT, revoked_at TEXT);
      CREATE INDEX IF NOT EXISTS api_keys_user ON api_keys(user_id);
      CREATE TABLE IF NOT EXISTS siwe_nonces (
        nonce TEXT PRIMARY KEY, issued_ms BIGINT NOT NULL, expires_ms BIGINT NOT NULL, consumed_ms BIGINT);
      CREATE TABLE IF NOT EXISTS magic_tokens (
        token_hash TEXT PRIMARY KEY, email TEXT NOT NULL, next TEXT, issued_ms BIGINT NOT NULL,
        expires_ms BIGINT NOT NULL, consumed_ms BIGINT);
      CREATE TABLE IF NOT EXISTS proxy_claims (
        proxy TEXT PRIMARY KEY, user_id TEXT NOT NULL REFERENCES users(user_id), method TEXT NOT NULL, claimed_at TEXT NOT NULL);
      CREATE INDEX IF NOT EXISTS proxy_claims_user ON proxy_claims(user_id);
      CREATE TABLE IF NOT EXISTS plan_changes (
        user_id TEXT NOT NULL, plan TEXT NOT NULL, changed_at TEXT NOT NULL, note TEXT);`);
    },
  },
  {
    // email-change confirmation: a token's purpose, and the user whose new address it confirms
    name: '0002-magic-token-purpose',
    async up(db) {
      const have =
        db.dialect === 'sqlite'
          ? new Set((await db.all<{ name: string }>(`PRAGMA table_info(magic_tokens)`)).map((c) => c.name))
          : new Set((await db.all<{ name: string }>(`SELECT column_name AS name FROM information_schema.columns WHERE table_name = 'magic_tokens' AND table_schema = current_schema()`)).map((c) => c.name));
      if (!have.has('purpose')) await db.exec(`ALTER TABLE magic_tokens ADD COLUMN purpose TEXT NOT NULL DEFAULT 'signin'`);
      if (!have.has('user_id')) await db.exec(`ALTER TABLE magic_tokens ADD COLUMN user_id TEXT`);
    },
  },
];

export class AccountStore extends ServiceStore implements AccountDirectory {
  /** paid plans by user (planOf's synchronous answer); refreshPlans reloads it, setPlan and anonymize keep it */
  private paidPlans = new Map<string, PlanIdT>();

  /** The store on `target`: an open service database (shared with the other stores), or a SQLite path / PostgreSQL URL it opens and owns. */
  static async open(target: SqlDb | string): Promise<AccountStore> {
    const { db, owned } = await openMigrated(target, 'accounts', ACCOUNT_MIGRATIONS);
    const store = new AccountStore(db, owned);
    await store.refreshPlans();
    return store;
  }

  /**
   * A user's plan without a query, for the webhook and push quotas that are counted inside their stores'
   * synchronous transactions: the paid plans, loaded at open and by refreshPlans (the service reloads every few
   * seconds, so a plan set on another replica or by `npm run admin` counts within that interval); null for a Free,
   * unknown or deleted user (a quota of 0 either way).
   */
  planOf(userId: string): PlanIdT | null {
    return this.paidPlans.get(userId) ?? null;
  }

  async refreshPlans(): Promise<void> {
    const rows = await this.db.all<{ user_id: string; plan: PlanIdT }>(`SELECT user_id, plan FROM users WHERE deleted_at IS NULL AND plan <> 'free'`);
    this.paidPlans = new Map(rows.map((r) => [r.user_id, r.plan]));
  }

  // -------------------------------------------------------------------------------------------------------------
  // Users
  // -------------------------------------------------------------------------------------------------------------

  private async userRow(userId: string, db: SqlDb = this.db): Promise<UserRow | undefined> {
    return db.get<UserRow>(`SELECT * FROM users WHERE user_id = ?`, [userId]);
  }

  /** The active (not deleted) user, or null. */
  async user(userId: string): Promise<UserRow | null> {
    const u = await this.userRow(userId);
    return u && !u.deleted_at ? u : null;
  }

  /** A new user; the first FOUNDING_SPOTS accounts are founding members (decided under the users lock). */
  private async createUser(fields: { eoa?: string | null; email?: string | null; referredBy?: string | null }, nowMs: number): Promise<UserRow> {
    return this.db.tx(
      async (t) => {
        // a concurrent sign-in with the same email or wallet (another request, another replica) made it meanwhile
        const same = fields.email
          ? await t.get<UserRow>(`SELECT * FROM users WHERE email = ? AND deleted_at IS NULL`, [fields.email])
          : fields.eoa
            ? await t.get<UserRow>(`SELECT * FROM users WHERE eoa = ? AND deleted_at IS NULL`, [fields.eoa])
            : undefined;
        if (same) return same;
        const founding = (await t.get<{ n: number }>(`SELECT count(*) AS n FROM users WHERE founding = 1`))!.n < FOUNDING_SPOTS ? 1 : 0;
        const id = randomId('usr');
        await t.run(`INSERT INTO users (user_id, eoa, email, created_at, invite_code, referred_by, founding) VALUES (?, ?, ?, ?, ?, ?, ?)`, [
          id,
          fields.eoa ?? null,
          fields.email ?? null,
          iso(nowMs),
          base32(randomBytes(6), 8),
          fields.referredBy ?? null,
          founding,
        ]);
        return (await this.userRow(id, t))!;
      },
      { lock: 'users' },
    );
  }

  /** Find the user signed in with this wallet (EIP-55 address), creating one on first sign-in. */
  async userForEoa(eoa: string, nowMs: number): Promise<UserRow> {
    const existing = await this.db.get<UserRow>(`SELECT * FROM users WHERE eoa = ? AND deleted_at IS NULL`, [eoa]);
    return existing ?? this.createUser({ eoa }, nowMs);
  }

  /** Find the user with this (lowercased) email, creating one on first sign-in. */
  async userForEmail(email: string, nowMs: number): Promise<UserRow> {
    const e = email.toLowerCase();
    const existing = await this.db.get<UserRow>(`SELECT * FROM users WHERE email = ? AND deleted_at IS NULL`, [e]);
    return existing ?? this.createUser({ email: e }, nowMs);
  }

  async record(userId: string): Promise<UserRecord | null> {
    const u = await this.user(userId);
    if (!u) return null;
    const claims = await this.db.all<{ proxy: string }>(`SELECT proxy FROM proxy_claims WHERE user_id = ? ORDER BY claimed_at, proxy`, [userId]);
    return {
      user_id: u.user_id,
      eoa: u.eoa,
      email: u.email,
      display_name: u.display_name,
      x_username: u.x_username,
      created_at: u.created_at,
      claimed_proxy_count: claims.length,
      primary_claimed_proxy: claims[0]?.proxy ?? null,
      is_founding: u.founding === 1,
    };
  }

  /**
   * PATCH /v1/auth/me: only the keys present change. A new email is not set here (the caller must prove they own
   * it: see confirmEmailChange); only `email: null` (removal) applies directly.
   */
  async updateProfile(userId: string, patch: { display_name?: string | null; email?: null; x_username?: string | null }): Promise<UserRow> {
    const u = await this.user(userId);
    if (!u) throw new AccountError('user_deleted', 'the account no longer exists');
    const next = {
      display_name: patch.display_name !== undefined ? patch.display_name : u.display_name,
      email: patch.email === null ? null : u.email,
      x_username: patch.x_username !== undefined ? patch.x_username : u.x_username,
    };
    try {
      await this.db.run(`UPDATE users SET display_name = ?, email = ?, x_username = ? WHERE user_id = ?`, [next.display_name, next.email, next.x_username, userId]);
    } catch (e) {
      if (isUniqueViolation(e)) throw new AccountError('email_taken', 'another account uses this email');
      throw e;
    }
    return (await this.user(userId))!;
  }

  /**
   * Irreversible anonymization: identity fields, claims, sessions and keys go; the row stays as a tombstone so
   * nothing that referenced the id dangles. Returns false when the user was already gone.
   */
  async anonymize(userId: string, nowMs: number): Promise<boolean> {
    return this.db.tx(async (t) => {
      const email = (await t.get<{ email: string | null }>(`SELECT email FROM users WHERE user_id = ? AND deleted_at IS NULL`, [userId]))?.email;
      const r = await t.run(
        `UPDATE users SET eoa = NULL, email = NULL, display_name = NULL, x_username = NULL, deleted_at = ?, invite_code = ? WHERE user_id = ? AND deleted_at IS NULL`,
        [iso(nowMs), `deleted-${randomBytes(8).toString('hex')}`, userId],
      );
      if (r.changes === 0) return false;
      // nothing that names the person stays behind, and no outstanding link can bring the account back
      if (email) await t.run(`DELETE FROM magic_tokens WHERE email = ?`, [email]);
      await t.run(`DELETE FROM magic_tokens WHERE user_id = ?`, [userId]);
      await t.run(`UPDATE api_keys SET label = '' WHERE user_id = ?`, [userId]);
      await t.run(`UPDATE sessions SET custodian_session_hash = NULL WHERE user_id = ?`, [userId]);
      await t.run(`UPDATE plan_changes SET note = NULL WHERE user_id = ?`, [userId]);
      await t.run(`DELETE FROM proxy_claims WHERE user_id = ?`, [userId]);
      await t.run(`UPDATE sessions SET revoked_ms = ? WHERE user_id = ? AND revoked_ms IS NULL`, [nowMs, userId]);
      await t.run(`UPDATE api_keys SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL`, [iso(nowMs), userId]);
      this.paidPlans.delete(userId);
      return true;
    });
  }

  /** Admin: set a user's plan (billing is outside the service). */
  async setPlan(userId: string, plan: PlanIdT, nowMs: number, note?: string): Promise<void> {
    PlanId.parse(plan);
    await this.db.tx(async (t) => {
      const r = await t.run(`UPDATE users SET plan = ? WHERE user_id = ? AND deleted_at IS NULL`, [plan, userId]);
      if (r.changes === 0) throw new AccountError('not_found', `no active user ${userId}`);
      await t.run(`INSERT INTO plan_changes (user_id, plan, changed_at, note) VALUES (?, ?, ?, ?)`, [userId, plan, iso(nowMs), note ?? null]);
    });
    if (plan === 'free') this.paidPlans.delete(userId);
    else this.paidPlans.set(userId, plan);
  }

  /** Admin lookup: by user id, EOA (any case) or email. */
  async findUser(ref: string): Promise<UserRow | null> {
    const r = ref.trim();
    const row = await this.db.get<UserRow>(`SELECT * FROM users WHERE deleted_at IS NULL AND (user_id = ? OR lower(eoa) = lower(?) OR email = lower(?)) LIMIT 1`, [r, r, r]);
    return row ?? null;
  }

  // -------------------------------------------------------------------------------------------------------------
  // Sessions
  // -------------------------------------------------------------------------------------------------------------

  /** A new session; returns the cookie token (shown once, stored hashed). */
  async createSession(userId: string, method: 'siwe' | 'magic', nowMs: number, custodianSession?: string): Promise<{ token: string; session_id: string; expires_at: Date }> {
    const token = randomToken();
    const id = randomId('ses');
    const expires = nowMs + SESSION_ABSOLUTE_MS;
    await this.db.run(`INSERT INTO sessions (session_id, token_hash, user_id, method, created_ms, last_seen_ms, expires_ms, custodian_session_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, [
      id,
      sha256(token),
      userId,
      method,
      nowMs,
      nowMs,
      expires,
      custodianSession ? sha256(custodianSession) : null,
    ]);
    return { token, session_id: id, expires_at: new Date(Math.min(expires, nowMs + SESSION_IDLE_MS)) };
  }

  /** The live session behind a cookie token (and a touch of its idle clock), or null. */
  async session(token: string, nowMs: number): Promise<SessionInfo | null> {
    const s = await this.db.get<{ session_id: string; user_id: string; last_seen_ms: number; expires_ms: number; plan: PlanIdT }>(
      `SELECT s.session_id, s.user_id, s.last_seen_ms, s.expires_ms, u.plan FROM sessions s JOIN users u USING (user_id)
       WHERE s.token_hash = ? AND s.revoked_ms IS NULL AND u.deleted_at IS NULL`,
      [sha256(token)],
    );
    if (!s || nowMs >= s.expires_ms || nowMs - s.last_seen_ms >= SESSION_IDLE_MS) return null;
    if (nowMs - s.last_seen_ms >= TOUCH_EVERY_MS) await this.db.run(`UPDATE sessions SET last_seen_ms = ? WHERE session_id = ?`, [nowMs, s.session_id]);
    return { session_id: s.session_id, user_id: s.user_id, plan: s.plan, expires_at: new Date(Math.min(s.expires_ms, nowMs + SESSION_IDLE_MS)) };
  }

  async revokeSession(sessionId: string, nowMs: number): Promise<boolean> {
    return (await this.db.run(`UPDATE sessions SET revoked_ms = ? WHERE session_id = ? AND revoked_ms IS NULL`, [nowMs, sessionId])).changes === 1;
  }

  /** Revoke every live session of a user; returns how many were live. */
  async revokeAllSessions(userId: string, nowMs: number): Promise<number> {
    return (
      await this.db.run(`UPDATE sessions SET revoked_ms = ? WHERE user_id = ? AND revoked_ms IS NULL AND expires_ms > ? AND last_seen_ms > ?`, [
        nowMs,
        userId,
        nowMs,
        nowMs - SESSION_IDLE_MS,
      ])
    ).changes;
  }

  // -------------------------------------------------------------------------------------------------------------
  // SIWE nonces and magic-link tokens: issued, then consumed at most once
  // -------------------------------------------------------------------------------------------------------------

  async issueNonce(nonce: string, nowMs: number): Promise<Date> {
    await this.db.run(`INSERT INTO siwe_nonces (nonce, issued_ms, expires_ms) VALUES (?, ?, ?)`, [nonce, nowMs, nowMs + NONCE_TTL_MS]);
    return new Date(nowMs + NONCE_TTL_MS);
  }

  /** True exactly once for an issued, unexpired nonce. */
  async consumeNonce(nonce: string, nowMs: number): Promise<boolean> {
    return (await this.db.run(`UPDATE siwe_nonces SET consumed_ms = ? WHERE nonce = ? AND consumed_ms IS NULL AND expires_ms > ?`, [nowMs, nonce, nowMs])).changes === 1;
  }

  /** Whether a nonce was issued, is unexpired and unused (a cheap check before the signature; consume decides). */
  async nonceLive(nonce: string, nowMs: number): Promise<boolean> {
    return (await this.db.get(`SELECT 1 AS one FROM siwe_nonces WHERE nonce = ? AND consumed_ms IS NULL AND expires_ms > ?`, [nonce, nowMs])) !== undefined;
  }

  async issueMagicToken(email: string, next: string | null, nowMs: number, emailChangeFor?: string): Promise<string> {
    const token = randomToken();
    await this.db.run(`INSERT INTO magic_tokens (token_hash, email, next, issued_ms, expires_ms, purpose, user_id) VALUES (?, ?, ?, ?, ?, ?, ?)`, [
      sha256(token),
      email.toLowerCase(),
      next,
      nowMs,
      nowMs + MAGIC_TOKEN_TTL_MS,
      emailChangeFor ? 'email_change' : 'signin',
      emailChangeFor ?? null,
    ]);
    return token;
  }

  /** The email and next path of an issued, unexpired, unused sign-in token — once. */
  async consumeMagicToken(token: string, nowMs: number): Promise<{ email: string; next: string | null } | null> {
    const row = await this.db.get<{ email: string; next: string | null }>(
      `UPDATE magic_tokens SET consumed_ms = ? WHERE token_hash = ? AND consumed_ms IS NULL AND expires_ms > ? AND purpose = 'signin' RETURNING email, next`,
      [nowMs, sha256(token), nowMs],
    );
    return row ?? null;
  }

  /**
   * Confirm an email change: the token was mailed to the new address, so using it proves the user owns it. Once;
   * null for a dead token; AccountError email_taken when another account took the address meanwhile.
   */
  async confirmEmailChange(token: string, nowMs: number): Promise<{ user_id: string; email: string } | null> {
    return this.db.tx(async (t) => {
      const row = await t.get<{ email: string; user_id: string }>(
        `UPDATE magic_tokens SET consumed_ms = ? WHERE token_hash = ? AND consumed_ms IS NULL AND expires_ms > ? AND purpose = 'email_change' RETURNING email, user_id`,
        [nowMs, sha256(token), nowMs],
      );
      const u = row ? await this.userRow(row.user_id, t) : undefined;
      if (!row || !u || u.deleted_at) return null;
      try {
        await t.run(`UPDATE users SET email = ? WHERE user_id = ?`, [row.email, row.user_id]);
      } catch (e) {
        if (isUniqueViolation(e)) throw new AccountError('email_taken', 'another account uses this email');
        throw e;
      }
      return row;
    });
  }

  /** Drop nonces and tokens that can no longer be used (kept a day for audit). */
  async purgeExpired(nowMs: number): Promise<void> {
    const cutoff = nowMs - 24 * 3600_000;
    await this.db.run(`DELETE FROM siwe_nonces WHERE expires_ms < ?`, [cutoff]);
    await this.db.run(`DELETE FROM magic_tokens WHERE expires_ms < ?`, [cutoff]);
  }

  // -------------------------------------------------------------------------------------------------------------
  // API keys
  // -------------------------------------------------------------------------------------------------------------

  async mintApiKey(userId: string, label: string, nowMs: number): Promise<{ key: string; info: ApiKeyInfo }> {
    return this.db.tx(
      async (t) => {
        const u = await this.userRow(userId, t);
        if (!u || u.deleted_at) throw new AccountError('user_deleted', 'the account no longer exists');
        const active = (await t.get<{ n: number }>(`SELECT count(*) AS n FROM api_keys WHERE user_id = ? AND revoked_at IS NULL`, [userId]))!.n;
        if (active >= MAX_ACTIVE_KEYS) throw new AccountError('key_limit', `at most ${MAX_ACTIVE_KEYS} active keys; revoke one first`);
        const key = API_KEY_PREFIX + base32(randomBytes(17), 26);
        const id = randomId('key');
        await t.run(`INSERT INTO api_keys (key_id, user_id, key_hash, prefix, label, created_at) VALUES (?, ?, ?, ?, ?, ?)`, [id, userId, sha256(key), key.slice(0, DISPLAY_PREFIX_LEN), label, iso(nowMs)]);
        return { key, info: (await this.keyInfo(id, t))! };
      },
      { lock: `api_keys:${userId}` },
    );
  }

  private async keyInfo(keyId: string, db: SqlDb = this.db): Promise<ApiKeyInfo | null> {
    const r = await db.get<{ key_id: string; label: string; prefix: string; created_at: string; last_used_ms: number | null; revoked_at: string | null }>(
      `SELECT key_id, label, prefix, created_at, last_used_ms, revoked_at FROM api_keys WHERE key_id = ?`,
      [keyId],
    );
    return r ? toKeyInfo(r) : null;
  }

  async listApiKeys(userId: string): Promise<ApiKeyInfo[]> {
    const rows = await this.db.all<{ key_id: string; label: string; prefix: string; created_at: string; last_used_ms: number | null; revoked_at: string | null }>(
      `SELECT key_id, label, prefix, created_at, last_used_ms, revoked_at FROM api_keys WHERE user_id = ? ORDER BY created_at DESC, key_id`,
      [userId],
    );
    return rows.map(toKeyInfo);
  }

  /** Revoke one of the user's keys; false when it is not theirs or already revoked. */
  async revokeApiKey(userId: string, keyId: string, nowMs: number): Promise<boolean> {
    return (await this.db.run(`UPDATE api_keys SET revoked_at = ? WHERE key_id = ? AND user_id = ? AND revoked_at IS NULL`, [iso(nowMs), keyId, userId])).changes === 1;
  }

  /** The live key's owner and plan, or null (revoked, unknown, or the owner deleted their account). */
  async authenticateKey(key: string, nowMs: number): Promise<{ key_id: string; user_id: string; plan: PlanIdT } | null> {
    if (!API_KEY_RE.test(key)) return null;
    const r = await this.db.get<{ key_id: string; user_id: string; last_used_ms: number | null; plan: PlanIdT }>(
      `SELECT k.key_id, k.user_id, k.last_used_ms, u.plan FROM api_keys k JOIN users u USING (user_id)
       WHERE k.key_hash = ? AND k.revoked_at IS NULL AND u.deleted_at IS NULL`,
      [sha256(key)],
    );
    if (!r) return null;
    if (r.last_used_ms === null || nowMs - r.last_used_ms >= TOUCH_EVERY_MS) await this.db.run(`UPDATE api_keys SET last_used_ms = ? WHERE key_id = ?`, [nowMs, r.key_id]);
    return { key_id: r.key_id, user_id: r.user_id, plan: r.plan };
  }

  /** Who a request's headers identify (a Bearer key, else the session cookie), for surfaces outside the REST app. */
  async identify(authorization: string | undefined, cookieHeader: string | undefined, nowMs: number): Promise<{ user_id: string; plan: PlanIdT } | null> {
    if (authorization !== undefined) {
      const m = /^Bearer +(\S+) *$/i.exec(authorization);
      const k = m ? await this.authenticateKey(m[1]!, nowMs) : null;
      return k ? { user_id: k.user_id, plan: k.plan } : null;
    }
    const token = readCookie(cookieHeader, SESSION_COOKIE);
    const s = token && token.length <= 128 ? await this.session(token, nowMs) : null;
    return s ? { user_id: s.user_id, plan: s.plan } : null;
  }

  // -------------------------------------------------------------------------------------------------------------
  // Proxy claims and the public directory
  // -------------------------------------------------------------------------------------------------------------

  /** Record that the user proved control of these proxies (lowercase); a proxy already claimed keeps its claimant. */
  async claimProxies(userId: string, proxies: readonly string[], method: string, nowMs: number): Promise<number> {
    return this.db.tx(async (t) => {
      let n = 0;
      for (const p of proxies) {
        n += (await t.run(`INSERT INTO proxy_claims (proxy, user_id, method, claimed_at) VALUES (?, ?, ?, ?) ON CONFLICT (proxy) DO NOTHING`, [p.toLowerCase(), userId, method, iso(nowMs)])).changes;
      }
      return n;
    });
  }

  async referrer(code: string): Promise<{ display_name: string | null; x_username: string | null } | null> {
    const r = await this.db.get<{ display_name: string | null; x_username: string | null }>(`SELECT display_name, x_username FROM users WHERE invite_code = ? AND deleted_at IS NULL`, [code]);
    return r ?? null;
  }

  async claimsFor(addresses: readonly string[]): Promise<Map<string, ProxyClaim>> {
    const out = new Map<string, ProxyClaim>();
    const wanted = [...new Set(addresses.map((x) => x.toLowerCase()))];
    if (!wanted.length) return out;
    const rows = await this.db.all<{ proxy: string; eoa: string | null; x_username: string | null; display_name: string | null; founding: number }>(
      `SELECT c.proxy, u.eoa, u.x_username, u.display_name, u.founding FROM proxy_claims c JOIN users u USING (user_id)
       WHERE c.proxy IN (${wanted.map(() => '?').join(', ')}) AND u.deleted_at IS NULL`,
      wanted,
    );
    for (const r of rows) out.set(r.proxy, { claimed: true, founding: r.founding === 1, eoa: r.eoa, x_username: r.x_username, display_name: r.display_name });
    return out;
  }

  async founding(): Promise<FoundingStatus> {
    const n = (await this.db.get<{ n: number }>(`SELECT count(*) AS n FROM users WHERE founding = 1`))!.n;
    return { spots_total: FOUNDING_SPOTS, spots_claimed: n, spots_remaining: Math.max(0, FOUNDING_SPOTS - n), open: n < FOUNDING_SPOTS };
  }
}

const toKeyInfo = (r: { key_id: string; label: string; prefix: string; created_at: string; last_used_ms: number | null; revoked_at: string | null }): ApiKeyInfo => ({
  id: r.key_id,
  label: r.label,
  prefix: r.prefix,
  created_at: r.created_at,
  last_used_at: r.last_used_ms === null ? null : iso(r.last_used_ms),
  revoked_at: r.revoked_at,
});
