/**
 * The spec's error object — {error, message?, reason?, issues?, trace_id?} and nothing else — for every non-2xx JSON
 * response, and the express handlers that guarantee it: typed ApiErrors, zod issues as 400, malformed JSON as 400,
 * core errors mapped to their status, and anything unexpected as a 500 that leaks nothing but the trace id.
 */
import { randomBytes } from 'node:crypto';
import type { ErrorRequestHandler, NextFunction, Request, RequestHandler, Response } from 'express';
import { ZodError } from 'zod';
import { CodedError } from '../core/coded-error.ts';
import { MarketError } from '../core/market.ts';
import { PublicError } from '../core/public/index.ts';
import { RankingError } from '../core/rankings.ts';
import { SignalError } from '../core/signals.ts';

export interface ErrorBody {
  error: string;
  message?: string;
  reason?: string;
  issues?: unknown[];
  trace_id?: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly reason?: string,
    readonly issues?: unknown[],
  ) {
    super(message);
  }
}

export function traceId(res: Response): string {
  return String(res.locals.traceId ?? '');
}

/** Every request gets a trace id (echoed in X-Trace-Id and in error bodies). */
export const assignTraceId: RequestHandler = (_req, res, next) => {
  res.locals.traceId = randomBytes(8).toString('hex');
  res.setHeader('X-Trace-Id', res.locals.traceId);
  next();
};

export function sendError(res: Response, status: number, body: Omit<ErrorBody, 'trace_id'>): void {
  const out: ErrorBody = { error: body.error };
  if (body.message !== undefined) out.message = body.message;
  if (body.reason !== undefined) out.reason = body.reason;
  if (body.issues !== undefined) out.issues = body.issues;
  out.trace_id = traceId(res);
  res.status(status).type('application/json').send(JSON.stringify(out));
}

/** zod issues in a stable, client-safe form (path, code, message). */
export function zodIssues(e: ZodError): unknown[] {
  return e.issues.map((i) => ({ path: i.path.map(String), code: i.code, message: i.message }));
}

function mapError(err: unknown): { status: number; body: Omit<ErrorBody, 'trace_id'> } {
  if (err instanceof ApiError) return { status: err.status, body: { error: err.code, message: err.message, reason: err.reason, issues: err.issues } };
  if (err instanceof ZodError) return { status: 400, body: { error: 'invalid_request', message: 'the request does not match the schema', issues: zodIssues(err) } };
  if (err instanceof RankingError) {
    switch (err.code) {
      case 'unknown_preset':
        return { status: 404, body: { error: 'not_found', message: err.message, reason: `valid presets: ${(err.details.valid as string[]).join(', ')}` } };
      case 'invalid_extra_metrics':
        return { status: 400, body: { error: 'invalid_extra_metrics', message: err.message, reason: `valid metric ids: ${(err.details.valid as string[]).join(', ')}` } };
      case 'invalid_ranking':
        return { status: 400, body: { error: 'invalid_request', message: err.message, issues: (err.details.issues as ZodError['issues'] | undefined)?.map((i) => ({ path: i.path.map(String), code: i.code, message: i.message })) } };
      case 'analytics_missing':
        return { status: 503, body: { error: 'analytics_missing', message: err.message } };
    }
  }
  if (err instanceof SignalError) return { status: 503, body: { error: 'analytics_missing', message: err.message } };
  if (err instanceof PublicError || err instanceof MarketError) {
    if (err.code === 'not_found') return { status: 404, body: { error: 'not_found', message: err.message } };
    return { status: 503, body: { error: 'analytics_missing', message: err.message } };
  }
  // the gateway and the webhook service throw coded errors that carry their own status and code
  if (err instanceof CodedError && ((err.status >= 400 && err.status < 500) || err.status === 503)) return { status: err.status, body: { error: err.code, message: err.message, reason: err.reason } };
  // express/body-parser errors carry a status and a type
  const e = err as { status?: number; statusCode?: number; type?: string };
  const status = e?.status ?? e?.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    const code = e.type === 'entity.parse.failed' ? 'invalid_json' : e.type === 'entity.too.large' ? 'payload_too_large' : 'bad_request';
    return { status, body: { error: code, message: code === 'invalid_json' ? 'the body is not valid JSON' : 'the request cannot be read' } };
  }
  return { status: 500, body: { error: 'internal', message: 'internal error; quote the trace id when reporting it' } };
}

export const errorHandler: ErrorRequestHandler = (err: unknown, _req: Request, res: Response, _next: NextFunction) => {
  const { status, body } = mapError(err);
  if (status === 500) console.error(`[${traceId(res)}]`, err);
  if (res.headersSent) return;
  sendError(res, status, body);
};

export const notFound: RequestHandler = (req, res) => {
  sendError(res, 404, { error: 'not_found', message: `no route ${req.method} ${req.path}` });
};
