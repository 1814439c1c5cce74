/**
 * One user's journey through the whole REST service over loopback, with the real stores: anonymous public pages,
 * wallet sign-in that claims the user's venue proxy (which the public teaser then shows as claimed and founding),
 * profile and invite code (which the public referrer route resolves), a key minted from the session, paid routes
 * refused on Free and served after the operator's set-plan.
 */
import { join } from 'node:path';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { createSiweMessage } from 'viem/siwe';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { fullBuild } from '../../core/analytics/build.ts';
import { duckRunner } from '../../data/runner.ts';
import { runAdmin } from '../../scripts/admin.ts';
import { startApp, type TestApp } from '../helpers/app.ts';
import { makeVenue, type TestVenue } from '../helpers/venue.ts';

let v: TestVenue;
let t: TestApp;
const signer = privateKeyToAccount(generatePrivateKey());
let proxy: string;

beforeAll(async () => {
  v = await makeVenue({ wallets: 2000, days: 30, seed: 11 });
  // the signer is the venue's most active trader (an EOA trading directly)
  const [w] = await v.rows<{ wallet_id: number }>(`SELECT taker_id AS wallet_id FROM fills GROUP BY 1 ORDER BY count(*) DESC LIMIT 1`);
  proxy = signer.address.toLowerCase();
  await v.conn.run(`UPDATE wallets SET address = '${proxy}' WHERE wallet_id = ${w!.wallet_id}`);
  await fullBuild(duckRunner(v.conn), new Date('2026-10-31T23:59:59Z'));
  t = await startApp(duckRunner(v.conn));
}, 600_000);
afterAll(async () => {
  await t?.close();
  await v?.cleanup();
});

const get = (path: string, headers: Record<string, string> = {}) => fetch(`${t.base}${path}`, { headers });

it('walks from anonymous visitor to paying API user', async () => {
  // anonymous: public pages work, the rest asks for a credential
  expect((await get('/v1/public/leaderboard')).status).toBe(200);
  // heavy public answers are kept server-side for their max-age: the second request is a cache hit
  const roi1 = await get('/v1/public/trades/top-roi?limit=3');
  const roi2 = await get('/v1/public/trades/top-roi?limit=3');
  expect([roi1.headers.get('x-cache'), roi2.headers.get('x-cache')]).toEqual(['miss', 'hit']);
  expect(await roi2.json()).toEqual(await roi1.json());
  const before = (await (await get(`/v1/public/trader/${proxy}`)).json()) as { display: { claimed: boolean } };
  expect(before.display.claimed).toBe(false);
  expect((await get('/v1/rankings/presets')).status).toBe(401);
  const foundingBefore = (await (await get('/v1/public/founding')).json()) as { spots_claimed: number };

  // wallet sign-in claims the proxy
  const { nonce } = (await (await fetch(`${t.base}/v1/auth/siwe/nonce`, { method: 'POST' })).json()) as { nonce: string };
  const message = createSiweMessage({ address: signer.address, chainId: 137, domain: new URL(t.origin).host, nonce, uri: t.origin, version: '1', issuedAt: new Date() });
  const verify = await fetch(`${t.base}/v1/auth/siwe/verify`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message, signature: await signer.signMessage({ message }) }) });
  expect(verify.status).toBe(200);
  const cookie = verify.headers.getSetCookie()[0]!.split(';')[0]!;
  const session = { cookie, 'content-type': 'application/json' };
  await fetch(`${t.base}/v1/auth/me`, { method: 'PATCH', headers: session, body: JSON.stringify({ display_name: 'Ada', x_username: 'ada_onchain' }) });

  // the public teaser now shows the claim; the founding count moved; the invite code resolves publicly
  const after = (await (await get(`/v1/public/trader/${proxy}`)).json()) as { display: { claimed: boolean; founding: boolean; eoa: string; x_username: string } };
  expect(after.display).toMatchObject({ claimed: true, founding: true, eoa: signer.address, x_username: 'ada_onchain' });
  expect(((await (await get('/v1/public/founding')).json()) as { spots_claimed: number }).spots_claimed).toBe(foundingBefore.spots_claimed + 1);
  const invite = (await (await get('/v1/account/invite', { cookie })).json()) as { code: string };
  expect(await (await get(`/v1/public/referrer?code=${invite.code}`)).json()).toEqual({ display_name: 'Ada', x_username: 'ada_onchain' });
  expect((await get('/v1/public/referrer?code=nope0000')).status).toBe(404);

  // a key from the session; Free reads rankings and calibration but not the paid bundle
  const minted = (await (await fetch(`${t.base}/v1/api-keys`, { method: 'POST', headers: session, body: JSON.stringify({ label: 'notebook' }) })).json()) as { key: string };
  const bearer = { authorization: `Bearer ${minted.key}` };
  expect((await get('/v1/rankings/preset/sharp-forecasters?limit=3', bearer)).status).toBe(200);
  expect((await get(`/v1/trader/${proxy}/calibration`, bearer)).status).toBe(200);
  const refused = await get(`/v1/trader/${proxy}/copy-fitness`, bearer);
  expect(refused.status).toBe(403);
  expect(((await refused.json()) as { error: string }).error).toBe('plan_required');

  // the operator upgrades the account; the same key now gets the paid routes
  expect(await runAdmin(['set-plan', signer.address, 'pro', '--db', join(t.dir, 'service.sqlite')], {}, () => {})).toBe(0);
  expect((await get(`/v1/trader/${proxy}/copy-fitness`, bearer)).status).toBe(200);
  expect((await get(`/v1/trader/${proxy}/activity?limit=5`, bearer)).status).toBe(200);
  expect((await get('/v1/rankings/preset/top-pnl?extra_metrics=volume&limit=2', bearer)).status).toBe(200);
});
