/**
 * The live fill stream between processes: whoever follows the venue (the builder, or the one process of
 * `npm start`) publishes each fill once; every API replica subscribes and hands it to its WebSocket clients
 * (jobs/stream.ts). In one process the bus is an in-memory hand-off; with REDIS_URL it is a Redis pub/sub channel,
 * so a stream client on replica B receives the fills replica A or the builder saw.
 *
 * Pub/sub is at-most-once, as the stream itself is (a client that is slow or reconnecting misses fills and is told
 * so by the stream's own drop counter); durable delivery is the webhooks' job.
 */
import type { Redis } from 'ioredis';

export interface BusFill {
  data: Record<string, unknown>;
  emittedAt: Date;
}

export type FillHandler = (data: Record<string, unknown>, emittedAt: Date) => void;

export interface FillBus {
  publish(data: Record<string, unknown>, emittedAt: Date): Promise<void>;
  /** handler receives every fill published from now on, in publish order; the returned function unsubscribes */
  subscribe(handler: FillHandler): () => void;
  close(): Promise<void>;
}

export class LocalFillBus implements FillBus {
  private readonly handlers = new Set<FillHandler>();

  async publish(data: Record<string, unknown>, emittedAt: Date): Promise<void> {
    for (const h of this.handlers) h(data, emittedAt);
  }

  subscribe(handler: FillHandler): () => void {
    this.handlers.add(handler);
    return () => this.handlers.delete(handler);
  }

  async close(): Promise<void> {
    this.handlers.clear();
  }
}

export const FILL_CHANNEL_SUFFIX = 'fills';

/**
 * A Redis channel (`<prefix>:fills`). A subscribing connection can do nothing else, so the bus takes two: `pub` (may
 * be shared with other work) and `sub` (its own; the bus subscribes on it at the first subscriber).
 */
export class RedisFillBus implements FillBus {
  private readonly handlers = new Set<FillHandler>();
  private subscribed: Promise<unknown> | null = null;
  readonly channel: string;

  constructor(
    private readonly pub: Redis,
    private readonly sub: Redis,
    prefix: string,
    private readonly onError: (e: Error) => void = () => {},
  ) {
    this.channel = `${prefix}:${FILL_CHANNEL_SUFFIX}`;
    this.sub.on('message', (channel: string, message: string) => {
      if (channel !== this.channel) return;
      let m: { data: Record<string, unknown>; emitted_at: string };
      try {
        m = JSON.parse(message) as typeof m;
      } catch (e) {
        return this.onError(e as Error);
      }
      const at = new Date(m.emitted_at);
      for (const h of this.handlers) h(m.data, at);
    });
  }

  async publish(data: Record<string, unknown>, emittedAt: Date): Promise<void> {
    await this.pub.publish(this.channel, JSON.stringify({ data, emitted_at: emittedAt.toISOString() }));
  }

  subscribe(handler: FillHandler): () => void {
    this.handlers.add(handler);
    this.subscribed ??= this.sub.subscribe(this.channel).catch((e: Error) => {
      this.subscribed = null;
      this.onError(e);
    });
    return () => this.handlers.delete(handler);
  }

  /** resolves once the channel subscription is in place (messages published before it are not seen) */
  async ready(): Promise<void> {
    await this.subscribed;
  }

  async close(): Promise<void> {
    this.handlers.clear();
    if (this.subscribed) await this.sub.unsubscribe(this.channel).catch(() => {});
  }
}
