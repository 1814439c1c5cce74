/** The web app: the public leaderboard and trader teasers, sign-in, the preset boards and the trader records. */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, type Me } from './api.ts';
import { interceptLinks, navigate, usePath } from './router.ts';
import { Account } from './pages/account.tsx';
import { Builder } from './pages/builder.tsx';
import { EventPage } from './pages/event.tsx';
import { Leaderboard } from './pages/leaderboard.tsx';
import { Market } from './pages/market.tsx';
import { Search } from './pages/search.tsx';
import { PresetBoard, Presets } from './pages/presets.tsx';
import { SignIn } from './pages/signin.tsx';
import { Trader } from './pages/trader.tsx';
import { Webhooks } from './pages/webhooks.tsx';
import './style.css';

function App() {
  const address = usePath();
  const path = address.split('?')[0]!;
  const [me, setMe] = useState<Me['user'] | undefined>(undefined);
  const [signedIn, setSignedIn] = useState(0);
  useEffect(() => {
    api<Me>('/v1/auth/me')
      .then((m) => setMe(m.user))
      .catch(() => setMe(null));
  }, [address, signedIn]);
  const logout = async () => {
    await api('/v1/auth/logout', { method: 'POST' }).catch(() => undefined);
    setMe(null);
    navigate('/');
  };
  const trader = path.match(/^\/trader\/([^/]+)$/);
  const preset = path.match(/^\/presets\/([a-z0-9-]+)$/);
  const market = path.match(/^\/market\/([^/]+)$/);
  const event = path.match(/^\/event\/([^/]+)$/);
  return (
    <>
      <header>
        <strong>Skill analytics</strong>
        <nav aria-label="main">
          <a href="/">Leaderboard</a>
          <a href="/presets">Presets</a>
          <a href="/builder">Ranking builder</a>
          {me && <a href="/account">Account</a>}
          {me && <a href="/webhooks">Webhooks</a>}
        </nav>
        <form
          role="search"
          onSubmit={(e) => {
            e.preventDefault();
            navigate(`/search?q=${encodeURIComponent(((e.currentTarget as HTMLFormElement).elements.namedItem('q') as HTMLInputElement).value)}`);
          }}
        >
          <input name="q" type="search" aria-label="Search traders, markets, events" placeholder="Search traders, markets…" />
        </form>
        {me ? (
          <span>
            {me.email ?? me.user_id} <button onClick={logout}>Sign out</button>
          </span>
        ) : me === null ? (
          <a href="/signin">Sign in</a>
        ) : null}
      </header>
      <main>
        {me === undefined ? (
          <p class="muted">Loading…</p>
        ) : trader ? (
          <Trader id={decodeURIComponent(trader[1]!)} me={me} />
        ) : event ? (
          <EventPage slug={decodeURIComponent(event[1]!)} />
        ) : market ? (
          <Market id={decodeURIComponent(market[1]!)} me={me} />
        ) : path === '/search' ? (
          <Search q={new URLSearchParams(location.search).get('q') ?? ''} />
        ) : preset ? (
          <PresetBoard slug={preset[1]!} me={me} />
        ) : path === '/presets' ? (
          <Presets />
        ) : path === '/account' ? (
          <Account me={me} />
        ) : path === '/webhooks' ? (
          <Webhooks me={me} />
        ) : path === '/builder' ? (
          <Builder me={me} />
        ) : path === '/signin' ? (
          <SignIn onSignedIn={() => setSignedIn((n) => n + 1)} />
        ) : path === '/' ? (
          <Leaderboard />
        ) : (
          <p class="error" role="alert">
            No page here. <a href="/">Back to the leaderboard</a>.
          </p>
        )}
      </main>
    </>
  );
}

interceptLinks();
render(<App />, document.getElementById('app')!);
