/**
 * Records Events the way client-go's recorder does: the same type, reason and message on the same object
 * within a window is one Event whose count and lastTimestamp rise, not a new object on every retry.
 *
 * A bounded in-memory index remembers the Events written recently. When it has forgotten one (a restart,
 * an eviction), the Event's name still finds it: the name is derived from the object's UID, type, reason
 * and message, so a cold recorder reads the existing Event and carries its count on.
 */
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { PatchStrategy, setHeaderOptions, type CoreV1Api, type CoreV1Event } from '@kubernetes/client-node';
import type { Logger } from 'pino';

/** client-go aggregates and counts repeats within ten minutes. */
/** Writes of one Event tried while the API server answers 429 or 5xx, and the first delay between them. */
const WRITE_ATTEMPTS = 4;
const RETRY_DELAY_MS = 500;

export const EVENT_SERIES_WINDOW_MS = 10 * 60_000;
/** Bounded like client-go's LRU (4096 entries): a long-running manager does not grow without end. */
export const EVENT_INDEX_ENTRIES = 4096;
/** The API server accepts longer messages, but kubectl shows a line; client-go trims to 1 KiB as well. */
const MESSAGE_LIMIT = 1024;

export interface InvolvedObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  readonly namespace: string;
  readonly uid: string;
}

export interface EventOccurrence {
  /** Normal: expected progress. Warning: something the user may need to act on (Kubernetes conventions). */
  readonly type: 'Normal' | 'Warning';
  /** UpperCamelCase, constant for a kind of occurrence. */
  readonly reason: string;
  /** Constant text plus object names; never a value from a database or a credential. */
  readonly message: string;
}

export interface EventRecorderOptions {
  readonly core: CoreV1Api;
  readonly log: Logger;
  /** `source.component`, what kubectl describe shows in its From column. */
  readonly component: string;
  /** `reportingComponent`: the controller, in the `domain/name` form the events API asks for. */
  readonly controller: string;
  readonly instance: string;
  readonly clock?: () => Date;
  readonly windowMs?: number;
  readonly maxEntries?: number;
}

interface SeriesEntry {
  readonly name: string;
  readonly namespace: string;
  count: number;
  last: number;
}

/** The manager's recorder: every reconciler, of either family, writes its Events under one source. */
export function managerEventRecorder(options: {
  readonly core: CoreV1Api;
  readonly log: Logger;
  readonly clock: () => Date;
}): EventRecorder {
  return new EventRecorder({
    ...options,
    component: 'ptah-operator',
    controller: 'operator.ptah.run/manager',
    instance: 'manager',
  });
}

export class EventRecorder {
  private readonly index = new Map<string, SeriesEntry>();
  private readonly clock: () => Date;
  private readonly windowMs: number;
  private readonly maxEntries: number;

  constructor(private readonly options: EventRecorderOptions) {
    this.clock = options.clock ?? (() => new Date());
    this.windowMs = options.windowMs ?? EVENT_SERIES_WINDOW_MS;
    this.maxEntries = options.maxEntries ?? EVENT_INDEX_ENTRIES;
  }

  /** How many series the index remembers now (for tests and metrics). */
  get size(): number {
    return this.index.size;
  }

  /**
   * Never throws: an Event is a hint to people, and losing one must not fail a reconcile. A busy API server
   * (429, 5xx) is tried again a few times, as client-go's recorder does, before the Event is given up.
   */
  async record(involved: InvolvedObject, occurrence: EventOccurrence): Promise<void> {
    const bounded = { ...occurrence, message: occurrence.message.slice(0, MESSAGE_LIMIT) };
    for (let attempt = 1; ; attempt++) {
      try {
        await this.write(involved, bounded);
        return;
      } catch (error) {
        const code = (error as { code?: number }).code ?? 0;
        if (attempt < WRITE_ATTEMPTS && (code === 429 || code >= 500)) {
          await sleep(RETRY_DELAY_MS * attempt);
          continue;
        }
        this.logLost(involved, occurrence, error);
        return;
      }
    }
  }

  private logLost(involved: InvolvedObject, occurrence: EventOccurrence, error: unknown): void {
    this.options.log.warn(
      {
        object: `${involved.namespace}/${involved.name}`,
        reason: occurrence.reason,
        code: (error as { code?: number }).code,
      },
      'event not recorded',
    );
  }

