/**
 * Layering rule, checked rather than hoped for: core/ is pure (no I/O imports, no environment), no surface
 * imports another surface's internals, and core/ has no import cycle. Exits 1 with the offending lines.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

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

// Import cycles in core/: the graph of static relative imports between its .ts files (`import ... from`,
// `export ... from`, side-effect `import '...'`). `import type` / `export type` are erased at run time and are not
// edges; an `import { type A }` is (the module is still loaded). Every elementary cycle is reported (up to MAX_CYCLES),
// shortest first, as the chain of files from its first file in path order back to it.
const MAX_CYCLES = 100;

/** Relative value imports of a file, resolved to absolute paths of existing .ts files. */
function valueImports(file: string): string[] {
  const src = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const out = new Set<string>();
  for (const st of src.statements) {
    let spec: ts.Expression | undefined;
    if (ts.isImportDeclaration(st) && !st.importClause?.isTypeOnly) spec = st.moduleSpecifier;
    else if (ts.isExportDeclaration(st) && !st.isTypeOnly) spec = st.moduleSpecifier;
    if (!spec || !ts.isStringLiteral(spec) || !spec.text.startsWith('.')) continue;
    const base = resolve(dirname(file), spec.text);
    const target = [base, base.replace(/\.js$/, '.ts'), `${base}.ts`, join(base, 'index.ts')].find((p) => p.endsWith('.ts') && existsSync(p) && statSync(p).isFile());
    if (target) out.add(target);
  }
  return [...out].sort();
}

function importCycles(dir: string): string[][] {
  const nodes = files(dir).sort();
  const inDir = new Set(nodes);
  const graph = new Map(nodes.map((f) => [f, valueImports(f).filter((t) => inDir.has(t))]));
  // strongly connected components (Tarjan): a cycle lies within one component
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const comp = new Map<string, number>();
  const stack: string[] = [];
  let next = 0;
  let ncomp = 0;
  const strong = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    for (const w of graph.get(v)!) {
      if (!index.has(w)) {
        strong(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (!comp.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      let w: string;
      do {
        w = stack.pop()!;
        comp.set(w, ncomp);
      } while (w !== v);
      ncomp++;
    }
  };
  for (const v of nodes) if (!index.has(v)) strong(v);
  // elementary cycles, each found once from its smallest file: simple paths from s through larger files of s's component
  const order = new Map(nodes.map((f, i) => [f, i]));
  const cycles: string[][] = [];
  for (const s of nodes) {
    const path = [s];
    const onPath = new Set(path);
    const walk = (v: string): void => {
      for (const w of graph.get(v)!) {
        if (cycles.length >= MAX_CYCLES) return;
        if (w === s) cycles.push([...path, s]);
        else if (!onPath.has(w) && comp.get(w) === comp.get(s) && order.get(w)! > order.get(s)!) {
          path.push(w);
          onPath.add(w);
          walk(w);
          path.pop();
          onPath.delete(w);
        }
      }
    };
    walk(s);
  }
  return cycles.sort((a, b) => a.length - b.length || a.join('\0').localeCompare(b.join('\0')));
}

const cycles = importCycles(join(root, 'core'));
for (const c of cycles) problems.push(`import cycle in core/: ${c.map((f) => relative(root, f)).join(' -> ')}`);
if (cycles.length >= MAX_CYCLES) problems.push(`(stopped after ${MAX_CYCLES} import cycles in core/)`);

if (problems.length) {
  console.error(problems.join('\n'));
  process.exit(1);
}
console.log('layers ok: core/ is pure, surfaces are independent, core/ has no import cycle');
