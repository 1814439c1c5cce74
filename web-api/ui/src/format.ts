/** Numbers as people read them; null stays visibly "unmeasured", never 0. */
export const usd = (x: number | null | undefined) =>
  x === null || x === undefined
    ? '—'
    : // under half a cent reads $0.00, never -$0.00 (sums of buys and sells that cancel leave a last-bit residue)
      (Math.abs(x) < 0.005 ? 0 : x).toLocaleString('en-US', { style: 'currency', currency: 'USD', maximumFractionDigits: Math.abs(x) >= 100 ? 0 : 2 });
export const num = (x: number | null | undefined, digits = 2) => (x === null || x === undefined ? '—' : x.toFixed(digits));
export const pct = (x: number | null | undefined, digits = 0) => (x === null || x === undefined ? '—' : `${x.toFixed(digits)}%`);
export const count = (x: number | null | undefined) => (x === null || x === undefined ? '—' : x.toLocaleString('en-US'));
