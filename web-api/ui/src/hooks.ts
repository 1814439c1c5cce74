import { useEffect, useState } from 'preact/hooks';
import { ApiFailure, api } from './api.ts';

export type Load<T> = { state: 'loading' } | { state: 'ok'; data: T } | { state: 'error'; error: ApiFailure };

/** GET `path` (null: nothing to load) and follow its state; reloads when the path changes. */
export function useApi<T>(path: string | null): Load<T> {
  const [s, set] = useState<Load<T>>({ state: 'loading' });
  useEffect(() => {
    if (path === null) return;
    let live = true;
    set({ state: 'loading' });
    api<T>(path)
      .then((data) => live && set({ state: 'ok', data }))
      .catch((e: unknown) => live && set({ state: 'error', error: e instanceof ApiFailure ? e : new ApiFailure(0, 'client', String(e)) }));
    return () => {
      live = false;
    };
  }, [path]);
  return s;
}
