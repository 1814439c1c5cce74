/**
 * Webhook signatures (spec "Events > Delivery"): header X-Service-Signature: t=<unix_seconds>,v1=<hex>, where hex is
 * HMAC-SHA256 keyed by the subscription's signing secret over `${t}.${rawBody}`.
 *
 * - The HMAC key is the UTF-8 bytes of the whole secret string, prefix included (receivers paste it as is; nothing
 *   to decode).
 * - Secrets are `whsec_` + base64url (no padding) of 32 random bytes: 49 ASCII characters, 256 bits of entropy.
 * - The header may carry several v1= entries (during a secret rotation the sender signs with both secrets); a
 *   receiver accepts when any one matches. Other `v<digits>=` schemes are ignored (forward compatible); anything
 *   else makes the header malformed.
 * - verifySignature compares with crypto.timingSafeEqual on equal-length 32-byte buffers, rejects timestamps more than
 *   the tolerance (default 300 s) away from now in either direction, and never throws.
 *
 * docs/webhooks-receiver.md has a standalone copy of the verifier for receivers (TypeScript and Python).
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_HEADER = 'x-service-signature';
export const DEFAULT_TOLERANCE_SECONDS = 300;
export const SECRET_PREFIX = 'whsec_';
const MAX_HEADER_LENGTH = 2048;
const MAX_V1_ENTRIES = 8;
/** t has at most 12 digits on the wire */
const MAX_T = 999_999_999_999;

export type VerifyResult =
  | { ok: true; t: number }
  | { ok: false; reason: 'bad_input' | 'malformed_header' | 'no_v1_signature' | 'signature_mismatch' | 'timestamp_out_of_tolerance' };

function hmacHex(secret: string, rawBody: string | Uint8Array, t: number): string {
  const mac = createHmac('sha256', Buffer.from(secret, 'utf8'));
  mac.update(`${t}.`, 'utf8');
  mac.update(typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : rawBody);
  return mac.digest('hex');
}

/**
 * The X-Service-Signature value for one attempt: `t=<t>,v1=<hex>`, or with several secrets (the new one first, then
 * the one being rotated out) one `v1=` per secret. Throws on a bad secret or timestamp (sender side).
 */
export function signPayload(secret: string | readonly string[], rawBody: string | Uint8Array, tSeconds: number): string {
  const secrets = typeof secret === 'string' ? [secret] : secret;
  if (secrets.length === 0 || secrets.length > MAX_V1_ENTRIES || secrets.some((s) => typeof s !== 'string' || s.length === 0)) throw new TypeError('signing secret must be a non-empty string');
  if (!Number.isSafeInteger(tSeconds) || tSeconds < 0 || tSeconds > MAX_T) throw new RangeError('timestamp must be an integer of unix seconds, 0 to 999999999999');
  return `t=${tSeconds},${secrets.map((s) => `v1=${hmacHex(s, rawBody, tSeconds)}`).join(',')}`;
}

/** A fresh signing secret: `whsec_` + base64url(32 random bytes). */
export function newSigningSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString('base64url');
}

/** Parses `t=<digits>,v1=<64 lowercase hex>[,v1=...]` strictly; null when malformed. */
export function parseSignatureHeader(header: string): { t: number; v1: string[] } | null {
  if (typeof header !== 'string' || header.length === 0 || header.length > MAX_HEADER_LENGTH) return null;
  let t: number | null = null;
  const v1: string[] = [];
  for (const item of header.split(',')) {
    const eq = item.indexOf('=');
    if (eq <= 0) return null;
    const key = item.slice(0, eq);
    const value = item.slice(eq + 1);
    if (key === 't') {
      if (t !== null || !/^(0|[1-9][0-9]{0,11})$/.test(value)) return null;
      t = Number(value);
    } else if (key === 'v1') {
      if (!/^[0-9a-f]{64}$/.test(value)) return null;
      v1.push(value);
      if (v1.length > MAX_V1_ENTRIES) return null;
    } else if (/^v[0-9]{1,3}$/.test(key)) {
      if (!/^[0-9A-Za-z+/=_-]{1,256}$/.test(value)) return null; // another scheme: well-formed, ignored
    } else {
      return null;
    }
  }
  if (t === null) return null;
  return { t, v1 };
}

/** Receiver-side check. Verify over the raw body bytes, before parsing JSON. Never throws. */
export function verifySignature(args: {
  header: string | null | undefined;
  rawBody: string | Uint8Array;
  secret: string;
  nowSeconds?: number;
  toleranceSeconds?: number;
}): VerifyResult {
  try {
    const { header, rawBody, secret } = args ?? ({} as typeof args);
    const now = args.nowSeconds ?? Math.floor(Date.now() / 1000);
    const tolerance = args.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
    if (typeof secret !== 'string' || secret.length === 0) return { ok: false, reason: 'bad_input' };
    if (typeof rawBody !== 'string' && !(rawBody instanceof Uint8Array)) return { ok: false, reason: 'bad_input' };
    if (!Number.isFinite(now) || !Number.isFinite(tolerance) || tolerance < 0) return { ok: false, reason: 'bad_input' };
    if (typeof header !== 'string') return { ok: false, reason: 'malformed_header' };
    const parsed = parseSignatureHeader(header);
    if (!parsed) return { ok: false, reason: 'malformed_header' };
    if (parsed.v1.length === 0) return { ok: false, reason: 'no_v1_signature' };
    const expected = Buffer.from(hmacHex(secret, rawBody, parsed.t), 'hex');
    let match = false;
    for (const candidate of parsed.v1) {
      const got = Buffer.from(candidate, 'hex');
      // both are 32 bytes (the parser only admits 64 hex digits); checked anyway since timingSafeEqual throws otherwise
      if (got.length === expected.length && timingSafeEqual(got, expected)) match = true;
    }
    if (!match) return { ok: false, reason: 'signature_mismatch' };
    if (Math.abs(now - parsed.t) > tolerance) return { ok: false, reason: 'timestamp_out_of_tolerance' };
    return { ok: true, t: parsed.t };
  } catch {
    return { ok: false, reason: 'bad_input' };
  }
}
