/**
 * Gamma API loaders: market objects (GET /markets) and event objects with nested markets (GET /events) into
 * `events`, `markets` and, for closed markets whose outcomePrices show a settled payout, `resolutions`.
 * docs/ingest.md explains each mapping decision.
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import { z } from 'zod';
import { sqlString } from '../duckdb.ts';
import { insertNew, type Row } from './insert.ts';
import { lookupMarketsByCondition, nextId } from './ids.ts';
import { payoutsFromNumerators } from './payouts.ts';
import { ReportBuilder, type IngestReport } from './report.ts';
import { bytes32Schema, jsonArray, numberish, optionalField, tokenIdSchema, venueDateSchema } from './zod-types.ts';

const eventIdSchema = z
  .union([z.string().regex(/^[0-9]{1,18}$/, { error: 'expected a numeric event id' }), z.number().int().nonnegative()])
  .transform(Number);

export const gammaEventSchema = z.object({
  id: eventIdSchema,
  slug: z.string().min(1),
  title: z.string().min(1),
  category: optionalField(z.string()),
  subcategory: optionalField(z.string()),
  seriesSlug: optionalField(z.string()),
  series: optionalField(z.array(z.object({ slug: z.string() }).loose())),
  negRisk: optionalField(z.boolean()),
  negRiskMarketID: optionalField(bytes32Schema),
  creationDate: optionalField(venueDateSchema),
  createdAt: optionalField(venueDateSchema),
  startDate: optionalField(venueDateSchema),
  startTime: optionalField(venueDateSchema),
  endDate: optionalField(venueDateSchema),
  markets: optionalField(z.array(z.unknown())),
});
export type GammaEvent = z.output<typeof gammaEventSchema>;

export const gammaMarketSchema = z.object({
  id: optionalField(z.union([z.string(), z.number()])),
  question: z.string().min(1),
  conditionId: bytes32Schema,
  questionID: bytes32Schema,
  slug: z.string().min(1),
  clobTokenIds: jsonArray(tokenIdSchema),
  outcomes: jsonArray(z.string()),
  outcomePrices: optionalField(jsonArray(numberish)),
  category: optionalField(z.string()),
  negRisk: optionalField(z.boolean()),
  negRiskMarketID: optionalField(bytes32Schema),
  createdAt: optionalField(venueDateSchema),
  startDate: optionalField(venueDateSchema),
  endDate: optionalField(venueDateSchema),
  closedTime: optionalField(venueDateSchema),
  closed: optionalField(z.boolean()),
  liquidity: optionalField(numberish),
  liquidityNum: optionalField(numberish),
  volume: optionalField(numberish),
  volumeNum: optionalField(numberish),
  events: optionalField(z.array(z.object({ id: eventIdSchema }).loose())),
});
export type GammaMarket = z.output<typeof gammaMarketSchema>;

/** What a market inherits from the event it is nested in (or that its `events[0]` names). */
interface ParentEvent {
  eventId: number | null;
  category: string | null;
  negRisk: boolean | undefined;
  negRiskMarketId: string | undefined;
}

/** 'Pop-Culture ' -> 'pop_culture', matching the CSV export's lowercase snake_case categories. */
export function normalizeCategory(raw: string | undefined | null): string | null {
  const c = (raw ?? '').trim().toLowerCase().replace(/[^a-z0-9]+/g, '_').replace(/^_+|_+$/g, '');
  return c === '' ? null : c;
}

/**
 * Payout numerators visible in a closed market's outcomePrices: [1,0] -> YES, [0,1] -> NO, [0.5,0.5] -> [1,1].
 * Anything else (e.g. [0.9995, 0.0005] while the oracle is pending) is not a resolution.
 */
export function numeratorsFromOutcomePrices(prices: readonly number[]): [number, number] | null {
  if (prices.length !== 2) return null;
  const [a, b] = prices as [number, number];
  if (a === 1 && b === 0) return [1, 0];
  if (a === 0 && b === 1) return [0, 1];
  if (a === 0.5 && b === 0.5) return [1, 1];
  return null;
}

function eventRow(e: GammaEvent, fallbackCategory: string | null): Row | null {
  const createdAt = e.creationDate ?? e.createdAt ?? e.startDate;
  if (!createdAt) return null;
  return {
    event_id: e.id,
    slug: e.slug,
    canonical_slug: e.slug,
    title: e.title,
    category: normalizeCategory(e.category) ?? fallbackCategory ?? 'other',
    subcategory: normalizeCategory(e.subcategory),
    series_slug: e.seriesSlug ?? e.series?.[0]?.slug ?? null,
    neg_risk: e.negRisk ?? false,
    neg_risk_market_id: e.negRiskMarketID ?? null,
    created_at: createdAt,
    // Sports events carry the kick-off in startTime; startDate is the listing date.
    start_at: e.startTime ?? e.startDate ?? null,
    end_at: e.endDate ?? null,
    source: 'gamma',
  };
}

