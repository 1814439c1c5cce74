/** Test helper: a real local EVM chain (anvil from the @foundry-rs/anvil npm package) on a free loopback port. */
export { startAnvil, type Anvil, type StartAnvilOptions } from '../../gateway/local-chain/chain.ts';
