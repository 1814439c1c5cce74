import type { IncomingMessage, ServerResponse } from 'node:http';
import https from 'node:https';
import net, { type AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ALLOWED_PORTS,
  DEFAULT_MAX_RESPONSE_BYTES,
  DEFAULT_TIMEOUT_MS,
  isPublicUnicast,
  parseTarget,
  pinnedPost,
  resolveTarget,
  type Lookup,
} from '../../jobs/webhooks/ssrf.ts';
import { selfSignedCert } from '../helpers/tls.ts';

const fixed =
  (...addresses: string[]): Lookup =>
  async () =>
    addresses.map((address) => ({ address, family: net.isIP(address) }));

// ---------------------------------------------------------------------------------------------------------------
describe('isPublicUnicast', () => {
  const refused: Record<string, string[]> = {
    unspecified: ['0.0.0.0', '::', '0:0:0:0:0:0:0:0'],
    'this network 0/8': ['0.1.2.3', '0.255.255.255'],
    loopback: ['127.0.0.1', '127.0.0.2', '127.255.255.254', '::1', '0:0:0:0:0:0:0:1'],
    private: ['10.0.0.1', '10.255.255.255', '172.16.0.1', '172.31.255.255', '192.168.0.1', '192.168.255.255'],
    'link-local': ['169.254.0.1', '169.254.169.254', '169.254.255.255', 'fe80::1', 'FE80::1', 'febf:ffff::1'],
    'CGNAT 100.64/10': ['100.64.0.1', '100.100.100.200', '100.127.255.255'],
    multicast: ['224.0.0.1', '233.252.0.1', '239.255.255.250', 'ff02::1', 'ff0e::1', 'ff05::1:3'],
    broadcast: ['255.255.255.255'],
    'reserved 240/4': ['240.0.0.1', '250.1.2.3', '254.255.255.255'],
    benchmarking: ['198.18.0.1', '198.19.255.255', '2001:2::1'],
    documentation: ['192.0.2.1', '198.51.100.7', '203.0.113.255', '2001:db8::1', '2001:0db8:85a3::8a2e:370:7334', '3fff::1', '3fff:fff::1'],
    'IETF 192.0.0/24': ['192.0.0.1', '192.0.0.8', '192.0.0.170'],
    '6to4 (refused outright)': ['2002:7f00:1::1', '2002:c0a8:101::1', '2002:808:808::1', '192.88.99.1'],
    'Teredo and other 2001::/23': ['2001:0:4136:e378:8000:63bf:3fff:fdd2', '2001::1', '2001:10::1', '2001:1ff:ffff::1'],
    'NAT64 embedding a non-public v4, local-use NAT64': ['64:ff9b::7f00:1', '64:ff9b::127.0.0.1', '64:ff9b::a00:1', '64:ff9b::169.254.169.254', '64:ff9b:1::808:808'],
    'IPv4-mapped': ['::ffff:127.0.0.1', '::ffff:7f00:1', '::FFFF:7F00:1', '::ffff:169.254.169.254', '::ffff:10.0.0.1', '::ffff:8.8.8.8', '0:0:0:0:0:ffff:7f00:1'],
    'IPv4-compatible / SIIT': ['::127.0.0.1', '::7f00:1', '::8.8.8.8', '::ffff:0:7f00:1', '::ffff:0:808:808'],
    'ULA fc00::/7': ['fc00::1', 'fd00::1', 'fd12:3456:789a::1', 'fdff:ffff::1'],
    'site-local fec0::/10': ['fec0::1', 'feff::1'],
    'discard 100::/64': ['100::1', '100::ffff:ffff:ffff:ffff'],
    'other non-global v6': ['4000::1', '1000::1', '::2', '8000::1', 'e000::1'],
    'not a canonical IP': ['', 'localhost', 'example.com', '127.1', '0127.0.0.1', '127.0.0.01', '2130706433', '0x7f000001', '1.2.3.4.5', '1.2.3', ' 8.8.8.8', '8.8.8.8 ', 'fe80::1%eth0', '2606:4700:4700::1111%1', ':::1', '2606:4700:4700:::1111', '[8.8.8.8]', '256.1.1.1'],
  };
  for (const [cls, ips] of Object.entries(refused)) {
    it(`refuses ${cls}`, () => {
      for (const ip of ips) expect(isPublicUnicast(ip), ip).toBe(false);
    });
  }

  it('accepts public unicast, including the edges next to the refused ranges', () => {
    const ok = [
      '8.8.8.8', '1.1.1.1', '93.184.216.34', '1.0.0.0', '9.255.255.255', '11.0.0.0', '100.63.255.255', '100.128.0.0',
      '126.255.255.255', '128.0.0.0', '169.253.255.255', '169.255.0.0', '172.15.255.255', '172.32.0.0', '192.0.1.0',
      '192.0.3.0', '192.167.255.255', '192.169.0.0', '198.17.255.255', '198.20.0.0', '198.51.99.255', '203.0.112.255',
      '223.255.255.255',
      '2606:4700:4700::1111', '[2606:4700:4700::1111]', '2001:4860:4860::8888', '2a00:1450:4001:80b::200e', '2001:200::1',
      '2c0f:fb50:4003::1', '3ffe::1', '3ffe:ffff::1',
      '64:ff9b::808:808', '64:ff9b::8.8.8.8', '64:ff9b::1.1.1.1',
    ];
    for (const ip of ok) expect(isPublicUnicast(ip), ip).toBe(true);
  });

  it('properties: mapped/compatible forms are never public; NAT64 follows its embedded v4 (fast-check)', () => {
    fc.assert(
      fc.property(fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)), (o) => {
        const v4 = o.join('.');
        const hex = `${((o[0] << 8) | o[1]).toString(16)}:${((o[2] << 8) | o[3]).toString(16)}`;
        expect(isPublicUnicast(`::ffff:${v4}`)).toBe(false);
        expect(isPublicUnicast(`::ffff:${hex}`)).toBe(false);
        expect(isPublicUnicast(`::${v4}`)).toBe(false);
        expect(isPublicUnicast(`64:ff9b::${v4}`)).toBe(isPublicUnicast(v4));
        expect(isPublicUnicast(`64:ff9b::${hex}`)).toBe(isPublicUnicast(v4));
        if (o[0] === 10 || o[0] === 127 || o[0] === 0 || o[0] >= 224 || (o[0] === 192 && o[1] === 168) || (o[0] === 169 && o[1] === 254)) {
          expect(isPublicUnicast(v4)).toBe(false);
        }
      }),
      { numRuns: 3000 },
    );
  });
});

