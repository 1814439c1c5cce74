/**
 * Test helper: a throwaway self-signed EC certificate for loopback HTTPS receivers (CN=localhost, SAN DNS:localhost and
 * IP:127.0.0.1, valid one day), made with the system openssl in a temp dir. Cached per process.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

let cached: Promise<{ key: string; cert: string }> | null = null;

export function selfSignedCert(): Promise<{ key: string; cert: string }> {
  cached ??= (async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tls-test-'));
    try {
      const keyPath = join(dir, 'key.pem');
      const certPath = join(dir, 'cert.pem');
      await run('openssl', [
        'req', '-x509',
        '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1',
        '-nodes', '-days', '1',
        '-subj', '/CN=localhost',
        '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1',
        '-keyout', keyPath, '-out', certPath,
      ]);
      return { key: await readFile(keyPath, 'utf8'), cert: await readFile(certPath, 'utf8') };
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  })();
  cached.catch(() => {
    cached = null;
  });
  return cached;
}
