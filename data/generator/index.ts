/**
 * The synthetic venue: markets shaped on the real export, wallets with planted skill, and the ground truth.
 *   generateVenue(opts, outDir) -> outDir/venue/*.parquet (the schema's tables), outDir/truth/*, outDir/manifest.json
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { openDuckDB, sqlString } from '../duckdb.ts';
import { VENUE_TABLE_NAMES } from '../schema.ts';
import { pseudonymFor, syntheticAddress } from '../names.ts';
import { readRealMarkets } from '../ingest/real-markets.ts';
import { ARCHETYPES, type VenueOptions } from './config.ts';
import { buildMarkets, lastFillS, type VenueMarkets } from './markets.ts';
import { ChunkedTable } from './staging.ts';
import { VenueSimulator, type VenueSink, type WalletTruth } from './trades.ts';
import { buildWallets, type WalletPopulation } from './wallets.ts';
import { Rng } from './rng.ts';

export type Progress = (phase: string, done: number, total: number) => void;

export interface GenerateResult {
  outDir: string;
  counts: Record<string, number>;
  seconds: number;
  peakRssMb: number;
}

const EXCHANGE_V2_FROM_S = Date.parse('2026-04-28T00:00:00Z') / 1000;

export async function generateVenue(opts: VenueOptions, outDir: string, progress: Progress = () => {}): Promise<GenerateResult> {
  const t0 = performance.now();
  let peakRss = process.memoryUsage().rss;
  const sampleRss = () => (peakRss = Math.max(peakRss, process.memoryUsage().rss));
  const venueDir = join(outDir, 'venue');
  const truthDir = join(outDir, 'truth');
  await mkdir(venueDir, { recursive: true });
  await mkdir(truthDir, { recursive: true });
  const stagingPath = join(outDir, '.staging.duckdb');
  await rm(stagingPath, { force: true });
  await rm(`${stagingPath}.wal`, { force: true });

  progress('markets', 0, 1);
  const real = await readRealMarkets(opts.realMarketsCsv);
  const venue = buildMarkets(opts, real, (d, t) => progress('markets', d, t));
  const pop = buildWallets(opts, venue.startS, venue.endS, venue.categories.length);
  sampleRss();

  const { instance, conn } = await openDuckDB({ path: stagingPath, threads: 2, memoryLimit: '6GB', tempDirectory: join(outDir, '.tmp') });
  try {
    const fills = new ChunkedTable('fills_raw', [['k', 'f64'], ['ts', 'i32'], ['m', 'i32'], ['o', 'u8'], ['maker', 'i32'], ['taker', 'i32'], ['side', 'u8'], ['price', 'f64'], ['shares', 'f64'], ['fee', 'f64']]);
    const inv = new ChunkedTable('inv_raw', [['k', 'f64'], ['ts', 'i32'], ['w', 'i32'], ['kind', 'u8'], ['m', 'i32'], ['g', 'i32'], ['amount', 'f64'], ['usdc', 'f64']]);
    const legs = new ChunkedTable('legs_raw', [['k', 'f64'], ['w', 'i32'], ['m', 'i32'], ['o', 'u8'], ['delta', 'f64']]);
    const truth = new ChunkedTable('truth_raw', [['w', 'i32'], ['positions', 'i32'], ['fills', 'i32'], ['edge_sum', 'f64'], ['resolved_positions', 'i32'], ['resolved_edge_sum', 'f64']]);
    for (const t of [fills, inv, legs, truth]) await t.open(conn);
    const sink: VenueSink = {
      fill: (k, ts, m, o, maker, taker, side, price, shares, fee) => fills.push(k, ts, m, o, maker, taker, side, price, shares, fee),
      inventory: (k, ts, w, kind, m, g, amount, usdc) => inv.push(k, ts, w, kind, m, g, amount, usdc),
      leg: (k, w, m, o, delta) => legs.push(k, w, m, o, delta),
    };
    const sim = new VenueSimulator(opts.seed, venue, pop, sink);
    const tally: WalletTruth = { positions: 0, fills: 0, edgeSum: 0, resolvedPositions: 0, resolvedEdgeSum: 0 };
    const step = Math.max(1, Math.floor(pop.n / 200));
    for (let w = 0; w < pop.n; w++) {
      tally.positions = tally.fills = tally.resolvedPositions = 0;
      tally.edgeSum = tally.resolvedEdgeSum = 0;
      sim.emitWallet(w, tally);
      truth.push(w, tally.positions, tally.fills, tally.edgeSum, tally.resolvedPositions, tally.resolvedEdgeSum);
      if (w % step === 0) {
        progress('wallets', w, pop.n);
        sampleRss();
        await new Promise((r) => setImmediate(r)); // let timers (progress, signals) run
      }
    }
    progress('wallets', pop.n, pop.n);
    sim.emitMarketMakerInventory();
    for (const t of [fills, inv, legs, truth]) t.close();
    sampleRss();

    await stageDimensions(conn, opts, venue, pop);
    sampleRss();
    const exports = exportQueries(opts.seed, venue.endS);
    let i = 0;
    for (const [table, sql] of Object.entries(exports)) {
      progress('export', i++, Object.keys(exports).length);
      await conn.run(`COPY (${sql}) TO ${sqlString(join(venueDir, `${table}.parquet`))} (FORMAT parquet, COMPRESSION zstd)`);
      sampleRss();
    }
    progress('export', i, i);
    for (const [name, sql] of Object.entries(truthQueries())) {
      await conn.run(`COPY (${sql}) TO ${sqlString(join(truthDir, `${name}.parquet`))} (FORMAT parquet, COMPRESSION zstd)`);
    }
    const counts: Record<string, number> = {};
    for (const table of VENUE_TABLE_NAMES) {
      const r = await conn.runAndReadAll(`SELECT count(*) FROM read_parquet(${sqlString(join(venueDir, `${table}.parquet`))})`);
      counts[table] = Number(r.getRows()[0]![0]);
    }
    const seconds = (performance.now() - t0) / 1000;
    const manifest = {
      generator: 'synthetic-venue/1',
      options: { wallets: opts.wallets, days: opts.days, seed: opts.seed, end: opts.end },
      window: { start: new Date(venue.startS * 1000).toISOString(), end: new Date(venue.endS * 1000).toISOString() },
      counts,
      attribution: 'Market questions, categories, volume/liquidity and lifetime distributions derived from manja316/polymarket-historical-data (CC-BY-4.0).',
    };
    await writeFile(join(outDir, 'manifest.json'), JSON.stringify(manifest, null, 2) + '\n');
    await writeFile(join(truthDir, 'summary.json'), JSON.stringify(await truthSummary(conn), null, 2) + '\n');
    return { outDir, counts, seconds, peakRssMb: Math.round(sampleRss() / 2 ** 20) };
  } finally {
    conn.closeSync();
    instance.closeSync();
    await rm(stagingPath, { force: true });
    await rm(`${stagingPath}.wal`, { force: true });
    if (existsSync(join(outDir, '.tmp'))) await rm(join(outDir, '.tmp'), { recursive: true, force: true });
  }
}

/** Small tables (events, markets, wallets, paths, ground truth) go through row appenders. */
async function stageDimensions(conn: import('@duckdb/node-api').DuckDBConnection, opts: VenueOptions, venue: VenueMarkets, pop: WalletPopulation): Promise<void> {
  await conn.run(`CREATE TABLE events_raw (event_id BIGINT, slug VARCHAR, canonical_slug VARCHAR, title VARCHAR, category VARCHAR,
    neg_risk BOOLEAN, neg_risk_market_id VARCHAR, created_s INTEGER, end_s INTEGER)`);
  let app = await conn.createAppender('events_raw');
  for (const e of venue.events) {
    app.appendBigInt(BigInt(e.eventId));
    app.appendVarchar(e.slug);
    app.appendVarchar(e.canonicalSlug);
    app.appendVarchar(e.title);
    app.appendVarchar(e.category);
    app.appendBoolean(e.negRisk);
    if (e.negRiskMarketId) app.appendVarchar(e.negRiskMarketId);
    else app.appendNull();
    app.appendInteger(e.createdS);
    app.appendInteger(e.endS);
    app.endRow();
  }
  app.closeSync();

  await conn.run(`CREATE TABLE markets_raw (market_id INTEGER, event_id BIGINT, group_id INTEGER, question VARCHAR, slug VARCHAR,
    category VARCHAR, condition_id VARCHAR, question_id VARCHAR, yes_token_id VARCHAR, no_token_id VARCHAR, neg_risk_market_id VARCHAR,
    open_s INTEGER, close_s INTEGER, resolved_s INTEGER, winner INTEGER, liquidity DOUBLE, volume DOUBLE, final_latent DOUBLE,
    last_fill_s INTEGER, half_spread DOUBLE)`);
  app = await conn.createAppender('markets_raw');
  for (const m of venue.markets) {
    app.appendInteger(m.marketId);
    app.appendBigInt(BigInt(m.eventId));
    app.appendInteger(m.groupId);
    app.appendVarchar(m.question);
    app.appendVarchar(m.slug);
    app.appendVarchar(m.category);
    app.appendVarchar(m.conditionId);
    app.appendVarchar(m.questionId);
    app.appendVarchar(m.yesTokenId);
    app.appendVarchar(m.noTokenId);
    if (m.negRiskMarketId) app.appendVarchar(m.negRiskMarketId);
    else app.appendNull();
    app.appendInteger(m.openS);
    app.appendInteger(m.closeS);
    app.appendInteger(m.resolvedS);
    app.appendInteger(m.winner);
    app.appendDouble(m.liquidity);
    app.appendDouble(m.reportedVolume);
    app.appendDouble(m.latent[m.latent.length - 1] as number);
    app.appendInteger(lastFillS(m, venue.endS));
    app.appendDouble(m.halfSpread);
    app.endRow();
  }
  app.closeSync();

  const mids = new ChunkedTable('mids_raw', [['m', 'i32'], ['ts', 'i32'], ['mid', 'f64'], ['latent', 'f64']]);
  await mids.open(conn);
  for (const m of venue.markets) {
    const until = Math.min(m.closeS, venue.endS);
    for (let h = 0; h < m.mid.length; h++) {
      const ts = m.openS + h * 3600;
      if (ts >= until) break;
      mids.push(m.marketId, ts, m.mid[h] as number, m.latent[h] as number);
    }
  }
  mids.close();

  await conn.run(`CREATE TABLE wallets_raw (wallet_id INTEGER, address VARCHAR, username VARCHAR, pseudonym VARCHAR, profile_image VARCHAR,
    verified BOOLEAN, archetype VARCHAR, lead_hours DOUBLE, category_mask INTEGER, cluster_id INTEGER, owner_id INTEGER, leader_id INTEGER,
    never_redeems BOOLEAN)`);
  app = await conn.createAppender('wallets_raw');
  const rng = new Rng(opts.seed, 0x6e616d); // 'nam'
  for (let w = 0; w < pop.n; w++) {
    const address = syntheticAddress(opts.seed, w);
    const pseudonym = pseudonymFor(address);
    const named = rng.bool(0.25);
    app.appendInteger(w);
    app.appendVarchar(address);
    if (named) app.appendVarchar(`${pseudonym.split('-')[1]!.toLowerCase()}${rng.int(10000)}`);
    else app.appendNull();
    app.appendVarchar(pseudonym);
    if (named && rng.bool(0.5)) app.appendVarchar(`https://images.example.invalid/profile/${address.slice(2, 14)}.png`);
    else app.appendNull();
    app.appendBoolean(named && rng.bool(0.05));
    app.appendVarchar(ARCHETYPES[pop.archetype[w] as number] as string);
    app.appendDouble(pop.leadHours[w] as number);
    app.appendInteger(pop.categoryMask[w] as number);
    app.appendInteger(pop.clusterId[w] as number);
    app.appendInteger(pop.ownerId[w] as number);
    app.appendInteger(pop.leaderId[w] as number);
    app.appendBoolean(pop.neverRedeems[w] === 1);
    app.endRow();
  }
  app.closeSync();
  await conn.run(`CREATE TABLE categories_raw AS SELECT unnest(${listLiteral(venue.categories)}) AS category, generate_subscripts(${listLiteral(venue.categories)}, 1) - 1 AS idx`);
}

