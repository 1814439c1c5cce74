/**
 * Webhook management (`/v1/webhooks`) and browser push subscriptions (`/v1/push/subscribe`): request validation,
 * auth and shapes here; the work is done by the webhook service (jobs/webhooks/service.ts), which main.ts passes in
 * through the WebhookApi shape (surfaces do not import each other). docs/webhooks.md has the decisions.
 *
 * A session or an API key manages subscriptions (the spec describes the cookie and lists the key on GET; an API
 * client needs all of them).
 */
import express, { type Router } from 'express';
import { z } from 'zod';
import type { PlanId } from '../core/plans.ts';
import { EventTypes, FilterJson } from '../core/webhook-filters.ts';
import { ApiError } from './errors.ts';
import { requireAuth } from './principal.ts';
import type { SubscriptionView } from '../data/webhook-store.ts';
import { DEFAULT_PUSH_EVENT_TYPES, PUSH_EVENT_TYPES } from '../data/push-store.ts';

export interface WebhookApi {
  list(userId: string): Promise<SubscriptionView[]>;
  create(userId: string, plan: PlanId, input: { target_url: string; event_types: string[]; filter_json?: Record<string, unknown>; active?: boolean }): Promise<{ subscription: SubscriptionView; secret: string }>;
  update(userId: string, id: string, patch: { target_url?: string; event_types?: string[]; filter_json?: Record<string, unknown>; active?: boolean }): Promise<SubscriptionView>;
  remove(userId: string, id: string): Promise<boolean>;
  test(userId: string, id: string): Promise<unknown>;
  rotateSecret(userId: string, id: string, graceSeconds?: number): Promise<{ id: string; secret: string; previous_secret_expires_at: string | null }>;
  deliveries(userId: string, id: string, opts: { limit: number; cursor?: string; status?: 'pending' | 'delivered' | 'exhausted' | 'dropped' }): Promise<{ rows: unknown[]; next_cursor: string | null }>;
}

export interface PushApi {
  readonly publicKey: string;
  subscribe(userId: string, sub: { endpoint: string; keys: { p256dh: string; auth: string }; event_types?: string[]; filter_json?: Record<string, unknown> }): Promise<void>;
  /** a service.test notification to each of the user's subscriptions, now */
  sendTest(userId: string): Promise<{ sent: number; failed: number; removed: number }>;
}

/** A live event type a push subscription may ask for; trader.fill is refused with the reason. */
const PushEventType = z.enum(PUSH_EVENT_TYPES, {
  error: (iss) =>
    iss.input === 'trader.fill'
      ? 'trader.fill is not available for browser push: about 68 fills per second would flood a browser (use a webhook or the /v1/stream WebSocket)'
      : `expected one of ${PUSH_EVENT_TYPES.join(', ')}`,
});

/**
 * The browser's PushSubscription JSON (the spec's push subscription body), plus two optional fields: which live
 * events to notify (`event_types`, default signal.smart_money) and a webhook-style `filter_json`. On a
 * re-subscription of the same endpoint, the fields sent replace the stored ones and the ones omitted are kept.
 */
export const PushSubscribeBody = z.strictObject({
  endpoint: z.url().max(2048),
  keys: z.strictObject({
    p256dh: z.string().regex(/^[A-Za-z0-9_-]{80,100}={0,2}$/, 'p256dh is a base64url P-256 public key'),
    auth: z.string().regex(/^[A-Za-z0-9_-]{16,32}={0,2}$/, 'auth is a base64url 16-byte secret'),
  }),
  event_types: z
    .array(PushEventType)
    .min(1)
    .max(PUSH_EVENT_TYPES.length)
    .refine((a) => new Set(a).size === a.length, 'duplicate event type')
    .optional()
    .meta({ description: `live events to notify (default ${DEFAULT_PUSH_EVENT_TYPES.join(', ')}; trader.fill is refused)`, uniqueItems: true, default: [...DEFAULT_PUSH_EVENT_TYPES] }),
  filter_json: FilterJson.optional().meta({ description: 'the webhook filter_json keys and semantics; {} matches every event of the chosen types' }),
});

