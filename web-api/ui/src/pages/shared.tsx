import type { ComponentChildren } from 'preact';
import type { Load } from '../hooks.ts';
import { count, num, usd } from '../format.ts';

/** A load's three faces: a quiet loading line, the service's own error message, or the content. */
export function Loaded<T>({ load, children }: { load: Load<T>; children: (data: T) => ComponentChildren }) {
  if (load.state === 'loading') return <p class="muted" aria-live="polite">Loading…</p>;
  if (load.state === 'error') return <p class="error" role="alert">{load.error.message}</p>;
  return <>{children(load.data)}</>;
}

/** A labelled figure in a row of cards. */
export function Card({ label, value }: { label: string; value: string }) {
  return (
    <div class="card">
      <div class="label">{label}</div>
      <div class="value">{value}</div>
    </div>
  );
}

export interface Explain {
  cohort_size: number;
  gates: { label: string; condition: string; remaining: number }[];
}

/** A ranking's gates funnel: cohort → each gate → scored → one row per user, bars as shares of the cohort. */
export function Funnel({ explain }: { explain: Explain }) {
  return (
    <ol class="funnel" data-testid="funnel">
      <li>
        <span>Cohort</span>
        <span class="bar" style={{ width: '100%' }} />
        <span>{count(explain.cohort_size)}</span>
      </li>
      {explain.gates.map((g) => (
        <li key={g.label} title={g.condition}>
          <span>{g.label}</span>
          <span class="bar" style={{ width: `${explain.cohort_size ? (100 * g.remaining) / explain.cohort_size : 0}%` }} />
          <span>{count(g.remaining)}</span>
        </li>
      ))}
    </ol>
  );
}

/** A board column after the four every board has: its heading and its cell. */
export interface BoardColumn<R> {
  head: string;
  cell: (r: R) => ComponentChildren;
}

/**
 * A ranking table: rank, the trader (linked to their page), the composite score and realized P&L, then the board's
 * own columns (the leaderboard, a preset's board signed in or out, the builder's result).
 */
export function BoardTable<R extends { rank: number; composite_score: number; realized_pnl: number }>(props: {
  rows: R[];
  trader: (r: R) => { key: string; href: string; label: string };
  columns: BoardColumn<R>[];
  testid?: string;
  caption?: ComponentChildren;
  rowProps?: (r: R) => Record<string, string>;
}) {
  return (
    <table data-testid={props.testid}>
      {props.caption && (
        <caption class="muted" style="text-align:left">
          {props.caption}
        </caption>
      )}
      <thead>
        <tr>
          <th scope="col">#</th>
          <th scope="col">Trader</th>
          <th scope="col">Score</th>
          <th scope="col">Realized P&amp;L</th>
          {props.columns.map((c) => (
            <th scope="col" key={c.head}>
              {c.head}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {props.rows.map((r) => {
          const t = props.trader(r);
          return (
            <tr key={t.key} {...props.rowProps?.(r)}>
              <td>{r.rank}</td>
              <td>
                <a href={t.href}>{t.label}</a>
              </td>
              <td>{num(r.composite_score, 1)}</td>
              <td>{usd(r.realized_pnl)}</td>
              {props.columns.map((c) => (
                <td key={c.head}>{c.cell(r)}</td>
              ))}
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}
