import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  decideMigration,
  type MigrationDecideInput,
  type MigrationDecision,
} from '../../../../src/controller/migration/decide.ts';
import type {
  AcknowledgmentView,
  Harvest,
  MigrationApprovalView,
  MigrationClaim,
  MigrationPlanStatus,
  MigrationSpecView,
  MigrationStatus,
  MigrationView,
  UnresolvedRun,
} from '../../../../src/controller/migration/model.ts';
import { parseUnresolvedAnnotation } from '../../../../src/controller/migration/view.ts';
import type { PlanPublication } from '../../../../src/controller/decision/durable-writes.ts';
import type { PtahMigrationPlan } from '../../../../src/api/ptah-migration-plan.ts';
import type {
  MigrationApplyOutputs,
  MigrationHistoryOutputs,
  RunnerResult,
} from '../../../../src/protocol/result.ts';
import { ptahMigrationStatus } from '../../../../src/api/ptah-migration.ts';
import { validate } from '../../../../src/api/schema-dsl.ts';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const digest = (c: string) => `sha256:${c.repeat(64)}`;
const TARGET = digest('9');

function spec(over: Partial<MigrationSpecView> = {}, policy: Partial<MigrationSpecView['policy']> = {}) {
  return {
    engine: 'postgres',
    realm: { kind: 'CoordinationKey', coordinationKey: 'orders' },
    urlFrom: { name: 'db', key: 'url' },
    configMap: { name: 'migrations', files: [{ key: '1_init.up.sql', path: '1_init.up.sql' }] },
    policy: {
      apply: 'OnApproval' as const,
      lockTimeoutSeconds: 300,
      transactionMode: 'unset' as const,
      ...policy,
    },
    intervalMs: 600_000,
    failureRetryIntervalMs: 30_000,
    activeDeadlineSeconds: 900,
    suspend: false,
    ...over,
  } satisfies MigrationSpecView;
}

function migration(
  status: MigrationStatus,
  s: MigrationSpecView = spec(),
  over: Partial<MigrationView> = {},
): MigrationView {
  return {
    namespace: 'ns',
    name: 'orders',
    uid: 'uid-m',
    generation: 1,
    deleting: false,
    hasFinalizer: true,
    spec: s,
    status,
    ...over,
  };
}

const resolution = (c = 'a') => ({
  ok: true as const,
  value: {
    sourceType: 'ConfigMap' as const,
    configMapName: 'migrations',
    configMapUID: 'cm-1',
    contentDigest: digest(c),
    snapshotName: `ptah-src-${c.repeat(10)}`,
    fileCount: 2,
    size: 10,
    resolvedAt: new Date(T0).toISOString(),
  },
});

const executionBinding = {
  epoch: 'v1-' + 'e'.repeat(32),
  managerImage: 'manager:1',
  managerRevision: 'rev-1',
  controllerStateVersion: 1,
  ptahVersion: '0.1.0',
  runnerImage: 'runner:1',
  runnerProtocolVersion: 1,
};

function input(
  m: MigrationView,
  at: number,
  extra: Partial<MigrationDecideInput> = {},
): MigrationDecideInput {
  return {
    now: new Date(at),
    migration: m,
    engineSupported: true,
    engine: 'postgres',
    realm: { admitted: true },
    coordinationDigest: digest('c'),
    executionBinding,
    resolution: resolution(),
    approvals: [],
    acknowledgments: [],
    ...extra,
  };
}

const history = (over: Partial<MigrationHistoryOutputs> = {}): MigrationHistoryOutputs => ({
  verdict: 'pending',
  currentVersion: '1',
  appliedCount: 1,
  pendingCount: 2,
  historyFingerprint: digest('b'),
  pending: [
    {
      version: '2',
      versionKey: '2',
      description: 'b',
      checksum: 'c'.repeat(64),
      checkpoint: false,
      transactionMode: 'unset',
    },
    {
      version: '3',
      versionKey: '3',
      description: 'c',
      checksum: 'd'.repeat(64),
      checkpoint: false,
      transactionMode: 'none',
    },
  ],
  dirtyVersions: [],
  modifiedVersions: [],
  outOfOrderVersions: [],
  aheadVersions: [],
  ...over,
});

function frame(
  claim: MigrationClaim,
  outcome: RunnerResult['outcome'],
  outputs: RunnerResult['outputs'],
  code?: string,
  target = TARGET,
): Harvest {
  return {
    kind: 'accepted',
    result: {
      protocolVersion: 1,
      operation: claim.type === 'History' ? 'migration-history' : 'migration-apply',
      operationId: claim.operationId,
      exitCode: 0,
      childExitCode: 0,
      outcome,
      startedAt: 'x',
      finishedAt: 'y',
      outputs,
      target: { dialect: 'postgres', identityDigest: target },
      ...(code ? { error: { code, message: 'the server said: password=hunter2 and row 42' } } : {}),
    },
  };
}

const plan: MigrationPlanStatus = {
  name: 'ptah-mplan-aaaaaaaaaaaaaaaaaaaaaaaa',
  uid: 'plan-uid-1',
  fingerprint: digest('f'),
  createdAt: new Date(T0).toISOString(),
};

const approval = (over: Partial<MigrationApprovalView> = {}): MigrationApprovalView => ({
  name: 'ok',
  uid: 'appr-1',
  createdAt: new Date(T0).toISOString(),
  migrationRef: { name: 'orders', uid: 'uid-m' },
  planRef: { name: plan.name, uid: plan.uid },
  planFingerprint: plan.fingerprint,
  approver: 'alice',
  approvedAt: new Date(T0).toISOString(),
  mutationRequestUID: 'req-1',
  consumed: false,
  stale: false,
  ...over,
});

const finished = (uid = 'job-uid') => ({
  state: 'finished' as const,
  uid,
  succeeded: true,
  finishedAt: new Date(T0).toISOString(),
});

