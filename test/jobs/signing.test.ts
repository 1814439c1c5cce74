import { execFileSync, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { newSigningSecret, parseSignatureHeader, signPayload, verifySignature } from '../../jobs/webhooks/signing.ts';

const root = new URL('../../', import.meta.url).pathname;

/** Independent HMAC-SHA256 (RFC 2104) over createHash only. */
function hmacFromScratch(key: Buffer, message: Buffer): string {
  const block = 64;
  let k = key.length > block ? createHash('sha256').update(key).digest() : key;
  k = Buffer.concat([k, Buffer.alloc(block - k.length)]);
  const ipad = Buffer.from(k.map((b) => b ^ 0x36));
  const opad = Buffer.from(k.map((b) => b ^ 0x5c));
  const inner = createHash('sha256').update(ipad).update(message).digest();
  return createHash('sha256').update(opad).update(inner).digest('hex');
}

/** Independent HMAC-SHA256 by the openssl CLI. */
function hmacOpenssl(key: string, message: Buffer): string {
  const out = execFileSync('openssl', ['dgst', '-sha256', '-hmac', key], { input: message }).toString('utf8').trim();
  const hex = out.split(/\s+/).pop()!;
  expect(hex).toMatch(/^[0-9a-f]{64}$/);
  return hex;
}

const SECRET = 'whsec_dGVzdC1vbmx5LXNlY3JldC1kby1ub3QtdXNlLWl0';
const T = 1_700_000_000;
const BODY = '{"type":"service.test","emitted_at":"2023-11-14T22:13:20.000Z","data":{}}';
const DOC_HEADER = 't=1700000000,v1=c49448746ce67d91e828e33eeb932d15af690bba148efeeeefc5aeb427039d8e';

describe('signPayload', () => {
  it('matches a hand-worked HMAC-SHA256 over `${t}.${rawBody}` (openssl and a from-scratch HMAC)', () => {
    const message = Buffer.from(`${T}.${BODY}`, 'utf8');
    const byOpenssl = hmacOpenssl(SECRET, message);
    const byHand = hmacFromScratch(Buffer.from(SECRET, 'utf8'), message);
    expect(byHand).toBe(byOpenssl);
    expect(signPayload(SECRET, BODY, T)).toBe(`t=${T},v1=${byOpenssl}`);
    // and the test vector published in docs/webhooks-receiver.md
    expect(signPayload(SECRET, BODY, T)).toBe(DOC_HEADER);
    expect(readFileSync(join(root, 'docs/webhooks-receiver.md'), 'utf8')).toContain(`header: ${DOC_HEADER}`);
  });

  it('signs raw bytes: non-ASCII UTF-8 bodies, Buffers and strings agree; long keys are hashed per RFC 2104', () => {
    const body = '{"title":"Will the Ünïcødé 🌍 market resolve?","size_usdc":5000.5}';
    const t = 1_712_345_678;
    const expected = hmacFromScratch(Buffer.from(SECRET), Buffer.from(`${t}.${body}`, 'utf8'));
    expect(signPayload(SECRET, body, t)).toBe(`t=${t},v1=${expected}`);
    expect(signPayload(SECRET, Buffer.from(body, 'utf8'), t)).toBe(`t=${t},v1=${expected}`);
    const longKey = 'whsec_' + 'k'.repeat(200);
    expect(signPayload(longKey, body, t)).toBe(`t=${t},v1=${hmacFromScratch(Buffer.from(longKey), Buffer.from(`${t}.${body}`))}`);
    expect(signPayload(longKey, body, t)).toBe(`t=${t},v1=${hmacOpenssl(longKey, Buffer.from(`${t}.${body}`))}`);
  });

  it('refuses a bad secret or timestamp on the sending side', () => {
    expect(() => signPayload('', BODY, T)).toThrow();
    expect(() => signPayload(SECRET, BODY, 1.5)).toThrow();
    expect(() => signPayload(SECRET, BODY, -1)).toThrow();
    expect(() => signPayload(SECRET, BODY, Number.NaN)).toThrow();
    expect(() => signPayload(SECRET, BODY, 10 ** 12)).toThrow();
    expect(signPayload(SECRET, BODY, 10 ** 12 - 1)).toMatch(/^t=999999999999,v1=/);
  });
});

describe('newSigningSecret', () => {
  it('is whsec_ + base64url of 32 random bytes, fresh every time', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 200; i++) {
      const s = newSigningSecret();
      expect(s).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
      expect(Buffer.from(s.slice(6), 'base64url')).toHaveLength(32);
      seen.add(s);
    }
    expect(seen.size).toBe(200);
  });

  it('round-trips through sign and verify', () => {
    const s = newSigningSecret();
    const now = 1_750_000_000;
    expect(verifySignature({ header: signPayload(s, BODY, now), rawBody: BODY, secret: s, nowSeconds: now })).toEqual({ ok: true, t: now });
  });
});

