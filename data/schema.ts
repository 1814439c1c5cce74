/**
 * The venue schema: one DuckDB DDL per table. Ingest loaders, the synthetic generator and the analytics build all
 * read and write exactly these columns (docs/schema.md explains every one).
 *
 * Wallets, markets and tokens are dictionary-encoded: large tables (fills, legs, mids) carry small integer ids,
 * and `wallets` / `markets` map them to the venue's 0x addresses, condition ids and 256-bit token ids. This keeps
 * a 100M-row fills table narrow enough to scan in well under a second per column.
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import { queryRows, sqlString } from './duckdb.ts';
import { PLACEHOLDER_ADDRESSES } from './ingest/placeholders.ts';

export const OUTCOME_YES = 0;
export const OUTCOME_NO = 1;

export const VENUE_TABLES = {
  events: `CREATE TABLE IF NOT EXISTS events (
    event_id BIGINT NOT NULL,          -- venue event (fixture) id
    slug VARCHAR NOT NULL,
    canonical_slug VARCHAR NOT NULL,   -- slug all fixture variants collapse to
    title VARCHAR NOT NULL,
    category VARCHAR NOT NULL,
    subcategory VARCHAR,
    series_slug VARCHAR,
    neg_risk BOOLEAN NOT NULL,
    neg_risk_market_id VARCHAR,        -- set when the event is one neg-risk group
    created_at TIMESTAMP NOT NULL,
    start_at TIMESTAMP,                -- when the real-world event starts
    end_at TIMESTAMP,                  -- scheduled close
    source VARCHAR NOT NULL            -- 'gamma' | 'synthetic'
  )`,
  markets: `CREATE TABLE IF NOT EXISTS markets (
    market_id INTEGER NOT NULL,        -- dense internal id
    condition_id VARCHAR NOT NULL,     -- 0x + 64 hex, lowercase
    question_id VARCHAR NOT NULL,      -- 0x + 64 hex, lowercase
    event_id BIGINT,
    question VARCHAR NOT NULL,
    slug VARCHAR NOT NULL,
    category VARCHAR NOT NULL,
    yes_token_id VARCHAR NOT NULL,     -- uint256 as decimal string; clobTokenIds[0]
    no_token_id VARCHAR NOT NULL,      -- clobTokenIds[1]
    neg_risk BOOLEAN NOT NULL,
    neg_risk_market_id VARCHAR,        -- neg-risk group: mutually exclusive questions
    created_at TIMESTAMP NOT NULL,
    trading_opens_at TIMESTAMP NOT NULL,
    end_date TIMESTAMP NOT NULL,       -- scheduled close; no fill at or after closed_at
    closed_at TIMESTAMP,               -- actual close (null while open)
    liquidity_usdc DOUBLE,             -- venue-reported book depth
    volume_usdc DOUBLE,                -- venue-reported lifetime volume (not recomputed)
    source VARCHAR NOT NULL,
    outcome_labels VARCHAR[]           -- the venue's names of outcomes 0 and 1 when not Yes / No (["Up", "Down"]);
                                       -- null: Yes / No (core/outcomes.ts)
  )`,
  wallets: `CREATE TABLE IF NOT EXISTS wallets (
    wallet_id INTEGER NOT NULL,
    address VARCHAR NOT NULL,          -- proxy wallet, 0x + 40 hex, lowercase
    username VARCHAR,
    pseudonym VARCHAR NOT NULL,        -- venue's generated two-word name
    profile_image VARCHAR,
    verified BOOLEAN NOT NULL DEFAULT false
  )`,
  // One row per matched maker order: the taker's trade, counted once (see data/ingest/order-filled.ts). A party the
  // source does not name (the data-api shows no counterparty) or names only by a placeholder address (the zero
  // address, a venue contract: data/ingest/placeholders.ts) is NULL: no wallet, so no leg in fill_legs, no
  // positions or metrics, while the fill still counts for market volume.
  fills: `CREATE TABLE IF NOT EXISTS fills (
    tx_hash VARCHAR NOT NULL,
    log_index INTEGER NOT NULL,        -- unique with tx_hash
    ts TIMESTAMP NOT NULL,
    market_id INTEGER NOT NULL,
    outcome_index UTINYINT NOT NULL,   -- token the taker traded: 0 = YES, 1 = NO
    maker_id INTEGER,                  -- null: maker unknown (data-api trades) or a placeholder address
    taker_id INTEGER,                  -- null: taker unknown or a placeholder address
    side VARCHAR NOT NULL,             -- taker side on that token: 'BUY' | 'SELL'
    match_type VARCHAR NOT NULL,       -- 'direct' (maker trades the same token, other side) |
                                       -- 'mint' (maker BUYs the complement at 1-price) | 'merge' (maker SELLs it)
    price DOUBLE NOT NULL,             -- USDC per share paid by the taker, in (0,1)
    shares DOUBLE NOT NULL,
    size_usdc DOUBLE NOT NULL,         -- price * shares
    fee_usdc DOUBLE NOT NULL,
    exchange_version UTINYINT NOT NULL,-- 1 | 2
    exchange_kind VARCHAR NOT NULL,    -- 'ctf' | 'neg_risk'
    seq BIGINT NOT NULL DEFAULT 0       -- arrival batch (venue_seq; 0 = bulk-loaded): what a refresh has not seen yet
  )`,
  // Header of a split / merge / convert / redeem; its token movements are in inventory_legs.
  inventory_events: `CREATE TABLE IF NOT EXISTS inventory_events (
    tx_hash VARCHAR NOT NULL,
    log_index INTEGER NOT NULL,
    ts TIMESTAMP NOT NULL,
    wallet_id INTEGER NOT NULL,
    kind VARCHAR NOT NULL,             -- 'SPLIT' | 'MERGE' | 'CONVERT' | 'REDEEM'
    market_id INTEGER,                 -- null for CONVERT (spans a neg-risk group)
    neg_risk_market_id VARCHAR,
    amount DOUBLE NOT NULL,            -- shares split/merged/converted per token; for REDEEM the payout
    usdc_delta DOUBLE NOT NULL,        -- USDC into (+) or out of (-) the wallet
    seq BIGINT NOT NULL DEFAULT 0       -- arrival batch (venue_seq; 0 = bulk-loaded): what a refresh has not seen yet
  )`,
  inventory_legs: `CREATE TABLE IF NOT EXISTS inventory_legs (
    tx_hash VARCHAR NOT NULL,
    log_index INTEGER NOT NULL,        -- joins inventory_events
    wallet_id INTEGER NOT NULL,
    market_id INTEGER NOT NULL,
    outcome_index UTINYINT NOT NULL,
    shares_delta DOUBLE NOT NULL       -- tokens into (+) or out of (-) the wallet
  )`,
  resolutions: `CREATE TABLE IF NOT EXISTS resolutions (
    market_id INTEGER NOT NULL,
    winner VARCHAR,                    -- 'YES' | 'NO' | 'INVALID' | null (tie / multi-outcome payout)
    winner_index INTEGER NOT NULL,     -- 0 | 1 | -1 when winner is INVALID or null
    payout_numerators INTEGER[] NOT NULL,
    payout_yes DOUBLE NOT NULL,        -- USDC per YES share = numerator / sum
    payout_no DOUBLE NOT NULL,
    outcome_slot_count INTEGER NOT NULL,
    resolved_at TIMESTAMP NOT NULL,
    tx_hash VARCHAR NOT NULL,
    seq BIGINT NOT NULL DEFAULT 0       -- arrival batch (venue_seq; 0 = bulk-loaded): what a refresh has not seen yet
  )`,
  // Mid-price history per token, sampled (hourly for the synthetic venue). Read "mid at t" as the latest row <= t.
  mids: `CREATE TABLE IF NOT EXISTS mids (
    market_id INTEGER NOT NULL,
    outcome_index UTINYINT NOT NULL,
    ts TIMESTAMP NOT NULL,
    mid DOUBLE NOT NULL,
    seq BIGINT NOT NULL DEFAULT 0       -- arrival batch (venue_seq; 0 = bulk-loaded): what a refresh has not seen yet
  )`,
} as const;

export type VenueTable = keyof typeof VENUE_TABLES;

/**
 * Tables whose rows carry `seq`, the arrival batch: every writer of live rows (the live tail, ingest, the venue sync)
 * stamps a batch with one nextval('venue_seq'), so the analytics refresh reads exactly what arrived since its last
 * watermark, whatever the rows' own timestamps (a late row stamped in the past included).
 */
