/**
 * The durable payment ledger (the service state: SQLite, or PostgreSQL shared by every replica): every x402 authorization the gateway accepts is reserved here before any
 * work is done, and ends settled (with its receipt), released (the handler failed: nothing was charged) or failed
 * (settlement failed: nothing was charged). The authorization nonce is the key, so a replayed or concurrent
 * duplicate payment finds it taken and is refused before the handler runs.
 *
 * A settlement whose outcome the facilitator could not report (a timeout) is marked uncertain and never reused.
 * A reservation left behind by a crash (status reserved) is never reused: its authorization may or may not have
 * been settled on chain. `expireStale` marks reservations whose authorization window has closed as expired (they
 * can no longer settle), which is what an operator needs to reconcile.
 *
 * Exactly once across replicas: a reservation is one transaction under a lock named by the authorization (SQLite's
 * write lock, a PostgreSQL advisory lock): an INSERT … ON CONFLICT DO NOTHING, else the retake of a released or
 * failed row, so of any number of concurrent reservations of one authorization exactly one succeeds. A settled row
 * is final: a trigger refuses any update of it, in either engine. The ledger syncs fully at every commit (SQLite
 * synchronous = FULL, data/sql/db.ts's default; PostgreSQL commits are durable).
 */
import type { SqlDb } from './sql/db.ts';
import { ServiceStore, openMigrated, refuseChanges, type Migration } from './sql/migrate.ts';

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

/** The ledger's table, version by version (data/sql/migrate.ts). */
export const PAYMENT_MIGRATIONS: readonly Migration[] = [
  {
    name: '0001-x402-payments',
    async up(db) {
      // IF NOT EXISTS: a SQLite file from before versioned migrations already has the table and its trigger
      await db.exec(`CREATE TABLE IF NOT EXISTS x402_payments (
        payment_key TEXT PRIMARY KEY, route TEXT NOT NULL, resource TEXT NOT NULL, network TEXT NOT NULL, asset TEXT NOT NULL,
        payer TEXT NOT NULL, pay_to TEXT NOT NULL, amount TEXT NOT NULL, nonce TEXT NOT NULL, valid_before BIGINT NOT NULL,
        status TEXT NOT NULL, reserved_at TEXT NOT NULL, updated_at TEXT NOT NULL, tx_hash TEXT, receipt_json TEXT, error TEXT);
      CREATE INDEX IF NOT EXISTS x402_payments_status ON x402_payments(status);`);
      await refuseChanges(db, { name: 'x402_settled_final', table: 'x402_payments', ops: ['UPDATE'], when: "OLD.status = 'settled'", message: 'a settled payment is final' });
    },
  },
];

export class PaymentLedger extends ServiceStore {
  /** The ledger on `target`: an open service database (shared with the other stores), or a SQLite path / PostgreSQL URL it opens and owns. */
  static async open(target: SqlDb | string): Promise<PaymentLedger> {
    const { db, owned } = await openMigrated(target, 'x402_payments', PAYMENT_MIGRATIONS);
    return new PaymentLedger(db, owned);
  }

  /**
   * Reserve an authorization; not ok when it is reserved or settled already (a replay or a concurrent duplicate, from
   * this replica or another). An authorization whose earlier use was released or failed (nothing charged) may be
   * reserved again.
   */
  async reserve(r: Reservation, nowMs: number): Promise<{ ok: true; key: string } | { ok: false; key: string; status: PaymentStatus }> {
    const key = paymentKey(r);
    return this.db.tx(
      async (t) => {
        const ins = await t.run(
          `INSERT INTO x402_payments (payment_key, route, resource, network, asset, payer, pay_to, amount, nonce, valid_before, status, reserved_at, updated_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'reserved', ?, ?) ON CONFLICT (payment_key) DO NOTHING`,
          [key, r.route, r.resource, r.network, r.asset, r.payer, r.payTo, r.amount, r.nonce, r.validBefore, iso(nowMs), iso(nowMs)],
        );
        if (ins.changes === 1) return { ok: true as const, key };
        const retake = await t.run(
          `UPDATE x402_payments SET status = 'reserved', route = ?, resource = ?, amount = ?, updated_at = ?, error = NULL, receipt_json = NULL, tx_hash = NULL
           WHERE payment_key = ? AND status IN ('released', 'failed')`,
          [r.route, r.resource, r.amount, iso(nowMs), key],
        );
        if (retake.changes === 1) return { ok: true as const, key };
        const row = await t.get<{ status: PaymentStatus }>(`SELECT status FROM x402_payments WHERE payment_key = ?`, [key]);
        return { ok: false as const, key, status: row!.status };
      },
      { lock: `x402:${key}` },
    );
  }

  /** The settlement landed: the row is final. False when the reservation was not (or no longer) held. */
  settle(key: string, receipt: { transaction: string }, nowMs: number): Promise<boolean> {
    return this.endReservation(key, 'settled', { tx_hash: receipt.transaction, receipt_json: JSON.stringify(receipt) }, nowMs);
  }

  /** The handler failed before settlement: nothing was charged. False when the reservation was not held. */
  release(key: string, error: string, nowMs: number): Promise<boolean> {
    return this.endReservation(key, 'released', { error: error.slice(0, 500) }, nowMs);
  }

  /** Settlement failed: nothing was charged; the receipt records why. False when the reservation was not held. */
  fail(key: string, receipt: unknown, error: string, nowMs: number): Promise<boolean> {
    return this.endReservation(key, 'failed', { receipt_json: JSON.stringify(receipt), error: error.slice(0, 500) }, nowMs);
  }

  /**
   * The facilitator could not say whether the settlement landed (timeout, transport error): the authorization is
   * never reused, and the row waits for reconciliation against the chain. False when the reservation was not held.
   */
  markUncertain(key: string, receipt: unknown, error: string, nowMs: number): Promise<boolean> {
    return this.endReservation(key, 'uncertain', { receipt_json: JSON.stringify(receipt), error: error.slice(0, 500) }, nowMs);
  }

  /** A held reservation's outcome, with its columns, by one conditional UPDATE; false when it was not held. */
  private async endReservation(key: string, status: PaymentStatus, cols: Partial<Record<'tx_hash' | 'receipt_json' | 'error', string>>, nowMs: number): Promise<boolean> {
    const names = Object.keys(cols);
    const r = await this.db.run(
      `UPDATE x402_payments SET status = ?, ${names.map((n) => `${n} = ?`).join(', ')}, updated_at = ? WHERE payment_key = ? AND status = 'reserved'`,
      [status, ...Object.values(cols), iso(nowMs), key],
    );
    return r.changes === 1;
  }

  /** Reservations a crash left behind whose authorization can no longer settle. Returns how many. */
  async expireStale(nowMs: number): Promise<number> {
    return (await this.db.run(`UPDATE x402_payments SET status = 'expired', updated_at = ? WHERE status = 'reserved' AND valid_before < ?`, [iso(nowMs), Math.floor(nowMs / 1000)])).changes;
  }

  async get(key: string): Promise<PaymentRow | null> {
    return (await this.db.get<PaymentRow>(`SELECT * FROM x402_payments WHERE payment_key = ?`, [key])) ?? null;
  }

  /** Settled totals per route (for operators and tests). */
  async totals(): Promise<{ route: string; settled: number; amount: string }[]> {
    const rows = await this.db.all<{ route: string; amount: string }>(`SELECT route, amount FROM x402_payments WHERE status = 'settled' ORDER BY route`);
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
