import { describe, expect, it } from 'vitest';
import { loadGammaEvents, loadGammaMarkets, normalizeCategory, numeratorsFromOutcomePrices, outcomeLabels } from '../../data/ingest/gamma.ts';
import { parseVenueDate } from '../../data/ingest/zod-types.ts';
import { M, RURITANIA_GROUP } from '../fixtures/ingest/world.ts';
import { count, fixture, memoryVenue, queryRows } from './helpers.ts';

const d = (iso: string) => new Date(iso);

describe('Gamma helpers', () => {
  it('outcomeLabels: the venue\'s names unless they are Yes / No (any case, trimmed)', () => {
    expect(outcomeLabels(['Yes', 'No'])).toBeNull();
    expect(outcomeLabels([' YES', 'no '])).toBeNull();
    expect(outcomeLabels(['Up', 'Down'])).toEqual(['Up', 'Down']);
    expect(outcomeLabels(['No', 'Yes'])).toEqual(['No', 'Yes']);
    expect(outcomeLabels(['Lakers', ''])).toBeNull();
    expect(outcomeLabels(['A', 'B', 'C'])).toBeNull();
  });

  it('reads outcomePrices as a resolution only for exact settled vectors', () => {
    expect(numeratorsFromOutcomePrices([1, 0])).toEqual([1, 0]);
    expect(numeratorsFromOutcomePrices([0, 1])).toEqual([0, 1]);
    expect(numeratorsFromOutcomePrices([0.5, 0.5])).toEqual([1, 1]);
    expect(numeratorsFromOutcomePrices([0.9995, 0.0005])).toBeNull();
    expect(numeratorsFromOutcomePrices([1, 0, 0])).toBeNull();
  });
  it('normalises categories to the CSV style', () => {
    expect(normalizeCategory('Pop-Culture ')).toBe('pop_culture');
    expect(normalizeCategory('US-current-affairs')).toBe('us_current_affairs');
    expect(normalizeCategory('  ')).toBeNull();
  });
  it('parses the venue date spellings as UTC', () => {
    expect(parseVenueDate('2026-05-29 20:01:13+00')).toEqual(d('2026-05-29T20:01:13Z'));
    expect(parseVenueDate('2026-06-17')).toEqual(d('2026-06-17T00:00:00Z'));
    expect(parseVenueDate('2026-03-18T16:29:07.71272Z')).toEqual(d('2026-03-18T16:29:07.712Z'));
    expect(parseVenueDate('2026-03-18T16:29:07')).toEqual(d('2026-03-18T16:29:07Z'));
    expect(parseVenueDate('soon')).toBeNull();
  });
});

