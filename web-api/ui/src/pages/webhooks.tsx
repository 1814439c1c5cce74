import { useState } from 'preact/hooks';
import { ApiFailure, api, type Me } from '../api.ts';
import { useApi } from '../hooks.ts';
import { Loaded } from './shared.tsx';

interface Sub {
  id: string;
  target_url: string;
  event_types: string[];
  active: boolean;
}
interface Delivery {
  event_id: string;
  type: string;
  status: string;
  attempts: number;
  http_status: number | null;
  error: string | null;
  created_at: string;
}
const EVENT_TYPES = ['trader.fill', 'signal.smart_money', 'market.resolved', 'service.test'];

/** Webhooks: create (the signing secret shown once), send a test, read the delivery log, rotate the secret, delete. */
export function Webhooks({ me }: { me: Me['user'] }) {
  const [reload, setReload] = useState(0);
  const subs = useApi<{ rows: Sub[] }>(me ? `/v1/webhooks?r=${reload}` : null);
  const [url, setUrl] = useState('');
  const [types, setTypes] = useState<string[]>(['signal.smart_money']);
  const [secret, setSecret] = useState<{ id: string; secret: string } | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [log, setLog] = useState<{ id: string; rows: Delivery[] } | null>(null);
  if (!me) {
    return (
      <>
        <h1>Webhooks</h1>
        <p class="muted">
          <a href="/signin">Sign in</a> to send events to your own endpoint.
        </p>
      </>
    );
  }
  const act = async (f: () => Promise<void>) => {
    setError(null);
    setNotice(null);
    try {
      await f();
    } catch (e) {
      setError(e instanceof ApiFailure ? e.message : String(e));
    }
  };
  const create = (e: Event) => {
    e.preventDefault();
    void act(async () => {
      const s = await api<Sub & { secret: string }>('/v1/webhooks', { method: 'POST', body: { target_url: url, event_types: types } });
      setSecret({ id: s.id, secret: s.secret });
      setUrl('');
      setReload((n) => n + 1);
    });
  };
  const test = (id: string) =>
    act(async () => {
      const r = await api<{ delivered: boolean; http_status: number | null; error: string | null }>(`/v1/webhooks/${id}/test`, { method: 'POST' });
      setNotice(r.delivered ? `Test delivered (HTTP ${r.http_status}).` : `Test not delivered yet: ${r.error ?? `HTTP ${r.http_status}`} (it is retried).`);
    });
  const rotate = (id: string) =>
    act(async () => {
      const r = await api<{ id: string; secret: string }>(`/v1/webhooks/${id}/rotate-secret`, { method: 'POST', body: {} });
      setSecret({ id: r.id, secret: r.secret });
    });
  const remove = (id: string) =>
    act(async () => {
      if (!confirm('Delete this webhook? Its pending deliveries are dropped.')) return;
      await api(`/v1/webhooks/${id}`, { method: 'DELETE' });
      setReload((n) => n + 1);
    });
  const deliveries = (id: string) =>
    act(async () => {
      const r = await api<{ rows: Delivery[] }>(`/v1/webhooks/${id}/deliveries?limit=20`);
      setLog({ id, rows: r.rows });
    });
  return (
    <>
      <h1>Webhooks</h1>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {notice && (
        <p role="status" data-testid="notice">
          {notice}
        </p>
      )}
      <form onSubmit={create}>
        <fieldset>
          <legend>New webhook</legend>
          <p>
            <label>
              Endpoint (https){' '}
              <input type="url" required name="target_url" size={50} value={url} onInput={(e) => setUrl((e.target as HTMLInputElement).value)} />
            </label>
          </p>
          <p>
            {EVENT_TYPES.map((t) => (
              <label key={t} style={{ marginRight: '1rem' }}>
                <input
                  type="checkbox"
                  name="event_types"
                  value={t}
                  checked={types.includes(t)}
                  onChange={(e) => setTypes((e.target as HTMLInputElement).checked ? [...types, t] : types.filter((x) => x !== t))}
                />{' '}
                {t}
              </label>
            ))}
          </p>
          <button class="primary" type="submit">
            Create webhook
          </button>
        </fieldset>
      </form>
      {secret && (
        <div class="card" role="status" data-testid="webhook-secret">
          Signing secret — copy it now, it is shown only once: <code>{secret.secret}</code> <button onClick={() => setSecret(null)}>Done</button>
        </div>
      )}
      <Loaded load={subs}>
        {(d) => (
          <table data-testid="webhooks">
            <thead>
              <tr>
                <th scope="col">Endpoint</th>
                <th scope="col">Events</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {d.rows.map((s) => (
                <tr key={s.id} data-id={s.id}>
                  <td>{s.target_url}</td>
                  <td>{s.event_types.join(', ')}</td>
                  <td>
                    <button onClick={() => void test(s.id)}>Send a test</button> <button onClick={() => void deliveries(s.id)}>Deliveries</button>{' '}
                    <button onClick={() => void rotate(s.id)}>Rotate secret</button> <button onClick={() => void remove(s.id)}>Delete</button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Loaded>
      {log && (
        <>
          <h2>Deliveries</h2>
          <table data-testid="deliveries">
            <thead>
              <tr>
                <th scope="col">Event</th>
                <th scope="col">Type</th>
                <th scope="col">Status</th>
                <th scope="col">Attempts</th>
                <th scope="col">HTTP</th>
              </tr>
            </thead>
            <tbody>
              {log.rows.map((r) => (
                <tr key={r.event_id}>
                  <td>{r.event_id}</td>
                  <td>{r.type}</td>
                  <td>{r.status}</td>
                  <td>{r.attempts}</td>
                  <td>{r.http_status ?? r.error ?? '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </>
  );
}
