/**
 * A replica process for the payment ledger's exactly-once test: opens the ledger on a service database (a SQLite
 * path or a PostgreSQL URL), says "ready", waits for "go" on stdin, then reserves every one of `keys` authorizations
 * `attempts` times, all at once, and prints the nonces it won as one JSON line.
 *   tsx test/helpers/ledger-replica-child.ts <target> <keys> <attempts>
 */
import { createInterface } from 'node:readline';
import { PaymentLedger } from '../../data/payment-ledger.ts';
import { reservation } from './reservation.ts';

const [target, keys, attempts] = process.argv.slice(2);
const ledger = await PaymentLedger.open(target!);
process.stdout.write('ready\n');
const lines = createInterface({ input: process.stdin });
await new Promise<void>((go) => lines.once('line', () => go()));
lines.close();
const tries: Promise<{ nonce: string; ok: boolean }>[] = [];
for (let a = 0; a < Number(attempts); a++) {
  for (let k = 0; k < Number(keys); k++) {
    const nonce = `0x${k.toString(16).padStart(64, '0')}`;
    tries.push(
      ledger
        .reserve(reservation(nonce), Date.now())
        .then((r) => ({ nonce, ok: r.ok })),
    );
  }
}
const won = (await Promise.all(tries)).filter((r) => r.ok).map((r) => r.nonce);
process.stdout.write(`${JSON.stringify(won)}\n`);
await ledger.close();
