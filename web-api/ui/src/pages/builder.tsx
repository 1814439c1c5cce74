import { useEffect, useMemo, useState } from 'preact/hooks';
import { ApiFailure, api, type Me } from '../api.ts';
import { useApi } from '../hooks.ts';
import { count } from '../format.ts';
import { BoardTable, Funnel, type Explain } from './shared.tsx';

interface Catalogue {
  metrics: string[];
  gate_fields: Record<string, 'number' | 'boolean'>;
}
interface GateRow {
  field: string;
  op: string;
  value: string;
}
interface Result {
  rows: { rank: number; proxy_wallet: string; display: { username: string | null; pseudonym: string }; composite_score: number; realized_pnl: number; trade_count: number }[];
  total_rows: number;
  explain: Explain;
}

const OPS = ['gte', 'gt', 'lte', 'lt', 'eq', 'ne'];

/** The query string of GET /v1/rankings for a config (weights=m:w,..., gates=field:op:value,...). */
function queryOf(weights: Record<string, number>, gates: GateRow[], activeDays: string, minTrades: string, sortBy: string, limit: number): string {
  const q = new URLSearchParams();
  q.set('weights', Object.entries(weights).filter(([, w]) => w > 0).map(([m, w]) => `${m}:${w}`).join(','));
  const g = gates.filter((x) => x.field && x.value !== '').map((x) => `${x.field}:${x.op}:${x.value}`);
  if (g.length) q.set('gates', g.join(','));
  if (activeDays) q.set('active_within_days', activeDays);
  if (minTrades) q.set('min_trades', minTrades);
  if (sortBy !== 'composite') q.set('sort_by', sortBy);
  q.set('limit', String(limit));
  return q.toString();
}

/** The same config as the JSON a RankingConfig is (the agent tier's POST body, MCP's rank_traders config). */
function configOf(weights: Record<string, number>, gates: GateRow[], activeDays: string, minTrades: string, sortBy: string, types: Catalogue['gate_fields']) {
  const cohort: Record<string, number> = {};
  if (activeDays) cohort.active_within_days = Number(activeDays);
  if (minTrades) cohort.min_trades = Number(minTrades);
  return {
    cohort,
    gates: gates
      .filter((x) => x.field && x.value !== '')
      .map((x) => ({ field: x.field, op: x.op, value: types[x.field] === 'boolean' ? x.value === 'true' : Number(x.value) })),
    weights: Object.fromEntries(Object.entries(weights).filter(([, w]) => w > 0)),
    sort_by: sortBy,
  };
}

