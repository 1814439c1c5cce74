/**
 * Layering rule, checked rather than hoped for: core/ is pure (no I/O imports, no environment), and no surface
 * imports another surface's internals. Exits 1 with the offending lines.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const SURFACES = ['mcp', 'gateway', 'web-api', 'jobs'];
const IO = /from\s+['"](node:)?(fs|fs\/promises|http|https|net|child_process|express|undici|ioredis|better-sqlite3|web-push)['"]|process\.env/;

function files(dir: string): string[] {
  let out: string[] = [];
  let entries: string[] = [];
  try {
    entries = readdirSync(dir);
  } catch {
    return out;
  }
  for (const e of entries) {
    const p = join(dir, e);
    if (statSync(p).isDirectory()) out = out.concat(files(p));
    else if (p.endsWith('.ts')) out.push(p);
  }
  return out;
}

const problems: string[] = [];
for (const f of files(join(root, 'core'))) {
  readFileSync(f, 'utf8').split('\n').forEach((line, i) => {
    if (IO.test(line)) problems.push(`${relative(root, f)}:${i + 1}: core must not do I/O: ${line.trim()}`);
    if (/from\s+['"]\.\.\/(mcp|gateway|web-api|jobs|data)\//.test(line)) problems.push(`${relative(root, f)}:${i + 1}: core must not import a surface or data/: ${line.trim()}`);
  });
}
for (const s of SURFACES) {
  for (const f of files(join(root, s))) {
    readFileSync(f, 'utf8').split('\n').forEach((line, i) => {
      const m = line.match(/from\s+['"]\.\.\/(mcp|gateway|web-api|jobs)\/([^'"]+)['"]/);
      // the MCP server may use the gateway's payment module (architecture.md)
      if (m && m[1] !== s && !(s === 'mcp' && m[1] === 'gateway' && m[2]!.startsWith('payment'))) {
        problems.push(`${relative(root, f)}:${i + 1}: ${s}/ must not import ${m[1]}/ internals: ${line.trim()}`);
      }
    });
  }
}
if (problems.length) {
  console.error(problems.join('\n'));
  process.exit(1);
}
console.log('layers ok: core/ is pure, surfaces are independent');
