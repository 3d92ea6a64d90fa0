/**
 * The bounded journal in status.journal: what was planned, approved and applied, and how often something
 * failed, kept after Events and finished Jobs are gone. It is written in the status write that records the
 * transition, so every function here is pure: old journal in, new journal out.
 *
 * Bounds: at most 64 entries, none more than 30 days older than the newest, oldest dropped first.
 * coveredSince is the instant from which the journal is complete; it moves past every entry a bound drops.
 */
import type { JournalEntry as SchemaJournalEntry } from '../../api/ptah-schema.ts';

/**
 * An entry of either family's journal: the one shape both keep, whatever operation list the family names.
 * Each function takes and returns the family's own entry type.
 */
export type JournalEntry = Omit<SchemaJournalEntry, 'operation'> & { readonly operation?: string };
export interface Journal<E extends JournalEntry = JournalEntry> {
  readonly coveredSince: string;
  readonly entries: readonly E[];
}

export const JOURNAL_MAX_ENTRIES = 64;
export const JOURNAL_MAX_AGE_MS = 30 * 24 * 60 * 60 * 1000;

const REASON = /^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/;

export class JournalEntryError extends Error {
  override readonly name = 'JournalEntryError';
}

/** The journal a status write starts from: an existing one, or an empty one complete from `now`. */
export function ensureJournal<E extends JournalEntry>(
  journal: Journal<E> | undefined,
  now: Date,
): Journal<E> {
  return journal ?? { coveredSince: now.toISOString(), entries: [] };
}

/**
 * Records one entry. A PlanPublished for a plan already held writes nothing; an OperationFailed with the
 * same operation and reason as the newest entry folds into it (count and last time).
 */
export function recordJournalEntry<E extends JournalEntry>(
  journal: Journal<E> | undefined,
  entry: E,
  now: Date,
): { coveredSince: string; entries: E[] } {
  assertReasonOnly(entry);
  const current = ensureJournal(journal, now);
  const entries = [...current.entries];
  if (entry.type === 'PlanPublished') {
    if (entry.plan === undefined) throw new JournalEntryError('a PlanPublished entry names its plan');
    if (entries.some((e) => e.type === 'PlanPublished' && e.plan === entry.plan))
      return { coveredSince: current.coveredSince, entries };
  }
  const last = entries[entries.length - 1];
  if (
    entry.type === 'OperationFailed' &&
    last?.type === 'OperationFailed' &&
    last.operation === entry.operation &&
    last.reason === entry.reason
  ) {
    entries[entries.length - 1] = {
      ...last,
      count: (last.count ?? 1) + (entry.count ?? 1),
      lastTime: entry.lastTime ?? entry.time,
    };
  } else {
    entries.push(entry.type === 'OperationFailed' ? { ...entry, count: entry.count ?? 1 } : entry);
  }
  return applyBounds({ coveredSince: current.coveredSince, entries });
}

/** The instant an entry last speaks for: a coalesced failure run lasts until its last failure. */
function instantOf(e: JournalEntry): number {
  return Date.parse(e.lastTime ?? e.time);
}

function applyBounds<E extends JournalEntry>(journal: Journal<E>): { coveredSince: string; entries: E[] } {
  const newest = Math.max(...journal.entries.map(instantOf));
  const kept: E[] = [];
  let droppedUpTo: number | undefined;
  const dropped = (e: JournalEntry) => {
    droppedUpTo = Math.max(droppedUpTo ?? -Infinity, instantOf(e));
  };
  for (const e of journal.entries) {
    if (newest - instantOf(e) > JOURNAL_MAX_AGE_MS) dropped(e);
    else kept.push(e);
  }
  while (kept.length > JOURNAL_MAX_ENTRIES) dropped(kept.shift()!);
  if (droppedUpTo === undefined) return { coveredSince: journal.coveredSince, entries: kept };
  // Complete only from just after the newest entry dropped; never moves backwards.
  const coveredSince = Math.max(Date.parse(journal.coveredSince), droppedUpTo + 1);
  return { coveredSince: new Date(coveredSince).toISOString(), entries: kept };
}

function assertReasonOnly(entry: JournalEntry): void {
  if (entry.reason !== undefined && !REASON.test(entry.reason)) {
    throw new JournalEntryError('a journal entry carries a condition reason, never a message');
  }
  if (
    Number.isNaN(Date.parse(entry.time)) ||
    (entry.lastTime !== undefined && Number.isNaN(Date.parse(entry.lastTime)))
  ) {
    throw new JournalEntryError('a journal entry needs RFC 3339 times');
  }
}
