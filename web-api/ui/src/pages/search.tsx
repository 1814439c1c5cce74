import { useApi } from '../hooks.ts';
import { count, usd } from '../format.ts';
import { Card, Loaded } from './shared.tsx';

type Result =
  | { type: 'trader'; tid: string; wallet_label: string; total_pnl: number | null; volume: number | null }
  | { type: 'market'; condition_id: string; title: string; category: string; market_state: string }
  | { type: 'event'; slug: string; title: string; category: string };

/** Search traders, markets and events (public). */
export function Search({ q }: { q: string }) {
  const load = useApi<{ results: Result[]; kind: string }>(q.trim() ? `/v1/public/search?q=${encodeURIComponent(q.trim())}&limit=25` : null);
  return (
    <>
      <h1>Search{q ? `: ${q}` : ''}</h1>
      {!q.trim() ? (
        <p class="muted">Type a username, a wallet address, a market or an event in the search box.</p>
      ) : (
        <Loaded load={load}>
          {(d) =>
            d.results.length === 0 ? (
              <p class="muted">Nothing matches.</p>
            ) : (
              <ul data-testid="results">
                {d.results.map((r, i) => (
                  <li key={i}>
                    {r.type === 'trader' ? (
                      <>
                        <a href={`/trader/${r.tid}`}>{r.wallet_label}</a> <span class="muted">trader · P&amp;L {usd(r.total_pnl)} · volume {usd(r.volume)}</span>
                      </>
                    ) : r.type === 'market' ? (
                      <>
                        <a href={`/market/${r.condition_id}`}>{r.title}</a> <span class="muted">market · {r.category} · {r.market_state}</span>
                      </>
                    ) : (
                      <>
                        <a href={`/event/${r.slug}`}>{r.title}</a> <span class="muted">event · {r.category}</span>
                      </>
                    )}
                  </li>
                ))}
              </ul>
            )
          }
        </Loaded>
      )}
    </>
  );
}

interface Teaser {
  market_title: string;
  market_category: string;
  market_state: string;
  winner_outcome: string;
  end_date: string;
  current_mid: number | null;
  last_24h_volume_usdc: number;
  last_24h_fills: number;
  positioner_count: number;
  smart_money_positioner_count: number;
  top_holders: { pseudonym: string; outcome_side: string; shares_held: number }[];
}

/** A market's public teaser: state, winner, mid, the last day's flow, positioners and the top holders. */
export function Market({ id }: { id: string }) {
  const load = useApi<Teaser>(`/v1/public/market/${encodeURIComponent(id)}`);
  return (
    <Loaded load={load}>
      {(m) => (
        <>
          <h1>{m.market_title}</h1>
          <p class="muted">
            {m.market_category} · {m.market_state}
            {m.winner_outcome ? ` · won: ${m.winner_outcome}` : ''} · closes {m.end_date ? new Date(m.end_date).toUTCString() : '—'}
          </p>
          <div class="cards" data-testid="market">
            <Card label="Mid (YES)" value={m.current_mid === null ? '—' : `${(m.current_mid * 100).toFixed(1)}%`} />
            <Card label="Volume 24 h" value={usd(m.last_24h_volume_usdc)} />
            <Card label="Fills 24 h" value={count(m.last_24h_fills)} />
            <Card label="Positioners" value={count(m.positioner_count)} />
            <Card label="Smart money in it" value={count(m.smart_money_positioner_count)} />
          </div>
          <h2>Top holders</h2>
          <table>
            <thead>
              <tr>
                <th scope="col">Holder</th>
                <th scope="col">Outcome</th>
                <th scope="col">Shares</th>
              </tr>
            </thead>
            <tbody>
              {m.top_holders.map((h, i) => (
                <tr key={i}>
                  <td>{h.pseudonym}</td>
                  <td>{h.outcome_side}</td>
                  <td>{count(Math.round(h.shares_held))}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </Loaded>
  );
}
