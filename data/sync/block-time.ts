/** The first block at or after a time: a binary search over eth_getBlockByNumber (about 27 calls on Polygon). */
import type { JsonRpc } from './http.ts';

export async function blockAtTime(rpc: JsonRpc, at: Date): Promise<bigint> {
  const target = BigInt(Math.floor(at.getTime() / 1000));
  const time = async (n: bigint) => {
    const b = await rpc.call<{ timestamp: string } | null>('eth_getBlockByNumber', [`0x${n.toString(16)}`, false]);
    return b ? BigInt(b.timestamp) : null;
  };
  let hi = BigInt(await rpc.call<string>('eth_blockNumber', []));
  let lo = 0n;
  // the lowest block the node serves (a pruned node, a replay) bounds the search from below
  while (lo < hi && (await time(lo)) === null) lo = lo === 0n ? 1n : lo * 2n > hi ? hi : lo * 2n;
  if ((await time(hi))! < target) return hi + 1n;
  while (lo < hi) {
    const mid = (lo + hi) / 2n;
    const t = await time(mid);
    if (t === null || t < target) lo = mid + 1n;
    else hi = mid;
  }
  return lo;
}
