/**
 * Webhook subscription filters (the spec's "Subscription filters (filter_json)") and the index that matches one event
 * against every active subscription without scanning them all.
 *
 * Semantics (the reference is matchesFilter(); SubscriptionIndex.match() must agree with it, a property test checks):
 * - A subscription receives an event when it is active, the event's type is in its event_types, and its filter
 *   matches the event's data. Inactive subscriptions never match. An event type outside EVENT_TYPES matches nothing.
 * - Filter keys are all optional and AND-combined; an empty filter (no known key) matches every event of the
 *   subscribed types. Unknown keys are accepted, kept in the stored object, and ignored by matching. A key whose
 *   value is null is treated as absent (so a client can clear a key with null on PUT).
 *   - condition_id: string or array of string; data.condition_id equals one of them, case-insensitively.
 *   - trader_proxy: string or array of string; data.trader_proxy equals one of them, case-insensitively. Decision:
 *     addresses are compared case-insensitively (EVM addresses are case-insensitive; EIP-55 is presentation only and
 *     agent routes already accept lowercase). The checksum of a mixed-case address is not verified.
 *   - signal_types: array of string; data.signal_type is one of them (exact match).
 *   - tags_any: array of string; data.smart_money_tags shares at least one entry with the list (exact match).
 *   - min_size_usdc: number; data.size_usdc >= min_size_usdc ("at least": equality matches).
 * - A data field that is missing from the event, or has the wrong type (condition_id not a string, size_usdc not a
 *   number, smart_money_tags not an array, ...), does not match a filter that names that key. Consequences worth
 *   knowing: a trader.fill whose token has no known condition never matches a condition_id filter; market.resolved
 *   carries no trader_proxy / size_usdc / signal_type / smart_money_tags, so a filter naming any of those never
 *   receives market.resolved; trader.fill carries no signal_type / smart_money_tags (deadEventTypes() lists the
 *   subscribed types a filter can never match, for a warning at create/update).
 * - Validation (FilterJson, at create/update): condition ids are 0x + 64 hex, proxies 0x + 40 hex, hex digits in any
 *   case (the 0x prefix lowercase);
 *   signal_types values are SIGNAL_TYPES and tags_any values SMART_MONEY_TAGS (a typo is a 400, not a silent
 *   never-match); arrays hold 1..1000 entries (an empty list is rejected: "in the empty list" would never match, and
 *   "no restriction" is spelled by omitting the key); strings are at most 200 characters; min_size_usdc is a finite
 *   number >= 0. Matching never assumes the filter was validated: a known key with a value of the wrong type
 *   (e.g. a legacy stored row) makes the filter match nothing (fail closed), in the reference and in the index alike.
 * - service.test is matched like any other type here, but POST /v1/webhooks/{id}/test should deliver to the one
 *   subscription directly rather than through the index.
 *
 * SubscriptionIndex: per event type, each active subscription sits in exactly one bucket, chosen by its most
 * selective key: condition_id → subs or trader_proxy → subs (inverted maps, lowercase keys; when both keys are set
 * the one with fewer values wins, ties go to trader_proxy), else signal_type → subs or tag → subs, else a list sorted
 * by min_size_usdc (a pure min-size filter matches exactly the prefix with threshold <= size, found by binary search),
 * else the match-all list (empty filter). An event looks up its own condition_id, trader_proxy, signal_type and tags,
 * checks the candidates found there against the rest of their filter (the bucket's own key matched by the lookup),
 * and takes the min-size prefix and the match-all list as they are, so the
 * work is proportional to the candidates, not to the number of subscriptions. Results are ids sorted by UTF-16 code
 * units (Array.prototype.sort()), so the order is deterministic and equal to the reference's. Sorting is the largest
 * cost of a big result, so each subscription carries its rank in the sorted id list and a result is sorted as
 * integers; new ids are ranked lazily, by one merge into the list, on the first match that returns one of them
 * (after a bulk load of n subscriptions that first match sorts n ids once).
 */
import { z } from 'zod';
import { SIGNAL_TYPES } from './signals.ts';
import { SMART_MONEY_TAGS } from './tags.ts';

// ---------------------------------------------------------------------------------------------------------------
// Event types and the filter schema
// ---------------------------------------------------------------------------------------------------------------

