/**
 * A keep-alive client is not reset when the service's event loop stalls: a request sent on an idle connection as the
 * loop resumes from a stall longer than Node's default keep-alive timeout (5 s) is answered. The control shows the
 * race is real: the same app with a keep-alive timeout shorter than the stall resets that request (ECONNRESET) —
 * what `bench:freshness` saw at full scale (web-api/keep-alive.ts).
 */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { healthOnlyApp } from '../../web-api/health.ts';
import { KEEP_ALIVE_TIMEOUT_MS, keepIdleConnections } from '../../web-api/keep-alive.ts';

const servers: Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

async function serve(configure: (s: Server) => Server): Promise<string> {
  const server = configure(healthOnlyApp({ role: 'api', checks: [], draining: () => false }).listen(0, '127.0.0.1'));
  servers.push(server);
  await new Promise((r) => server.once('listening', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/healthz`;
}

/** One request, then the next 250 ms later on the same connection while the event loop is held `stallMs`. */
async function afterStall(url: string, stallMs: number): Promise<number | string> {
  await (await fetch(url)).text();
  const next = new Promise<number | string>((resolve) =>
    setTimeout(() => {
      fetch(url).then(
        async (r) => {
          await r.text();
          resolve(r.status);
        },
        (e: Error & { cause?: { code?: string } }) => resolve(e.cause?.code ?? e.message),
      );
    }, 250),
  );
  const until = Date.now() + stallMs;
  while (Date.now() < until); // a synchronous step holding the loop, as a refresh's can
  return next;
}

describe('keep-alive connections across an event-loop stall', () => {
  it('the control: a stall longer than the keep-alive timeout (and the second Node waits past it) resets the next request', async () => {
    const url = await serve((s) => {
      s.keepAliveTimeout = 3_000;
      return s;
    });
    expect(await afterStall(url, 4_500)).toBe('ECONNRESET');
  }, 20_000);

  it("the service's servers answer it after a stall past Node's default 5 s (and its second)", async () => {
    const url = await serve(keepIdleConnections);
    expect(KEEP_ALIVE_TIMEOUT_MS).toBeGreaterThan(60_000);
    expect(await afterStall(url, 7_000)).toBe(200);
  }, 20_000);
});
