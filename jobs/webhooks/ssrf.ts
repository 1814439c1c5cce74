/**
 * SSRF guard for outbound webhook and web-push deliveries.
 *
 * Three layers, each usable on its own:
 *  1. `parseTarget`  — syntax: https only, no userinfo, port 443 or 8443, host is a DNS name or a canonical IP literal
 *     (numeric shorthand such as `2130706433`, `0x7f.1`, `017700000001`, `127.1` is refused in both its raw and its
 *     WHATWG-normalized form), IP literals must be public unicast.
 *  2. `resolveTarget` — resolves every address of the host (A and AAAA, through getaddrinfo like a connect would) and
 *     refuses the target when ANY address is not public unicast; returns the address that was checked.
 *  3. `pinnedPost`   — POSTs to exactly that checked address (the TCP connect goes to the IP; the original host goes
 *     into the Host header and the TLS SNI / certificate check), so a DNS answer that changes between check and
 *     connect (rebinding) cannot redirect the request. Never follows redirects (3xx is a failure), one overall
 *     deadline (default 10 s, covering DNS, connect, TLS, and waiting for the response), response body read up to a
 *     cap and discarded.
 *
 * Decisions:
 *  - Ports: only 443 and 8443. TLS-first traffic makes cross-protocol abuse unlikely, but an any-port target would
 *    still turn delivery results into a port scanner of third-party hosts; real receivers sit on 443, and 8443 is the
 *    common alternative HTTPS port.
 *  - IPv6: only global unicast 2000::/3 can be public, minus 2001::/23 (IETF protocol assignments, incl. Teredo
 *    2001::/32 and benchmarking 2001:2::/48), 2001:db8::/32 and 3fff::/20 (documentation) and 2002::/16 (6to4, which
 *    is deprecated and relay-routed to an embedded IPv4 that may be private). This positive rule also refuses
 *    IPv4-mapped (::ffff:0:0/96), IPv4-compatible (::/96), SIIT (::ffff:0:0:0/96), ULA fc00::/7, site-local
 *    fec0::/10, link-local fe80::/10, multicast ff00::/8, discard 100::/64, loopback and unspecified.
 *    The one exception is the NAT64 well-known prefix 64:ff9b::/96: it is public exactly when the embedded IPv4 is
 *    (so delivery works from an IPv6-only host behind DNS64); the local-use NAT64 prefix 64:ff9b:1::/48 is refused.
 *  - Test-only allowlist: an explicit `allowlist` option of "host:port" strings (IPv6 in brackets: "[::1]:4443").
 *    An entry matching the URL's host:port relaxes the syntactic host/port rules of `parseTarget`; an entry matching
 *    a resolved "address:port" lets that address through the public-unicast check. Production code must never pass
 *    one, and nothing here reads it from the environment; it exists so tests can reach a loopback HTTPS receiver.
 *
 * Connection reuse (`DeliveryAgentPool`, option `pool`):
 *  - By default `pinnedPost` sends through a shared keep-alive pool (one `https.Agent`); `pool: false` restores one
 *    new TCP+TLS connection per request with `Connection: close`. Pinning is unchanged: `parseTarget` and
 *    `resolveTarget` run before EVERY request, pooled or not, and the request is always addressed to the IP literal
 *    that was just checked (`host` = that address, `servername` = the original name).
 *  - Why a reused socket cannot be redirected: Node's Agent files sockets under `agent.getName(options)` and hands a
 *    free socket only to a request with the same name. For https (Node 20, lib/https.js + lib/_http_agent.js,
 *    checked by reading the bundled source and by calling getName) the name is
 *    `host:port:localAddress:family` followed by ca, cert, ciphers, key, pfx, rejectUnauthorized, servername,
 *    minVersion, maxVersion, ... — and `servername` is filled in (from the Host header when not given) before the
 *    name is computed. Since `host` is always the checked IP literal, a socket is reused only when the freshly
 *    checked address equals the address that socket was opened to, on the same port, with the same SNI name (so the
 *    certificate was verified for that name) and the same trust options (`ca`, `rejectUnauthorized`, `minVersion`).
 *    A DNS answer that changes (rebinding) yields a different checked address, hence a different name, hence a new
 *    connection to the new, checked address; it never retargets an existing socket. TLS session resumption in the
 *    agent is keyed by the same name. Nothing that varies per request and matters to the guard is absent from it:
 *    `lookup` is not in the name but is never called, because the host is an IP literal. The allowlist only decides
 *    what passes the checks, which run before the pool is consulted. test/jobs/connection-reuse.test.ts checks this
 *    against real receivers (two loopback addresses behind one name, IP literal vs name, with and without `ca`).
 *  - Limits: 16 sockets per origin (the delivery worker's default concurrency, so one worker's batch to a single
 *    receiver never waits for a socket; a request that does wait spends its own deadline waiting), 256 in total,
 *    LIFO reuse (the most recently used, least likely stale socket first), idle sockets closed after 15 s (sooner
 *    when the receiver's `Keep-Alive: timeout=` hint says so) and unref'd by the agent while idle, so they never keep
 *    a process alive. `closeDefaultDeliveryPool()` / `pool.close()` drop
 *    every socket (shutdown, tests).
 *  - Every response is read to its end (then the socket goes back to the pool) or the socket is destroyed: on the
 *    deadline, and when the body cap is hit (a capped body is never returned to the pool half-read).
 *  - Stale sockets: a keep-alive socket the receiver closed just as we reused it fails with ECONNRESET/EPIPE. When
 *    that happens on a REUSED socket before any response arrived, the request is retried once, immediately, on a
 *    new unpooled connection to the same checked address (the one checked for this send; no second lookup), within
 *    the same overall deadline. (The receiver may have
 *    seen the first copy; deliveries are at-least-once and carry an event id anyway.) Any other error, or an error on
 *    a fresh connection, is a failed try as before, and the outbox retries it on its schedule.
 */
