/**
 * Rate limits (docs/api.md "Rate limits"): API-key traffic by the plan's per-minute rate and monthly quota, with
 * the headers that report them; everyone else per IP; sign-in routes by their own tighter rules (magic-link start
 * per IP and per email). A limit that is hit answers 429 rate_limited with Retry-After.
 */
import type { Request, RequestHandler, Response } from 'express';
import { PLANS } from '../core/plans.ts';
import { windowOf, type RateStore } from '../data/rate-limit.ts';
import { ApiError } from './errors.ts';
import { principalOf } from './principal.ts';

export interface LimitRule {
  /** counter namespace, e.g. "magic-ip" */
  name: string;
  limit: number;
  span: number | 'month';
}

export const RULES = {
  /** anonymous and session traffic, per IP */
  ip: { name: 'ip', limit: 300, span: 60_000 },
  /** /v1/public/* per IP (public responses are cached; this is a ceiling against scrapers) */
  publicIp: { name: 'public-ip', limit: 120, span: 60_000 },
  nonceIp: { name: 'nonce-ip', limit: 30, span: 60_000 },
  verifyIp: { name: 'verify-ip', limit: 30, span: 60_000 },
  magicIp: { name: 'magic-ip', limit: 10, span: 15 * 60_000 },
  magicEmail: { name: 'magic-email', limit: 3, span: 15 * 60_000 },
  keyMint: { name: 'key-mint', limit: 5, span: 3600_000 },
  /** surfaces mounted beside the REST API (x402 gateway, MCP), per IP: paid calls are charged, this only caps floods */
  agentIp: { name: 'agent-ip', limit: 600, span: 60_000 },
  /** requests with a wrong key or malformed Authorization, per IP */
  authFailIp: { name: 'auth-fail-ip', limit: 60, span: 60_000 },
} as const satisfies Record<string, LimitRule>;

export type RuleOverrides = Partial<Record<keyof typeof RULES, Partial<LimitRule>>>;

export class RateLimiter {
  private readonly rules: Record<keyof typeof RULES, LimitRule>;

  constructor(
    private readonly store: RateStore,
    private readonly now: () => Date,
    overrides: RuleOverrides = {},
  ) {
    this.rules = Object.fromEntries(Object.entries(RULES).map(([k, r]) => [k, { ...r, ...overrides[k as keyof typeof RULES] }])) as Record<keyof typeof RULES, LimitRule>;
  }

  rule(name: keyof typeof RULES): LimitRule {
    return this.rules[name];
  }

  /** Count one request against (rule, subject); 429 when over. Returns the count and the window. */
  async take(rule: LimitRule, subject: string, res?: Response): Promise<{ count: number; remaining: number; resetMs: number }> {
    const t = this.now().getTime();
    const w = windowOf(t, rule.span);
    const count = await this.store.hit(`${rule.name}:${subject}`, w.start, w.end);
    if (count > rule.limit) {
      const retry = Math.max(1, Math.ceil((w.end - t) / 1000));
      res?.setHeader('Retry-After', String(retry));
      throw new ApiError(429, 'rate_limited', 'rate limit exceeded', `${rule.name}: at most ${rule.limit} requests per ${rule.span === 'month' ? 'calendar month' : `${rule.span / 1000} s`}; retry after ${retry} s`);
    }
    return { count, remaining: rule.limit - count, resetMs: w.end };
  }

  /** A user's API requests this calendar month (UTC) against the plan, read without counting. */
  async monthlyUsage(userId: string, planId: keyof typeof PLANS): Promise<{ used: number; limit: number; month_start: string; resets_at: string }> {
    const plan = PLANS[planId];
    const month = windowOf(this.now().getTime(), 'month');
    const used = await this.store.peek(`key-month:${userId}`, month.start);
    return { used: Math.min(used, plan.requests_per_month), limit: plan.requests_per_month, month_start: new Date(month.start).toISOString(), resets_at: new Date(month.end).toISOString() };
  }

  /**
   * Middleware for authenticated /v1/* traffic: key traffic pays against the plan's per-minute rate and monthly
   * quota, both per user (so more keys do not mean more rate), and every response says how much is left; sessions
   * and anonymous callers are limited per IP.
   */
  apiTraffic(): RequestHandler {
    return async (req, res, next) => {
      const p = principalOf(res);
      if (p.kind === 'api_key' && p.keyId && p.userId) {
        const plan = PLANS[p.plan];
        res.setHeader('X-RateLimit-Limit', String(plan.requests_per_minute));
        res.setHeader('X-Plan-Quota-Monthly', String(plan.requests_per_month));
        let minute: { remaining: number };
        try {
          minute = await this.take({ name: 'user-minute', limit: plan.requests_per_minute, span: 60_000 }, p.userId, res);
        } catch (e) {
          res.setHeader('X-RateLimit-Remaining', '0');
          throw e;
        }
        res.setHeader('X-RateLimit-Remaining', String(minute.remaining));
        const t = this.now().getTime();
        const month = windowOf(t, 'month');
        const used = await this.store.hit(`key-month:${p.userId}`, month.start, month.end);
        res.setHeader('X-Plan-Quota-Used', String(Math.min(used, plan.requests_per_month)));
        if (used > plan.requests_per_month) {
          res.setHeader('Retry-After', String(Math.max(1, Math.ceil((month.end - t) / 1000))));
          throw new ApiError(429, 'quota_exceeded', 'monthly request quota exhausted', `the ${plan.name} plan includes ${plan.requests_per_month} API requests per calendar month (UTC)`);
        }
      } else {
        await this.take(this.rules.ip, clientIp(req), res);
      }
      next();
    };
  }

  perIp(rule: keyof typeof RULES): RequestHandler {
    return async (req, res, next) => {
      await this.take(this.rules[rule], clientIp(req), res);
      next();
    };
  }
}

/**
 * The caller's IP as express sees it (behind a proxy, set TRUST_PROXY so X-Forwarded-For is honoured). IPv6
 * callers count per /64, the block one subscriber gets, so rotating addresses inside it does not reset limits.
 */
export function clientIp(req: Request): string {
  return ipSubject(req.ip ?? req.socket.remoteAddress ?? 'unknown');
}

export function ipSubject(ip: string): string {
  const v4 = /^(?:::ffff:)?(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(ip);
  if (v4) return v4[1]!;
  if (!ip.includes(':')) return ip;
  // expand :: and keep the first four hextets
  const [head = '', tail = ''] = ip.split('%')[0]!.split('::');
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const full = ip.includes('::') ? [...h, ...Array(Math.max(0, 8 - h.length - t.length)).fill('0'), ...t] : h;
  return `${full.slice(0, 4).map((x) => (x || '0').toLowerCase().replace(/^0+(?=.)/, '')).join(':')}::/64`;
}
