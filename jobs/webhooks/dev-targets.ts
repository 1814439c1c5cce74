/**
 * Development targets: the operator's explicit allow-list that lets webhook deliveries reach a receiver on a
 * developer's own machine or private network (`https://127.0.0.1:9443/hook`), which the SSRF guard rightly refuses
 * otherwise. Off unless WEBHOOK_DEV_TARGETS is set; refused outright when NODE_ENV=production; printed at start.
 *
 * - Entries are `host:port` (IPv6 in brackets: `[::1]:9443`). An entry relaxes the guard for exactly that host and
 *   port: the URL's syntax rules (loopback, private, single-label names, any port) and the public-address check.
 * - A name entry (`localhost:9443`) is resolved once, here, and the addresses it has now are allowed on that port
 *   (the guard checks addresses at every send; re-resolving per send would let DNS widen the list).
 * - WEBHOOK_DEV_CA names a PEM file with the receiver's self-signed certificate or a local CA: it is trusted in
 *   addition to the system's roots, so public receivers still verify as before.
 * Browser push endpoints are never affected: push services are public by nature.
 */
import { promises as dns } from 'node:dns';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { rootCertificates } from 'node:tls';

export class DevTargetsError extends Error {}

export interface DevTargetsConfig {
  /** WEBHOOK_DEV_TARGETS: comma-separated host:port entries */
  targets?: string;
  /** WEBHOOK_DEV_CA: path of a PEM file to trust for them */
  caFile?: string;
  /** NODE_ENV === 'production' */
  production: boolean;
  /** resolver (tests); default getaddrinfo */
  lookup?: (host: string) => Promise<ReadonlyArray<{ address: string }>>;
}

export interface DevTargets {
  /** what the SSRF guard lets through: the entries and the addresses their names resolve to, each with its port */
  allowlist: string[];
  /** the system roots plus the development CA (undefined: the default trust store) */
  ca?: string[];
  /** one line for the start-up log */
  describe: string;
}

const ENTRY = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/;

const defaultLookup = (host: string) => dns.lookup(host, { all: true, verbatim: true });

/** Parse and expand the development allow-list; null when it is off. Throws DevTargetsError on a bad setting. */
export async function loadDevTargets(cfg: DevTargetsConfig): Promise<DevTargets | null> {
  const raw = (cfg.targets ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  if (raw.length === 0) {
    if (cfg.caFile) throw new DevTargetsError('WEBHOOK_DEV_CA is set without WEBHOOK_DEV_TARGETS: name the development receivers it is for');
    return null;
  }
  if (cfg.production) {
    throw new DevTargetsError('WEBHOOK_DEV_TARGETS lets webhooks reach private and loopback addresses and is refused when NODE_ENV=production; unset it');
  }
  const allow = new Set<string>();
  const shown: string[] = [];
  for (const entry of raw) {
    const m = ENTRY.exec(entry);
    const port = m ? Number(m[2]) : 0;
    if (!m || port < 1 || port > 65535) throw new DevTargetsError(`WEBHOOK_DEV_TARGETS entry ${JSON.stringify(entry)} is not host:port (IPv6 in brackets, e.g. [::1]:9443)`);
    const host = m[1]!.toLowerCase();
    allow.add(`${host}:${port}`);
    const bare = host.replace(/^\[|\]$/g, '');
    if (isIP(bare)) {
      shown.push(`${host}:${port}`);
      continue;
    }
    let answers: ReadonlyArray<{ address: string }>;
    try {
      answers = await (cfg.lookup ?? defaultLookup)(bare);
    } catch (e) {
      throw new DevTargetsError(`WEBHOOK_DEV_TARGETS entry ${entry}: ${bare} does not resolve (${(e as { code?: string }).code ?? (e as Error).message})`);
    }
    const addrs = answers.map((a) => a.address);
    for (const a of addrs) allow.add(isIP(a) === 6 ? `[${a}]:${port}` : `${a}:${port}`);
    shown.push(`${host}:${port} (${addrs.join(', ')})`);
  }
  let ca: string[] | undefined;
  if (cfg.caFile) {
    let pem: string;
    try {
      pem = readFileSync(cfg.caFile, 'utf8');
    } catch (e) {
      throw new DevTargetsError(`WEBHOOK_DEV_CA: cannot read ${cfg.caFile} (${(e as { code?: string }).code ?? (e as Error).message})`);
    }
    if (!pem.includes('-----BEGIN CERTIFICATE-----')) throw new DevTargetsError(`WEBHOOK_DEV_CA: ${cfg.caFile} holds no PEM certificate`);
    ca = [...rootCertificates, pem];
  }
  return {
    allowlist: [...allow],
    ...(ca ? { ca } : {}),
    describe: `DEVELOPMENT webhook targets past the SSRF guard: ${shown.join(', ')}${cfg.caFile ? `; also trusting ${cfg.caFile}` : ''} (never in production)`,
  };
}

/**
 * loadDevTargets for an entry point (the service, a worker) from its environment: a bad setting is a configuration
 * error, printed, and the process exits with 2 before anything is built.
 */
export async function devTargetsFromEnvOrExit(env: { WEBHOOK_DEV_TARGETS?: string; WEBHOOK_DEV_CA?: string; NODE_ENV?: string }): Promise<DevTargets | null> {
  try {
    return await loadDevTargets({ targets: env.WEBHOOK_DEV_TARGETS, caFile: env.WEBHOOK_DEV_CA, production: env.NODE_ENV === 'production' });
  } catch (e) {
    if (!(e instanceof DevTargetsError)) throw e;
    console.error(`configuration error: ${e.message}`);
    process.exit(2);
  }
}
