import type { Me } from '../api.ts';
import { useApi } from '../hooks.ts';
import { count, num, pct } from '../format.ts';
import { BoardTable, Funnel, Loaded, type Explain } from './shared.tsx';

interface Preset {
  slug: string;
  title: string;
  purpose: string;
}
interface Ranking {
  rows: { rank: number; proxy_wallet: string; display: { username: string | null; pseudonym: string }; composite_score: number; realized_pnl: number; trade_count: number; win_rate_pct: number | null; brier: number | null }[];
  total_rows: number;
  cohort_size: number;
  explain: Explain;
}

function PublicPresetBoard({ slug }: { slug: string }) {
  const load = useApi<PublicBoard>(`/v1/public/boards/${encodeURIComponent(slug)}?limit=25`);
  return (
    <Loaded load={load}>
      {(b) => (
        <>
          <h1>{b.title}</h1>
          <p class="muted">
            {b.purpose} <a href="/signin">Sign in</a> for the traders' full records.
          </p>
          <h2>Gates</h2>
          <Funnel explain={b.explain} />
          <h2>
            Top {b.rows.length} of {count(b.total_rows)}
          </h2>
          <BoardTable
            testid="public-board"
            rows={b.rows}
            trader={(r) => ({ key: r.tid, href: `/trader/${r.tid}`, label: r.wallet_label })}
            columns={[
              { head: 'Trades', cell: (r) => count(r.trade_count) },
              { head: 'Win rate', cell: (r) => pct(r.win_rate_pct) },
            ]}
          />
        </>
      )}
    </Loaded>
  );
}

export function Presets() {
  const load = useApi<{ presets: Preset[] }>('/v1/public/boards');
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

interface PublicBoard {
  title: string;
  purpose: string;
  total_rows: number;
  rows: { rank: number; tid: string; wallet_label: string; composite_score: number; realized_pnl: number; trade_count: number; win_rate_pct: number | null }[];
  explain: Explain;
}

/**
 * One preset: the gates funnel (cohort → each gate → scored → one row per user) and the top of the board. Signed in,
 * the full board (traders by address: their full record); otherwise the public one (traders by tid).
 */
export function PresetBoard({ slug, me }: { slug: string; me: Me['user'] }) {
  return me ? <FullPresetBoard slug={slug} /> : <PublicPresetBoard slug={slug} />;
}

function FullPresetBoard({ slug }: { slug: string }) {
  const load = useApi<Ranking>(`/v1/rankings/preset/${encodeURIComponent(slug)}?limit=25`);
  return (
    <>
      <h1>{slug}</h1>
      <Loaded load={load}>
        {(r) => (
          <>
            <h2>Gates</h2>
            <Funnel explain={r.explain} />
            <h2>Top {r.rows.length} of {count(r.total_rows)}</h2>
            <BoardTable
              rows={r.rows}
              trader={(row) => ({ key: row.proxy_wallet, href: `/trader/${row.proxy_wallet}`, label: row.display.username || row.display.pseudonym })}
              columns={[
                { head: 'Trades', cell: (row) => count(row.trade_count) },
                { head: 'Win rate', cell: (row) => pct(row.win_rate_pct) },
                { head: 'Brier', cell: (row) => num(row.brier, 3) },
              ]}
            />
          </>
        )}
      </Loaded>
    </>
  );
}
