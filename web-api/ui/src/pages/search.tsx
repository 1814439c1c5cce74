import { useApi } from '../hooks.ts';
import { usd } from '../format.ts';
import { Loaded } from './shared.tsx';

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
