import { z } from 'zod';
import type { AsOf } from '../query.ts';
import { PublicError, count } from './shared.ts';

// ---------------------------------------------------------------------------------------------------------------
// Claims (what the account directory tells the public surfaces)
// ---------------------------------------------------------------------------------------------------------------

/** The public part of a proxy claim (web-api/directory.ts ProxyClaim has this shape). */
export interface PublicClaim {
  claimed: boolean;
  founding: boolean;
  eoa: string | null;
  x_username: string | null;
  display_name: string | null;
}
/** Claims for lowercase proxy addresses; unclaimed addresses are absent. */
export type ClaimLookup = (addresses: readonly string[]) => Promise<Map<string, PublicClaim>>;
export const NO_CLAIMS: ClaimLookup = async () => new Map();

// ---------------------------------------------------------------------------------------------------------------
// Founding spots and referrers (what the account directory reports)
// ---------------------------------------------------------------------------------------------------------------

export const PublicFounding = z.strictObject({
  spots_total: count,
  spots_claimed: count,
  spots_remaining: count,
  open: z.boolean(),
  as_of: z.string(),
});
export type PublicFounding = z.infer<typeof PublicFounding>;

export const PublicReferrer = z.strictObject({ display_name: z.string(), x_username: z.string() });
export type PublicReferrer = z.infer<typeof PublicReferrer>;

export const ReferrerQuery = z.strictObject({ code: z.string().trim().min(1).max(64).regex(/^[A-Za-z0-9_-]+$/, 'an invite code: letters, digits, _ or -') });

/** Founding-member spots as the account directory reports them (whole, non-negative numbers). */
export function publicFounding(s: { spots_total: number; spots_claimed: number; spots_remaining: number; open: boolean }, now: AsOf): PublicFounding {
  const total = Math.max(0, Math.floor(s.spots_total));
  const claimed = Math.max(0, Math.floor(s.spots_claimed));
  const remaining = Math.max(0, Math.floor(s.spots_remaining));
  return { spots_total: total, spots_claimed: claimed, spots_remaining: remaining, open: Boolean(s.open), as_of: now.toISOString() };
}

/** The referrer of an invite code (null from the directory: PublicError not_found). */
export function publicReferrer(r: { display_name: string | null; x_username: string | null } | null, code: string): PublicReferrer {
  if (!r) throw new PublicError('not_found', `no invite code ${code}`);
  return { display_name: r.display_name ?? '', x_username: r.x_username ?? '' };
}
