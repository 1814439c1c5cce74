/**
 * Health for load balancers and orchestrators, outside /v1 (no credential, no rate limit, never cached):
 * - GET /healthz: liveness — 200 while the process serves HTTP at all.
 * - GET /readyz: readiness — 200 when every check passes (the service database answers, the analytics state is
 *   open, the process is not draining); 503 with the spec's error object (`not_ready`, the failing checks in
 *   `reason`) otherwise, so a balancer stops sending new requests before a replica stops.
 * Both bodies name the process's role and the analytics version it serves.
 */
import express from 'express';
import { ApiError, assignTraceId, errorHandler, notFound } from './errors.ts';

export interface HealthCheck {
  name: string;
  /** resolves when healthy; a rejection's message says what is wrong */
  check(): Promise<void>;
}

export interface HealthDeps {
  role: string;
  checks: readonly HealthCheck[];
  draining: () => boolean;
  /** the analytics version this process serves (null before one is open) */
  version?: () => number | null;
  /** a check that takes longer than this fails */
  timeoutMs?: number;
}

export function healthRouter(deps: HealthDeps): express.Router {
  const r = express.Router();
  const timeout = deps.timeoutMs ?? 2000;
  const noStore = (res: express.Response) => res.setHeader('Cache-Control', 'no-store');

  r.get('/healthz', (_req, res) => {
    noStore(res);
    res.json({ status: 'ok', role: deps.role, version: deps.version?.() ?? null });
  });

  r.get('/readyz', async (_req, res) => {
    noStore(res);
    const failed: string[] = [];
    if (deps.draining()) failed.push('draining: the process is shutting down');
    await Promise.all(
      deps.checks.map(async (c) => {
        let timer: NodeJS.Timeout | undefined;
        try {
          await Promise.race([c.check(), new Promise((_, no) => (timer = setTimeout(() => no(new Error(`no answer within ${timeout} ms`)), timeout)))]);
        } catch (e) {
          failed.push(`${c.name}: ${(e as Error).message}`);
        } finally {
          clearTimeout(timer);
        }
      }),
    );
    if (failed.length) throw new ApiError(503, 'not_ready', `not ready: ${failed.length} check${failed.length > 1 ? 's' : ''} failed`, failed.join('; '));
    res.json({ status: 'ready', role: deps.role, version: deps.version?.() ?? null, checks: deps.checks.map((c) => c.name) });
  });
  return r;
}

/**
 * The whole HTTP surface of a process that serves no API (the analytics builder, a delivery worker): the health
 * endpoints, and the error object for anything else.
 */
export function healthOnlyApp(deps: HealthDeps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.use(assignTraceId);
  app.use(healthRouter(deps));
  app.use(notFound);
  app.use(errorHandler);
  return app;
}
