/**
 * Unknown and placeholder parties (issue 20): the zero address, the venue's contracts and configured operators are
 * never wallets. Loaders store NULL for such a party (fills) or skip the row (inventory, redemptions); an older
 * database that booked them as wallets is migrated on open.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fullBuild } from '../../core/analytics/build.ts';
import { positionsSql } from '../../core/positions.ts';
import { openVenueDb } from '../../data/analytics/open.ts';
import { openDuckDB } from '../../data/duckdb.ts';
import { loadCtfLogs } from '../../data/ingest/ctf.ts';
import { loadDataApiActivity } from '../../data/ingest/data-api-activity.ts';
import { loadDataApiTrades } from '../../data/ingest/data-api-trades.ts';
import { loadGammaEvents, loadGammaMarkets } from '../../data/ingest/gamma.ts';
import { resolveWallet, resolveWallets } from '../../data/ingest/ids.ts';
import { loadOrderFilledLogs } from '../../data/ingest/order-filled.ts';
import { PLACEHOLDER_ADDRESSES, ZERO_ADDRESS, isPlaceholder, placeholderAddresses } from '../../data/ingest/placeholders.ts';
import { DEFAULT_CHAIN_CONFIG, chainConfig, parseLogsFile, type RpcLogInput } from '../../data/ingest/rpc-log.ts';
import { duckRunner } from '../../data/runner.ts';
import { VENUE_TABLES, createVenueSchema, migrateVenue, venueInsert } from '../../data/schema.ts';
import { CTF, EXCHANGE_V1, EXCHANGE_V2, M, NEG_RISK_ADAPTER, NEG_RISK_EXCHANGE_V1, W, address, tx } from '../fixtures/ingest/world.ts';
import { AS_OF, dataApiWorld } from './data-api-world.ts';
import { count, fixture, memoryVenue, queryRows } from './helpers.ts';

const OPERATOR = address('operator');
const config = chainConfig({ ctfExchanges: [EXCHANGE_V2], operators: [OPERATOR] });
const lower = (a: string) => a.toLowerCase();
/** An indexed address topic. */
const topicOf = (a: string) => `0x${lower(a).slice(2).padStart(64, '0')}`;

async function venue() {
  const conn = await memoryVenue();
  await loadGammaMarkets(conn, fixture('gamma-markets.json'));
  await loadGammaEvents(conn, fixture('gamma-events.json'));
  return conn;
}

const walletAddresses = async (conn: Awaited<ReturnType<typeof memoryVenue>>) =>
  (await queryRows<{ address: string }>(conn, 'SELECT address FROM wallets ORDER BY wallet_id')).map((r) => r.address);

describe('placeholder addresses', () => {
  it('are the zero address and the default contracts, plus what a config adds, in any case', () => {
    // the V2 exchanges on Polygon (CTF and NegRisk): defaults too
    const v2 = ['0xE111180000d2663C0091e4f400237545B87B996B', '0xe2222d279d744050d28e00520010520000310F59'];
    // and the V2 collateral adapters, which split, merge and redeem for users (CTF events name them, not the user)
    const adapters = ['0xADa100874d00e3331D00F2007a9c336a65009718', '0xAdA200001000ef00D07553cEE7006808F895c6F1', '0xadA2005600Dec949baf300f4C6120000bDB6eAab'];
    expect([...PLACEHOLDER_ADDRESSES].sort()).toEqual([ZERO_ADDRESS, EXCHANGE_V1, NEG_RISK_EXCHANGE_V1, NEG_RISK_ADAPTER, CTF, ...v2, ...adapters].map(lower).sort());
    expect(isPlaceholder(EXCHANGE_V1)).toBe(true); // checksummed spelling
    expect(isPlaceholder(EXCHANGE_V2)).toBe(false);
    expect(isPlaceholder(EXCHANGE_V2, config)).toBe(true);
    expect(isPlaceholder(OPERATOR.toUpperCase().replace('0X', '0x'), config)).toBe(true);
    expect(isPlaceholder(W.alice, config)).toBe(false);
    expect(placeholderAddresses(config).size).toBe(PLACEHOLDER_ADDRESSES.size + 2);
    expect(DEFAULT_CHAIN_CONFIG.operators).toEqual([]);
  });

  it('never become wallets: resolveWallets leaves them out of the table and the map', async () => {
    const conn = await memoryVenue();
    const ids = await resolveWallets(conn, [ZERO_ADDRESS, W.alice, EXCHANGE_V1, NEG_RISK_ADAPTER, CTF, EXCHANGE_V2, OPERATOR, W.bob], config);
    expect([...ids.entries()]).toEqual([[W.alice, 1], [W.bob, 2]]);
    expect(await walletAddresses(conn)).toEqual([W.alice, W.bob]);
    expect(await resolveWallet(conn, ZERO_ADDRESS)).toBeNull();
    expect(await resolveWallet(conn, W.alice)).toBe(1);
  });
});