import { promises as dns } from 'node:dns';
import https from 'node:https';
import type { IncomingMessage } from 'node:http';
import { BlockList, isIP, type LookupFunction } from 'node:net';

export type TargetParse = { ok: true; url: URL } | { ok: false; reason: string };

export type ResolveResult =
  | { ok: true; address: string; family: 4 | 6; addresses: string[] }
  | { ok: false; reason: string };

export interface PostResult {
  /** HTTP status, or 0 when no response was received */
  status: number;
  /** true exactly for a 2xx response */
  ok: boolean;
  error?: string;
  /** the checked address the request was sent to (absent when refused before connecting) */
  address?: string;
}

/** Resolves a host name to all of its addresses (A and AAAA). The default is getaddrinfo via dns.lookup(all). */
export type Lookup = (hostname: string) => Promise<ReadonlyArray<{ address: string; family?: number }>>;

/** "host:port" strings, IPv6 in brackets. Test-only; see the module comment. */
export type Allowlist = ReadonlySet<string> | readonly string[];

export interface PinnedPostOptions {
  /** overall deadline in ms: DNS + connect + TLS + response headers (default 10 000, the spec's webhook timeout) */
  timeoutMs?: number;
  /** response body bytes read before the connection is dropped (default 64 KiB); the body is always discarded */
  maxResponseBytes?: number;
  allowlist?: Allowlist;
  lookup?: Lookup;
  /** extra trusted CA certificates (PEM), for test receivers with self-signed certificates */
  ca?: string | Buffer | Array<string | Buffer>;
  /**
   * keep-alive connection pool: undefined = the shared process-wide pool (`defaultDeliveryPool()`), a pool = that
   * pool, false = a new connection per request with `Connection: close`
   */
  pool?: DeliveryAgentPool | false;
}

export const ALLOWED_PORTS: readonly number[] = [443, 8443];
export const DEFAULT_TIMEOUT_MS = 10_000;
export const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024;
const MAX_URL_LENGTH = 2048;

// ---------------------------------------------------------------------------------------------------------------
// Keep-alive pool

export interface DeliveryAgentPoolOptions {
  /** sockets per origin (checked address + port + SNI name + TLS options), in use plus idle; default 16 */
  maxSocketsPerOrigin?: number;
  /** sockets over all origins; default 256 */
  maxTotalSockets?: number;
  /** idle sockets kept per origin; default 16 */
  maxFreeSockets?: number;
  /** an idle socket is closed after this many ms (shorter when the server's Keep-Alive hint says so); default 15 000 */
  idleTimeoutMs?: number;
}

export const DEFAULT_POOL_MAX_SOCKETS_PER_ORIGIN = 16;
export const DEFAULT_POOL_MAX_TOTAL_SOCKETS = 256;
export const DEFAULT_POOL_IDLE_TIMEOUT_MS = 15_000;

