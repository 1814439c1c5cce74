/**
 * Processes of the service in a role (`main.ts --role …`) on loopback, for the replicas test and bench: each on a
 * free port with the environment given, resolved once its log shows it is ready.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';

export interface RoleProcess {
  base: string;
  port: number;
  child: ChildProcess;
  log: () => string;
}

export const freePort = () =>
  new Promise<number>((ok) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => ok(p));
    });
  });

/** The log line each role prints once it serves. */
export const READY: Record<string, RegExp> = { builder: /Role builder: health at/, api: /API: http/, all: /API: http/, worker: /Role worker: delivering/ };

export async function startRole(role: string, env: Record<string, string>, opts: { port?: number; children?: ChildProcess[] } = {}): Promise<RoleProcess> {
  const port = opts.port ?? (await freePort());
  const child = spawn(process.execPath, ['--import', 'tsx', 'main.ts', '--role', role], {
    env: { ...process.env, HOST: '127.0.0.1', ...env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  opts.children?.push(child);
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  await new Promise<void>((ok, fail) => {
    const t = setInterval(() => {
      if (READY[role]!.test(out)) {
        clearInterval(t);
        ok();
      }
    }, 100);
    child.once('exit', (code) => {
      clearInterval(t);
      fail(new Error(`${role} exited (${code}):\n${out.slice(-4000)}`));
    });
  });
  return { base: `http://127.0.0.1:${port}`, port, child, log: () => out };
}
