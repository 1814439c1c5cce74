/**
 * Building blocks of the OpenAPI document shared by every route module (openapi.ts assembles them): zod → JSON
 * Schema (draft 2020-12, which OpenAPI 3.1 uses), error responses, query parameters.
 */
import { z } from 'zod';

export function jsonSchema(s: z.ZodType, io: 'input' | 'output' = 'output'): Record<string, unknown> {
  const { $schema: _drop, ...rest } = z.toJSONSchema(s, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as Record<string, unknown>;
  return rest;
}

/** Responses for the given statuses, each the error object. */
export const errorResponses = (...codes: number[]) =>
  Object.fromEntries(codes.map((c) => [String(c), { description: 'error object', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } }]));

export const queryParam = (name: string, description: string, schemaObj: Record<string, unknown> = { type: 'string' }, required = false) => ({ name, in: 'query', required, description, schema: schemaObj });
