/**
 * A wallet's performance as the analytics build holds it (as of the build's T, never later than the request's):
 * daily mark-to-market P&L over the risk window (the completed UTC days a_risk_daily keeps) with its running sum,
 * the risk statistics (Sharpe, Sortino, max drawdown; null when unmeasured), alpha at 1 h / 24 h / resolution in
 * cents, and the smart-money tags. The web app's trader page draws the P&L curve from it.
 */
import { z } from 'zod';
import { tsLiteral, type AsOf, type QueryRunner } from '../query.ts';
import { resolveTrader } from './identity.ts';
import { num } from './shared.ts';

export const TraderPerformance = z.object({
  proxy_wallet: z.string(),
  /** the analytics build's as_of (the figures' time) */
  as_of: z.string(),
  /** completed UTC days of the risk window with P&L or movements, oldest first; cumulative_pnl sums from the window's start */
  daily: z.array(z.object({ day: z.string(), pnl: z.number(), capital: z.number(), cumulative_pnl: z.number() })),
  risk: z.object({ sharpe: z.number().nullable(), sortino: z.number().nullable(), max_drawdown: z.number().nullable(), risk_days: z.number().int() }),
  alpha: z.object({
    alpha_1h_cents: z.number().nullable(),
    alpha_24h_cents: z.number().nullable(),
    alpha_res_cents: z.number().nullable(),
    n_alpha_1h: z.number().int(),
    n_alpha_24h: z.number().int(),
    n_alpha_res: z.number().int(),
  }),
  smart_money_tags: z.array(z.string()),
});
export type TraderPerformance = z.infer<typeof TraderPerformance>;

/** null: no such wallet; a wallet without rows in the build gets an empty series and null figures. */
export async function traderPerformance(db: QueryRunner, wallet: number | string, asOf: AsOf): Promise<TraderPerformance | null> {
  const who = await resolveTrader(db, wallet);
  if (!who) return null;
  const [meta] = await db.all<{ as_of: Date }>(`SELECT as_of FROM a_meta`);
  // the build's T; a request before it (a pinned cursor, a lagging clock) reads nothing newer than itself
  const T = meta && new Date(meta.as_of).getTime() <= new Date(asOf).getTime() ? new Date(meta.as_of) : new Date(asOf);
  const W = who.wallet_id;
  const daily = await db.all<{ day: Date; pnl: number; capital: number }>(
    `SELECT day, pnl, capital FROM a_risk_daily WHERE wallet_id = ${W} AND day < ${tsLiteral(T)} ORDER BY day`,
  );
  const [risk] = await db.all<Record<string, unknown>>(`SELECT sharpe, sortino, max_drawdown, risk_days FROM a_risk WHERE wallet_id = ${W}`);
  const [alpha] = await db.all<Record<string, unknown>>(`SELECT * FROM a_alpha WHERE wallet_id = ${W}`);
  const [tags] = await db.all<{ t: string[] | null }>(`SELECT smart_money_tags AS t FROM a_wallet_metrics WHERE wallet_id = ${W}`);
  let running = 0;
  return {
    proxy_wallet: who.address,
    as_of: T.toISOString(),
    daily: daily.map((d) => {
      running += Number(d.pnl);
      return { day: new Date(d.day).toISOString(), pnl: Number(d.pnl), capital: Number(d.capital), cumulative_pnl: running };
    }),
    risk: { sharpe: num(risk?.sharpe), sortino: num(risk?.sortino), max_drawdown: num(risk?.max_drawdown), risk_days: Number(risk?.risk_days ?? 0) },
    alpha: {
      alpha_1h_cents: num(alpha?.alpha_1h_cents),
      alpha_24h_cents: num(alpha?.alpha_24h_cents),
      alpha_res_cents: num(alpha?.alpha_res_cents),
      n_alpha_1h: Number(alpha?.n_alpha_1h ?? 0),
      n_alpha_24h: Number(alpha?.n_alpha_24h ?? 0),
      n_alpha_res: Number(alpha?.n_alpha_res ?? 0),
    },
    smart_money_tags: tags?.t ?? [],
  };
}