/**
 * A keep-alive pool for pinned deliveries: one `https.Agent` (keepAlive, LIFO). Sockets are filed under the agent's
 * name for (checked IP, port, family, SNI name, TLS options); see the module comment for why that keeps the SSRF
 * guarantees. `close()` destroys every socket; the pool stays usable (a later request opens a new connection).
 */
export class DeliveryAgentPool {
  readonly agent: https.Agent;

  constructor(opts: DeliveryAgentPoolOptions = {}) {
    const maxSockets = opts.maxSocketsPerOrigin ?? DEFAULT_POOL_MAX_SOCKETS_PER_ORIGIN;
    this.agent = new https.Agent({
      keepAlive: true,
      keepAliveMsecs: 1000,
      maxSockets,
      maxTotalSockets: opts.maxTotalSockets ?? DEFAULT_POOL_MAX_TOTAL_SOCKETS,
      maxFreeSockets: opts.maxFreeSockets ?? maxSockets,
      scheduling: 'lifo',
      // the socket idle timeout: an idle pooled socket that times out is destroyed by the agent
      timeout: opts.idleTimeoutMs ?? DEFAULT_POOL_IDLE_TIMEOUT_MS,
    });
  }

  /** open sockets: in use, idle in the pool, and requests waiting for a socket (for tests and metrics) */
  stats(): { active: number; idle: number; waiting: number } {
    const count = (m: NodeJS.ReadOnlyDict<unknown[]>) => Object.values(m).reduce((n, l) => n + (l?.length ?? 0), 0);
    return { active: count(this.agent.sockets), idle: count(this.agent.freeSockets), waiting: count(this.agent.requests) };
  }

  /** destroy every socket (in use or idle); requests in flight on them fail */
  close(): void {
    this.agent.destroy();
  }
}

let sharedPool: DeliveryAgentPool | null = null;

/** The process-wide pool `pinnedPost` uses when no `pool` option is given (created on first use). */
export function defaultDeliveryPool(): DeliveryAgentPool {
  sharedPool ??= new DeliveryAgentPool();
  return sharedPool;
}

/** Close the shared pool's sockets (shutdown, tests); a later default send creates a fresh pool. */
export function closeDefaultDeliveryPool(): void {
  sharedPool?.close();
  sharedPool = null;
}

// ---------------------------------------------------------------------------------------------------------------
// Address classification

/** IPv4 ranges that are never a delivery target (IANA special-purpose registry plus multicast/reserved). */
const V4_BLOCKED: ReadonlyArray<readonly [string, number]> = [
  ['0.0.0.0', 8], // "this network", incl. unspecified
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // CGNAT shared address space
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, incl. cloud metadata 169.254.169.254
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // TEST-NET-1
  ['192.88.99.0', 24], // deprecated 6to4 relay anycast
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // TEST-NET-2
  ['203.0.113.0', 24], // TEST-NET-3
  ['224.0.0.0', 4], // multicast (incl. 233.252.0.0/24 MCAST-TEST-NET)
  ['240.0.0.0', 4], // reserved, incl. limited broadcast 255.255.255.255
];

/** Ranges inside 2000::/3 that are still not public unicast. */
const V6_BLOCKED_IN_GLOBAL: ReadonlyArray<readonly [string, number]> = [
  ['2001::', 23], // IETF protocol assignments: Teredo 2001::/32, benchmarking 2001:2::/48, ORCHID, AMT, ...
  ['2001:db8::', 32], // documentation
  ['2002::', 16], // 6to4 (decision: refused outright)
  ['3fff::', 20], // documentation (RFC 9637)
];

const v4Blocked = new BlockList();
for (const [net, prefix] of V4_BLOCKED) v4Blocked.addSubnet(net, prefix, 'ipv4');
const v6Global = new BlockList();
v6Global.addSubnet('2000::', 3, 'ipv6');
const v6BlockedInGlobal = new BlockList();
for (const [net, prefix] of V6_BLOCKED_IN_GLOBAL) v6BlockedInGlobal.addSubnet(net, prefix, 'ipv6');

/** Strict dotted-quad: four decimal octets 0-255, no leading zeros (node:net's isIPv4 semantics). */
function isCanonicalV4(s: string): boolean {
  return isIP(s) === 4;
}

