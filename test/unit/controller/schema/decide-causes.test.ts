// Causes reach status: what the runner classified, the node reported or the Job controller decided, as
// the condition reason and a message of codes and the user's own file positions, never server text.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FailureCause } from '../../../../src/protocol/cause.ts';
import type { RunnerResult } from '../../../../src/protocol/result.ts';
import { decide, type DecideInput, type Decision } from '../../../../src/controller/schema/decide.ts';
import type {
  Harvest,
  JobObservation,
  SchemaSpecView,
  SchemaStatus,
  SchemaView,
} from '../../../../src/controller/schema/model.ts';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const digest = (c: string) => `sha256:${c.repeat(64)}`;

const spec: SchemaSpecView = {
  engine: 'postgres',
  realm: { kind: 'CoordinationKey', coordinationKey: 'orders' },
  urlFrom: { name: 'db', key: 'url' },
  configMap: { name: 'schema', files: [{ key: 'schema.sql', path: 'schema.sql' }] },
  policy: { apply: 'Always', allowDestructive: false, protectedTables: [], exclude: [] },
  intervalMs: 600_000,
  failureRetryIntervalMs: 30_000,
  activeDeadlineSeconds: 900,
  suspend: false,
};

function schema(status: SchemaStatus): SchemaView {
  return {
    namespace: 'ns',
    name: 'orders',
    uid: 'uid-1',
    generation: 1,
    deleting: false,
    hasFinalizer: true,
    spec,
    status,
  };
}

function input(s: SchemaView, at: number, extra: Partial<DecideInput> = {}): DecideInput {
  return {
    appliedPlanTargetIdentity: digest('9'),
    now: new Date(at),
    schema: s,
    engineSupported: true,
    realm: { admitted: true },
    coordinationDigest: digest('c'),
    executionBinding: {
      epoch: 'v1-' + 'e'.repeat(32),
      managerImage: 'manager:1',
      managerRevision: 'rev-1',
      controllerStateVersion: 1,
      ptahVersion: '0.1.0',
      runnerImage: 'runner:1',
      runnerProtocolVersion: 1,
    },
    resolution: {
      ok: true,
      value: {
        sourceType: 'ConfigMap',
        configMapName: 'schema',
        configMapUID: 'cm-1',
        contentDigest: digest('a'),
        snapshotName: `ptah-src-${'a'.repeat(10)}`,
        fileCount: 1,
        size: 10,
        resolvedAt: new Date(T0).toISOString(),
      },
    },
    approvals: [],
    ...extra,
  };
}

function failedObserve(cause: unknown): (operationId: string) => Harvest {
  return (operationId) => ({
    kind: 'accepted',
    result: {
      protocolVersion: 1,
      operation: 'observe',
      operationId,
      exitCode: 1,
      childExitCode: 1,
      outcome: 'failed',
      startedAt: 'x',
      finishedAt: 'y',
      outputs: {},
      error: { code: 'observe_failed', message: 'drift: ptah exited with 1: whatever the server said' },
      ...(cause !== undefined ? { cause: cause as FailureCause } : {}),
    } satisfies RunnerResult,
  });
}

const ok: JobObservation = { state: 'finished', uid: 'job-uid', succeeded: false };

/** Claims an Observe, creates its Job, then reads what the Job ended with. */
function observeEnds(harvest: (operationId: string) => Harvest, job: JobObservation = ok): Decision {
  const claimed = decide(input(schema({}), T0)).status;
  const created = decide(input(schema(claimed), T0 + 10)).status;
  return decide(input(schema(created), T0 + 1000, { job, harvest: harvest(claimed.claim!.operationId) }));
}

const cond = (d: Decision, type: string) => d.status.conditions?.find((c) => c.type === type);

