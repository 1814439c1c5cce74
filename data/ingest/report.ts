/** The report every loader returns: what went in, what was already there, what was skipped and why. */
import type { z } from 'zod';

export interface IngestReport {
  /** Input objects that produced new rows. */
  inserted: number;
  /** Input objects whose rows were already present (idempotent re-load). */
  duplicates: number;
  /** reason -> number of input objects skipped for it (e.g. 'invalid:conditionId', 'unknown_token'). */
  skipped: Record<string, number>;
  /** Rows inserted per table (one input object can write several tables). */
  rows: Record<string, number>;
  /** Inserted fills whose maker the source does not name (maker_id NULL): every data-api trade, for one. */
  unknown_counterparty: number;
  /** Inserted fills whose taker the source does not name (taker_id NULL). */
  unknown_taker: number;
  /** Semantic warnings on rows that were still loaded (capped). */
  warnings: string[];
  /** First rejection messages, naming the row and the field (capped). */
  rejections: string[];
}

const MAX_MESSAGES = 50;

export class ReportBuilder {
  readonly report: IngestReport = { inserted: 0, duplicates: 0, skipped: {}, rows: {}, unknown_counterparty: 0, unknown_taker: 0, warnings: [], rejections: [] };

  skip(reason: string, message?: string): void {
    this.report.skipped[reason] = (this.report.skipped[reason] ?? 0) + 1;
    if (message && this.report.rejections.length < MAX_MESSAGES) this.report.rejections.push(message);
  }

  /** Count a zod failure under `invalid:<first failing field>` with a message naming the field. */
  reject(where: string, error: z.ZodError): void {
    const issue = error.issues[0];
    const field = issue && issue.path.length > 0 ? issue.path.map(String).join('.') : '(row)';
    this.skip(`invalid:${field}`, `${where}: ${formatZodError(error)}`);
  }

  warn(message: string): void {
    if (this.report.warnings.length < MAX_MESSAGES) this.report.warnings.push(message);
  }

  addRows(table: string, n: number): void {
    if (n > 0) this.report.rows[table] = (this.report.rows[table] ?? 0) + n;
  }

  /** Fold a nested loader's report in, prefixing its skip reasons (e.g. 'market:'). */
  merge(other: IngestReport, prefix = ''): void {
    for (const [reason, n] of Object.entries(other.skipped)) this.report.skipped[prefix + reason] = (this.report.skipped[prefix + reason] ?? 0) + n;
    for (const [table, n] of Object.entries(other.rows)) this.addRows(table, n);
    this.report.unknown_counterparty += other.unknown_counterparty;
    this.report.unknown_taker += other.unknown_taker;
    for (const w of other.warnings) this.warn(w);
    for (const r of other.rejections) if (this.report.rejections.length < MAX_MESSAGES) this.report.rejections.push(r);
  }
}

export function formatZodError(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.length ? i.path.map(String).join('.') : '(row)'}: ${i.message}`).join('; ');
}