/** Parses a valid IPv6 literal (no zone) into eight 16-bit words. */
function v6Words(s: string): number[] | null {
  if (isIP(s) !== 6 || s.includes('%')) return null;
  let text = s.toLowerCase();
  const lastColon = text.lastIndexOf(':');
  const tailV4 = text.slice(lastColon + 1);
  if (tailV4.includes('.')) {
    // trailing dotted quad ("::ffff:1.2.3.4"): rewrite as two hex words
    if (!isCanonicalV4(tailV4)) return null;
    const o = tailV4.split('.').map(Number);
    text = `${text.slice(0, lastColon + 1)}${((o[0]! << 8) | o[1]!).toString(16)}:${((o[2]! << 8) | o[3]!).toString(16)}`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const parse = (part: string | undefined): number[] => (part ? part.split(':').map((h) => (/^[0-9a-f]{1,4}$/.test(h) ? parseInt(h, 16) : NaN)) : []);
  const head = parse(halves[0]);
  const rest = parse(halves[1]);
  let words: number[];
  if (halves.length === 2) {
    const fill = 8 - head.length - rest.length;
    if (fill < 1) return null;
    words = [...head, ...new Array<number>(fill).fill(0), ...rest];
  } else {
    words = head;
  }
  if (words.length !== 8 || words.some((w) => !Number.isInteger(w))) return null;
  return words;
}

/**
 * True when `ip` is a canonical IPv4 dotted quad or an IPv6 literal (brackets allowed) that is public unicast;
 * false for everything else, including non-canonical spellings, zone ids and garbage.
 */
export function isPublicUnicast(ip: string): boolean {
  if (typeof ip !== 'string') return false;
  let s = ip;
  if (s.startsWith('[') && s.endsWith(']')) {
    s = s.slice(1, -1);
    if (isIP(s) !== 6) return false; // brackets are for IPv6 only
  }
  const fam = isIP(s);
  if (fam === 4) return !v4Blocked.check(s, 'ipv4');
  if (fam !== 6 || s.includes('%')) return false;
  const w = v6Words(s);
  if (!w) return false;
  // NAT64 well-known prefix 64:ff9b::/96: judge the embedded IPv4
  if (w[0] === 0x64 && w[1] === 0xff9b && w[2] === 0 && w[3] === 0 && w[4] === 0 && w[5] === 0) {
    const v4 = `${w[6]! >> 8}.${w[6]! & 0xff}.${w[7]! >> 8}.${w[7]! & 0xff}`;
    return !v4Blocked.check(v4, 'ipv4');
  }
  // Only global unicast 2000::/3 (checked on the word, so BlockList's IPv4-mapped handling never comes into play)
  if ((w[0]! & 0xe000) !== 0x2000) return false;
  return v6Global.check(s, 'ipv6') && !v6BlockedInGlobal.check(s, 'ipv6');
}

// ---------------------------------------------------------------------------------------------------------------
// Allowlist (test-only)

function canonicalHostPort(host: string, port: number): string {
  let h = host.toLowerCase();
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  if (isIP(h) === 6) {
    try {
      h = new URL(`https://[${h}]/`).hostname.slice(1, -1);
    } catch {
      /* keep as is */
    }
    return `[${h}]:${port}`;
  }
  return `${h}:${port}`;
}

function allowlistSet(list: Allowlist | undefined): Set<string> {
  const out = new Set<string>();
  if (!list) return out;
  for (const entry of list) {
    const m = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(String(entry).trim());
    if (m) out.add(canonicalHostPort(m[1]!, Number(m[2])));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// URL syntax

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
const SPECIAL_SUFFIXES = ['localhost', 'local', 'internal', 'localdomain', 'home.arpa', 'arpa', 'invalid'];

function effectivePort(url: URL): number {
  return url.port === '' ? 443 : Number(url.port);
}

/**
 * Syntactic check of a webhook / push target. Accepts `https://<dns-name-or-ip>[:443|:8443]/...` only.
 * Host rules: a DNS name of at least two LDH labels (after IDNA), last label not numeric, no trailing dot, not
 * localhost/.local/.internal/.arpa-style names; or a canonical dotted-quad IPv4 / bracketed IPv6 that is public.
 */
export function parseTarget(url: string, opts: { allowlist?: Allowlist } = {}): TargetParse {
  if (typeof url !== 'string') return { ok: false, reason: 'not_a_string' };
  if (url.length === 0 || url.length > MAX_URL_LENGTH) return { ok: false, reason: 'bad_length' };
  // WHATWG strips tabs/newlines and trims C0/space, and treats "\" like "/" in special URLs: refuse all of them so
  // the raw text we inspect below is the text the parser sees.
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x20\x7f\\]/.test(url)) return { ok: false, reason: 'forbidden_character' };
  const raw = /^https:\/\/([^/?#]*)/i.exec(url);
  if (!raw) return { ok: false, reason: 'https_only' };
  const authority = raw[1]!;
  if (authority.includes('@')) return { ok: false, reason: 'userinfo_not_allowed' };
  const hp = /^(\[[^\]]*\]|[^:[\]]*)(?::(\d{1,5}))?$/.exec(authority);
  if (!hp) return { ok: false, reason: 'bad_authority' };
  const rawHost = hp[1]!;
  if (rawHost === '') return { ok: false, reason: 'empty_host' };
  if (rawHost.includes('%')) return { ok: false, reason: 'percent_encoded_host' };

  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return { ok: false, reason: 'invalid_url' };
  }
  if (u.protocol !== 'https:') return { ok: false, reason: 'https_only' };
  if (u.username !== '' || u.password !== '') return { ok: false, reason: 'userinfo_not_allowed' };
  const port = effectivePort(u);
  const allow = allowlistSet(opts.allowlist);
  if (allow.has(canonicalHostPort(u.hostname, port))) return { ok: true, url: u };
  if (!ALLOWED_PORTS.includes(port)) return { ok: false, reason: 'port_not_allowed' };

  const host = u.hostname; // lowercase, IDNA-encoded, IPv4 normalized, IPv6 bracketed and compressed
  if (host.startsWith('[')) {
    if (!rawHost.startsWith('[')) return { ok: false, reason: 'bad_host' };
    return isPublicUnicast(host) ? { ok: true, url: u } : { ok: false, reason: 'ip_not_public' };
  }
  if (isIP(host) === 4) {
    // WHATWG turned some numeric spelling into a dotted quad: only the canonical spelling itself is accepted.
    if (rawHost !== host) return { ok: false, reason: 'non_canonical_ip' };
    return isPublicUnicast(host) ? { ok: true, url: u } : { ok: false, reason: 'ip_not_public' };
  }
  if (host.length > 253 || host.endsWith('.')) return { ok: false, reason: 'bad_host' };
  const labels = host.split('.');
  if (labels.length < 2) return { ok: false, reason: 'single_label_host' };
  if (!labels.every((l) => LABEL.test(l))) return { ok: false, reason: 'bad_host' };
  const last = labels[labels.length - 1]!;
  // a numeric-looking last label is what makes WHATWG try the IPv4 parser (decimal, 0x hex, octal)
  if (/^(0x[0-9a-f]*|[0-9]+)$/.test(last)) return { ok: false, reason: 'non_canonical_ip' };
  if (SPECIAL_SUFFIXES.some((s) => host === s || host.endsWith('.' + s))) return { ok: false, reason: 'special_use_name' };
  return { ok: true, url: u };
}

// ---------------------------------------------------------------------------------------------------------------
// Resolution

const defaultLookup: Lookup = (hostname) => dns.lookup(hostname, { all: true, verbatim: true });

/**
 * Resolves all addresses of `host` and refuses when any is not public unicast (an address whose "address:port" is in
 * the test-only allowlist counts as acceptable). IP literals are checked without a lookup. Returns the first address,
 * which is the one `pinnedPost` connects to.
 */
export async function resolveTarget(
  host: string,
  opts: { port?: number; lookup?: Lookup; allowlist?: Allowlist } = {},
): Promise<ResolveResult> {
  const port = opts.port ?? 443;
  const allow = allowlistSet(opts.allowlist);
  const acceptable = (a: string) => isPublicUnicast(a) || allow.has(canonicalHostPort(a, port));
  let h = String(host);
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  const literal = isIP(h);
  if (literal) {
    if (h.includes('%')) return { ok: false, reason: 'zone_id_not_allowed' };
    return acceptable(h) ? { ok: true, address: h, family: literal as 4 | 6, addresses: [h] } : { ok: false, reason: `address_not_public: ${h}` };
  }
  let answers: ReadonlyArray<{ address: string; family?: number }>;
  try {
    answers = await (opts.lookup ?? defaultLookup)(h);
  } catch (e) {
    const code = (e as { code?: unknown })?.code;
    return { ok: false, reason: `dns_error: ${typeof code === 'string' ? code : String((e as Error)?.message ?? e)}` };
  }
  if (!Array.isArray(answers) || answers.length === 0) return { ok: false, reason: 'no_addresses' };
  const addresses: string[] = [];
  for (const a of answers) {
    const addr = typeof a?.address === 'string' ? a.address : '';
    const fam = isIP(addr);
    if (!fam || addr.includes('%')) return { ok: false, reason: `bad_address: ${addr}` };
    if (!acceptable(addr)) return { ok: false, reason: `address_not_public: ${addr}` };
    addresses.push(addr);
  }
  const first = addresses[0]!;
  return { ok: true, address: first, family: isIP(first) as 4 | 6, addresses };
}

/**
 * The check at registration (webhook targets, push endpoints): the URL's syntax, then every address it resolves
 * to. `resolved` tells which of the two refused it. pinnedPost repeats both at every send.
 */
export async function checkPublicTarget(
  url: string,
  opts: { allowlist?: Allowlist; lookup?: Lookup } = {},
): Promise<{ ok: true; url: URL } | { ok: false; resolved: boolean; reason: string }> {
  const t = parseTarget(url, { allowlist: opts.allowlist });
  if (!t.ok) return { ok: false, resolved: false, reason: t.reason };
  const r = await resolveTarget(t.url.hostname, { port: Number(t.url.port || 443), allowlist: opts.allowlist, lookup: opts.lookup });
  return r.ok ? { ok: true, url: t.url } : { ok: false, resolved: true, reason: r.reason };
}

// ---------------------------------------------------------------------------------------------------------------
// Pinned POST

/**
 * POSTs `body` to `url`, connecting only to the address that `resolveTarget` checked. Never throws.
 * `headers` are sent as given (Host and Content-Length are set here; User-Agent defaults to Service-Webhook/1.0).
 * The connection comes from `opts.pool` (default: the shared keep-alive pool) or is a new one (`pool: false`).
 */
export async function pinnedPost(
  url: string,
  body: string | Uint8Array,
  headers: Record<string, string>,
  opts: PinnedPostOptions = {},
): Promise<PostResult> {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const cap = opts.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  const started = Date.now();
  const parsed = parseTarget(url, { allowlist: opts.allowlist });
  if (!parsed.ok) return { status: 0, ok: false, error: `refused: ${parsed.reason}` };
  const u = parsed.url;
  const port = effectivePort(u);
  const hostname = u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname;

  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), timeoutMs);
  });
  try {
    const pool = opts.pool === false ? null : (opts.pool ?? defaultDeliveryPool());
    // DNS is resolved and checked for every request, pooled or not: the pool only ever sees checked addresses
    const resolved = await Promise.race([resolveTarget(hostname, { port, lookup: opts.lookup, allowlist: opts.allowlist }), deadline]);
    if (resolved === 'timeout') return { status: 0, ok: false, error: `timeout after ${timeoutMs} ms (dns)` };
    if (!resolved.ok) return { status: 0, ok: false, error: `refused: ${resolved.reason}` };
    const remaining = () => timeoutMs - (Date.now() - started);
    if (remaining() <= 0) return { status: 0, ok: false, error: `timeout after ${timeoutMs} ms (dns)` };
    const payload = typeof body === 'string' ? Buffer.from(body, 'utf8') : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
    const target: SendTarget = { u, port, hostname, address: resolved.address, family: resolved.family, payload, headers, timeoutMs, cap, ca: opts.ca };
    const first = await send(target, pool?.agent ?? false, remaining());
    if (!first.retry) return first.result;
    // a reused keep-alive socket turned out to be closed by the receiver before any response: once more, on a new
    // connection to the same checked address, within the same deadline
    const left = remaining();
    if (left <= 0) return first.result;
    return (await send(target, false, left)).result;
  } catch (e) {
    return { status: 0, ok: false, error: `error: ${(e as Error)?.message ?? String(e)}` };
  } finally {
    clearTimeout(timer);
  }
}

