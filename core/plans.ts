/**
 * Plans and their feature table. Billing is not part of the service: an operator sets a user's plan with
 * `npm run admin -- set-plan` (docs/operations.md). Every surface reads limits and features from here.
 */
import { z } from 'zod';

export const FEATURES = ['metrics_full', 'extra_metrics'] as const;
export type Feature = (typeof FEATURES)[number];

export const PLAN_IDS = ['free', 'pro', 'quant', 'desk'] as const;
export const PlanId = z.enum(PLAN_IDS);
export type PlanId = z.infer<typeof PlanId>;

export interface Plan {
  id: PlanId;
  name: string;
  price_usd_month: number;
  features: readonly Feature[];
  /** API-key requests per minute per user, all keys together (aligned one-minute windows) */
  requests_per_minute: number;
  /** API-key requests per calendar month (UTC) */
  requests_per_month: number;
  /** webhook deliveries per calendar month (UTC); Free is 0, so Free cannot create a subscription */
  webhook_events_per_month: number;
  /** webhook subscriptions a user may hold */
  webhook_subscriptions: number;
}

export const PLANS: Readonly<Record<PlanId, Plan>> = {
  free: { id: 'free', name: 'Free', price_usd_month: 0, features: [], requests_per_minute: 30, requests_per_month: 3_000, webhook_events_per_month: 0, webhook_subscriptions: 0 },
  pro: { id: 'pro', name: 'Pro', price_usd_month: 39, features: ['metrics_full', 'extra_metrics'], requests_per_minute: 120, requests_per_month: 50_000, webhook_events_per_month: 10_000, webhook_subscriptions: 5 },
  quant: { id: 'quant', name: 'Quant', price_usd_month: 149, features: ['metrics_full', 'extra_metrics'], requests_per_minute: 300, requests_per_month: 500_000, webhook_events_per_month: 100_000, webhook_subscriptions: 25 },
  desk: { id: 'desk', name: 'Desk', price_usd_month: 799, features: ['metrics_full', 'extra_metrics'], requests_per_minute: 1_000, requests_per_month: 5_000_000, webhook_events_per_month: 1_000_000, webhook_subscriptions: 100 },
};

/** The monthly webhook event quota (webhook deliveries and live pushes share it); no plan means 0. */
export function webhookEventsPerMonth(plan: PlanId | null | undefined): number {
  return plan ? PLANS[plan].webhook_events_per_month : 0;
}

export function planHas(plan: PlanId, feature: Feature): boolean {
  return PLANS[plan].features.includes(feature);
}
