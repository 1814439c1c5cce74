import type { Me } from '../api.ts';
import { useApi } from '../hooks.ts';
import { count, num, pct, usd } from '../format.ts';
import { Loaded } from './shared.tsx';

interface Preset {
  slug: string;
  title: string;
  purpose: string;
}
interface Ranking {
  rows: { rank: number; proxy_wallet: string; display: { username: string | null; pseudonym: string }; composite_score: number; realized_pnl: number; trade_count: number; win_rate_pct: number | null; brier: number | null }[];
  total_rows: number;
  cohort_size: number;
  explain: { cohort_size: number; gates: { label: string; condition: string; dropped: number; remaining: number }[] };
}

function SignInFirst() {
  return (
    <p class="muted">
      <a href="/signin">Sign in</a> to open the ten preset boards, their gates and the full records of the traders on them.
    </p>
  );
}

export function Presets({ me }: { me: Me['user'] }) {
  const load = useApi<{ presets: Preset[] }>(me ? '/v1/rankings/presets' : null);
  if (!me) return (<><h1>Presets</h1><SignInFirst /></>);
  return (
    <>
      <h1>Presets</h1>
      <Loaded load={load}>
        {(d) => (
          <ul>
            {d.presets.map((p) => (
              <li key={p.slug}>
                <a href={`/presets/${p.slug}`}>{p.title}</a> <span class="muted">— {p.purpose}</span>
              </li>
            ))}
          </ul>
        )}
      </Loaded>
    </>
  );
}

/** One preset: the gates funnel (cohort → each gate → scored → one row per user) and the top of the board. */
export function PresetBoard({ slug, me }: { slug: string; me: Me['user'] }) {
  const load = useApi<Ranking>(me ? `/v1/rankings/preset/${encodeURIComponent(slug)}?limit=25` : null);
  if (!me) return (<><h1>{slug}</h1><SignInFirst /></>);
  return (
    <>
      <h1>{slug}</h1>
      <Loaded load={load}>
        {(r) => (
          <>
            <h2>Gates</h2>
            <ol class="funnel" data-testid="funnel">
              <li>
                <span>Cohort</span>
                <span class="bar" style={{ width: '100%' }} />
                <span>{count(r.explain.cohort_size)}</span>
              </li>
              {r.explain.gates.map((g) => (
                <li key={g.label} title={g.condition}>
                  <span>{g.label}</span>
                  <span class="bar" style={{ width: `${r.explain.cohort_size ? (100 * g.remaining) / r.explain.cohort_size : 0}%` }} />
                  <span>{count(g.remaining)}</span>
                </li>
              ))}
            </ol>
            <h2>Top {r.rows.length} of {count(r.total_rows)}</h2>
            <table>
              <thead>
                <tr>
                  <th scope="col">#</th>
                  <th scope="col">Trader</th>
                  <th scope="col">Score</th>
                  <th scope="col">Realized P&amp;L</th>
                  <th scope="col">Trades</th>
                  <th scope="col">Win rate</th>
                  <th scope="col">Brier</th>
                </tr>
              </thead>
              <tbody>
                {r.rows.map((row) => (
                  <tr key={row.proxy_wallet}>
                    <td>{row.rank}</td>
                    <td>
                      <a href={`/trader/${row.proxy_wallet}`}>{row.display.username || row.display.pseudonym}</a>
                    </td>
                    <td>{num(row.composite_score, 1)}</td>
                    <td>{usd(row.realized_pnl)}</td>
                    <td>{count(row.trade_count)}</td>
                    <td>{pct(row.win_rate_pct)}</td>
                    <td>{num(row.brier, 3)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </>
        )}
      </Loaded>
    </>
  );
}
