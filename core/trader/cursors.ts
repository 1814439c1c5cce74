import { z } from 'zod';
import { tsLiteral, type AsOf } from '../query.ts';

// ---------------------------------------------------------------------------------------------------------------
// Cursors: opaque, pin the first page's as-of, keyset over a total order
// ---------------------------------------------------------------------------------------------------------------

type FeedKind = 'pos' | 'act';
const CursorPayload = z.object({
  v: z.literal(1),
  f: z.enum(['pos', 'act']),
  /** as-of of the first page, epoch ms */
  t: z.number().int(),
  k: z.array(z.union([z.number(), z.string().max(160)])).min(1).max(8),
});
type CursorPayload = z.infer<typeof CursorPayload>;

export function encodeCursor(f: FeedKind, asOf: AsOf, k: (number | string)[]): string {
  return Buffer.from(JSON.stringify({ v: 1, f, t: asOf.getTime(), k } satisfies CursorPayload), 'utf8').toString('base64url');
}

export const POS_KEY = z.tuple([z.number().int(), z.number().int().nonnegative(), z.number().int().min(0).max(1)]);
export const ACT_KEY = z.tuple([z.number().int(), z.string().regex(/^[0-9A-Za-z_:.-]{1,160}$/), z.number().int(), z.string().regex(/^[a-z]{1,10}$/), z.string().regex(/^[A-Za-z]{1,10}$/)]);

export function cursorField<K extends z.ZodType>(f: FeedKind, key: K) {
  return z
    .string()
    .max(1024)
    .transform((s, ctx) => {
      try {
        const p = CursorPayload.parse(JSON.parse(Buffer.from(s, 'base64url').toString('utf8')));
        if (p.f !== f) throw new Error('cursor of another feed');
        return { asOf: new Date(p.t), key: key.parse(p.k) as z.infer<K> };
      } catch {
        ctx.addIssue({ code: 'custom', message: 'invalid cursor' });
        return z.NEVER;
      }
    });
}

/** A cursor pins the first page's T, so pages concatenate exactly; never later than the caller's T. */
export function effectiveAsOf(asOf: AsOf, cursor: { asOf: Date } | undefined): AsOf {
  tsLiteral(asOf); // validates
  return cursor && cursor.asOf.getTime() < asOf.getTime() ? cursor.asOf : asOf;
}

/** A list option: an array or a comma-separated string, matched case-insensitively against the allowed values. */
export const listOf = <T extends readonly [string, ...string[]]>(values: T) => {
  const upper = values.every((x) => x === x.toUpperCase());
  const norm = (x: unknown) => (typeof x === 'string' ? (upper ? x.trim().toUpperCase() : x.trim().toLowerCase()) : x);
  return z.preprocess(
    (v) => (typeof v === 'string' ? v.split(',').map(norm).filter(Boolean) : Array.isArray(v) ? v.map(norm) : v),
    z.array(z.enum(values)).min(1).max(values.length),
  );
};
