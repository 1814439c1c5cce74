import { useState } from 'preact/hooks';
import { ApiFailure, api, type Me } from '../api.ts';
import { useApi } from '../hooks.ts';
import { count, usd } from '../format.ts';
import { navigate } from '../router.ts';
import { Card, Loaded } from './shared.tsx';
import { Profile } from './profile.tsx';

interface Key {
  id: string;
  label: string;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}
interface Plan {
  plan: { id: string; name: string; price_usd_month: number; features: string[]; requests_per_minute: number; requests_per_month: number; webhook_events_per_month: number; webhook_subscriptions: number };
}

/** The account: plan and its limits, API keys (a new key's secret shown once), sign out everywhere. */
export function Account({ me }: { me: Me['user'] }) {
  const [reload, setReload] = useState(0);
  const plan = useApi<Plan>(me ? '/v1/account/plan' : null);
  const usage = useApi<{ api_requests: { used: number; limit: number; resets_at: string } }>(me ? `/v1/account/usage?r=${reload}` : null);
  const keys = useApi<{ rows: Key[] }>(me ? `/v1/api-keys?r=${reload}` : null);
  const [label, setLabel] = useState('');
  const [minted, setMinted] = useState<{ label: string; key: string } | null>(null);
  const [error, setError] = useState<string | null>(null);
  if (!me) {
    return (
      <>
        <h1>Account</h1>
        <p class="muted">
          <a href="/signin">Sign in</a> to manage your plan and API keys.
        </p>
      </>
    );
  }
  const act = async (f: () => Promise<void>) => {
    setError(null);
    try {
      await f();
    } catch (e) {
      setError(e instanceof ApiFailure ? e.message : String(e));
    }
  };
  const mint = (e: Event) => {
    e.preventDefault();
    void act(async () => {
      const k = await api<Key & { key: string }>('/v1/api-keys', { method: 'POST', body: { label } });
      setMinted({ label: k.label, key: k.key });
      setLabel('');
      setReload((n) => n + 1);
    });
  };
  const revoke = (id: string) =>
    act(async () => {
      await api(`/v1/api-keys/${id}`, { method: 'DELETE' });
      setReload((n) => n + 1);
    });
  const logoutAll = () =>
    act(async () => {
      await api('/v1/auth/logout-all', { method: 'POST' });
      navigate('/');
      location.reload();
    });
  return (
    <>
      <h1>Account</h1>
      <p>
        Signed in as <strong>{me.email ?? me.user_id}</strong>.
      </p>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <h2>Plan</h2>
      <Loaded load={plan}>
        {(p) => (
          <div class="cards" data-testid="plan">
            <Card label="Plan" value={p.plan.name} />
            <Card label="Price" value={`${usd(p.plan.price_usd_month)}/mo`} />
            <Card label="Requests" value={`${count(p.plan.requests_per_minute)}/min`} />
            <Card label="Requests a month" value={count(p.plan.requests_per_month)} />
            <Card label="Webhook events a month" value={count(p.plan.webhook_events_per_month)} />
          </div>
        )}
      </Loaded>
      <Loaded load={usage}>
        {(u) => (
          <p data-testid="usage">
            API requests this month: <strong>{count(u.api_requests.used)}</strong> of {count(u.api_requests.limit)}{' '}
            <meter min={0} max={u.api_requests.limit} value={u.api_requests.used} aria-label="API requests used this month" /> (resets{' '}
            {new Date(u.api_requests.resets_at).toUTCString()})
          </p>
        )}
      </Loaded>
      <h2>API keys</h2>
      <form class="inline" onSubmit={mint}>
        <label for="key-label">Label</label>
        <input id="key-label" required maxLength={64} value={label} onInput={(e) => setLabel((e.target as HTMLInputElement).value)} />
        <button class="primary" type="submit">
          Create key
        </button>
      </form>
      {minted && (
        <div class="card" role="status" data-testid="minted" style={{ marginTop: '.75rem' }}>
          <p>
            Your new key <strong>{minted.label}</strong> — copy it now, it is shown only once:
          </p>
          <code data-testid="secret" style={{ wordBreak: 'break-all' }}>
            {minted.key}
          </code>{' '}
          <button onClick={() => void navigator.clipboard?.writeText(minted.key)}>Copy</button> <button onClick={() => setMinted(null)}>Done</button>
        </div>
      )}
      <Loaded load={keys}>
        {(k) => (
          <table data-testid="keys">
            <thead>
              <tr>
                <th scope="col">Label</th>
                <th scope="col">Key</th>
                <th scope="col">Created</th>
                <th scope="col">Last used</th>
                <th scope="col">State</th>
              </tr>
            </thead>
            <tbody>
              {k.rows.map((r) => (
                <tr key={r.id} data-key-id={r.id}>
                  <td>{r.label}</td>
                  <td>
                    <code>{r.prefix}…</code>
                  </td>
                  <td>{new Date(r.created_at).toLocaleString()}</td>
                  <td>{r.last_used_at ? new Date(r.last_used_at).toLocaleString() : 'never'}</td>
                  <td>
                    {r.revoked_at ? (
                      'revoked'
                    ) : (
                      <button onClick={() => void revoke(r.id)} aria-label={`Revoke ${r.label}`}>
                        Revoke
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Loaded>
      <h2>Sessions</h2>
      <button onClick={() => void logoutAll()}>Sign out everywhere</button>
      <Profile />
    </>
  );
}
