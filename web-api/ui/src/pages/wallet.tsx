/**
 * Sign in with a wallet (EIP-4361) through the browser's injected EIP-1193 provider: the service's nonce, a message
 * for this origin on Polygon (chain 137) that the wallet shows as a sign-in, the wallet's signature, the service's
 * verdict.
 */
import { useState } from 'preact/hooks';
import { getAddress } from 'viem';
import { createSiweMessage } from 'viem/siwe';
import { ApiFailure, api } from '../api.ts';
import { navigate } from '../router.ts';

interface Eip1193 {
  request(args: { method: string; params?: unknown[] }): Promise<unknown>;
}

const utf8Hex = (s: string) => `0x${[...new TextEncoder().encode(s)].map((b) => b.toString(16).padStart(2, '0')).join('')}`;

export function WalletSignIn({ onSignedIn }: { onSignedIn: () => void }) {
  const provider = (globalThis as { ethereum?: Eip1193 }).ethereum;
  const [state, setState] = useState<{ kind: 'idle' | 'busy' } | { kind: 'error'; message: string }>({ kind: 'idle' });
  if (!provider) return <p class="muted">No browser wallet found: install one (or use the email link above).</p>;
  const signIn = async () => {
    setState({ kind: 'busy' });
    try {
      const [account] = (await provider.request({ method: 'eth_requestAccounts' })) as string[];
      if (!account) throw new Error('the wallet shared no account');
      const address = getAddress(account);
      const { nonce } = await api<{ nonce: string }>('/v1/auth/siwe/nonce', { method: 'POST', body: {} });
      const message = createSiweMessage({
        address,
        chainId: 137,
        domain: location.host,
        uri: location.origin,
        version: '1',
        nonce,
        issuedAt: new Date(),
        statement: 'Sign in to Skill analytics.',
      });
      const signature = (await provider.request({ method: 'personal_sign', params: [utf8Hex(message), address] })) as string;
      await api('/v1/auth/siwe/verify', { method: 'POST', body: { message, signature } });
      onSignedIn();
      navigate('/');
    } catch (e) {
      setState({ kind: 'error', message: e instanceof ApiFailure ? e.message : (e as Error).message || String(e) });
    }
  };
  return (
    <>
      <button onClick={() => void signIn()} disabled={state.kind === 'busy'} data-testid="wallet-signin">
        Sign in with a wallet
      </button>
      {state.kind === 'error' && (
        <p class="error" role="alert">
          {state.message}
        </p>
      )}
    </>
  );
}
