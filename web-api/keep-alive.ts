/**
 * How long the service's HTTP servers keep an idle keep-alive connection open.
 *
 * Node closes a connection idle for `keepAliveTimeout` (5 s by default). A client that sends its next request on it
 * as the server closes it gets ECONNRESET. With a live event loop the client avoids that (it drops a connection
 * idle for the server's Keep-Alive hint less a second), but when the loop is held longer than the timeout — a
 * synchronous step of an analytics refresh at full scale — the server's idle timer and the client's next request
 * fire in the same turn (Node waits about a second past the timeout), and the timer wins: `bench:freshness` at full
 * scale saw 3 resets in ~1,000 requests, and test/web-api/keep-alive.test.ts reproduces it.
 * 65 s outlasts any such stall measured (the longest: 13 s, in a full-scale refresh's boards step) and any client's own idle limit
 * (undici 4 s, browsers ~60 s, load balancers 60 s), so the client always closes first.
 * `headersTimeout` stays above it, as Node requires to avoid the same race on a request's headers.
 */
import type { Server } from 'node:http';

export const KEEP_ALIVE_TIMEOUT_MS = 65_000;

export function keepIdleConnections<S extends Server>(server: S): S {
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  server.headersTimeout = KEEP_ALIVE_TIMEOUT_MS + 1_000;
  return server;
}
