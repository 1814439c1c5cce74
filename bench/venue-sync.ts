/**
 * Benchmark: the venue sync against the replay of the sources (data/sync/replay.ts, served by its own process).
 *   npm run bench:venue-sync -- [--matches 300] [--follow-seconds 60] [--rates 68,680] [--parts backfill,resume,follow] [--out DIR]
 * Prints, as JSON lines:
 * - backfill: seconds, fills/s and markets/s ingested, requests per source, disk used;
 * - resume: a sync killed (SIGKILL) half-way and run again, against one uninterrupted (both as `npm run venue:sync`);
 * - follow: at each rate, the chain going on in real time (a block every 2 s), the lag from a block's appearance to
 *   its fills committed in the venue (p50 / p95 / max), with confirmations 0 (add 2 s per confirmation).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { openDuckDB, queryRows } from '../data/duckdb.ts';
import { VenueSync } from '../data/sync/index.ts';
import { REPLAY_ADDRESSES, REPLAY_CHAIN } from '../data/sync/replay.ts';

const { values } = parseArgs({ options: { matches: { type: 'string' }, 'follow-seconds': { type: 'string' }, rates: { type: 'string' }, parts: { type: 'string' }, out: { type: 'string' } } });
const parts = new Set((values.parts ?? 'backfill,resume,follow').split(','));
const matches = Number(values.matches ?? 300);
const followSeconds = Number(values['follow-seconds'] ?? 60);
const rates = (values.rates ?? '68,680').split(',').map(Number);
const out = resolve(values.out ?? 'var/bench-sync');
rmSync(out, { recursive: true, force: true });

interface Replay {
  child: ChildProcess;
  gamma: string;
  rpc: string;
  firstBlock: number;
  endTs: number;
  extendedAt: number | null;
  logs: number;
}

async function replay(args: string[]): Promise<Replay> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'data/sync/replay-cli.ts', '--port', '0', ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const line = await new Promise<string>((ok) => {
    let buf = '';
    child.stdout!.on('data', (c: Buffer) => {
      buf += c.toString();
      const i = buf.indexOf('\n');
      if (i >= 0) ok(buf.slice(0, i));
    });
  });
  return { child, ...(JSON.parse(line) as Omit<Replay, 'child'>) };
}

const diskMiB = (dir: string) => readdirSync(dir).reduce((s, f) => s + statSync(join(dir, f)).size, 0) / 2 ** 20;
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor(p * s.length))]! : Number.NaN;
};

// --- backfill, in this process
if (parts.has('backfill') || parts.has('resume')) {
  const r = await replay(['--matches', String(matches)]);
  const dir = join(out, 'backfill');
  mkdirSync(dir, { recursive: true });
  const { instance, conn } = await openDuckDB({ path: join(dir, 'venue.duckdb'), threads: 2 });
  const sync = await VenueSync.open(conn, { gammaUrl: r.gamma, rpcUrl: r.rpc, chain: REPLAY_CHAIN, fromBlock: BigInt(r.firstBlock), confirmations: 0 });
  let gammaDone = 0;
  const t0 = performance.now();
  sync.on('gamma', () => (gammaDone = performance.now()));
  const b = await sync.backfill();
  const seconds = (performance.now() - t0) / 1000;
  const [c] = await queryRows<{ f: number; m: number }>(conn, `SELECT (SELECT count(*) FROM fills) AS f, (SELECT count(*) FROM markets) AS m`);
  const stats = { gamma: sync.gammaSource.stats(), rpc: sync.rpcSource.stats() };
  await sync.close();
  conn.closeSync();
  instance.closeSync();
  const gammaSeconds = (gammaDone - t0) / 1000;
  console.log(JSON.stringify({
    bench: 'venue-sync backfill',
    replayed_logs: r.logs,
    fills: Number(c!.f),
    markets: Number(c!.m),
    seconds: Number(seconds.toFixed(2)),
    gamma_seconds: Number(gammaSeconds.toFixed(2)),
    markets_per_s: Math.round(Number(c!.m) / gammaSeconds),
    chain_seconds: Number((seconds - gammaSeconds).toFixed(2)),
    fills_per_s: Math.round(Number(c!.f) / (seconds - gammaSeconds)),
    blocks: b.blocks,
    requests: stats,
    disk_mib: Number(diskMiB(dir).toFixed(1)),
  }));

  // --- resume: the CLI killed half-way and run again, against the CLI uninterrupted
  if (parts.has('resume')) {
  const cli = (dir2: string) => ['--import', 'tsx', 'data/sync/cli.ts', '--dir', dir2, '--gamma', r.gamma, '--rpc', r.rpc, '--from', String(r.firstBlock), '--confirmations', '0', '--ctf-exchange', REPLAY_ADDRESSES.exchangeV2, '--json'];
  const run = (args: string[], killAfterBatches = Number.POSITIVE_INFINITY) =>
    new Promise<{ seconds: number; batches: number; killed: boolean }>((ok) => {
      const t = performance.now();
      const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'ignore'] });
      let batches = 0;
      let buf = '';
      child.stdout!.on('data', (d: Buffer) => {
        buf += d.toString();
        const lines = buf.split('\n');
        buf = lines.pop()!;
        for (const l of lines) if (l.startsWith('{"batch"')) batches++;
        if (batches >= killAfterBatches) child.kill('SIGKILL');
      });
      child.on('exit', (_c, signal) => ok({ seconds: (performance.now() - t) / 1000, batches, killed: signal === 'SIGKILL' }));
    });
  const whole = await run(cli(join(out, 'whole')));
  const first = await run(cli(join(out, 'resumed')), Math.floor(whole.batches / 2));
  const second = await run(cli(join(out, 'resumed')));
  console.log(JSON.stringify({
    bench: 'venue-sync resume',
    uninterrupted_seconds: Number(whole.seconds.toFixed(2)),
    batches: whole.batches,
    killed_after_batches: first.batches,
    killed_run_seconds: Number(first.seconds.toFixed(2)),
    resumed_run_seconds: Number(second.seconds.toFixed(2)),
    overhead_seconds: Number((first.seconds + second.seconds - whole.seconds).toFixed(2)),
  }));
  }
  r.child.kill('SIGINT');
}

// --- follow lag at each rate
for (const rate of parts.has('follow') ? rates : []) {
  const r = await replay(['--matches', '2', '--extend', String(rate)]);
  const dir = join(out, `follow-${rate}`);
  mkdirSync(dir, { recursive: true });
  const { instance, conn } = await openDuckDB({ path: join(dir, 'venue.duckdb'), threads: 2 });
  const sync = await VenueSync.open(conn, { gammaUrl: r.gamma, rpcUrl: r.rpc, chain: REPLAY_CHAIN, fromBlock: BigInt(r.firstBlock), confirmations: 0 });
  await sync.backfill();
  const lags: number[] = [];
  let fills = 0;
  const t0 = Date.now();
  sync.on('fill', (f) => {
    // a fill of the extension: its block appeared when the replay's clock reached its block time
    if (f.ts <= r.endTs) return;
    fills++;
    lags.push(Date.now() - (r.extendedAt! + (f.ts - r.endTs) * 1000));
  });
  const following = sync.follow({ pollMs: 500, gammaEveryMs: 30_000 });
  await new Promise((ok) => setTimeout(ok, followSeconds * 1000));
  await sync.stop();
  await following;
  await sync.close();
  conn.closeSync();
  instance.closeSync();
  r.child.kill('SIGINT');
  console.log(JSON.stringify({
    bench: 'venue-sync follow',
    fills_per_s: rate,
    seconds: followSeconds,
    fills_committed: fills,
    committed_per_s: Number((fills / ((Date.now() - t0) / 1000)).toFixed(1)),
    lag_ms: { p50: pct(lags, 0.5), p95: pct(lags, 0.95), max: Math.max(...lags) },
    confirmations: 0,
  }));
}
process.exit(0);
