/**
 * A real local EVM chain for x402 work offline: anvil (the binary from the `@foundry-rs/anvil` project, installed as its Linux x64 package `@foundry-rs/anvil-linux-amd64`: the registry here carries only that platform)
 * on a free loopback port, with TestUSDC.sol (6 decimals, EIP-3009, EIP-712 domain {"USDC", "2"}) compiled by the
 * `solc` npm package and deployed with viem.
 *
 * The chain id is 84532 and the network name `base-sepolia`: x402 v1 derives the EIP-712 chain id from the network
 * name, so a local chain must impersonate a network x402 knows. The token lives at a fresh address (not base-sepolia's
 * USDC address); PaymentRequirements carry `asset: chain.usdc` and `extra: chain.tokenDomain`.
 *
 * Accounts: anvil's well-known dev accounts (mnemonic "test test ... junk", 10,000 ETH each). Account 0 deploys the
 * token and is its only minter (`fund`, `newPayer`); account 1 is the facilitator key that submits settlements (a
 * separate key, so minting and settling never race for a transaction nonce). Payers need no ETH: the facilitator pays
 * the gas of `transferWithAuthorization`.
 *
 * Compilation takes seconds (solc is WebAssembly), so the artifact is cached on disk, keyed by the sha256 of the
 * source, the solc version and the compiler settings (default directory `os.tmpdir()/x402-local-chain`); solc is
 * only loaded on a cache miss. Compilation and anvil's start run concurrently.
 *
 *   const chain = await startLocalChain();
 *   const payer = await chain.newPayer(1_000_000n);           // 1.00 USDC
 *   ...
 *   await chain.stop();
 *
 * `startAnvil(chainId)` (any chain id, no contracts) is also what test/helpers/anvil.ts re-exports.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  createPublicClient,
  createWalletClient,
  defineChain,
  http,
  type Abi,
  type Address,
  type Hex,
} from 'viem';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';

// ---------------------------------------------------------------------------------------------------------------
// anvil

export interface Anvil {
  rpcUrl: string;
  port: number;
  chainId: number;
  /** A raw JSON-RPC call (anvil_* methods included); throws on a JSON-RPC error. */
  rpc<T = unknown>(method: string, params: unknown[]): Promise<T>;
  stop(): Promise<void>;
}

export interface StartAnvilOptions {
  /** Path of the anvil binary; default node_modules/.bin/anvil of this project. */
  bin?: string;
  /** Extra command-line arguments. */
  args?: string[];
  /** How long to wait for the RPC to answer; default 15 s. */
  startTimeoutMs?: number;
}

const ANVIL_BIN = fileURLToPath(new URL('../../node_modules/.bin/anvil', import.meta.url));

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

