import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 300_000,
    // DuckDB work is CPU-bound and the CI machine has 2 cores.
    pool: 'forks',
    maxWorkers: 2,
  },
});
