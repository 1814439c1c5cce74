/**
 * Operator commands on the account store (billing lives outside the service; this is how a plan changes).
 *
 *   npm run admin -- plans
 *   npm run admin -- show <user id | email | 0x address>
 *   npm run admin -- set-plan <user id | email | 0x address> <free|pro|quant|desk> [--note "invoice 123"]
 *
 * The store is the service's database: --db PATH-or-URL, or $DATABASE_URL (PostgreSQL), or $SERVICE_DB, or the
 * service.sqlite of the venue `npm start` serves with the same environment (VENUE, DATA_DIR; the demo venue by default).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { PLANS, PlanId } from '../core/plans.ts';
import { AccountStore } from '../data/account-store.ts';
import { isPostgresUrl } from '../data/sql/db.ts';
import { venueRoot } from '../data/venue-select.ts';

export function defaultServiceDb(env: NodeJS.ProcessEnv): string {
  if (env.DATABASE_URL) return env.DATABASE_URL;
  if (env.SERVICE_DB) return env.SERVICE_DB;
  // the venue npm start serves with the same environment (VENUE, DATA_DIR, DEMO_*)
  return join(venueRoot(env), 'service.sqlite');
}

export async function runAdmin(argv: string[], env: NodeJS.ProcessEnv, out: (line: string) => void): Promise<number> {
  const args = [...argv];
  const flag = (name: string) => {
    const i = args.indexOf(name);
    if (i < 0) return undefined;
    const v = args[i + 1];
    args.splice(i, 2);
    return v;
  };
  const dbPath = flag('--db') ?? defaultServiceDb(env);
  const note = flag('--note');
  const [cmd, ref, plan] = args;
  if (cmd === 'plans') {
    for (const p of Object.values(PLANS)) out(`${p.id}\t$${p.price_usd_month}/mo\t${p.requests_per_minute}/min\t${p.requests_per_month}/month\twebhooks ${p.webhook_events_per_month}/month\t${p.features.join(',') || '-'}`);
    return 0;
  }
  if ((cmd !== 'show' && cmd !== 'set-plan') || !ref || (cmd === 'set-plan' && !plan)) {
    out('usage: admin plans | show <user> | set-plan <user> <free|pro|quant|desk> [--note TEXT] [--db PATH]');
    return 2;
  }
  if (!isPostgresUrl(dbPath) && !existsSync(dbPath)) {
    out(`no service database at ${dbPath} (start the service once, or pass --db)`);
    return 1;
  }
  const store = await AccountStore.open(dbPath);
  try {
    const user = await store.findUser(ref);
    if (!user) {
      out(`no active user matches ${ref}`);
      return 1;
    }
    if (cmd === 'set-plan') {
      const parsed = PlanId.safeParse(plan);
      if (!parsed.success) {
        out(`unknown plan ${plan}; plans: ${Object.keys(PLANS).join(', ')}`);
        return 2;
      }
      await store.setPlan(user.user_id, parsed.data, Date.now(), note);
      out(`${user.user_id}: plan ${user.plan} -> ${parsed.data}`);
      return 0;
    }
    out(JSON.stringify({ ...(await store.record(user.user_id)), plan: user.plan }, null, 2));
    return 0;
  } finally {
    await store.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) process.exit(await runAdmin(process.argv.slice(2), process.env, (l) => console.log(l)));
