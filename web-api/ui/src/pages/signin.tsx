import { useState } from 'preact/hooks';
import { ApiFailure, api } from '../api.ts';
import { WalletSignIn } from './wallet.tsx';

/** Sign in by magic link: the service mails a one-time link (in development it also hands it back here). */
export function SignIn({ onSignedIn }: { onSignedIn: () => void }) {
  const [email, setEmail] = useState('');
  const [state, setState] = useState<{ kind: 'idle' } | { kind: 'sending' } | { kind: 'sent'; devLink?: string } | { kind: 'error'; message: string }>({ kind: 'idle' });
  const submit = async (e: Event) => {
    e.preventDefault();
    setState({ kind: 'sending' });
    try {
      const r = await api<{ ok: boolean; dev_link?: string }>('/v1/auth/magic/start', { method: 'POST', body: { email, next: '/' } });
      setState({ kind: 'sent', devLink: r.dev_link });
    } catch (err) {
      setState({ kind: 'error', message: err instanceof ApiFailure ? err.message : String(err) });
    }
  };
  return (
    <>
      <h1>Sign in</h1>
      <form class="inline" onSubmit={submit}>
        <label for="email">Email</label>
        <input id="email" type="email" required autocomplete="email" value={email} onInput={(e) => setEmail((e.target as HTMLInputElement).value)} />
        <button class="primary" type="submit" disabled={state.kind === 'sending'}>
          Send me a sign-in link
        </button>
      </form>
      {state.kind === 'sent' && (
        <p role="status">
          Check your mail for the link (valid 15 minutes).
          {state.devLink && (
            <>
              {' '}
              Development: <a href={state.devLink} data-testid="dev-link">open the sign-in link</a>.
            </>
          )}
        </p>
      )}
      {state.kind === 'error' && (
        <p class="error" role="alert">
          {state.message}
        </p>
      )}
      <h2>Or with a wallet</h2>
      <WalletSignIn onSignedIn={onSignedIn} />
    </>
  );
}
