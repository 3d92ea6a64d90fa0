// What the runner reads from `ptah migrations status --json` and `ptah migrations up --json` into the
// result frame: every field checked, a report that contradicts its exit code or itself refused (History)
// or read as unknown (Apply), never guessed at. The reports here are the engine's own: built by
// computeStatus, as the CLI prints it.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { computeStatus } from '../../../src/engine/migrations/migration-status.ts';
import { parseMigrationFile } from '../../../src/engine/migrations/migration-file.ts';
import type { RevisionRow } from '../../../src/engine/migrations/revision.ts';
import { readStatusReport } from '../../../src/runner/migration-history.ts';
import { readUpReport } from '../../../src/runner/migration-apply.ts';
import { acceptFrame, decodeFrame, encodeFrame } from '../../../src/protocol/frame.ts';
import type { RunnerResult } from '../../../src/protocol/result.ts';

const file = (name: string, sql = 'SELECT 1;\n') => parseMigrationFile(name, Buffer.from(sql));
const row = (version: string, checksum: string, extra: Partial<RevisionRow> = {}): RevisionRow => ({
  version,
  description: '',
  checksum,
  checkpoint: false,
  appliedAt: '1970-01-01T00:00:00.000Z',
  executionMs: 1,
  dirty: false,
  statementsDone: null,
  ...extra,
});

/** The status report exactly as `ptah migrations status --json` prints it (version keys included). */
function statusReport(files: ReturnType<typeof file>[], rows: RevisionRow[]): Record<string, unknown> {
  const s = computeStatus(files, rows);
  const keyOf = new Map(files.map((f) => [f.version, /^\d+/.exec(f.name)![0]]));
  return JSON.parse(
    JSON.stringify({ ...s, pending: s.pending.map((p) => ({ ...p, versionKey: keyOf.get(p.version) })) }),
  ) as Record<string, unknown>;
}

const EXIT = { dirty: 4, modified: 4, out_of_order: 4, ahead: 4, pending: 3, up_to_date: 0 } as const;