export const SEQ_TABLES = ['fills', 'inventory_events', 'resolutions', 'mids'] as const;
export const VENUE_SEQ_DDL = `CREATE SEQUENCE IF NOT EXISTS venue_seq START 1`;

/** The columns of a venue table, in DDL order (read off VENUE_TABLES). */
export function venueColumns(table: VenueTable): string[] {
  return VENUE_TABLES[table]
    .split('\n')
    .slice(1)
    .map((line) => line.trim().match(/^([a-z_]+)\s+[A-Z]/)?.[1])
    .filter((c): c is string => c !== undefined);
}

/**
 * `INSERT INTO table (columns but seq)`: the head of a positional insert written without the arrival batch (a
 * hand-built row, a bulk load), whose rows then take seq's default 0; markets' outcome labels are left NULL too.
 */
export function venueInsert(table: VenueTable | string): string {
  const optional = OPTIONAL_COLUMNS[table];
  if (!(SEQ_TABLES as readonly string[]).includes(table) && !optional) return `INSERT INTO ${table}`;
  return `INSERT INTO ${table} (${venueColumns(table as VenueTable).filter((c) => c !== 'seq' && !optional?.includes(c)).join(', ')})`;
}

/** Trailing columns a positional insert may leave out (NULL): added after tables were first written. */
const OPTIONAL_COLUMNS: Record<string, readonly string[]> = { markets: ['outcome_labels'] };

