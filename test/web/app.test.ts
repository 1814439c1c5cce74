/**
 * The web app in a real browser (Debian's chromium driven by playwright-core) against the whole REST app on loopback:
 * a visitor's leaderboard, sign-in by magic link, a preset's gates funnel, a trader's reliability diagram checked
 * against /v1/trader/{proxy}/calibration, an API error shown in the service's words, axe-core on each page, and a
 * screenshot of each page (var/screenshots, looked at).
 */
import { existsSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fullBuild } from '../../core/analytics/build.ts';
import { duckRunner } from '../../data/runner.ts';
import { buildUi, uiStale } from '../../web-api/ui-build.ts';
import { startApp, type TestApp } from '../helpers/app.ts';
import { makeVenue, type TestVenue } from '../helpers/venue.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const AS_OF = new Date('2026-10-31T23:59:59Z');
const SHOTS = join('var', 'screenshots');
const axeSource = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

let v: TestVenue;
let app: TestApp;
let browser: Browser;
const timings: Record<string, number> = {};

beforeAll(async () => {
  if (uiStale()) await buildUi();
  v = await makeVenue({ wallets: 3000, days: 30, seed: 3 });
  const db = duckRunner(v.conn);
  await fullBuild(db, AS_OF);
  app = await startApp(db, { venueNow: () => AS_OF });
  if (!existsSync(CHROMIUM)) throw new Error(`no chromium at ${CHROMIUM}: apt-get install chromium (or set CHROMIUM_PATH)`);
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  mkdirSync(SHOTS, { recursive: true });
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
  v?.conn.closeSync();
  if (Object.keys(timings).length) console.log(`web app timings (ms): ${JSON.stringify(timings)}`);
});

/** axe-core on the page: no serious or critical violation. */
async function axe(page: Page, name: string): Promise<void> {
  await page.addScriptTag({ path: axeSource });
  const r = (await page.evaluate(async () => {
    const result = await (globalThis as unknown as { axe: { run: () => Promise<{ violations: { id: string; impact: string; nodes: unknown[] }[] }> } }).axe.run();
    return result.violations.map((x) => ({ id: x.id, impact: x.impact, nodes: x.nodes.length }));
  })) as { id: string; impact: string; nodes: number }[];
  const bad = r.filter((x) => x.impact === 'serious' || x.impact === 'critical');
  expect(bad, `${name}: ${JSON.stringify(bad)}`).toEqual([]);
}

