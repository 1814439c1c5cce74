/** The web app's build: Preact, one small bundle, written to web-api/ui/dist (served by the API at /). */
import { defineConfig } from 'vite';
import preact from '@preact/preset-vite';

export default defineConfig({
  root: import.meta.dirname,
  plugins: [preact()],
  build: { outDir: 'dist', emptyOutDir: true, target: 'es2022', sourcemap: false },
  logLevel: 'warn',
});