interface ParsedMarket {
  m: GammaMarket;
  parent: ParentEvent;
  where: string;
}

/** Load Gamma market objects (GET /markets). Parent events embedded in `events` are loaded too when complete. */
export async function loadGammaMarkets(conn: DuckDBConnection, markets: unknown): Promise<IngestReport> {
  const rb = new ReportBuilder();
  if (!Array.isArray(markets)) {
    rb.skip('invalid:file', 'gamma markets: expected a JSON array of market objects');
    return rb.report;
  }
  const parsed: ParsedMarket[] = [];
  const events: Row[] = [];
  markets.forEach((raw, i) => {
    const r = gammaMarketSchema.safeParse(raw);
    if (!r.success) return rb.reject(`market[${i}]${label(raw)}`, r.error);
    const ev = r.data.events?.[0];
    const full = ev ? gammaEventSchema.safeParse(ev) : undefined;
    if (full?.success) {
      const row = eventRow(full.data, null);
      if (row) events.push(row);
    }
    parsed.push({
      m: r.data,
      where: `market[${i}] ${r.data.slug}`,
      parent: {
        eventId: ev?.id ?? null,
        category: full?.success ? normalizeCategory(full.data.category) : null,
        negRisk: full?.success ? full.data.negRisk : undefined,
        negRiskMarketId: full?.success ? full.data.negRiskMarketID : undefined,
      },
    });
  });
  rb.addRows('events', await insertNew(conn, 'events', events, ['event_id']));
  await insertMarkets(conn, parsed, rb);
  return rb.report;
}

/** Load Gamma event objects (GET /events) and the markets nested in each. */
export async function loadGammaEvents(conn: DuckDBConnection, events: unknown): Promise<IngestReport> {
  const rb = new ReportBuilder();
  if (!Array.isArray(events)) {
    rb.skip('invalid:file', 'gamma events: expected a JSON array of event objects');
    return rb.report;
  }
  const eventRows: Row[] = [];
  const nested: ParsedMarket[] = [];
  const marketRb = new ReportBuilder();
  events.forEach((raw, i) => {
    const r = gammaEventSchema.safeParse(raw);
    if (!r.success) {
      rb.reject(`event[${i}]${label(raw)}`, r.error);
      return countOrphans(raw, marketRb);
    }
    const e = r.data;
    const parsedMarkets = (e.markets ?? []).map((m) => gammaMarketSchema.safeParse(m));
    // An event without its own category takes its first nested market's.
    const firstCategory = parsedMarkets.find((m) => m.success && m.data.category)?.data?.category;
    const row = eventRow(e, normalizeCategory(firstCategory));
    if (!row) {
      rb.skip('invalid:creationDate', `event[${i}] ${e.slug}: no creationDate, createdAt or startDate`);
      return countOrphans(raw, marketRb);
    }
    eventRows.push(row);
    const parent: ParentEvent = { eventId: e.id, category: normalizeCategory(e.category) ?? (row.category as string), negRisk: e.negRisk, negRiskMarketId: e.negRiskMarketID };
    parsedMarkets.forEach((m, j) => {
      const where = `event[${i}] ${e.slug} market[${j}]`;
      if (!m.success) return marketRb.reject(where, m.error);
      nested.push({ m: m.data, parent, where: `${where} ${m.data.slug}` });
    });
  });
  const inserted = await insertNew(conn, 'events', eventRows, ['event_id']);
  rb.report.inserted = inserted;
  rb.report.duplicates = eventRows.length - inserted;
  rb.addRows('events', inserted);
  await insertMarkets(conn, nested, marketRb);
  rb.merge(marketRb.report, 'market:');
  return rb.report;
}

/** Markets nested in a rejected event are not loaded (their event_id would dangle): count them. */
function countOrphans(rawEvent: unknown, rb: ReportBuilder): void {
  const markets = (rawEvent as { markets?: unknown } | null)?.markets;
  if (Array.isArray(markets)) markets.forEach(() => rb.skip('parent_event_invalid'));
}

function label(raw: unknown): string {
  const o = raw as { slug?: unknown; id?: unknown } | null;
  const l = typeof o?.slug === 'string' ? o.slug : typeof o?.id === 'string' || typeof o?.id === 'number' ? String(o.id) : '';
  return l ? ` ${l}` : '';
}

/** The venue's outcome names when they are not Yes / No (["Up", "Down"], team names); null for Yes / No. */
export function outcomeLabels(outcomes: readonly string[]): string[] | null {
  const trimmed = outcomes.map((o) => o.trim());
  if (trimmed.length !== 2 || trimmed.some((o) => o === '')) return null;
  return trimmed[0]!.toLowerCase() === 'yes' && trimmed[1]!.toLowerCase() === 'no' ? null : trimmed;
}