describe('reading a status report', () => {
  const a = file('0001_create_orders.sql', '-- ptah:txmode none\nCREATE TABLE o (id int);\n');
  const b = file('0002_add_index.sql');
  const c = file('3_c.sql');

  const cases: [keyof typeof EXIT, ReturnType<typeof file>[], RevisionRow[], string][] = [
    ['pending', [a, b], [], ''],
    ['up_to_date', [a], [row('1', a.checksum)], ''],
    [
      'dirty',
      [a, b],
      [row('1', a.checksum), row('2', b.checksum, { dirty: true, statementsDone: 1 })],
      'dirtyVersions',
    ],
    ['modified', [a], [row('1', 'f'.repeat(64))], 'modifiedVersions'],
    ['out_of_order', [a, b, c], [row('1', a.checksum), row('3', c.checksum)], 'outOfOrderVersions'],
    ['ahead', [a], [row('1', a.checksum), row('2', b.checksum)], 'aheadVersions'],
  ];
  for (const [verdict, files, rows, list] of cases) {
    it(`frames ${verdict} from the engine's own report`, () => {
      const read = readStatusReport(statusReport(files, rows), EXIT[verdict]);
      assert.ok(read.ok, JSON.stringify(read));
      assert.equal(read.history.verdict, verdict);
      if (list !== '') assert.ok((read.history[list as 'dirtyVersions'] as string[]).length > 0);
      assert.match(read.history.historyFingerprint, /^sha256:[0-9a-f]{64}$/);
    });
  }

  it('carries the pending list in order with version key, checksum, checkpoint and the file mode', () => {
    const read = readStatusReport(statusReport([a, b], []), 3);
    assert.ok(read.ok);
    assert.equal(read.history.currentVersion, '0', 'an empty history stands at 0');
    assert.deepEqual(read.history.pending, [
      {
        version: '1',
        versionKey: '0001',
        description: 'create orders',
        checksum: a.checksum,
        checkpoint: false,
        transactionMode: 'none',
      },
      {
        version: '2',
        versionKey: '0002',
        description: 'add index',
        checksum: b.checksum,
        checkpoint: false,
        transactionMode: 'unset',
      },
    ]);
  });

  it('refuses a verdict its exit code does not stand for', () => {
    const read = readStatusReport(statusReport([a, b], []), 0);
    assert.deepEqual(read.ok ? undefined : read.code, 'report_inconsistent');
  });

  const tampered: [string, (r: Record<string, unknown>) => void][] = [
    ['an unknown verdict', (r) => (r['verdict'] = 'fine')],
    ['a pending count that is not the list', (r) => (r['pendingCount'] = 1)],
    ['a fingerprint that is not hex', (r) => (r['fingerprint'] = 'x')],
    ['a version with a leading zero', (r) => ((r['pending'] as { version: string }[])[0]!.version = '01')],
    [
      'a version key of another number',
      (r) => ((r['pending'] as { versionKey: string }[])[0]!.versionKey = '7'),
    ],
    ['an unknown mode', (r) => ((r['pending'] as { txMode: string }[])[0]!.txMode = 'auto')],
    [
      'a checksum with SQL in it',
      (r) => ((r['pending'] as { checksum: string }[])[0]!.checksum = 'DROP TABLE x'),
    ],
    ['pending while a blocked list is not empty', (r) => (r['aheadVersions'] = ['9'])],
    ['the same version twice', (r) => (r['pending'] as unknown[]).push((r['pending'] as unknown[])[0])],
  ];
  for (const [what, change] of tampered) {
    it(`refuses ${what}`, () => {
      const report = statusReport([a, b], []);
      change(report);
      if (what === 'the same version twice') report['pendingCount'] = 3;
      const read = readStatusReport(report, 3);
      assert.equal(read.ok, false);
      assert.equal(read.ok ? '' : read.code, 'report_unreadable');
    });
  }

  it('refuses more than 1000 pending migrations rather than cutting the list', () => {
    const many = Array.from({ length: 1001 }, (_, i) => file(`${i + 1}_m.sql`));
    const read = readStatusReport(statusReport(many, []), 3);
    assert.equal(read.ok ? '' : read.code, 'too_many_pending');
    assert.ok(readStatusReport(statusReport(many.slice(0, 1000), []), 3).ok);
  });

  it('keeps 64 versions of a blocked list and counts the rest', () => {
    const files = Array.from({ length: 70 }, (_, i) => file(`${i + 1}_m.sql`));
    const rows = files.map((f) => row(f.version, f.checksum, { dirty: true }));
    const read = readStatusReport(statusReport(files, rows), 4);
    assert.ok(read.ok);
    assert.equal(read.history.dirtyVersions.length, 64);
    assert.equal(read.history.dirtyVersions[0], '1');
    assert.equal(read.history.versionsOmitted, 6);
  });

  it('cuts a long description to 128 characters (it is not bound)', () => {
    const long = file(`1_${'x'.repeat(300)}.sql`);
    const read = readStatusReport(statusReport([long], []), 3);
    assert.ok(read.ok);
    assert.equal(read.history.pending[0]!.description.length, 128);
  });

  it('a framed history survives the frame round trip', () => {
    const read = readStatusReport(statusReport([a, b], []), 3);
    assert.ok(read.ok);
    const result: RunnerResult = {
      protocolVersion: 1,
      operation: 'migration-history',
      operationId: 'op-1',
      exitCode: 0,
      childExitCode: 3,
      outcome: 'succeeded',
      startedAt: '2026-01-01T00:00:00.000Z',
      finishedAt: '2026-01-01T00:00:01.000Z',
      outputs: { history: read.history },
    };
    const accepted = acceptFrame(decodeFrame(encodeFrame(result)), {
      operation: 'migration-history',
      operationId: 'op-1',
    });
    assert.ok(accepted.accepted);
    assert.deepEqual(accepted.result.outputs.history, read.history);
  });
});

