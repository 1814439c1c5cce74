/**
 * The x402 payment ledger (data/payment-ledger.ts) on SQLite and on PostgreSQL, with two ledger instances on one
 * database standing for two replicas: of many concurrent reservations of one authorization exactly one succeeds
 * (also from two separate processes); a settled payment is final (an UPDATE of a settled row fails in the engine);
 * release and fail make an authorization reservable again, once; an uncertain or crashed reservation never is;
 * expireStale; a restart keeps everything; settled totals equal a brute-force sum over a random history.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PAYMENT_MIGRATIONS, PaymentLedger, paymentKey, type PaymentStatus } from '../../data/payment-ledger.ts';
import { openServiceDb, type SqlDb } from '../../data/sql/db.ts';
import { reservation } from '../helpers/reservation.ts';
import { replicas, SERVICE_ENGINES } from '../helpers/service-engines.ts';

const res = reservation;
const statusOf = async (l: PaymentLedger, key: string) => (await l.get(key))?.status;

/** Run the replica child on `target`: resolves with the nonces it won. */
function startReplica(target: string, keys: number, attempts: number): { ready: Promise<void>; go(): void; won: Promise<string[]> } {
  const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, '../helpers/ledger-replica-child.ts'), target, String(keys), String(attempts)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout });
  let ready!: () => void;
  let won!: (w: string[]) => void;
  const out = { ready: new Promise<void>((r) => (ready = r)), won: new Promise<string[]>((r) => (won = r)) };
  lines.on('line', (l) => (l === 'ready' ? ready() : won(JSON.parse(l) as string[])));
  const exited = new Promise<number | null>((r) => child.on('exit', r));
  return {
    ready: Promise.race([out.ready, exited.then((c) => Promise.reject(new Error(`replica exited ${c}`)))]),
    go: () => child.stdin.write('go\n'),
    won: Promise.race([out.won, exited.then((c) => Promise.reject(new Error(`replica exited ${c} without an answer`)))]),
  };
}