/** Shared tail of both loaders: allocate ids, insert markets, fill closed_at on known markets, add resolutions. */
async function insertMarkets(conn: DuckDBConnection, parsed: ParsedMarket[], rb: ReportBuilder): Promise<void> {
  interface Ready { p: ParsedMarket; row: Row & { condition_id: string } }
  const ready: Ready[] = [];
  for (const p of parsed) {
    const { m, parent, where } = p;
    if (m.clobTokenIds.length !== 2 || m.outcomes.length !== 2) {
      rb.skip('not_binary', `${where}: ${m.clobTokenIds.length} token ids / ${m.outcomes.length} outcomes (binary markets only)`);
      continue;
    }
    const createdAt = m.createdAt ?? m.startDate;
    const endDate = m.endDate ?? m.closedTime;
    if (!createdAt) {
      rb.skip('invalid:createdAt', `${where}: no createdAt or startDate`);
      continue;
    }
    if (!endDate) {
      rb.skip('invalid:endDate', `${where}: no endDate or closedTime`);
      continue;
    }
    const negRisk = m.negRisk ?? parent.negRisk ?? false;
    ready.push({
      p,
      row: {
        market_id: null,
        condition_id: m.conditionId,
        question_id: m.questionID,
        event_id: parent.eventId ?? m.events?.[0]?.id ?? null,
        question: m.question,
        slug: m.slug,
        category: normalizeCategory(m.category) ?? parent.category ?? 'other',
        yes_token_id: m.clobTokenIds[0]!,
        no_token_id: m.clobTokenIds[1]!,
        neg_risk: negRisk,
        neg_risk_market_id: negRisk ? (m.negRiskMarketID ?? parent.negRiskMarketId ?? null) : null,
        created_at: createdAt,
        trading_opens_at: m.startDate ?? createdAt,
        end_date: endDate,
        closed_at: m.closed ? (m.closedTime ?? endDate) : null,
        liquidity_usdc: m.liquidityNum ?? m.liquidity ?? null,
        volume_usdc: m.volumeNum ?? m.volume ?? null,
        source: 'gamma',
        outcome_labels: outcomeLabels(m.outcomes),
      },
    });
  }

  // Dense ids: existing condition ids keep theirs, new ones get max + 1 in input order.
  const known = await lookupMarketsByCondition(conn, ready.map((r) => r.row.condition_id));
  const ids = new Map<string, number>([...known].map(([c, ref]) => [c, ref.marketId]));
  let next = await nextId(conn, 'markets', 'market_id');
  for (const r of ready) {
    const c = r.row.condition_id;
    if (!ids.has(c)) ids.set(c, next++);
    r.row.market_id = ids.get(c)!;
  }
  const inserted = await insertNew(conn, 'markets', ready.map((r) => r.row), ['condition_id']);
  rb.report.inserted += inserted;
  rb.report.duplicates += ready.length - inserted;
  rb.addRows('markets', inserted);

  // A market first loaded while open and now closed: record when it closed (the only field we update).
  const closedNow = ready.filter((r) => r.row.closed_at instanceof Date && known.has(r.row.condition_id));
  for (let i = 0; i < closedNow.length; i += 500) {
    const values = closedNow
      .slice(i, i + 500)
      .map((r) => `(${sqlString(r.row.condition_id)}, ${sqlString((r.row.closed_at as Date).toISOString().replace('T', ' ').replace('Z', ''))}::TIMESTAMP)`)
      .join(', ');
    await conn.run(`UPDATE markets SET closed_at = v.closed_at FROM (VALUES ${values}) v(condition_id, closed_at)
      WHERE markets.condition_id = v.condition_id AND markets.closed_at IS NULL`);
  }

  const resolutions: Row[] = [];
  for (const { p, row } of ready) {
    const { m, where } = p;
    if (!m.closed || !m.outcomePrices) continue;
    const numerators = numeratorsFromOutcomePrices(m.outcomePrices);
    if (!numerators) continue;
    const payouts = payoutsFromNumerators(numerators, row.neg_risk as boolean);
    if (payouts.warning) rb.warn(`${where}: ${payouts.warning}`);
    resolutions.push({
      market_id: row.market_id,
      winner: payouts.winner,
      winner_index: payouts.winnerIndex,
      payout_numerators: numerators,
      payout_yes: payouts.payoutYes,
      payout_no: payouts.payoutNo,
      outcome_slot_count: 2,
      // Gamma shows no resolution transaction: the close time stands in and tx_hash stays ''.
      resolved_at: m.closedTime ?? row.end_date,
      tx_hash: '',
    });
  }
  rb.addRows('resolutions', await insertNew(conn, 'resolutions', resolutions, ['market_id']));
}
