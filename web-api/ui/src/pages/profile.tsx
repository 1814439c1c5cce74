import { useState } from 'preact/hooks';
import { ApiFailure, api } from '../api.ts';
import { useApi } from '../hooks.ts';

interface MeRecord {
  user: { user_id: string; email: string | null; display_name: string | null; x_username: string | null };
}

const b64url = (s: string) => Uint8Array.from(atob(s.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0));

/** The account record (name, X username, email with confirmation), browser push, and deleting the account. */
export function Profile() {
  const rec = useApi<MeRecord>('/v1/auth/me');
  const [form, setForm] = useState<{ display_name: string; x_username: string; email: string } | null>(null);
  const [msg, setMsg] = useState<{ ok: boolean; text: string } | null>(null);
  if (rec.state !== 'ok') return <p class="muted">{rec.state === 'error' ? rec.error.message : 'Loading…'}</p>;
  const u = rec.data.user;
  const f = form ?? { display_name: u.display_name ?? '', x_username: u.x_username ?? '', email: u.email ?? '' };
  const run = async (work: () => Promise<string>) => {
    setMsg(null);
    try {
      setMsg({ ok: true, text: await work() });
    } catch (e) {
      setMsg({ ok: false, text: e instanceof ApiFailure ? e.message : (e as Error).message || String(e) });
    }
  };
  const save = (e: Event) => {
    e.preventDefault();
    void run(async () => {
      const body: { [k: string]: string | null } = { display_name: f.display_name || null, x_username: f.x_username || null };
      const emailChanged = f.email && f.email !== (u.email ?? '');
      if (emailChanged) body.email = f.email;
      await api('/v1/auth/me', { method: 'PATCH', body });
      return emailChanged ? `Saved. The new email applies once you open the link we sent to ${f.email}.` : 'Saved.';
    });
  };
  const push = () =>
    run(async () => {
      if (!('serviceWorker' in navigator) || !('PushManager' in window)) throw new Error('This browser has no push notifications.');
      if ((await Notification.requestPermission()) !== 'granted') throw new Error('Notifications are blocked for this site in the browser.');
      const reg = await navigator.serviceWorker.register('/sw.js');
      await navigator.serviceWorker.ready;
      const { public_key } = await api<{ public_key: string }>('/v1/push/vapid-public-key');
      const sub = await reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: b64url(public_key) });
      await api('/v1/push/subscribe', { method: 'POST', body: sub.toJSON() });
      return 'Browser notifications are on.';
    });
  const remove = () =>
    run(async () => {
      if (!confirm('Delete your account? Keys, sessions and webhooks go, and this cannot be undone.')) return 'Kept.';
      await api('/v1/auth/me', { method: 'DELETE', body: { confirm: true } });
      location.assign('/');
      return 'Deleted.';
    });
  return (
    <>
      <h2>Profile</h2>
      {msg && (
        <p class={msg.ok ? '' : 'error'} role={msg.ok ? 'status' : 'alert'} data-testid="profile-msg">
          {msg.text}
        </p>
      )}
      <form onSubmit={save}>
        <p>
          <label>
            Display name <input name="display_name" maxLength={80} value={f.display_name} onInput={(e) => setForm({ ...f, display_name: (e.target as HTMLInputElement).value })} />
          </label>
        </p>
        <p>
          <label>
            X username <input name="x_username" maxLength={40} value={f.x_username} onInput={(e) => setForm({ ...f, x_username: (e.target as HTMLInputElement).value })} />
          </label>
        </p>
        <p>
          <label>
            Email <input name="email" type="email" maxLength={254} value={f.email} onInput={(e) => setForm({ ...f, email: (e.target as HTMLInputElement).value })} />
          </label>
        </p>
        <button class="primary" type="submit">
          Save
        </button>
      </form>
      <h2>Browser notifications</h2>
      <button onClick={() => void push()}>Turn on browser notifications</button>
      <h2>Delete the account</h2>
      <button onClick={() => void remove()}>Delete my account</button>
    </>
  );
}
