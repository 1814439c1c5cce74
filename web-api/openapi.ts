/**
 * The OpenAPI 3.1 document, generated from the same zod schemas that validate requests and shape responses
 * (zod 4's JSON Schema output is draft 2020-12, which OpenAPI 3.1 uses). It grows with every route that lands.
 */
import { z } from 'zod';
import { errorResponses, jsonSchema, queryParam } from './openapi-parts.ts';
import { METRIC_IDS, PRESETS, RankingConfig, RankingResponse, ROW_CAP } from '../core/rankings.ts';
import { publicOpenApiPaths, publicOpenApiSchemas } from './public.ts';
import { resolutionsOpenApiPaths, resolutionsOpenApiSchemas } from './resolutions.ts';
import { marketOpenApiPaths, marketOpenApiSchemas } from './markets.ts';
import { traderOpenApiPaths, traderOpenApiSchemas } from './traders.ts';
import { CreateWebhookBody, PushSubscribeBody, RotateSecretBody, UpdateWebhookBody } from './webhooks.ts';
import { DeleteMeBody, MagicStartBody, MintKeyBody, PatchMeBody, SiweVerifyBody } from './auth.ts';
import { FilterJson } from '../core/webhook-filters.ts';

const schema = jsonSchema;

export const ErrorObject = z
  .object({ error: z.string(), message: z.string().optional(), reason: z.string().optional(), issues: z.array(z.unknown()).optional(), trace_id: z.string().optional() })
  .strict();

const errors = errorResponses;

const json = (description: string, s: z.ZodType | Record<string, unknown>) => ({
  description,
  content: { 'application/json': { schema: s instanceof z.ZodType ? schema(s) : s } },
});
const body = (s: z.ZodType) => ({ required: true, content: { 'application/json': { schema: schema(s, 'input') } } });
const nullable = (t: string) => ({ type: [t, 'null'] });
const UserRecordSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['user_id', 'eoa', 'email', 'display_name', 'x_username', 'created_at', 'claimed_proxy_count', 'primary_claimed_proxy', 'is_founding'],
  properties: {
    user_id: { type: 'string' },
    eoa: nullable('string'),
    email: nullable('string'),
    display_name: nullable('string'),
    x_username: nullable('string'),
    created_at: { type: 'string', format: 'date-time' },
    claimed_proxy_count: { type: 'integer' },
    primary_claimed_proxy: nullable('string'),
    is_founding: { type: 'boolean' },
  },
};
const PatchedUserSchema = {
  ...UserRecordSchema,
  required: UserRecordSchema.required.slice(0, 6),
  properties: Object.fromEntries(Object.entries(UserRecordSchema.properties).slice(0, 6)),
};
const ApiKeySchema = {
  type: 'object',
  required: ['id', 'label', 'prefix', 'created_at', 'last_used_at', 'revoked_at'],
  properties: { id: { type: 'string' }, label: { type: 'string' }, prefix: { type: 'string' }, created_at: { type: 'string' }, last_used_at: nullable('string'), revoked_at: nullable('string') },
};
const ok = { type: 'object', required: ['ok'], properties: { ok: { const: true } } };

const SubscriptionSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'target_url', 'event_types', 'filter_json', 'active', 'created_at'],
  properties: { id: { type: 'string' }, target_url: { type: 'string' }, event_types: { type: 'array', items: { type: 'string' } }, filter_json: { type: 'object' }, active: { type: 'boolean' }, created_at: { type: 'string' } },
};

