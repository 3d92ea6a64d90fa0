/**
 * What both families' decisions are made of: the next status, the writes before it (`pre`) and after it
 * (`post`), the Events, and when to look again. Each family's `decide` fills one of these; the reconciler
 * performs it in the order the contract fixes: pre → status → post, then Events. So a claim is durable before
 * its Job, and a Lease is released only after the status that stops needing it.
 *
 * Conditions and journal entries are collected during the decision and folded into the status once, at
 * `build`, stamped with the resource generation and the decision's clock.
 */
import { setConditions, type ConditionUpdate } from '../../api/conditions.ts';
import { ensureJournal, recordJournalEntry, type Journal, type JournalEntry } from '../journal/journal.ts';
import type { DurableWrite, PlanPublication } from './durable-writes.ts';

export interface EventSpec {
  readonly type: 'Normal' | 'Warning';
  readonly reason: string;
  /** Constant text plus object names; never a value from the database or a credential. */
  readonly message: string;
}

export interface DecisionOf<S, Pre, Post> {
  readonly status: S;
  /** The family's own writes before the status and the writes both families share (durable-writes.ts). */
  readonly pre: readonly (Pre | DurableWrite)[];
  readonly post: readonly Post[];
  readonly events: readonly EventSpec[];
  readonly requeueAfterMs?: number;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/**
 * A journal entry before it is stamped; undefined members are left out. `time` is the transition's own
 * instant (a plan's creation, a Job's end) when it carries one; the manager's clock otherwise.
 */
export type JournalEventOf<E extends JournalEntry> = {
  [K in keyof E]?: E[K] | undefined;
} & { readonly type: E['type'] };

interface StatusWithRecords<E extends JournalEntry> {
  conditions?: readonly ConditionUpdate[] | undefined;
  journal?: Journal<E> | undefined;
}

export class DecisionBuilder<S extends StatusWithRecords<E>, E extends JournalEntry, Pre, Post> {
  status: Mutable<S>;
  readonly pre: (Pre | DurableWrite)[] = [];
  readonly post: Post[] = [];
  readonly events: EventSpec[] = [];
  private readonly conds: ConditionUpdate[] = [];
  private readonly journal: JournalEventOf<E>[] = [];
  requeueAfterMs: number | undefined;
  private publication: PlanPublication | undefined;

  constructor(
    readonly clock: Date,
    private readonly generation: number,
    private readonly original: S,
  ) {
    this.status = { ...original };
  }

  /**
   * The decision publishes this plan and nothing else: what it would record needs the stored plan's UID
   * and creation time, so the family decides again with the publication's outcome (durable-writes.ts).
   */
  publish(publication: PlanPublication): this {
    this.publication = publication;
    return this;
  }

  get now(): string {
    return this.clock.toISOString();
  }

  cond(type: string, status: 'True' | 'False' | 'Unknown', reason: string, message: string): this {
    this.conds.push({ type, status, reason, message });
    return this;
  }

  event(type: 'Normal' | 'Warning', reason: string, message: string): this {
    this.events.push({ type, reason, message });
    return this;
  }

  record(entry: JournalEventOf<E>): this {
    this.journal.push(entry);
    return this;
  }

  requeue(ms: number): this {
    const v = Math.max(0, Math.round(ms));
    this.requeueAfterMs = this.requeueAfterMs === undefined ? v : Math.min(this.requeueAfterMs, v);
    return this;
  }

  requeueAt(iso: string | undefined): this {
    if (iso === undefined) return this;
    return this.requeue(Date.parse(iso) - this.clock.getTime());
  }

  build(): DecisionOf<S, Pre, Post> {
    if (this.publication !== undefined) {
      return {
        status: this.original,
        pre: [{ kind: 'publishPlan', publication: this.publication }],
        post: [],
        events: [],
      };
    }
    if (this.conds.length > 0) {
      this.status.conditions = [
        ...setConditions(
          this.status.conditions as Parameters<typeof setConditions>[0],
          this.conds.map((c) => ({ ...c, observedGeneration: this.generation })),
          this.clock,
        ),
      ] as S['conditions'];
    }
    // The journal is complete from the first status write of a manager that keeps one, entries or not.
    let journal = ensureJournal<E>(this.status.journal, this.clock);
    for (const e of this.journal) {
      const entry = Object.fromEntries(Object.entries(e).filter(([, v]) => v !== undefined));
      journal = recordJournalEntry<E>(journal, { time: this.now, ...entry } as E, this.clock);
    }
    this.status.journal = journal as S['journal'];
    return {
      status: this.status,
      pre: this.pre,
      post: this.post,
      events: this.events,
      ...(this.requeueAfterMs !== undefined ? { requeueAfterMs: this.requeueAfterMs } : {}),
    };
  }
}