const TargetUrl = z.string().min(1).max(2048);
export const CreateWebhookBody = z.strictObject({
  target_url: TargetUrl,
  event_types: EventTypes,
  filter_json: FilterJson.optional(),
  active: z.boolean().optional(),
});
export const UpdateWebhookBody = z
  .strictObject({ target_url: TargetUrl.optional(), event_types: EventTypes.optional(), filter_json: FilterJson.optional(), active: z.boolean().optional() })
  .refine((b) => Object.keys(b).length > 0, 'send at least one of target_url, event_types, filter_json, active');
/** POST /v1/webhooks/{id}/rotate-secret: how long the old secret keeps signing too (default 24 h, at most 7 days). */
export const RotateSecretBody = z.strictObject({ grace_seconds: z.number().int().min(0).max(7 * 86_400).optional() });
export const DeliveriesQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(100).default(50),
  cursor: z.string().regex(/^[0-9a-z]{1,11}$/, 'a cursor from a previous page').optional(),
  status: z.enum(['pending', 'delivered', 'exhausted', 'dropped']).optional(),
});
const SubId = z.string().regex(/^wh_[a-z2-7]{16}$/, 'not a webhook subscription id');
const NoBody = z.union([z.undefined(), z.strictObject({})]);

export function webhookRouter(api: WebhookApi, push?: PushApi): Router {
  const r = express.Router();

  if (push) {
    r.get('/push/vapid-public-key', (_req, res) => {
      requireAuth(res);
      res.json({ public_key: push.publicKey });
    });
    r.post('/push/subscribe', async (req, res) => {
      const p = requireAuth(res);
      await push.subscribe(p.userId, PushSubscribeBody.parse(req.body));
      res.json({ ok: true });
    });
    r.post('/push/test', async (req, res) => {
      const p = requireAuth(res);
      NoBody.parse(req.body);
      res.json(await push.sendTest(p.userId));
    });
  }

  r.get('/webhooks', async (_req, res) => {
    const p = requireAuth(res);
    res.json({ rows: await api.list(p.userId) });
  });

  r.post('/webhooks', async (req, res) => {
    const p = requireAuth(res);
    const body = CreateWebhookBody.parse(req.body);
    const { subscription, secret } = await api.create(p.userId, p.plan, body);
    res.setHeader('Cache-Control', 'no-store');
    res.status(201).json({ ...subscription, secret });
  });

  r.put('/webhooks/:id', async (req, res) => {
    const p = requireAuth(res);
    const id = SubId.parse(req.params.id);
    const patch = UpdateWebhookBody.parse(req.body);
    res.json(await api.update(p.userId, id, patch));
  });

  r.delete('/webhooks/:id', async (req, res) => {
    const p = requireAuth(res);
    const id = SubId.parse(req.params.id);
    if (!(await api.remove(p.userId, id))) throw new ApiError(404, 'not_found', `no webhook subscription ${id} on your account`);
    res.json({ deleted: true, id });
  });

  r.post('/webhooks/:id/rotate-secret', async (req, res) => {
    const p = requireAuth(res);
    const id = SubId.parse(req.params.id);
    const b = z.union([z.undefined(), RotateSecretBody]).parse(req.body);
    const out = await api.rotateSecret(p.userId, id, b?.grace_seconds);
    res.setHeader('Cache-Control', 'no-store');
    res.json(out);
  });

  r.get('/webhooks/:id/deliveries', async (req, res) => {
    const p = requireAuth(res);
    const id = SubId.parse(req.params.id);
    const q = DeliveriesQuery.parse(req.query);
    res.json(await api.deliveries(p.userId, id, q));
  });

  r.post('/webhooks/:id/test', async (req, res) => {
    const p = requireAuth(res);
    const id = SubId.parse(req.params.id);
    NoBody.parse(req.body);
    res.json(await api.test(p.userId, id));
  });

  return r;
}