describe.each(SERVICE_ENGINES)('the payment ledger on $name', (engine) => {
  let target: string;
  let drop: () => Promise<void>;
  let dbs: { a: SqlDb; b: SqlDb; close(): Promise<void> };
  let A: PaymentLedger;
  let B: PaymentLedger;

  beforeAll(async () => {
    ({ target, drop } = await engine.fresh('ledger'));
    dbs = await replicas(engine, target);
    // two replicas open (and migrate) the database at the same moment
    [A, B] = await Promise.all([PaymentLedger.open(dbs.a), PaymentLedger.open(dbs.b)]);
  }, 60_000);

  afterAll(async () => {
    await dbs?.close();
    await drop?.();
  });

  it('applies its migrations once, also when two replicas open the database together', async () => {
    const rows = await dbs.a.all<{ name: string }>(`SELECT name FROM schema_migrations WHERE store = 'x402_payments' ORDER BY name`);
    expect(rows.map((r) => r.name)).toEqual(PAYMENT_MIGRATIONS.map((m) => m.name));
    const again = await PaymentLedger.open(dbs.b);
    expect(await dbs.a.all(`SELECT name FROM schema_migrations WHERE store = 'x402_payments'`)).toHaveLength(PAYMENT_MIGRATIONS.length);
    await again.close();
  });

  it('of many concurrent reservations of one authorization from two replicas exactly one succeeds, for every authorization', async () => {
    const nonces = Array.from({ length: 15 }, (_, i) => `0xc0${i}`);
    const tries = nonces.flatMap((n) => Array.from({ length: 8 }, (_, i) => ({ n, p: ((i % 2 ? A : B) as PaymentLedger).reserve(res(n), 10 + i) })));
    const out = await Promise.all(tries.map(async (t) => ({ n: t.n, r: await t.p })));
    for (const n of nonces) {
      const mine = out.filter((o) => o.n === n).map((o) => o.r);
      expect(mine.filter((r) => r.ok)).toHaveLength(1);
      for (const r of mine) if (!r.ok) expect(r.status).toBe('reserved');
      expect(new Set(mine.map((r) => r.key))).toEqual(new Set([paymentKey(res(n))]));
    }
    const rows = await dbs.a.all<{ n: number }>(`SELECT count(*) AS n FROM x402_payments WHERE nonce LIKE '0xc0%'`);
    expect(Number(rows[0]!.n)).toBe(nonces.length);
  });

  it('the key is (network, asset, payer, nonce), case-insensitive: another payer or asset is another authorization', async () => {
    expect((await A.reserve(res('0xAB'), 1)).ok).toBe(true);
    expect(await B.reserve(res('0xab', { payer: '0XPAYER', asset: '0xASSET' }), 2)).toMatchObject({ ok: false, status: 'reserved' });
    expect((await B.reserve(res('0xab', { payer: '0xOther' }), 2)).ok).toBe(true);
    expect((await B.reserve(res('0xab', { asset: '0xOtherAsset' }), 2)).ok).toBe(true);
    expect((await B.reserve(res('0xab', { network: 'base' }), 2)).ok).toBe(true);
  });

  it('a settled payment is final: no retake, no transition, and the engine refuses any update of its row', async () => {
    const a = await A.reserve(res('0x51'), 1);
    expect(await B.settle(a.key, { transaction: '0xtx51' }, 2)).toBe(true);
    expect(await A.reserve(res('0x51'), 3)).toMatchObject({ ok: false, status: 'settled' });
    // the gate's transitions all require a held reservation
    expect(await A.settle(a.key, { transaction: '0xother' }, 4)).toBe(false);
    expect(await A.release(a.key, 'late', 4)).toBe(false);
    expect(await B.fail(a.key, {}, 'late', 4)).toBe(false);
    expect(await B.markUncertain(a.key, {}, 'late', 4)).toBe(false);
    expect(await A.expireStale(4_000_000_000_000)).toBeGreaterThanOrEqual(0);
    // the trigger: a direct UPDATE of a settled row fails in the engine, whatever it changes
    await expect(dbs.a.run(`UPDATE x402_payments SET status = 'released' WHERE payment_key = ?`, [a.key])).rejects.toThrow(/a settled payment is final/);
    await expect(dbs.b.run(`UPDATE x402_payments SET error = 'x' WHERE payment_key = ?`, [a.key])).rejects.toThrow(/a settled payment is final/);
    expect(await A.get(a.key)).toMatchObject({ status: 'settled', tx_hash: '0xtx51', receipt_json: JSON.stringify({ transaction: '0xtx51' }), updated_at: new Date(2).toISOString() });
    // …while a row that is not settled can be updated (the trigger is not a blanket refusal)
    const b = await A.reserve(res('0x52'), 1);
    expect((await dbs.a.run(`UPDATE x402_payments SET error = 'note' WHERE payment_key = ?`, [b.key])).changes).toBe(1);
  });

  it('release and fail make an authorization reservable again, by one of many concurrent retakes; uncertain never', async () => {
    for (const [nonce, end] of [
      ['0x61', (k: string) => A.release(k, 'handler failed', 5)],
      ['0x62', (k: string) => B.fail(k, { success: false }, 'insufficient_funds', 5)],
    ] as const) {
      const first = await A.reserve(res(nonce), 1);
      expect(first.ok).toBe(true);
      expect(await end(first.key)).toBe(true);
      expect(await statusOf(A, first.key)).toMatch(/^(released|failed)$/);
      const retakes = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? A : B).reserve(res(nonce, { route: `r${i}`, amount: String(1000 + i) }), 6)));
      const wins = retakes.filter((r) => r.ok);
      expect(wins).toHaveLength(1);
      const row = (await B.get(first.key))!;
      // the winner's route and amount; the previous attempt's error, receipt and tx cleared
      expect(row).toMatchObject({ status: 'reserved', error: null, receipt_json: null, tx_hash: null, updated_at: new Date(6).toISOString() });
      const winner = retakes.findIndex((r) => r.ok);
      expect(row.route).toBe(`r${winner}`);
      expect(row.amount).toBe(String(1000 + winner));
    }
    const u = await A.reserve(res('0x63'), 1);
    expect(await B.markUncertain(u.key, { success: false }, 'facilitator_unavailable', 2)).toBe(true);
    expect(await A.reserve(res('0x63'), 3)).toMatchObject({ ok: false, status: 'uncertain' });
    expect(await A.release(u.key, 'x', 4)).toBe(false);
  });

  it('expireStale marks exactly the held reservations whose window has closed, and a restart keeps everything', async () => {
    const before = await dbs.a.all<{ payment_key: string; status: PaymentStatus }>(`SELECT payment_key, status FROM x402_payments`);
    const stale = await A.reserve(res('0x71', { validBefore: 1000 }), 1);
    const live = await B.reserve(res('0x72', { validBefore: 1001 }), 1);
    const settledOld = await A.reserve(res('0x73', { validBefore: 1000 }), 1);
    await A.settle(settledOld.key, { transaction: '0xtx73' }, 2);
    const releasedOld = await A.reserve(res('0x74', { validBefore: 1000 }), 1);
    await A.release(releasedOld.key, 'x', 2);
    expect(await B.expireStale(1_000_000)).toBe(0); // valid_before 1000 s is not < 1000 s
    expect(await B.expireStale(1_000_999)).toBe(0);
    expect(await B.expireStale(1_001_000)).toBe(1);
    expect(await statusOf(A, stale.key)).toBe('expired');
    expect(await statusOf(A, live.key)).toBe('reserved');
    expect(await statusOf(A, settledOld.key)).toBe('settled');
    expect(await statusOf(A, releasedOld.key)).toBe('released');
    expect(await A.reserve(res('0x71', { validBefore: 1000 }), 3)).toMatchObject({ ok: false, status: 'expired' });
    // the rows from earlier tests with a far validBefore are untouched
    for (const r of before) expect(await statusOf(A, r.payment_key)).toBe(r.status);

    // restart: a fresh connection (a new process) sees every row as it was
    const reopenedDb = await openServiceDb(target);
    const reopened = await PaymentLedger.open(reopenedDb);
    expect(await reopened.reserve(res('0x72', { validBefore: 1001 }), 4)).toMatchObject({ ok: false, status: 'reserved' });
    expect(await statusOf(reopened, stale.key)).toBe('expired');
    expect(await reopened.get(settledOld.key)).toMatchObject({ status: 'settled', tx_hash: '0xtx73', valid_before: 1000 });
    await reopened.close();
    await reopenedDb.close();
  });

  it('settled totals equal a brute-force sum over a random history of both replicas (amounts past 2^53)', async () => {
    const routes = ['leaderboard', 'trader.playbook', 'rankings.custom'];
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            nonce: fc.integer({ min: 0, max: 11 }),
            route: fc.constantFrom(...routes),
            amount: fc.bigInt({ min: 1n, max: 2n ** 60n }),
            end: fc.constantFrom('settle', 'release', 'fail', 'uncertain', 'none'),
            replica: fc.boolean(),
          }),
          { minLength: 1, maxLength: 25 },
        ),
        async (ops) => {
          await dbs.a.run(`DELETE FROM x402_payments WHERE payer = '0xProp'`);
          const status = new Map<number, { s: PaymentStatus; route: string; amount: bigint }>();
          for (const op of ops) {
            const l = op.replica ? A : B;
            const r = await l.reserve(res(`0x${op.nonce}`, { payer: '0xProp', route: op.route, amount: op.amount.toString() }), 1);
            const prev = status.get(op.nonce);
            const mayTake = !prev || prev.s === 'released' || prev.s === 'failed';
            expect(r.ok).toBe(mayTake);
            if (!r.ok) {
              expect(r.status).toBe(prev!.s);
              continue;
            }
            // the other replica ends it half of the time
            const e = op.replica ? B : A;
            const ends: Record<typeof op.end, [PaymentStatus, () => Promise<boolean>]> = {
              settle: ['settled', () => e.settle(r.key, { transaction: `0x${op.nonce}` }, 2)],
              release: ['released', () => e.release(r.key, 'x', 2)],
              fail: ['failed', () => e.fail(r.key, {}, 'x', 2)],
              uncertain: ['uncertain', () => e.markUncertain(r.key, {}, 'x', 2)],
              none: ['reserved', async () => true],
            };
            const [next, end] = ends[op.end];
            expect(await end()).toBe(true);
            status.set(op.nonce, { s: next, route: op.route, amount: op.amount });
          }
          // brute force: per route, the settled rows of this history plus those of the earlier tests (read raw)
          const others = await dbs.a.all<{ route: string; amount: string }>(`SELECT route, amount FROM x402_payments WHERE status = 'settled' AND payer <> '0xProp'`);
          const want = new Map<string, { settled: number; amount: bigint }>();
          const add = (route: string, amount: bigint) => {
            const e = want.get(route) ?? { settled: 0, amount: 0n };
            e.settled++;
            e.amount += amount;
            want.set(route, e);
          };
          for (const o of others) add(o.route, BigInt(o.amount));
          for (const v of status.values()) if (v.s === 'settled') add(v.route, v.amount);
          const expected = [...want].map(([route, e]) => ({ route, settled: e.settled, amount: e.amount.toString() })).sort((x, y) => (x.route < y.route ? -1 : 1));
          expect(await A.totals()).toEqual(expected);
          expect(await B.totals()).toEqual(expected);
          for (const [n, v] of status) expect(await statusOf(B, paymentKey(res(`0x${n}`, { payer: '0xProp' })))).toBe(v.s);
        },
      ),
      { numRuns: 25 },
    );
  }, 120_000);

  it('two replica processes reserving the same authorizations at once: exactly one reservation each', async () => {
    const keys = 25;
    const [p, q] = [startReplica(target, keys, 4), startReplica(target, keys, 4)];
    await Promise.all([p.ready, q.ready]);
    p.go();
    q.go();
    const [wp, wq] = await Promise.all([p.won, q.won]);
    const all = [...wp, ...wq].sort();
    expect(all).toHaveLength(keys);
    expect(new Set(all).size).toBe(keys);
    const held = await A.get(paymentKey(res(`0x${'0'.repeat(64)}`)));
    expect(held?.status).toBe('reserved');
  }, 60_000);
});
