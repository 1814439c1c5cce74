/**
 * The durable payment ledger (SQLite): every x402 authorization the gateway accepts is reserved here before any
 * work is done, and ends settled (with its receipt), released (the handler failed: nothing was charged) or failed
 * (settlement failed: nothing was charged). The authorization nonce is the key, so a replayed or concurrent
 * duplicate payment finds it taken and is refused before the handler runs.
 *
 * A settlement whose outcome the facilitator could not report (a timeout) is marked uncertain and never reused.
 * A reservation left behind by a crash (status reserved) is never reused: its authorization may or may not have
 * been settled on chain. `expireStale` marks reservations whose authorization window has closed as expired (they
 * can no longer settle), which is what an operator needs to reconcile.
 */
import type Database from 'better-sqlite3';
import { openSqlite } from './sqlite.ts';

export type PaymentStatus = 'reserved' | 'settled' | 'released' | 'failed' | 'uncertain' | 'expired';

export interface PaymentRow {
  payment_key: string;
  route: string;
  resource: string;
  network: string;
  asset: string;
  payer: string;
  pay_to: string;
  amount: string;
  nonce: string;
  valid_before: number;
  status: PaymentStatus;
  reserved_at: string;
  updated_at: string;
  tx_hash: string | null;
  receipt_json: string | null;
  error: string | null;
}

export interface Reservation {
  route: string;
  resource: string;
  network: string;
  asset: string;
  payer: string;
  payTo: string;
  amount: string;
  nonce: string;
  validBefore: number;
}

const iso = (ms: number) => new Date(ms).toISOString();

/** One authorization = (network, asset, payer, nonce): EIP-3009 nonces are per token contract and payer. */
export function paymentKey(r: Pick<Reservation, 'network' | 'asset' | 'payer' | 'nonce'>): string {
  return `${r.network}:${r.asset.toLowerCase()}:${r.payer.toLowerCase()}:${r.nonce.toLowerCase()}`;
}

export class PaymentLedger {
  readonly db: Database.Database;

  constructor(path: string) {
    // a payment is money: the ledger syncs fully at every commit
    this.db = openSqlite(path, { synchronous: 'FULL' });
    this.db.exec(`CREATE TABLE IF NOT EXISTS x402_payments (
      payment_key TEXT PRIMARY KEY, route TEXT NOT NULL, resource TEXT NOT NULL, network TEXT NOT NULL, asset TEXT NOT NULL,
      payer TEXT NOT NULL, pay_to TEXT NOT NULL, amount TEXT NOT NULL, nonce TEXT NOT NULL, valid_before INTEGER NOT NULL,
      status TEXT NOT NULL, reserved_at TEXT NOT NULL, updated_at TEXT NOT NULL, tx_hash TEXT, receipt_json TEXT, error TEXT);
      CREATE INDEX IF NOT EXISTS x402_payments_status ON x402_payments(status);
      CREATE TRIGGER IF NOT EXISTS x402_settled_final BEFORE UPDATE ON x402_payments WHEN OLD.status = 'settled'
        BEGIN SELECT RAISE(ABORT, 'a settled payment is final'); END;`);
  }

  close(): void {
    this.db.close();
  }

  /**
   * Reserve an authorization; false when it is reserved or settled already (a replay or a concurrent duplicate).
   * An authorization whose earlier use was released or failed (nothing charged) may be reserved again.
   */
  reserve(r: Reservation, nowMs: number): { ok: true; key: string } | { ok: false; key: string; status: PaymentStatus } {
    const key = paymentKey(r);
    return this.db.transaction(() => {
      const ins = this.db
        .prepare(
          `INSERT INTO x402_payments (payment_key, route, resource, network, asset, payer, pay_to, amount, nonce, valid_before, status, reserved_at, updated_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'reserved', ?, ?) ON CONFLICT (payment_key) DO NOTHING`,
        )
        .run(key, r.route, r.resource, r.network, r.asset, r.payer, r.payTo, r.amount, r.nonce, r.validBefore, iso(nowMs), iso(nowMs));
      if (ins.changes === 1) return { ok: true as const, key };
      const retake = this.db
        .prepare(
          `UPDATE x402_payments SET status = 'reserved', route = ?, resource = ?, amount = ?, updated_at = ?, error = NULL, receipt_json = NULL, tx_hash = NULL
           WHERE payment_key = ? AND status IN ('released', 'failed')`,
        )
        .run(r.route, r.resource, r.amount, iso(nowMs), key);
      if (retake.changes === 1) return { ok: true as const, key };
      const row = this.db.prepare(`SELECT status FROM x402_payments WHERE payment_key = ?`).get(key) as { status: PaymentStatus };
      return { ok: false as const, key, status: row.status };
    }).immediate();
  }

  settle(key: string, receipt: { transaction: string }, nowMs: number): void {
    this.db
      .prepare(`UPDATE x402_payments SET status = 'settled', tx_hash = ?, receipt_json = ?, updated_at = ? WHERE payment_key = ? AND status = 'reserved'`)
      .run(receipt.transaction, JSON.stringify(receipt), iso(nowMs), key);
  }

  /** The handler failed before settlement: nothing was charged. */
  release(key: string, error: string, nowMs: number): void {
    this.db.prepare(`UPDATE x402_payments SET status = 'released', error = ?, updated_at = ? WHERE payment_key = ? AND status = 'reserved'`).run(error.slice(0, 500), iso(nowMs), key);
  }

  /** Settlement failed: nothing was charged; the receipt records why. */
  fail(key: string, receipt: unknown, error: string, nowMs: number): void {
    this.db
      .prepare(`UPDATE x402_payments SET status = 'failed', receipt_json = ?, error = ?, updated_at = ? WHERE payment_key = ? AND status = 'reserved'`)
      .run(JSON.stringify(receipt), error.slice(0, 500), iso(nowMs), key);
  }

  /**
   * The facilitator could not say whether the settlement landed (timeout, transport error): the authorization is
   * never reused, and the row waits for reconciliation against the chain.
   */
  markUncertain(key: string, receipt: unknown, error: string, nowMs: number): void {
    this.db
      .prepare(`UPDATE x402_payments SET status = 'uncertain', receipt_json = ?, error = ?, updated_at = ? WHERE payment_key = ? AND status = 'reserved'`)
      .run(JSON.stringify(receipt), error.slice(0, 500), iso(nowMs), key);
  }

  /** Reservations a crash left behind whose authorization can no longer settle. Returns how many. */
  expireStale(nowMs: number): number {
    return this.db
      .prepare(`UPDATE x402_payments SET status = 'expired', updated_at = ? WHERE status = 'reserved' AND valid_before < ?`)
      .run(iso(nowMs), Math.floor(nowMs / 1000)).changes;
  }

  get(key: string): PaymentRow | null {
    return (this.db.prepare(`SELECT * FROM x402_payments WHERE payment_key = ?`).get(key) as PaymentRow | undefined) ?? null;
  }

  /** Settled totals per route (for operators and tests). */
  totals(): { route: string; settled: number; amount: string }[] {
    const rows = this.db.prepare(`SELECT route, amount FROM x402_payments WHERE status = 'settled'`).all() as { route: string; amount: string }[];
    const by = new Map<string, { settled: number; amount: bigint }>();
    for (const r of rows) {
      const e = by.get(r.route) ?? { settled: 0, amount: 0n };
      e.settled++;
      e.amount += BigInt(r.amount);
      by.set(r.route, e);
    }
    return [...by].map(([route, e]) => ({ route, settled: e.settled, amount: e.amount.toString() }));
  }
}