describe('the web app', () => {
  it('a visitor sees the public leaderboard as the API serves it, unmeasured calibration shown as such', async () => {
    const page = await browser.newPage();
    const t0 = Date.now();
    await page.goto(`${app.base}/`);
    await page.waitForSelector('[data-testid=leaderboard] tbody tr');
    timings.leaderboard_first_paint = Date.now() - t0;
    const api = (await (await fetch(`${app.base}/v1/public/leaderboard?limit=25`)).json()) as { rows: { rank: number; wallet_label: string; tid: string; calibration_excess_z: number | null }[] };
    const rows = await page.$$eval('[data-testid=leaderboard] tbody tr', (trs) => trs.map((tr) => ({ tid: tr.getAttribute('data-tid'), cells: [...tr.querySelectorAll('td')].map((td) => td.textContent ?? '') })));
    expect(rows.map((r) => r.tid)).toEqual(api.rows.map((r) => r.tid));
    rows.forEach((r, i) => {
      expect(r.cells[0]).toBe(String(api.rows[i]!.rank));
      expect(r.cells[1]).toBe(api.rows[i]!.wallet_label);
      if (api.rows[i]!.calibration_excess_z === null) expect(r.cells[8]).toBe('unmeasured');
    });
    await page.screenshot({ path: join(SHOTS, 'leaderboard.png'), fullPage: true });
    await axe(page, 'leaderboard');
    // a trader's public teaser, from the board's link
    await page.click('[data-testid=leaderboard] tbody tr:first-child a');
    await page.waitForSelector('.cards');
    expect(await page.textContent('main')).toContain('Sign in to see the calibration record');
    await page.screenshot({ path: join(SHOTS, 'trader-teaser.png'), fullPage: true });
    await axe(page, 'trader teaser');
    await page.close();
  });

  it('signs in by magic link, opens a preset with its gates funnel, and a trader whose plotted bins are the API calibration', async () => {
    const page = await browser.newPage();
    await page.goto(`${app.base}/signin`);
    await axe(page, 'sign in');
    await page.fill('#email', 'browser@example.com');
    await page.click('button[type=submit]');
    await page.waitForSelector('[data-testid=dev-link]');
    await page.click('[data-testid=dev-link]');
    await page.waitForSelector('header button:has-text("Sign out")');
    expect(await page.textContent('header')).toContain('browser@example.com');

    const t0 = Date.now();
    await page.goto(`${app.base}/presets/sharp-forecasters`);
    await page.waitForSelector('[data-testid=funnel] li');
    timings.preset_board = Date.now() - t0;
    const ranking = (await page.evaluate(async () => (await fetch('/v1/rankings/preset/sharp-forecasters?limit=25')).json())) as {
      rows: { proxy_wallet: string }[];
      explain: { cohort_size: number; gates: { label: string; remaining: number }[] };
    };
    const funnel = await page.$$eval('[data-testid=funnel] li', (lis) => lis.map((li) => [...li.querySelectorAll('span')].map((s) => s.textContent ?? '')));
    expect(funnel.length).toBe(ranking.explain.gates.length + 1);
    expect(funnel.slice(1).map((f) => f[0])).toEqual(ranking.explain.gates.map((g) => g.label));
    expect(funnel.slice(1).map((f) => Number(f[2]!.replace(/,/g, '')))).toEqual(ranking.explain.gates.map((g) => g.remaining));
    await page.screenshot({ path: join(SHOTS, 'preset.png'), fullPage: true });
    await axe(page, 'preset');

    // the first trader of the board: the reliability diagram's points are the API's bins
    const proxy = ranking.rows[0]!.proxy_wallet;
    await page.click(`a[href="/trader/${proxy}"]`);
    await page.waitForSelector('[data-testid=reliability] circle.bin');
    const cal = (await page.evaluate(async (p) => (await fetch(`/v1/trader/${p}/calibration`)).json(), proxy)) as {
      bins: { bin_idx: number; predicted_mean: number | null; observed_rate: number | null; n: number }[];
    };
    const plotted = await page.$$eval('[data-testid=reliability] circle.bin', (cs) =>
      cs.map((c) => ({ bin: Number(c.getAttribute('data-bin')), predicted: Number(c.getAttribute('data-predicted')), observed: Number(c.getAttribute('data-observed')), n: Number(c.getAttribute('data-n')) })),
    );
    const expected = cal.bins.filter((b) => b.n > 0).map((b) => ({ bin: b.bin_idx, predicted: b.predicted_mean, observed: b.observed_rate, n: b.n }));
    expect(plotted).toEqual(expected);
    expect(plotted.length).toBeGreaterThan(3);
    // each point sits where its numbers say: x from the price paid, y from the rate that came true
    const geometry = await page.$$eval('[data-testid=reliability] circle.bin', (cs) => cs.map((c) => [Number(c.getAttribute('cx')), Number(c.getAttribute('cy'))]));
    geometry.forEach(([cx, cy], i) => {
      // a 360-unit square with 46 of margin: 268 units from 0% to 100%
      expect(cx).toBeCloseTo(46 + plotted[i]!.predicted * 268, 6);
      expect(cy).toBeCloseTo(360 - 46 - plotted[i]!.observed * 268, 6);
    });
    await page.waitForSelector('main table');
    await page.screenshot({ path: join(SHOTS, 'trader.png'), fullPage: true });
    await axe(page, 'trader');
    await page.close();
  });

  it('shows an API error in the service\'s words, not a blank page', async () => {
    const page = await browser.newPage();
    await page.goto(`${app.base}/trader/0x00000000000000000000000000000000000000aa`);
    const alert = await page.waitForSelector('[role=alert]');
    const body = (await (await fetch(`${app.base}/v1/public/trader/0x00000000000000000000000000000000000000aa`)).json()) as { message: string };
    expect(await alert.textContent()).toContain(body.message);
    // the API itself still answers JSON for an unknown path
    const r = await fetch(`${app.base}/v1/nope`, { headers: { accept: 'text/html' } });
    expect(r.headers.get('content-type')).toMatch(/json/);
    await page.close();
  });
});
