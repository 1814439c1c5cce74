/**
 * The OpenAPI 3.1 document, generated from the same zod schemas that validate requests and shape responses
 * (zod 4's JSON Schema output is draft 2020-12, which OpenAPI 3.1 uses). It grows with every route that lands.
 */
import { z } from 'zod';
import { METRIC_IDS, PRESETS, RankingConfig, RankingResponse, ROW_CAP } from '../core/rankings.ts';

const schema = (s: z.ZodType, io: 'input' | 'output' = 'output') => {
  const { $schema: _drop, ...rest } = z.toJSONSchema(s, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as Record<string, unknown>;
  return rest;
};

export const ErrorObject = z
  .object({ error: z.string(), message: z.string().optional(), reason: z.string().optional(), issues: z.array(z.unknown()).optional(), trace_id: z.string().optional() })
  .strict();

const errors = (...codes: number[]) =>
  Object.fromEntries(codes.map((c) => [String(c), { description: 'error object', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } }]));

const q = (name: string, description: string, schemaObj: Record<string, unknown> = { type: 'string' }, required = false) => ({ name, in: 'query', required, description, schema: schemaObj });

export function openApiDocument(serverUrl?: string): Record<string, unknown> {
  const ranking = { '200': { description: 'ranking response', content: { 'application/json': { schema: { $ref: '#/components/schemas/RankingResponse' } } } } };
  return {
    openapi: '3.1.0',
    info: { title: 'Skill analytics for prediction-market traders', version: '1.0.0' },
    ...(serverUrl ? { servers: [{ url: serverUrl }] } : {}),
    paths: {
      '/v1/rankings/presets': { get: { summary: 'The ten launch presets', responses: { '200': { description: 'presets and metric ids' } } } },
      '/v1/rankings/preset/{slug}': {
        get: {
          summary: 'A preset ranking (cached 60 s)',
          parameters: [
            { name: 'slug', in: 'path', required: true, schema: { type: 'string', enum: PRESETS.map((p) => p.slug) } },
            q('active_within_days', 'narrow to wallets that traded in the last N days (1-3650)', { type: 'integer', minimum: 1, maximum: 3650 }),
            q('best_category', "narrow to wallets whose best category is this"),
            q('sort_by', 'composite or a metric id', { type: 'string', enum: ['composite', ...METRIC_IDS] }),
            q('limit', `rows (1-${ROW_CAP}, default 50)`, { type: 'integer', minimum: 1, maximum: ROW_CAP }),
            q('offset', 'rows to skip', { type: 'integer', minimum: 0 }),
            q('extra_metrics', 'comma-separated metric ids (paid)'),
          ],
          responses: { ...ranking, ...errors(400, 403, 404, 500) },
        },
      },
      '/v1/rankings/preset/{slug}/snapshot': {
        get: {
          summary: "A preset's stored top-100 board for a day",
          parameters: [{ name: 'slug', in: 'path', required: true, schema: { type: 'string' } }, q('date', 'YYYY-MM-DD; omit for the latest', { type: 'string', format: 'date' })],
          responses: { '200': { description: 'snapshot' }, ...errors(400, 404, 500) },
        },
      },
      '/v1/rankings': {
        get: {
          summary: 'A custom ranking (query form of RankingConfig; see docs/api.md)',
          parameters: [
            q('weights', 'metric:weight,...', { type: 'string' }, true),
            q('gates', 'field:op:value,...'),
            q('active_within_days', 'cohort filter', { type: 'integer' }),
            q('best_category', 'cohort filter'),
            q('min_trades', 'cohort filter', { type: 'integer' }),
            q('min_volume_usdc', 'cohort filter', { type: 'number' }),
            q('tags_any', 'comma-separated smart-money tags'),
            q('exclude_clusters', 'true or false', { type: 'string', enum: ['true', 'false'] }),
            q('sort_by', 'composite or a metric id'),
            q('sort_dir', 'best_first or worst_first'),
            q('limit', `1-${ROW_CAP}`, { type: 'integer' }),
            q('offset', 'rows to skip', { type: 'integer' }),
            q('extra_metrics', 'comma-separated metric ids (paid)'),
          ],
          responses: { ...ranking, ...errors(400, 403, 500) },
        },
      },
    },
    components: {
      schemas: { Error: schema(ErrorObject), RankingResponse: schema(RankingResponse), RankingConfig: schema(RankingConfig, 'input') },
    },
  };
}