export const EVENT_TYPES = ['service.test', 'market.resolved', 'signal.smart_money', 'trader.fill'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** Caps of filter_json values. */
export const FILTER_LIMITS = { maxArray: 1000, maxString: 200 } as const;

const CONDITION_ID_RE = /^0x[0-9a-fA-F]{64}$/;
const ADDRESS_RE = /^0x[0-9a-fA-F]{40}$/;

const ConditionId = z.string().max(FILTER_LIMITS.maxString).regex(CONDITION_ID_RE, 'expected a condition id: 0x followed by 64 hex digits');
const Address = z.string().max(FILTER_LIMITS.maxString).regex(ADDRESS_RE, 'expected an address: 0x followed by 40 hex digits');
const list = <T extends z.ZodType>(item: T) => z.array(item).min(1).max(FILTER_LIMITS.maxArray);

/** filter_json as accepted at subscription create / update. Unknown keys pass through untouched (and are ignored). */
export const FilterJson = z.looseObject({
  condition_id: z.union([ConditionId, list(ConditionId)]).nullish(),
  trader_proxy: z.union([Address, list(Address)]).nullish(),
  signal_types: list(z.enum(SIGNAL_TYPES)).nullish(),
  tags_any: list(z.enum(SMART_MONEY_TAGS)).nullish(),
  min_size_usdc: z.number().nonnegative().nullish(),
});
export type FilterJson = z.infer<typeof FilterJson>;

/** event_types as accepted at subscription create / update: known types, at least one, no duplicates. */
export const EventTypes = z
  .array(z.enum(EVENT_TYPES))
  .min(1)
  .max(EVENT_TYPES.length)
  .refine((a) => new Set(a).size === a.length, 'duplicate event type');

/** The data fields each event type carries that a filter key reads (spec "Event types"). */
export const FILTER_FIELDS_BY_EVENT_TYPE: Readonly<Record<EventType, readonly string[]>> = {
  'service.test': [],
  'market.resolved': ['condition_id'],
  'signal.smart_money': ['condition_id', 'trader_proxy', 'signal_types', 'tags_any', 'min_size_usdc'],
  'trader.fill': ['condition_id', 'trader_proxy', 'min_size_usdc'],
};

/**
 * The subscribed event types this filter can never match, because the filter names a key whose data field that
 * event type does not carry (service.test is synthetic and never reported). For a warning at create / update.
 */
export function deadEventTypes(filter: FilterJson, eventTypes: readonly string[]): EventType[] {
  const keys = (['condition_id', 'trader_proxy', 'signal_types', 'tags_any', 'min_size_usdc'] as const).filter((k) => filter[k] != null);
  return EVENT_TYPES.filter((t) => t !== 'service.test' && eventTypes.includes(t) && keys.some((k) => !FILTER_FIELDS_BY_EVENT_TYPE[t].includes(k)));
}

function isEventType(t: string): t is EventType {
  return (EVENT_TYPES as readonly string[]).includes(t);
}

// ---------------------------------------------------------------------------------------------------------------
// Reference matcher (brute force; the test oracle)
// ---------------------------------------------------------------------------------------------------------------

/** The list of strings a string-or-array key names, or null when the value has the wrong type (fail closed). */
function stringsOf(v: unknown, allowSingle: boolean): string[] | null {
  if (typeof v === 'string') return allowSingle ? [v] : null;
  if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return v as string[];
  return null;
}

/** Does `filter` accept an event of `eventType` carrying `data`? (Subscription gating — active, event_types — is the caller's.) */
export function matchesFilter(filter: FilterJson, eventType: string, data: Readonly<Record<string, unknown>>): boolean {
  if (!isEventType(eventType)) return false;
  const f = filter as Record<string, unknown>;
  if (f.condition_id != null) {
    const want = stringsOf(f.condition_id, true);
    const got = data.condition_id;
    if (want === null || typeof got !== 'string') return false;
    if (!want.some((w) => w.toLowerCase() === got.toLowerCase())) return false;
  }
  if (f.trader_proxy != null) {
    const want = stringsOf(f.trader_proxy, true);
    const got = data.trader_proxy;
    if (want === null || typeof got !== 'string') return false;
    if (!want.some((w) => w.toLowerCase() === got.toLowerCase())) return false;
  }
  if (f.signal_types != null) {
    const want = stringsOf(f.signal_types, false);
    const got = data.signal_type;
    if (want === null || typeof got !== 'string') return false;
    if (!want.includes(got)) return false;
  }
  if (f.tags_any != null) {
    const want = stringsOf(f.tags_any, false);
    const got = data.smart_money_tags;
    if (want === null || !Array.isArray(got)) return false;
    if (!got.some((t) => typeof t === 'string' && want.includes(t))) return false;
  }
  if (f.min_size_usdc != null) {
    const min = f.min_size_usdc;
    const got = data.size_usdc;
    if (typeof min !== 'number' || typeof got !== 'number') return false;
    if (!(got >= min)) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------------------------
// Index
// ---------------------------------------------------------------------------------------------------------------

export interface IndexedSubscription {
  id: string;
  event_types: readonly string[];
  filter: FilterJson;
  active: boolean;
}

type Bucket = 'condition' | 'trader' | 'signal' | 'tag' | 'minSize' | 'all' | 'never';

/** A subscription's filter, compiled: lowercase sets, and the bucket it lives in. */
interface Entry {
  readonly id: string;
  readonly active: boolean;
  readonly types: readonly EventType[];
  /** the filter's values per key (lowercase for condition / trader); null when absent or when it is the bucket's key */
  readonly conditions: ReadonlySet<string> | null;
  readonly traders: ReadonlySet<string> | null;
  readonly signals: ReadonlySet<string> | null;
  readonly tags: ReadonlySet<string> | null;
  readonly minSize: number | null;
  readonly bucket: Bucket;
  /** the bucket's keys (lowercase for condition / trader), empty for minSize / all / never */
  readonly keys: readonly string[];
  /** last match() call that saw this entry (dedup across tags) */
  seen: number;
  /** position of the id in the index's sorted id list, -1 until ranked (see SubscriptionIndex.rerank) */
  ord: number;
}

/** Per event type: the buckets. */
class TypeIndex {
  readonly condition = new Map<string, Entry[]>();
  readonly trader = new Map<string, Entry[]>();
  readonly signal = new Map<string, Entry[]>();
  readonly tag = new Map<string, Entry[]>();
  /** pure min-size filters, ascending by minSize (ties in insertion order) */
  readonly minSize: Entry[] = [];
  readonly all: Entry[] = [];

  add(e: Entry): void {
    switch (e.bucket) {
      case 'condition':
      case 'trader':
      case 'signal':
      case 'tag': {
        const m = this[e.bucket];
        for (const k of e.keys) {
          const l = m.get(k);
          if (l) l.push(e);
          else m.set(k, [e]);
        }
        return;
      }
      case 'minSize':
        this.minSize.splice(upperBound(this.minSize, e.minSize!), 0, e);
        return;
      case 'all':
        this.all.push(e);
        return;
      case 'never':
        return;
    }
  }

  remove(e: Entry): void {
    switch (e.bucket) {
      case 'condition':
      case 'trader':
      case 'signal':
      case 'tag': {
        const m = this[e.bucket];
        for (const k of e.keys) {
          const l = m.get(k);
          if (!l) continue;
          const i = l.indexOf(e);
          if (i < 0) continue;
          l[i] = l[l.length - 1]!;
          l.pop();
          if (l.length === 0) m.delete(k);
        }
        return;
      }
      case 'minSize': {
        // entries with an equal threshold sit together just below upperBound
        for (let i = upperBound(this.minSize, e.minSize!) - 1; i >= 0 && this.minSize[i]!.minSize === e.minSize; i--) {
          if (this.minSize[i] === e) {
            this.minSize.splice(i, 1);
            return;
          }
        }
        return;
      }
      case 'all': {
        const i = this.all.indexOf(e);
        if (i >= 0) {
          this.all[i] = this.all[this.all.length - 1]!;
          this.all.pop();
        }
        return;
      }
      case 'never':
        return;
    }
  }
}

/** First index whose entry's minSize is > x (entries are ascending by minSize). */
function upperBound(a: readonly Entry[], x: number): number {
  let lo = 0;
  let hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (a[mid]!.minSize! <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function lowerSet(v: string[]): Set<string> {
  return new Set(v.map((s) => s.toLowerCase()));
}

function compile(sub: IndexedSubscription): Entry {
  const f = sub.filter as Record<string, unknown>;
  const types = EVENT_TYPES.filter((t) => sub.event_types.includes(t));
  let broken = false;
  const strings = (k: string, allowSingle: boolean): string[] | null => {
    if (f[k] == null) return null;
    const v = stringsOf(f[k], allowSingle);
    if (v === null) broken = true;
    return v;
  };
  const cond = strings('condition_id', true);
  const trad = strings('trader_proxy', true);
  const sig = strings('signal_types', false);
  const tag = strings('tags_any', false);
  let minSize: number | null = null;
  if (f.min_size_usdc != null) {
    if (typeof f.min_size_usdc !== 'number' || Number.isNaN(f.min_size_usdc)) broken = true;
    else minSize = f.min_size_usdc;
  }
  const conditions = cond && lowerSet(cond);
  const traders = trad && lowerSet(trad);
  const signals = sig && new Set(sig);
  const tags = tag && new Set(tag);

  let bucket: Bucket;
  let keys: string[] = [];
  if (broken || !sub.active || types.length === 0) bucket = 'never';
  else if (conditions && (!traders || conditions.size < traders.size)) [bucket, keys] = ['condition', [...conditions]];
  else if (traders) [bucket, keys] = ['trader', [...traders]];
  // a value of a 4-tag space is more selective than one of a 2-signal-type space
  else if (signals && (!tags || signals.size / 2 < tags.size / 4)) [bucket, keys] = ['signal', [...signals]];
  else if (tags) [bucket, keys] = ['tag', [...tags]];
  else if (minSize !== null) bucket = 'minSize';
  else bucket = 'all';
  // an empty key list (e.g. condition_id: [] from an unvalidated filter) leaves the entry in no map: it never matches.
  // The bucket's own key needs no check (the entry was found by the event's value of it), so its set is dropped.
  return {
    id: sub.id,
    active: sub.active,
    types: sharedTypes(types),
    conditions: bucket === 'condition' ? null : conditions,
    traders: bucket === 'trader' ? null : traders,
    signals: bucket === 'signal' ? null : signals,
    tags: bucket === 'tag' ? null : tags,
    minSize,
    bucket,
    keys,
    seen: 0,
    ord: -1,
  };
}

/** One array per distinct event_types set (there are at most 16). */
const typeSets = new Map<string, readonly EventType[]>();
function sharedTypes(types: EventType[]): readonly EventType[] {
  const k = types.join(',');
  let t = typeSets.get(k);
  if (!t) typeSets.set(k, (t = Object.freeze(types)));
  return t;
}

/** The compiled filter, checked in full against one event's data (candidates from the keyed buckets). */
function entryMatches(e: Entry, cid: string | null, tp: string | null, sig: string | null, tags: unknown[] | null, size: number | null): boolean {
  if (e.conditions && (cid === null || !e.conditions.has(cid))) return false;
  if (e.traders && (tp === null || !e.traders.has(tp))) return false;
  if (e.signals && (sig === null || !e.signals.has(sig))) return false;
  if (e.tags) {
    if (tags === null) return false;
    let any = false;
    for (const t of tags) {
      if (typeof t === 'string' && e.tags.has(t)) {
        any = true;
        break;
      }
    }
    if (!any) return false;
  }
  if (e.minSize !== null && (size === null || !(size >= e.minSize))) return false;
  return true;
}

/**
 * Active subscriptions indexed by event type and by their most selective filter key (see the header). add() and
 * update() both upsert by id; remove() of an unknown id is a no-op. Inactive subscriptions are held (they count in
 * `size`) but sit in no bucket.
 */
export class SubscriptionIndex {
  private readonly byId = new Map<string, Entry>();
  private readonly byType = new Map<EventType, TypeIndex>(EVENT_TYPES.map((t) => [t, new TypeIndex()]));
  private stamp = 0;
  private active = 0;
  /** ids in sorted order (with tombstones of removed ids, dropped at the next rerank); entry.ord indexes it */
  private sortedIds: string[] = [];
  /** candidates the last match() examined (keyed-bucket candidates plus the min-size prefix and match-all list) */
  lastCandidates = 0;

  /** subscriptions held, active or not */
  get size(): number {
    return this.byId.size;
  }

  /** active subscriptions held */
  get activeSize(): number {
    return this.active;
  }

  add(sub: IndexedSubscription): void {
    const ord = this.byId.get(sub.id)?.ord ?? -1;
    this.remove(sub.id);
    const e = compile(sub);
    e.ord = ord;
    this.byId.set(sub.id, e);
    if (e.active) this.active++;
    for (const t of e.types) this.byType.get(t)!.add(e);
  }

  update(sub: IndexedSubscription): void {
    this.add(sub);
  }

  remove(id: string): boolean {
    const e = this.byId.get(id);
    if (!e) return false;
    for (const t of e.types) this.byType.get(t)!.remove(e);
    this.byId.delete(id);
    if (e.active) this.active--;
    return true;
  }

  has(id: string): boolean {
    return this.byId.has(id);
  }

  /** Remove every subscription whose id is not in `live` (a reload from the store); returns the ids removed. */
  retainOnly(live: ReadonlySet<string>): string[] {
    const gone = [...this.byId.keys()].filter((id) => !live.has(id));
    for (const id of gone) this.remove(id);
    return gone;
  }

  /** Ids of the active subscriptions to `eventType` whose filter matches `data`, sorted. */
  match(eventType: string, data: Readonly<Record<string, unknown>>): string[] {
    this.lastCandidates = 0;
    if (!isEventType(eventType)) return [];
    const ti = this.byType.get(eventType)!;
    const stamp = ++this.stamp;
    const cid = typeof data.condition_id === 'string' ? data.condition_id.toLowerCase() : null;
    const tp = typeof data.trader_proxy === 'string' ? data.trader_proxy.toLowerCase() : null;
    const sig = typeof data.signal_type === 'string' ? data.signal_type : null;
    const tags = Array.isArray(data.smart_money_tags) ? (data.smart_money_tags as unknown[]) : null;
    const size = typeof data.size_usdc === 'number' ? data.size_usdc : null;
    const hits: Entry[] = [];
    let touched = 0;
    const scan = (l: Entry[] | undefined) => {
      if (!l) return;
      touched += l.length;
      for (const e of l) {
        if (e.seen === stamp) continue;
        e.seen = stamp;
        if (entryMatches(e, cid, tp, sig, tags, size)) hits.push(e);
      }
    };
    if (cid !== null) scan(ti.condition.get(cid));
    if (tp !== null) scan(ti.trader.get(tp));
    if (sig !== null) scan(ti.signal.get(sig));
    if (tags !== null) for (const t of tags) if (typeof t === 'string') scan(ti.tag.get(t));
    if (size !== null) {
      const n = upperBound(ti.minSize, size);
      touched += n;
      for (let i = 0; i < n; i++) hits.push(ti.minSize[i]!);
    }
    touched += ti.all.length;
    for (const e of ti.all) hits.push(e);
    this.lastCandidates = touched;
    // sort by rank: integers sort several times faster than strings
    if (hits.some((e) => e.ord < 0)) this.rerank();
    const ords = new Uint32Array(hits.length);
    for (let i = 0; i < hits.length; i++) ords[i] = hits[i]!.ord;
    ords.sort();
    const out = new Array<string>(ords.length);
    for (let i = 0; i < ords.length; i++) out[i] = this.sortedIds[ords[i]!]!;
    return out;
  }

  /** Merge the unranked ids into the sorted id list (dropping removed ones) and renumber every entry. */
  private rerank(): void {
    const fresh: string[] = [];
    for (const e of this.byId.values()) if (e.ord < 0) fresh.push(e.id);
    fresh.sort();
    const old = this.sortedIds;
    const merged: string[] = [];
    let i = 0;
    let j = 0;
    while (i < old.length || j < fresh.length) {
      if (i < old.length) {
        // a tombstone: removed, or removed and added again (then it is among the fresh ids)
        if (this.byId.get(old[i]!)?.ord !== i) {
          i++;
          continue;
        }
        if (j >= fresh.length || old[i]! < fresh[j]!) {
          merged.push(old[i++]!);
          continue;
        }
      }
      merged.push(fresh[j++]!);
    }
    for (let k = 0; k < merged.length; k++) this.byId.get(merged[k]!)!.ord = k;
    this.sortedIds = merged;
  }
}
