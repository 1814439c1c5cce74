/** Which venue the environment names: npm start and every CLI (admin, mcp:stdio, analytics:build) find the same files. */
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { VenueSelectError, parseVenue, venueDbPath, venueRoot } from '../../data/venue-select.ts';
import { defaultServiceDb } from '../../scripts/admin.ts';

const dir = mkdtempSync(join(tmpdir(), 'venue-select-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('venue selection', () => {
  it('demo (the default) is the generated venue of DEMO_*; polymarket lives in DATA_DIR/polymarket; a directory is itself', () => {
    expect(venueRoot({})).toBe(resolve('var', 'demo-w100000-d120-s42'));
    expect(venueRoot({ DATA_DIR: dir, DEMO_WALLETS: '500', DEMO_DAYS: '3', DEMO_SEED: '7' })).toBe(join(dir, 'demo-w500-d3-s7'));
    expect(venueRoot({ VENUE: 'polymarket', DATA_DIR: dir })).toBe(join(dir, 'polymarket'));
    expect(venueRoot({ VENUE: dir })).toBe(dir);
    // the admin command reads the accounts of that venue
    expect(defaultServiceDb({ VENUE: 'polymarket', DATA_DIR: dir })).toBe(join(dir, 'polymarket', 'service.sqlite'));
    expect(defaultServiceDb({ VENUE: 'polymarket', SERVICE_DB: '/x.sqlite' })).toBe('/x.sqlite');
  });

  it('a directory must exist and hold venue.duckdb or Parquet venue tables; the error says what was expected', () => {
    expect(() => parseVenue(join(dir, 'nope'), 'var')).toThrow(VenueSelectError);
    expect(() => parseVenue(join(dir, 'nope'), 'var')).toThrow(/expected demo, polymarket or a venue directory/);
    const empty = join(dir, 'empty');
    mkdirSync(empty);
    expect(() => venueDbPath(parseVenue(empty, 'var') as { kind: 'dir'; root: string })).toThrow(/neither venue.duckdb nor Parquet venue tables/);
    const parquet = join(dir, 'export');
    mkdirSync(join(parquet, 'venue'), { recursive: true });
    for (const t of ['fills', 'markets']) writeFileSync(join(parquet, 'venue', `${t}.parquet`), '');
    expect(venueDbPath(parseVenue(parquet, 'var') as { kind: 'dir'; root: string })).toBe(join(parquet, 'venue.duckdb'));
  });
});
