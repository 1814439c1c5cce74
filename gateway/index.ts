/**
 * Composition of the agent gateway: the facilitator (a remote v1 facilitator by URL, or the local development
 * stack: anvil + test USDC + local facilitator), the durable ledger, the payment gate and the routers.
 */
import type { RankerSource } from '../core/rankings.ts';
import { getAddress } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import type { TidIndex } from '../core/public/index.ts';
import type { QueryRunner } from '../core/query.ts';
import { PaymentLedger } from '../data/payment-ledger.ts';
import type { SnapshotStore } from '../data/snapshot-store.ts';
import type { SqlDb } from '../data/sql/db.ts';
import { gatewayRouters } from './app.ts';
import { HttpFacilitator, LocalFacilitator } from './facilitator.ts';
import { startLocalChain, type LocalChain } from './local-chain/chain.ts';
import { PaymentGate } from './payment/gate.ts';
import { NETWORKS } from './payment/pricing.ts';
import type { Facilitator } from './payment/types.ts';

export interface GatewayOptions {
  /** local: anvil + test USDC + local facilitator (development); remote: X402_FACILITATOR_URL */
  mode: 'local' | 'remote';
  facilitatorUrl?: string;
  network?: string;
  payTo?: string;
  asset?: string;
  /** the service database the payment ledger lives in (shared with the process's other stores) */
  serviceDb: SqlDb;
  db: QueryRunner;
  /** in-memory rankers of the latest analytics versions (jobs/analytics/rankers.ts); without them custom rankings run in SQL */
  rankers?: RankerSource;
  now: () => Date;
  origin: () => string;
  snapshots?: SnapshotStore;
  tidKey: string | Uint8Array;
  tids?: TidIndex;
  log: (msg: string) => void;
}

export interface Gateway {
  gate: PaymentGate;
  mounts: { path: string; router: import('express').Router }[];
  chain?: LocalChain;
  /** a funded throwaway payer on the local chain, so a developer can try a paid call at once */
  demoPayer?: { address: string; privateKey: string };
  stop(): Promise<void>;
}

export async function startGateway(o: GatewayOptions): Promise<Gateway> {
  let facilitator: Facilitator;
  let chain: LocalChain | undefined;
  let demoPayer: Gateway['demoPayer'];
  let network = NETWORKS[o.network ?? 'base-sepolia'];
  if (!network) throw new Error(`unknown X402_NETWORK ${o.network}; one of ${Object.keys(NETWORKS).join(', ')}`);
  let asset = o.asset;
  let payTo = o.payTo;
  let description: string;
  // the ledger first: a database that cannot be migrated stops the start before a chain is spawned
  const ledger = await PaymentLedger.open(o.serviceDb);
  if (o.mode === 'local') {
    chain = await startLocalChain();
    network = { ...NETWORKS[chain.network]!, usdc: chain.usdc };
    asset = chain.usdc;
    // the payee defaults to a fixed, recognisable development address
    payTo ??= privateKeyToAccount(`0x${'7'.repeat(64)}`).address;
    facilitator = new LocalFacilitator({ rpcUrl: chain.rpcUrl, network: chain.network, privateKey: chain.facilitatorPrivateKey, assets: [chain.usdc] });
    const payer = await chain.newPayer(10_000_000n); // 10 test USDC
    demoPayer = { address: payer.account.address, privateKey: payer.privateKey };
    description = `local development facilitator on anvil (${chain.rpcUrl}, chain id ${chain.chainId}, test USDC ${chain.usdc})`;
  } else {
    if (!o.facilitatorUrl) throw new Error('X402_FACILITATOR_URL is required when X402_MODE=remote');
    if (!payTo) throw new Error('X402_PAY_TO is required when X402_MODE=remote');
    facilitator = new HttpFacilitator({ url: o.facilitatorUrl });
    description = `remote facilitator ${new URL(o.facilitatorUrl).origin}`;
  }
  const gate = new PaymentGate({
    facilitator,
    ledger,
    terms: { network, payTo: getAddress(payTo!), ...(asset ? { asset: getAddress(asset) } : {}) },
    log: o.log,
  });
  const expire = setInterval(() => {
    ledger.expireStale(Date.now()).then(
      (n) => {
        if (n) o.log(`x402: ${n} reservation(s) left by a crash expired unsettled`);
      },
      (e: Error) => o.log(`x402: expiring stale reservations failed: ${e.message}`),
    );
  }, 600_000);
  expire.unref();
  const { agent, info } = gatewayRouters({ db: o.db, rankers: o.rankers, gate, now: o.now, origin: o.origin, snapshots: o.snapshots, tidKey: o.tidKey, tids: o.tids, facilitator: description });
  return {
    gate,
    chain,
    demoPayer,
    mounts: [
      { path: '/v1/agent', router: agent },
      { path: '/x402', router: info },
    ],
    async stop() {
      clearInterval(expire);
      await ledger.close();
      await chain?.stop();
    },
  };
}
