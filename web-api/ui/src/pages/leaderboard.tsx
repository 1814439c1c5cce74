import { useApi } from '../hooks.ts';
import { count, num, pct, usd } from '../format.ts';
import { BoardTable, Loaded } from './shared.tsx';

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
            <BoardTable
              testid="leaderboard"
              caption={`Top ${b.rows.length} by composite score`}
              rows={b.rows}
              trader={(r) => ({ key: r.tid, href: `/trader/${r.tid}`, label: r.wallet_label })}
              rowProps={(r) => ({ 'data-tid': r.tid })}
              columns={[
                { head: 'Volume', cell: (r) => usd(r.lifetime_volume_usdc) },
                { head: 'Trades', cell: (r) => count(r.trade_count) },
                { head: 'Win rate', cell: (r) => pct(r.win_rate_pct) },
                { head: 'Resolved mkts', cell: (r) => count(r.n_resolved_markets) },
                {
                  head: 'Calibration z (pctile)',
                  cell: (r) =>
                    r.calibration_excess_z === null ? (
                      <span class="muted" title="fewer than 30 resolved markets">
                        unmeasured
                      </span>
                    ) : (
                      `${num(r.calibration_excess_z)} (${pct(r.calibration_excess_z_pctile)})`
                    ),
                },
              ]}
            />
          </>
        )}
      </Loaded>
    </>
  );
}
