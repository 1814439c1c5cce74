/**
 * npm run venue:replay -- [--port 8545] [--matches N] [--extend FILLS_PER_S] [--rate-limit-every N] [--server-error-every N] [--truncate-every N]
 * Serves the replayed venue (replay.ts) on loopback until Ctrl-C: Gamma at /gamma, JSON-RPC at /rpc. For trying the
 * sync and `VENUE=<dir> npm start` without the internet.
 */
import { parseArgs } from 'node:util';
import { REPLAY_ADDRESSES, VenueReplay } from './replay.ts';

const { values } = parseArgs({
  options: { port: { type: 'string' }, matches: { type: 'string' }, extend: { type: 'string' }, 'rate-limit-every': { type: 'string' }, 'server-error-every': { type: 'string' }, 'truncate-every': { type: 'string' } },
});
const replay = new VenueReplay({ matchesPerMarket: Number(values.matches ?? 12) });
// --extend R: after the recorded day the chain goes on in real time, R taker fills a second
const extendedAt = values.extend ? Date.now() : null;
if (values.extend) replay.extend(Number(values.extend));
if (values['rate-limit-every']) replay.failures.rateLimitEvery = Number(values['rate-limit-every']);
if (values['server-error-every']) replay.failures.serverErrorEvery = Number(values['server-error-every']);
if (values['truncate-every']) replay.failures.truncateEvery = Number(values['truncate-every']);
const urls = await replay.listen(Number(values.port ?? 8545));
console.log(JSON.stringify({ ...urls, firstBlock: replay.firstBlock, head: replay.head(), endTs: replay.endTs, extendedAt, markets: replay.markets.length, logs: replay.count().logs, v2Exchange: REPLAY_ADDRESSES.exchangeV2 }));
console.log(`try: npm run venue:sync -- --dir var/replayed --gamma ${urls.gamma} --rpc ${urls.rpc} --from ${replay.firstBlock}`);
process.on('SIGINT', () => void replay.close().then(() => process.exit(0)));
