import type { Me } from '../api.ts';
import { useApi } from '../hooks.ts';
import { count, num, pct, usd } from '../format.ts';
import { Reliability, type Bin } from './reliability.tsx';
import { PnlChart, type DailyPnl } from './pnl-chart.tsx';
import { Card, Loaded } from './shared.tsx';

interface Teaser {
  proxy_wallet?: string;
  rank: number | null;
  total_pnl: number;
  realized_pnl: number;
  lifetime_volume_usdc: number;
  trade_count: number;
  markets_traded: number;
  win_rate_pct: number | null;
  last_trade_at: string;
  display: { username: string | null; pseudonym: string };
  pnl_under_review: boolean;
}
interface Calibration {
  bins: Bin[];
  n_total: number;
  brier: number | null;
  calibration_excess: number | null;
  calibration_excess_z: number | null;
  n_markets: number;
  ranked: boolean;
  as_of: string;
}
interface Performance {
  as_of: string;
  daily: DailyPnl[];
  risk: { sharpe: number | null; sortino: number | null; max_drawdown: number | null; risk_days: number };
  alpha: { alpha_1h_cents: number | null; alpha_24h_cents: number | null; alpha_res_cents: number | null };
  smart_money_tags: string[];
}
interface CopyFitness {
  verdict: { overall: number; tone: 'good' | 'caution' | 'bad'; title: string; copyRecommended: boolean; copiesBadly: boolean; topTag: { label: string } };
  hold_time_hours: { median: number | null } | null;
  trades_per_week: number | null;
  taker_share: number | null;
  copy_flags: string[];
}
interface Position {
  market_title: string;
  outcome: string;
  status: string;
  winner_outcome: string | null;
  shares: number;
  realized_pnl: number;
  total_pnl: number;
  last_activity_at: string;
}

const isAddress = (id: string) => /^0x[0-9a-fA-F]{40}$/.test(id);

