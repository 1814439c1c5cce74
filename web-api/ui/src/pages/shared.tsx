import type { ComponentChildren } from 'preact';
import type { Load } from '../hooks.ts';
import { count } from '../format.ts';

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