/** Runs passes until the resource stops asking for one at once, feeding each the previous status. */
function step(m: MigrationView, at: number, extra: Partial<MigrationDecideInput> = {}): MigrationDecision {
  return decideMigration(input(m, at, extra));
}

/** The status of a resource that read a pending history and holds `plan`, waiting for an approval. */
function awaiting(s: MigrationSpecView = spec()): MigrationStatus {
  const first = step(migration({}, s), T0);
  const claim = first.status.claim!;
  const read = step(migration(first.status, s), T0 + 1000, {
    job: finished(),
    harvest: frame(claim, 'succeeded', { history: history() }),
    published: plan,
  });
  return read.status;
}

/** The status of a resource whose Apply was dispatched under its approval. */
function dispatched(): { status: MigrationStatus; claim: MigrationClaim } {
  const waiting = awaiting();
  const claimed = step(migration(waiting), T0 + 2000, { approvals: [approval()], planCheck: { ok: true } });
  const d = step(migration(claimed.status), T0 + 3000, { approvals: [approval()], planCheck: { ok: true } });
  return { status: d.status, claim: d.status.claim! };
}

const reasonOf = (d: MigrationDecision, type: string) =>
  d.status.conditions?.find((c) => c.type === type)?.reason;

describe('migration decide: reading the history', () => {
  it('puts the deletion guard on before anything runs', () => {
    const d = step(migration({}, spec(), { hasFinalizer: false }), T0);
    assert.deepEqual(d.pre, [{ kind: 'addFinalizer' }]);
    assert.equal(d.status.claim, undefined);
  });

  it('claims a History read after the snapshot, with no Lease: it mutates nothing', () => {
    const d = step(migration({}), T0);
    assert.equal(d.status.phase, 'Reading');
    assert.equal(d.status.claim?.type, 'History');
    assert.match(d.status.claim!.jobName, /^ptah-m-history-orders-[0-9a-f]{16}$/);
    assert.ok(!d.pre.some((p) => p.kind === 'acquireLease'));
    const created = step(migration(d.status), T0 + 10);
    assert.deepEqual(
      created.post.filter((p) => p.kind === 'createJob').map((p) => p.kind),
      ['createJob'],
    );
    assert.ok(!created.pre.some((p) => p.kind === 'acquireLease'));
  });

  it('records the execution binding the pass runs under, epoch included: the next pass keeps that epoch', () => {
    const d = step(migration({}), T0);
    assert.deepEqual(d.status.executionBinding, executionBinding);
  });

  const blocked = [
    ['dirty', 'HistoryDirty', { dirtyVersions: ['2'] }],
    ['modified', 'HistoryModified', { modifiedVersions: ['1'] }],
    ['out_of_order', 'HistoryOutOfOrder', { outOfOrderVersions: ['2'] }],
    ['ahead', 'HistoryAhead', { aheadVersions: ['7'] }],
  ] as const;
  for (const [verdict, reason, lists] of blocked) {
    it(`a ${verdict} history is Blocked (${reason}), plans nothing, and reads again at the interval`, () => {
      const first = step(migration({}), T0);
      const d = step(migration(first.status), T0 + 1000, {
        job: finished(),
        harvest: frame(first.status.claim!, 'succeeded', {
          history: history({ verdict, pending: [], pendingCount: 0, ...lists }),
        }),
      });
      assert.equal(d.status.phase, 'Blocked');
      assert.equal(reasonOf(d, 'Blocked'), reason);
      assert.equal(reasonOf(d, 'Progressing'), reason);
      assert.equal(d.status.plan, undefined);
      assert.equal(d.status.claim, undefined);
      assert.equal(d.status.nextReconciliationTime, new Date(T0 + 1000 + 600_000).toISOString());
      assert.ok(d.events.some((e) => e.reason === reason && e.type === 'Warning'));
      assert.ok(
        validate(ptahMigrationStatus, d.status).ok,
        validate(ptahMigrationStatus, d.status).errors.join(),
      );
      if (verdict === 'dirty') assert.equal(d.status.history?.dirty, true);
      if (verdict === 'modified') assert.deepEqual(d.status.history?.modifiedVersions, ['1']);
      // The interval reads again, the same way.
      const later = step(migration(d.status), T0 + 1000 + 600_000);
      assert.equal(later.status.claim?.type, 'History');
    });
  }

  it('nothing pending is InSync, with no plan and nothing to approve', () => {
    const first = step(migration({}), T0);
    const d = step(migration(first.status), T0 + 1000, {
      job: finished(),
      harvest: frame(first.status.claim!, 'succeeded', {
        history: history({ verdict: 'up_to_date', pending: [], pendingCount: 0, currentVersion: '3' }),
      }),
    });
    assert.equal(d.status.phase, 'InSync');
    assert.equal(d.status.history?.verdict, 'NothingPending');
    assert.equal(d.status.history?.currentVersion, '3');
    assert.equal(reasonOf(d, 'Ready'), 'InSync');
    assert.deepEqual(d.status.journal?.entries ?? [], [], 'a read that finds nothing to do writes no entry');
  });

  it('pending versions publish a plan and wait for an approval', () => {
    const s = awaiting();
    assert.equal(s.phase, 'AwaitingApproval');
    assert.deepEqual(s.plan, plan);
    assert.equal(s.history?.verdict, 'ReadyToPlan');
    assert.equal(s.history?.pendingCount, 2);
    assert.equal(s.conditions?.find((c) => c.type === 'ApprovalRequired')?.status, 'True');
    assert.deepEqual(
      s.journal?.entries.map((e) => [e.type, e.plan]),
      [['PlanPublished', plan.name]],
    );
  });

  it('apply Never records no plan and applies nothing: Blocked ApplyDisabled', () => {
    const first = step(migration({}, spec({}, { apply: 'Never' })), T0);
    const d = step(migration(first.status, spec({}, { apply: 'Never' })), T0 + 1000, {
      job: finished(),
      harvest: frame(first.status.claim!, 'succeeded', { history: history() }),
      published: plan,
    });
    assert.equal(d.status.phase, 'Blocked');
    assert.equal(reasonOf(d, 'Blocked'), 'ApplyDisabled');
    assert.equal(d.status.plan, undefined);
  });

  it('a pending history publishes its plan first, as the only action, then records what was stored', () => {
    const publication: PlanPublication = {
      kind: 'PtahMigrationPlan',
      plan: { metadata: { name: plan.name, namespace: 'ns' } } as PtahMigrationPlan,
    };
    const first = step(migration({}), T0);
    const pass = input(migration(first.status), T0 + 1000, {
      job: finished(),
      harvest: frame(first.status.claim!, 'succeeded', { history: history() }),
      publication,
    });
    const d = decideMigration(pass);
    assert.deepEqual(d.pre, [{ kind: 'publishPlan', publication }]);
    assert.deepEqual([d.post, d.events, d.status], [[], [], first.status], 'nothing else, status unchanged');
    const after = decideMigration({ ...pass, published: plan });
    assert.equal(after.pre.filter((a) => a.kind === 'publishPlan').length, 0, 'published once');
    assert.deepEqual(after.status.plan, plan);
    const never = spec({}, { apply: 'Never' });
    const blocked = decideMigration({ ...pass, migration: migration(first.status, never) });
    assert.equal(blocked.pre.filter((a) => a.kind === 'publishPlan').length, 0, 'apply Never publishes none');
  });

  it('a snapshot not yet written is written before the status that first names it', () => {
    const snapshot = { metadata: { name: resolution().value.snapshotName, namespace: 'ns' } };
    const d = decideMigration(input(migration({}), T0, { resolution: { ...resolution(), write: snapshot } }));
    assert.deepEqual(
      d.pre.filter((a) => a.kind === 'writeSnapshot'),
      [{ kind: 'writeSnapshot', configMap: snapshot }],
    );
    assert.equal(d.status.resolution?.snapshotName, snapshot.metadata.name);
    assert.equal(step(migration({}), T0).pre.filter((a) => a.kind === 'writeSnapshot').length, 0);
  });

  it('a plan that could not be published is Failed and retried at the retry interval', () => {
    const first = step(migration({}), T0);
    const d = step(migration(first.status), T0 + 1000, {
      job: finished(),
      harvest: frame(first.status.claim!, 'succeeded', { history: history() }),
      publishRefused: { reason: 'TooManyPending', message: 'more than 256 pending migrations' },
    });
    assert.equal(d.status.phase, 'Failed');
    assert.equal(reasonOf(d, 'ReconciliationFailed'), 'TooManyPending');
  });

  it('a reading that does not name the database it read is refused, never planned against', () => {
    const first = step(migration({}), T0);
    const h = frame(first.status.claim!, 'succeeded', { history: history() });
    const { target: _none, ...unnamed } = (h as { kind: 'accepted'; result: RunnerResult }).result;
    const d = step(migration(first.status), T0 + 1000, {
      job: finished(),
      harvest: { kind: 'accepted', result: unnamed },
      published: plan,
    });
    assert.equal(d.status.phase, 'Failed');
    assert.equal(reasonOf(d, 'ReconciliationFailed'), 'TargetUnreported');
    assert.equal(d.status.plan, undefined);
  });

  it('a failed read is Failed with the runner code as reason, never its message', () => {
    const first = step(migration({}), T0);
    const d = step(migration(first.status), T0 + 1000, {
      job: finished(),
      harvest: frame(first.status.claim!, 'failed', {}, 'history_read_failed'),
    });
    assert.equal(d.status.phase, 'Failed');
    assert.equal(reasonOf(d, 'ReconciliationFailed'), 'HistoryReadFailed');
    assert.ok(!JSON.stringify(d).includes('hunter2'));
    const entry = d.status.journal!.entries.at(-1)!;
    assert.deepEqual(
      [entry.type, entry.operation, entry.reason, entry.count],
      ['OperationFailed', 'History', 'HistoryReadFailed', 1],
    );
    // Failing again the same way folds into the entry.
    const retry = step(migration(d.status), T0 + 1000 + 30_000);
    const again = step(migration(retry.status), T0 + 1000 + 31_000, {
      job: finished('job-2'),
      harvest: frame(retry.status.claim!, 'failed', {}, 'history_read_failed'),
    });
    assert.equal(again.status.journal!.entries.length, 1);
    assert.equal(again.status.journal!.entries[0]!.count, 2);
  });

  it('a read the database refused names the classified cause, with codes only', () => {
    const first = step(migration({}), T0);
    const harvest = frame(first.status.claim!, 'failed', {}, 'history_read_failed');
    assert.equal(harvest.kind, 'accepted');
    const refused: Harvest = {
      kind: 'accepted',
      result: { ...harvest.result, cause: { kind: 'database', sqlstate: '28P01' } },
    };
    const d = step(migration(first.status), T0 + 1000, { job: finished(), harvest: refused });
    assert.equal(d.status.phase, 'Failed');
    assert.equal(reasonOf(d, 'ReconciliationFailed'), 'DatabaseAuthenticationFailed');
    assert.equal(reasonOf(d, 'DatabaseReachable'), 'DatabaseAuthenticationFailed');
    const message = d.status.conditions!.find((c) => c.type === 'ReconciliationFailed')!.message;
    assert.match(message, /SQLSTATE 28P01 .*password in the database URL is refused/);
    assert.ok(!JSON.stringify(d).includes('hunter2'), 'never the runner message');
  });

  it('a read stopped at its deadline is DeadlineExceeded, and says nothing about the database', () => {
    const first = step(migration({}), T0);
    const d = step(migration(first.status), T0 + 1000, {
      job: { ...finished(), succeeded: false, failureReason: 'DeadlineExceeded' },
      harvest: frame(first.status.claim!, 'failed', {}, 'history_read_failed'),
    });
    assert.equal(reasonOf(d, 'ReconciliationFailed'), 'DeadlineExceeded');
    assert.notEqual(reasonOf(d, 'DatabaseReachable'), 'DeadlineExceeded');
    // The Job ended at its deadline before any frame: the reason is still the deadline, not a lost result.
    const again = step(migration({}), T0);
    const lost = step(migration(again.status), T0 + 1000 + 120_000, {
      job: { ...finished(), succeeded: false, failureReason: 'DeadlineExceeded' },
      harvest: { kind: 'unavailable', message: 'no Pod' },
    });
    assert.equal(reasonOf(lost, 'ReconciliationFailed'), 'DeadlineExceeded');
  });
});