/** A trader: the public teaser for anyone; signed in (and by address), the calibration record and the positions. */
export function Trader({ id, me }: { id: string; me: Me['user'] }) {
  const teaser = useApi<Teaser>(`/v1/public/trader/${encodeURIComponent(id)}`);
  const full = me !== null && isAddress(id);
  const cal = useApi<Calibration>(full ? `/v1/trader/${id}/calibration` : null);
  const pos = useApi<{ rows: Position[] }>(full ? `/v1/trader/${id}/positions?limit=25` : null);
  const fit = useApi<CopyFitness>(full ? `/v1/trader/${id}/copy-fitness` : null);
  const perf = useApi<Performance>(full ? `/v1/trader/${id}/performance` : null);
  return (
    <>
      <Loaded load={teaser}>
        {(t) =>
          t.display === undefined ? (
            <p class="muted">This wallet has no fill as of the latest analytics.</p>
          ) : (
            <>
              <h1>{t.display.username || t.display.pseudonym}</h1>
              {t.pnl_under_review && <p class="muted">P&amp;L under review: this wallet trades in lockstep with others.</p>}
              <div class="cards">
                <Card label="Total P&L" value={usd(t.total_pnl)} />
                <Card label="Realized P&L" value={usd(t.realized_pnl)} />
                <Card label="Volume" value={usd(t.lifetime_volume_usdc)} />
                <Card label="Trades" value={count(t.trade_count)} />
                <Card label="Markets" value={count(t.markets_traded)} />
                <Card label="Win rate" value={pct(t.win_rate_pct)} />
                <Card label="Rank (top P&L)" value={t.rank === null ? '—' : `#${t.rank}`} />
              </div>
            </>
          )
        }
      </Loaded>
      <h2>Calibration</h2>
      {!full ? (
        <p class="muted">
          {me === null ? (
            <>
              <a href="/signin">Sign in</a> to see the calibration record (a reliability diagram of the price paid against how often it came true), the
              positions with their WON / LOST / REDEEMABLE / VOID labels, alpha and risk.
            </>
          ) : (
            'The full record is shown for a trader opened by wallet address (from a ranking board).'
          )}
        </p>
      ) : (
        <Loaded load={cal}>
          {(c) => (
            <>
              <div class="cards">
                <Card label="Brier" value={num(c.brier, 3)} />
                <Card label="Calibration excess" value={num(c.calibration_excess, 3)} />
                <Card label="Excess z" value={c.calibration_excess_z === null ? 'unmeasured' : num(c.calibration_excess_z)} />
                <Card label="Resolved markets" value={`${count(c.n_markets)}${c.ranked ? '' : ' (unranked: < 30)'}`} />
              </div>
              <Reliability bins={c.bins} />
            </>
          )}
        </Loaded>
      )}
      {full && (
        <>
          <h2>P&amp;L over time, risk and alpha</h2>
          <Loaded load={perf}>
            {(p) => (
              <>
                <PnlChart daily={p.daily} />
                <div class="cards" data-testid="performance">
                  <Card label="Sharpe (annualized)" value={p.risk.sharpe === null ? 'unmeasured' : num(p.risk.sharpe)} />
                  <Card label="Sortino" value={p.risk.sortino === null ? 'unmeasured' : num(p.risk.sortino)} />
                  <Card label="Max drawdown" value={p.risk.max_drawdown === null ? 'unmeasured' : pct(p.risk.max_drawdown * 100, 1)} />
                  <Card label="Alpha 1 h" value={p.alpha.alpha_1h_cents === null ? '—' : `${num(p.alpha.alpha_1h_cents)}¢`} />
                  <Card label="Alpha 24 h" value={p.alpha.alpha_24h_cents === null ? '—' : `${num(p.alpha.alpha_24h_cents)}¢`} />
                  <Card label="Alpha to resolution" value={p.alpha.alpha_res_cents === null ? '—' : `${num(p.alpha.alpha_res_cents)}¢`} />
                  <Card label="Tags" value={p.smart_money_tags.length ? p.smart_money_tags.join(', ') : 'none'} />
                </div>
              </>
            )}
          </Loaded>
          <h2>Copy-fitness</h2>
          {fit.state === 'error' && fit.error.code === 'plan_required' ? (
            <p class="card" data-testid="locked">
              Copy-fitness (the verdict, hold times, how the trades would copy) comes with a paid plan: {fit.error.message}. See your <a href="/account">account</a>.
            </p>
          ) : (
            <Loaded load={fit}>
              {(f) => (
                <div class="cards" data-testid="copy-fitness">
                  <Card label="Verdict" value={`${f.verdict.title} (${num(f.verdict.overall, 0)})`} />
                  <Card label="Copy" value={f.verdict.copyRecommended ? 'recommended' : f.verdict.copiesBadly ? 'copies badly' : 'not recommended'} />
                  <Card label="Top tag" value={f.verdict.topTag.label} />
                  <Card label="Trades a week" value={num(f.trades_per_week, 1)} />
                  <Card label="Taker share" value={f.taker_share === null ? '—' : pct(f.taker_share * 100)} />
                </div>
              )}
            </Loaded>
          )}
          <h2>Positions</h2>
          <Loaded load={pos}>
            {(p) => (
              <table>
                <thead>
                  <tr>
                    <th scope="col">Market</th>
                    <th scope="col">Outcome</th>
                    <th scope="col">Status</th>
                    <th scope="col">Winner</th>
                    <th scope="col">Shares</th>
                    <th scope="col">Total P&amp;L</th>
                  </tr>
                </thead>
                <tbody>
                  {p.rows.map((r, i) => (
                    <tr key={i}>
                      <td>{r.market_title}</td>
                      <td>{r.outcome}</td>
                      <td>{r.status}</td>
                      <td>{r.winner_outcome ?? '—'}</td>
                      <td>{num(r.shares, 1)}</td>
                      <td>{usd(r.total_pnl)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </Loaded>
        </>
      )}
    </>
  );
}
