import { useApi } from '../hooks.ts';
import { count, num, pct, usd } from '../format.ts';
import { Loaded } from './shared.tsx';

interface Row {
  rank: number;
  tid: string;
  wallet_label: string;
  composite_score: number;
  realized_pnl: number;
  lifetime_volume_usdc: number;
  trade_count: number;
  win_rate_pct: number | null;
  n_resolved_markets: number;
  calibration_excess_z: number | null;
  calibration_excess_z_pctile: number | null;
}
interface Board {
  preset: string;
  title: string;
  rows: Row[];
  total_rows: number;
  snapshot_age_seconds: number;
  as_of: string;
}

/** The public leaderboard: anyone, no sign-in. Calibration is null ("unmeasured") under 30 resolved markets, never 0. */
export function Leaderboard() {
  const load = useApi<Board>('/v1/public/leaderboard?limit=25');
  return (
    <>
      <h1>Leaderboard</h1>
      <Loaded load={load}>
        {(b) => (
          <>
            <p class="muted">
              {b.title}: {count(b.total_rows)} traders, as of {new Date(b.as_of).toUTCString()} ({count(b.snapshot_age_seconds)} s ago). Calibration
              excess z reads <em>unmeasured</em> for a trader with fewer than 30 resolved markets.
            </p>
            <table data-testid="leaderboard">
              <caption class="muted" style="text-align:left">Top {b.rows.length} by composite score</caption>
              <thead>
                <tr>
                  <th scope="col">#</th>
                  <th scope="col">Trader</th>
                  <th scope="col">Score</th>
                  <th scope="col">Realized P&amp;L</th>
                  <th scope="col">Volume</th>
                  <th scope="col">Trades</th>
                  <th scope="col">Win rate</th>
                  <th scope="col">Resolved mkts</th>
                  <th scope="col">Calibration z (pctile)</th>
                </tr>
              </thead>
              <tbody>
                {b.rows.map((r) => (
                  <tr key={r.tid} data-tid={r.tid}>
                    <td>{r.rank}</td>
                    <td>
                      <a href={`/trader/${r.tid}`}>{r.wallet_label}</a>
                    </td>
                    <td>{num(r.composite_score, 1)}</td>
                    <td>{usd(r.realized_pnl)}</td>
                    <td>{usd(r.lifetime_volume_usdc)}</td>
                    <td>{count(r.trade_count)}</td>
                    <td>{pct(r.win_rate_pct)}</td>
                    <td>{count(r.n_resolved_markets)}</td>
                    <td>
                      {r.calibration_excess_z === null ? (
                        <span class="muted" title="fewer than 30 resolved markets">unmeasured</span>
                      ) : (
                        `${num(r.calibration_excess_z)} (${pct(r.calibration_excess_z_pctile)})`
                      )}
                    </td>
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