describe('data-api rows naming a placeholder', () => {
  it('a trade by a placeholder proxyWallet is a fill with no known party: counted for volume, no wallet', async () => {
    const conn = await venue();
    const row = (wallet: string, t: string) => ({ proxyWallet: wallet, side: 'BUY', asset: M.fed.yes, size: 10, price: 0.5, timestamp: 1777000000, transactionHash: tx(t) });
    const report = await loadDataApiTrades(conn, [row(W.bob, 'u1'), row(ZERO_ADDRESS, 'u2'), row(EXCHANGE_V2, 'u3')], config);
    expect(report).toMatchObject({ inserted: 3, rows: { fills: 3 }, unknown_counterparty: 3, unknown_taker: 2 });
    expect(await walletAddresses(conn)).toEqual([W.bob]);
    expect(await queryRows(conn, `SELECT count(*)::INTEGER AS n, sum(size_usdc) AS usd, count(taker_id)::INTEGER AS takers FROM fills`)).toEqual([{ n: 3, usd: 15, takers: 1 }]);
    expect(await count(conn, 'fill_legs')).toBe(1);
  });

  it('activity: TRADE rows take the trades path; inventory rows of a placeholder are skipped with a reason', async () => {
    const conn = await venue();
    const base = { timestamp: 1776900000, conditionId: M.fed.conditionId, price: 0, asset: '', side: '', outcomeIndex: 999 };
    const rows = [
      { ...base, proxyWallet: NEG_RISK_ADAPTER, type: 'SPLIT', size: 100, usdcSize: 100, transactionHash: tx('s1') },
      { ...base, proxyWallet: ZERO_ADDRESS, type: 'MERGE', size: 40, usdcSize: 40, transactionHash: tx('s2') },
      { ...base, proxyWallet: OPERATOR, type: 'REDEEM', size: 5, usdcSize: 5, transactionHash: tx('s3') },
      { ...base, proxyWallet: W.grace, type: 'SPLIT', size: 7, usdcSize: 7, transactionHash: tx('s4') },
      { proxyWallet: ZERO_ADDRESS, type: 'TRADE', side: 'BUY', asset: M.fed.no, conditionId: M.fed.conditionId, size: 4, price: 0.25, timestamp: 1777000000, transactionHash: tx('s5'), outcomeIndex: 1 },
    ];
    const report = await loadDataApiActivity(conn, rows, config);
    expect(report).toMatchObject({
      inserted: 2,
      skipped: { placeholder_wallet: 3 },
      rows: { fills: 1, inventory_events: 1, inventory_legs: 2 },
      unknown_counterparty: 1,
      unknown_taker: 1,
    });
    expect(report.rejections.join('\n')).toMatch(/is a placeholder address, not a trader/);
    expect(await walletAddresses(conn)).toEqual([W.grace]);
    expect(await queryRows(conn, `SELECT DISTINCT wallet_id FROM inventory_legs UNION SELECT DISTINCT wallet_id FROM inventory_events`)).toEqual([{ wallet_id: 1 }]);
  });
});