describe('verifySignature', () => {
  const header = signPayload(SECRET, BODY, T);
  const v = (over: Partial<Parameters<typeof verifySignature>[0]>) => verifySignature({ header, rawBody: BODY, secret: SECRET, nowSeconds: T, ...over });

  it('accepts a valid signature, as string or bytes', () => {
    expect(v({})).toEqual({ ok: true, t: T });
    expect(v({ rawBody: Buffer.from(BODY) })).toEqual({ ok: true, t: T });
    expect(v({ rawBody: new Uint8Array(Buffer.from(BODY)) })).toEqual({ ok: true, t: T });
  });

  it('tolerance edges: ±300 s accepted, ±301 s rejected; tolerance is configurable', () => {
    expect(v({ nowSeconds: T + 300 })).toEqual({ ok: true, t: T });
    expect(v({ nowSeconds: T - 300 })).toEqual({ ok: true, t: T });
    expect(v({ nowSeconds: T + 301 })).toEqual({ ok: false, reason: 'timestamp_out_of_tolerance' });
    expect(v({ nowSeconds: T - 301 })).toEqual({ ok: false, reason: 'timestamp_out_of_tolerance' });
    expect(v({ nowSeconds: T + 10 ** 9 })).toMatchObject({ ok: false });
    expect(v({ nowSeconds: T + 60, toleranceSeconds: 60 })).toMatchObject({ ok: true });
    expect(v({ nowSeconds: T + 61, toleranceSeconds: 60 })).toMatchObject({ ok: false, reason: 'timestamp_out_of_tolerance' });
  });

  it('defaults now to the wall clock', () => {
    const now = Math.floor(Date.now() / 1000);
    expect(verifySignature({ header: signPayload(SECRET, BODY, now), rawBody: BODY, secret: SECRET })).toMatchObject({ ok: true });
    expect(verifySignature({ header: signPayload(SECRET, BODY, now - 3600), rawBody: BODY, secret: SECRET })).toMatchObject({ ok: false });
  });

  it('rejects a tampered body, secret, signature or timestamp', () => {
    expect(v({ rawBody: BODY.replace('service.test', 'service.tesT') })).toEqual({ ok: false, reason: 'signature_mismatch' });
    expect(v({ rawBody: BODY + '\n' })).toEqual({ ok: false, reason: 'signature_mismatch' });
    expect(v({ rawBody: JSON.stringify(JSON.parse(BODY), null, 1) })).toEqual({ ok: false, reason: 'signature_mismatch' });
    expect(v({ secret: SECRET + 'x' })).toEqual({ ok: false, reason: 'signature_mismatch' });
    expect(v({ secret: newSigningSecret() })).toEqual({ ok: false, reason: 'signature_mismatch' });
    const hex = header.split('v1=')[1]!;
    const flipped = hex.slice(0, 10) + (hex[10] === '0' ? '1' : '0') + hex.slice(11);
    expect(v({ header: `t=${T},v1=${flipped}` })).toEqual({ ok: false, reason: 'signature_mismatch' });
    // replaying the signature with a fresher timestamp breaks it
    expect(v({ header: `t=${T + 100},v1=${hex}`, nowSeconds: T + 100 })).toEqual({ ok: false, reason: 'signature_mismatch' });
  });

  it('accepts any one of several v1 entries (secret rotation), in any position', () => {
    const oldSecret = newSigningSecret();
    const newSecret = newSigningSecret();
    const sigOld = signPayload(oldSecret, BODY, T).split('v1=')[1]!;
    const sigNew = signPayload(newSecret, BODY, T).split('v1=')[1]!;
    const both = `t=${T},v1=${sigNew},v1=${sigOld}`;
    expect(verifySignature({ header: both, rawBody: BODY, secret: oldSecret, nowSeconds: T })).toMatchObject({ ok: true });
    expect(verifySignature({ header: both, rawBody: BODY, secret: newSecret, nowSeconds: T })).toMatchObject({ ok: true });
    expect(verifySignature({ header: `v1=${sigOld},t=${T},v1=${sigNew}`, rawBody: BODY, secret: newSecret, nowSeconds: T })).toMatchObject({ ok: true });
    expect(verifySignature({ header: both, rawBody: BODY, secret: newSigningSecret(), nowSeconds: T })).toEqual({ ok: false, reason: 'signature_mismatch' });
    // another scheme alongside is ignored, but a v1 is still required
    const good = header.split('v1=')[1]!;
    expect(v({ header: `t=${T},v0=abc,v1=${good}` })).toMatchObject({ ok: true });
    expect(v({ header: `t=${T},v2=${good}` })).toEqual({ ok: false, reason: 'no_v1_signature' });
  });

  it('parses strictly', () => {
    const good = header.split('v1=')[1]!;
    const malformed = [
      '',
      `v1=${good}`, // no t
      `t=${T}`.replace(String(T), ''), // empty t
      `t=${T},t=${T},v1=${good}`, // duplicate t
      `t=${T}, v1=${good}`, // whitespace
      ` t=${T},v1=${good}`,
      `t=${T},v1=${good},`, // trailing comma
      `t=${T},,v1=${good}`,
      `t=${T};v1=${good}`,
      `t=+${T},v1=${good}`,
      `t=-${T},v1=${good}`,
      `t=0${T},v1=${good}`, // leading zero
      `t=${T}.5,v1=${good}`,
      `t=0x10,v1=${good}`,
      `t=1e9,v1=${good}`,
      `t=${'9'.repeat(13)},v1=${good}`,
      `t=${T},v1=${good.toUpperCase()}`,
      `t=${T},v1=${good.slice(1)}`,
      `t=${T},v1=${good}0`,
      `t=${T},v1=${good.slice(0, 63)}g`,
      `t=${T},V1=${good}`,
      `t=${T},x=1,v1=${good}`,
      `t=${T},=x,v1=${good}`,
      `t=${T},v1`,
      `t=${T},v1=${good}` + `,v1=${good}`.repeat(8), // more than 8 signatures
      `t=${T},v1=${good},v0=`,
      'x'.repeat(5000),
    ];
    for (const h of malformed) {
      expect(parseSignatureHeader(h), h).toBeNull();
      expect(v({ header: h }), h).toEqual({ ok: false, reason: 'malformed_header' });
    }
    expect(parseSignatureHeader(`t=${T},v1=${good}` + `,v1=${good}`.repeat(7))).not.toBeNull();
    expect(parseSignatureHeader(`t=0,v1=${good}`)).toEqual({ t: 0, v1: [good] });
  });

  it('never throws on garbage (fast-check)', () => {
    const call = (args: unknown) => verifySignature(args as Parameters<typeof verifySignature>[0]);
    expect(call(undefined)).toMatchObject({ ok: false });
    expect(call(null)).toMatchObject({ ok: false });
    expect(call({ header: header, rawBody: 42, secret: SECRET, nowSeconds: T })).toEqual({ ok: false, reason: 'bad_input' });
    expect(call({ header: header, rawBody: BODY, secret: '', nowSeconds: T })).toEqual({ ok: false, reason: 'bad_input' });
    expect(call({ header: header, rawBody: BODY, secret: SECRET, nowSeconds: Number.NaN })).toEqual({ ok: false, reason: 'bad_input' });
    expect(call({ header: 42, rawBody: BODY, secret: SECRET, nowSeconds: T })).toEqual({ ok: false, reason: 'malformed_header' });
    fc.assert(
      fc.property(fc.anything(), fc.anything(), fc.anything(), fc.anything(), (h, b, s, n) => {
        const r = call({ header: h, rawBody: b, secret: s, nowSeconds: n });
        return r.ok === false;
      }),
      { numRuns: 2000 },
    );
    // near-valid headers built from the grammar's own pieces
    const piece = fc.oneof(
      fc.constant(`t=${T}`),
      fc.constant(`v1=${header.split('v1=')[1]}`),
      fc.string().map((s) => `t=${s}`),
      fc.string().map((s) => `v1=${s}`),
      fc.string({ unit: fc.constantFrom(...'0123456789abcdefA'), maxLength: 70 }).map((s) => `v1=${s}`),
      fc.string(),
      fc.constant(''),
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 12 }), fc.string(), (pieces, body) => {
        const r = verifySignature({ header: pieces.join(','), rawBody: body, secret: SECRET, nowSeconds: T });
        if (r.ok) expect(body).toBe(BODY);
        return true;
      }),
      { numRuns: 3000 },
    );
    fc.assert(
      fc.property(fc.string(), (h) => {
        verifySignature({ header: h, rawBody: BODY, secret: SECRET, nowSeconds: T });
        parseSignatureHeader(h);
        return true;
      }),
      { numRuns: 3000 },
    );
  });

  it('sign/verify round-trips for arbitrary bodies, secrets and times (fast-check)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 512 }), fc.string({ minLength: 1 }), fc.integer({ min: 0, max: 999_999_999_999 }), fc.integer({ min: -300, max: 300 }), (body, secret, t, skew) => {
        const h = signPayload(secret, body, t);
        expect(verifySignature({ header: h, rawBody: body, secret, nowSeconds: t + skew })).toEqual({ ok: true, t });
        expect(verifySignature({ header: h, rawBody: body, secret, nowSeconds: t + 301 })).toMatchObject({ ok: false });
      }),
      { numRuns: 500 },
    );
  });

  it('compares with crypto.timingSafeEqual on equal-length buffers (structure)', () => {
    const src = readFileSync(join(root, 'jobs/webhooks/signing.ts'), 'utf8');
    expect(src).toMatch(/import \{[^}]*timingSafeEqual[^}]*\} from 'node:crypto'/);
    expect(src).toMatch(/timingSafeEqual\(got, expected\)/);
  });
});

