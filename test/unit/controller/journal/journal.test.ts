import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Journal, JournalEntry } from '../../../../src/api/ptah-schema.ts';
import { journal as journalSchema } from '../../../../src/api/ptah-schema.ts';
import { validate } from '../../../../src/api/schema-dsl.ts';
import {
  ensureJournal,
  JOURNAL_MAX_ENTRIES,
  JournalEntryError,
  recordJournalEntry,
} from '../../../../src/controller/journal/journal.ts';

const t0 = Date.parse('2026-01-01T00:00:00Z');
const at = (minutes: number) => new Date(t0 + minutes * 60_000);
const iso = (minutes: number) => at(minutes).toISOString();
const day = 24 * 60;

const published = (plan: string, minutes: number): JournalEntry => ({
  type: 'PlanPublished',
  plan,
  time: iso(minutes),
});
const failed = (operation: 'Observe' | 'Plan', reason: string, minutes: number): JournalEntry => ({
  type: 'OperationFailed',
  operation,
  reason,
  time: iso(minutes),
});

function record(entries: JournalEntry[], start?: Journal): Journal {
  let j = start;
  entries.forEach((e, i) => {
    j = recordJournalEntry(j, e, at(i));
  });
  return j!;
}

describe('journal', () => {
  it('starts complete from the first status write', () => {
    assert.deepEqual(ensureJournal(undefined, at(5)), { coveredSince: iso(5), entries: [] });
    const j = recordJournalEntry(undefined, published('ptah-plan-a', 7), at(7));
    assert.equal(j.coveredSince, iso(7));
    assert.deepEqual(j.entries, [published('ptah-plan-a', 7)]);
  });

  it('writes nothing for a plan it already holds', () => {
    const j = record([published('ptah-plan-a', 1), published('ptah-plan-b', 2), published('ptah-plan-a', 3)]);
    assert.deepEqual(
      j.entries.map((e) => e.plan),
      ['ptah-plan-a', 'ptah-plan-b'],
    );
  });

  it('folds failures with the same operation and reason in a row into one entry with a count and last time', () => {
    const j = record([
      failed('Observe', 'JobFailed', 1),
      failed('Observe', 'JobFailed', 2),
      failed('Observe', 'JobFailed', 3),
    ]);
    assert.deepEqual(j.entries, [
      {
        type: 'OperationFailed',
        operation: 'Observe',
        reason: 'JobFailed',
        time: iso(1),
        count: 3,
        lastTime: iso(3),
      },
    ]);
  });

  it('starts a new entry when the reason, the operation or anything between differs', () => {
    const j = record([
      failed('Observe', 'JobFailed', 1),
      failed('Observe', 'DeadlineExceeded', 2),
      failed('Plan', 'DeadlineExceeded', 3),
      published('ptah-plan-a', 4),
      failed('Plan', 'DeadlineExceeded', 5),
    ]);
    assert.deepEqual(
      j.entries.map((e) => [e.type, e.operation, e.reason, e.count]),
      [
        ['OperationFailed', 'Observe', 'JobFailed', 1],
        ['OperationFailed', 'Observe', 'DeadlineExceeded', 1],
        ['OperationFailed', 'Plan', 'DeadlineExceeded', 1],
        ['PlanPublished', undefined, undefined, undefined],
        ['OperationFailed', 'Plan', 'DeadlineExceeded', 1],
      ],
    );
  });

  it('holds at most 64 entries, drops the oldest first and moves coveredSince past it', () => {
    const entries = Array.from({ length: JOURNAL_MAX_ENTRIES + 2 }, (_, i) => published(`ptah-plan-${i}`, i));
    const j = record(entries);
    assert.equal(j.entries.length, JOURNAL_MAX_ENTRIES);
    assert.equal(j.entries[0]!.plan, 'ptah-plan-2');
    assert.ok(Date.parse(j.coveredSince) > Date.parse(iso(1)));
    assert.ok(Date.parse(j.coveredSince) <= Date.parse(iso(2)));
  });

  it('drops entries more than 30 days older than the newest', () => {
    const j = record([
      published('ptah-plan-old', 0),
      published('ptah-plan-mid', 10 * day),
      published('ptah-plan-new', 31 * day),
    ]);
    assert.deepEqual(
      j.entries.map((e) => e.plan),
      ['ptah-plan-mid', 'ptah-plan-new'],
    );
    assert.equal(j.coveredSince, new Date(t0 + 1).toISOString());
  });

  it('keeps an entry exactly 30 days older than the newest', () => {
    const j = record([published('ptah-plan-old', 0), published('ptah-plan-new', 30 * day)]);
    assert.equal(j.entries.length, 2);
    assert.equal(j.coveredSince, iso(0));
  });

  it('judges a folded failure run by its last failure', () => {
    let j = record([failed('Observe', 'JobFailed', 0)]);
    j = recordJournalEntry(j, failed('Observe', 'JobFailed', 29 * day), at(29 * day));
    j = recordJournalEntry(j, published('ptah-plan-a', 45 * day), at(45 * day));
    assert.deepEqual(
      j.entries.map((e) => e.type),
      ['OperationFailed', 'PlanPublished'],
    );
  });

  it('never moves coveredSince backwards', () => {
    const start: Journal = { coveredSince: iso(100), entries: [] };
    const j = record([published('a', 0), published('b', 31 * day)], start);
    assert.equal(j.coveredSince, iso(100));
  });

  it('refuses a message where a reason belongs', () => {
    assert.throws(
      () =>
        recordJournalEntry(
          undefined,
          { ...failed('Plan', 'x', 0), reason: 'connection to db failed: password wrong' },
          at(0),
        ),
      JournalEntryError,
    );
  });

  it('produces a journal the status schema accepts', () => {
    const j = record([
      published('ptah-plan-a', 1),
      failed('Plan', 'JobFailed', 2),
      failed('Plan', 'JobFailed', 3),
    ]);
    assert.deepEqual(validate(journalSchema, j).errors, []);
  });
});