// ---------------------------------------------------------------------------------------------------------------
describe('parseTarget', () => {
  const refused: Array<[string, string]> = [
    ['http://example.com', 'plain http'],
    ['http://example.com:443/', 'plain http on 443'],
    ['ftp://example.com', 'other scheme'],
    ['javascript:alert(1)', 'other scheme'],
    ['https:example.com', 'no authority slashes (WHATWG would accept it)'],
    ['https:/example.com', 'one slash'],
    ['https:\\\\example.com', 'backslashes'],
    ['https://example.com\\@127.0.0.1/', 'backslash authority confusion'],
    ['', 'empty'],
    ['https://' + 'a'.repeat(60) + '.' + 'b'.repeat(2100) + '.com', 'too long'],
    ['https://localhost', 'localhost'],
    ['https://localhost:8443/x', 'localhost on an allowed port'],
    ['https://LOCALHOST', 'localhost, upper case'],
    ['https://ｌｏｃａｌｈｏｓｔ', 'fullwidth localhost'],
    ['https://app.localhost', '*.localhost'],
    ['https://localhost.', 'localhost with trailing dot'],
    ['https://example.com.', 'trailing dot'],
    ['https://metadata', 'single-label name'],
    ['https://metadata.google.internal/computeMetadata/v1/', '.internal'],
    ['https://printer.local', '.local (mDNS)'],
    ['https://router.home.arpa', '.home.arpa'],
    ['https://1.0.0.127.in-addr.arpa', '.arpa'],
    ['https://ex_ample.com', 'underscore'],
    ['https://-example.com', 'leading hyphen'],
    ['https://example.123', 'numeric TLD'],
    ['https://foo.0x7f', 'hex TLD'],
    ['https://[::ffff:127.0.0.1]', 'IPv4-mapped loopback'],
    ['https://[::ffff:7f00:1]', 'IPv4-mapped loopback, hex'],
    ['https://[::1]/', 'IPv6 loopback'],
    ['https://[fe80::1]/', 'IPv6 link-local'],
    ['https://[fd00::1]/', 'ULA'],
    ['https://[2001:db8::1]/', 'IPv6 documentation'],
    ['https://[64:ff9b::a9fe:a9fe]/', 'NAT64 of the metadata address'],
    ['https://[fe80::1%25eth0]/', 'zone id'],
    ['https://0x7f000001', 'hex dword'],
    ['https://0X7F000001', 'hex dword, upper case'],
    ['https://2130706433', 'decimal dword'],
    ['https://0x7f.1', 'hex short form'],
    ['https://017700000001', 'octal dword'],
    ['https://0177.0.0.1', 'octal octet'],
    ['https://127.1', 'short form'],
    ['https://127.0.1', 'short form, three parts'],
    ['https://0', 'zero'],
    ['https://1.2.3', 'short form that normalizes to a PUBLIC address (1.2.0.3)'],
    ['https://134744072', 'decimal dword of public 8.8.8.8'],
    ['https://0x08080808', 'hex dword of public 8.8.8.8'],
    ['https://8.8.8.8.', 'trailing dot on an IP'],
    ['https://%31%32%37.0.0.1', 'percent-encoded host'],
    ['https://127.0.0.1%2e', 'percent-encoded dot'],
    ['https://１２７.０.０.１', 'fullwidth digits'],
    ['https://127.0.0.1', 'loopback literal'],
    ['https://10.0.0.1/hook', 'private literal'],
    ['https://169.254.169.254/latest', 'cloud metadata'],
    ['https://169.254.169.254/latest/meta-data/iam/security-credentials/', 'cloud metadata'],
    ['https://100.100.100.200/', 'CGNAT literal (Alibaba metadata)'],
    ['https://user:pass@example.com', 'userinfo'],
    ['https://user@example.com', 'username only'],
    ['https://:@example.com', 'empty userinfo'],
    ['https://example.com@evil.com', 'userinfo confusion'],
    ['https://example.com:22', 'ssh port'],
    ['https://example.com:80', 'port 80'],
    ['https://example.com:6379', 'redis port'],
    ['https://example.com:0', 'port 0'],
    ['https://example.com:', 'empty port'],
    ['https://example.com:99999', 'port out of range'],
    ['https://8.8.8.8:8080', 'public IP, other port'],
    ['https://exa\tmple.com', 'tab (WHATWG strips it)'],
    ['https://127.0.0.\n1', 'newline (WHATWG strips it)'],
    [' https://example.com', 'leading space (WHATWG trims it)'],
    ['https://example.com ', 'trailing space'],
    ['https://example.com/\u0000', 'NUL'],
    ['https://', 'no host'],
    ['https:///path', 'empty host'],
  ];
  for (const [url, why] of refused) {
    it(`refuses ${JSON.stringify(url).slice(0, 60)} (${why})`, () => {
      const r = parseTarget(url);
      expect(r.ok, JSON.stringify(r)).toBe(false);
    });
  }

  it('documents what WHATWG URL does to numeric hosts (why the raw form is checked too)', () => {
    expect(new URL('https://2130706433').hostname).toBe('127.0.0.1');
    expect(new URL('https://0x7f.1').hostname).toBe('127.0.0.1');
    expect(new URL('https://017700000001').hostname).toBe('127.0.0.1');
    expect(new URL('https://127.1').hostname).toBe('127.0.0.1');
    expect(new URL('https://1.2.3').hostname).toBe('1.2.0.3');
    expect(new URL('https://[::ffff:127.0.0.1]').hostname).toBe('[::ffff:7f00:1]');
    expect(parseTarget('https://1.2.3')).toEqual({ ok: false, reason: 'non_canonical_ip' });
    expect(parseTarget('https://134744072')).toEqual({ ok: false, reason: 'non_canonical_ip' });
    expect(parseTarget('https://0x7f000001')).toEqual({ ok: false, reason: 'non_canonical_ip' });
  });

  it('gives specific reasons', () => {
    expect(parseTarget('http://example.com')).toEqual({ ok: false, reason: 'https_only' });
    expect(parseTarget('https://u:p@example.com')).toEqual({ ok: false, reason: 'userinfo_not_allowed' });
    expect(parseTarget('https://example.com:8080')).toEqual({ ok: false, reason: 'port_not_allowed' });
    expect(parseTarget('https://169.254.169.254/latest')).toEqual({ ok: false, reason: 'ip_not_public' });
    expect(parseTarget('https://localhost')).toEqual({ ok: false, reason: 'single_label_host' });
    expect(parseTarget('https://a.localhost')).toEqual({ ok: false, reason: 'special_use_name' });
  });

  it('accepts public targets on 443 and 8443', () => {
    expect(ALLOWED_PORTS).toEqual([443, 8443]);
    const ok: Array<[string, string]> = [
      ['https://hooks.example.com/webhook', 'hooks.example.com'],
      ['https://HOOKS.Example.COM/x?y=1#frag', 'hooks.example.com'],
      ['HTTPS://example.com', 'example.com'],
      ['https://example.com:443/a', 'example.com'],
      ['https://example.com:8443/a?b=c', 'example.com'],
      ['https://a-b.c-d.example.co.uk/p', 'a-b.c-d.example.co.uk'],
      ['https://8.8.8.8/hook', '8.8.8.8'],
      ['https://[2606:4700:4700::1111]/x', '[2606:4700:4700::1111]'],
      ['https://[2606:4700:4700:0:0:0:0:1111]/x', '[2606:4700:4700::1111]'],
      ['https://bücher.example/hook', 'xn--bcher-kva.example'],
      ['https://xn--bcher-kva.example/hook', 'xn--bcher-kva.example'],
      ['https://0x7f.example.com', '0x7f.example.com'],
    ];
    for (const [url, host] of ok) {
      const r = parseTarget(url);
      expect(r.ok, `${url} ${JSON.stringify(r)}`).toBe(true);
      if (r.ok) expect(r.url.hostname).toBe(host);
    }
  });

  it('an explicit test allowlist (host:port) relaxes host and port rules for that exact host:port only', () => {
    expect(parseTarget('https://localhost:4443/x', { allowlist: ['localhost:4443'] }).ok).toBe(true);
    expect(parseTarget('https://127.0.0.1:4443/x', { allowlist: new Set(['127.0.0.1:4443']) }).ok).toBe(true);
    expect(parseTarget('https://[::1]:4443/x', { allowlist: ['[0:0::1]:4443'] }).ok).toBe(true);
    expect(parseTarget('https://localhost:4444/x', { allowlist: ['localhost:4443'] }).ok).toBe(false);
    expect(parseTarget('https://127.0.0.1:4443/x', { allowlist: ['localhost:4443'] }).ok).toBe(false);
    expect(parseTarget('https://2130706433:4443/x', { allowlist: ['localhost:4443'] }).ok).toBe(false);
    // https and no userinfo are never relaxed
    expect(parseTarget('http://localhost:4443/x', { allowlist: ['localhost:4443'] }).ok).toBe(false);
    expect(parseTarget('https://u@localhost:4443/x', { allowlist: ['localhost:4443'] }).ok).toBe(false);
  });

  it('never throws (fast-check)', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.webUrl(), fc.string().map((s) => `https://${s}`)), (s) => {
        const r = parseTarget(s);
        if (r.ok) expect(r.url.protocol).toBe('https:');
        return true;
      }),
      { numRuns: 2000 },
    );
  });
});