describe('migration decide: approval and apply', () => {
  it('an exact, stamped approval claims the Apply; dispatch takes the Lease and consumes the approval', () => {
    const waiting = awaiting();
    const claimed = step(migration(waiting), T0 + 2000, { approvals: [approval()], planCheck: { ok: true } });
    assert.equal(claimed.status.claim?.type, 'Apply');
    assert.equal(claimed.status.claim?.dispatchStarted, undefined);
    assert.match(claimed.status.claim!.jobName, /^ptah-m-apply-orders-/);
    const d = step(migration(claimed.status), T0 + 3000, {
      approvals: [approval()],
      planCheck: { ok: true },
    });
    assert.deepEqual(d.pre, [{ kind: 'acquireLease', durationSeconds: 960 }]);
    assert.equal(d.status.claim?.dispatchStarted, true);
    assert.equal(d.status.phase, 'Applying');
    assert.deepEqual(
      d.post.map((p) => p.kind),
      ['consumeApproval', 'createJob'],
    );
    const accepted = d.status.journal!.entries.find((e) => e.type === 'ApprovalAccepted')!;
    assert.equal(accepted.approval, 'ok');
    assert.equal(accepted.approver, undefined, 'a migration entry names no approver');
  });

  it('a realm that stops admitting the migration withdraws its undispatched Apply; a dispatched one runs on', () => {
    const refusal = {
      admitted: false,
      reason: 'RealmNotAuthorized',
      message: 'PtahRealm orders does not admit namespace shop for engine postgres: ...',
    } as const;
    const waiting = awaiting();
    const claimed = step(migration(waiting), T0 + 2000, { approvals: [approval()], planCheck: { ok: true } });
    assert.equal(claimed.status.claim?.type, 'Apply');
    const withdrawn = step(migration(claimed.status), T0 + 3000, {
      approvals: [approval()],
      planCheck: { ok: true },
      realm: refusal,
    });
    assert.equal(withdrawn.status.claim, undefined);
    assert.deepEqual(withdrawn.pre, [], 'no Lease taken');
    assert.ok(!withdrawn.post.some((p) => p.kind === 'createJob' || p.kind === 'consumeApproval'));
    assert.deepEqual(
      withdrawn.events.map((e) => [e.type, e.reason, e.message]),
      [['Warning', 'RealmNotAuthorized', `operation Apply withdrawn before it started: ${refusal.message}`]],
    );
    const blocked = step(migration(withdrawn.status), T0 + 4000, { realm: refusal });
    assert.equal(blocked.status.phase, 'Blocked');
    assert.equal(reasonOf(blocked, 'Ready'), 'RealmNotAuthorized');

    const dispatched = step(migration(claimed.status), T0 + 3000, {
      approvals: [approval()],
      planCheck: { ok: true },
    });
    assert.equal(dispatched.status.claim?.dispatchStarted, true);
    const running = step(migration(dispatched.status), T0 + 4000, {
      job: { state: 'running', uid: 'j' },
      realm: refusal,
    });
    assert.equal(running.status.claim?.dispatchStarted, true);
    assert.equal(running.status.phase, 'Applying');
    assert.ok(!running.post.some((p) => p.kind === 'finishJob'), 'the running Apply is not deleted');
  });

  for (const [what, a] of [
    ['unstamped', approval({ approver: undefined })],
    ['without its request UID', approval({ mutationRequestUID: undefined })],
    ['for another fingerprint', approval({ planFingerprint: digest('0') })],
    ['already consumed', approval({ consumed: true })],
    ['for another resource', approval({ migrationRef: { name: 'orders', uid: 'other' } })],
  ] as const) {
    it(`an approval ${what} is not an approval`, () => {
      const d = step(migration(awaiting()), T0 + 2000, { approvals: [a], planCheck: { ok: true } });
      assert.equal(d.status.claim, undefined);
      assert.equal(d.status.phase, 'AwaitingApproval');
    });
  }

  it('no approval is read while the webhooks that stamp it are missing', () => {
    const d = step(migration(awaiting()), T0 + 2000, {
      approvals: [approval()],
      planCheck: { ok: true },
      decisionsRefused: 'the webhooks are not registered',
    });
    assert.equal(d.status.claim, undefined);
    assert.equal(reasonOf(d, 'ApprovalRequired'), 'ApprovalWebhooksMissing');
  });

  it('policy Always applies without an approval', () => {
    const s = spec({}, { apply: 'Always' });
    const first = step(migration({}, s), T0);
    const d = step(migration(first.status, s), T0 + 1000, {
      job: finished(),
      harvest: frame(first.status.claim!, 'succeeded', { history: history() }),
      published: plan,
    });
    assert.equal(d.status.claim?.type, 'Apply');
    assert.equal(d.status.claim?.approvalRef, undefined);
    assert.equal(d.status.phase, 'Applying');
  });

  it('editing the transaction mode retires the plan and its approval', () => {
    const waiting = awaiting();
    const edited = spec({}, { transactionMode: 'none' });
    const d = decideMigration(
      input(migration(waiting, edited, { generation: 2 }), T0 + 2000, { approvals: [approval()] }),
    );
    assert.equal(d.status.plan, undefined);
    assert.ok(d.post.some((p) => p.kind === 'staleApprovals'));
    assert.equal(d.status.claim?.type, 'History');
  });

  it('a plan superseded by live inputs is retired before any Apply', () => {
    const d = step(migration(awaiting()), T0 + 2000, {
      approvals: [approval()],
      planCheck: { ok: false, kind: 'superseded', fields: ['targetIdentityDigest'] },
    });
    assert.equal(d.status.plan, undefined);
    assert.equal(d.status.claim?.type, 'History');
  });

  it('an applied run is recorded and read back: VerifyingHistory, then InSync with HistoryMatched', () => {
    const { status, claim } = dispatched();
    const out: MigrationApplyOutputs = {
      runOutcome: 'applied',
      mutationStarted: true,
      appliedVersions: ['2', '3'],
    };
    const d = step(migration(status), T0 + 5000, {
      job: finished(),
      harvest: frame(claim, 'succeeded', { migrationApply: out }),
    });
    assert.equal(d.status.lastRun?.outcome, 'Applied');
    assert.deepEqual(d.status.lastRun?.appliedVersions, ['2', '3']);
    assert.equal(d.status.phase, 'VerifyingHistory');
    assert.equal(d.status.claim?.type, 'History');
    assert.deepEqual(d.status.claim?.planRef, { name: plan.name, uid: plan.uid });
    assert.ok(d.post.some((p) => p.kind === 'releaseLease'));
    const run = d.status.journal!.entries.find((e) => e.type === 'RunFinished')!;
    assert.deepEqual([run.outcome, run.appliedCount, run.plan], ['Applied', 2, plan.name]);
    const verify = d.status.claim!;
    const v = step(migration(d.status), T0 + 6000, {
      job: finished('job-v'),
      harvest: frame(verify, 'succeeded', {
        history: history({ verdict: 'up_to_date', pending: [], pendingCount: 0, currentVersion: '3' }),
      }),
    });
    assert.equal(v.status.phase, 'InSync');
    assert.equal(reasonOf(v, 'Progressing'), 'HistoryMatched');
    assert.ok(
      validate(ptahMigrationStatus, v.status).ok,
      validate(ptahMigrationStatus, v.status).errors.join(),
    );
  });

  it('a sequence that differs under the lock is Failed with nothing applied, and not retried on the same plan', () => {
    const { status, claim } = dispatched();
    const out: MigrationApplyOutputs = {
      runOutcome: 'failed',
      mutationStarted: false,
      appliedVersions: [],
      mismatch: { position: 0, expectedVersion: '2', actualVersion: '1' },
    };
    const d = step(migration(status), T0 + 5000, {
      job: finished(),
      harvest: frame(claim, 'failed', { migrationApply: out }, 'sequence_mismatch'),
    });
    assert.equal(d.status.phase, 'Failed');
    assert.equal(reasonOf(d, 'ReconciliationFailed'), 'SequenceMismatch');
    assert.equal(d.status.lastRun?.outcome, 'Failed');
    assert.equal(d.status.lastRun?.appliedVersions, undefined);
    assert.equal(d.status.unresolvedRun, undefined, 'a failed run changed nothing: no latch');
    assert.equal(d.status.plan, undefined);
    const types = d.status.journal!.entries.map((e) => e.type);
    assert.deepEqual(types.slice(-2), ['RunFinished', 'OperationFailed']);
  });

  it('a run that could not connect is Failed with the classified cause and nothing latched', () => {
    const { status, claim } = dispatched();
    const out: MigrationApplyOutputs = {
      runOutcome: 'failed',
      mutationStarted: false,
      appliedVersions: [],
      reason: 'connection_failed',
    };
    const harvest = frame(claim, 'failed', { migrationApply: out }, 'connection_failed');
    assert.equal(harvest.kind, 'accepted');
    const d = step(migration(status), T0 + 5000, {
      job: finished(),
      harvest: {
        ...harvest,
        result: { ...harvest.result, cause: { kind: 'connection', failure: 'refused' } },
      },
    });
    assert.equal(d.status.phase, 'Failed');
    assert.equal(reasonOf(d, 'ReconciliationFailed'), 'ConnectionRefused');
    assert.equal(reasonOf(d, 'DatabaseReachable'), 'ConnectionRefused');
    assert.match(
      d.status.conditions!.find((c) => c.type === 'ReconciliationFailed')!.message,
      /^the run failed: nothing accepts connections/,
    );
    assert.equal(d.status.unresolvedRun, undefined, 'nothing ran: no latch');
    assert.equal(d.status.lastRun?.outcome, 'Failed');
  });

  it('a fetch init container that refused the source fails the run with its reason, and latches nothing', () => {
    const { status, claim } = dispatched();
    const line = `ptah git: CommitUnreachable: ${'c'.repeat(40)} is no longer reachable from refs/heads/main`;
    const d = step(migration(status), T0 + 5000, {
      job: { ...finished(), succeeded: false },
      harvest: {
        kind: 'source-refused',
        container: 'fetch-source',
        code: 'commit_unreachable',
        detail: line,
      },
    });
    assert.equal(claim.type, 'Apply');
    assert.equal(d.status.phase, 'Failed');
    assert.equal(reasonOf(d, 'ReconciliationFailed'), 'ArtifactFetchFailed');
    assert.equal(
      d.status.conditions!.find((c) => c.type === 'ReconciliationFailed')!.message,
      `the fetch-source init container stopped the Pod (commit_unreachable); nothing ran: ${line}`,
    );
    assert.equal(d.status.unresolvedRun, undefined, 'nothing ran: no latch');
    assert.equal(d.status.lastRun?.outcome, 'Failed');
  });

  it('a clean failure records where it stopped: version, position, SQLSTATE, errno, and no text', () => {
    const { status, claim } = dispatched();
    const out: MigrationApplyOutputs = {
      runOutcome: 'failed',
      mutationStarted: true,
      appliedVersions: ['2'],
      stoppedAt: { version: '3', position: 2, statementsApplied: 0, sqlstate: '42P01', errno: 1146 },
    };
    const d = step(migration(status), T0 + 5000, {
      job: finished(),
      harvest: frame(claim, 'failed', { migrationApply: out }, 'statement_failed'),
    });
    assert.deepEqual(d.status.lastRun?.failure, {
      version: '3',
      statementPosition: 2,
      sqlState: '42P01',
      mysqlErrorNumber: 1146,
    });
    assert.deepEqual(d.status.lastRun?.appliedVersions, ['2']);
    assert.equal(d.status.journal!.entries.find((e) => e.type === 'RunFinished')!.stoppedAtVersion, '3');
    assert.ok(!JSON.stringify(d).includes('hunter2'));
  });
});

