/**
 * The gateway's errors: plain values with an HTTP status and a code. The app that mounts the gateway maps any
 * error with `expose: true`, a 4xx `status` and a `code` to the spec's error object (web-api/errors.ts does), so
 * the gateway needs no HTTP error plumbing of its own.
 */
export class GatewayError extends Error {
  readonly expose = true;
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly reason?: string,
  ) {
    super(message);
    this.name = 'GatewayError';
  }
}
