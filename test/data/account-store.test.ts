/**
 * The account store's suite, run on SQLite (a file) and on PostgreSQL (a fresh database on the machine's server),
 * each time with two store instances on one database standing for two replicas: a session made on A works on B and
 * logout-all on B ends it on A; a nonce or magic token is used once across both, even when both race for it; a
 * concurrent sign-up by one email makes one user; the active-key limit holds under concurrent mints; a plan set on A
 * reaches B's quota lookup on its reload; migrations apply once, also when two replicas open the database together.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACCOUNT_MIGRATIONS, AccountError, AccountStore, MAX_ACTIVE_KEYS, NONCE_TTL_MS } from '../../data/account-store.ts';
import type { SqlDb } from '../../data/sql/db.ts';
import { SERVICE_ENGINES, replicas, type ServiceEngine } from '../helpers/service-engines.ts';

describe.each(SERVICE_ENGINES)('the account store on $name', (engine) => {
  let db: Awaited<ReturnType<ServiceEngine['fresh']>>;
  let two: Awaited<ReturnType<typeof replicas>>;
  let dbA: SqlDb;
  let dbB: SqlDb;
  let A: AccountStore;
  let B: AccountStore;
  const now = Date.UTC(2026, 10, 26, 12);

  beforeAll(async () => {
    db = await engine.fresh('accounts');
    // two pools on PostgreSQL; one connection on SQLite (test/helpers/service-engines.ts says why)
    two = await replicas(engine, db.target);
    ({ a: dbA, b: dbB } = two);
    // two replicas open (and migrate) the database at the same moment
    [A, B] = await Promise.all([AccountStore.open(dbA), AccountStore.open(dbB)]);
  }, 60_000);

  afterAll(async () => {
    await two?.close();
    await db?.drop();
  });

  it('applies each migration once, also when two replicas open the database together', async () => {
    const rows = await dbA.all<{ store: string; name: string }>(`SELECT store, name FROM schema_migrations ORDER BY name`);
    expect(rows).toEqual(ACCOUNT_MIGRATIONS.map((m) => ({ store: 'accounts', name: m.name })));
    // a third open finds nothing to do
    const again = await AccountStore.open(dbB);
    expect(await dbA.all(`SELECT name FROM schema_migrations`)).toHaveLength(ACCOUNT_MIGRATIONS.length);
    await again.close();
  });

  it('one email signing up on both replicas at once is one user', async () => {
    const users = await Promise.all([A, B, A, B].map((s) => s.userForEmail('Race@Example.com', now)));
    expect(new Set(users.map((u) => u.user_id)).size).toBe(1);
    expect(users[0]!.email).toBe('race@example.com');
    expect(users[0]!.founding).toBe(1);
    expect((await B.founding()).spots_claimed).toBe((await A.founding()).spots_claimed);
  });

  it('a session made on A works on B; logout-all on B ends it on A', async () => {
    const u = await A.userForEmail('sess@example.com', now);
    const s1 = await A.createSession(u.user_id, 'magic', now);
    const s2 = await B.createSession(u.user_id, 'siwe', now);
    expect(await B.session(s1.token, now + 1000)).toMatchObject({ user_id: u.user_id, plan: 'free', session_id: s1.session_id });
    expect(await A.identify(undefined, `__Secure-service_sid=${s2.token}`, now + 1000)).toEqual({ user_id: u.user_id, plan: 'free' });
    expect(await B.revokeAllSessions(u.user_id, now + 2000)).toBe(2);
    expect(await A.session(s1.token, now + 3000)).toBeNull();
    expect(await A.session(s2.token, now + 3000)).toBeNull();
    // idle expiry: a session unused for a week is gone
    const s3 = await A.createSession(u.user_id, 'magic', now);
    expect(await B.session(s3.token, now + 7 * 24 * 3600_000)).toBeNull();
  });

  it('a SIWE nonce is consumed once across replicas, even when both race for it', async () => {
    await A.issueNonce('nonce-1', now);
    expect(await B.nonceLive('nonce-1', now + 1)).toBe(true);
    const tries = await Promise.all(Array.from({ length: 12 }, (_, i) => (i % 2 ? A : B).consumeNonce('nonce-1', now + 2)));
    expect(tries.filter(Boolean)).toHaveLength(1);
    expect(await A.nonceLive('nonce-1', now + 3)).toBe(false);
    await B.issueNonce('nonce-2', now);
    expect(await A.consumeNonce('nonce-2', now + NONCE_TTL_MS)).toBe(false); // expired
    expect(await A.consumeNonce('never-issued', now)).toBe(false);
  });

  it('a magic-link token is used once across replicas; an email change confirms once and refuses a taken address', async () => {
    const token = await A.issueMagicToken('Link@Example.com', '/account', now);
    const tries = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? A : B).consumeMagicToken(token, now + 1)));
    expect(tries.filter((t) => t !== null)).toEqual([{ email: 'link@example.com', next: '/account' }]);
    const u = await A.userForEmail('old@example.com', now);
    const change = await A.issueMagicToken('new@example.com', null, now, u.user_id);
    expect(await B.consumeMagicToken(change, now + 1)).toBeNull(); // not a sign-in token
    expect(await B.confirmEmailChange(change, now + 1)).toEqual({ email: 'new@example.com', user_id: u.user_id });
    expect(await A.confirmEmailChange(change, now + 2)).toBeNull();
    expect((await A.user(u.user_id))!.email).toBe('new@example.com');
    // someone else takes an address between the request and the confirmation
    const v = await A.userForEmail('v@example.com', now);
    const taken = await A.issueMagicToken('new@example.com', null, now, v.user_id);
    await expect(B.confirmEmailChange(taken, now + 1)).rejects.toMatchObject({ code: 'email_taken' });
  });

  it('API keys: mint, list, authenticate on the other replica, revoke; the active-key limit holds under concurrent mints', async () => {
    const u = await A.userForEmail('keys@example.com', now);
    const { key, info } = await A.mintApiKey(u.user_id, 'laptop', now);
    expect(await B.authenticateKey(key, now + 1)).toEqual({ key_id: info.id, user_id: u.user_id, plan: 'free' });
    expect((await B.listApiKeys(u.user_id)).map((k) => k.label)).toEqual(['laptop']);
    expect(await B.revokeApiKey(u.user_id, info.id, now + 2)).toBe(true);
    expect(await A.authenticateKey(key, now + 3)).toBeNull();
    expect(await A.revokeApiKey(u.user_id, info.id, now + 4)).toBe(false);
    const results = await Promise.allSettled(Array.from({ length: MAX_ACTIVE_KEYS + 6 }, (_, i) => (i % 2 ? A : B).mintApiKey(u.user_id, `k${i}`, now + 5)));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(MAX_ACTIVE_KEYS);
    for (const r of results) if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(AccountError);
  });

  it('a plan set on A is served at once on A and on B after its reload; anonymize ends everything', async () => {
    const u = await A.userForEmail('plan@example.com', now);
    const { key } = await A.mintApiKey(u.user_id, 'k', now);
    await A.setPlan(u.user_id, 'pro', now, 'invoice 1');
    expect(A.planOf(u.user_id)).toBe('pro');
    expect((await B.authenticateKey(key, now + 1))!.plan).toBe('pro'); // read from the database
    expect(B.planOf(u.user_id)).toBeNull(); // B's quota lookup waits for its reload…
    await B.refreshPlans();
    expect(B.planOf(u.user_id)).toBe('pro'); // …and then has it
    await expect(A.setPlan('usr_nobody', 'pro', now)).rejects.toMatchObject({ code: 'not_found' });
    await A.claimProxies(u.user_id, ['0xAbC0000000000000000000000000000000000001'], 'siwe', now);
    expect(await B.claimProxies(u.user_id, ['0xabc0000000000000000000000000000000000001'], 'siwe', now)).toBe(0);
    expect([...(await B.claimsFor(['0xABC0000000000000000000000000000000000001'])).keys()]).toEqual(['0xabc0000000000000000000000000000000000001']);
    expect(await B.anonymize(u.user_id, now + 2)).toBe(true);
    expect(await A.anonymize(u.user_id, now + 3)).toBe(false);
    expect(await A.authenticateKey(key, now + 4)).toBeNull();
    expect(await A.user(u.user_id)).toBeNull();
    expect((await A.claimsFor(['0xabc0000000000000000000000000000000000001'])).size).toBe(0);
    expect(B.planOf(u.user_id)).toBeNull();
  });
});