/** The ranking builder: cohort, gates, weights and sort; the funnel and the top rows follow each edit. */
export function Builder({ me }: { me: Me['user'] }) {
  const cat = useApi<Catalogue>(me ? '/v1/rankings/presets' : null);
  const [weights, setWeights] = useState<Record<string, number>>({ calibration: 1 });
  const [gates, setGates] = useState<GateRow[]>([{ field: 'trade_count', op: 'gte', value: '20' }]);
  const [activeDays, setActiveDays] = useState('');
  const [minTrades, setMinTrades] = useState('');
  const [sortBy, setSortBy] = useState('composite');
  const [result, setResult] = useState<{ query: string; data?: Result; error?: string } | null>(null);
  const query = useMemo(() => queryOf(weights, gates, activeDays, minTrades, sortBy, 10), [weights, gates, activeDays, minTrades, sortBy]);
  useEffect(() => {
    if (!me) return;
    const t = setTimeout(() => {
      api<Result>(`/v1/rankings?${query}`)
        .then((data) => setResult({ query, data }))
        .catch((e: unknown) => setResult({ query, error: e instanceof ApiFailure ? e.message : String(e) }));
    }, 250);
    return () => clearTimeout(t);
  }, [query, me]);
  if (!me) {
    return (
      <>
        <h1>Ranking builder</h1>
        <p class="muted">
          <a href="/signin">Sign in</a> to build your own ranking over every trader: cohort, gates, weights and sort.
        </p>
      </>
    );
  }
  if (cat.state !== 'ok') return <p class="muted">{cat.state === 'error' ? cat.error.message : 'Loading…'}</p>;
  const types = cat.data.gate_fields;
  const config = configOf(weights, gates, activeDays, minTrades, sortBy, types);
  const origin = location.origin;
  const curl = `curl -H "Authorization: Bearer $API_KEY" '${origin}/v1/rankings?${query}'`;
  const agent = `POST ${origin}/v1/agent/rankings/custom\ncontent-type: application/json\n\n${JSON.stringify({ ...config, limit: 10 })}`;
  const mcp = JSON.stringify({ method: 'tools/call', params: { name: 'rank_traders', arguments: { config, limit: 10 } } });
  const setGate = (i: number, patch: Partial<GateRow>) => setGates(gates.map((g, j) => (j === i ? { ...g, ...patch } : g)));
  return (
    <>
      <h1>Ranking builder</h1>
      <fieldset>
        <legend>Weights (0–100; at least one above 0)</legend>
        <div class="cards">
          {cat.data.metrics.map((m) => (
            <label key={m} class="card">
              <span class="label">{m}</span>
              <input
                type="number"
                min={0}
                max={100}
                step="any"
                name={`w-${m}`}
                value={weights[m] ?? 0}
                onInput={(e) => setWeights({ ...weights, [m]: Number((e.target as HTMLInputElement).value) || 0 })}
              />
            </label>
          ))}
        </div>
      </fieldset>
      <fieldset>
        <legend>Gates</legend>
        {gates.map((g, i) => (
          <div class="inline" key={i} style={{ display: 'flex', gap: '.5rem', marginBottom: '.4rem' }}>
            <select aria-label={`gate ${i + 1} field`} value={g.field} onChange={(e) => setGate(i, { field: (e.target as HTMLSelectElement).value })}>
              {Object.keys(types).map((f) => (
                <option key={f} value={f}>
                  {f}
                </option>
              ))}
            </select>
            <select aria-label={`gate ${i + 1} operator`} value={g.op} onChange={(e) => setGate(i, { op: (e.target as HTMLSelectElement).value })}>
              {OPS.map((o) => (
                <option key={o} value={o}>
                  {o}
                </option>
              ))}
            </select>
            <input aria-label={`gate ${i + 1} value`} value={g.value} onInput={(e) => setGate(i, { value: (e.target as HTMLInputElement).value })} />
            <button onClick={() => setGates(gates.filter((_, j) => j !== i))} aria-label={`remove gate ${i + 1}`}>
              Remove
            </button>
          </div>
        ))}
        <button onClick={() => setGates([...gates, { field: 'n_resolved_markets', op: 'gte', value: '30' }])}>Add a gate</button>
      </fieldset>
      <fieldset>
        <legend>Cohort and sort</legend>
        <div class="inline" style={{ display: 'flex', gap: '1rem', flexWrap: 'wrap' }}>
          <label>
            Active within days <input name="active_within_days" type="number" min={1} value={activeDays} onInput={(e) => setActiveDays((e.target as HTMLInputElement).value)} />
          </label>
          <label>
            Min trades <input name="min_trades" type="number" min={0} value={minTrades} onInput={(e) => setMinTrades((e.target as HTMLInputElement).value)} />
          </label>
          <label>
            Sort by{' '}
            <select name="sort_by" value={sortBy} onChange={(e) => setSortBy((e.target as HTMLSelectElement).value)}>
              <option value="composite">composite</option>
              {cat.data.metrics.map((m) => (
                <option key={m} value={m}>
                  {m}
                </option>
              ))}
            </select>
          </label>
        </div>
      </fieldset>
      <h2>Result</h2>
      {result?.error && (
        <p class="error" role="alert" data-testid="builder-error">
          {result.error}
        </p>
      )}
      {result?.data && result.query === query && (
        <>
          <Funnel explain={result.data.explain} />
          <BoardTable
            testid="builder-rows"
            rows={result.data.rows}
            trader={(r) => ({ key: r.proxy_wallet, href: `/trader/${r.proxy_wallet}`, label: r.display.username || r.display.pseudonym })}
            rowProps={(r) => ({ 'data-proxy': r.proxy_wallet })}
            columns={[{ head: 'Trades', cell: (r) => count(r.trade_count) }]}
          />
        </>
      )}
      <h2>Copy as</h2>
      <p class="muted">The same ranking from a script (an API key), an agent paying per call, or an MCP client.</p>
      <h3>curl</h3>
      <pre data-testid="copy-curl">{curl}</pre>
      <h3>Agent tier (x402)</h3>
      <pre data-testid="copy-agent">{agent}</pre>
      <h3>MCP</h3>
      <pre data-testid="copy-mcp">{mcp}</pre>
    </>
  );
}