function listLiteral(items: string[]): string {
  return `[${items.map(sqlString).join(', ')}]::VARCHAR[]`;
}

const ts = (col: string) => `make_timestamp(${col}::BIGINT * 1000000)`;
/** 0x + 64 hex, a stable function of (namespace, seed, key). */
const txHash = (ns: string, seed: number, key: string) => `'0x' || md5('${ns}:${seed}:' || ${key}::BIGINT) || md5(${key}::BIGINT || ':${ns}:${seed}')`;
const logIndex = (seed: number, key: string) => `(((${key}::BIGINT % 1000003) * 7919 + ${seed}) % 409)::INTEGER`;

function exportQueries(seed: number, endS: number): Record<string, string> {
  return {
    events: `SELECT event_id, slug, canonical_slug, title, category, NULL::VARCHAR AS subcategory, NULL::VARCHAR AS series_slug, neg_risk,
      neg_risk_market_id, ${ts('created_s')} AS created_at, ${ts('created_s')} AS start_at, ${ts('end_s')} AS end_at, 'synthetic' AS source
      FROM events_raw ORDER BY event_id`,
    markets: `SELECT market_id, condition_id, question_id, event_id, question, slug, category, yes_token_id, no_token_id,
      group_id >= 0 AS neg_risk, neg_risk_market_id, ${ts('open_s')} AS created_at, ${ts('open_s')} AS trading_opens_at,
      ${ts('close_s')} AS end_date, CASE WHEN close_s < ${endS} THEN ${ts('close_s')} END AS closed_at,
      liquidity AS liquidity_usdc, volume AS volume_usdc, 'synthetic' AS source FROM markets_raw ORDER BY market_id`,
    wallets: `SELECT wallet_id, address, username, pseudonym, profile_image, verified FROM wallets_raw ORDER BY wallet_id`,
    fills: `SELECT ${txHash('fill', seed, 'k')} AS tx_hash, ${logIndex(seed, 'k')} AS log_index, ${ts('f.ts')} AS ts,
      f.m AS market_id, f.o AS outcome_index, f.maker AS maker_id, f.taker AS taker_id,
      CASE f.side WHEN 0 THEN 'BUY' ELSE 'SELL' END AS side, 'direct' AS match_type, f.price, f.shares,
      round(f.price * f.shares, 6) AS size_usdc, f.fee AS fee_usdc,
      (CASE WHEN f.ts >= ${EXCHANGE_V2_FROM_S} THEN 2 ELSE 1 END)::UTINYINT AS exchange_version,
      CASE WHEN m.group_id >= 0 THEN 'neg_risk' ELSE 'ctf' END AS exchange_kind
      FROM fills_raw f JOIN markets_raw m ON m.market_id = f.m ORDER BY f.ts, f.k`,
    inventory_events: `SELECT ${txHash('inv', seed, 'k')} AS tx_hash, ${logIndex(seed, 'k')} AS log_index, ${ts('i.ts')} AS ts,
      i.w AS wallet_id, ['SPLIT','MERGE','CONVERT','REDEEM'][i.kind + 1] AS kind, CASE WHEN i.kind = 2 THEN NULL ELSE i.m END AS market_id,
      g.neg_risk_market_id, i.amount, i.usdc AS usdc_delta
      FROM inv_raw i LEFT JOIN (SELECT DISTINCT group_id, neg_risk_market_id FROM markets_raw WHERE group_id >= 0) g ON g.group_id = i.g
      ORDER BY i.ts, i.k`,
    inventory_legs: `SELECT ${txHash('inv', seed, 'l.k')} AS tx_hash, ${logIndex(seed, 'l.k')} AS log_index, l.w AS wallet_id,
      l.m AS market_id, l.o AS outcome_index, l.delta AS shares_delta
      FROM legs_raw l JOIN inv_raw i ON i.k = l.k ORDER BY i.ts, l.k, l.m, l.o`,
    resolutions: `SELECT market_id, CASE winner WHEN 0 THEN 'YES' WHEN 1 THEN 'NO' ELSE 'INVALID' END AS winner,
      CASE WHEN winner >= 0 THEN winner ELSE -1 END AS winner_index,
      CASE winner WHEN 0 THEN [1, 0] WHEN 1 THEN [0, 1] ELSE [1, 1] END::INTEGER[] AS payout_numerators,
      CASE winner WHEN 0 THEN 1.0 WHEN 1 THEN 0.0 ELSE 0.5 END::DOUBLE AS payout_yes,
      CASE winner WHEN 0 THEN 0.0 WHEN 1 THEN 1.0 ELSE 0.5 END::DOUBLE AS payout_no,
      2 AS outcome_slot_count, ${ts('resolved_s')} AS resolved_at, ${txHash('res', seed, 'market_id')} AS tx_hash
      FROM markets_raw WHERE resolved_s > 0 ORDER BY market_id`,
    mids: `SELECT m AS market_id, 0::UTINYINT AS outcome_index, ${ts('ts')} AS ts, mid FROM mids_raw
      UNION ALL SELECT m, 1::UTINYINT, ${ts('ts')}, round(1 - mid, 4) FROM mids_raw ORDER BY market_id, outcome_index, ts`,
  };
}

