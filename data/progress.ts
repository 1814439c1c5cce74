/**
 * Progress for long builds, on stderr. On a terminal: a live bar with ETA. Elsewhere (CI logs, pipes): one plain
 * line per phase every 10%, so logs stay short and still show where the time goes.
 */
import cliProgress from 'cli-progress';

export interface ProgressReporter {
  update: (phase: string, done: number, total: number) => void;
  stop: () => void;
}

export function progressBar(label: string, tty = process.stderr.isTTY === true): ProgressReporter {
  return tty ? terminalBar(label) : plainLines(label);
}

function terminalBar(label: string): ProgressReporter {
  const bar = new cliProgress.SingleBar(
    { format: `${label} {phase} [{bar}] {percentage}% | {value}/{total} | eta {eta_formatted}`, stream: process.stderr, hideCursor: true, etaBuffer: 50 },
    cliProgress.Presets.shades_classic,
  );
  let current = '';
  let started = false;
  return {
    update(phase, done, total) {
      if (phase !== current) {
        if (started) bar.stop();
        bar.start(total, done, { phase: phase.padEnd(8) });
        started = true;
        current = phase;
      } else {
        bar.setTotal(total);
        bar.update(done, { phase: phase.padEnd(8) });
      }
    },
    stop() {
      if (started) bar.stop();
    },
  };
}

function plainLines(label: string): ProgressReporter {
  let current = '';
  let lastDecile = -1;
  const start = performance.now();
  return {
    update(phase, done, total) {
      if (phase !== current) {
        current = phase;
        lastDecile = -1;
      }
      const decile = total > 0 ? Math.floor((10 * done) / total) : 10;
      if (decile > lastDecile) {
        lastDecile = decile;
        const s = ((performance.now() - start) / 1000).toFixed(1);
        process.stderr.write(`${label} ${phase} ${decile * 10}% (${done}/${total}, ${s} s elapsed)\n`);
      }
    },
    stop() {},
  };
}
