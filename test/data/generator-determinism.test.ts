import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { generateVenue } from '../../data/generator/index.ts';
import { DEFAULT_END } from '../../data/generator/config.ts';
import { REAL_MARKETS_CSV } from '../../data/generator/defaults.ts';

const dirs: string[] = [];
async function build(seed: number): Promise<Record<string, string>> {
  const dir = await mkdtemp(join(tmpdir(), 'venue-det-'));
  dirs.push(dir);
  await generateVenue({ wallets: 1500, days: 20, seed, end: DEFAULT_END, realMarketsCsv: REAL_MARKETS_CSV }, dir);
  const digests: Record<string, string> = {};
  for (const sub of ['venue', 'truth']) {
    for (const f of (await readdir(join(dir, sub))).sort()) {
      digests[`${sub}/${f}`] = createHash('sha256').update(await readFile(join(dir, sub, f))).digest('hex');
    }
  }
  return digests;
}

afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe('synthetic venue generator determinism', () => {
  it('writes byte-identical files for the same seed and different fills for another seed', async () => {
    const a = await build(7);
    const b = await build(7);
    const c = await build(8);
    expect(Object.keys(a)).toContain('venue/fills.parquet');
    expect(Object.keys(a).length).toBeGreaterThanOrEqual(11);
    expect(b).toEqual(a);
    expect(c['venue/fills.parquet']).not.toEqual(a['venue/fills.parquet']);
    expect(c['truth/wallets.parquet']).not.toEqual(a['truth/wallets.parquet']);
  });
});