/** The next arrival batch number (one per write batch). */
export async function nextVenueSeq(conn: DuckDBConnection): Promise<number> {
  const [r] = await queryRows<{ s: number }>(conn, `SELECT nextval('venue_seq') AS s`);
  return Number(r!.s);
}
export const VENUE_TABLE_NAMES = Object.keys(VENUE_TABLES) as VenueTable[];

/** Views that every consumer shares: token lookup and both legs of every fill. */
export const VENUE_VIEWS = {
  tokens: `CREATE OR REPLACE VIEW tokens AS
    SELECT yes_token_id AS token_id, market_id, 0::UTINYINT AS outcome_index FROM markets
    UNION ALL SELECT no_token_id, market_id, 1::UTINYINT FROM markets`,
  // Both parties of a fill as (wallet, token, side, price, shares, fee); the maker's leg follows match_type. A leg
  // exists only for a known wallet: an unknown party (NULL) trades nothing in the analytics.
  fill_legs: `CREATE OR REPLACE VIEW fill_legs AS
    SELECT tx_hash, log_index, ts, market_id, outcome_index, taker_id AS wallet_id, 'taker' AS role, side,
           price, shares, size_usdc, fee_usdc FROM fills WHERE taker_id IS NOT NULL
    UNION ALL
    SELECT tx_hash, log_index, ts, market_id,
           CASE WHEN match_type = 'direct' THEN outcome_index ELSE 1 - outcome_index END::UTINYINT,
           maker_id, 'maker',
           CASE WHEN match_type = 'direct' THEN (CASE side WHEN 'BUY' THEN 'SELL' ELSE 'BUY' END)
                WHEN match_type = 'mint' THEN 'BUY' ELSE 'SELL' END,
           CASE WHEN match_type = 'direct' THEN price ELSE 1 - price END,
           shares,
           CASE WHEN match_type = 'direct' THEN size_usdc ELSE (1 - price) * shares END,
           0.0 -- the fee is the taker's
    FROM fills WHERE maker_id IS NOT NULL`,
} as const;

/** What migrateVenue changed (empty lists: nothing needed doing). */
export interface VenueMigration {
  /** tables that gained the seq column */
  seqAdded: string[];
  /** fills columns whose NOT NULL was dropped */
  nullableColumns: string[];
  /** placeholder addresses that were wallets and are gone */
  removedWallets: string[];
  /** fill parties (maker_id or taker_id) set to NULL because they were one of those wallets */
  partiesCleared: number;
  /** markets gained outcome_labels */
  labelsAdded: boolean;
}

/**
 * Bring a venue database written by older code to this schema; idempotent, and cheap when nothing needs doing (two
 * catalog reads and a lookup of a few addresses in `wallets`). Relations that are views (Parquet mapped in place)
 * are left alone.
 * - fills.maker_id / taker_id lost NOT NULL: NULL is a party the source does not name.
 * - Placeholder addresses stop being wallets (older ingest booked the zero address as every data-api trade's
 *   counterparty): a fill's party that was one becomes NULL, its inventory rows and its wallet row are deleted.
 *   Analytics built before still name it: rebuild them (npm run analytics:build opens the venue through this).
 */
