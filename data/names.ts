/** Display names the venue derives from an address: a stable two-word pseudonym (e.g. "Brisk-Heron"). */
import { createHash } from 'node:crypto';

const ADJECTIVES = [
  'Amber', 'Bold', 'Brisk', 'Calm', 'Clever', 'Cosmic', 'Crimson', 'Dapper', 'Eager', 'Fabled', 'Fancy', 'Fleet',
  'Gentle', 'Giddy', 'Golden', 'Grand', 'Hasty', 'Hidden', 'Humble', 'Icy', 'Jolly', 'Keen', 'Lucky', 'Lunar',
  'Merry', 'Mighty', 'Misty', 'Nimble', 'Noble', 'Odd', 'Pale', 'Plucky', 'Proud', 'Quiet', 'Rapid', 'Rusty',
  'Shrewd', 'Silent', 'Silver', 'Sly', 'Snowy', 'Solar', 'Steady', 'Stormy', 'Swift', 'Tidy', 'Vivid', 'Wily',
  'Witty', 'Zesty',
];
const NOUNS = [
  'Badger', 'Bison', 'Bobcat', 'Condor', 'Coyote', 'Crane', 'Dingo', 'Eagle', 'Egret', 'Falcon', 'Ferret', 'Finch',
  'Gecko', 'Gopher', 'Heron', 'Hornet', 'Ibis', 'Jackal', 'Jaguar', 'Kestrel', 'Koala', 'Lemming', 'Lemur', 'Lynx',
  'Magpie', 'Marmot', 'Marten', 'Mole', 'Moose', 'Narwhal', 'Ocelot', 'Osprey', 'Otter', 'Panda', 'Parrot', 'Pelican',
  'Puffin', 'Quail', 'Raven', 'Salmon', 'Shrike', 'Sloth', 'Stoat', 'Swift', 'Tapir', 'Toucan', 'Walrus', 'Weasel',
  'Wombat', 'Yak',
];

export function pseudonymFor(address: string): string {
  const h = createHash('sha256').update(address.toLowerCase()).digest();
  return `${ADJECTIVES[h[0]! % ADJECTIVES.length]}-${NOUNS[h[1]! % NOUNS.length]}`;
}

/** Deterministic 0x + 40 hex address for a synthetic wallet. */
export function syntheticAddress(seed: number, walletId: number): string {
  return '0x' + createHash('sha256').update(`wallet:${seed}:${walletId}`).digest('hex').slice(0, 40);
}
