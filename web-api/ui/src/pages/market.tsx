import { useState } from 'preact/hooks';
import type { Me } from '../api.ts';
import { count, num, usd } from '../format.ts';
import { useApi } from '../hooks.ts';
import { Card, Loaded } from './shared.tsx';

interface Teaser {
  condition_id: string;
  market_title: string;
  market_category: string;
  market_state: string;
  winner_outcome: string;
  end_date: string;
  current_mid: number | null;
  mid_age_seconds: number | null;
  last_24h_volume_usdc: number;
  last_24h_fills: number;
  positioner_count: number;
  smart_money_positioner_count: number;
  consensus_latest: { service_consensus_yes: number | null; market_mid: number | null; n_positioners: number };
  top_holders: { pseudonym: string; outcome_side: string; shares_held: number }[];
}

interface FlowSide {
  buy_usdc: number;
  sell_usdc: number;
  net_usdc: number;
  net_shares: number;
}
interface FlowCohort {
  cohort: string;
  yes: FlowSide;
  no: FlowSide;
  net_yes_shares: number;
  n_wallets: number;
  n_fills: number;
}
interface Flow {
  window_hours: number;
  window_volume_usdc: number;
  window_fills: number;
  mid_yes_start: number | null;
  mid_yes_end: number | null;
  labels_as_of: string;
  cohorts: FlowCohort[];
  smart_money: FlowCohort;
  totals: FlowCohort;
}

const COHORT_NAMES: Record<string, string> = {
  liquidity_provider: 'Liquidity providers',
  sharp: 'Sharp',
  whale: 'Whales',
  other_smart_money: 'Other smart money',
  everyone_else: 'Everyone else',
  smart_money: 'Smart money (all)',
  all: 'All wallets',
};
const WINDOWS = [1, 24, 168];
const cents = (p: number | null) => (p === null ? '—' : `${(p * 100).toFixed(1)}¢`);
const signedShares = (x: number) => {
  const r = Math.round(x) || 0; // never "-0"
  return `${r > 0 ? '+' : ''}${r.toLocaleString('en-US')}`;
};

/**
 * A market: the public teaser (state, winner, mid, the last day's volume, positioners, the service's consensus next to
 * the mid, top holders) and, signed in with a plan, the order flow by cohort over a window the person picks.
 */
export function Market({ id, me }: { id: string; me: Me['user'] }) {
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
          <h2>Consensus</h2>
          <div class="cards" data-testid="consensus">
            <Card label="Service consensus (YES)" value={cents(m.consensus_latest.service_consensus_yes)} />
            <Card label="Market mid (YES)" value={cents(m.consensus_latest.market_mid)} />
            <Card label="Holders weighed" value={count(m.consensus_latest.n_positioners)} />
          </div>
          <p class="muted">
            The consensus is what current holders paid for YES, each weighed by how well calibrated they have been (lower Brier, more weight). It is a
            cost basis, not a forecast.
          </p>
          <h2>Order flow by cohort</h2>
          {me ? <FlowSection conditionId={m.condition_id} /> : <p class="card" data-testid="flow-locked">Sign in to see who is buying and selling: <a href="/signin">sign in</a>.</p>}
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

function FlowSection({ conditionId }: { conditionId: string }) {
  const [hours, setHours] = useState(24);
  const flow = useApi<Flow>(`/v1/market/${conditionId}/flow?window_hours=${hours}`);
  if (flow.state === 'error' && flow.error.code === 'plan_required') {
    return (
      <p class="card" data-testid="flow-locked">
        Order flow by cohort (smart money, whales, liquidity providers) comes with a paid plan: {flow.error.message}. See your <a href="/account">account</a>.
      </p>
    );
  }
  return (
    <>
      <fieldset class="inline">
        <legend>Window</legend>
        {WINDOWS.map((h) => (
          <label key={h}>
            <input type="radio" name="flow-window" value={h} checked={hours === h} onChange={() => setHours(h)} /> {h === 168 ? '7 days' : `${h} h`}
          </label>
        ))}
      </fieldset>
      <Loaded load={flow}>
        {(f) => (
          <>
            <p class="muted">
              {usd(f.window_volume_usdc)} in {count(f.window_fills)} fills; YES mid {cents(f.mid_yes_start)} → {cents(f.mid_yes_end)}. Cohorts as of the
              analytics of {new Date(f.labels_as_of).toUTCString()}.
            </p>
            <table data-testid="flow">
              <thead>
                <tr>
                  <th scope="col">Cohort</th>
                  <th scope="col">Wallets</th>
                  <th scope="col">Fills</th>
                  <th scope="col">YES bought − sold</th>
                  <th scope="col">NO bought − sold</th>
                  <th scope="col">Net YES shares</th>
                </tr>
              </thead>
              <tbody>
                {[...f.cohorts, f.smart_money, f.totals].map((c) => (
                  <tr key={c.cohort} data-cohort={c.cohort} class={c.cohort === 'all' || c.cohort === 'smart_money' ? 'total' : undefined}>
                    <th scope="row">{COHORT_NAMES[c.cohort] ?? c.cohort}</th>
                    <td>{count(c.n_wallets)}</td>
                    <td>{count(c.n_fills)}</td>
                    <td>{usd(c.yes.net_usdc)}</td>
                    <td>{usd(c.no.net_usdc)}</td>
                    <td data-net={num(c.net_yes_shares, 6)}>{signedShares(c.net_yes_shares)}</td>
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
