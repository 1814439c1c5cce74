/**
 * Cumulative daily P&L as a line (uPlot: canvas, smooth with thousands of points), loaded only when a trader page
 * draws one: the first page's bundle stays small.
 */
import { useEffect, useRef } from 'preact/hooks';

export interface DailyPnl {
  day: string;
  pnl: number;
  cumulative_pnl: number;
}

export function PnlChart({ daily }: { daily: DailyPnl[] }) {
  const el = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!el.current || daily.length === 0) return;
    const target = el.current;
    const xs = daily.map((d) => Date.parse(d.day) / 1000);
    const ys = daily.map((d) => d.cumulative_pnl);
    const width = Math.min(900, target.clientWidth || 600);
    let plot: { destroy(): void } | null = null;
    let gone = false;
    void Promise.all([import('uplot'), import('uplot/dist/uPlot.min.css')]).then(([{ default: uPlot }]) => {
      if (gone) return;
      plot = new uPlot(
      {
        width,
        height: 260,
        scales: { x: { time: true } },
        axes: [{}, { values: (_u, vals) => vals.map((v) => `$${Math.round(v).toLocaleString('en-US')}`), size: 70 }],
        series: [{}, { label: 'cumulative P&L', stroke: '#0b57d0', width: 2, fill: 'rgba(11,87,208,0.08)' }],
        legend: { show: true },
      },
      [xs, ys],
      target,
    );
    });
    return () => {
      gone = true;
      plot?.destroy();
    };
  }, [daily]);
  if (daily.length === 0) return <p class="muted">No completed day with P&amp;L in the risk window.</p>;
  const last = daily[daily.length - 1]!;
  return (
    <figure>
      <div ref={el} data-testid="pnl-chart" data-points={daily.length} data-last={last.cumulative_pnl} role="img" aria-label={`Cumulative P&L over ${daily.length} days, ending at ${Math.round(last.cumulative_pnl)} USD`} />
      <figcaption class="muted">Daily mark-to-market P&amp;L, summed from the start of the risk window ({daily.length} days).</figcaption>
    </figure>
  );
}
