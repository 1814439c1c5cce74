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

export interface WebhookApi {
  list(userId: string): SubscriptionView[];
  create(userId: string, plan: PlanId, input: { target_url: string; event_types: string[]; filter_json?: Record<string, unknown>; active?: boolean }): Promise<{ subscription: SubscriptionView; secret: string }>;
  update(userId: string, id: string, patch: { target_url?: string; event_types?: string[]; filter_json?: Record<string, unknown>; active?: boolean }): Promise<SubscriptionView>;
  remove(userId: string, id: string): boolean;
  test(userId: string, id: string): Promise<unknown>;
}

export interface PushApi {
  readonly publicKey: string;
  subscribe(userId: string, sub: { endpoint: string; keys: { p256dh: string; auth: string } }): Promise<void>;
  sendTo(userId: string, payload: unknown): Promise<{ sent: number; failed: number; removed: number }>;
}

/** The browser's PushSubscription JSON (the spec's push subscription body). */
export const PushSubscribeBody = z.strictObject({
  endpoint: z.url().max(2048),
  keys: z.strictObject({
    p256dh: z.string().regex(/^[A-Za-z0-9_-]{80,100}={0,2}$/, 'p256dh is a base64url P-256 public key'),
    auth: z.string().regex(/^[A-Za-z0-9_-]{16,32}={0,2}$/, 'auth is a base64url 16-byte secret'),
  }),
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
      res.json(await push.sendTo(p.userId, { type: 'service.test', emitted_at: new Date().toISOString(), data: { message: 'a test notification sent on request' } }));
    });
  }

  r.get('/webhooks', (_req, res) => {
    const p = requireAuth(res);
    res.json({ rows: api.list(p.userId) });
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

  r.delete('/webhooks/:id', (req, res) => {
    const p = requireAuth(res);
    const id = SubId.parse(req.params.id);
    if (!api.remove(p.userId, id)) throw new ApiError(404, 'not_found', `no webhook subscription ${id} on your account`);
    res.json({ deleted: true, id });
  });

  r.post('/webhooks/:id/test', async (req, res) => {
    const p = requireAuth(res);
    const id = SubId.parse(req.params.id);
    NoBody.parse(req.body);
    res.json(await api.test(p.userId, id));
  });

  return r;
}
