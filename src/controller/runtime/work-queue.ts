import { setTimeout as sleep } from 'node:timers/promises';

export interface BackoffOptions {
  readonly baseMs: number;
  readonly maxMs: number;
}

const DEFAULT_BACKOFF: BackoffOptions = { baseMs: 500, maxMs: 5 * 60_000 };

/**
 * A rate-limited work queue in the shape controller-runtime uses: a key is processed by one worker at a time;
 * adding a key that is already queued coalesces; adding a key that is being processed marks it dirty so it
 * runs once more afterwards; failures back off exponentially per key until `forget`.
 */
export class WorkQueue {
  private readonly queue: string[] = [];
  /** Each queued key and when it was added (Date.now()), for the time it waits. */
  private readonly queued = new Map<string, number>();
  private readonly processing = new Set<string>();
  private readonly dirty = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly timers = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  private waiters: (() => void)[] = [];
  private shuttingDown = false;

  constructor(
    private readonly backoff: BackoffOptions = DEFAULT_BACKOFF,
    /** Told how long each key waited between being added and a worker taking it. */
    private readonly onWaited?: (ms: number) => void,
  ) {}

  get length(): number {
    return this.queue.length;
  }

  add(key: string): void {
    if (this.shuttingDown) return;
    if (this.processing.has(key)) {
      this.dirty.add(key);
      return;
    }
    if (this.queued.has(key)) return;
    this.queued.set(key, Date.now());
    this.queue.push(key);
    this.wake();
  }

  /** Adds the key after a delay; an earlier pending delay for the same key wins. */
  addAfter(key: string, delayMs: number): void {
    if (this.shuttingDown) return;
    if (delayMs <= 0) {
      this.add(key);
      return;
    }
    const at = Date.now() + delayMs;
    const pending = this.timers.get(key);
    if (pending && pending.at <= at) return;
    if (pending) clearTimeout(pending.timer);
    const timer = setTimeout(() => {
      this.timers.delete(key);
      this.add(key);
    }, delayMs);
    this.timers.set(key, { at, timer });
  }

  /** Records a failure and re-adds the key after its backoff; returns the delay chosen. */
  addRateLimited(key: string): number {
    const n = (this.failures.get(key) ?? 0) + 1;
    this.failures.set(key, n);
    const delay = Math.min(this.backoff.maxMs, this.backoff.baseMs * 2 ** (n - 1));
    this.addAfter(key, delay);
    return delay;
  }

  forget(key: string): void {
    this.failures.delete(key);
  }

  failureCount(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  /** Waits for the next key; undefined once shut down. */
  async get(): Promise<string | undefined> {
    for (;;) {
      if (this.shuttingDown) return undefined;
      const key = this.queue.shift();
      if (key !== undefined) {
        const since = this.queued.get(key);
        this.queued.delete(key);
        if (since !== undefined) this.onWaited?.(Date.now() - since);
        this.processing.add(key);
        return key;
      }
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  done(key: string): void {
    this.processing.delete(key);
    if (this.dirty.delete(key)) this.add(key);
  }

  shutdown(): void {
    this.shuttingDown = true;
    for (const { timer } of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    this.wake();
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }
}

export interface WorkerOptions {
  readonly concurrency: number;
  /** Called with each key; a throw means "retry with backoff". */
  readonly handle: (key: string, signal: AbortSignal) => Promise<{ requeueAfterMs?: number }>;
  readonly onError?: (key: string, error: unknown, retryInMs: number) => void;
}

/** Runs workers until the signal aborts; resolves once every in-flight key is done. */
export async function runWorkers(
  queue: WorkQueue,
  signal: AbortSignal,
  options: WorkerOptions,
): Promise<void> {
  signal.addEventListener('abort', () => queue.shutdown(), { once: true });
  const worker = async (): Promise<void> => {
    for (;;) {
      const key = await queue.get();
      if (key === undefined) return;
      try {
        const result = await options.handle(key, signal);
        queue.forget(key);
        if (result.requeueAfterMs !== undefined) queue.addAfter(key, result.requeueAfterMs);
      } catch (error) {
        const delay = queue.addRateLimited(key);
        options.onError?.(key, error, delay);
      } finally {
        queue.done(key);
      }
      // Yield so a tight loop of instant reconciles cannot starve timers and I/O.
      await sleep(0);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, options.concurrency) }, () => worker()));
}
