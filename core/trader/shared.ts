import { outcomeLabel } from '../outcomes.ts';
import { z } from 'zod';

// ---------------------------------------------------------------------------------------------------------------
// Small helpers
// ---------------------------------------------------------------------------------------------------------------

export const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
export const WEEK_MS = 7 * DAY_MS;

export function num(v: unknown): number | null {
  if (v === null || v === undefined) return null;
  if (typeof v === 'bigint') return Number(v);
  const n = typeof v === 'number' ? v : Number(v);
  return Number.isFinite(n) ? n : null;
}
export function num0(v: unknown): number {
  return num(v) ?? 0;
}
export function iso(v: unknown): string {
  if (v instanceof Date) return v.toISOString();
  if (typeof v === 'number' || typeof v === 'bigint') return new Date(Number(v)).toISOString();
  return new Date(String(v)).toISOString();
}
export function isoOrNull(v: unknown): string | null {
  return v === null || v === undefined ? null : iso(v);
}
/** An epoch in microseconds (DuckDB epoch_us) as an ISO string (millisecond precision). */
export function isoUs(us: number): string {
  return new Date(Math.floor(us / 1000)).toISOString();
}
export const clamp01 = (x: number) => Math.min(1, Math.max(0, x));
/** Round to `d` significant digits (compact agent output). */
export function sig(x: number | null, d = 4): number | null {
  if (x === null || !Number.isFinite(x)) return null;
  if (x === 0) return 0;
  return Number(x.toPrecision(d));
}
export function quantileList(v: unknown, n: number): (number | null)[] {
  const arr = Array.isArray(v) ? v : [];
  return Array.from({ length: n }, (_, i) => num(arr[i]));
}
/** SQL parameters collected while building a statement ($1, $2, ...). */
export class Params {
  readonly values: unknown[] = [];
  add(v: unknown): string {
    this.values.push(v);
    return `$${this.values.length}`;
  }
}
/** An outcome's name: YES / NO, or the venue's own (core/outcomes.ts) when the market's row carries outcome_labels. */
export const outcomeName = (o: number, labels?: unknown) => outcomeLabel(Array.isArray(labels) ? (labels as string[]) : null, o);

export const fmt = (x: number | null, d = 1) => (x === null ? 'n/a' : x.toFixed(d));
export const pct = (x: number | null) => (x === null ? 'n/a' : `${Math.round(x * 100)}%`);
export const usd0 = (x: number | null) => (x === null ? 'n/a' : `$${Math.round(x).toLocaleString('en-US')}`);

// ---------------------------------------------------------------------------------------------------------------
// Shared output pieces
// ---------------------------------------------------------------------------------------------------------------

export const count = z.number().int().nonnegative();
export const share = z.number().min(0).max(1);
/** YES | NO, or the venue's name of the outcome (Up, Down, a team) when it names them otherwise */
export const OutcomeSide = z.string().min(1);
