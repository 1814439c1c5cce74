import type { ComponentChildren } from 'preact';
import type { Load } from '../hooks.ts';

/** A load's three faces: a quiet loading line, the service's own error message, or the content. */
export function Loaded<T>({ load, children }: { load: Load<T>; children: (data: T) => ComponentChildren }) {
  if (load.state === 'loading') return <p class="muted" aria-live="polite">Loading…</p>;
  if (load.state === 'error') return <p class="error" role="alert">{load.error.message}</p>;
  return <>{children(load.data)}</>;
}