describe('OrderFilled logs naming a placeholder', () => {
  const file = parseLogsFile(fixture('logs-order-filled.json'));
  const logs = file.logs as RpcLogInput[];
  const a10 = logs.find((l) => l.transactionHash === tx('A') && Number(l.logIndex) === 10)!; // alice SELLs 60 YES to carol
  /** A10 again in its own transaction, with the maker and/or taker topic replaced. */
  const variant = (name: string, party: { maker?: string; taker?: string }) => ({
    ...a10,
    transactionHash: tx(name),
    topics: [a10.topics[0]!, a10.topics[1]!, party.maker ? topicOf(party.maker) : a10.topics[2]!, party.taker ? topicOf(party.taker) : a10.topics[3]!],
  });

  it('books both sides when both are wallets, and only the real side when the other is a contract or an operator', async () => {
    const conn = await venue();
    const extra = [
      variant('maker-adapter', { maker: NEG_RISK_ADAPTER }),
      variant('maker-operator', { maker: OPERATOR }),
      // the neg-risk exchange as the taker of a log the standard exchange emitted: not that exchange's own summary
      variant('taker-other-exchange', { taker: NEG_RISK_EXCHANGE_V1 }),
      variant('taker-zero', { taker: ZERO_ADDRESS }),
    ];
    const report = await loadOrderFilledLogs(conn, [...file.logs, ...extra], file.blockTimestamps, config);
    // the fixture's 7 fills (every party a wallet) plus the 4 variants
    expect(report).toMatchObject({ inserted: 11, rows: { fills: 11 }, unknown_counterparty: 2, unknown_taker: 2 });
    expect(await walletAddresses(conn)).toEqual(expect.arrayContaining([W.alice, W.bob, W.carol, W.dave, W.erin, W.frank]));
    expect((await walletAddresses(conn)).some((a) => placeholderAddresses(config).has(a))).toBe(false);

    const ids = Object.fromEntries((await queryRows<{ address: string; wallet_id: number }>(conn, 'SELECT address, wallet_id FROM wallets')).map((r) => [r.address, r.wallet_id]));
    const legs = await queryRows<{ tx_hash: string; role: string; wallet_id: number }>(conn, `SELECT tx_hash, role, wallet_id FROM fill_legs ORDER BY tx_hash, log_index, role`);
    const legsOf = (name: string) => legs.filter((l) => l.tx_hash === tx(name)).map((l) => [l.role, l.wallet_id]);
    // both known: both legs, as before
    expect(legsOf('A')).toEqual([['maker', ids[W.alice]], ['taker', ids[W.carol]], ['maker', ids[W.bob]], ['taker', ids[W.carol]]]);
    expect(legsOf('maker-adapter')).toEqual([['taker', ids[W.carol]]]);
    expect(legsOf('maker-operator')).toEqual([['taker', ids[W.carol]]]);
    expect(legsOf('taker-other-exchange')).toEqual([['maker', ids[W.alice]]]);
    expect(legsOf('taker-zero')).toEqual([['maker', ids[W.alice]]]);

    // positions: maker and taker of a fully known fill both hold; nothing is held by an unknown party
    const positions = await queryRows<{ wallet_id: number | null; market_id: number; shares: number }>(conn, `SELECT wallet_id, market_id, shares FROM (${positionsSql(new Date('2026-12-31T00:00:00Z'))}) WHERE market_id = 1`);
    expect(positions.every((p) => p.wallet_id !== null)).toBe(true);
    const holders = new Set(positions.map((p) => p.wallet_id));
    expect(holders.has(ids[W.alice]!) && holders.has(ids[W.carol]!)).toBe(true);
    // carol bought 60 + 40 in tx A and 60 in each maker-less variant: 220 YES, against 60 + 60 sold by alice in the taker-less ones
    const carolYes = await queryRows<{ shares: number }>(conn, `SELECT shares FROM (${positionsSql(new Date('2026-12-31T00:00:00Z'))}) WHERE wallet_id = ${ids[W.carol]} AND market_id = 1 AND outcome_index = 0`);
    expect(carolYes[0]!.shares).toBeCloseTo(220, 9);
  });
});

