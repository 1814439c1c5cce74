/** Test helper: a real local EVM chain (anvil from the @foundry-rs/anvil npm package) on a free loopback port. */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';

export interface Anvil {
  rpcUrl: string;
  rpc<T = unknown>(method: string, params: unknown[]): Promise<T>;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

export async function startAnvil(chainId: number): Promise<Anvil> {
  const port = await freePort();
  const bin = join(process.cwd(), 'node_modules', '.bin', 'anvil');
  const child: ChildProcess = spawn(bin, ['--host', '127.0.0.1', '--port', String(port), '--chain-id', String(chainId), '--silent'], { stdio: 'ignore' });
  const rpcUrl = `http://127.0.0.1:${port}`;
  const rpc = async <T,>(method: string, params: unknown[]): Promise<T> => {
    const res = await fetch(rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
    const body = (await res.json()) as { result?: T; error?: { message: string } };
    if (body.error) throw new Error(`${method}: ${body.error.message}`);
    return body.result as T;
  };
  for (let i = 0; ; i++) {
    try {
      await rpc('eth_chainId', []);
      break;
    } catch (e) {
      if (i > 100 || child.exitCode !== null) throw new Error(`anvil did not start: ${(e as Error).message}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    rpcUrl,
    rpc,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
