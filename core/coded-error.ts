/**
 * An error a surface may show its caller as is: an HTTP status, a code and a message (and why). The gateway and
 * the webhook service throw them; the REST app maps every one to the spec's error object in one place.
 */
export class CodedError extends Error {
  readonly expose = true;
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly reason?: string,
  ) {
    super(message);
    this.name = new.target.name;
  }
}
