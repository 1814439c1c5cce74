/**
 * The web app's build (web-api/ui, Vite + Preact) and how the API serves it. `npm install` builds it (postinstall) and
 * `npm start` rebuilds it when a source is newer than the build, so the README's two commands still do everything.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import express from 'express';

export const UI_DIR = join(import.meta.dirname, 'ui');
export const UI_DIST = join(UI_DIR, 'dist');

function newest(dir: string): number {
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.name === 'dist' || e.name === 'node_modules') continue;
    const p = join(dir, e.name);
    t = Math.max(t, e.isDirectory() ? newest(p) : statSync(p).mtimeMs);
  }
  return t;
}

/** True when there is no build, or a source changed after it. */
export function uiStale(): boolean {
  const index = join(UI_DIST, 'index.html');
  return !existsSync(index) || newest(UI_DIR) > statSync(index).mtimeMs;
}

/** Build the web app (a few seconds); resolves with the build's seconds. */
export async function buildUi(): Promise<number> {
  const t = performance.now();
  const { build } = await import('vite');
  await build({ configFile: join(UI_DIR, 'vite.config.ts'), logLevel: 'warn' });
  return (performance.now() - t) / 1000;
}

/**
 * The web app's files, and index.html for a page address a browser opens (any GET that wants HTML outside the
 * API's own paths): the app routes it. Everything else falls through to the API's JSON 404.
 */
export function uiRouter(): express.Router {
  const router = express.Router();
  if (!existsSync(join(UI_DIST, 'index.html'))) return router;
  router.use(express.static(UI_DIST, { index: 'index.html', maxAge: '1h', setHeaders: (res, path) => path.endsWith('.html') && res.setHeader('Cache-Control', 'no-cache') }));
  router.get(/^\/(?!v1\/|v1$|x402|mcp|assets\/).*/, (req, res, next) => {
    if (!req.accepts('html')) return next();
    res.setHeader('Cache-Control', 'no-cache');
    res.sendFile(join(UI_DIST, 'index.html'));
  });
  return router;
}

// `npm run ui:build` (and postinstall): build when stale. An install without the dev tools (--omit=dev) has no
// Vite: it says so and goes on (the API is served all the same; the web app needs a full install).
if (import.meta.url === `file://${process.argv[1]}`) {
  if (!uiStale()) console.error(`web app up to date (${UI_DIST})`);
  else {
    try {
      console.error(`web app built in ${(await buildUi()).toFixed(1)} s (${UI_DIST})`);
    } catch (e) {
      const missing = (e as { code?: string }).code === 'ERR_MODULE_NOT_FOUND';
      if (!missing) throw e;
      console.error('web app not built: Vite is not installed (an install without dev dependencies); the API works without it');
    }
  }
}