/** Webhook management and browser push (web-api/webhooks.ts; docs/webhooks.md). */
function webhookPaths(): Record<string, unknown> {
  const id = { name: 'id', in: 'path', required: true, schema: { type: 'string' } };
  const sub = json('subscription', { $ref: '#/components/schemas/WebhookSubscription' });
  return {
    '/v1/webhooks': {
      get: { summary: 'Your webhook subscriptions', responses: { '200': json('rows', { type: 'object', required: ['rows'], properties: { rows: { type: 'array', items: { $ref: '#/components/schemas/WebhookSubscription' } } } }), ...errors(401, 429, 500) } },
      post: { summary: 'Create a subscription (https, SSRF-guarded; paid plans); the signing secret is returned once', requestBody: body(CreateWebhookBody), responses: { '201': json('created', { allOf: [{ $ref: '#/components/schemas/WebhookSubscription' }, { type: 'object', required: ['secret'], properties: { secret: { type: 'string' } } }] }), ...errors(400, 401, 403, 409, 429, 500) } },
    },
    '/v1/webhooks/{id}': {
      put: { summary: 'Update URL, event types, filter_json or the active flag', parameters: [id], requestBody: body(UpdateWebhookBody), responses: { '200': sub, ...errors(400, 401, 404, 429, 500) } },
      delete: { summary: 'Delete a subscription', parameters: [id], responses: { '200': json('deleted', { type: 'object', properties: { deleted: { const: true }, id: { type: 'string' } } }), ...errors(401, 404, 429, 500) } },
    },
    '/v1/webhooks/{id}/rotate-secret': {
      post: {
        summary: 'Replace the signing secret (shown once); the old one keeps signing alongside for grace_seconds',
        description: 'During the grace period each delivery carries two v1= signatures (new secret first); receivers accept either. Body optional: {grace_seconds: 0..604800, default 86400}.',
        parameters: [id],
        requestBody: { required: false, content: { 'application/json': { schema: schema(RotateSecretBody, 'input') } } },
        responses: {
          '200': json('the new secret', { type: 'object', additionalProperties: false, required: ['id', 'secret', 'previous_secret_expires_at'], properties: { id: { type: 'string' }, secret: { type: 'string' }, previous_secret_expires_at: { type: ['string', 'null'] } } }),
          ...errors(400, 401, 404, 429, 500),
        },
      },
    },
    '/v1/webhooks/{id}/deliveries': {
      get: {
        summary: "The subscription's delivery log, newest first (kept 30 days)",
        parameters: [
          id,
          queryParam('limit', 'rows per page, 1..100 (default 50)', { type: 'integer', minimum: 1, maximum: 100 }),
          queryParam('cursor', 'next_cursor of the previous page', { type: 'string', maxLength: 11 }),
          queryParam('status', 'only rows in this state', { type: 'string', enum: ['pending', 'delivered', 'exhausted', 'dropped'] }),
        ],
        responses: {
          '200': json('a page', {
            type: 'object',
            additionalProperties: false,
            required: ['rows', 'next_cursor'],
            properties: {
              next_cursor: { type: ['string', 'null'] },
              rows: {
                type: 'array',
                items: {
                  type: 'object',
                  additionalProperties: false,
                  required: ['cursor', 'event_id', 'type', 'status', 'attempts', 'http_status', 'error', 'created_at', 'delivered_at', 'next_attempt_at'],
                  properties: {
                    cursor: { type: 'string' },
                    event_id: { type: 'string' },
                    type: { type: 'string' },
                    status: { type: 'string', enum: ['pending', 'delivered', 'exhausted', 'dropped'] },
                    attempts: { type: 'integer', minimum: 0, maximum: 7 },
                    http_status: { type: ['integer', 'null'] },
                    error: { type: ['string', 'null'] },
                    created_at: { type: 'string' },
                    delivered_at: { type: ['string', 'null'] },
                    next_attempt_at: { type: ['string', 'null'] },
                  },
                },
              },
            },
          }),
          ...errors(400, 401, 404, 429, 500),
        },
      },
    },
    '/v1/webhooks/{id}/test': { post: { summary: 'Send a synthetic service.test now', parameters: [id], responses: { '200': json('delivery', { type: 'object', required: ['event_id', 'delivered', 'http_status', 'attempts'] }), ...errors(401, 404, 429, 500) } } },
    '/v1/push/vapid-public-key': { get: { summary: 'The VAPID application server key', responses: { '200': json('key', { type: 'object', required: ['public_key'], properties: { public_key: { type: 'string' } } }), ...errors(401, 429, 500) } } },
    '/v1/push/subscribe': {
      post: {
        summary: "Register a browser's push subscription, and the live events it is notified of",
        description:
          'The body is the browser\'s PushSubscription JSON, plus optional `event_types` (signal.smart_money, market.resolved; default signal.smart_money; trader.fill is refused) and `filter_json` (the webhook filter keys and semantics). Re-subscribing the same endpoint replaces the fields sent and keeps the ones omitted. Each live notification counts one event against the plan\'s monthly webhook event quota (Free: 0, so only the test push); at most 30 per subscription per hour. Payload (encrypted, aes128gcm): {type, emitted_at, data, notification: {title, body, tag}}; see docs/webhooks.md.',
        requestBody: body(PushSubscribeBody),
        responses: { '200': json('ok', ok), ...errors(400, 401, 429, 500) },
      },
    },
    '/v1/push/test': { post: { summary: 'Send a test notification (service.test) to your subscriptions now; free of the quota', responses: { '200': json('result', { type: 'object', properties: { sent: { type: 'integer' }, failed: { type: 'integer' }, removed: { type: 'integer' } } }), ...errors(401, 429, 500) } } },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// The realtime fill stream (jobs/stream.ts; docs/stream.md). A WebSocket, so the route is marked x-websocket and its
// frames are described by the StreamClientMessage / StreamServerMessage components (OpenAPI has no message model).
// The figures here (path, 30 s heartbeat, 1 MB, 16 KB) are jobs/stream.ts's; test/web-api/stream-openapi.test.ts
// checks them and validates real frames against these schemas.
// ---------------------------------------------------------------------------------------------------------------

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const closed = (required: string[], properties: Record<string, unknown>, description?: string) => ({
  type: 'object',
  ...(description ? { description } : {}),
  additionalProperties: false,
  required,
  properties,
});

/** The JSON text frames of /v1/stream, as components. */
function streamSchemas(): Record<string, unknown> {
  const serverTypes: Record<string, string> = {
    welcome: 'StreamWelcome',
    subscribed: 'StreamSubscribed',
    'trader.fill': 'StreamTraderFill',
    lagged: 'StreamLagged',
    pong: 'StreamPong',
    error: 'StreamError',
  };
  const clientOps: Record<string, string> = { subscribe: 'StreamSubscribe', ping: 'StreamPing' };
  return {
    StreamFilter: { ...schema(FilterJson, 'input'), description: 'the webhook filter_json keys, semantics and validation; {} (or no filter) matches every fill' },
    StreamClientMessage: {
      description: 'a client → server text frame (at most 16 KB; a larger frame closes the connection with 1009)',
      oneOf: Object.values(clientOps).map(ref),
      discriminator: { propertyName: 'op', mapping: Object.fromEntries(Object.entries(clientOps).map(([k, v]) => [k, `#/components/schemas/${v}`])) },
    },
    StreamSubscribe: {
      type: 'object',
      description: 'replace the connection\'s filter (answered `subscribed`, or `error` invalid_request with the filter unchanged); other keys are ignored',
      required: ['op'],
      properties: { op: { const: 'subscribe' }, filter: { ...ref('StreamFilter'), description: 'absent: {} (every fill)' } },
    },
    StreamPing: { type: 'object', description: 'answered `pong`; other keys are ignored', required: ['op'], properties: { op: { const: 'ping' } } },
    StreamServerMessage: {
      description: 'a server → client text frame',
      oneOf: Object.values(serverTypes).map(ref),
      discriminator: { propertyName: 'type', mapping: Object.fromEntries(Object.entries(serverTypes).map(([k, v]) => [k, `#/components/schemas/${v}`])) },
    },
    StreamWelcome: closed(
      ['type', 'connection_id', 'filter', 'heartbeat_seconds'],
      { type: { const: 'welcome' }, connection_id: { type: 'string', pattern: '^ws_[a-z2-7]{16}$' }, filter: { type: 'object', maxProperties: 0, description: 'always {} (every fill) on a new connection' }, heartbeat_seconds: { type: 'number', description: 'the server pings (WebSocket ping frames) this often and closes a connection that did not answer the previous ping' } },
      'the first frame after the upgrade',
    ),
    StreamSubscribed: closed(['type', 'filter'], { type: { const: 'subscribed' }, filter: { ...ref('StreamFilter'), description: 'the filter as validated (unknown keys kept, and ignored)' } }, 'the answer to a valid subscribe'),
    StreamTraderFill: closed(
      ['type', 'seq', 'emitted_at', 'data'],
      {
        type: { const: 'trader.fill' },
        seq: { type: 'integer', minimum: 1, description: 'increasing per server process (not per connection: gaps are fills this connection\'s filter did not match)' },
        emitted_at: { type: 'string', format: 'date-time', description: 'the fill\'s time' },
        data: ref('TraderFillData'),
      },
      'one taker fill matching the connection\'s filter',
    ),
    TraderFillData: closed(
      ['trader_proxy', 'size_usdc', 'price', 'token_id', 'taker_side', 'exchange_version', 'exchange_kind', 'tx_hash', 'log_index'],
      {
        trader_proxy: { type: 'string', pattern: '^0x[0-9a-fA-F]{40}$', description: 'EIP-55' },
        condition_id: { type: 'string', description: 'present only when the token resolves to a known market' },
        size_usdc: { type: 'number' },
        price: { type: 'number' },
        token_id: { type: 'string', description: 'empty when the market is unknown' },
        taker_side: { type: 'string', enum: ['buy', 'sell'] },
        exchange_version: { type: 'string' },
        exchange_kind: { type: 'string' },
        tx_hash: { type: 'string' },
        log_index: { type: 'string' },
      },
      'exactly the webhook trader.fill data',
    ),
    StreamLagged: closed(['type', 'dropped'], { type: { const: 'lagged' }, dropped: { type: 'integer', minimum: 1 } }, 'fills not sent while this connection had more than 1 MB unsent; sent before the next fill once it has caught up'),
    StreamPong: closed(['type', 'server_time'], { type: { const: 'pong' }, server_time: { type: 'string', format: 'date-time' } }, 'the answer to ping'),
    StreamError: closed(['type', 'error', 'message'], { type: { const: 'error' }, error: { type: 'string', enum: ['invalid_json', 'invalid_request'] }, message: { type: 'string' } }, 'a frame the server could not use; the connection stays open'),
  };
}

function streamPaths(): Record<string, unknown> {
  const header = (name: string, description: string, s: Record<string, unknown>) => ({ name, in: 'header', required: true, description, schema: s });
  return {
    '/v1/stream': {
      get: {
        summary: 'Realtime fill stream (WebSocket)',
        description: [
          'A WebSocket upgrade (RFC 6455): connect with a WebSocket client to wss://<host>/v1/stream. Auth at the upgrade: `Authorization: Bearer <API key>` (programs) or the session cookie (browsers); never a key in the URL.',
          'Refusals before the upgrade carry the error object: 401 auth_required, 429 rate_limited (at most 3 connections per user on Free, 10 on paid plans). A malformed handshake that passed auth is refused by the WebSocket library itself (400, or 405 for a method other than GET) with a short text body, not the error object; a plain GET without `Upgrade: websocket` is not a stream request and gets the REST app\'s 404 not_found.',
          'After 101, every frame is JSON text: the server sends StreamServerMessage (first `welcome`), the client sends StreamClientMessage. Pings every 30 s; close code 1001 when the server shuts down, 1009 for a client frame over 16 KB. Fills are not replayed on reconnect.',
        ].join('\n\n'),
        'x-websocket': true,
        'x-websocket-messages': { client: ref('StreamClientMessage'), server: ref('StreamServerMessage') },
        parameters: [
          header('Upgrade', 'the WebSocket upgrade', { type: 'string', const: 'websocket' }),
          header('Sec-WebSocket-Key', 'RFC 6455 handshake key', { type: 'string' }),
          header('Sec-WebSocket-Version', 'RFC 6455 version', { type: 'string', enum: ['13', '8'] }),
        ],
        responses: {
          '101': {
            description: 'Switching Protocols: a WebSocket carrying StreamServerMessage frames (server → client) and StreamClientMessage frames (client → server)',
            headers: { Upgrade: { schema: { const: 'websocket' } }, Connection: { schema: { const: 'Upgrade' } }, 'Sec-WebSocket-Accept': { schema: { type: 'string' } } },
          },
          '400': { description: 'malformed WebSocket handshake (text body from the WebSocket library)', content: { 'text/html': { schema: { type: 'string' } } } },
          ...errors(401),
          '404': { description: 'not an upgrade request (error object, not_found)', content: { 'application/json': { schema: ref('Error') } } },
          ...errors(429),
        },
      },
    },
  };
}

/** Sign-in, the user record, API keys and the plan (web-api/auth.ts). */
function accountPaths(): Record<string, unknown> {
  return {
    '/v1/auth/siwe/nonce': { post: { summary: 'A single-use SIWE nonce (5 minutes)', security: [], responses: { '200': json('nonce', { type: 'object', required: ['nonce', 'expires_at'], properties: { nonce: { type: 'string' }, expires_at: { type: 'string' } } }), ...errors(429, 500) } } },
    '/v1/auth/siwe/verify': {
      post: {
        summary: 'Verify a signed EIP-4361 message; sets the session cookie',
        security: [],
        requestBody: body(SiweVerifyBody),
        responses: { '200': json('verified', { type: 'object', required: ['ok', 'user_id', 'eoa', 'expires_at'], properties: { ok: { const: true }, user_id: { type: 'string' }, eoa: { type: 'string' }, expires_at: { type: 'string' } } }), ...errors(400, 401, 429, 500) },
      },
    },
    '/v1/auth/magic/start': { post: { summary: 'Mail a sign-in link', security: [], requestBody: body(MagicStartBody), responses: { '200': json('sent', { type: 'object', required: ['ok'], properties: { ok: { const: true }, dev_link: { type: 'string' } } }), ...errors(400, 429, 500, 503) } } },
    '/v1/auth/magic/callback': { get: { summary: 'Consume a sign-in link; sets the cookie and redirects', security: [], parameters: [q('token', 'the token from the link', { type: 'string' }, true)], responses: { '302': { description: 'to next, default /' }, ...errors(400, 500) } } },
    '/v1/auth/email/confirm': { get: { summary: 'Confirm a new email (the link PATCH /v1/auth/me mailed to it)', security: [], parameters: [q('token', 'the token from the link', { type: 'string' }, true)], responses: { '302': { description: 'to /' }, ...errors(400, 409, 500) } } },
    '/v1/auth/logout': { post: { summary: 'End the current session', responses: { '200': json('ok', ok), ...errors(401, 403, 500) } } },
    '/v1/auth/logout-all': { post: { summary: 'Revoke every session of the user', responses: { '200': json('ok', { type: 'object', required: ['ok', 'revoked'], properties: { ok: { const: true }, revoked: { type: 'integer' } } }), ...errors(401, 403, 500) } } },
    '/v1/auth/me': {
      get: { summary: 'The signed-in user, or null', security: [], responses: { '200': json('user', { type: 'object', required: ['user'], properties: { user: { oneOf: [{ $ref: '#/components/schemas/UserRecord' }, { type: 'null' }] } } }) } },
      patch: { summary: 'Change display name, email (applies once confirmed) or X username; session only', requestBody: body(PatchMeBody), responses: { '200': json('user', { type: 'object', required: ['user'], properties: { user: { $ref: '#/components/schemas/PatchedUser' } } }), ...errors(400, 401, 403, 409, 500) } },
      delete: { summary: 'Anonymize the account irreversibly', requestBody: body(DeleteMeBody), responses: { '200': json('deleted', { type: 'object', required: ['deleted'], properties: { deleted: { const: true } } }), ...errors(400, 401, 403, 500) } },
    },
    '/v1/api-keys': {
      get: { summary: 'Your API keys (prefix and label, never the key)', responses: { '200': json('keys', { type: 'object', required: ['rows'], properties: { rows: { type: 'array', items: { $ref: '#/components/schemas/ApiKey' } } } }), ...errors(401, 429, 500) } },
      post: { summary: 'Mint a key (session only; the key is shown once)', requestBody: body(MintKeyBody), responses: { '201': json('minted', { allOf: [{ $ref: '#/components/schemas/ApiKey' }, { type: 'object', required: ['key'], properties: { key: { type: 'string', pattern: '^pk_live_[a-z2-7]{26}$' } } }] }), ...errors(400, 401, 403, 409, 429, 500) } },
    },
    '/v1/api-keys/{id}': { delete: { summary: 'Revoke a key', parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }], responses: { '200': json('revoked', { type: 'object', properties: { ok: { const: true }, id: { type: 'string' }, revoked: { const: true } } }), ...errors(400, 401, 404, 500) } } },
    '/v1/account/invite': { get: { summary: 'Your invite code (resolved publicly by /v1/public/referrer)', responses: { '200': json('invite', { type: 'object', required: ['code', 'url'], properties: { code: { type: 'string' }, url: { type: 'string' } } }), ...errors(401, 429, 500) } } },
    '/v1/account/plan': { get: { summary: 'Your plan: features and limits', responses: { '200': json('plan', { type: 'object', required: ['plan'] }), ...errors(401, 429, 500) } } },
    '/v1/account/usage': {
      get: {
        summary: 'Your API requests this calendar month (UTC) against the plan (read without counting)',
        responses: { '200': json('usage', { type: 'object', required: ['plan', 'api_requests', 'requests_per_minute'] }), ...errors(401, 429, 500) },
      },
    },
  };
}