describe('ConditionalTokens redemptions by a placeholder', () => {
  it('are skipped with a reason instead of booking the contract as a wallet', async () => {
    const conn = await venue();
    const file = parseLogsFile(fixture('logs-ctf.json'));
    const logs = file.logs as RpcLogInput[];
    const p1 = logs.find((l) => l.transactionHash === tx('P1'))!; // bob redeems BTC on the CTF
    const adapterRedemption = logs.find((l) => lower(l.address) === lower(NEG_RISK_ADAPTER))!; // alice through the adapter
    const extra = [
      { ...p1, transactionHash: tx('exchange-redeems'), topics: [p1.topics[0]!, topicOf(EXCHANGE_V1), p1.topics[2]!, p1.topics[3]!] },
      { ...adapterRedemption, transactionHash: tx('zero-redeems'), topics: [adapterRedemption.topics[0]!, topicOf(ZERO_ADDRESS), adapterRedemption.topics[2]!] },
    ];
    const report = await loadCtfLogs(conn, [...file.logs, ...extra], file.blockTimestamps, config);
    expect(report.skipped).toMatchObject({ placeholder_redeemer: 2, neg_risk_adapter_redemption: 1 });
    expect((await walletAddresses(conn)).some((a) => isPlaceholder(a, config))).toBe(false);
    expect(await count(conn, 'inventory_events', `tx_hash IN ('${tx('exchange-redeems')}', '${tx('zero-redeems')}')`)).toBe(0);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Migration of a database written by the old code
// ---------------------------------------------------------------------------------------------------------------

/** The old code's DDL, verbatim where it differs: fill parties NOT NULL, and fill_legs with a leg for every party. */
const OLD_FILLS = `CREATE TABLE fills (
    tx_hash VARCHAR NOT NULL, log_index INTEGER NOT NULL, ts TIMESTAMP NOT NULL, market_id INTEGER NOT NULL,
    outcome_index UTINYINT NOT NULL, maker_id INTEGER NOT NULL, taker_id INTEGER NOT NULL, side VARCHAR NOT NULL,
    match_type VARCHAR NOT NULL, price DOUBLE NOT NULL, shares DOUBLE NOT NULL, size_usdc DOUBLE NOT NULL,
    fee_usdc DOUBLE NOT NULL, exchange_version UTINYINT NOT NULL, exchange_kind VARCHAR NOT NULL)`;
const OLD_FILL_LEGS = `CREATE OR REPLACE VIEW fill_legs AS
    SELECT tx_hash, log_index, ts, market_id, outcome_index, taker_id AS wallet_id, 'taker' AS role, side,
           price, shares, size_usdc, fee_usdc FROM fills
    UNION ALL
    SELECT tx_hash, log_index, ts, market_id,
           CASE WHEN match_type = 'direct' THEN outcome_index ELSE 1 - outcome_index END::UTINYINT,
           maker_id, 'maker',
           CASE WHEN match_type = 'direct' THEN (CASE side WHEN 'BUY' THEN 'SELL' ELSE 'BUY' END)
                WHEN match_type = 'mint' THEN 'BUY' ELSE 'SELL' END,
           CASE WHEN match_type = 'direct' THEN price ELSE 1 - price END,
           shares,
           CASE WHEN match_type = 'direct' THEN size_usdc ELSE (1 - price) * shares END,
           0.0
    FROM fills`;

const nullability = (conn: Awaited<ReturnType<typeof memoryVenue>>) =>
  queryRows(conn, `SELECT column_name, is_nullable FROM information_schema.columns WHERE table_name = 'fills' AND column_name IN ('maker_id', 'taker_id') ORDER BY 1`);

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

describe('migrating a database written by the old code', () => {
  it('gives an older markets table the outcome_labels column (NULL: Yes / No); a second run does nothing', async () => {
    const { conn } = await openDuckDB({ path: ':memory:' });
    const oldMarkets = `${VENUE_TABLES.markets.slice(0, VENUE_TABLES.markets.indexOf(',\n    outcome_labels'))}\n)`;
    expect(oldMarkets).not.toContain('outcome_labels');
    await conn.run(oldMarkets);
    expect((await migrateVenue(conn)).labelsAdded).toBe(true);
    expect((await migrateVenue(conn)).labelsAdded).toBe(false);
    await conn.run(`${venueInsert('markets')} VALUES (1, '0x${'1'.repeat(64)}', '0x${'2'.repeat(64)}', NULL, 'Q?', 'q', 'crypto', '1', '2', false, NULL,
      TIMESTAMP '2026-01-01', TIMESTAMP '2026-01-01', TIMESTAMP '2026-02-01', NULL, NULL, NULL, 'gamma')`);
    expect(await queryRows(conn, `SELECT outcome_labels FROM markets`)).toEqual([{ outcome_labels: null }]);
  });

  it('drops NOT NULL, clears the placeholder parties, deletes the placeholder wallets; a second run does nothing', async () => {
    const { conn } = await openDuckDB({ path: ':memory:' });
    await conn.run(OLD_FILLS);
    await conn.run(`CREATE TABLE wallets (wallet_id INTEGER NOT NULL, address VARCHAR NOT NULL, username VARCHAR, pseudonym VARCHAR NOT NULL, profile_image VARCHAR, verified BOOLEAN NOT NULL DEFAULT false)`);
    await conn.run(`CREATE TABLE inventory_events (tx_hash VARCHAR NOT NULL, log_index INTEGER NOT NULL, ts TIMESTAMP NOT NULL, wallet_id INTEGER NOT NULL, kind VARCHAR NOT NULL, market_id INTEGER, neg_risk_market_id VARCHAR, amount DOUBLE NOT NULL, usdc_delta DOUBLE NOT NULL)`);
    await conn.run(`CREATE TABLE inventory_legs (tx_hash VARCHAR NOT NULL, log_index INTEGER NOT NULL, wallet_id INTEGER NOT NULL, market_id INTEGER NOT NULL, outcome_index UTINYINT NOT NULL, shares_delta DOUBLE NOT NULL)`);
    await conn.run(OLD_FILL_LEGS);
    // as the old data-api loader wrote them: the zero address as wallet 1, the counterparty of every trade
    await conn.run(`INSERT INTO wallets VALUES (1, '${ZERO_ADDRESS}', NULL, 'Unknown-Counterparty', NULL, false), (2, '${W.alice}', NULL, 'A-B', NULL, false),
      (3, '${W.bob}', NULL, 'C-D', NULL, false), (4, '${lower(NEG_RISK_ADAPTER)}', NULL, 'E-F', NULL, false)`);
    const fill = (t: string, maker: number, taker: number) => `('${tx(t)}', -1, TIMESTAMP '2026-05-01 00:00:00', 1, 0, ${maker}, ${taker}, 'BUY', 'direct', 0.5, 10, 5, 0, 1, 'ctf')`;
    await conn.run(`${venueInsert('fills')} VALUES ${[fill('m1', 1, 2), fill('m2', 1, 3), fill('m3', 3, 2), fill('m4', 4, 4)].join(', ')}`);
    await conn.run(`${venueInsert('inventory_events')} VALUES ('${tx('i1')}', -5, TIMESTAMP '2026-05-01 00:00:00', 4, 'SPLIT', 1, NULL, 3, -3), ('${tx('i2')}', -6, TIMESTAMP '2026-05-01 00:00:00', 2, 'SPLIT', 1, NULL, 3, -3)`);
    await conn.run(`INSERT INTO inventory_legs VALUES ('${tx('i1')}', -5, 4, 1, 0, 3), ('${tx('i1')}', -5, 4, 1, 1, 3), ('${tx('i2')}', -6, 2, 1, 0, 3)`);
    expect(await count(conn, 'fill_legs')).toBe(8);

    const migration = await createVenueSchema(conn);
    // the old tables also lack the arrival batch (seq), which the migration adds
    expect(migration).toEqual({ seqAdded: ['fills', 'inventory_events'], nullableColumns: ['maker_id', 'taker_id'], removedWallets: [ZERO_ADDRESS, lower(NEG_RISK_ADAPTER)], partiesCleared: 4, labelsAdded: false });
    expect(await nullability(conn)).toEqual([{ column_name: 'maker_id', is_nullable: 'YES' }, { column_name: 'taker_id', is_nullable: 'YES' }]);
    const parties = await queryRows<{ tx_hash: string; maker_id: number | null; taker_id: number | null }>(conn, `SELECT tx_hash, maker_id, taker_id FROM fills`);
    expect(Object.fromEntries(parties.map((r) => [r.tx_hash, [r.maker_id, r.taker_id]]))).toEqual({
      [tx('m1')]: [null, 2],
      [tx('m2')]: [null, 3],
      [tx('m3')]: [3, 2],
      [tx('m4')]: [null, null],
    });
    expect(await walletAddresses(conn)).toEqual([W.alice, W.bob]);
    expect(await queryRows(conn, `SELECT DISTINCT wallet_id FROM inventory_legs UNION SELECT wallet_id FROM inventory_events`)).toEqual([{ wallet_id: 2 }]);
    // the view is the new one: a leg per known party only (m1 1, m2 1, m3 2, m4 0), and the fills still count
    expect(await count(conn, 'fill_legs')).toBe(4);
    expect(await count(conn, 'fill_legs', 'wallet_id IS NULL')).toBe(0);
    expect(await count(conn, 'fills')).toBe(4);

    expect(await createVenueSchema(conn)).toEqual({ seqAdded: [], nullableColumns: [], removedWallets: [], partiesCleared: 0, labelsAdded: false });
    expect(await migrateVenue(conn)).toEqual({ seqAdded: [], nullableColumns: [], removedWallets: [], partiesCleared: 0, labelsAdded: false });
  });

  it('an old data-api venue opened for the analytics is cleaned first: the zero address it once ranked is gone', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'old-venue-'));
    dirs.push(dir);
    const path = join(dir, 'venue.duckdb');
    const world = dataApiWorld();
    {
      // Write the old state: today's loaders, then the old shape (the zero wallet as every maker, NOT NULL, old view).
      const { instance, conn } = await openDuckDB({ path });
      await createVenueSchema(conn);
      await loadGammaMarkets(conn, world.gammaMarkets);
      await loadDataApiTrades(conn, world.trades);
      await conn.run(`INSERT INTO wallets VALUES ((SELECT max(wallet_id) + 1 FROM wallets), '${ZERO_ADDRESS}', NULL, 'Unknown-Counterparty', NULL, false)`);
      await conn.run(`UPDATE fills SET maker_id = (SELECT wallet_id FROM wallets WHERE address = '${ZERO_ADDRESS}')`);
      await conn.run(`ALTER TABLE fills ALTER COLUMN maker_id SET NOT NULL`);
      await conn.run(`ALTER TABLE fills ALTER COLUMN taker_id SET NOT NULL`);
      await conn.run(OLD_FILL_LEGS);
      // what issue 20 reported: the stand-in has every trade and is ranked
      await fullBuild(duckRunner(conn), AS_OF);
      const [zero] = await queryRows<{ n: number }>(conn, `SELECT count(*)::INTEGER AS n FROM a_board WHERE address = '${ZERO_ADDRESS}'`);
      expect(zero!.n).toBeGreaterThan(0);
      conn.closeSync();
      instance.closeSync();
    }
    const { instance, conn, migration } = await openVenueDb({ db: path });
    try {
      expect(migration).toMatchObject({ nullableColumns: ['maker_id', 'taker_id'], removedWallets: [ZERO_ADDRESS], partiesCleared: world.trades.length });
      await fullBuild(duckRunner(conn), AS_OF);
      expect(await count(conn, 'wallets')).toBe(world.wallets.length);
      expect(await count(conn, 'fills', 'maker_id IS NULL')).toBe(world.trades.length);
      const boards = await queryRows<{ address: string }>(conn, `SELECT DISTINCT lower(address) AS address FROM a_board`);
      expect(boards.length).toBeGreaterThan(0);
      for (const { address: a } of boards) expect(world.wallets).toContain(a);
      expect(await count(conn, 'a_wallet_metrics')).toBe(world.wallets.length);
    } finally {
      conn.closeSync();
      instance.closeSync();
    }
  }, 120_000);
});
