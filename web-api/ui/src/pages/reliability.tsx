/**
 * The calibration record as a reliability diagram: each of the 10 bins at (mean price paid, rate that came true),
 * its area by count, the diagonal of perfect calibration, and the band a calibrated trader's rate would fall in
 * (95%: predicted ± 1.96·√(p(1−p)/n)). A table below carries the same numbers for screen readers.
 */
export interface Bin {
  bin_idx: number;
  bin_label: string;
  predicted_mean: number | null;
  observed_rate: number | null;
  n: number;
}

const W = 360;
const PAD = 46;
const S = W - 2 * PAD;
const x = (p: number) => PAD + p * S;
const y = (p: number) => W - PAD - p * S;

export function Reliability({ bins }: { bins: Bin[] }) {
  const filled = bins.filter((b) => b.n > 0 && b.predicted_mean !== null && b.observed_rate !== null);
  const maxN = Math.max(1, ...filled.map((b) => b.n));
  const band = filled.map((b) => {
    const p = b.predicted_mean!;
    const half = 1.96 * Math.sqrt((p * (1 - p)) / b.n);
    return { p, lo: Math.max(0, p - half), hi: Math.min(1, p + half) };
  });
  const ticks = [0, 0.25, 0.5, 0.75, 1];
  return (
    <figure class="chart">
      <svg viewBox={`0 0 ${W} ${W}`} role="img" aria-labelledby="rel-title" data-testid="reliability">
        <title id="rel-title">Reliability diagram: price paid against how often it came true, 10 bins</title>
        <rect x={PAD} y={PAD} width={S} height={S} fill="#fafbfd" stroke="#d9dce3" />
        {ticks.map((t) => (
          <g key={t}>
            <line x1={x(t)} y1={y(0)} x2={x(t)} y2={y(0) + 4} stroke="#9aa0ad" />
            <text x={x(t)} y={y(0) + 16} text-anchor="middle">{`${t * 100}%`}</text>
            <line x1={x(0) - 4} y1={y(t)} x2={x(0)} y2={y(t)} stroke="#9aa0ad" />
            <text x={x(0) - 7} y={y(t) + 4} text-anchor="end">{`${t * 100}%`}</text>
          </g>
        ))}
        {band.length > 1 && (
          <polygon
            points={[...band.map((b) => `${x(b.p)},${y(b.hi)}`), ...[...band].reverse().map((b) => `${x(b.p)},${y(b.lo)}`)].join(' ')}
            fill="#cfe0fc"
            opacity="0.6"
          />
        )}
        <line x1={x(0)} y1={y(0)} x2={x(1)} y2={y(1)} stroke="#6b7280" stroke-dasharray="4 3" />
        {filled.map((b) => (
          <circle
            key={b.bin_idx}
            class="bin"
            cx={x(b.predicted_mean!)}
            cy={y(b.observed_rate!)}
            r={3 + 9 * Math.sqrt(b.n / maxN)}
            fill="#0b57d0"
            fill-opacity="0.75"
            data-bin={b.bin_idx}
            data-predicted={b.predicted_mean!}
            data-observed={b.observed_rate!}
            data-n={b.n}
          >
            <title>{`${b.bin_label}: paid ${(b.predicted_mean! * 100).toFixed(1)}%, came true ${(b.observed_rate! * 100).toFixed(1)}%, ${b.n} positions`}</title>
          </circle>
        ))}
        <text x={W / 2} y={W - 4} text-anchor="middle">price paid (predicted)</text>
        <text x={12} y={W / 2} text-anchor="middle" transform={`rotate(-90 12 ${W / 2})`}>came true (realized)</text>
      </svg>
      <figcaption class="muted">Dashed: perfect calibration. Shaded: where a calibrated trader's bins would fall (95%).</figcaption>
      <table>
        <caption class="muted" style="text-align:left">The 10 bins</caption>
        <thead>
          <tr>
            <th scope="col">Bin</th>
            <th scope="col">Paid (mean)</th>
            <th scope="col">Came true</th>
            <th scope="col">Positions</th>
          </tr>
        </thead>
        <tbody>
          {bins.map((b) => (
            <tr key={b.bin_idx}>
              <td>{b.bin_label}</td>
              <td>{b.predicted_mean === null ? '—' : `${(b.predicted_mean * 100).toFixed(1)}%`}</td>
              <td>{b.observed_rate === null ? '—' : `${(b.observed_rate * 100).toFixed(1)}%`}</td>
              <td>{b.n}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </figure>
  );
}