describe('loadGammaMarkets', () => {
  it('loads the five valid markets, their complete parent events and the three settled resolutions', async () => {
    const conn = await memoryVenue();
    const report = await loadGammaMarkets(conn, fixture('gamma-markets.json'));
    expect(report).toMatchObject({
      inserted: 5,
      duplicates: 0,
      skipped: { 'invalid:conditionId': 1, 'invalid:clobTokenIds': 1, not_binary: 1 },
      rows: { events: 2, markets: 5, resolutions: 3 },
    });
    expect(report.rejections.join('\n')).toMatch(/broken-condition-id: conditionId: expected 0x \+ 64 hex digits/);
    expect(report.rejections.join('\n')).toMatch(/clobTokenIds: expected a JSON array string/);

    const markets = await queryRows(conn, 'SELECT * FROM markets ORDER BY market_id');
    expect(markets[0]).toEqual({
      market_id: 1, condition_id: M.fed.conditionId, question_id: M.fed.questionID, event_id: 21001,
      question: 'Will the Fed cut rates at the June 2026 meeting?', slug: 'will-the-fed-cut-rates-at-the-june-2026-meeting', category: 'economics',
      yes_token_id: M.fed.yes, no_token_id: M.fed.no, neg_risk: false, neg_risk_market_id: null,
      created_at: d('2026-03-02T15:04:11.512Z'), trading_opens_at: d('2026-03-02T16:00:00Z'), end_date: d('2026-06-17T18:00:00Z'), closed_at: null,
      liquidity_usdc: 84500.1, volume_usdc: 1523400.55, source: 'gamma', outcome_labels: null,
    });
    // Upper-case condition id is stored lowercase; category falls back to the event's; startDate absent -> createdAt.
    expect(markets[1]).toMatchObject({ market_id: 2, condition_id: M.btc.conditionId, event_id: 21002, category: 'crypto', trading_opens_at: d('2026-05-22T12:00:00Z'), closed_at: d('2026-05-29T20:01:13Z'), volume_usdc: 250000, liquidity_usdc: 0 });
    // No category on the market or its (partial) event -> 'other'; first token is index 0 whatever its label.
    expect(markets[2]).toMatchObject({ market_id: 3, event_id: 21003, category: 'other', yes_token_id: M.nba.yes, no_token_id: M.nba.no });
    // ... and the venue's names of the outcomes are kept ("Yes"/"No" markets keep none: YES / NO)
    expect(markets[2]!.outcome_labels).toEqual(['Lakers', 'Celtics']);
    expect(markets.filter((m) => m.outcome_labels !== null).length).toBe(1);
    expect(markets[3]).toMatchObject({ market_id: 4, event_id: null, category: 'crypto', volume_usdc: 12000.25, liquidity_usdc: null });
    expect(markets[4]).toMatchObject({ market_id: 5, category: 'weather', closed_at: d('2026-06-20T00:00:05Z') });

    expect(await queryRows(conn, 'SELECT * EXCLUDE (seq) FROM resolutions ORDER BY market_id')).toEqual([
      { market_id: 2, winner: 'YES', winner_index: 0, payout_numerators: [1, 0], payout_yes: 1, payout_no: 0, outcome_slot_count: 2, resolved_at: d('2026-05-29T20:01:13Z'), tx_hash: '' },
      { market_id: 3, winner: 'NO', winner_index: 1, payout_numerators: [0, 1], payout_yes: 0, payout_no: 1, outcome_slot_count: 2, resolved_at: d('2026-05-03T02:41:00Z'), tx_hash: '' },
      { market_id: 4, winner: 'INVALID', winner_index: -1, payout_numerators: [1, 1], payout_yes: 0.5, payout_no: 0.5, outcome_slot_count: 2, resolved_at: d('2026-06-01T10:00:00Z'), tx_hash: '' },
    ]);

    expect(await queryRows(conn, 'SELECT event_id, slug, canonical_slug, category, neg_risk, created_at, start_at, end_at, source FROM events ORDER BY event_id')).toEqual([
      { event_id: 21001, slug: 'fed-decision-in-june-2026', canonical_slug: 'fed-decision-in-june-2026', category: 'economics', neg_risk: false, created_at: d('2026-03-02T15:00:00Z'), start_at: d('2026-03-02T16:00:00Z'), end_at: d('2026-06-17T18:00:00Z'), source: 'gamma' },
      { event_id: 21002, slug: 'bitcoin-above-on-may-29', canonical_slug: 'bitcoin-above-on-may-29', category: 'crypto', neg_risk: false, created_at: d('2026-05-22T11:58:00Z'), start_at: null, end_at: d('2026-05-29T20:00:00Z'), source: 'gamma' },
    ]);
  });

  it('is idempotent: a second load inserts nothing', async () => {
    const conn = await memoryVenue();
    await loadGammaMarkets(conn, fixture('gamma-markets.json'));
    const again = await loadGammaMarkets(conn, fixture('gamma-markets.json'));
    expect(again).toMatchObject({ inserted: 0, duplicates: 5, rows: {} });
    expect(await count(conn, 'markets')).toBe(5);
    expect(await count(conn, 'resolutions')).toBe(3);
    expect(await count(conn, 'events')).toBe(2);
  });

  it('a market first seen open and later closed keeps its id, gains closed_at and its resolution', async () => {
    const conn = await memoryVenue();
    const markets = fixture<Record<string, unknown>[]>('gamma-markets.json');
    await loadGammaMarkets(conn, markets);
    const fedClosed = { ...markets[0], closed: true, closedTime: '2026-06-17T18:05:00Z', outcomePrices: '["0", "1"]' };
    const report = await loadGammaMarkets(conn, [fedClosed]);
    expect(report).toMatchObject({ inserted: 0, duplicates: 1, rows: { resolutions: 1 } });
    expect(await queryRows(conn, `SELECT market_id, closed_at FROM markets WHERE condition_id = '${M.fed.conditionId}'`)).toEqual([{ market_id: 1, closed_at: d('2026-06-17T18:05:00Z') }]);
    expect(await queryRows(conn, 'SELECT winner, resolved_at FROM resolutions WHERE market_id = 1')).toEqual([{ winner: 'NO', resolved_at: d('2026-06-17T18:05:00Z') }]);
  });

  it('never throws on garbage: a non-array file and non-object rows are counted', async () => {
    const conn = await memoryVenue();
    expect((await loadGammaMarkets(conn, { not: 'an array' })).skipped).toEqual({ 'invalid:file': 1 });
    const report = await loadGammaMarkets(conn, [null, 42, { question: 'no ids' }]);
    expect(Object.values(report.skipped).reduce((a, b) => a + b, 0)).toBe(3);
    expect(await count(conn, 'markets')).toBe(0);
  });
});

