import { useApi } from '../hooks.ts';
import { count, usd } from '../format.ts';
import { Loaded } from './shared.tsx';

interface Question {
  condition_id: string;
  title: string;
  yes_mid: number | null;
  no_mid: number | null;
  yes_mid_freshness: { class: string; source: string };
  volume_24h_usdc: number;
  fills_24h: number;
  market_state: string;
  winner_outcome: string;
}
interface EventView {
  title: string;
  category: string;
  live: boolean;
  ended: boolean;
  questions: Question[];
  totals: { volume_24h_usdc: number; fills_24h: number; traders_24h: number; open_questions: number };
}

// the consensus is one teaser request per question: the first rows of a large event only
const CONSENSUS_ROWS = 40;

/** A question's service consensus (the public market teaser's cost basis of current holders), beside its mid. */
function Consensus({ conditionId }: { conditionId: string }) {
  const t = useApi<{ consensus_latest: { service_consensus_yes: number | null; n_positioners: number } }>(`/v1/public/market/${conditionId}`);
  if (t.state !== 'ok') return <span class="muted">{t.state === 'loading' ? '…' : '—'}</span>;
  const c = t.data.consensus_latest;
  return <span title={`${c.n_positioners} holders weighed`}>{c.service_consensus_yes === null ? '—' : `${(c.service_consensus_yes * 100).toFixed(1)}%`}</span>;
}

/**
 * An event (fixture): its questions with their mids (and how fresh), the service's consensus beside each mid, the
 * day's flow, winners once resolved. A question links to its market page (flow by cohort, holders).
 */
export function EventPage({ slug }: { slug: string }) {
  const load = useApi<EventView>(`/v1/public/event/${encodeURIComponent(slug)}`);
  return (
    <Loaded load={load}>
      {(e) => (
        <>
          <h1>{e.title}</h1>
          <p class="muted">
            {e.category} · {e.live ? 'live' : e.ended ? 'ended' : 'not started'} · 24 h: {usd(e.totals.volume_24h_usdc)}, {count(e.totals.fills_24h)} fills,{' '}
            {count(e.totals.traders_24h)} traders
          </p>
          <table data-testid="questions">
            <thead>
              <tr>
                <th scope="col">Question</th>
                <th scope="col">State</th>
                <th scope="col">YES mid</th>
                <th scope="col">Mid</th>
                <th scope="col">Consensus (YES)</th>
                <th scope="col">Volume 24 h</th>
                <th scope="col">Winner</th>
              </tr>
            </thead>
            <tbody>
              {e.questions.map((q, i) => (
                <tr key={q.condition_id}>
                  <td>
                    <a href={`/market/${q.condition_id}`}>{q.title}</a>
                  </td>
                  <td>{q.market_state}</td>
                  <td>{q.yes_mid === null ? '—' : `${(q.yes_mid * 100).toFixed(1)}%`}</td>
                  <td class="muted">
                    {q.yes_mid_freshness.class} ({q.yes_mid_freshness.source === 'last_trade' ? 'last trade' : 'mid history'})
                  </td>
                  <td>{i < CONSENSUS_ROWS ? <Consensus conditionId={q.condition_id} /> : '—'}</td>
                  <td>{usd(q.volume_24h_usdc)}</td>
                  <td>{q.winner_outcome || '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </Loaded>
  );
}
