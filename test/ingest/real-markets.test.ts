import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseCsv } from '../../data/ingest/csv.ts';
import { REAL_MARKETS_CSV, loadRealMarketsTable, parseRealMarketsCsv, readRealMarkets } from '../../data/ingest/real-markets.ts';
import { FIXTURES, count, memoryVenue, queryRows } from './helpers.ts';

describe('parseCsv', () => {
  it('splits plain fields and lines', () => {
    expect(parseCsv('a,b\n1,2\n')).toEqual([['a', 'b'], ['1', '2']]);
  });
  it('keeps commas, newlines and doubled quotes inside quoted fields', () => {
    expect(parseCsv('x,"a, b","say ""hi""","two\nlines"\r\n')).toEqual([['x', 'a, b', 'say "hi"', 'two\nlines']]);
  });
  it('keeps empty fields, including a trailing one', () => {
    expect(parseCsv('a,,c,\n')).toEqual([['a', '', 'c', '']]);
  });
  it('handles CRLF, a missing final newline and a byte-order mark', () => {
    expect(parseCsv('\uFEFFa,b\r\n1,2')).toEqual([['a', 'b'], ['1', '2']]);
  });
  it('throws on an unterminated quoted field', () => {
    expect(() => parseCsv('a,"open\n')).toThrow(/quoted/);
  });
});

describe('parseRealMarketsCsv on a hand-written sample', () => {
  const { rows, report } = parseRealMarketsCsv(readFileSync(join(FIXTURES, 'markets-sample.csv'), 'utf8'));

  it('parses quoted questions with doubled quotes and embedded newlines', () => {
    expect(rows.map((r) => r.marketId)).toEqual(['101', '102']);
    expect(rows[0]!.question).toBe('Will "Donk" say "GG"?');
    expect(rows[1]!.question).toBe('Lakers, Celtics or neither:\nwho wins?');
  });
  it('types every field: numbers, nulls for empty cells, dates, JSON arrays (numbers or numeric strings)', () => {
    expect(rows[0]).toEqual({
      marketId: '101', question: 'Will "Donk" say "GG"?', category: 'other', volume: 1000.5, volume24h: 10, liquidity: 200,
      endDate: new Date('2026-04-11T00:00:00Z'), createdDate: new Date('2026-04-06T15:20:57.487Z'), outcomes: ['Yes', 'No'], outcomePrices: [0.25, 0.75],
      bestBid: 0.24, bestAsk: 0.26, spread: 0.02, lastTradePrice: 0.25, oneDayChange: null, active: true,
    });
    expect(rows[1]).toMatchObject({ endDate: null, bestBid: null, outcomes: ['Lakers', 'Celtics'], outcomePrices: [0.6, 0.4], oneDayChange: -0.01, active: false });
  });
  it('skips and counts bad rows, naming the field', () => {
    expect(report.skipped).toEqual({ 'invalid:width': 1, 'invalid:volume': 1, 'invalid:outcome_prices': 1 });
    expect(report.rejections.join('\n')).toMatch(/volume: expected a number, got "lots"/);
  });
});

describe('readRealMarkets on the shared export (9,550 markets)', async () => {
  const rows = await readRealMarkets();

  it('parses every row', () => {
    expect(rows).toHaveLength(9550);
    expect(new Set(rows.map((r) => r.marketId)).size).toBe(9550);
  });

  it('has the category mix of the file (counted independently with Python csv)', () => {
    const mix: Record<string, number> = {};
    for (const r of rows) mix[r.category] = (mix[r.category] ?? 0) + 1;
    expect(mix).toEqual({
      other: 5138, crypto: 1360, sports: 1292, politics: 868, geopolitics: 389, science_tech: 158, economics: 134, weather: 127, entertainment: 82, pop_culture: 2,
    });
  });

  it('parses outcomes and outcome_prices: two prices per market summing to 1', () => {
    expect(rows.every((r) => r.outcomes.length === 2 && r.outcomePrices.length === 2)).toBe(true);
    expect(rows.every((r) => Math.abs(r.outcomePrices[0]! + r.outcomePrices[1]! - 1) < 1e-9)).toBe(true);
    expect(rows.filter((r) => r.outcomes[0] === 'Yes' && r.outcomes[1] === 'No')).toHaveLength(5040);
    expect(rows[0]).toMatchObject({ marketId: '1640919', question: 'US forces enter Iran by April 30?', outcomePrices: [0.9995, 0.0005], bestAsk: 1, active: false });
  });

  it('keeps nulls where the file is empty and reads the quoted questions', () => {
    expect(rows.filter((r) => r.endDate === null)).toHaveLength(56);
    expect(rows.filter((r) => r.bestBid === null)).toHaveLength(4389);
    expect(rows.filter((r) => r.active)).toHaveLength(1998);
    expect(rows.find((r) => r.marketId === '1891674')!.question).toBe('Will "Donk" be said during the PGL Bucharest 2026 Grand Final?');
  });

  it('agrees with DuckDB read_csv on row count and volume per category', async () => {
    const conn = await memoryVenue();
    const duck = await queryRows<{ category: string; n: number; volume: number }>(
      conn,
      `SELECT category, count(*)::INTEGER AS n, sum(volume) AS volume FROM read_csv('${REAL_MARKETS_CSV}', header = true, quote = '"', escape = '"', all_varchar = false) GROUP BY 1`,
    );
    for (const d of duck) {
      const mine = rows.filter((r) => r.category === d.category);
      expect(mine).toHaveLength(d.n);
      expect(mine.reduce((s, r) => s + r.volume, 0)).toBeCloseTo(d.volume, 0);
    }
  });

  it('copies into ref_real_markets idempotently', async () => {
    const conn = await memoryVenue();
    const first = await loadRealMarketsTable(conn, rows);
    const second = await loadRealMarketsTable(conn, rows);
    expect(first).toMatchObject({ inserted: 9550, duplicates: 0 });
    expect(second).toMatchObject({ inserted: 0, duplicates: 9550 });
    expect(await count(conn, 'ref_real_markets')).toBe(9550);
    const [donk] = await queryRows<{ outcomes: string[]; outcome_prices: number[] }>(conn, `SELECT outcomes, outcome_prices FROM ref_real_markets WHERE market_id = '1891674'`);
    expect(donk).toEqual({ outcomes: ['Yes', 'No'], outcome_prices: [0.0005, 0.9995] });
  });
});