/** Starts anvil on 127.0.0.1 (free port, `--silent`) with the given chain id; resolves once its RPC answers. */
export async function startAnvil(chainId: number, opts: StartAnvilOptions = {}): Promise<Anvil> {
  const port = await freePort();
  const args = ['--host', '127.0.0.1', '--port', String(port), '--chain-id', String(chainId), '--silent', ...(opts.args ?? [])];
  const child: ChildProcess = spawn(opts.bin ?? ANVIL_BIN, args, { stdio: 'ignore' });
  let spawnError: Error | undefined;
  child.once('error', (e) => (spawnError = e));
  // never leave an orphan anvil behind if the host process exits without calling stop()
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const rpcUrl = `http://127.0.0.1:${port}`;
  let id = 0;
  const rpc = async <T,>(method: string, params: unknown[]): Promise<T> => {
    const res = await fetch(rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params }),
    });
    const body = (await res.json()) as { result?: T; error?: { message: string } };
    if (body.error) throw new Error(`${method}: ${body.error.message}`);
    return body.result as T;
  };
  const stop = async () => {
    process.removeListener('exit', killOnExit);
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  };
  const deadline = Date.now() + (opts.startTimeoutMs ?? 15_000);
  for (;;) {
    try {
      await rpc('eth_chainId', []);
      break;
    } catch (e) {
      if (spawnError || child.exitCode !== null || Date.now() > deadline) {
        await stop();
        throw new Error(`anvil did not start: ${(spawnError ?? (e as Error)).message}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return { rpcUrl, port, chainId, rpc, stop };
}

// ---------------------------------------------------------------------------------------------------------------
// TestUSDC: compile (cached) and ABI

/** The subset of TestUSDC's ABI this project calls, typed for viem. */
export const testUsdcAbi = [
  { type: 'function', name: 'name', stateMutability: 'view', inputs: [], outputs: [{ type: 'string' }] },
  { type: 'function', name: 'version', stateMutability: 'view', inputs: [], outputs: [{ type: 'string' }] },
  { type: 'function', name: 'decimals', stateMutability: 'view', inputs: [], outputs: [{ type: 'uint8' }] },
  { type: 'function', name: 'DOMAIN_SEPARATOR', stateMutability: 'view', inputs: [], outputs: [{ type: 'bytes32' }] },
  { type: 'function', name: 'totalSupply', stateMutability: 'view', inputs: [], outputs: [{ type: 'uint256' }] },
  { type: 'function', name: 'balanceOf', stateMutability: 'view', inputs: [{ name: 'account', type: 'address' }], outputs: [{ type: 'uint256' }] },
  {
    type: 'function',
    name: 'authorizationState',
    stateMutability: 'view',
    inputs: [
      { name: 'authorizer', type: 'address' },
      { name: 'nonce', type: 'bytes32' },
    ],
    outputs: [{ type: 'bool' }],
  },
  {
    type: 'function',
    name: 'mint',
    stateMutability: 'nonpayable',
    inputs: [
      { name: 'to', type: 'address' },
      { name: 'value', type: 'uint256' },
    ],
    outputs: [],
  },
  {
    type: 'function',
    name: 'transfer',
    stateMutability: 'nonpayable',
    inputs: [
      { name: 'to', type: 'address' },
      { name: 'value', type: 'uint256' },
    ],
    outputs: [{ type: 'bool' }],
  },
  {
    type: 'function',
    name: 'transferWithAuthorization',
    stateMutability: 'nonpayable',
    inputs: [
      { name: 'from', type: 'address' },
      { name: 'to', type: 'address' },
      { name: 'value', type: 'uint256' },
      { name: 'validAfter', type: 'uint256' },
      { name: 'validBefore', type: 'uint256' },
      { name: 'nonce', type: 'bytes32' },
      { name: 'v', type: 'uint8' },
      { name: 'r', type: 'bytes32' },
      { name: 's', type: 'bytes32' },
    ],
    outputs: [],
  },
  {
    type: 'function',
    name: 'transferWithAuthorization',
    stateMutability: 'nonpayable',
    inputs: [
      { name: 'from', type: 'address' },
      { name: 'to', type: 'address' },
      { name: 'value', type: 'uint256' },
      { name: 'validAfter', type: 'uint256' },
      { name: 'validBefore', type: 'uint256' },
      { name: 'nonce', type: 'bytes32' },
      { name: 'signature', type: 'bytes' },
    ],
    outputs: [],
  },
  {
    type: 'event',
    name: 'Transfer',
    inputs: [
      { name: 'from', type: 'address', indexed: true },
      { name: 'to', type: 'address', indexed: true },
      { name: 'value', type: 'uint256', indexed: false },
    ],
  },
  {
    type: 'event',
    name: 'AuthorizationUsed',
    inputs: [
      { name: 'authorizer', type: 'address', indexed: true },
      { name: 'nonce', type: 'bytes32', indexed: true },
    ],
  },
] as const;

export interface TestUsdcArtifact {
  abi: Abi;
  bytecode: Hex;
  solcVersion: string;
  /** Cache key: sha256 of source, solc version and settings. */
  key: string;
  fromCache: boolean;
  compileMs: number;
}

const SOURCE_PATH = fileURLToPath(new URL('./TestUSDC.sol', import.meta.url));
const SOLC_SETTINGS = {
  optimizer: { enabled: true, runs: 200 },
  evmVersion: 'cancun',
  outputSelection: { 'TestUSDC.sol': { TestUSDC: ['abi', 'evm.bytecode.object'] } },
} as const;

export function defaultCacheDir(): string {
  return join(tmpdir(), 'x402-local-chain');
}

/** Compiles TestUSDC.sol with the solc npm package (standard JSON), or reads the cached artifact. */
export async function compileTestUsdc(opts: { cacheDir?: string } = {}): Promise<TestUsdcArtifact> {
  const t0 = performance.now();
  const source = await readFile(SOURCE_PATH, 'utf8');
  const require = createRequire(import.meta.url);
  const solcVersion = (require('solc/package.json') as { version: string }).version;
  const key = createHash('sha256').update(source).update('\0').update(solcVersion).update('\0').update(JSON.stringify(SOLC_SETTINGS)).digest('hex');
  const dir = opts.cacheDir ?? defaultCacheDir();
  const file = join(dir, `TestUSDC-${key.slice(0, 32)}.json`);
  try {
    const cached = JSON.parse(await readFile(file, 'utf8')) as { key: string; abi: Abi; bytecode: Hex; solcVersion: string };
    if (cached.key === key && /^0x[0-9a-f]+$/i.test(cached.bytecode) && Array.isArray(cached.abi)) {
      return { ...cached, fromCache: true, compileMs: performance.now() - t0 };
    }
  } catch {
    // no (readable) cache entry: compile
  }
  const solc = (await import('solc')).default as { compile(input: string): string; version(): string };
  const input = { language: 'Solidity', sources: { 'TestUSDC.sol': { content: source } }, settings: SOLC_SETTINGS };
  const output = JSON.parse(solc.compile(JSON.stringify(input))) as {
    errors?: { severity: string; formattedMessage: string }[];
    contracts?: Record<string, Record<string, { abi: Abi; evm: { bytecode: { object: string } } }>>;
  };
  const errors = (output.errors ?? []).filter((e) => e.severity === 'error');
  if (errors.length) throw new Error(`TestUSDC.sol does not compile:\n${errors.map((e) => e.formattedMessage).join('\n')}`);
  const contract = output.contracts?.['TestUSDC.sol']?.['TestUSDC'];
  if (!contract?.evm.bytecode.object) throw new Error('solc produced no TestUSDC bytecode');
  const artifact = { key, abi: contract.abi, bytecode: `0x${contract.evm.bytecode.object}` as Hex, solcVersion: solc.version() };
  await mkdir(dir, { recursive: true });
  const tmp = `${file}.${process.pid}.${Date.now()}.tmp`;
  await writeFile(tmp, JSON.stringify(artifact));
  await rename(tmp, file); // atomic: concurrent starts never read a half-written artifact
  return { ...artifact, fromCache: false, compileMs: performance.now() - t0 };
}

// ---------------------------------------------------------------------------------------------------------------
// the local chain

/** anvil's default dev accounts 0 and 1 (mnemonic "test test test test test test test test test test test junk"). */
export const ANVIL_DEV_KEYS = [
  '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80',
  '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d',
] as const satisfies readonly Hex[];

export const LOCAL_CHAIN_ID = 84532;
export const LOCAL_NETWORK = 'base-sepolia' as const;

export interface LocalChainOptions {
  /** Where the compiled artifact is cached; default `os.tmpdir()/x402-local-chain`. */
  cacheDir?: string;
  /** viem polling interval for receipts; default 50 ms (anvil mines each transaction at once). */
  pollingIntervalMs?: number;
  anvil?: StartAnvilOptions;
}

export interface LocalChain {
  rpcUrl: string;
  chainId: typeof LOCAL_CHAIN_ID;
  network: typeof LOCAL_NETWORK;
  /** The TestUSDC token (6 decimals). */
  usdc: Address;
  /** The token's EIP-712 domain name and version: PaymentRequirements.extra. */
  tokenDomain: { name: 'USDC'; version: '2' };
  /** Deploys the token and is its only minter. */
  deployerPrivateKey: Hex;
  deployer: Address;
  /** A funded account (10,000 ETH) for a facilitator to submit settlements with. */
  facilitatorPrivateKey: Hex;
  facilitator: Address;
  anvil: Anvil;
  /** How long the start took, for benchmarks and reports. */
  timings: { compileMs: number; compiledFromCache: boolean; anvilMs: number; deployMs: number; totalMs: number };
  /** Mints `atomicAmount` TestUSDC (6 decimals) to `address`; resolves once mined. */
  fund(address: Address, atomicAmount: bigint): Promise<void>;
  balanceOf(address: Address): Promise<bigint>;
  /** A fresh random account holding `atomicAmount` TestUSDC (and no ETH). */
  newPayer(atomicAmount: bigint): Promise<{ privateKey: Hex; account: PrivateKeyAccount }>;
  stop(): Promise<void>;
}

/** Starts anvil (chain id 84532), deploys TestUSDC and returns handles to both. */
export async function startLocalChain(opts: LocalChainOptions = {}): Promise<LocalChain> {
  const t0 = performance.now();
  let anvilMs = 0;
  const [compiled, started] = await Promise.allSettled([
    compileTestUsdc({ ...(opts.cacheDir !== undefined ? { cacheDir: opts.cacheDir } : {}) }),
    startAnvil(LOCAL_CHAIN_ID, opts.anvil).then((a) => {
      anvilMs = performance.now() - t0;
      return a;
    }),
  ]);
  if (started.status === 'rejected') throw started.reason;
  const anvil = started.value;
  try {
    if (compiled.status === 'rejected') throw compiled.reason;
    const artifact = compiled.value;
    const t1 = performance.now();
    const chain = defineChain({
      id: LOCAL_CHAIN_ID,
      name: 'Local base-sepolia (anvil)',
      nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
      rpcUrls: { default: { http: [anvil.rpcUrl] } },
    });
    const transport = http(anvil.rpcUrl);
    const pollingInterval = opts.pollingIntervalMs ?? 50;
    const publicClient = createPublicClient({ chain, transport, pollingInterval });
    const deployerKey = ANVIL_DEV_KEYS[0];
    const facilitatorKey = ANVIL_DEV_KEYS[1];
    const deployerAccount = privateKeyToAccount(deployerKey);
    const wallet = createWalletClient({ chain, transport, account: deployerAccount, pollingInterval });

    const deployHash = await wallet.deployContract({ abi: artifact.abi, bytecode: artifact.bytecode, args: [] });
    const deployReceipt = await publicClient.waitForTransactionReceipt({ hash: deployHash, pollingInterval });
    const usdc = deployReceipt.contractAddress;
    if (deployReceipt.status !== 'success' || !usdc) throw new Error('TestUSDC deployment failed');
    const deployMs = performance.now() - t1;

    // mints go one at a time: concurrent sends from one key would race for the same transaction nonce
    let queue: Promise<unknown> = Promise.resolve();
    const fund = (address: Address, atomicAmount: bigint): Promise<void> => {
      const run = queue.then(async () => {
        const hash = await wallet.writeContract({ address: usdc, abi: testUsdcAbi, functionName: 'mint', args: [address, atomicAmount] });
        const receipt = await publicClient.waitForTransactionReceipt({ hash, pollingInterval });
        if (receipt.status !== 'success') throw new Error(`mint to ${address} reverted`);
      });
      queue = run.catch(() => undefined);
      return run;
    };
    const balanceOf = (address: Address) => publicClient.readContract({ address: usdc, abi: testUsdcAbi, functionName: 'balanceOf', args: [address] });

    return {
      rpcUrl: anvil.rpcUrl,
      chainId: LOCAL_CHAIN_ID,
      network: LOCAL_NETWORK,
      usdc,
      tokenDomain: { name: 'USDC', version: '2' },
      deployerPrivateKey: deployerKey,
      deployer: deployerAccount.address,
      facilitatorPrivateKey: facilitatorKey,
      facilitator: privateKeyToAccount(facilitatorKey).address,
      anvil,
      timings: { compileMs: artifact.compileMs, compiledFromCache: artifact.fromCache, anvilMs, deployMs, totalMs: performance.now() - t0 },
      fund,
      balanceOf,
      async newPayer(atomicAmount: bigint) {
        const privateKey = generatePrivateKey();
        const account = privateKeyToAccount(privateKey);
        if (atomicAmount > 0n) await fund(account.address, atomicAmount);
        return { privateKey, account };
      },
      stop: () => anvil.stop(),
    };
  } catch (e) {
    await anvil.stop();
    throw e;
  }
}
