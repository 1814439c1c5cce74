/**
 * What the public namespace may learn about accounts: claimed proxies, founding members, referrers. The account
 * store (data/account-store.ts) implements it; public routes see nothing else of the accounts.
 */
export interface ProxyClaim {
  claimed: boolean;
  founding: boolean;
  /** the claiming user's wallet (EOA), when they signed in with one */
  eoa: string | null;
  x_username: string | null;
  display_name: string | null;
}

export interface FoundingStatus {
  /** founding-member spots at launch */
  spots_total: number;
  spots_claimed: number;
  spots_remaining: number;
  open: boolean;
}

export interface AccountDirectory {
  /** the inviting user behind an invite code, or null */
  referrer(code: string): Promise<{ display_name: string | null; x_username: string | null } | null>;
  /** claims for lowercase proxy addresses; addresses nobody claimed are absent from the map */
  claimsFor(addresses: readonly string[]): Promise<Map<string, ProxyClaim>>;
  founding(): Promise<FoundingStatus>;
}

export const NO_ACCOUNTS: AccountDirectory = {
  referrer: async () => null,
  claimsFor: async () => new Map(),
  founding: async () => ({ spots_total: 0, spots_claimed: 0, spots_remaining: 0, open: false }),
};
