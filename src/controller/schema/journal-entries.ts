/**
 * Appends to the bounded status journal in the status write that records the transition. The bounds are
 * the seed's: at most 64 entries, none more than 30 days older than the newest, oldest dropped first,
 * coveredSince moved past what a bound dropped, and failures of one operation and reason in a row kept as
 * one entry with a count.
 */
import type { Journal, JournalEntry } from '../../api/ptah-schema.ts';

export type JournalEvent = Omit<JournalEntry, 'time'> & { readonly time?: string };

const MAX_ENTRIES = 64;
const MAX_AGE_MS = 30 * 24 * 3600 * 1000;

export function appendJournal(
  journal: Journal | undefined,
  events: readonly JournalEvent[],
  now: Date,
): Journal {
  const stamp = now.toISOString();
  let coveredSince = journal?.coveredSince ?? stamp;
  const entries: JournalEntry[] = [...(journal?.entries ?? [])];
  for (const e of events) {
    const entry = stripUndefined({ ...e, time: e.time ?? stamp }) as JournalEntry;
    const last = entries.at(-1);
    if (
      entry.type === 'PlanPublished' &&
      entries.some((x) => x.type === 'PlanPublished' && x.plan === entry.plan)
    ) {
      continue;
    }
    if (
      entry.type === 'OperationFailed' &&
      last?.type === 'OperationFailed' &&
      last.operation === entry.operation &&
      last.reason === entry.reason
    ) {
      entries[entries.length - 1] = { ...last, count: (last.count ?? 1) + 1, lastTime: entry.time };
      continue;
    }
    entries.push(entry);
  }
  const newest = Date.parse(entries.at(-1)?.time ?? stamp);
  while (
    entries.length > MAX_ENTRIES ||
    (entries.length > 0 && newest - Date.parse(entries[0]!.lastTime ?? entries[0]!.time) > MAX_AGE_MS)
  ) {
    const dropped = entries.shift()!;
    const after = dropped.lastTime ?? dropped.time;
    if (after > coveredSince) coveredSince = after;
  }
  return { coveredSince, entries };
}

function stripUndefined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}
