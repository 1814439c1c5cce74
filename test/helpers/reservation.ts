/** A payment reservation for ledger tests (one authorization per nonce; fields overridable). */
import type { Reservation } from '../../data/payment-ledger.ts';

export const reservation = (nonce: string, over: Partial<Reservation> = {}): Reservation => ({
  route: 'leaderboard',
  resource: 'http://x/v1/agent/leaderboard',
  network: 'base-sepolia',
  asset: '0xAsset',
  payer: '0xPayer',
  payTo: '0xPayee',
  amount: '2000',
  nonce,
  validBefore: 2_000_000_000,
  ...over,
});