const q = queryParam;

export function openApiDocument(serverUrl?: string): Record<string, unknown> {
  const ranking = { '200': { description: 'ranking response', content: { 'application/json': { schema: { $ref: '#/components/schemas/RankingResponse' } } } } };
  return {
    openapi: '3.1.0',
    info: { title: 'Skill analytics for prediction-market traders', version: '1.0.0' },
    ...(serverUrl ? { servers: [{ url: serverUrl }] } : {}),
    security: [{ bearer: [] }, { session: [] }],
    paths: {
      ...accountPaths(),
      ...webhookPaths(),
      ...streamPaths(),
      ...publicOpenApiPaths(),
      ...traderOpenApiPaths(),
      ...marketOpenApiPaths(),
      ...resolutionsOpenApiPaths(),
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
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'an API key: pk_live_ + 26 base32 characters' },
        session: { type: 'apiKey', in: 'cookie', name: '__Secure-service_sid' },
      },
      schemas: {
        Error: schema(ErrorObject),
        RankingResponse: schema(RankingResponse),
        RankingConfig: schema(RankingConfig, 'input'),
        UserRecord: UserRecordSchema,
        PatchedUser: PatchedUserSchema,
        ApiKey: ApiKeySchema,
        WebhookSubscription: SubscriptionSchema,
        ...streamSchemas(),
        ...publicOpenApiSchemas(),
        ...traderOpenApiSchemas(),
        ...marketOpenApiSchemas(),
        ...resolutionsOpenApiSchemas(),
      },
    },
  };
}