interface SendTarget {
  u: URL;
  port: number;
  hostname: string;
  /** the checked address (IP literal) */
  address: string;
  family: 4 | 6;
  payload: Buffer;
  headers: Record<string, string>;
  timeoutMs: number;
  cap: number;
  ca: PinnedPostOptions['ca'];
}

/** errors that mean "the pooled socket was already closed by the peer" when they hit a reused socket */
const STALE_SOCKET_CODES = new Set(['ECONNRESET', 'EPIPE']);

/**
 * One request on one connection: `agent` is the pool's agent (a free socket for exactly this name is reused, or a
 * new one opened) or false (a new connection, `Connection: close`). `retry` is true only for a stale reused socket.
 */
function send(t: SendTarget, agent: https.Agent | false, remainingMs: number): Promise<{ result: PostResult; retry: boolean }> {
  const { u, port, hostname, address, family, payload, timeoutMs, cap, ca } = t;
  return new Promise((resolve) => {
    let settled = false;
    let status = 0;
    let timer: NodeJS.Timeout | undefined;
    const finish = (result: PostResult, retry = false) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ result, retry });
    };
    const outHeaders: Record<string, string> = {};
    let hasUa = false;
    for (const [k, v] of Object.entries(t.headers)) {
      const lk = k.toLowerCase();
      if (lk === 'host' || lk === 'content-length' || lk === 'transfer-encoding' || lk === 'connection') continue;
      if (lk === 'user-agent') hasUa = true;
      outHeaders[k] = v;
    }
    if (!hasUa) outHeaders['User-Agent'] = 'Service-Webhook/1.0';
    outHeaders['Host'] = u.host; // original host[:port], exactly as the URL spelled it (normalized)
    outHeaders['Content-Length'] = String(payload.length);
    // pooled: the keep-alive agent sends "Connection: keep-alive" itself
    if (agent === false) outHeaders['Connection'] = 'close';

    // Belt and braces: the request targets an IP literal so Node performs no lookup, but if it ever did, it gets the
    // checked address and nothing else.
    const pinned: LookupFunction = (_name, options, cb) => {
      if ((options as { all?: boolean }).all) (cb as unknown as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [{ address, family }]);
      else cb(null, address, family);
    };

    let req: ReturnType<typeof https.request>;
    try {
      req = https.request({
        // the pool key (agent.getName) starts with host:port:localAddress:family, so a pooled socket is only ever
        // reused for this same checked address
        host: address,
        family,
        port,
        method: 'POST',
        path: `${u.pathname}${u.search}`,
        headers: outHeaders,
        // SNI and certificate verification use the original name; an IP-literal target is verified against its IP SAN
        ...(isIP(hostname) ? {} : { servername: hostname }),
        lookup: pinned,
        agent,
        rejectUnauthorized: true,
        minVersion: 'TLSv1.2',
        ...(ca !== undefined ? { ca } : {}),
      });
    } catch (e) {
      finish({ status: 0, ok: false, error: `error: ${(e as Error)?.message ?? String(e)}`, address });
      return;
    }

    const verdict = (): PostResult => {
      if (status >= 300 && status < 400) return { status, ok: false, error: `redirect not followed (${status})`, address };
      if (status >= 200 && status < 300) return { status, ok: true, address };
      return { status, ok: false, error: `http ${status}`, address };
    };
    timer = setTimeout(() => {
      // once the status line is in, a slow or endless body does not change the verdict; the socket is destroyed
      // either way (never returned to the pool mid-response)
      finish(status ? verdict() : { status: 0, ok: false, error: `timeout after ${timeoutMs} ms`, address });
      req.destroy(new Error('timeout'));
    }, remainingMs);

    req.on('error', (e: Error & { code?: string }) => {
      if (status) return finish(verdict());
      const stale = agent !== false && req.reusedSocket && STALE_SOCKET_CODES.has(e.code ?? '');
      finish({ status: 0, ok: false, error: `error: ${e.code ?? e.message}`, address }, stale);
    });
    req.on('response', (res: IncomingMessage) => {
      status = res.statusCode ?? 0;
      let read = 0;
      // reading to the end hands a keep-alive socket back to the pool
      res.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (read >= cap) {
          // enough: the body is discarded anyway; drop the connection (never pooled) rather than read an unbounded
          // stream
          finish(verdict());
          req.destroy();
        }
      });
      res.on('end', () => finish(verdict()));
      res.on('error', () => finish(verdict()));
      res.on('close', () => finish(verdict()));
    });
    req.end(payload);
  });
}