describe('reading an up report', () => {
  const applied = { outcome: 'applied', applied: ['1', '2'], lockWaitMs: 0, durationMs: 5 };

  it('an applied run: every version, mutation started', () => {
    assert.deepEqual(readUpReport(applied, 0), {
      runOutcome: 'applied',
      mutationStarted: true,
      appliedVersions: ['1', '2'],
    });
  });

  it('a sequence mismatch: nothing written, the first differing position and both versions', () => {
    const r = readUpReport(
      {
        outcome: 'failed',
        applied: [],
        reason: 'sequence_mismatch',
        mismatch: {
          position: 0,
          expected: { version: '2', checksum: 'a'.repeat(64) },
          actual: { version: '1', checksum: 'b'.repeat(64) },
        },
        lockWaitMs: 0,
        durationMs: 1,
      },
      4,
    );
    assert.deepEqual(r, {
      runOutcome: 'failed',
      mutationStarted: false,
      appliedVersions: [],
      reason: 'sequence_mismatch',
      mismatch: { position: 0, expectedVersion: '2', actualVersion: '1' },
    });
  });

  it('a sequence longer than the selection: the missing side is absent', () => {
    const r = readUpReport(
      {
        outcome: 'failed',
        applied: [],
        reason: 'sequence_mismatch',
        mismatch: { position: 1, expected: { version: '2', checksum: 'a'.repeat(64) }, actual: null },
      },
      4,
    );
    assert.deepEqual(r?.mismatch, { position: 1, expectedVersion: '2' });
  });

  it('a partial run: where it stopped, how many statements stay, SQLSTATE and errno, no text', () => {
    const r = readUpReport(
      {
        outcome: 'partial',
        applied: ['1'],
        stoppedAt: '2',
        reason: 'statement_failed',
        failure: { version: '2', statementIndex: 3, line: 9, sqlstate: '42S02', errno: 1146 },
      },
      5,
    );
    assert.deepEqual(r, {
      runOutcome: 'partial',
      mutationStarted: true,
      appliedVersions: ['1'],
      reason: 'statement_failed',
      stoppedAt: { version: '2', position: 3, statementsApplied: 2, sqlstate: '42S02', errno: 1146 },
    });
  });

  it('a failed statement in a file that rolled back: earlier versions applied, nothing of this one', () => {
    const r = readUpReport(
      {
        outcome: 'failed',
        applied: ['1'],
        stoppedAt: '2',
        reason: 'statement_failed',
        failure: { version: '2', statementIndex: 1, line: 1, sqlstate: '42P01', errno: null },
      },
      1,
    );
    assert.deepEqual(r?.stoppedAt, { version: '2', position: 1, statementsApplied: 0, sqlstate: '42P01' });
    assert.equal(r?.mutationStarted, true);
  });

  it('a run interrupted between files names the version that did not start', () => {
    const r = readUpReport({ outcome: 'failed', applied: ['1'], stoppedAt: '2', reason: 'interrupted' }, 1);
    assert.deepEqual(r?.stoppedAt, { version: '2' });
  });

  const unreadable: [string, Record<string, unknown>, number][] = [
    ['an outcome its exit code does not stand for', applied, 5],
    ['a refusal exiting 1', { outcome: 'failed', applied: [], reason: 'sequence_mismatch' }, 1],
    ['a failure without a reason', { outcome: 'failed', applied: [] }, 1],
    ['an unknown reason', { outcome: 'failed', applied: [], reason: 'because' }, 1],
    ['a success with a reason', { ...applied, reason: 'interrupted' }, 0],
    ['a version that is not canonical', { ...applied, applied: ['01'] }, 0],
    [
      'a failure in another version than the stop',
      {
        outcome: 'partial',
        applied: [],
        stoppedAt: '2',
        reason: 'statement_failed',
        failure: { version: '3', statementIndex: 2 },
      },
      5,
    ],
    [
      'a SQLSTATE that is text',
      {
        outcome: 'partial',
        applied: [],
        stoppedAt: '2',
        reason: 'statement_failed',
        failure: { version: '2', statementIndex: 2, sqlstate: 'oops!' },
      },
      5,
    ],
    ['an unknown outcome word', { outcome: 'done', applied: [] }, 0],
  ];
  for (const [what, report, exit] of unreadable) {
    it(`reads ${what} as no report at all`, () => {
      assert.equal(readUpReport(report, exit), undefined);
    });
  }
});
