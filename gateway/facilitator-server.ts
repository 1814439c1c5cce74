/**
 * The x402 v1 facilitator HTTP API over any `Facilitator` (a `LocalFacilitator` run as a service, or a test double):
 *
 *   POST /verify    {x402Version: 1, paymentPayload, paymentRequirements} -> 200 {isValid, invalidReason?, payer}
 *   POST /settle    {x402Version: 1, paymentPayload, paymentRequirements} -> 200 {success, errorReason?, payer, transaction, network}
 *   GET  /supported                                                       -> 200 {kinds: [{x402Version, scheme, network}]}
 *
 * An invalid payment is a verdict, answered 200 (as x402's own `useFacilitator` client expects). A body that does not
 * match the schema is 400 `{error: 'invalid_request', message}`; malformed JSON 400 `{error: 'invalid_json'}`; a
 * body over the limit 413 `{error: 'payload_too_large'}`; anything unexpected 500 `{error: 'internal'}`.
 */
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { z } from 'zod';
import { PaymentPayload, PaymentRequirements, type Facilitator } from './payment/types.ts';

export const FacilitatorRequestBody = z.object({
  x402Version: z.literal(1),
  paymentPayload: PaymentPayload,
  paymentRequirements: PaymentRequirements,
});
export type FacilitatorRequestBody = z.infer<typeof FacilitatorRequestBody>;

function describe(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`)
    .join('; ');
}

export function facilitatorRouter(f: Facilitator, opts: { bodyLimit?: string } = {}): Router {
  const router = express.Router();
  router.use(express.json({ limit: opts.bodyLimit ?? '64kb' }));

  const parse = (req: Request, res: Response): FacilitatorRequestBody | undefined => {
    const body = FacilitatorRequestBody.safeParse(req.body);
    if (body.success) return body.data;
    res.status(400).json({ error: 'invalid_request', message: describe(body.error) });
    return undefined;
  };

  router.post('/verify', async (req, res) => {
    const body = parse(req, res);
    if (body) res.json(await f.verify(body.paymentPayload, body.paymentRequirements));
  });
  router.post('/settle', async (req, res) => {
    const body = parse(req, res);
    if (body) res.json(await f.settle(body.paymentPayload, body.paymentRequirements));
  });
  router.get('/supported', async (_req, res) => {
    res.json(await f.supported());
  });

  router.use((err: unknown, _req: Request, res: Response, next: NextFunction) => {
    if (res.headersSent) return next(err);
    const e = err as { type?: string; status?: number; message?: string };
    if (e.type === 'entity.parse.failed') return res.status(400).json({ error: 'invalid_json', message: 'the body is not valid JSON' });
    if (e.type === 'entity.too.large') return res.status(413).json({ error: 'payload_too_large', message: `the body exceeds ${opts.bodyLimit ?? '64kb'}` });
    if (typeof e.status === 'number' && e.status >= 400 && e.status < 500) return res.status(e.status).json({ error: 'invalid_request', message: e.message ?? 'bad request' });
    return res.status(500).json({ error: 'internal', message: 'the facilitator failed' });
  });
  return router;
}