describe('causes in the decision', () => {
  it('a desired state that does not load is DesiredStateInvalid with file:line:column, and the database is not called unreachable', () => {
    const d = observeEnds(
      failedObserve({
        kind: 'desired-state',
        problems: [
          {
            file: 'schema.sql',
            line: 2,
            column: 8,
            message: 'SQL syntax error: syntax error at or near "TABL"',
          },
        ],
        total: 1,
      }),
    );
    assert.equal(d.status.phase, 'Failed');
    const failed = cond(d, 'ReconciliationFailed');
    assert.equal(failed?.status, 'True');
    assert.equal(failed?.reason, 'DesiredStateInvalid');
    assert.equal(
      failed?.message,
      'the desired state does not load: schema.sql:2:8: SQL syntax error: syntax error at or near "TABL"',
    );
    assert.equal(cond(d, 'DatabaseReachable'), undefined);
    assert.deepEqual(
      d.events.map((e) => [e.type, e.reason]),
      [['Warning', 'DesiredStateInvalid']],
    );
    assert.equal(d.status.journal?.entries.at(-1)?.reason, 'DesiredStateInvalid');
  });

  it('a refused password is DatabaseAuthenticationFailed with the SQLSTATE and its class, DatabaseReachable False', () => {
    const d = observeEnds(failedObserve({ kind: 'database', sqlstate: '28P01' }));
    const failed = cond(d, 'ReconciliationFailed');
    assert.equal(failed?.reason, 'DatabaseAuthenticationFailed');
    assert.match(
      failed?.message ?? '',
      /SQLSTATE 28P01 \(invalid password; class 28: invalid authorization specification\)/,
    );
    assert.ok(
      !(failed?.message ?? '').includes('whatever the server said'),
      'server text never reaches status',
    );
    assert.equal(cond(d, 'DatabaseReachable')?.status, 'False');
    assert.equal(cond(d, 'DatabaseReachable')?.reason, 'DatabaseAuthenticationFailed');
  });

  it('a missing database and a MySQL errno are named by code', () => {
    assert.equal(
      cond(observeEnds(failedObserve({ kind: 'database', sqlstate: '3D000' })), 'ReconciliationFailed')
        ?.reason,
      'DatabaseNotFound',
    );
    const mysql = cond(
      observeEnds(failedObserve({ kind: 'database', sqlstate: '28000', errno: 1045 })),
      'ReconciliationFailed',
    );
    assert.equal(mysql?.reason, 'DatabaseAuthenticationFailed');
    assert.match(mysql?.message ?? '', /MySQL error 1045 ER_ACCESS_DENIED_ERROR/);
    const other = cond(
      observeEnds(failedObserve({ kind: 'database', sqlstate: '22012' })),
      'ReconciliationFailed',
    );
    assert.equal(other?.reason, 'DatabaseError');
    assert.match(other?.message ?? '', /SQLSTATE 22012 \(class 22: data exception\)/);
  });

  it('a closed port is ConnectionRefused; a connection that times out is ConnectionTimedOut', () => {
    const refused = observeEnds(failedObserve({ kind: 'connection', failure: 'refused' }));
    assert.equal(cond(refused, 'ReconciliationFailed')?.reason, 'ConnectionRefused');
    assert.equal(cond(refused, 'DatabaseReachable')?.reason, 'ConnectionRefused');
    assert.equal(
      cond(observeEnds(failedObserve({ kind: 'connection', failure: 'timed-out' })), 'ReconciliationFailed')
        ?.reason,
      'ConnectionTimedOut',
    );
    assert.equal(
      cond(
        observeEnds(failedObserve({ kind: 'connection', failure: 'tls-required' })),
        'ReconciliationFailed',
      )?.reason,
      'TLSRequired',
    );
  });

  it('a frame whose cause is junk falls back to the runner error code', () => {
    const d = observeEnds(failedObserve({ kind: 'database', sqlstate: 'not a code; DROP' }));
    assert.equal(cond(d, 'ReconciliationFailed')?.reason, 'ObserveFailed');
    assert.equal(cond(d, 'ReconciliationFailed')?.message, 'observe failed');
  });

  it('an OOM-killed Pod is OOMKilled with its exit code', () => {
    const d = observeEnds(() => ({ kind: 'oom-killed', exitCode: 137 }));
    const failed = cond(d, 'ReconciliationFailed');
    assert.equal(failed?.reason, 'OOMKilled');
    assert.match(failed?.message ?? '', /OOMKilled, exit code 137/);
  });

  it('a Job the Job controller ended at its deadline is DeadlineExceeded, whatever the Pod left', () => {
    const job: JobObservation = { ...ok, failureReason: 'DeadlineExceeded' };
    const none = observeEnds(() => ({ kind: 'refused', message: 'the Job has no Pod' }), job);
    assert.equal(cond(none, 'ReconciliationFailed')?.reason, 'DeadlineExceeded');
    assert.match(cond(none, 'ReconciliationFailed')?.message ?? '', /900s/);
    const framed = observeEnds(failedObserve(undefined), job);
    assert.equal(cond(framed, 'ReconciliationFailed')?.reason, 'DeadlineExceeded');
    const runner = observeEnds(failedObserve({ kind: 'deadline' }));
    assert.equal(cond(runner, 'ReconciliationFailed')?.reason, 'DeadlineExceeded');
  });
});
