import { createHash } from 'node:crypto';
import type { QueryRunner } from '../query.ts';
import { traderTid } from '../trader/index.ts';

// ---------------------------------------------------------------------------------------------------------------
// Opaque trader ids
// ---------------------------------------------------------------------------------------------------------------

export const TID_RE = /^t_[A-Za-z0-9_-]{22}$/;
export const ADDRESS_RE = /^0x[0-9a-fA-F]{40}$/;

/**
 * tid -> wallet address. traderTid is a keyed HMAC, so a tid cannot be decoded: the tids this process emitted are
 * remembered (most recent `capacity`), and any other is found by computing HMAC-SHA256 in SQL over every wallet
 * (sha256 of the RFC 2104 inner and outer pads; the same digest as node:crypto, checked by the tests).
 */
export class TidIndex {
  private readonly seen = new Map<string, string>();
  private readonly ipadHex: string;
  private readonly opadHex: string;

  constructor(
    readonly key: string | Uint8Array,
    private readonly capacity = 100_000,
  ) {
    traderTid(key, '0x'); // validates the key (>= 16 bytes)
    let k = typeof key === 'string' ? Buffer.from(key, 'utf8') : Buffer.from(key);
    if (k.length > 64) k = createHash('sha256').update(k).digest();
    const ipad = Buffer.alloc(64, 0x36);
    const opad = Buffer.alloc(64, 0x5c);
    for (let i = 0; i < k.length; i++) {
      ipad[i] = ipad[i]! ^ k[i]!;
      opad[i] = opad[i]! ^ k[i]!;
    }
    this.ipadHex = ipad.toString('hex');
    this.opadHex = opad.toString('hex');
  }

  /** The tid of an address, remembered for resolve(). */
  tid(address: string): string {
    const tid = traderTid(this.key, address);
    this.remember(tid, address);
    return tid;
  }

  remember(tid: string, address: string): void {
    const a = address.toLowerCase();
    this.seen.delete(tid);
    this.seen.set(tid, a);
    if (this.seen.size > this.capacity) {
      const oldest = this.seen.keys().next().value;
      if (oldest !== undefined) this.seen.delete(oldest);
    }
  }

  /** The parameters $1 and $2 of tidSql(): the key's HMAC inner and outer pads, hex. */
  sqlParams(): [string, string] {
    return [this.ipadHex, this.opadHex];
  }

  /** SQL computing the tid of `addressExpr` (lowercase 0x address); $1 = inner pad hex, $2 = outer pad hex. */
  static tidSql(addressExpr: string): string {
    const inner = `unhex(sha256(unhex($1) || encode('tid:v1:' || lower(${addressExpr}))))`;
    return `'t_' || replace(replace(left(to_base64(unhex(sha256(unhex($2) || ${inner}))), 22), '+', '-'), '/', '_')`;
  }

  /** The lowercase address of a tid, or null when no wallet has it. */
  async resolve(db: QueryRunner, tid: string): Promise<string | null> {
    if (!TID_RE.test(tid)) return null;
    const known = this.seen.get(tid);
    if (known) {
      this.remember(tid, known);
      return known;
    }
    // A tid this process never handed out: look it up in a tid → wallet table (built once, then extended with
    // wallets added since), so no request pays for hashing every wallet.
    await this.syncMap(db);
    const [r] = await db.all<{ address: string }>(`SELECT w.address FROM ${TID_MAP} m JOIN wallets w USING (wallet_id) WHERE m.tid = $1 LIMIT 1`, [tid]);
    if (!r) return null;
    this.remember(tid, r.address);
    return r.address.toLowerCase();
  }

  private mapLock: Promise<void> = Promise.resolve();
  private mappedUpTo: number | null = null;

  /** Build (first call) or extend the connection's tid map; calls are serialized. Also used to warm it at start. */
  syncMap(db: QueryRunner): Promise<void> {
    const run = this.mapLock.then(async () => {
      if (this.mappedUpTo === null) {
        await db.run(`CREATE OR REPLACE TEMP TABLE ${TID_MAP} AS SELECT wallet_id, ${TidIndex.tidSql('address')} AS tid FROM wallets`, this.sqlParams());
      } else {
        await db.run(`INSERT INTO ${TID_MAP} SELECT wallet_id, ${TidIndex.tidSql('address')} FROM wallets WHERE wallet_id > $3`, [...this.sqlParams(), this.mappedUpTo]);
      }
      const [m] = await db.all<{ m: number | null }>(`SELECT max(wallet_id) AS m FROM ${TID_MAP}`);
      this.mappedUpTo = m?.m === null || m?.m === undefined ? -1 : Number(m.m);
    });
    this.mapLock = run.catch(() => {});
    return run;
  }
}

/** per-connection temp table: tid → wallet_id under this process's key */
const TID_MAP = 'public_tid_map';
