import { describe, expect, it } from 'vitest';
import { lookupMarketsByCondition, lookupTokens, resolveWallet, resolveWallets, walletPseudonym } from '../../data/ingest/ids.ts';
import { loadGammaMarkets } from '../../data/ingest/gamma.ts';
import { M, W } from '../fixtures/ingest/world.ts';
import { fixture, memoryVenue, queryRows } from './helpers.ts';

describe('resolveWallets', () => {
  it('gives dense ids from 1 in first-seen order, lowercases addresses and is stable on re-resolve', async () => {
    const conn = await memoryVenue();
    const upper = `0x${W.alice.slice(2).toUpperCase()}`;
    const first = await resolveWallets(conn, [upper, W.bob, W.alice]);
    expect([...first.entries()]).toEqual([[W.alice, 1], [W.bob, 2]]);
    const second = await resolveWallets(conn, [W.carol, W.bob]);
    expect(second.get(W.bob)).toBe(2);
    expect(second.get(W.carol)).toBe(3);
    const rows = await queryRows(conn, 'SELECT wallet_id, address FROM wallets ORDER BY wallet_id');
    expect(rows).toEqual([{ wallet_id: 1, address: W.alice }, { wallet_id: 2, address: W.bob }, { wallet_id: 3, address: W.carol }]);
  });

  it('uses a profile only for a new wallet and never rewrites an existing one', async () => {
    const conn = await memoryVenue();
    await resolveWallets(conn, [{ address: W.alice, username: 'alice', pseudonym: 'Brave-Otter', profileImage: 'https://x/a.png' }]);
    await resolveWallets(conn, [{ address: W.alice, username: 'someone-else', pseudonym: 'Other-Name' }, W.bob]);
    const rows = await queryRows(conn, 'SELECT address, username, pseudonym, profile_image, verified FROM wallets ORDER BY wallet_id');
    expect(rows).toEqual([
      { address: W.alice, username: 'alice', pseudonym: 'Brave-Otter', profile_image: 'https://x/a.png', verified: false },
      { address: W.bob, username: null, pseudonym: walletPseudonym(W.bob), profile_image: null, verified: false },
    ]);
  });

  it('rejects something that is not an address', async () => {
    const conn = await memoryVenue();
    await expect(resolveWallet(conn, '0x1234')).rejects.toThrow(/not a wallet address/);
  });
});

describe('walletPseudonym', () => {
  it('is two capitalised words, deterministic, and case-insensitive in the address', () => {
    const p = walletPseudonym(W.alice);
    expect(p).toMatch(/^[A-Z][a-z]+-[A-Z][a-z]+$/);
    expect(walletPseudonym(W.alice.toUpperCase().replace('0X', '0x'))).toBe(p);
  });
  it('spreads addresses over many names', () => {
    const names = new Set(Array.from({ length: 200 }, (_, i) => walletPseudonym(`0x${i.toString(16).padStart(40, '0')}`)));
    expect(names.size).toBeGreaterThan(150);
  });
});

describe('market and token lookups', () => {
  it('finds markets by condition id and tokens by id with their outcome index; unknown ids are absent', async () => {
    const conn = await memoryVenue();
    await loadGammaMarkets(conn, fixture('gamma-markets.json'));
    const markets = await lookupMarketsByCondition(conn, [M.fed.conditionId.toUpperCase().replace('0X', '0x'), M.unknown.conditionId]);
    expect([...markets.keys()]).toEqual([M.fed.conditionId]);
    expect(markets.get(M.fed.conditionId)).toEqual({ marketId: 1, conditionId: M.fed.conditionId, yesTokenId: M.fed.yes, noTokenId: M.fed.no, negRisk: false, negRiskMarketId: null });
    const tokens = await lookupTokens(conn, [M.btc.no, M.fed.yes, M.unknown.yes]);
    expect(tokens.size).toBe(2);
    expect(tokens.get(M.fed.yes)).toMatchObject({ marketId: 1, outcomeIndex: 0 });
    expect(tokens.get(M.btc.no)).toMatchObject({ marketId: 2, outcomeIndex: 1, conditionId: M.btc.conditionId });
  });
});
