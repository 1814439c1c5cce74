/**
 * The webhook and push stores' suite, run on SQLite (a file) and on PostgreSQL (a fresh database on the machine's
 * server), each time with two store instances standing for two replicas (PostgreSQL: two pools; SQLite: one
 * process's one connection, shared, as replicas there are processes on the file): a subscription made on A is read,
 * changed, rotated and deleted on B; the monthly quota is counted once per delivery and never overrun, also when
 * both replicas enqueue at once; concurrent claims never hand one delivery to two workers; the outcomes
 * (delivered, failed, released, handed off, settled from the queue) and pruning in batches; push subscriptions are
 * one row per endpoint across replicas, and the VAPID-style getOrCreate gives both replicas the same value.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PUSH_MIGRATIONS, PushStore } from '../../data/push-store.ts';
import type { SqlDb } from '../../data/sql/db.ts';
import { usageMonth, WEBHOOK_MIGRATIONS, WebhookStore, type DeliveryRow } from '../../data/webhook-store.ts';
import { SERVICE_ENGINES, replicas, type ServiceEngine } from '../helpers/service-engines.ts';

describe.each(SERVICE_ENGINES)('the webhook and push stores on $name', (engine) => {
  let db: Awaited<ReturnType<ServiceEngine['fresh']>>;
  let two: Awaited<ReturnType<typeof replicas>>;
  let dbA: SqlDb;
  let dbB: SqlDb;
  let A: WebhookStore;
  let B: WebhookStore;
  let PA: PushStore;
  let PB: PushStore;
  const now = Date.UTC(2026, 10, 26, 12);
  const month = usageMonth(now);
  let users = 0;
  const newUser = () => `u_${engine.name}_${++users}`;
  const sub = (user_id: string, over: Partial<Parameters<WebhookStore['create']>[0]> = {}) => ({
    user_id,
    target_url: 'https://example.com/hook',
    event_types: ['trader.fill'],
    filter_json: {},
    active: true,
    secret: 'whsec_one',
    ...over,
  });
  const event = (id: string) => ({ id, type: 'trader.fill', body: JSON.stringify({ type: 'trader.fill', data: { id } }) });
  /** the outbox rows of a user, counted from the table itself */
  const rowsOf = async (userId: string) => Number((await dbA.get<{ n: number }>(`SELECT count(*) AS n FROM webhook_deliveries WHERE user_id = ?`, [userId]))!.n);

  beforeAll(async () => {
    db = await engine.fresh('webhooks');
    // two pools on PostgreSQL; one connection on SQLite (test/helpers/service-engines.ts says why)
    two = await replicas(engine, db.target);
    ({ a: dbA, b: dbB } = two);
    // two replicas open (and migrate) the database at the same moment
    [A, B, PA, PB] = await Promise.all([WebhookStore.open(dbA), WebhookStore.open(dbB), PushStore.open(dbA), PushStore.open(dbB)]);
  }, 60_000);

  afterAll(async () => {
    await two?.close();
    await db?.drop();
  });

  it('applies each migration once, also when two replicas open the database together', async () => {
    const rows = await dbA.all<{ store: string; name: string }>(`SELECT store, name FROM schema_migrations WHERE store IN ('webhooks', 'push') ORDER BY store, name`);
    expect(rows).toEqual([...PUSH_MIGRATIONS.map((m) => ({ store: 'push', name: m.name })), ...WEBHOOK_MIGRATIONS.map((m) => ({ store: 'webhooks', name: m.name }))]);
    await WebhookStore.open(dbB);
    await PushStore.open(dbB);
    expect(await dbA.all(`SELECT name FROM schema_migrations WHERE store IN ('webhooks', 'push')`)).toHaveLength(rows.length);
  });

  it('a subscription made on A is read, changed, rotated and deleted on B; other users cannot touch it', async () => {
    const u = newUser();
    const made = await A.create(sub(u, { event_types: ['trader.fill', 'service.test'], filter_json: { min_size_usdc: 10 } }), now);
    expect(made).toMatchObject({ user_id: u, event_types: ['trader.fill', 'service.test'], filter_json: { min_size_usdc: 10 }, active: true, created_at: new Date(now).toISOString() });
    expect(made.id).toMatch(/^wh_[a-z2-7]{16}$/);
    expect(await B.get(made.id)).toEqual(made);
    expect((await B.listFor(u)).map((s) => s.id)).toEqual([made.id]);
    expect(await B.countFor(u)).toBe(1);
    expect((await B.all()).map((s) => s.id)).toContain(made.id);
    expect(await B.target(made.id)).toEqual({ id: made.id, target_url: 'https://example.com/hook', secret: 'whsec_one', previous_secret: null, previous_secret_until_ms: null });

    // two partial updates at once on two replicas: each changes only what it was given
    const [x, y] = await Promise.all([A.update(made.id, u, { active: false }, now + 1), B.update(made.id, u, { target_url: 'https://example.com/other' }, now + 2)]);
    expect(x && y).toBeTruthy();
    expect(await A.get(made.id)).toMatchObject({ active: false, target_url: 'https://example.com/other', event_types: ['trader.fill', 'service.test'], filter_json: { min_size_usdc: 10 } });
    expect(await B.update(made.id, u, { event_types: ['market.resolved'], filter_json: {}, active: true }, now + 3)).toMatchObject({ event_types: ['market.resolved'], filter_json: {}, active: true });
    expect(await A.update(made.id, 'u_someone_else', { active: false }, now + 4)).toBeNull();
    expect((await A.get(made.id))!.active).toBe(true);

    // rotation on B: A signs with both until the grace ends, then with the new one only
    expect(await B.rotateSecret(made.id, u, 'whsec_two', now + 1000, now)).toBe(true);
    expect(await A.signingSecrets(made.id, now + 999)).toEqual(['whsec_two', 'whsec_one']);
    expect(await A.signingSecrets(made.id, now + 1000)).toEqual(['whsec_two']);
    expect(await A.target(made.id)).toMatchObject({ secret: 'whsec_two', previous_secret: 'whsec_one', previous_secret_until_ms: now + 1000 });
    // no grace: the old secret stops at once
    expect(await A.rotateSecret(made.id, u, 'whsec_three', now, now)).toBe(true);
    expect(await B.target(made.id)).toMatchObject({ secret: 'whsec_three', previous_secret: null, previous_secret_until_ms: null });
    expect(await B.signingSecrets(made.id, now - 1)).toEqual(['whsec_three']);
    expect(await B.rotateSecret(made.id, 'u_someone_else', 'whsec_x', now + 1000, now)).toBe(false);
    expect((await A.target(made.id))!.secret).toBe('whsec_three');

    // delete on A drops its pending deliveries; B sees it gone; a second delete finds nothing
    await B.enqueue(event(`evt_del_${u}`), [{ id: made.id, user_id: u }], () => 10, now);
    expect(await B.delete(made.id, 'u_someone_else')).toBe(false);
    expect(await A.delete(made.id, u)).toBe(true);
    expect(await B.delete(made.id, u)).toBe(false);
    expect(await B.get(made.id)).toBeNull();
    expect(await B.target(made.id)).toBeNull();
    expect(await B.signingSecrets(made.id, now)).toEqual([]);
    expect(await A.delivery(`evt_del_${u}`, made.id)).toMatchObject({ status: 'dropped', last_error: 'subscription deleted' });
  });

  it('createWithin holds a per-user limit when both replicas create at once', async () => {
    const u = newUser();
    const made = await Promise.all(Array.from({ length: 12 }, (_, i) => (i % 2 ? A : B).createWithin(sub(u), 3, now)));
    expect(made.filter((m) => m !== null)).toHaveLength(3);
    expect(await A.countFor(u)).toBe(3);
    expect(await B.createWithin(sub(u), 3, now)).toBeNull();
    expect(await B.createWithin(sub(u), 4, now)).not.toBeNull();
  });

  it('counts each delivery once against the monthly quota and stops at it, also when both replicas enqueue at once', async () => {
    const u = newUser();
    const other = newUser();
    const [s1, s2, s3] = await Promise.all([A.create(sub(u), now), A.create(sub(u), now), B.create(sub(other), now)]);
    const QUOTA = 7;
    const quota = (user: string) => (user === u ? QUOTA : 1000);
    const subs = [
      { id: s1!.id, user_id: u },
      { id: s2!.id, user_id: u },
      { id: s3!.id, user_id: other },
    ];
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? A : B).enqueue(event(`evt_q_${u}_${i}`), subs, quota, now)));
    // 10 events x 3 subscriptions: the other user gets all 10, u exactly QUOTA of its 20
    expect(results.reduce((n, r) => n + r.enqueued, 0)).toBe(10 + QUOTA);
    expect(results.reduce((n, r) => n + r.over_quota, 0)).toBe(20 - QUOTA);
    // brute force: the rows in the outbox, and the counter
    expect(await rowsOf(u)).toBe(QUOTA);
    expect(await rowsOf(other)).toBe(10);
    expect(await B.used(u, month)).toBe(QUOTA);
    expect(await A.used(other, month)).toBe(10);
    expect(await A.used(u, usageMonth(now + 31 * 24 * 3600_000))).toBe(0);

    // one (event, subscription) pair enqueued from both replicas at once is one delivery, counted once
    const dup = await Promise.all([A, B, A, B].map((s) => s.enqueue(event(`evt_dup_${other}`), [subs[2]!], quota, now)));
    expect(dup.map((r) => r.enqueued).sort()).toEqual([0, 0, 0, 1]);
    expect(await rowsOf(other)).toBe(11);
    expect(await B.used(other, month)).toBe(11);

    // addUsage counts (and gives back) outside enqueue
    await A.addUsage(other, month, 5);
    await B.addUsage(other, month, -2);
    expect(await A.used(other, month)).toBe(14);
  });

  it('reserveUsage counts live pushes within the quota, never past it, from both replicas at once', async () => {
    const u = newUser();
    await A.addUsage(u, month, 3);
    const got = await Promise.all(Array.from({ length: 16 }, (_, i) => (i % 2 ? A : B).reserveUsage(u, month, i % 4 === 0 ? 3 : 1, 10)));
    expect(got.reduce((a, b) => a + b, 0)).toBe(7);
    expect(got.every((k, i) => k >= 0 && k <= (i % 4 === 0 ? 3 : 1))).toBe(true);
    expect(await B.used(u, month)).toBe(10);
    expect(await A.reserveUsage(u, month, 1, 10)).toBe(0);
    expect(await A.reserveUsage(newUser(), month, 5, 0)).toBe(0);
    // the same counter webhooks use: an enqueue finds the quota spent
    const s = await A.create(sub(u), now);
    expect(await B.enqueue(event(`evt_after_push_${u}`), [{ id: s.id, user_id: u }], () => 10, now)).toEqual({ enqueued: 0, over_quota: 1 });
  });

  it('concurrent claims from two replicas never hand one delivery to both, and cover every due delivery', async () => {
    const u = newUser();
    const s = await A.create(sub(u), now);
    const N = 300;
    // due at `claimAt`, after every other test's rows (claims take the earliest due first)
    const claimAt = now + 10 * 24 * 3600_000;
    await dbA.run(`UPDATE webhook_deliveries SET status = 'dropped' WHERE status = 'pending'`);
    for (let i = 0; i < N; i++) await (i % 2 ? A : B).enqueue(event(`evt_claim_${i}`), [{ id: s.id, user_id: u }], () => 1e9, claimAt);
    const batches = await Promise.all(Array.from({ length: 16 }, (_, i) => (i % 2 ? A : B).claim(25, claimAt, 60_000)));
    const ids = batches.flat().map((d) => d.delivery_id);
    expect(ids.length).toBe(new Set(ids).size); // nobody got a delivery twice
    expect(ids.length).toBe(N); // 16 x 25 > 300: together they took every one
    expect(batches.every((b) => b.length <= 25)).toBe(true);
    expect(batches.flat().every((d) => d.status === 'pending' && d.subscription_id === s.id)).toBe(true);
    // each batch comes in due order
    for (const b of batches) expect(b.map((d) => d.delivery_id)).toEqual([...b.map((d) => d.delivery_id)].sort((x, y) => x - y));
    // leases held: nothing more to claim until they run out, then all of it again, once
    expect(await B.claim(1000, claimAt + 59_999, 60_000)).toEqual([]);
    const again = await Promise.all([A.claim(200, claimAt + 60_000, 60_000), B.claim(200, claimAt + 60_000, 60_000)]);
    const againIds = again.flat().map((d) => d.delivery_id);
    expect(new Set(againIds).size).toBe(N);
    expect(againIds.length).toBe(N);
    await dbA.run(`UPDATE webhook_deliveries SET status = 'dropped' WHERE subscription_id = ?`, [s.id]);
  });

  it('records delivered, failed, released, handed-off and queue-settled outcomes, and prunes in batches', async () => {
    const u = newUser();
    const s = await B.create(sub(u), now);
    const t0 = now + 20 * 24 * 3600_000;
    await dbA.run(`UPDATE webhook_deliveries SET status = 'dropped' WHERE status = 'pending'`);
    for (const id of ['ok', 'retry', 'dead', 'back', 'queued1', 'queued2']) await A.enqueue(event(`evt_${id}_${u}`), [{ id: s.id, user_id: u }], () => 1e9, t0);
    const row = async (id: string) => (await B.delivery(`evt_${id}_${u}`, s.id))!;
    const claimed = await A.claim(10, t0, 60_000);
    expect(claimed).toHaveLength(6);
    const idOf = (id: string) => claimed.find((d: DeliveryRow) => d.event_id === `evt_${id}_${u}`)!.delivery_id;

    await B.delivered(idOf('ok'), 204, t0 + 5);
    await A.delivered(idOf('ok'), 200, t0 + 6); // already settled: no change
    expect(await row('ok')).toMatchObject({ status: 'delivered', attempts: 1, last_status: 204, delivered_ms: t0 + 5, last_error: null });

    await B.failed(idOf('retry'), 503, 'http 503', t0 + 5000);
    expect(await row('retry')).toMatchObject({ status: 'pending', attempts: 1, last_status: 503, last_error: 'http 503', next_attempt_ms: t0 + 5000 });
    await A.failed(idOf('dead'), null, 'x'.repeat(600), null);
    expect(await row('dead')).toMatchObject({ status: 'exhausted', attempts: 1, last_status: null });
    expect((await row('dead')).last_error).toHaveLength(500);

    // released at once (no waiting for the lease); the failed one is due only at its retry time
    await B.release([idOf('back')]);
    expect((await A.claim(10, t0 + 1, 60_000)).map((d) => d.event_id)).toEqual([`evt_back_${u}`]);
    expect((await A.claim(10, t0 + 5000, 60_000)).map((d) => d.event_id)).toEqual([`evt_retry_${u}`]);

    // handed to the Redis queue: not claimable; outcomes written back, a delivered one stays delivered
    await A.handedOff([idOf('queued1'), idOf('queued2'), idOf('ok')], t0 + 10);
    expect(await row('queued1')).toMatchObject({ status: 'queued', next_attempt_ms: t0 + 10 });
    expect((await row('ok')).status).toBe('delivered');
    // once the leases have run out only the two still pending come back, not the queued or settled ones
    expect((await B.claim(10, t0 + 10 * 60_000, 60_000)).map((d) => d.event_id)).toEqual([`evt_back_${u}`, `evt_retry_${u}`]);
    const outcome = (id: string, status: 'delivered' | 'exhausted' | 'dropped', attempts: number, at: number) => ({
      event_id: `evt_${id}_${u}`,
      subscription_id: s.id,
      status,
      attempts,
      http_status: status === 'delivered' ? 200 : 500,
      error: status === 'delivered' ? null : 'HTTP 500',
      at_ms: at,
    });
    await B.settleFromQueue([outcome('queued1', 'delivered', 3, t0 + 100), outcome('queued2', 'exhausted', 7, t0 + 100)]);
    expect(await row('queued1')).toMatchObject({ status: 'delivered', attempts: 3, last_status: 200, delivered_ms: t0 + 100 });
    expect(await row('queued2')).toMatchObject({ status: 'exhausted', attempts: 7, last_status: 500, delivered_ms: null });
    // applied twice (a re-read stream entry): no change; a late delivered beats exhausted, never the other way
    await A.settleFromQueue([outcome('queued1', 'exhausted', 7, t0 + 200), outcome('queued2', 'delivered', 2, t0 + 300)]);
    expect(await row('queued1')).toMatchObject({ status: 'delivered', attempts: 3 });
    expect(await row('queued2')).toMatchObject({ status: 'delivered', attempts: 7, delivered_ms: t0 + 300 });

    // the delivery log: newest first, paged by delivery id, filtered by status
    const all = await B.deliveriesOf(s.id, { limit: 10 });
    expect(all.map((d) => d.event_id)).toEqual(['queued2', 'queued1', 'back', 'dead', 'retry', 'ok'].map((id) => `evt_${id}_${u}`));
    expect((await A.deliveriesOf(s.id, { limit: 2, before: all[1]!.delivery_id })).map((d) => d.event_id)).toEqual([`evt_back_${u}`, `evt_dead_${u}`]);
    expect((await A.deliveriesOf(s.id, { limit: 10, statuses: ['exhausted', 'pending'] })).map((d) => d.event_id)).toEqual([`evt_back_${u}`, `evt_dead_${u}`, `evt_retry_${u}`]);
    const counts = await B.counts();
    expect(counts.delivered).toBeGreaterThanOrEqual(3);
    expect(Object.keys(counts).sort()).toEqual(['delivered', 'dropped', 'exhausted', 'pending', 'queued']);

    // pruning: settled rows before the cutoff go, a bounded batch per call; pending rows and the usage counter stay
    const usedBefore = await A.used(u, month);
    await dbA.run(`UPDATE webhook_deliveries SET created_ms = ? WHERE subscription_id = ?`, [1000, s.id]);
    const before = Number((await dbA.get<{ n: number }>(`SELECT count(*) AS n FROM webhook_deliveries WHERE created_ms < ? AND status <> 'pending'`, [2000]))!.n);
    expect(before).toBeGreaterThanOrEqual(4);
    let pruned = 0;
    for (let n = await B.prune(2000, 2); n > 0; n = await (pruned % 4 ? A : B).prune(2000, 2)) {
      expect(n).toBeLessThanOrEqual(2);
      pruned += n;
    }
    expect(pruned).toBe(before);
    expect((await A.deliveriesOf(s.id, { limit: 10 })).map((d) => d.status).sort()).toEqual(['pending', 'pending']);
    expect(await A.used(u, month)).toBe(usedBefore);

    // a fast worker's outcome can reach the store before the relay has marked its row handed off (the relay's
    // UPDATE and the outcome sink's run on different connections): the outcome still settles the row, and the late
    // hand-off leaves it settled (the row would otherwise read queued for ever)
    await A.enqueue(event(`evt_early_${u}`), [{ id: s.id, user_id: u }], () => 1e9, t0);
    const early = (await A.claim(10, t0 + 60 * 60_000, 60_000)).find((d) => d.event_id === `evt_early_${u}`)!;
    expect(early.status).toBe('pending');
    await B.settleFromQueue([outcome('early', 'delivered', 1, t0 + 60 * 60_000 + 5)]);
    await A.handedOff([early.delivery_id], t0 + 60 * 60_000 + 10);
    expect(await row('early')).toMatchObject({ status: 'delivered', attempts: 1, delivered_ms: t0 + 60 * 60_000 + 5 });
    expect((await B.claim(10, t0 + 3 * 60 * 60_000, 60_000)).map((d) => d.event_id)).not.toContain(`evt_early_${u}`);
  });


  it('an attempt whose lease ran out: its failure does not count once another claim holds the row; its 2xx is final', async () => {
    const u = newUser();
    const s = await A.create(sub(u), now);
    const t0 = now + 40 * 24 * 3600_000;
    await dbA.run(`UPDATE webhook_deliveries SET status = 'dropped' WHERE status = 'pending'`);
    for (const id of ['slow', 'late_ok']) await A.enqueue(event(`evt_${id}_${u}`), [{ id: s.id, user_id: u }], () => 1e9, t0);
    const row = async (id: string) => (await B.delivery(`evt_${id}_${u}`, s.id))!;
    const first = await A.claim(10, t0, 60_000);
    expect(first.map((d) => d.lease_until_ms)).toEqual([t0 + 60_000, t0 + 60_000]);
    const firstOf = (id: string) => first.find((d) => d.event_id === `evt_${id}_${u}`)!;
    // both leases run out mid-send; another worker claims the rows again
    const second = await B.claim(10, t0 + 60_000, 60_000);
    const secondOf = (id: string) => second.find((d) => d.event_id === `evt_${id}_${u}`)!;
    expect(secondOf('slow').lease_until_ms).toBe(t0 + 120_000);
    // the stale attempt's failure is not a try of the current claim: nothing changes
    await A.failed(firstOf('slow').delivery_id, 503, 'http 503', t0 + 65_000, firstOf('slow').lease_until_ms);
    expect(await row('slow')).toMatchObject({ status: 'pending', attempts: 0, last_status: null, lease_until_ms: t0 + 120_000 });
    // the current claim's failure counts and frees the row
    await B.failed(secondOf('slow').delivery_id, 500, 'http 500', t0 + 70_000, secondOf('slow').lease_until_ms);
    expect(await row('slow')).toMatchObject({ status: 'pending', attempts: 1, last_status: 500, next_attempt_ms: t0 + 70_000, lease_until_ms: 0 });
    // the current claim exhausts 'late_ok'; then the stale attempt's 2xx arrives: the receiver has the event
    await B.failed(secondOf('late_ok').delivery_id, 500, 'http 500', null, secondOf('late_ok').lease_until_ms);
    expect((await row('late_ok')).status).toBe('exhausted');
    await A.delivered(firstOf('late_ok').delivery_id, 200, t0 + 61_000);
    expect(await row('late_ok')).toMatchObject({ status: 'delivered', attempts: 2, last_status: 200, last_error: null, delivered_ms: t0 + 61_000 });
    // and a failure after that changes nothing
    await B.failed(secondOf('late_ok').delivery_id, 500, 'http 500', null, 0);
    expect((await row('late_ok')).status).toBe('delivered');
  });
  it('push subscriptions: one row per endpoint across replicas, keep-or-replace by owner, removal once', async () => {
    const endpoint = `https://push.example.com/${engine.name}/1`;
    const keys = { p256dh: 'p'.repeat(87), auth: 'a'.repeat(22) };
    // the same endpoint registered on both replicas at once, by two users: one row, owned by one of them
    const raced = await Promise.all(['u_p1', 'u_p2', 'u_p1', 'u_p2'].map((user_id, i) => (i % 2 ? PA : PB).upsert({ user_id, endpoint, ...keys }, now + i)));
    expect(raced.every((r) => r.endpoint === endpoint)).toBe(true);
    expect(Number((await dbA.get<{ n: number }>(`SELECT count(*) AS n FROM push_subscriptions WHERE endpoint = ?`, [endpoint]))!.n)).toBe(1);
    const owner = (await PA.get(endpoint))!.user_id;
    expect(['u_p1', 'u_p2']).toContain(owner);
    expect((await PB.forUser('u_p1')).length + (await PB.forUser('u_p2')).length).toBe(1);
    // the first registration's time stays, whichever replica made it
    const firstAt = (await PB.get(endpoint))!.created_at;
    expect(new Set(raced.map((r) => r.created_at))).toEqual(new Set([firstAt]));
    expect([0, 1, 2, 3].map((i) => new Date(now + i).toISOString())).toContain(firstAt);

    // the owner's choice is kept by a re-subscription that omits it, replaced by one that sends it
    await PA.upsert({ user_id: owner, endpoint, ...keys, event_types: ['market.resolved'], filter_json: { min_size_usdc: 5 } }, now);
    expect(await PB.upsert({ user_id: owner, endpoint, ...keys, auth: 'b'.repeat(22) }, now)).toMatchObject({ event_types: ['market.resolved'], filter_json: { min_size_usdc: 5 }, auth: 'b'.repeat(22) });
    expect(await PB.upsert({ user_id: owner, endpoint, ...keys, filter_json: {} }, now)).toMatchObject({ event_types: ['market.resolved'], filter_json: {} });
    // changing hands resets to the defaults
    const newOwner = owner === 'u_p1' ? 'u_p2' : 'u_p1';
    expect(await PA.upsert({ user_id: newOwner, endpoint, ...keys }, now + 100)).toMatchObject({ user_id: newOwner, event_types: ['signal.smart_money'], filter_json: {}, created_at: firstAt });
    expect(await PB.forUser(owner)).toEqual([]);
    expect((await PB.all()).filter((r) => r.endpoint === endpoint)).toHaveLength(1);

    const removed = await Promise.all([PA.remove(endpoint), PB.remove(endpoint)]);
    expect(removed.filter(Boolean)).toHaveLength(1);
    expect(await PA.get(endpoint)).toBeNull();
  });

  it('getOrCreate gives both replicas the same value when they race, and keeps it', async () => {
    const key = `vapid-test-${engine.name}`;
    let made = 0;
    const values = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? PA : PB).getOrCreate(key, () => `value-${++made}-${i}`)));
    expect(new Set(values).size).toBe(1);
    expect(values[0]).toMatch(/^value-\d+-\d$/);
    const calls = made;
    expect(await PB.getOrCreate(key, () => 'another')).toBe(values[0]);
    expect(await PA.getOrCreate(key, () => 'another')).toBe(values[0]);
    expect(made).toBe(calls); // an existing value is read, nothing made
  });
});
