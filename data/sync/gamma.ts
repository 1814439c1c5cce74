/**
 * Markets and their events from Gamma, the venue's metadata API, into the venue tables (data/ingest/gamma.ts loads
 * each page; this module pages, resumes and follows).
 *
 * Gamma's list endpoints page by keyset: `GET /markets/keyset?limit=..&cursor=..` answers `{ markets, next_cursor }`,
 * `next_cursor` absent on the last page, at most 100 markets a page (the offset lists are retired). The backfill
 * walks closed and then open markets (`closed=true|false`), each page loaded in one transaction with the cursor that
 * follows it, so a crash resumes at the page after the last one committed. Following re-reads the most recently
 * updated markets (`order=updatedAt&ascending=false`) until it meets one updated before its watermark: a market that
 * closed or resolved since gets its close time and resolution (the loader's two updates), a new one its rows.
 * A market that trades on chain before the sync has seen it is fetched by token or condition id (`ensureMarkets`).
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import { queryRows, sqlString } from '../duckdb.ts';
import { loadGammaMarkets } from '../ingest/gamma.ts';
import type { IngestReport } from '../ingest/report.ts';
import type { HttpSource } from './http.ts';
import { inTransaction } from '../duckdb.ts';
import { getState, setState } from './state.ts';

export const GAMMA_PAGE_MAX = 100;
const SOURCE = 'gamma';

export interface GammaPageReport {
  phase: 'closed' | 'open' | 'follow' | 'lookup';
  markets: number;
  inserted: number;
  skipped: number;
}

export interface GammaSyncOptions {
  pageSize?: number;
  /** only markets whose end date is at or after this (backfill bound) */
  endDateMin?: Date;
  /** a market updated this long before the watermark is still re-read when following (clock skew, slow writers) */
  followOverlapMs?: number;
  onPage?: (p: GammaPageReport) => void;
}

interface KeysetPage {
  markets: unknown[];
  next_cursor?: string | null;
}

function asPage(json: unknown): KeysetPage {
  const o = json as { markets?: unknown; next_cursor?: unknown } | null;
  if (!o || !Array.isArray(o.markets)) throw new Error('gamma: a keyset page without a markets array');
  return { markets: o.markets, next_cursor: typeof o.next_cursor === 'string' && o.next_cursor !== '' ? o.next_cursor : null };
}

const updatedAtOf = (m: unknown): number => {
  const v = (m as { updatedAt?: unknown } | null)?.updatedAt;
  const t = typeof v === 'string' ? Date.parse(v) : Number.NaN;
  return Number.isNaN(t) ? Number.NaN : t;
};

export class GammaSync {
  private readonly pageSize: number;
  constructor(
    private readonly source: HttpSource,
    private readonly conn: DuckDBConnection,
    private readonly opts: GammaSyncOptions = {},
  ) {
    this.pageSize = Math.min(GAMMA_PAGE_MAX, Math.max(1, opts.pageSize ?? GAMMA_PAGE_MAX));
  }

  /** Backfill closed, then open markets; resumes a pass at its stored cursor; a finished pass is not walked again. */
  async backfill(): Promise<{ markets: number; pages: number }> {
    let markets = 0;
    let pages = 0;
    for (const phase of ['closed', 'open'] as const) {
      const key = `backfill_${phase}`;
      let cursor = await getState(this.conn, SOURCE, key);
      if (cursor === 'done') continue;
      for (;;) {
        const page = asPage(
          await this.source.getJson('markets/keyset', {
            limit: this.pageSize,
            closed: phase === 'closed',
            cursor: cursor ?? undefined,
            end_date_min: this.opts.endDateMin?.toISOString(),
          }),
        );
        const next = page.next_cursor ?? 'done';
        const report = await inTransaction(this.conn, async () => {
          const r = await loadGammaMarkets(this.conn, page.markets);
          await setState(this.conn, SOURCE, key, next);
          await this.advanceWatermark(page.markets);
          return r;
        });
        markets += page.markets.length;
        pages++;
        this.opts.onPage?.(pageReport(phase, page.markets.length, report));
        if (next === 'done') break;
        cursor = next;
      }
    }
    return { markets, pages };
  }

