/**
 * The payment module's pure parts and the ledger: exact price conversion (by hand and against a reference on
 * random decimals), the three payment encodings, and the ledger's single use, retakes and durability.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PaymentLedger } from '../../data/payment-ledger.ts';
import { openServiceDb } from '../../data/sql/db.ts';
import { decodePayment, encodeReceipt } from '../../gateway/payment/gate.ts';
import { AGENT_ROUTES, atomicToUsd, NETWORKS, requirementsFor, usdToAtomic } from '../../gateway/payment/pricing.ts';
import { reservation } from '../helpers/reservation.ts';

describe('prices', () => {
  it('converts USD to atomic units exactly, by hand', () => {
    expect(usdToAtomic('0.01')).toBe('10000');
    expect(usdToAtomic('0.005')).toBe('5000');
    expect(usdToAtomic('2.01')).toBe('2010000'); // the float trap: 2.01 * 1e6 = 2009999.9999999998
    expect(usdToAtomic('$0.05')).toBe('50000');
    expect(usdToAtomic('1')).toBe('1000000');
    expect(usdToAtomic('0.0000010')).toBe('1');
    expect(() => usdToAtomic('0.0000001')).toThrow(/precision/);
    expect(() => usdToAtomic('1e-2')).toThrow();
    expect(() => usdToAtomic('-1')).toThrow();
    expect(atomicToUsd('5000')).toBe('0.005');
    expect(atomicToUsd('2010000')).toBe('2.01');
    expect(atomicToUsd('1000000')).toBe('1');
  });

  it('round-trips any amount with at most 6 decimals', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 10n ** 15n }), (atomic) => {
        const usd = atomicToUsd(atomic.toString());
        expect(usdToAtomic(usd)).toBe(atomic.toString());
        // reference: the decimal string's digits without the point, scaled
        const [w, f = ''] = usd.split('.');
        expect(BigInt(w! + f.padEnd(6, '0'))).toBe(atomic);
      }),
      { numRuns: 500 },
    );
  });

  it('builds v1 requirements with the asset, payee, EIP-712 domain and exact amount', () => {
    const req = requirementsFor({ network: NETWORKS['base-sepolia']!, payTo: '0x000000000000000000000000000000000000dEaD' }, '0.01', 'http://x/v1/agent/leaderboard', 'leaderboard');
    expect(req).toEqual({
      scheme: 'exact',
      network: 'base-sepolia',
      maxAmountRequired: '10000',
      resource: 'http://x/v1/agent/leaderboard',
      description: 'leaderboard',
      mimeType: 'application/json',
      payTo: '0x000000000000000000000000000000000000dEaD',
      maxTimeoutSeconds: 60,
      asset: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
      extra: { name: 'USDC', version: '2' },
    });
    expect(AGENT_ROUTES.find((r) => r.id === 'rankings.custom')!.price_usd).toBe('0.05');
  });
});

describe('payment encodings', () => {
  const authorization = {
    from: '0x1111111111111111111111111111111111111111',
    to: '0x2222222222222222222222222222222222222222',
    value: '10000',
    validAfter: '0',
    validBefore: '9999999999',
    nonce: '0x' + 'ab'.repeat(32),
  };
  const signature = '0x' + '11'.repeat(65);
  const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64');

  it('decodes the v1 header, the legacy flat form and the x402: 0.1 alias to the same payment', () => {
    const v1 = { x402Version: 1, scheme: 'exact', network: 'base-sepolia', payload: { signature, authorization } };
    const a = decodePayment(b64(v1));
    const b = decodePayment(b64({ scheme: 'exact', network: 'base-sepolia', signature, authorization }));
    const c = decodePayment(b64({ x402: 0.1, scheme: 'exact', network: 'base-sepolia', payload: { signature, authorization } }));
    const d = decodePayment(v1); // MCP passes the object itself
    expect(a).toEqual({ ok: true, payment: v1, encoding: 'v1' });
    expect(b).toEqual({ ok: true, payment: v1, encoding: 'legacy_flat' });
    expect(c).toEqual({ ok: true, payment: v1, encoding: 'version_alias' });
    expect(d).toEqual({ ok: true, payment: v1, encoding: 'v1' });
  });

  it('refuses what is not a payment, saying why', () => {
    for (const bad of ['%%%', b64('text'), b64([1]), b64({ x402Version: 2, scheme: 'exact', network: 'base', payload: { signature, authorization } }), b64({ x402Version: 1, scheme: 'exact', network: 'base', payload: { signature, authorization: { ...authorization, nonce: '0x12' } } }), 'A'.repeat(20_000)]) {
      const r = decodePayment(bad);
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.reason.length).toBeGreaterThan(5);
    }
  });

  it('encodes the receipt as base64 JSON', () => {
    const r = { success: true, transaction: '0xabc', network: 'base-sepolia', payer: '0x1' };
    expect(JSON.parse(Buffer.from(encodeReceipt(r), 'base64').toString())).toEqual(r);
  });
});

describe('ledger', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ledger-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  const res = reservation;

  it('reserves an authorization once; a released or failed one may be retried; a settled one is final', async () => {
    const l = await PaymentLedger.open(join(dir, 'a.sqlite'));
    const a = await l.reserve(res('0x01'), 1);
    expect(a.ok).toBe(true);
    expect(await l.reserve(res('0x01'), 2)).toMatchObject({ ok: false, status: 'reserved' });
    // the same nonce from another payer or on another asset is another authorization
    expect((await l.reserve(res('0x01', { payer: '0xOther' }), 2)).ok).toBe(true);
    await l.release(a.key, 'handler failed', 3);
    expect((await l.reserve(res('0x01'), 4)).ok).toBe(true);
    await l.fail(a.key, { success: false }, 'settlement failed', 5);
    expect((await l.reserve(res('0x01'), 6)).ok).toBe(true);
    await l.settle(a.key, { transaction: '0xtx' }, 7);
    expect(await l.reserve(res('0x01'), 8)).toMatchObject({ ok: false, status: 'settled' });
    await expect(l.db.run(`UPDATE x402_payments SET status = 'released' WHERE payment_key = ?`, [a.key])).rejects.toThrow(/final/);
    expect(await l.totals()).toEqual([{ route: 'leaderboard', settled: 1, amount: '2000' }]);
    await l.close();
  });

  it('survives a restart, and expires reservations a crash left behind once they can no longer settle', async () => {
    const path = join(dir, 'b.sqlite');
    const l1 = await PaymentLedger.open(path);
    const k = (await l1.reserve(res('0x02', { validBefore: 1000 }), 1)).ok;
    expect(k).toBe(true);
    await l1.close(); // "crash" with the reservation open
    const l2 = await PaymentLedger.open(path);
    expect(await l2.reserve(res('0x02', { validBefore: 1000 }), 2)).toMatchObject({ ok: false, status: 'reserved' });
    expect(await l2.expireStale(999_000)).toBe(0);
    expect(await l2.expireStale(1_001_000)).toBe(1);
    expect(await l2.reserve(res('0x02', { validBefore: 1000 }), 3)).toMatchObject({ ok: false, status: 'expired' });
    await l2.close();
  });

  // concurrency across replicas and processes, on SQLite and PostgreSQL: test/data/payment-ledger.test.ts
  it('lets exactly one of many concurrent reservations of one authorization through (several ledgers on one connection)', async () => {
    const db = await openServiceDb(join(dir, 'c.sqlite'));
    const handles = await Promise.all([PaymentLedger.open(db), PaymentLedger.open(db), PaymentLedger.open(db)]);
    const wins = (await Promise.all(Array.from({ length: 30 }, (_, i) => handles[i % 3]!.reserve(res('0x03'), i)))).filter((r) => r.ok);
    expect(wins).toHaveLength(1);
    await db.close();
  });
});
