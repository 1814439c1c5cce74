/**
 * Web push: VAPID keys generated once and stored, subscriptions registered through the SSRF guard, and a sender
 * that encrypts with web-push (aes128gcm) but sends through the same pinned, redirect-free POST as webhooks.
 * A push service answering 404 or 410 means the browser dropped the subscription: it is removed.
 */
import webpush from 'web-push';
import type { PushStore } from '../data/push-store.ts';
import { parseTarget, pinnedPost, resolveTarget, type Allowlist, type PinnedPostOptions } from './webhooks/ssrf.ts';
import { WebhookError } from './webhooks/service.ts';

export interface PushDeps {
  store: PushStore;
  /** VAPID subject: a mailto: or https: contact for push services */
  subject: string;
  allowlist?: Allowlist;
  ca?: PinnedPostOptions['ca'];
  lookup?: PinnedPostOptions['lookup'];
  now?: () => Date;
}

export interface PushResult {
  sent: number;
  failed: number;
  removed: number;
}

export class PushService {
  readonly publicKey: string;
  private readonly privateKey: string;

  constructor(private readonly deps: PushDeps) {
    const keys = JSON.parse(deps.store.getOrCreate('vapid', () => JSON.stringify(webpush.generateVAPIDKeys()))) as { publicKey: string; privateKey: string };
    this.publicKey = keys.publicKey;
    this.privateKey = keys.privateKey;
  }

  async subscribe(userId: string, sub: { endpoint: string; keys: { p256dh: string; auth: string } }): Promise<void> {
    const t = parseTarget(sub.endpoint, { allowlist: this.deps.allowlist });
    if (!t.ok) throw new WebhookError(400, 'invalid_target', 'the push endpoint is not allowed', t.reason);
    const r = await resolveTarget(t.url.hostname, { port: Number(t.url.port || 443), allowlist: this.deps.allowlist, lookup: this.deps.lookup });
    if (!r.ok) throw new WebhookError(400, 'invalid_target', 'the push endpoint does not resolve to a public address', r.reason);
    this.deps.store.upsert({ user_id: userId, endpoint: sub.endpoint, p256dh: sub.keys.p256dh, auth: sub.keys.auth }, (this.deps.now ?? (() => new Date()))().getTime());
  }

  /** Send one payload (JSON) to every subscription of a user. */
  async sendTo(userId: string, payload: unknown): Promise<PushResult> {
    const out: PushResult = { sent: 0, failed: 0, removed: 0 };
    for (const s of this.deps.store.forUser(userId)) {
      let details: ReturnType<typeof webpush.generateRequestDetails>;
      try {
        details = webpush.generateRequestDetails({ endpoint: s.endpoint, keys: { p256dh: s.p256dh, auth: s.auth } }, JSON.stringify(payload), {
          vapidDetails: { subject: this.deps.subject, publicKey: this.publicKey, privateKey: this.privateKey },
          TTL: 3600,
          contentEncoding: 'aes128gcm',
        });
      } catch {
        // keys the browser gave us that cannot encrypt: the subscription is unusable
        this.deps.store.remove(s.endpoint);
        out.removed++;
        continue;
      }
      const headers = Object.fromEntries(Object.entries(details.headers).map(([k, v]) => [k.toLowerCase(), String(v)]));
      const r = await pinnedPost(details.endpoint, details.body ?? Buffer.alloc(0), headers, { allowlist: this.deps.allowlist, ca: this.deps.ca, lookup: this.deps.lookup });
      if (r.ok) out.sent++;
      else if (r.status === 404 || r.status === 410) {
        this.deps.store.remove(s.endpoint);
        out.removed++;
      } else out.failed++;
    }
    return out;
  }
}
