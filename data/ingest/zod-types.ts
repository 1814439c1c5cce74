/** zod primitives for the venue's wire formats: hex ids, uint256 token ids, numbers sent as strings, JSON-in-strings. */
import { z } from 'zod';

export const addressSchema = z
  .string()
  .regex(/^0x[0-9a-fA-F]{40}$/, { error: 'expected an address: 0x + 40 hex digits' })
  .transform((s) => s.toLowerCase() as `0x${string}`);

export const bytes32Schema = z
  .string()
  .regex(/^0x[0-9a-fA-F]{64}$/, { error: 'expected 0x + 64 hex digits' })
  .transform((s) => s.toLowerCase() as `0x${string}`);

export const txHashSchema = bytes32Schema;

const MAX_UINT256 = (1n << 256n) - 1n;

/** ERC-1155 position id as the venue prints it: a decimal uint256 (normalised: no leading zeros). */
export const tokenIdSchema = z
  .string()
  .regex(/^[0-9]{1,78}$/, { error: 'expected a decimal uint256 token id' })
  .refine((s) => BigInt(s) <= MAX_UINT256, { error: 'token id exceeds uint256' })
  .transform((s) => BigInt(s).toString());

/** A finite number, also accepted as a numeric string (Gamma sends "1234.5"). */
export const numberish = z.union([z.number(), z.string().trim().min(1)]).transform((v, ctx) => {
  const n = typeof v === 'number' ? v : Number(v);
  if (!Number.isFinite(n)) {
    ctx.addIssue({ code: 'custom', message: `expected a number, got ${JSON.stringify(v)}` });
    return z.NEVER;
  }
  return n;
});

/** Unix seconds (data-api); milliseconds are rejected rather than guessed. */
export const unixSecondsSchema = numberish.refine((n) => Number.isInteger(n) && n >= 0 && n < 1e11, {
  error: 'expected unix seconds (integer below 1e11)',
});

/** Parse the venue's timestamp spellings: ISO 8601, '2020-11-02 16:31:01+00', date-only 'YYYY-MM-DD' (UTC). */
export function parseVenueDate(s: string): Date | null {
  let t = s.trim();
  if (t === '') return null;
  if (/^\d{4}-\d{2}-\d{2}$/.test(t)) t += 'T00:00:00Z';
  t = t.replace(/^(\d{4}-\d{2}-\d{2}) /, '$1T').replace(/([+-]\d{2})$/, '$1:00');
  // No zone at all: the venue means UTC.
  if (/T\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(t)) t += 'Z';
  const ms = Date.parse(t);
  return Number.isNaN(ms) ? null : new Date(ms);
}

export const venueDateSchema = z.string().transform((s, ctx) => {
  const d = parseVenueDate(s);
  if (!d) {
    ctx.addIssue({ code: 'custom', message: `expected a date, got ${JSON.stringify(s)}` });
    return z.NEVER;
  }
  return d;
});

/** Gamma sends arrays as JSON text ("[\"Yes\", \"No\"]"); accept that or an already-parsed array. */
export function jsonArray<T extends z.ZodType>(item: T) {
  return z
    .union([z.string(), z.array(z.unknown())])
    .transform((v, ctx) => {
      if (Array.isArray(v)) return v;
      try {
        const parsed: unknown = JSON.parse(v);
        if (Array.isArray(parsed)) return parsed;
      } catch {
        // fall through to the issue below
      }
      ctx.addIssue({ code: 'custom', message: `expected a JSON array string, got ${JSON.stringify(v.slice(0, 60))}` });
      return z.NEVER;
    })
    .pipe(z.array(item));
}

/** Treat null and '' like a missing field (Gamma and the data-api use all three). */
export function optionalField<T extends z.ZodType>(schema: T) {
  return z.preprocess((v) => (v === null || v === '' ? undefined : v), schema.optional());
}