// ---------------------------------------------------------------------------------------------------------------
describe('resolveTarget', () => {
  it('refuses a name that resolves to a private address', async () => {
    expect(await resolveTarget('hooks.example.com', { lookup: fixed('10.0.0.5') })).toMatchObject({ ok: false, reason: expect.stringContaining('10.0.0.5') });
    expect(await resolveTarget('hooks.example.com', { lookup: fixed('127.0.0.1') })).toMatchObject({ ok: false });
    expect(await resolveTarget('hooks.example.com', { lookup: fixed('169.254.169.254') })).toMatchObject({ ok: false });
    expect(await resolveTarget('hooks.example.com', { lookup: fixed('::ffff:127.0.0.1') })).toMatchObject({ ok: false });
    expect(await resolveTarget('hooks.example.com', { lookup: fixed('fd00::1') })).toMatchObject({ ok: false });
  });

  it('refuses when ANY address is not public (A and AAAA), whatever the order', async () => {
    expect(await resolveTarget('mixed.example.com', { lookup: fixed('93.184.216.34', '10.0.0.1') })).toMatchObject({ ok: false });
    expect(await resolveTarget('mixed.example.com', { lookup: fixed('10.0.0.1', '93.184.216.34') })).toMatchObject({ ok: false });
    expect(await resolveTarget('mixed.example.com', { lookup: fixed('93.184.216.34', '2606:4700::1', 'fe80::1') })).toMatchObject({ ok: false });
    expect(await resolveTarget('mixed.example.com', { lookup: fixed('2606:4700::1', '::1') })).toMatchObject({ ok: false });
  });

  it('accepts all-public answers and returns the first (the one that will be dialed)', async () => {
    expect(await resolveTarget('hooks.example.com', { lookup: fixed('93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946') })).toEqual({
      ok: true,
      address: '93.184.216.34',
      family: 4,
      addresses: ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'],
    });
    expect(await resolveTarget('v6.example.com', { lookup: fixed('2606:4700::1') })).toMatchObject({ ok: true, address: '2606:4700::1', family: 6 });
  });

  it('refuses lookup failures, empty and garbage answers', async () => {
    const fail: Lookup = async () => {
      throw Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' });
    };
    expect(await resolveTarget('nope.example.com', { lookup: fail })).toEqual({ ok: false, reason: 'dns_error: ENOTFOUND' });
    expect(await resolveTarget('x.example.com', { lookup: fixed() })).toEqual({ ok: false, reason: 'no_addresses' });
    expect(await resolveTarget('x.example.com', { lookup: fixed('not-an-ip') })).toMatchObject({ ok: false });
    expect(await resolveTarget('x.example.com', { lookup: fixed('fe80::1%eth0') })).toMatchObject({ ok: false });
  });

  it('checks IP literals without a lookup', async () => {
    let calls = 0;
    const counting: Lookup = async () => {
      calls++;
      return [{ address: '8.8.8.8' }];
    };
    expect(await resolveTarget('8.8.8.8', { lookup: counting })).toMatchObject({ ok: true, address: '8.8.8.8' });
    expect(await resolveTarget('[2606:4700::1]', { lookup: counting })).toMatchObject({ ok: true, address: '2606:4700::1', family: 6 });
    expect(await resolveTarget('127.0.0.1', { lookup: counting })).toMatchObject({ ok: false });
    expect(calls).toBe(0);
  });

  it('the test allowlist admits an address only for its exact port', async () => {
    expect(await resolveTarget('localhost', { port: 4443, lookup: fixed('127.0.0.1'), allowlist: ['127.0.0.1:4443'] })).toMatchObject({ ok: true, address: '127.0.0.1' });
    expect(await resolveTarget('localhost', { port: 443, lookup: fixed('127.0.0.1'), allowlist: ['127.0.0.1:4443'] })).toMatchObject({ ok: false });
    expect(await resolveTarget('localhost', { port: 4443, lookup: fixed('127.0.0.1', '127.0.0.2'), allowlist: ['127.0.0.1:4443'] })).toMatchObject({ ok: false });
    // a host-name entry does not admit addresses
    expect(await resolveTarget('localhost', { port: 4443, lookup: fixed('127.0.0.1'), allowlist: ['localhost:4443'] })).toMatchObject({ ok: false });
  });
});