describe('docs/webhooks-receiver.md snippets', () => {
  const doc = readFileSync(join(root, 'docs/webhooks-receiver.md'), 'utf8');
  const block = (lang: string, contains: string) => {
    const re = new RegExp('```' + lang + '\\n([\\s\\S]*?)```', 'g');
    for (const m of doc.matchAll(re)) if (m[1]!.includes(contains)) return m[1]!;
    throw new Error(`no ${lang} block with ${contains}`);
  };
  const dir = mkdtempSync(join(tmpdir(), 'receiver-doc-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** cases [header, body, secret, now] and what the service's verifier says */
  function cases(): Array<{ header: string; body: string; secret: string; now: number; want: boolean }> {
    const out: Array<{ header: string; body: string; secret: string; now: number; want: boolean }> = [];
    const other = 'whsec_' + randomBytes(32).toString('base64url');
    const good = DOC_HEADER.split('v1=')[1]!;
    const add = (header: string, body = BODY, secret = SECRET, now = T) =>
      out.push({ header, body, secret, now, want: verifySignature({ header, rawBody: body, secret, nowSeconds: now }).ok });
    add(DOC_HEADER);
    add(DOC_HEADER, BODY, SECRET, T + 300);
    add(DOC_HEADER, BODY, SECRET, T - 300);
    add(DOC_HEADER, BODY, SECRET, T + 301);
    add(DOC_HEADER, BODY, SECRET, T - 301);
    add(DOC_HEADER, BODY + ' ');
    add(DOC_HEADER, BODY, other);
    add(`t=${T},v1=${signPayload(other, BODY, T).split('v1=')[1]},v1=${good}`);
    add(`t=${T},v0=zz,v1=${good}`);
    add(`t=${T}, v1=${good}`);
    add(`t=${T},x=1,v1=${good}`);
    add(`t=0${T},v1=${good}`);
    add(`t=${T},v1=${good.toUpperCase()}`);
    add(`t=${T}`);
    add('garbage');
    add('');
    const uni = '{"title":"Ünïcødé 🌍"}';
    add(signPayload(SECRET, uni, T), uni);
    return out;
  }

  it('the TypeScript snippet agrees with the service verifier', async () => {
    const file = join(dir, 'verify.ts');
    writeFileSync(file, block('ts', 'verifyServiceSignature('));
    const mod = (await import(file)) as { verifyServiceSignature: (h: string, b: Buffer, s: string, tol?: number, now?: number) => boolean };
    const all = cases();
    expect(all.filter((c) => c.want).length).toBeGreaterThanOrEqual(5);
    for (const c of all) expect(mod.verifyServiceSignature(c.header, Buffer.from(c.body, 'utf8'), c.secret, 300, c.now), c.header).toBe(c.want);
  });

  const py = spawnSync('python3', ['--version']);
  it.skipIf(py.status !== 0)('the Python snippet agrees with the service verifier', () => {
    const all = cases();
    const harness = `${block('python', 'def verify_service_signature')}
import json, sys
out = []
for c in json.load(sys.stdin):
    out.append(verify_service_signature(c["header"], c["body"].encode("utf-8"), c["secret"], 300, c["now"]))
print(json.dumps(out))
`;
    const file = join(dir, 'verify.py');
    writeFileSync(file, harness);
    const r = spawnSync('python3', [file], { input: JSON.stringify(all), encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual(all.map((c) => c.want));
  });
});
