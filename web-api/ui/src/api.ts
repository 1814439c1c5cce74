/**
 * The API from the page: same origin, the session cookie rides along. Every non-2xx answer is the service's error
 * object; ApiFailure carries its message so a page shows what went wrong in the service's words.
 */
export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export async function api<T>(path: string, init: { method?: string; body?: unknown } = {}): Promise<T> {
  let res: Response;
  try {
    res = await fetch(path, {
      method: init.method ?? 'GET',
      credentials: 'same-origin',
      headers: init.body === undefined ? { accept: 'application/json' } : { accept: 'application/json', 'content-type': 'application/json' },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    });
  } catch {
    throw new ApiFailure(0, 'network', 'The service cannot be reached. Check your connection and try again.');
  }
  const text = await res.text();
  let body: unknown = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  if (!res.ok) {
    // the error object: {error (a code), message?, reason?, issues?, trace_id?}
    const e = (body ?? {}) as { error?: string; message?: string; reason?: string; issues?: { path?: unknown[]; message?: string }[] };
    // a validation error names its fields in issues: the person sees which one and why
    const issues = Array.isArray(e.issues)
      ? e.issues
          .slice(0, 3)
          .map((i) => `${Array.isArray(i.path) && i.path.length ? `${i.path.join('.')}: ` : ''}${i.message ?? ''}`)
          .filter(Boolean)
      : [];
    const base = e.message ? `${e.message}${e.reason ? ` (${e.reason})` : ''}` : `The service answered ${res.status}${e.error ? `: ${e.error}` : ''}.`;
    const message = issues.length ? `${base}: ${issues.join('; ')}` : base;
    throw new ApiFailure(res.status, e.error ?? 'http_error', message);
  }
  return body as T;
}

export interface Me {
  user: { user_id: string; email: string | null; plan: string; display_name: string | null } | null;
}