  private async write(involved: InvolvedObject, occurrence: EventOccurrence): Promise<void> {
    const key = seriesKey(involved, occurrence);
    const now = this.clock();
    const cached = this.index.get(key);
    if (cached !== undefined && now.getTime() - cached.last < this.windowMs) {
      const count = cached.count + 1;
      if (await this.bump(cached.namespace, cached.name, count, now)) {
        this.remember(key, { ...cached, count, last: now.getTime() });
        return;
      }
    }
    const name = eventName(involved.name, key);
    const existing = await this.read(involved.namespace, name);
    if (existing !== undefined) {
      const last = timeOf(existing.lastTimestamp ?? existing.eventTime);
      if (last !== undefined && now.getTime() - last < this.windowMs) {
        const count = (existing.count ?? 1) + 1;
        if (await this.bump(involved.namespace, name, count, now)) {
          this.remember(key, { name, namespace: involved.namespace, count, last: now.getTime() });
          return;
        }
      } else if (await this.bump(involved.namespace, name, 1, now, now)) {
        // The series ended (quiet longer than the window): the same name starts a new one at count 1.
        this.remember(key, { name, namespace: involved.namespace, count: 1, last: now.getTime() });
        return;
      }
    }
    await this.create(involved, occurrence, name, now);
    this.remember(key, { name, namespace: involved.namespace, count: 1, last: now.getTime() });
  }

  /** False when the Event is gone (the API server's TTL removed it): the caller starts a new series. */
  private async bump(
    namespace: string,
    name: string,
    count: number,
    now: Date,
    first?: Date,
  ): Promise<boolean> {
    const body = { count, lastTimestamp: now.toISOString() };
    try {
      await this.options.core.patchNamespacedEvent(
        {
          name,
          namespace,
          body: first === undefined ? body : { ...body, firstTimestamp: first.toISOString() },
        },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
      return true;
    } catch (error) {
      if (codeOf(error) === 404) return false;
      throw error;
    }
  }

  private async read(namespace: string, name: string): Promise<CoreV1Event | undefined> {
    try {
      return await this.options.core.readNamespacedEvent({ name, namespace });
    } catch (error) {
      if (codeOf(error) === 404) return undefined;
      throw error;
    }
  }

  private async create(
    involved: InvolvedObject,
    occurrence: EventOccurrence,
    name: string,
    now: Date,
  ): Promise<void> {
    await this.options.core.createNamespacedEvent({
      namespace: involved.namespace,
      body: {
        metadata: { name, namespace: involved.namespace },
        involvedObject: { ...involved },
        type: occurrence.type,
        reason: occurrence.reason,
        message: occurrence.message,
        firstTimestamp: now,
        lastTimestamp: now,
        count: 1,
        source: { component: this.options.component },
        reportingComponent: this.options.controller,
        reportingInstance: this.options.instance,
      },
    });
  }

  private remember(key: string, entry: SeriesEntry): void {
    // Map keeps insertion order: re-inserting moves the key to the young end, so the first is the oldest.
    this.index.delete(key);
    this.index.set(key, entry);
    while (this.index.size > this.maxEntries) {
      const oldest = this.index.keys().next().value;
      if (oldest === undefined) break;
      this.index.delete(oldest);
    }
  }
}

export function seriesKey(involved: InvolvedObject, occurrence: EventOccurrence): string {
  return JSON.stringify([involved.uid, occurrence.type, occurrence.reason, occurrence.message]);
}

/**
 * `<object>.<digest of the series key>`: a DNS subdomain for any object name (names are cut so the whole
 * stays within 253 characters and does not end in a dot or dash).
 */
export function eventName(objectName: string, key: string): string {
  const digest = createHash('sha256').update(key).digest('hex').slice(0, 16);
  const head = objectName.slice(0, 253 - digest.length - 1).replace(/[.-]+$/, '');
  return `${head}.${digest}`;
}

function timeOf(value: Date | string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const t = new Date(value).getTime();
  return Number.isNaN(t) ? undefined : t;
}

function codeOf(error: unknown): number | undefined {
  return (error as { code?: number }).code;
}