describe('loadGammaEvents', () => {
  it('loads events with their nested markets; markets inherit neg-risk group and category from the event', async () => {
    const conn = await memoryVenue();
    const report = await loadGammaEvents(conn, fixture('gamma-events.json'));
    expect(report).toMatchObject({
      inserted: 2,
      duplicates: 0,
      skipped: { 'invalid:id': 1, 'invalid:creationDate': 1, 'market:invalid:questionID': 1, 'market:parent_event_invalid': 1 },
      rows: { events: 2, markets: 4, resolutions: 2 },
    });
    expect(report.warnings).toHaveLength(1);
    expect(report.warnings[0]).toMatch(/blue-party.*neg-risk never voids/);

    expect(await queryRows(conn, 'SELECT event_id, category, subcategory, series_slug, neg_risk, neg_risk_market_id, created_at, start_at, end_at FROM events ORDER BY event_id')).toEqual([
      { event_id: 31001, category: 'politics', subcategory: null, series_slug: null, neg_risk: true, neg_risk_market_id: RURITANIA_GROUP, created_at: d('2026-01-10T12:00:00Z'), start_at: d('2026-01-10T12:00:00Z'), end_at: d('2026-06-07T00:00:00Z') },
      // No event category: the first nested market's; the kick-off (startTime) is start_at.
      { event_id: 31002, category: 'sports', subcategory: null, series_slug: 'ucl-2026', neg_risk: false, neg_risk_market_id: null, created_at: d('2026-05-20T08:00:00Z'), start_at: d('2026-05-30T19:00:00Z'), end_at: d('2026-05-30T22:00:00Z') },
    ]);
    expect(await queryRows(conn, 'SELECT market_id, condition_id, event_id, category, neg_risk, neg_risk_market_id, trading_opens_at FROM markets ORDER BY market_id')).toEqual([
      { market_id: 1, condition_id: M.red.conditionId, event_id: 31001, category: 'politics', neg_risk: true, neg_risk_market_id: RURITANIA_GROUP, trading_opens_at: d('2026-01-10T12:00:00Z') },
      // Blue carries no negRiskMarketID of its own: the event's.
      { market_id: 2, condition_id: M.blue.conditionId, event_id: 31001, category: 'politics', neg_risk: true, neg_risk_market_id: RURITANIA_GROUP, trading_opens_at: d('2026-01-10T12:00:00Z') },
      { market_id: 3, condition_id: M.green.conditionId, event_id: 31001, category: 'politics', neg_risk: true, neg_risk_market_id: RURITANIA_GROUP, trading_opens_at: d('2026-01-10T12:00:00Z') },
      { market_id: 4, condition_id: M.ucl.conditionId, event_id: 31002, category: 'sports', neg_risk: false, neg_risk_market_id: null, trading_opens_at: d('2026-05-21T00:00:00Z') },
    ]);
    // A 0.5/0.5 neg-risk question is not voided: winner null, payouts from the numerators.
    expect(await queryRows(conn, 'SELECT market_id, winner, winner_index, payout_numerators, payout_yes, payout_no FROM resolutions ORDER BY market_id')).toEqual([
      { market_id: 2, winner: null, winner_index: -1, payout_numerators: [1, 1], payout_yes: 0.5, payout_no: 0.5 },
      { market_id: 3, winner: 'NO', winner_index: 1, payout_numerators: [0, 1], payout_yes: 0, payout_no: 1 },
    ]);
  });

  it('is idempotent and shares market ids with a markets file loaded before', async () => {
    const conn = await memoryVenue();
    await loadGammaMarkets(conn, fixture('gamma-markets.json'));
    await loadGammaEvents(conn, fixture('gamma-events.json'));
    const again = await loadGammaEvents(conn, fixture('gamma-events.json'));
    expect(again).toMatchObject({ inserted: 0, duplicates: 2, rows: {} });
    expect(await queryRows(conn, 'SELECT min(market_id) AS lo, max(market_id) AS hi, count(*)::INTEGER AS n FROM markets')).toEqual([{ lo: 1, hi: 9, n: 9 }]);
    expect(await count(conn, 'events')).toBe(4);
  });
});
