// What `kubectl ptah migration status` and `plan` print: the history, the run records (a failure by
// version, position and SQLSTATE/errno, never text), the unresolved run and how to settle it, and a plan as
// its sequence of files, which is all a migration plan holds.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PtahMigration } from '../../../src/api/ptah-migration.ts';
import type { PtahMigrationPlan } from '../../../src/api/ptah-migration-plan.ts';
import { renderMigrationPlan, renderMigrationStatus } from '../../../src/cli/kubectl-ptah-migration.ts';

const OP = 'sha256:' + 'a'.repeat(64);
const FP = 'sha256:' + 'f'.repeat(64);

const migration = {
  metadata: { name: 'shop-db', namespace: 'shop', uid: 'm-uid' },
  spec: {},
  status: {
    phase: 'Blocked',
    history: {
      observedAt: '2026-12-01T10:00:00Z',
      contractVersion: 1,
      verdict: 'ReadyToPlan',
      currentVersion: '3',
      checkpointVersion: '2',
      appliedCount: 2,
      pendingCount: 2,
      fingerprint: FP,
      targetIdentityDigest: FP,
      dirty: false,
    },
    plan: { name: 'ptah-mplan-1', uid: 'p-uid', fingerprint: FP, createdAt: '2026-12-01T10:00:00Z' },
    lastRun: {
      outcome: 'Partial',
      operationId: OP,
      jobName: 'ptah-m-apply-shop-db-0123456789abcdef',
      startedAt: '2026-12-01T10:01:00Z',
      finishedAt: '2026-12-01T10:02:00Z',
      appliedVersions: ['4'],
      failure: { version: '5', statementPosition: 2, sqlState: '42P01' },
    },
    unresolvedRun: {
      outcome: 'Partial',
      operationId: OP,
      jobName: 'ptah-m-apply-shop-db-0123456789abcdef',
      recordedAt: '2026-12-01T10:02:00Z',
    },
    conditions: [
      {
        type: 'Blocked',
        status: 'True',
        reason: 'ApplyOutcomeUnknown',
        message: 'a run may have changed part of the database',
        lastTransitionTime: '2026-12-01T10:02:00Z',
      },
    ],
    journal: {
      coveredSince: '2026-12-01T09:00:00Z',
      entries: [
        { type: 'RunFinished', time: '2026-12-01T10:02:00Z', operation: 'Apply', outcome: 'Partial' },
      ],
    },
  },
} as unknown as PtahMigration;

describe('kubectl ptah migration output', () => {
  it('status prints history, plan, the failed run without text, and the unresolved run with its way out', () => {
    const out = renderMigrationStatus(migration);
    assert.match(out, /^PtahMigration shop\/shop-db\nphase: +Blocked\n/);
    assert.match(
      out,
      /\nhistory: +at 3 \(checkpoint 2\), 2 applied, 2 pending, ReadyToPlan, read 2026-12-01T10:00:00Z\n/,
    );
    assert.match(out, /\nplan: +ptah-mplan-1, fingerprint sha256:f{64}\n/);
    assert.match(
      out,
      /\nlast run: +Partial \(Job ptah-m-apply-shop-db-0123456789abcdef, finished 2026-12-01T10:02:00Z\), applied 4; failed at version 5, statement 2, SQLSTATE 42P01\n/,
    );
    assert.match(
      out,
      /\nUNRESOLVED: Partial run, operation sha256:a{64} \(Job ptah-m-apply-shop-db-0123456789abcdef\)/,
    );
    assert.match(out, /`kubectl ptah migration acknowledge shop-db`/);
    assert.match(out, /\nBlocked +True +ApplyOutcomeUnknown +/);
    assert.match(
      out,
      /\nJOURNAL\nTIME +TYPE +OPERATION +OUTCOME[^\n]*\n2026-12-01T10:02:00Z +RunFinished +Apply +Partial/,
    );
  });

  it('status of a fresh migration says what is not there yet', () => {
    const out = renderMigrationStatus({
      metadata: { name: 'new', namespace: 'shop' },
      spec: {},
    } as PtahMigration);
    assert.match(out, /phase: +\(no status yet\)\nhistory: +not read yet\nplan: +none\nlast run: +none\n/);
    assert.doesNotMatch(out, /UNRESOLVED/);
  });

  it('plan prints the bound sequence in order, and nothing else', () => {
    const plan = {
      metadata: { name: 'ptah-mplan-1', uid: 'p-uid' },
      spec: {
        migrationRef: { name: 'shop-db', uid: 'm-uid' },
        fingerprint: FP,
        binding: { currentVersion: '3', historyFingerprint: FP, transactionMode: 'unset' },
        migrations: [
          {
            version: '4',
            versionKey: '0004',
            description: 'add orders',
            checksum: 'c4',
            checkpoint: false,
            transactionMode: 'file',
          },
          {
            version: '5',
            versionKey: '0005',
            description: 'backfill',
            checksum: 'c5',
            checkpoint: false,
            transactionMode: 'none',
          },
        ],
      },
    } as unknown as PtahMigrationPlan;
    const out = renderMigrationPlan(migration, plan);
    assert.match(out, /^# plan ptah-mplan-1 of PtahMigration shop-db: 2 migration\(s\) from version 3\n/);
    assert.match(out, /transaction mode asked by spec\.policy: unset\n/);
    assert.match(
      out,
      /VERSION +KEY +CHECKPOINT +TRANSACTION +CHECKSUM +DESCRIPTION\n4 +0004 +no +file +c4 +add orders\n5 +0005 +no +none +c5 +backfill\n$/,
    );
  });
});
