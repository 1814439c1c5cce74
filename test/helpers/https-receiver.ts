/**
 * Test helper: a webhook receiver on loopback HTTPS (self-signed certificate from tls.ts). It records every request
 * (arrival time, headers, raw body, the status it answered) and answers with `answer(headers)`, 200 by default;
 * tests change `answer` to inject failures. Reach it with the allowlist [`127.0.0.1:${port}`] and `ca`.
 */
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { selfSignedCert } from './tls.ts';

export interface ReceivedRequest {
  at: number;
  headers: Record<string, string>;
  body: string;
  status: number;
}

export interface HttpsReceiver {
  port: number;
  /** the receiver's certificate (PEM), to trust as a CA */
  ca: string;
  received: ReceivedRequest[];
  answer: (headers: Record<string, string>) => number;
  /** https://127.0.0.1:<port>/hooks */
  url: string;
  close(): Promise<void>;
}

export async function startHttpsReceiver(): Promise<HttpsReceiver> {
  const cert = await selfSignedCert();
  const server: Server = createServer({ key: cert.key, cert: cert.cert }, (req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      const headers = req.headers as Record<string, string>;
      const status = out.answer(headers);
      out.received.push({ at: Date.now(), headers, body, status });
      res.statusCode = status;
      res.end('ok');
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', () => ok()));
  const port = (server.address() as AddressInfo).port;
  const out: HttpsReceiver = {
    received: [],
    answer: () => 200,
    port,
    ca: cert.cert,
    url: `https://127.0.0.1:${port}/hooks`,
    close: () => new Promise<void>((ok) => server.close(() => ok())),
  };
  return out;
}