  /** One follow pass: the markets updated since the watermark (newest first), loaded; returns how many were read. */
  async follow(): Promise<number> {
    const mark = Number((await getState(this.conn, SOURCE, 'updated_watermark')) ?? 'NaN');
    const since = Number.isNaN(mark) ? Number.NEGATIVE_INFINITY : mark - (this.opts.followOverlapMs ?? 10 * 60_000);
    let read = 0;
    // open and closed markets are listed apart (closed=false is the default): a market that closed is in the second
    for (const closed of [false, true]) {
      let cursor: string | null = null;
      for (;;) {
        const page = asPage(await this.source.getJson('markets/keyset', { limit: this.pageSize, closed, order: 'updatedAt', ascending: false, cursor: cursor ?? undefined }));
        const fresh = page.markets.filter((m) => !(updatedAtOf(m) < since));
        const report = await inTransaction(this.conn, async () => {
          const r = await loadGammaMarkets(this.conn, fresh);
          await this.advanceWatermark(fresh);
          return r;
        });
        read += fresh.length;
        this.opts.onPage?.(pageReport('follow', fresh.length, report));
        // newest first: a page that reaches back past the watermark is the last one needed
        if (fresh.length < page.markets.length || !page.next_cursor) break;
        cursor = page.next_cursor;
      }
    }
    return read;
  }

  /**
   * Load the markets of these tokens / conditions that the venue does not know yet (a market traded on chain before
   * the metadata sync saw it). Returns how many markets were loaded.
   */
  async ensureMarkets(tokenIds: Iterable<string>, conditionIds: Iterable<string>): Promise<number> {
    const tokens = [...new Set(tokenIds)];
    const conditions = [...new Set([...conditionIds].map((c) => c.toLowerCase()))];
    const knownTokens = new Set(
      tokens.length
        ? (await queryRows<{ token_id: string }>(this.conn, `SELECT token_id FROM tokens WHERE token_id IN (${tokens.map(sqlString).join(', ')})`)).map((r) => r.token_id)
        : [],
    );
    const knownConditions = new Set(
      conditions.length
        ? (await queryRows<{ c: string }>(this.conn, `SELECT condition_id AS c FROM markets WHERE condition_id IN (${conditions.map(sqlString).join(', ')})`)).map((r) => r.c)
        : [],
    );
    const missingTokens = tokens.filter((t) => !knownTokens.has(t));
    const missingConditions = conditions.filter((c) => !knownConditions.has(c));
    let loaded = 0;
    const fetchBy = async (param: 'clob_token_ids' | 'condition_ids', ids: string[]) => {
      for (let i = 0; i < ids.length; i += GAMMA_PAGE_MAX) {
        const chunk = ids.slice(i, i + GAMMA_PAGE_MAX);
        // a market can be closed or open: ask for both
        for (const closed of [true, false]) {
          let cursor: string | null = null;
          do {
            const page = asPage(await this.source.getJson('markets/keyset', { limit: GAMMA_PAGE_MAX, [param]: chunk, closed, cursor: cursor ?? undefined }));
            const report = await inTransaction(this.conn, () => loadGammaMarkets(this.conn, page.markets));
            loaded += report.rows.markets ?? 0;
            this.opts.onPage?.(pageReport('lookup', page.markets.length, report));
            cursor = page.next_cursor ?? null;
          } while (cursor);
        }
      }
    };
    if (missingTokens.length) await fetchBy('clob_token_ids', missingTokens);
    if (missingConditions.length) await fetchBy('condition_ids', missingConditions);
    return loaded;
  }

  private async advanceWatermark(markets: readonly unknown[]): Promise<void> {
    let max = Number.NEGATIVE_INFINITY;
    for (const m of markets) {
      const t = updatedAtOf(m);
      if (t > max) max = t;
    }
    if (!Number.isFinite(max)) return;
    const prev = Number((await getState(this.conn, SOURCE, 'updated_watermark')) ?? 'NaN');
    if (Number.isNaN(prev) || max > prev) await setState(this.conn, SOURCE, 'updated_watermark', String(max));
  }
}

function pageReport(phase: GammaPageReport['phase'], markets: number, r: IngestReport): GammaPageReport {
  return { phase, markets, inserted: r.rows.markets ?? 0, skipped: Object.values(r.skipped).reduce((a, b) => a + b, 0) };
}