// ---------------------------------------------------------------------------------------------------------------
describe('pinnedPost against loopback HTTPS receivers', () => {
  interface Hit {
    method: string;
    url: string;
    host: string | undefined;
    body: string;
    headers: IncomingMessage['headers'];
  }
  interface Receiver {
    port: number;
    hits: Hit[];
    server: https.Server;
  }
  let cert: { key: string; cert: string };
  const servers: Array<https.Server | net.Server> = [];

  async function receiver(host: string, port: number, handler: (req: IncomingMessage, res: ServerResponse, hit: Hit) => void): Promise<Receiver> {
    const hits: Hit[] = [];
    const server = https.createServer({ key: cert.key, cert: cert.cert }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const hit: Hit = { method: req.method ?? '', url: req.url ?? '', host: req.headers.host, body: Buffer.concat(chunks).toString('utf8'), headers: req.headers };
        hits.push(hit);
        handler(req, res, hit);
      });
    });
    servers.push(server);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve());
    });
    return { port: (server.address() as AddressInfo).port, hits, server };
  }

  let good: Receiver; // 127.0.0.1:P
  let evil: Receiver; // 127.0.0.2:P (same port, so only the dialed address tells them apart)
  let redirectTarget: Receiver;
  let bigBodyClosed: Promise<void>;
  let markBigBodyClosed: () => void = () => {};
  let P = 0;
  let allow: string[] = [];
  const toLocal = fixed('127.0.0.1');

  beforeAll(async () => {
    cert = await selfSignedCert();
    bigBodyClosed = new Promise((r) => (markBigBodyClosed = r));
    redirectTarget = await receiver('127.0.0.1', 0, (_req, res) => res.writeHead(204).end());
    good = await receiver('127.0.0.1', 0, (req, res) => {
      const path = req.url ?? '/';
      if (path.startsWith('/ok')) res.writeHead(204).end();
      else if (path.startsWith('/500')) res.writeHead(500).end('nope');
      else if (path.startsWith('/redirect/')) {
        const code = Number(path.split('/')[2]);
        res.writeHead(code, { location: `https://127.0.0.1:${redirectTarget.port}/stolen` }).end();
      } else if (path.startsWith('/hang')) {
        /* never answer */
      } else if (path.startsWith('/big')) {
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        const chunk = Buffer.alloc(16 * 1024, 0x61);
        let stopped = false;
        res.on('close', () => {
          stopped = true;
          markBigBodyClosed();
        });
        const pump = () => {
          while (!stopped && res.write(chunk)) {
            /* keep writing until back-pressure */
          }
          if (!stopped) res.once('drain', pump);
        };
        pump();
      } else res.writeHead(404).end();
    });
    P = good.port;
    evil = await receiver('127.0.0.2', P, (_req, res) => res.writeHead(204).end());
    allow = [`localhost:${P}`, `127.0.0.1:${P}`, `127.0.0.1:${redirectTarget.port}`];
  });

  afterAll(async () => {
    for (const s of servers) {
      if (s instanceof https.Server) s.closeAllConnections();
      await new Promise<void>((r) => s.close(() => r()));
    }
  });

  it('delivers to the checked address with the original Host, SNI and body', async () => {
    const body = JSON.stringify({ type: 'service.test', emitted_at: new Date().toISOString(), data: {} });
    const before = good.hits.length;
    const r = await pinnedPost(`https://localhost:${P}/ok?x=1`, body, { 'content-type': 'application/json', 'x-service-event-id': 'evt_1' }, { allowlist: allow, lookup: toLocal, ca: cert.cert });
    expect(r).toEqual({ status: 204, ok: true, address: '127.0.0.1' });
    const hit = good.hits[before]!;
    expect(hit).toMatchObject({ method: 'POST', url: '/ok?x=1', host: `localhost:${P}`, body });
    expect(hit.headers['user-agent']).toBe('Service-Webhook/1.0');
    expect(hit.headers['content-length']).toBe(String(Buffer.byteLength(body)));
    expect(hit.headers['x-service-event-id']).toBe('evt_1');
  });

  it('delivers to an allowlisted IP literal (certificate checked against its IP SAN)', async () => {
    const r = await pinnedPost(`https://127.0.0.1:${P}/ok`, '{}', { 'user-agent': 'Custom/2' }, { allowlist: allow, ca: cert.cert });
    expect(r).toMatchObject({ status: 204, ok: true, address: '127.0.0.1' });
    expect(good.hits.at(-1)!.headers['user-agent']).toBe('Custom/2');
  });

  it('DNS rebinding: a lookup answering public first and private later still connects to the first checked address', async () => {
    let calls = 0;
    const rebinding: Lookup = async () => {
      calls++;
      return [{ address: calls === 1 ? '127.0.0.1' : '127.0.0.2', family: 4 }];
    };
    const goodBefore = good.hits.length;
    const evilBefore = evil.hits.length;
    for (let i = 0; i < 3; i++) {
      calls = 0;
      const r = await pinnedPost(`https://localhost:${P}/ok`, '{}', {}, { allowlist: allow, lookup: rebinding, ca: cert.cert });
      expect(r).toMatchObject({ ok: true, status: 204, address: '127.0.0.1' });
      expect(calls).toBe(1);
    }
    expect(good.hits.length - goodBefore).toBe(3);
    expect(evil.hits.length - evilBefore).toBe(0);
  });

  it('control: a check-then-connect-by-name client IS fooled by the same lookup (so the test above has teeth)', async () => {
    let calls = 0;
    const rebinding: Lookup = async () => {
      calls++;
      return [{ address: calls === 1 ? '127.0.0.1' : '127.0.0.2', family: 4 }];
    };
    const check = await resolveTarget('localhost', { port: P, lookup: rebinding, allowlist: allow });
    expect(check).toMatchObject({ ok: true, address: '127.0.0.1' });
    const evilBefore = evil.hits.length;
    const status = await new Promise<number>((resolve, reject) => {
      const req = https.request(
        {
          host: 'localhost',
          port: P,
          method: 'POST',
          path: '/',
          ca: cert.cert,
          agent: false,
          // a by-name connect resolves again (Node 20 asks for all addresses when autoSelectFamily is on)
          lookup: ((hostname: string, opts: { all?: boolean }, cb: (e: Error | null, a: unknown, f?: number) => void) => {
            rebinding(hostname).then(
              (a) => (opts.all ? cb(null, [{ address: a[0]!.address, family: 4 }]) : cb(null, a[0]!.address, 4)),
              (e: Error) => cb(e, '', 4),
            );
          }) as unknown as net.LookupFunction,
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end('{}');
    });
    expect(status).toBe(204);
    expect(evil.hits.length - evilBefore).toBe(1);
  });

  it('refuses, without connecting, a name whose lookup returns a non-public address', async () => {
    const before = good.hits.length + evil.hits.length;
    // the host name is allowlisted (syntax), the address is not
    const r1 = await pinnedPost(`https://localhost:${P}/ok`, '{}', {}, { allowlist: [`localhost:${P}`], lookup: toLocal, ca: cert.cert });
    expect(r1).toMatchObject({ ok: false, status: 0, error: expect.stringContaining('address_not_public: 127.0.0.1') });
    expect(r1.address).toBeUndefined();
    // one allowlisted and one private address
    const r2 = await pinnedPost(`https://localhost:${P}/ok`, '{}', {}, { allowlist: allow, lookup: fixed('127.0.0.1', '10.1.2.3'), ca: cert.cert });
    expect(r2).toMatchObject({ ok: false, status: 0, error: expect.stringContaining('10.1.2.3') });
    // a loopback literal that is not allowlisted
    const r3 = await pinnedPost(`https://127.0.0.1:${P}/ok`, '{}', {}, { ca: cert.cert });
    expect(r3).toMatchObject({ ok: false, status: 0, error: 'refused: port_not_allowed' });
    const r4 = await pinnedPost(`https://127.0.0.1/ok`, '{}', {}, { ca: cert.cert });
    expect(r4).toMatchObject({ ok: false, status: 0, error: 'refused: ip_not_public' });
    // a public-looking name that resolves to loopback, on a normal port
    const r5 = await pinnedPost('https://hooks.example.com/ok', '{}', {}, { lookup: toLocal });
    expect(r5).toMatchObject({ ok: false, status: 0, error: expect.stringContaining('address_not_public') });
    expect(good.hits.length + evil.hits.length).toBe(before);
  });

  it('verifies the certificate (no custom CA means the self-signed receiver is refused)', async () => {
    const r = await pinnedPost(`https://localhost:${P}/ok`, '{}', {}, { allowlist: allow, lookup: toLocal });
    expect(r.ok).toBe(false);
    expect(r.status).toBe(0);
    expect(r.error).toMatch(/SELF_SIGNED|self[- ]signed|certificate/i);
  });

  for (const code of [301, 302, 303, 307, 308]) {
    it(`does not follow a ${code} redirect: failure, and the Location target is never contacted`, async () => {
      const before = redirectTarget.hits.length;
      const r = await pinnedPost(`https://localhost:${P}/redirect/${code}`, '{}', {}, { allowlist: allow, lookup: toLocal, ca: cert.cert });
      expect(r).toMatchObject({ ok: false, status: code, error: `redirect not followed (${code})` });
      await new Promise((res) => setTimeout(res, 50));
      expect(redirectTarget.hits.length).toBe(before);
    });
  }

  it('non-2xx is a failure with its status', async () => {
    expect(await pinnedPost(`https://localhost:${P}/500`, '{}', {}, { allowlist: allow, lookup: toLocal, ca: cert.cert })).toMatchObject({ ok: false, status: 500, error: 'http 500' });
  });

  it('enforces the timeout on a receiver that never answers', async () => {
    expect(DEFAULT_TIMEOUT_MS).toBe(10_000);
    const t0 = Date.now();
    const r = await pinnedPost(`https://localhost:${P}/hang`, '{}', {}, { allowlist: allow, lookup: toLocal, ca: cert.cert, timeoutMs: 400 });
    const took = Date.now() - t0;
    expect(r).toMatchObject({ ok: false, status: 0, error: 'timeout after 400 ms' });
    expect(took).toBeGreaterThanOrEqual(390);
    expect(took).toBeLessThan(2000);
  });

  it('enforces the timeout on a TCP peer that never completes the TLS handshake', async () => {
    const sockets: net.Socket[] = [];
    const silent = net.createServer((s) => sockets.push(s));
    servers.push(silent);
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
    const port = (silent.address() as AddressInfo).port;
    const t0 = Date.now();
    const r = await pinnedPost(`https://localhost:${port}/`, '{}', {}, { allowlist: [`localhost:${port}`, `127.0.0.1:${port}`], lookup: toLocal, ca: cert.cert, timeoutMs: 300 });
    expect(r).toMatchObject({ ok: false, status: 0, error: 'timeout after 300 ms' });
    expect(Date.now() - t0).toBeLessThan(2000);
    for (const s of sockets) s.destroy();
  });

  it('counts DNS time against the same deadline', async () => {
    const never: Lookup = () => new Promise(() => {});
    const t0 = Date.now();
    const r = await pinnedPost('https://slow-dns.example.com/', '{}', {}, { lookup: never, timeoutMs: 200 });
    expect(r).toMatchObject({ ok: false, status: 0, error: expect.stringContaining('timeout') });
    expect(Date.now() - t0).toBeLessThan(1500);
  });

  it('caps the response body: an endless 200 body is cut off and the result comes back promptly', async () => {
    expect(DEFAULT_MAX_RESPONSE_BYTES).toBe(64 * 1024);
    const t0 = Date.now();
    const r = await pinnedPost(`https://localhost:${P}/big`, '{}', {}, { allowlist: allow, lookup: toLocal, ca: cert.cert, timeoutMs: 5000 });
    expect(r).toEqual({ status: 200, ok: true, address: '127.0.0.1' });
    expect(Date.now() - t0).toBeLessThan(2500);
    // the client hung up on the endless stream
    await expect(Promise.race([bigBodyClosed.then(() => 'closed'), new Promise((res) => setTimeout(() => res('still open'), 2000))])).resolves.toBe('closed');
  });

  it('never throws: garbage URLs and bad headers come back as errors', async () => {
    expect(await pinnedPost('not a url', '{}', {})).toMatchObject({ ok: false, status: 0 });
    expect(await pinnedPost(`https://localhost:${P}/ok`, '{}', { 'x-bad': 'line\r\nbreak' }, { allowlist: allow, lookup: toLocal, ca: cert.cert })).toMatchObject({
      ok: false,
      status: 0,
      error: expect.stringContaining('error'),
    });
  });
});
