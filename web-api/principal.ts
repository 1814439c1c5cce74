/**
 * Who is calling: set once per request by the authentication middleware (web-api/auth.ts) from the session cookie
 * or the Bearer key, and read by every route. Anonymous callers reach /v1/public/* only.
 */
import type { Response } from 'express';
import { PLANS, type Feature, type PlanId } from '../core/plans.ts';
import { ApiError } from './errors.ts';

export interface Principal {
  kind: 'anonymous' | 'session' | 'api_key';
  userId: string | null;
  plan: PlanId;
  features: ReadonlySet<Feature>;
  /** the API key's id when kind is api_key */
  keyId?: string;
  /** the session's id when kind is session */
  sessionId?: string;
}

export const ANONYMOUS: Principal = Object.freeze({ kind: 'anonymous', userId: null, plan: 'free', features: new Set<Feature>() });

export function principalFor(kind: Principal['kind'], userId: string, plan: PlanId, ids: { keyId?: string; sessionId?: string } = {}): Principal {
  return { kind, userId, plan, features: new Set(PLANS[plan].features), ...ids };
}

export function principalOf(res: Response): Principal {
  return (res.locals.principal as Principal | undefined) ?? ANONYMOUS;
}

/** 401 auth_required unless a session or key identified the caller. */
export function requireAuth(res: Response): Principal & { userId: string } {
  const p = principalOf(res);
  if (p.kind === 'anonymous' || !p.userId) throw new ApiError(401, 'auth_required', 'sign in or send Authorization: Bearer <API key>', 'this route needs a session cookie or an API key; /v1/public/* is open');
  return p as Principal & { userId: string };
}

/** 403 plan_required when the caller's plan lacks a paid feature. */
export function requireFeature(p: Principal, feature: Feature): void {
  if (!p.features.has(feature)) {
    const plans = Object.values(PLANS).filter((pl) => pl.features.includes(feature)).map((pl) => pl.name);
    throw new ApiError(403, 'plan_required', `${feature} needs a paid plan`, `your plan (${p.plan}) does not include ${feature}; plans that do: ${plans.join(', ')}`);
  }
}
