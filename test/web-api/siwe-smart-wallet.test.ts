/**
 * Smart-wallet sign-in (EIP-1271) against a real local chain: the service asks the wallet contract whether the
 * signature is valid (over SIWE_RPC_URL) and honours its answer. Two hand-assembled contracts stand in for wallets:
 * one whose isValidSignature always answers the EIP-1271 magic value, one that always answers zero.
 */
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { createSiweMessage } from 'viem/siwe';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { duckRunner } from '../../data/runner.ts';
import { startAnvil, type Anvil } from '../helpers/anvil.ts';
import { startApp, type TestApp } from '../helpers/app.ts';
import { closeMemoryVenue, openMemoryVenue } from '../helpers/memory-venue.ts';

// PUSH4 0x1626ba7e PUSH1 0xe0 SHL PUSH1 0 MSTORE PUSH1 0x20 PUSH1 0 RETURN: returns the magic value left-aligned
const ACCEPTING = '0x631626ba7e60e01b60005260206000f3';
// PUSH1 0x20 PUSH1 0 RETURN: returns 32 zero bytes
const REFUSING = '0x60206000f3';
const ACCEPT_ADDR = '0x00000000000000000000000000000000000a11ce';
const REFUSE_ADDR = '0x0000000000000000000000000000000000000b0b';

let anvil: Anvil;
let withRpc: TestApp;
let withoutRpc: TestApp;
let instance: DuckDBInstance;
let conn: DuckDBConnection;

beforeAll(async () => {
  anvil = await startAnvil(137);
  await anvil.rpc('anvil_setCode', [ACCEPT_ADDR, ACCEPTING]);
  await anvil.rpc('anvil_setCode', [REFUSE_ADDR, REFUSING]);
  ({ instance, conn } = await openMemoryVenue());
  await conn.run(`INSERT INTO wallets VALUES (7, '${ACCEPT_ADDR}', NULL, 'Quiet-Heron', NULL, false)`);
  withRpc = await startApp(duckRunner(conn), { auth: { rpcUrl: anvil.rpcUrl } });
  withoutRpc = await startApp(duckRunner(conn));
}, 60_000);
afterAll(async () => {
  await withRpc?.close();
  await withoutRpc?.close();
  await anvil?.stop();
  closeMemoryVenue(conn, instance);
});

async function attempt(app: TestApp, address: `0x${string}`) {
  const { nonce } = (await (await fetch(`${app.base}/v1/auth/siwe/nonce`, { method: 'POST' })).json()) as { nonce: string };
  const message = createSiweMessage({ address, chainId: 137, domain: new URL(app.origin).host, nonce, uri: app.origin, version: '1', issuedAt: new Date() });
  // an owner key signs, as a smart wallet's owner would; the address is the contract's, so ECDSA recovery cannot match
  const signature = await privateKeyToAccount(generatePrivateKey()).signMessage({ message });
  return fetch(`${app.base}/v1/auth/siwe/verify`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message, signature }) });
}

it('accepts a signature the wallet contract approves and claims the contract as a proxy', async () => {
  const res = await attempt(withRpc, ACCEPT_ADDR);
  expect(res.status).toBe(200);
  const body = (await res.json()) as { eoa: string };
  expect(body.eoa.toLowerCase()).toBe(ACCEPT_ADDR);
  const sid = res.headers.getSetCookie()[0]!.split(';')[0]!;
  const me = (await (await fetch(`${withRpc.base}/v1/auth/me`, { headers: { cookie: sid } })).json()) as { user: { primary_claimed_proxy: string } };
  expect(me.user.primary_claimed_proxy).toBe(ACCEPT_ADDR);
});

it('refuses what the contract refuses, and smart wallets altogether without an RPC endpoint', async () => {
  const refused = await attempt(withRpc, REFUSE_ADDR);
  expect(refused.status).toBe(401);
  expect(((await refused.json()) as { error: string }).error).toBe('invalid_signature');
  const noRpc = await attempt(withoutRpc, ACCEPT_ADDR);
  expect(noRpc.status).toBe(401);
  const body = (await noRpc.json()) as { error: string; reason: string };
  expect(body.error).toBe('invalid_signature');
  expect(body.reason).toContain('RPC');
});