describe('migration decide: the latch', () => {
  function partial() {
    const { status, claim } = dispatched();
    const out: MigrationApplyOutputs = {
      runOutcome: 'partial',
      mutationStarted: true,
      appliedVersions: ['2'],
      stoppedAt: { version: '3', position: 2, statementsApplied: 1, sqlstate: '23505' },
    };
    const d = step(migration({ ...status, target: { identityDigest: TARGET } }), T0 + 5000, {
      job: finished(),
      harvest: frame(claim, 'uncertain', { migrationApply: out }, 'statement_failed'),
    });
    return { d, claim };
  }

  it('a partial run writes the annotation before the status, records the run, and is Blocked', () => {
    const { d, claim } = partial();
    const run = d.status.unresolvedRun!;
    assert.deepEqual(
      d.pre.filter((p) => p.kind === 'writeUnresolvedAnnotation'),
      [{ kind: 'writeUnresolvedAnnotation', run }],
    );
    assert.equal(run.outcome, 'Partial');
    assert.equal(run.operationId, claim.operationId);
    assert.equal(run.targetIdentityDigest, TARGET);
    assert.equal(d.status.phase, 'Blocked');
    assert.equal(reasonOf(d, 'Blocked'), 'ApplyOutcomeUnknown');
    assert.equal(d.status.lastRun?.outcome, 'Partial');
    assert.deepEqual(d.status.lastRun?.failure, { version: '3', statementPosition: 2, sqlState: '23505' });
    assert.equal(d.status.plan, undefined);
    assert.equal(d.status.claim, undefined);
    assert.ok(
      validate(ptahMigrationStatus, d.status).ok,
      validate(ptahMigrationStatus, d.status).errors.join(),
    );
  });

  it('never applies again while latched, even with a fresh plan and an approval', () => {
    const { d } = partial();
    const latched = { ...d.status, plan, phase: 'AwaitingApproval' as const };
    const again = step(migration(latched), T0 + 6000, { approvals: [approval()], planCheck: { ok: true } });
    assert.notEqual(again.status.claim?.type, 'Apply');
    // At the interval the history is read; pending versions keep it Blocked and publish nothing.
    const at = T0 + 5000 + 600_000;
    const read = step(migration(d.status), at);
    assert.equal(read.status.claim?.type, 'History');
    const r = step(migration(read.status), at + 1000, {
      job: finished('h2'),
      harvest: frame(read.status.claim!, 'succeeded', {
        history: history({ verdict: 'dirty', pending: [] }),
      }),
      published: plan,
    });
    assert.equal(r.status.phase, 'Blocked');
    assert.equal(reasonOf(r, 'Blocked'), 'ApplyOutcomeUnknown');
    assert.equal(r.status.plan, undefined);
    assert.ok(r.status.unresolvedRun);
  });

  it('is released by a history read of the same database showing nothing pending, copy removed after', () => {
    const { d } = partial();
    const at = T0 + 5000 + 600_000;
    const read = step(migration(d.status, spec(), { unresolvedAnnotation: d.status.unresolvedRun! }), at);
    const settled = step(
      migration(read.status, spec(), { unresolvedAnnotation: d.status.unresolvedRun! }),
      at + 1000,
      {
        job: finished('h2'),
        harvest: frame(read.status.claim!, 'succeeded', {
          history: history({ verdict: 'up_to_date', pending: [], pendingCount: 0, currentVersion: '3' }),
        }),
      },
    );
    assert.equal(settled.status.unresolvedRun, undefined);
    assert.equal(settled.status.resolvedRun?.resolution, 'HistoryRead');
    assert.ok(settled.post.some((p) => p.kind === 'removeUnresolvedAnnotation'));
    assert.ok(!settled.pre.some((p) => p.kind === 'writeUnresolvedAnnotation'));
    assert.equal(settled.status.phase, 'InSync');
  });

  it('a history of another database cannot release it', () => {
    const { d } = partial();
    const at = T0 + 5000 + 600_000;
    const read = step(migration(d.status), at);
    const r = step(migration(read.status), at + 1000, {
      job: finished('h2'),
      harvest: frame(
        read.status.claim!,
        'succeeded',
        { history: history({ verdict: 'up_to_date', pending: [], pendingCount: 0 }) },
        undefined,
        digest('8'),
      ),
    });
    assert.ok(r.status.unresolvedRun);
    assert.equal(r.status.phase, 'Blocked');
  });

  const ack = (over: Partial<AcknowledgmentView> = {}): AcknowledgmentView => ({
    name: 'ack',
    uid: 'ack-1',
    createdAt: new Date(T0 + 6000).toISOString(),
    migrationRef: { name: 'orders', uid: 'uid-m' },
    operationId: '',
    acknowledgedBy: { username: 'bob', groups: ['dba'] },
    acknowledgedAt: new Date(T0 + 6000).toISOString(),
    mutationRequestUID: 'req-ack',
    consumed: false,
    stale: false,
    ...over,
  });

  it('is released by a stamped acknowledgment naming its operation id, even while suspended', () => {
    const { d } = partial();
    const run = d.status.unresolvedRun!;
    const suspended = spec({ suspend: true });
    const r = decideMigration(
      input(migration(d.status, suspended, { unresolvedAnnotation: run }), T0 + 7000, {
        acknowledgments: [ack({ operationId: run.operationId })],
      }),
    );
    assert.equal(r.status.unresolvedRun, undefined);
    assert.equal(r.status.resolvedRun?.resolution, 'Acknowledged');
    assert.deepEqual(r.status.resolvedRun?.acknowledgedBy, { username: 'bob', groups: ['dba'] });
    assert.deepEqual(r.status.resolvedRun?.acknowledgmentRef, { name: 'ack', uid: 'ack-1' });
    assert.ok(r.post.some((p) => p.kind === 'markAcknowledgment' && p.condition === 'Consumed'));
    assert.ok(r.post.some((p) => p.kind === 'removeUnresolvedAnnotation'));
    assert.equal(r.status.journal!.entries.at(-1)!.type, 'RunAcknowledged');
    assert.equal(r.status.phase, 'Suspended');
  });

  it('an acknowledgment naming another run, or one nobody stamped, settles nothing', () => {
    const { d } = partial();
    const run = d.status.unresolvedRun!;
    const r = step(migration(d.status), T0 + 7000, {
      acknowledgments: [
        ack({ operationId: digest('7') }),
        ack({ name: 'forged', uid: 'ack-2', operationId: run.operationId, mutationRequestUID: undefined }),
      ],
    });
    assert.ok(r.status.unresolvedRun);
    const stale = r.post.filter((p) => p.kind === 'markAcknowledgment');
    assert.deepEqual(
      stale.map((p) => p.kind === 'markAcknowledgment' && [p.name, p.condition, p.reason]),
      [['ack', 'Stale', 'RunNotUnresolved']],
    );
  });

  it('a Job missing after dispatch is Unknown and latched; it is never created again', () => {
    const { status } = dispatched();
    const d = step(migration(status), T0 + 5000, { job: { state: 'absent' } });
    assert.equal(d.status.unresolvedRun?.outcome, 'Unknown');
    assert.ok(!d.post.some((p) => p.kind === 'createJob'));
    assert.equal(d.status.lastRun?.outcome, 'Unknown');
  });

  it('a finished Apply whose result cannot be read is Unknown, never a success', () => {
    const { status, claim } = dispatched();
    const d = step(migration(status), T0 + 5000 + 200_000, {
      job: finished(),
      harvest: { kind: 'refused', message: 'no frame' },
    });
    assert.equal(d.status.unresolvedRun?.outcome, 'Unknown');
    assert.equal(d.status.unresolvedRun?.operationId, claim.operationId);
  });

  it('a lost realm Lease makes a dispatched run Unknown', () => {
    const { status } = dispatched();
    const withEpoch = { ...status, claim: { ...status.claim!, leaseEpoch: 'e1' } };
    const d = step(migration(withEpoch), T0 + 5000, {
      job: { state: 'running', uid: 'job-uid' },
      leaseContinuityLost: true,
    });
    assert.equal(d.status.unresolvedRun?.outcome, 'Unknown');
  });

  it('a restore that drops status but keeps the annotation brings the run back, with a Warning', () => {
    const { d } = partial();
    const run = d.status.unresolvedRun!;
    const restored = step(migration({}, spec(), { unresolvedAnnotation: run }), T0 + 8000);
    assert.deepEqual(restored.status.unresolvedRun, run);
    assert.ok(restored.events.some((e) => e.reason === 'UnresolvedRunRestored' && e.type === 'Warning'));
    assert.notEqual(restored.status.claim?.type, 'Apply');
  });

  it('a status record without its copy gets it written again before the status', () => {
    const { d } = partial();
    const r = step(migration(d.status), T0 + 6000);
    assert.deepEqual(r.pre[0], { kind: 'writeUnresolvedAnnotation', run: d.status.unresolvedRun });
  });

  it('the annotation is checked: anything but a run record is invalid', () => {
    assert.equal(parseUnresolvedAnnotation('{"outcome":"Applied"}'), 'invalid');
    assert.equal(parseUnresolvedAnnotation('not json'), 'invalid');
    const { d } = partial();
    assert.deepEqual(
      parseUnresolvedAnnotation(JSON.stringify(d.status.unresolvedRun)),
      d.status.unresolvedRun,
    );
  });
});