function truthQueries(): Record<string, string> {
  return {
    wallets: `SELECT w.wallet_id, w.address, w.archetype, w.lead_hours,
      list_filter((SELECT list(category ORDER BY idx) FROM categories_raw c WHERE (w.category_mask >> c.idx) & 1 = 1), x -> true) AS categories,
      NULLIF(w.cluster_id, -1) AS cluster_id, NULLIF(w.owner_id, -1) AS owner_id, NULLIF(w.leader_id, -1) AS leader_id, w.never_redeems,
      t.positions, t.fills AS own_fills, t.resolved_positions,
      CASE WHEN t.positions > 0 THEN t.edge_sum / t.positions END AS true_edge,
      CASE WHEN t.resolved_positions > 0 THEN t.resolved_edge_sum / t.resolved_positions END AS true_edge_resolved
      FROM wallets_raw w JOIN truth_raw t ON t.w = w.wallet_id ORDER BY w.wallet_id`,
    markets: `SELECT market_id, group_id, open_s, close_s, resolved_s, winner, final_latent, half_spread FROM markets_raw ORDER BY market_id`,
    paths: `SELECT m AS market_id, ${ts('ts')} AS ts, latent AS latent_yes, mid AS mid_yes FROM mids_raw ORDER BY m, ts`,
  };
}

async function truthSummary(conn: import('@duckdb/node-api').DuckDBConnection): Promise<unknown> {
  const r = await conn.runAndReadAll(`SELECT w.archetype, count(*) AS wallets, sum(t.positions) AS positions, sum(t.fills) AS own_fills,
      avg(CASE WHEN t.positions > 0 THEN t.edge_sum / t.positions END) AS mean_true_edge,
      count(*) FILTER (WHERE t.resolved_positions >= 30) AS wallets_30_resolved
    FROM wallets_raw w JOIN truth_raw t ON t.w = w.wallet_id GROUP BY 1 ORDER BY 2 DESC`);
  const rows = r.getRowObjectsJS().map((o) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, typeof v === 'bigint' ? Number(v) : v])));
  const c = await conn.runAndReadAll(`SELECT count(DISTINCT cluster_id) FILTER (WHERE cluster_id >= 0), count(DISTINCT owner_id) FILTER (WHERE owner_id >= 0) FROM wallets_raw`);
  const [clusters, owners] = c.getRows()[0]!.map(Number);
  return { archetypes: rows, sybil_clusters: clusters, multi_wallet_owners: owners };
}
