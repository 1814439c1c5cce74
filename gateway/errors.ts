/** The gateway's errors: coded values (core/coded-error.ts) that the app mounting the gateway maps to the error object. */
import { CodedError } from '../core/coded-error.ts';

export class GatewayError extends CodedError {}