describe('migration decide: read requests, suspend and delete', () => {
  it('a read request in a settled phase makes the next read due now, once', () => {
    const waiting = awaiting();
    const d = step(migration(waiting), T0 + 5000, { readRequestedAt: '2026-01-01T00:00:04Z' });
    assert.equal(d.status.lastReadRequest, '2026-01-01T00:00:04Z');
    assert.equal(d.status.nextReconciliationTime, new Date(T0 + 5000).toISOString());
    assert.ok(d.events.some((e) => e.reason === 'ReadRequested'));
    assert.deepEqual(d.status.plan, plan, 'a waiting plan is kept unless the reading retires it');
    const next = step(migration(d.status), T0 + 5001, { readRequestedAt: '2026-01-01T00:00:04Z' });
    assert.equal(next.status.claim?.type, 'History');
    assert.ok(!next.events.some((e) => e.reason === 'ReadRequested'));
  });

  it('a read request that is not an instant starts nothing and is reported once', () => {
    const waiting = awaiting();
    const d = step(migration(waiting), T0 + 5000, { readRequestedAt: 'soon' });
    assert.equal(d.status.claim, undefined);
    assert.ok(d.events.some((e) => e.reason === 'ReadRequestInvalid'));
    const again = step(migration(d.status), T0 + 5001, { readRequestedAt: 'soon' });
    assert.ok(!again.events.some((e) => e.reason === 'ReadRequestInvalid'));
  });

  it('a read under way does not answer a request made during it', () => {
    const first = step(migration({}), T0);
    const d = step(migration(first.status), T0 + 10, {
      readRequestedAt: '2026-01-01T00:00:00Z',
      job: { state: 'running', uid: 'j' },
    });
    assert.equal(d.status.lastReadRequest, undefined);
  });

  it('a new execution binding epoch withdraws a read of the old one but observes a dispatched Apply', () => {
    const first = step(migration({}), T0);
    assert.equal(first.status.claim?.type, 'History');
    const upgraded = { ...executionBinding, epoch: 'v1-' + 'f'.repeat(32), controllerStateVersion: 2 };
    const w = step(migration(first.status), T0 + 10, {
      executionBinding: upgraded,
      job: { state: 'running', uid: 'j' },
    });
    assert.equal(w.status.claim, undefined);
    assert.equal(w.status.executionBinding?.epoch, upgraded.epoch);
    assert.deepEqual(
      w.events.map((e) => e.reason),
      ['ExecutionBindingChanged'],
    );
    const { status } = dispatched();
    const a = step(migration(status), T0 + 5000, {
      executionBinding: upgraded,
      job: { state: 'running', uid: 'job-uid' },
    });
    assert.equal(a.status.claim?.type, 'Apply');
    assert.equal(a.status.claim?.executionEpoch, executionBinding.epoch);

    // Its Job ends: what it reported is never read; the run is latched as unknown, and the history is read
    // afresh at once: only a reading that shows nothing pending (or an acknowledgment) settles it.
    const ended = step(migration(a.status), T0 + 9000, {
      executionBinding: upgraded,
      job: { state: 'finished', uid: 'job-uid', succeeded: true },
      harvest: { kind: 'unavailable', message: 'never consulted' },
    });
    assert.deepEqual(
      ended.post.filter((p) => p.kind === 'finishJob'),
      [
        {
          kind: 'finishJob',
          jobName: a.status.claim!.jobName,
          jobUID: 'job-uid',
          operationId: a.status.claim!.operationId,
        },
      ],
    );
    assert.equal(ended.status.claim, undefined);
    assert.equal(ended.status.unresolvedRun?.outcome, 'Unknown');
    assert.equal(ended.status.unresolvedRun?.jobName, a.status.claim!.jobName);
    assert.deepEqual(
      ended.events.filter((e) => e.reason === 'ApplyOutcomeUnknown').map((e) => e.message),
      [
        `run ${a.status.claim!.jobName} ran under execution binding epoch ${executionBinding.epoch}, retired by ${upgraded.epoch}: its result is not read`,
        `run ${a.status.claim!.jobName} ended unknown: no Apply runs until a history read shows nothing pending or a PtahMigrationRunAcknowledgment names operation ${a.status.claim!.operationId}`,
      ],
    );
    assert.equal(ended.status.phase, 'Blocked');
    assert.equal(ended.status.nextReconciliationTime, new Date(T0 + 9000).toISOString());
    assert.equal(ended.requeueAfterMs, 0);
    const read = step(migration(ended.status), T0 + 9001, { executionBinding: upgraded });
    assert.equal(read.status.claim?.type, 'History');
    assert.equal(read.status.claim?.executionEpoch, upgraded.epoch);
  });

  it('an Apply another process dispatched that this release does not build the same latches unknown', () => {
    const { status, claim } = dispatched();
    const ended = step(migration(status), T0 + 9000, {
      job: { state: 'finished', uid: 'job-uid', succeeded: true },
      unconfirmedJob: 'spec.template.spec.containers[name=ptah].image differs',
    });
    assert.equal(ended.status.unresolvedRun?.outcome, 'Unknown');
    assert.equal(ended.status.phase, 'Blocked');
    assert.match(
      ended.events.find((e) => e.reason === 'ApplyOutcomeUnknown')?.message ?? '',
      new RegExp(`^apply ${claim.jobName} was dispatched by another manager process`),
    );
    assert.ok(ended.post.some((p) => p.kind === 'finishJob'));
    assert.equal(step(migration(ended.status), T0 + 9001).status.claim?.type, 'History');
  });

  it('suspension withdraws a read but observes a dispatched Apply to its end', () => {
    const first = step(migration({}), T0);
    const suspended = spec({ suspend: true });
    const w = step(migration(first.status, suspended), T0 + 10, { job: { state: 'running', uid: 'j' } });
    assert.equal(w.status.claim, undefined);
    const { status } = dispatched();
    const a = step(migration(status, suspended), T0 + 5000, { job: { state: 'running', uid: 'job-uid' } });
    assert.equal(a.status.claim?.type, 'Apply');
    assert.ok(a.pre.some((p) => p.kind === 'acquireLease'));
  });

  it('deletion waits for a dispatched Apply, journals its outcome, then removes the guard', () => {
    const { status, claim } = dispatched();
    const deleting = { deleting: true };
    const wait = step(migration(status, spec(), deleting), T0 + 5000, {
      job: { state: 'running', uid: 'job-uid' },
    });
    assert.ok(!wait.post.some((p) => p.kind === 'removeFinalizer'));
    const out: MigrationApplyOutputs = {
      runOutcome: 'applied',
      mutationStarted: true,
      appliedVersions: ['2', '3'],
    };
    const done = step(migration(status, spec(), deleting), T0 + 6000, {
      job: finished(),
      harvest: frame(claim, 'succeeded', { migrationApply: out }),
    });
    assert.deepEqual(
      done.post.map((p) => p.kind),
      ['finishJob', 'releaseLease', 'removeFinalizer'],
    );
    assert.equal(done.status.journal!.entries.at(-1)!.type, 'RunFinished');
    assert.equal(done.status.journal!.entries.at(-1)!.outcome, 'Applied');
  });

  it('deleting with an unresolved run warns that it is discarded', () => {
    const { status } = dispatched();
    const run: UnresolvedRun = {
      outcome: 'Unknown',
      operationId: status.claim!.operationId,
      jobName: status.claim!.jobName,
      recordedAt: new Date(T0).toISOString(),
    };
    const d = step(
      migration({ ...status, claim: undefined, unresolvedRun: run }, spec(), { deleting: true }),
      T0 + 9000,
    );
    assert.ok(d.events.some((e) => e.reason === 'UnresolvedRunDiscarded'));
    assert.ok(d.post.some((p) => p.kind === 'removeFinalizer'));
  });
});