export async function migrateVenue(conn: DuckDBConnection, placeholders: Iterable<string> = PLACEHOLDER_ADDRESSES): Promise<VenueMigration> {
  const out: VenueMigration = { seqAdded: [], nullableColumns: [], removedWallets: [], partiesCleared: 0, labelsAdded: false };
  const inMain = `table_schema = 'main' AND table_catalog = current_database()`;
  const tables = new Set(
    (await queryRows<{ table_name: string }>(conn, `SELECT table_name FROM information_schema.tables WHERE ${inMain} AND table_type = 'BASE TABLE'
      AND table_name IN ('fills', 'wallets', 'inventory_events', 'inventory_legs', 'resolutions', 'mids')`)).map((r) => r.table_name),
  );
  await conn.run(VENUE_SEQ_DDL);
  const withSeq = new Set(
    (await queryRows<{ table_name: string }>(conn, `SELECT table_name FROM information_schema.columns WHERE ${inMain} AND column_name = 'seq'`)).map((r) => r.table_name),
  );
  for (const t of SEQ_TABLES) {
    if (tables.has(t) && !withSeq.has(t)) {
      await conn.run(`ALTER TABLE ${t} ADD COLUMN seq BIGINT DEFAULT 0`);
      out.seqAdded.push(t);
    }
  }
  // markets name their outcomes (Up / Down, teams): the column is added empty to an older database
  const marketCols = await queryRows<{ column_name: string }>(conn, `SELECT column_name FROM information_schema.columns WHERE ${inMain} AND table_name = 'markets' AND column_name = 'outcome_labels'`);
  const marketsIsTable = (await queryRows(conn, `SELECT 1 FROM information_schema.tables WHERE ${inMain} AND table_name = 'markets' AND table_type = 'BASE TABLE'`)).length > 0;
  if (marketsIsTable && marketCols.length === 0) {
    await conn.run(`ALTER TABLE markets ADD COLUMN outcome_labels VARCHAR[]`);
    out.labelsAdded = true;
  }
  if (tables.has('fills')) {
    const strict = await queryRows<{ column_name: string }>(conn, `SELECT column_name FROM information_schema.columns WHERE ${inMain} AND table_name = 'fills'
      AND column_name IN ('maker_id', 'taker_id') AND is_nullable = 'NO' ORDER BY column_name`);
    for (const { column_name } of strict) {
      await conn.run(`ALTER TABLE fills ALTER COLUMN ${column_name} DROP NOT NULL`);
      out.nullableColumns.push(column_name);
    }
  }
  const addresses = [...new Set([...placeholders].map((a) => a.toLowerCase()))];
  if (!tables.has('wallets') || addresses.length === 0) return out;
  const found = await queryRows<{ wallet_id: number; address: string }>(
    conn,
    `SELECT wallet_id, address FROM wallets WHERE address IN (${addresses.map(sqlString).join(', ')}) ORDER BY wallet_id`,
  );
  if (found.length === 0) return out;
  const ids = found.map((r) => r.wallet_id).join(', ');
  await conn.run('BEGIN TRANSACTION');
  try {
    if (tables.has('fills')) {
      for (const col of ['maker_id', 'taker_id']) out.partiesCleared += (await conn.run(`UPDATE fills SET ${col} = NULL WHERE ${col} IN (${ids})`)).rowsChanged;
    }
    for (const t of ['inventory_legs', 'inventory_events']) if (tables.has(t)) await conn.run(`DELETE FROM ${t} WHERE wallet_id IN (${ids})`);
    await conn.run(`DELETE FROM wallets WHERE wallet_id IN (${ids})`);
    await conn.run('COMMIT');
  } catch (e) {
    await conn.run('ROLLBACK');
    throw e;
  }
  out.removedWallets = found.map((r) => r.address);
  return out;
}

/** (Re)create the venue views: an older database keeps the view definitions it was written with. */
export async function createVenueViews(conn: DuckDBConnection): Promise<void> {
  for (const ddl of Object.values(VENUE_VIEWS)) await conn.run(ddl);
}

/**
 * Create the venue tables that are missing, migrate what an older version wrote (migrateVenue; `placeholders`
 * defaults to the zero address and the default contracts) and (re)create the views.
 */
export async function createVenueSchema(conn: DuckDBConnection, opts: { placeholders?: Iterable<string> } = {}): Promise<VenueMigration> {
  for (const ddl of Object.values(VENUE_TABLES)) await conn.run(ddl);
  const migration = await migrateVenue(conn, opts.placeholders);
  await createVenueViews(conn);
  return migration;
}
