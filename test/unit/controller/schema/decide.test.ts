import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import type { RunnerResult } from '../../../../src/protocol/result.ts';
import { decide, type DecideInput, type Decision } from '../../../../src/controller/schema/decide.ts';
import type { PlanPublication } from '../../../../src/controller/decision/durable-writes.ts';
import type { PtahSchemaPlan } from '../../../../src/api/ptah-schema-plan.ts';
import type {
  ApprovalView,
  Claim,
  Harvest,
  JobObservation,
  PlanStatus,
  SchemaSpecView,
  SchemaStatus,
  SchemaView,
} from '../../../../src/controller/schema/model.ts';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const digest = (c: string) => `sha256:${c.repeat(64)}`;

function spec(
  over: Partial<SchemaSpecView> = {},
  policy: Partial<SchemaSpecView['policy']> = {},
): SchemaSpecView {
  return {
    engine: 'postgres',
    realm: { kind: 'CoordinationKey', coordinationKey: 'orders' },
    urlFrom: { name: 'db', key: 'url' },
    configMap: { name: 'schema', files: [{ key: 'schema.sql', path: 'schema.sql' }] },
    policy: { apply: 'Always', allowDestructive: false, protectedTables: [], exclude: [], ...policy },
    intervalMs: 600_000,
    failureRetryIntervalMs: 30_000,
    activeDeadlineSeconds: 900,
    suspend: false,
    ...over,
  };
}

function schema(status: SchemaStatus, s: SchemaSpecView = spec(), generation = 1): SchemaView {
  return {
    namespace: 'ns',
    name: 'orders',
    uid: 'uid-1',
    generation,
    deleting: false,
    hasFinalizer: true,
    spec: s,
    status,
  };
}

const resolution = (c = 'a', cmUid = 'cm-1') => ({
  ok: true as const,
  value: {
    sourceType: 'ConfigMap' as const,
    configMapName: 'schema',
    configMapUID: cmUid,
    contentDigest: digest(c),
    snapshotName: `ptah-src-${c.repeat(10)}`,
    fileCount: 1,
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

/** The database every plan in these tests was computed against, and every Pod reports reading. */
const TARGET = digest('9');

function input(s: SchemaView, at: number, extra: Partial<DecideInput> = {}): DecideInput {
  return {
    appliedPlanTargetIdentity: TARGET,
    now: new Date(at),
    schema: s,
    engineSupported: true,
    realm: { admitted: true },
    coordinationDigest: digest('c'),
    executionBinding,
    resolution: resolution(),
    approvals: [],
    ...extra,
  };
}

function result(
  claim: Claim,
  outcome: RunnerResult['outcome'],
  outputs: RunnerResult['outputs'],
  code?: string,
  target = TARGET,
): Harvest {
  return {
    kind: 'accepted',
    result: {
      protocolVersion: 1,
      operation: claim.type === 'Observe' ? 'observe' : claim.type === 'Plan' ? 'plan' : 'apply',
      operationId: claim.operationId,
      exitCode: outcome === 'succeeded' ? 0 : 1,
      childExitCode: 0,
      outcome,
      startedAt: 'x',
      finishedAt: 'y',
      outputs,
      target: { dialect: 'postgres', identityDigest: target },
      ...(code ? { error: { code, message: 'm' } } : {}),
    },
  };
}

const drift = {
  reportDigest: digest('d'),
  drifted: true,
  total: 2,
  highestSeverity: 'info',
  categories: { tables_added: 2 },
};
const changes = {
  planOutcome: 'Changes' as const,
  planContentDigest: digest('p'),
  planSize: 10,
  bytesBase64: 'eA==',
};
const noChanges = { planOutcome: 'NoChanges' as const, planContentDigest: digest('0'), planSize: 0 };

function publishedPlan(destructive = false, suffix = '1'): PlanStatus {
  return {
    name: `ptah-plan-${suffix}`,
    uid: `plan-uid-${suffix}`,
    fingerprint: digest(suffix === '1' ? 'f' : 'e'),
    contentDigest: digest('p'),
    destructive,
    statementCount: 1,
    createdAt: new Date(T0).toISOString(),
  };
}

const finished: JobObservation = { state: 'finished', uid: 'job-uid', succeeded: true };

/** Drives the claimed operation through create → finish with the given harvest; returns the decision after. */
function runClaim(s: SchemaView, at: number, harvest: Harvest, extra: Partial<DecideInput> = {}): Decision {
  const claim = s.status.claim!;
  const create = decide(input(s, at, extra));
  assert.ok(
    create.post.some((a) => a.kind === 'createJob' && a.claim.jobName === claim.jobName),
    'the claimed Job is created',
  );
  return decide(
    input(schema(create.status, s.spec, s.generation), at + 1000, { job: finished, harvest, ...extra }),
  );
}

describe('schema lifecycle decision', () => {
  it('records the server an Observe read (MariaDB as the mysql engine, its release), only in allowed words', () => {
    const s = schema(decide(input(schema({}), T0)).status);
    const server = { product: 'MariaDB' as const, version: '10.11.6' };
    const d = runClaim(s, T0, result(s.status.claim!, 'succeeded', { drift: { ...drift, server } }));
    assert.deepEqual(d.status.target?.server, server);
    const forged = { product: 'MariaDB', version: '10.11.6 and more' } as unknown as typeof server;
    const d2 = runClaim(s, T0, result(s.status.claim!, 'succeeded', { drift: { ...drift, server: forged } }));
    assert.equal(d2.status.target?.server, undefined, 'a version outside the pattern is not written');
  });

  it('writes the claim before any Job, then creates exactly that Job', () => {
    const d1 = decide(input(schema({}), T0));
    assert.equal(d1.status.phase, 'Observing');
    assert.equal(d1.status.claim?.type, 'Observe');
    assert.equal(d1.post.filter((a) => a.kind === 'createJob').length, 0, 'no Job in the pass that claims');
    const d2 = decide(input(schema(d1.status), T0 + 10));
    const creates = d2.post.filter((a) => a.kind === 'createJob');
    assert.equal(creates.length, 1);
    assert.equal(creates[0]!.kind === 'createJob' && creates[0]!.claim.jobName, d1.status.claim!.jobName);
    assert.deepEqual(d2.status.claim, d1.status.claim, 'creating the Job does not change the claim');
    // Running: nothing new is created.
    const d3 = decide(input(schema(d1.status), T0 + 20, { job: { state: 'running', uid: 'j' } }));
    assert.equal(d3.post.filter((a) => a.kind === 'createJob').length, 0);
  });

  it('apply Always: Observe → Plan → Apply → proof Observe → proof Plan → InSync', () => {
    let s = schema(decide(input(schema({}), T0)).status);
    let d = runClaim(s, T0, result(s.status.claim!, 'succeeded', { drift }));
    assert.equal(d.status.claim?.type, 'Plan');
    assert.equal(d.status.drift?.total, 2);
    assert.equal(d.status.target?.server, undefined, 'no server is recorded when the runner names none');
    s = schema(d.status);
    // The Plan runs under the realm Lease.
    assert.ok(decide(input(s, T0 + 2000)).pre.some((a) => a.kind === 'acquireLease'));
    d = runClaim(s, T0 + 2000, result(s.status.claim!, 'succeeded', { plan: changes }), {
      published: { plan: publishedPlan() },
    });
    assert.equal(d.status.phase, 'ReadyToApply');
    assert.equal(d.status.plan?.name, 'ptah-plan-1');
    assert.equal(d.status.claim, undefined);
    assert.ok(d.post.some((a) => a.kind === 'releaseLease'));
    s = schema(d.status);
    d = decide(input(s, T0 + 4000, { planCheck: { ok: true } }));
    assert.equal(d.status.claim?.type, 'Apply');
    s = schema(d.status);
    // Dispatch: dispatchStarted is written in the same status write that precedes the create.
    d = decide(input(s, T0 + 5000, { planCheck: { ok: true } }));
    assert.equal(d.status.claim?.dispatchStarted, true);
    assert.equal(d.status.phase, 'Applying');
    // The plan is projected for the Job to mount before the status write that counts it as dispatched.
    assert.deepEqual(d.pre, [
      {
        kind: 'acquireLease',
        durationSeconds: d.pre[0]?.kind === 'acquireLease' ? d.pre[0].durationSeconds : 0,
      },
      { kind: 'projectPlan', plan: { name: 'ptah-plan-1', uid: s.status?.plan?.uid } },
    ]);
    assert.ok(d.post.some((a) => a.kind === 'createJob'));
    s = schema(d.status);
    d = decide(
      input(s, T0 + 6000, {
        job: finished,
        harvest: result(s.status.claim!, 'succeeded', {
          apply: { planContentDigest: digest('p'), mutationStarted: true },
        }),
      }),
    );
    assert.equal(d.status.phase, 'VerifyingConvergence', 'a process exit is not convergence');
    assert.equal(d.status.claim?.type, 'Observe');
    assert.equal(d.status.claim?.planRef?.name, 'ptah-plan-1');
    assert.notEqual(d.status.phase, 'InSync');
    s = schema(d.status);
    assert.ok(
      decide(input(s, T0 + 7000)).pre.some((a) => a.kind === 'acquireLease'),
      'proof runs under the Lease',
    );
    d = runClaim(s, T0 + 7000, result(s.status.claim!, 'succeeded', { drift }));
    assert.equal(d.status.claim?.type, 'Plan');
    assert.equal(d.status.phase, 'VerifyingConvergence');
    s = schema(d.status);
    d = runClaim(s, T0 + 9000, result(s.status.claim!, 'succeeded', { plan: noChanges }));
    assert.equal(d.status.phase, 'InSync');
    assert.equal(d.status.applied?.planRef.name, 'ptah-plan-1');
    assert.equal(d.status.conditions?.find((c) => c.type === 'InSync')?.status, 'True');
    assert.ok(d.status.journal?.entries.some((e) => e.type === 'Verified' && e.outcome === 'InSync'));
    assert.ok(d.requeueAfterMs! > 500_000, 'next refresh at the interval');
  });

  it('a fresh no-change plan without an Apply gives InSync and nothing else', () => {
    let s = schema(decide(input(schema({}), T0)).status);
    let d = runClaim(s, T0, result(s.status.claim!, 'succeeded', { drift }));
    s = schema(d.status);
    d = runClaim(s, T0 + 2000, result(s.status.claim!, 'succeeded', { plan: noChanges }));
    assert.equal(d.status.phase, 'InSync');
    assert.equal(d.status.applied, undefined);
    // Within the interval nothing starts.
    const idle = decide(input(schema(d.status), T0 + 60_000));
    assert.equal(idle.status.claim, undefined);
    // At the interval a refresh starts.
    const refresh = decide(input(schema(d.status), T0 + 700_000));
    assert.equal(refresh.status.claim?.type, 'Observe');
  });

  function toAwaitingApproval(policy: Partial<SchemaSpecView['policy']>, plan = publishedPlan()): SchemaView {
    const sp = spec({}, policy);
    let s = schema(decide(input(schema({}, sp), T0)).status, sp);
    let d = runClaim(s, T0, result(s.status.claim!, 'succeeded', { drift }));
    s = schema(d.status, sp);
    d = runClaim(s, T0 + 2000, result(s.status.claim!, 'succeeded', { plan: changes }), {
      published: { plan },
    });
    return schema(d.status, sp);
  }

  const approval = (over: Partial<ApprovalView> = {}): ApprovalView => ({
    name: 'ok',
    uid: 'appr-1',
    createdAt: new Date(T0).toISOString(),
    schemaRef: { name: 'orders', uid: 'uid-1' },
    planRef: { name: 'ptah-plan-1', uid: 'plan-uid-1' },
    planFingerprint: digest('f'),
    approver: 'approver@example.com',
    approvedAt: new Date(T0).toISOString(),
    mutationRequestUID: 'admission-request-1',
    consumed: false,
    stale: false,
    ...over,
  });

  it('OnApproval waits, refuses inexact approvals, and consumes the exact one once at dispatch', () => {
    const s = toAwaitingApproval({ apply: 'OnApproval' });
    assert.equal(s.status.phase, 'AwaitingApproval');
    const inexact = [
      approval({ planFingerprint: digest('9') }),
      approval({ planRef: { name: 'ptah-plan-1', uid: 'other' } }),
      approval({ schemaRef: { name: 'orders', uid: 'old-uid' } }),
      approval({ approver: undefined }),
      approval({ approvedAt: undefined }),
      approval({ mutationRequestUID: undefined }),
      approval({ consumed: true }),
      approval({ stale: true }),
    ];
    for (const a of inexact) {
      const d = decide(input(s, T0 + 5000, { approvals: [a], planCheck: { ok: true } }));
      assert.equal(d.status.claim, undefined, `not applied with ${JSON.stringify(a)}`);
      assert.equal(d.status.phase, 'AwaitingApproval');
    }
    let d = decide(input(s, T0 + 5000, { approvals: [...inexact, approval()], planCheck: { ok: true } }));
    assert.equal(d.status.claim?.type, 'Apply');
    assert.equal(d.status.claim?.approvalRef?.uid, 'appr-1');
    assert.equal(d.status.plan?.approval?.approver.username, 'approver@example.com');
    d = decide(
      input(schema(d.status, s.spec), T0 + 6000, { approvals: [approval()], planCheck: { ok: true } }),
    );
    const consume = d.post.findIndex((a) => a.kind === 'consumeApproval');
    const create = d.post.findIndex((a) => a.kind === 'createJob');
    assert.ok(consume >= 0 && create > consume, 'consumed before the Job is created');
    assert.ok(d.status.journal?.entries.some((e) => e.type === 'ApprovalAccepted'));
  });

  it('accepts no approval while the approval webhooks are not registered, and says why', () => {
    const s = toAwaitingApproval({ apply: 'OnApproval' });
    const why = 'approvals are not accepted: no MutatingWebhookConfiguration sends …';
    const d = decide(input(s, T0 + 5000, { approvals: [], approvalsRefused: why, planCheck: { ok: true } }));
    assert.equal(d.status.claim, undefined);
    assert.equal(d.status.phase, 'AwaitingApproval');
    const c = d.status.conditions?.find((x) => x.type === 'ApprovalRequired');
    assert.deepEqual([c?.status, c?.reason, c?.message], ['True', 'ApprovalWebhooksMissing', why]);
    const back = decide(
      input(schema(d.status, s.spec), T0 + 6000, { approvals: [], planCheck: { ok: true } }),
    );
    assert.equal(
      back.status.conditions?.find((x) => x.type === 'ApprovalRequired')?.reason,
      'AwaitingApproval',
    );
  });

  it('an approval consumed between claim and dispatch withdraws the Apply', () => {
    const s = toAwaitingApproval({ apply: 'OnApproval' });
    const d1 = decide(input(s, T0 + 5000, { approvals: [approval()], planCheck: { ok: true } }));
    const d2 = decide(
      input(schema(d1.status, s.spec), T0 + 6000, { approvals: [approval({ consumed: true })] }),
    );
    assert.equal(d2.status.claim, undefined);
    assert.ok(!d2.post.some((a) => a.kind === 'createJob'));
  });

  it('a destructive plan with allowDestructive false is Blocked and never applied', () => {
    const s = toAwaitingApproval({ apply: 'Always' }, publishedPlan(true));
    assert.equal(s.status.phase, 'Blocked');
    assert.equal(s.status.conditions?.find((c) => c.type === 'Ready')?.reason, 'DestructiveChangesDisabled');
    const d = decide(input(s, T0 + 5000, { approvals: [approval()], planCheck: { ok: true } }));
    assert.equal(d.status.claim, undefined);
  });

  it('apply Never records plans and applies none', () => {
    const s = toAwaitingApproval({ apply: 'Never' });
    assert.equal(s.status.phase, 'Blocked');
    assert.equal(s.status.plan?.name, 'ptah-plan-1');
    assert.equal(s.status.conditions?.find((c) => c.type === 'Ready')?.reason, 'ApplyDisabled');
    const d = decide(input(s, T0 + 5000, { approvals: [approval()] }));
    assert.equal(d.status.claim, undefined);
    // A blocked resource still refreshes on its interval.
    assert.equal(decide(input(s, T0 + 700_000)).status.claim?.type, 'Observe');
  });

  it('a protected table ends in Blocked with no plan published and no failure', () => {
    let s = schema(decide(input(schema({}), T0)).status);
    let d = runClaim(s, T0, result(s.status.claim!, 'succeeded', { drift }));
    s = schema(d.status);
    d = runClaim(s, T0 + 2000, result(s.status.claim!, 'refused', {}, 'protected_table'));
    assert.equal(d.status.phase, 'Blocked');
    assert.equal(d.status.plan, undefined);
    assert.equal(d.status.conditions?.find((c) => c.type === 'PlanReady')?.reason, 'ProtectedTable');
    assert.ok(!d.status.journal?.entries.some((e) => e.type === 'OperationFailed'));
  });

  it('an edit to a selected key retires the waiting plan and starts a new read; the same digest keeps it', () => {
    const s = toAwaitingApproval({ apply: 'OnApproval' });
    const same = decide(input(s, T0 + 5000, { resolution: resolution('a') }));
    assert.equal(same.status.plan?.name, 'ptah-plan-1');
    assert.equal(same.status.claim, undefined);
    const edited = decide(input(s, T0 + 5000, { resolution: resolution('b') }));
    assert.equal(edited.status.plan, undefined);
    assert.equal(edited.status.claim?.type, 'Observe');
    assert.equal(edited.status.resolution?.contentDigest, digest('b'));
    assert.ok(edited.post.some((a) => a.kind === 'staleApprovals'));
    const recreated = decide(input(s, T0 + 5000, { resolution: resolution('a', 'cm-2') }));
    assert.equal(recreated.status.plan, undefined, 'another ConfigMap of the same name retires the plan');
  });

  it('restart between claim and Job: the claimed Job is created once under the claimed name', () => {
    const d1 = decide(input(schema({}), T0));
    // A new manager process sees the same status and no Job: it creates the claimed Job, no other.
    const again = decide(input(schema(d1.status), T0 + 60_000, { job: { state: 'absent' } }));
    const creates = again.post.filter((a) => a.kind === 'createJob');
    assert.equal(creates.length, 1);
    assert.equal(
      creates[0]!.kind === 'createJob' && creates[0]!.claim.operationId,
      d1.status.claim!.operationId,
    );
    // The name is read from the claim, not re-derived: derived now, it would be another name.
    assert.equal(creates[0]!.kind === 'createJob' && creates[0]!.claim.jobName, d1.status.claim!.jobName);
    assert.deepEqual(again.status.claim, d1.status.claim);
  });

  it('a periodic refresh with unchanged inputs claims a new Job name', () => {
    let s = schema(decide(input(schema({}), T0)).status);
    const first = s.status.claim!;
    let d = runClaim(s, T0, result(first, 'succeeded', { drift }));
    s = schema(d.status);
    d = runClaim(s, T0 + 2000, result(s.status.claim!, 'succeeded', { plan: noChanges }));
    assert.equal(d.status.phase, 'InSync');
    const refresh = decide(input(schema(d.status), T0 + 700_000)).status.claim!;
    assert.equal(refresh.type, 'Observe');
    assert.equal(refresh.inputsFingerprint, first.inputsFingerprint, 'nothing it is decided from changed');
    // The first Observe's Job may still linger for its TTL; the same name would harvest its old result.
    assert.notEqual(refresh.operationId, first.operationId);
    assert.notEqual(refresh.jobName, first.jobName);
  });

  it('a claim binds everything its operation is decided from', () => {
    const fingerprint = (s: SchemaView, extra: Partial<DecideInput> = {}) =>
      decide(input(s, T0, extra)).status.claim!.inputsFingerprint;
    const base = fingerprint(schema({}));
    const variations: [string, string][] = [
      ['content', fingerprint(schema({}), { resolution: resolution('b') })],
      ['source ConfigMap', fingerprint(schema({}), { resolution: resolution('a', 'cm-2') })],
      ['realm', fingerprint(schema({}), { coordinationDigest: digest('9') })],
      ['policy', fingerprint(schema({}, spec({}, { protectedTables: ['audit'] })))],
      ['deadline', fingerprint(schema({}, spec({ activeDeadlineSeconds: 901 })))],
      [
        'execution binding',
        fingerprint(schema({}), { executionBinding: { ...executionBinding, runnerImage: 'runner:2' } }),
      ],
    ];
    for (const [name, value] of variations) assert.notEqual(value, base, name);
    assert.equal(fingerprint(schema({})), base, 'and nothing else');
  });

  it('an Apply claim binds its plan and the approval it consumes', () => {
    const applyClaim = (s: SchemaView, approvals: ApprovalView[]) =>
      decide(input(s, T0 + 5000, { approvals, planCheck: { ok: true } })).status.claim!;
    const s = toAwaitingApproval({ apply: 'OnApproval' });
    const a = applyClaim(s, [approval()]);
    assert.equal(a.type, 'Apply');
    const other = applyClaim(s, [approval({ name: 'ok-2', uid: 'appr-2' })]);
    assert.equal(other.approvalRef?.uid, 'appr-2');
    assert.notEqual(other.inputsFingerprint, a.inputsFingerprint);
    const s2 = toAwaitingApproval({ apply: 'OnApproval' }, publishedPlan(false, '2'));
    const onPlan2 = applyClaim(s2, [
      approval({ planRef: { name: 'ptah-plan-2', uid: 'plan-uid-2' }, planFingerprint: digest('e') }),
    ]);
    assert.equal(onPlan2.planRef?.uid, 'plan-uid-2');
    assert.notEqual(onPlan2.inputsFingerprint, a.inputsFingerprint);
  });

  it('a dispatched Apply whose Job is missing is never recreated: its outcome is unknown and proven by reading', () => {
    const s = toAwaitingApproval({ apply: 'Always' });
    let d = decide(input(s, T0 + 4000, { planCheck: { ok: true } }));
    d = decide(input(schema(d.status, s.spec), T0 + 5000, { planCheck: { ok: true } }));
    assert.equal(d.status.claim?.dispatchStarted, true);
    const after = decide(input(schema(d.status, s.spec), T0 + 9000, { job: { state: 'absent' } }));
    assert.ok(!after.post.some((a) => a.kind === 'createJob'));
    assert.equal(after.status.claim?.type, 'Observe');
    assert.equal(after.status.phase, 'VerifyingConvergence');
    assert.ok(
      after.status.journal?.entries.some((e) => e.type === 'ApplyFinished' && e.outcome === 'Unknown'),
    );
  });

  it('an Apply whose frame is unreadable is an unknown outcome, never a success', () => {
    const s = toAwaitingApproval({ apply: 'Always' });
    let d = decide(input(s, T0 + 4000, { planCheck: { ok: true } }));
    d = decide(input(schema(d.status, s.spec), T0 + 5000, { planCheck: { ok: true } }));
    d = decide(
      input(schema(d.status, s.spec), T0 + 6000, {
        job: finished,
        harvest: { kind: 'refused', message: 'result frame is corrupt' },
      }),
    );
    assert.equal(d.status.phase, 'VerifyingConvergence');
    assert.notEqual(d.status.applied?.planRef.name, 'ptah-plan-1');
  });

  it('a read-only failure goes to Failed and retries after the retry interval', () => {
    const s = schema(decide(input(schema({}), T0)).status);
    const d = runClaim(s, T0, result(s.status.claim!, 'failed', {}, 'connection_failed'));
    assert.equal(d.status.phase, 'Failed');
    assert.equal(
      d.status.conditions?.find((c) => c.type === 'ReconciliationFailed')?.reason,
      'ConnectionFailed',
    );
    assert.equal(d.requeueAfterMs, 30_000);
    assert.equal(decide(input(schema(d.status), T0 + 10_000)).status.claim, undefined);
    assert.equal(decide(input(schema(d.status), T0 + 40_000)).status.claim?.type, 'Observe');
  });

  it('a snapshot refused by the init container fails the operation naming the file', () => {
    const s = schema(decide(input(schema({}), T0)).status);
    const d = runClaim(s, T0, { kind: 'snapshot-refused', file: 'schema.sql' });
    assert.equal(d.status.phase, 'Failed');
    assert.match(d.status.conditions!.find((c) => c.type === 'ReconciliationFailed')!.message, /schema\.sql/);
  });

  it('a source refused by the fetch init container fails the operation with the runner’s reason', () => {
    const s = schema(decide(input(schema({}), T0)).status);
    const line = 'ptah git: CommitUnreachable: the server no longer gives the commit';
    const d = runClaim(s, T0, {
      kind: 'source-refused',
      container: 'fetch-source',
      code: 'commit_unreachable',
      detail: line,
    });
    assert.equal(d.status.phase, 'Failed');
    const failed = d.status.conditions!.find((c) => c.type === 'ReconciliationFailed')!;
    assert.equal(failed.reason, 'ArtifactFetchFailed');
    assert.equal(
      failed.message,
      `the fetch-source init container stopped the Pod (commit_unreachable); nothing ran: ${line}`,
    );
  });

  it('suspend withdraws a read-only claim but never a dispatched Apply', () => {
    const sp = spec({ suspend: true });
    const claimed = decide(input(schema({}), T0)).status;
    const d = decide(input(schema(claimed, sp), T0 + 1000, { job: { state: 'running', uid: 'j' } }));
    assert.equal(d.status.claim, undefined);
    const idle = decide(input(schema(d.status, sp), T0 + 2000));
    assert.equal(idle.status.phase, 'Suspended');

    const s = toAwaitingApproval({ apply: 'Always' });
    let a = decide(input(s, T0 + 4000, { planCheck: { ok: true } }));
    a = decide(input(schema(a.status, s.spec), T0 + 5000, { planCheck: { ok: true } }));
    const suspended = decide(
      input(schema(a.status, { ...s.spec, suspend: true }), T0 + 6000, {
        job: { state: 'running', uid: 'j' },
      }),
    );
    assert.equal(suspended.status.claim?.type, 'Apply', 'a running Apply is still observed to its end');
  });

  it('a new execution binding epoch withdraws a read-only claim of the old one, never a dispatched Apply', () => {
    const claimed = decide(input(schema({}), T0)).status;
    assert.equal(claimed.claim?.type, 'Observe');
    assert.equal(claimed.executionBinding?.epoch, executionBinding.epoch);
    const upgraded = { ...executionBinding, epoch: 'v1-' + 'f'.repeat(32), managerRevision: 'rev-2' };
    const d = decide(
      input(schema(claimed), T0 + 1000, { executionBinding: upgraded, job: { state: 'running', uid: 'j' } }),
    );
    assert.equal(d.status.claim, undefined, 'what it reads would be state of the retired epoch');
    assert.equal(d.status.executionBinding?.epoch, upgraded.epoch);
    assert.deepEqual(
      d.post.filter((a) => a.kind === 'finishJob').map((a) => a.kind === 'finishJob' && a.jobName),
      [claimed.claim!.jobName],
    );
    assert.deepEqual(
      d.events.map((e) => [e.reason, e.message]),
      [
        [
          'ExecutionBindingChanged',
          `operation Observe withdrawn: it was claimed under execution binding epoch ${executionBinding.epoch}, retired by ${upgraded.epoch}`,
        ],
      ],
    );
    // The same epoch again is no rotation: the claim runs on.
    const kept = decide(input(schema(claimed), T0 + 1000, { job: { state: 'running', uid: 'j' } }));
    assert.equal(kept.status.claim?.operationId, claimed.claim!.operationId);

    const s = toAwaitingApproval({ apply: 'Always' });
    let a = decide(input(s, T0 + 4000, { planCheck: { ok: true } }));
    a = decide(input(schema(a.status, s.spec), T0 + 5000, { planCheck: { ok: true } }));
    assert.equal(a.status.claim?.dispatchStarted, true);
    const running = decide(
      input(schema(a.status, s.spec), T0 + 6000, {
        executionBinding: upgraded,
        job: { state: 'running', uid: 'j' },
      }),
    );
    assert.equal(running.status.claim?.type, 'Apply', 'a dispatched Apply is observed to its end');
    assert.equal(running.status.claim?.executionEpoch, executionBinding.epoch, 'the claim names its epoch');
    assert.ok(
      running.pre.some((p) => p.kind === 'acquireLease'),
      'its hold is kept while it runs',
    );

    // Its Job ends (the Job controller sets the terminal condition once every Pod of it is gone): the result
    // it reported is never read, the Job gets only its TTL, and a fresh observation is claimed.
    const ended = decide(
      input(schema(running.status, s.spec), T0 + 9000, {
        executionBinding: upgraded,
        job: { state: 'finished', uid: 'j', succeeded: true },
        harvest: result(running.status.claim!, 'succeeded', {
          apply: { planContentDigest: digest('p'), mutationStarted: true },
        }),
      }),
    );
    assert.deepEqual(
      ended.post.filter((a) => a.kind === 'finishJob'),
      [
        {
          kind: 'finishJob',
          jobName: running.status.claim!.jobName,
          jobUID: 'j',
          operationId: running.status.claim!.operationId,
        },
      ],
    );
    assert.deepEqual(
      ended.events.map((e) => [e.type, e.reason, e.message]),
      [
        [
          'Warning',
          'ApplyOutcomeUnknown',
          `apply ${running.status.claim!.jobName} ran under execution binding epoch ${executionBinding.epoch}, retired by ${upgraded.epoch}: its result is not read, and a fresh observation decides`,
        ],
      ],
    );
    assert.equal(ended.status.claim?.type, 'Observe');
    assert.equal(ended.status.claim?.applyOutcome, 'Unknown', 'the success it reported is not certified');
    assert.equal(
      ended.status.claim?.executionEpoch,
      upgraded.epoch,
      'the fresh read belongs to the new epoch',
    );
    assert.deepEqual(
      ended.status.journal?.entries
        .filter((e) => e.type === 'ApplyFinished')
        .map((e) => e.type === 'ApplyFinished' && e.outcome),
      ['Unknown'],
    );

    // An Apply dispatched before claims named their epoch takes the one the resource recorded, for good.
    const { executionEpoch: _unnamed, ...legacy } = running.status.claim!;
    const stamped = decide(
      input(schema({ ...a.status, claim: legacy }, s.spec), T0 + 6000, {
        executionBinding: upgraded,
        job: { state: 'running', uid: 'j' },
      }),
    );
    assert.equal(stamped.status.claim?.executionEpoch, executionBinding.epoch);
  });

  it('an Apply another process dispatched that this release does not build the same is never read', () => {
    const s = toAwaitingApproval({ apply: 'Always' });
    let a = decide(input(s, T0 + 4000, { planCheck: { ok: true } }));
    a = decide(input(schema(a.status, s.spec), T0 + 5000, { planCheck: { ok: true } }));
    assert.equal(a.status.claim?.dispatchStarted, true);
    const claim = a.status.claim!;
    const ended = decide(
      input(schema(a.status, s.spec), T0 + 9000, {
        job: { state: 'finished', uid: 'j', succeeded: true },
        unconfirmedJob: 'spec.template.spec.containers[name=ptah].image differs',
      }),
    );
    assert.deepEqual(
      ended.post.filter((p) => p.kind === 'finishJob'),
      [{ kind: 'finishJob', jobName: claim.jobName, jobUID: 'j', operationId: claim.operationId }],
    );
    assert.deepEqual(
      ended.events.map((e) => [e.type, e.reason, e.message]),
      [
        [
          'Warning',
          'ApplyOutcomeUnknown',
          `apply ${claim.jobName} was dispatched by another manager process and this release does not build the same Job from its claim (spec.template.spec.containers[name=ptah].image differs): its result is not read, and a fresh read of the database decides`,
        ],
      ],
    );
    assert.equal(ended.status.claim?.type, 'Observe', 'a fresh observation is claimed');
    assert.equal(ended.status.claim?.applyOutcome, 'Unknown');
  });

  it('a withdrawn claim cleans up only the Job whose UID it recorded', () => {
    const claimed = decide(input(schema({}), T0)).status;
    const seen = decide(
      input(schema(claimed), T0 + 1000, { job: { state: 'running', uid: 'job-uid' } }),
    ).status;
    assert.equal(seen.claim?.jobUID, 'job-uid');
    const d = decide(
      input(schema(seen, spec({ suspend: true })), T0 + 2000, { job: { state: 'running', uid: 'job-uid' } }),
    );
    assert.equal(d.status.claim, undefined);
    assert.deepEqual(
      d.post.filter((a) => a.kind === 'finishJob'),
      [
        {
          kind: 'finishJob',
          jobName: seen.claim!.jobName,
          jobUID: 'job-uid',
          operationId: seen.claim!.operationId,
        },
      ],
    );
  });

  it('a running Job stuck on a missing credential fails now: the Job goes, the cause names the Secret', () => {
    const claimed = decide(input(schema({}), T0)).status;
    const message = 'Secret ns/db key url: the Secret does not exist';
    const d = decide(
      input(schema(claimed), T0 + 1000, {
        job: { state: 'running', uid: 'job-uid' },
        harvest: { kind: 'credential-unavailable', message },
      }),
    );
    assert.equal(d.status.phase, 'Failed');
    assert.equal(d.status.claim, undefined);
    const failed = d.status.conditions?.find((c) => c.type === 'ReconciliationFailed');
    assert.equal(failed?.status, 'True');
    assert.equal(failed?.reason, 'CredentialUnavailable');
    assert.equal(failed?.message, message);
    assert.deepEqual(
      d.post.filter((a) => a.kind === 'finishJob'),
      [
        {
          kind: 'finishJob',
          jobName: claimed.claim!.jobName,
          jobUID: 'job-uid',
          operationId: claimed.claim!.operationId,
        },
      ],
    );
    assert.deepEqual(
      d.events.map((e) => [e.type, e.reason]),
      [['Warning', 'CredentialUnavailable']],
    );
    // Without the cause a running Job is simply waited for.
    const waiting = decide(input(schema(claimed), T0 + 1000, { job: { state: 'running', uid: 'job-uid' } }));
    assert.notEqual(waiting.status.phase, 'Failed');
  });

  it('blocks an unsupported engine and a realm conflict before any Job', () => {
    const u = decide(input(schema({}), T0, { engineSupported: false }));
    assert.equal(u.status.phase, 'Blocked');
    assert.equal(u.status.claim, undefined);
    const engine = u.status.conditions?.find((c) => c.type === 'EngineSupported');
    assert.equal(engine?.reason, 'UnsupportedEngine');
    assert.match(engine?.message ?? '', /the schema engine ships postgres/);
    const r = decide(
      input(schema({}), T0, {
        realm: { admitted: false, reason: 'RealmConflict', message: 'two resources claim the realm' },
      }),
    );
    assert.equal(r.status.phase, 'Blocked');
    const ready = r.status.conditions?.find((c) => c.type === 'Ready');
    assert.equal(ready?.reason, 'RealmConflict');
    assert.equal(ready?.message, 'two resources claim the realm');
  });

  it('a realm refusal writes nothing new on a second pass and is lifted at once when the realm admits', () => {
    const refusal = {
      admitted: false,
      reason: 'RealmNotAuthorized',
      message: 'PtahRealm orders does not admit namespace shop for engine postgres: ...',
    } as const;
    const first = decide(input(schema({}), T0, { realm: refusal }));
    assert.equal(first.status.phase, 'Blocked');
    assert.deepEqual(first.post, [], 'nothing runs');
    // The same refusal again: the same status, so no write whose watch event would wake the resource again.
    const again = decide(input(schema(first.status), T0 + 1000, { realm: refusal }));
    assert.deepEqual(again.status, first.status);
    // The admin grants it: nothing about the resource changed, yet its read starts now, not at the interval.
    const admitted = decide(input(schema(first.status), T0 + 2000));
    assert.equal(admitted.status.claim?.type, 'Observe');
  });

  it('a realm that stops admitting the resource withdraws an undispatched Apply, never a dispatched one', () => {
    const refusal = {
      admitted: false,
      reason: 'RealmNotAuthorized',
      message: 'PtahRealm orders does not admit namespace shop for engine postgres: ...',
    } as const;
    const ready = toAwaitingApproval({ apply: 'Always' });
    const claimed = decide(input(ready, T0 + 4000, { planCheck: { ok: true } }));
    assert.equal(claimed.status.claim?.type, 'Apply');
    const withdrawn = decide(
      input(schema(claimed.status, ready.spec), T0 + 5000, { planCheck: { ok: true }, realm: refusal }),
    );
    assert.equal(withdrawn.status.claim, undefined);
    assert.ok(!withdrawn.post.some((a) => a.kind === 'createJob'), 'no Apply Job');
    assert.ok(!withdrawn.pre.some((a) => a.kind === 'acquireLease'), 'no Lease taken');
    assert.deepEqual(
      withdrawn.events.map((e) => [e.type, e.reason, e.message]),
      [['Warning', 'RealmNotAuthorized', `operation Apply withdrawn before it started: ${refusal.message}`]],
    );
    const next = decide(input(schema(withdrawn.status, ready.spec), T0 + 6000, { realm: refusal }));
    assert.equal(next.status.phase, 'Blocked');
    assert.equal(next.status.conditions?.find((c) => c.type === 'Ready')?.reason, 'RealmNotAuthorized');

    // Dispatched before the grant went: it runs to its end, and no Job is touched.
    const dispatched = decide(
      input(schema(claimed.status, ready.spec), T0 + 5000, { planCheck: { ok: true } }),
    );
    assert.equal(dispatched.status.claim?.dispatchStarted, true);
    const running = decide(
      input(schema(dispatched.status, ready.spec), T0 + 6000, {
        job: { state: 'running', uid: 'j' },
        realm: refusal,
      }),
    );
    assert.equal(running.status.claim?.dispatchStarted, true);
    assert.equal(running.status.phase, 'Applying');
    assert.ok(!running.post.some((a) => a.kind === 'finishJob'), 'the running Apply is not deleted');
  });

  it('never runs anything for a resource being deleted', () => {
    const s = { ...schema(decide(input(schema({}), T0)).status), deleting: true };
    const d = decide(input(s, T0 + 1000));
    assert.ok(!d.post.some((a) => a.kind === 'createJob'));
  });

  it('after an Apply of unknown outcome, a fresh plan with changes is the next plan, not a failure', () => {
    const s = toAwaitingApproval({ apply: 'Always' });
    let d = decide(input(s, T0 + 4000, { planCheck: { ok: true } }));
    d = decide(input(schema(d.status, s.spec), T0 + 5000, { planCheck: { ok: true } }));
    d = decide(input(schema(d.status, s.spec), T0 + 9000, { job: { state: 'absent' } }));
    let p = schema(d.status, s.spec);
    d = runClaim(p, T0 + 10_000, result(p.status.claim!, 'succeeded', { drift }));
    p = schema(d.status, s.spec);
    assert.equal(p.status.claim?.type, 'Plan');
    d = runClaim(p, T0 + 12_000, result(p.status.claim!, 'succeeded', { plan: changes }), {
      published: { plan: publishedPlan() },
    });
    assert.equal(d.status.phase, 'ReadyToApply');
    assert.ok(d.status.journal?.entries.some((e) => e.type === 'Verified' && e.outcome === 'DriftRemains'));
    assert.equal(d.status.applied, undefined, 'nothing is recorded as applied');
  });

  it('after an Apply that reported success, remaining changes are a failure retried later, never InSync', () => {
    const s = toAwaitingApproval({ apply: 'Always' });
    let d = decide(input(s, T0 + 4000, { planCheck: { ok: true } }));
    d = decide(input(schema(d.status, s.spec), T0 + 5000, { planCheck: { ok: true } }));
    let p = schema(d.status, s.spec);
    d = decide(
      input(p, T0 + 6000, {
        job: finished,
        harvest: result(p.status.claim!, 'succeeded', {
          apply: { planContentDigest: digest('p'), mutationStarted: true },
        }),
      }),
    );
    p = schema(d.status, s.spec);
    d = runClaim(p, T0 + 7000, result(p.status.claim!, 'succeeded', { drift }));
    p = schema(d.status, s.spec);
    d = runClaim(p, T0 + 9000, result(p.status.claim!, 'succeeded', { plan: changes }), {
      published: { plan: publishedPlan(false, '2') },
    });
    assert.equal(d.status.phase, 'Failed');
    assert.equal(d.status.conditions?.find((c) => c.type === 'InSync')?.reason, 'DriftRemains');
  });

  it('a proof read from another database than the plan was computed against never converges', () => {
    const OTHER = digest('8');
    const s = toAwaitingApproval({ apply: 'Always' });
    let d = decide(input(s, T0 + 4000, { planCheck: { ok: true } }));
    d = decide(input(schema(d.status, s.spec), T0 + 5000, { planCheck: { ok: true } }));
    const p = schema(d.status, s.spec);
    d = decide(
      input(p, T0 + 6000, {
        job: finished,
        harvest: result(p.status.claim!, 'succeeded', {
          apply: { planContentDigest: digest('p'), mutationStarted: true },
        }),
      }),
    );
    const proof = schema(d.status, s.spec);
    assert.equal(proof.status.claim?.type, 'Observe');

    // The Secret was repointed after the Apply: the proof Observe reads another database.
    d = runClaim(proof, T0 + 7000, result(proof.status.claim!, 'succeeded', { drift }, undefined, OTHER));
    assert.equal(d.status.phase, 'Failed');
    assert.equal(d.status.claim, undefined, 'no proof Plan follows');
    assert.equal(d.status.conditions?.find((c) => c.type === 'InSync')?.reason, 'TargetIdentityMismatch');
    assert.equal(
      d.status.conditions?.find((c) => c.type === 'ReconciliationFailed')?.reason,
      'TargetIdentityMismatch',
    );
    assert.notEqual(d.status.target?.identityDigest, OTHER, 'the other identity is not recorded as ours');
    assert.equal(d.status.applied, undefined);
    assert.equal(d.status.plan, undefined, 'the spent plan is not offered again');
    assert.ok(d.post.some((a) => a.kind === 'releaseLease'));

    // Repointed between the proof Observe and the proof Plan: a no-change answer from there is not InSync.
    d = runClaim(proof, T0 + 7000, result(proof.status.claim!, 'succeeded', { drift }));
    const proofPlan = schema(d.status, s.spec);
    assert.equal(proofPlan.status.claim?.type, 'Plan');
    d = runClaim(
      proofPlan,
      T0 + 9000,
      result(proofPlan.status.claim!, 'succeeded', { plan: noChanges }, undefined, OTHER),
    );
    assert.notEqual(d.status.phase, 'InSync');
    assert.equal(d.status.applied, undefined);
    assert.equal(d.status.conditions?.find((c) => c.type === 'InSync')?.reason, 'TargetIdentityMismatch');

    // A proof whose applied plan cannot be read (deleted) proves nothing either.
    d = runClaim(proofPlan, T0 + 9000, result(proofPlan.status.claim!, 'succeeded', { plan: noChanges }), {
      appliedPlanTargetIdentity: undefined,
    });
    assert.notEqual(d.status.phase, 'InSync');
  });

  it('an Apply the runner refused for another target fails with that reason, and nothing is applied', () => {
    const s = toAwaitingApproval({ apply: 'Always' });
    let d = decide(input(s, T0 + 4000, { planCheck: { ok: true } }));
    d = decide(input(schema(d.status, s.spec), T0 + 5000, { planCheck: { ok: true } }));
    const p = schema(d.status, s.spec);
    d = decide(
      input(p, T0 + 6000, {
        job: finished,
        harvest: result(
          p.status.claim!,
          'refused',
          { apply: { planContentDigest: digest('p'), mutationStarted: false } },
          'target_identity_mismatch',
          digest('8'),
        ),
      }),
    );
    assert.equal(d.status.phase, 'Failed');
    assert.equal(
      d.status.conditions?.find((c) => c.type === 'ReconciliationFailed')?.reason,
      'TargetIdentityMismatch',
    );
    assert.equal(d.status.applied, undefined);
    assert.ok(!d.status.journal?.entries.some((e) => e.type === 'ApplyFinished'), 'no Apply is recorded');
    assert.match(
      d.status.conditions?.find((c) => c.type === 'ReconciliationFailed')?.message ?? '',
      /another database than the plan was computed against; nothing ran/,
    );
  });

  it('records the UID of the Job it finds under the claimed name, once, and keeps it while the Job runs', () => {
    const s = schema(decide(input(schema({}), T0)).status);
    assert.equal(s.status.claim!.jobUID, undefined, 'no UID before any Job exists');
    const d = decide(input(s, T0 + 10, { job: { state: 'running', uid: 'job-uid' } }));
    assert.equal(d.status.claim?.jobUID, 'job-uid');
    const again = decide(input(schema(d.status), T0 + 20, { job: { state: 'running', uid: 'job-uid' } }));
    assert.deepEqual(again.status.claim, d.status.claim, 'seeing the same Job changes nothing');
  });

  it('a read-only Job recreated under the claimed name by someone else is never harvested', () => {
    const s0 = schema(decide(input(schema({}), T0)).status);
    const s = schema(decide(input(s0, T0 + 10, { job: { state: 'running', uid: 'job-uid' } })).status);
    // The stranger's Pod reports an in-sync database for this very operation id.
    const d = decide(
      input(s, T0 + 5000, {
        job: { state: 'finished', uid: 'other-uid', succeeded: true },
        harvest: result(s.status.claim!, 'succeeded', { drift }),
      }),
    );
    assert.equal(d.status.drift, undefined, 'nothing it reported is recorded');
    assert.notEqual(d.status.claim?.type, 'Plan', 'its reading does not lead on to a Plan');
    assert.ok(!d.post.some((a) => a.kind === 'finishJob'), "somebody else's Job is left alone");
    assert.ok(d.events.some((e) => e.reason === 'JobReplaced'));
    // The next pass reads afresh under a new Job name.
    const next = decide(input(schema(d.status), T0 + 6000));
    assert.equal(next.status.claim?.type, 'Observe');
    assert.notEqual(next.status.claim?.jobName, s.status.claim!.jobName);
  });

  it('a read-only Job that vanished is created again, and the UID of the vanished one is forgotten', () => {
    const s0 = schema(decide(input(schema({}), T0)).status);
    const s = schema(decide(input(s0, T0 + 10, { job: { state: 'running', uid: 'job-uid' } })).status);
    const d = decide(input(s, T0 + 20, { job: { state: 'absent' } }));
    const create = d.post.find((a) => a.kind === 'createJob');
    assert.equal(create?.kind === 'createJob' && create.claim.jobName, s.status.claim!.jobName);
    assert.equal(d.status.claim?.jobUID, undefined);
    const recreated = decide(input(schema(d.status), T0 + 30, { job: { state: 'running', uid: 'new-uid' } }));
    assert.equal(recreated.status.claim?.jobUID, 'new-uid', 'the Job it created itself is its own again');
  });

  it('an Apply whose Job was recreated by someone else is an unknown outcome, never harvested or redone', () => {
    const s = toAwaitingApproval({ apply: 'Always' });
    let d = decide(input(s, T0 + 4000, { planCheck: { ok: true } }));
    d = decide(input(schema(d.status, s.spec), T0 + 5000, { planCheck: { ok: true } }));
    const apply = d.status.claim!;
    assert.equal(apply.dispatchStarted, true);
    d = decide(input(schema(d.status, s.spec), T0 + 6000, { job: { state: 'running', uid: 'apply-uid' } }));
    assert.equal(d.status.claim?.jobUID, 'apply-uid');
    const after = decide(
      input(schema(d.status, s.spec), T0 + 9000, {
        job: { state: 'finished', uid: 'other-uid', succeeded: true },
        harvest: result(apply, 'succeeded', {}),
      }),
    );
    assert.ok(!after.post.some((a) => a.kind === 'createJob' || a.kind === 'finishJob'));
    assert.equal(after.status.claim?.type, 'Observe', 'a proof reads the database next');
    assert.equal(after.status.phase, 'VerifyingConvergence');
    const finishedEntries = after.status.journal?.entries.filter((e) => e.type === 'ApplyFinished') ?? [];
    assert.deepEqual(
      finishedEntries.map((e) => e.outcome),
      ['Unknown'],
      'the reported success is not believed',
    );
    assert.ok(after.events.some((e) => e.reason === 'ApplyOutcomeUnknown'));
  });

  it('a proof whose Job was recreated by someone else is read again as a proof', () => {
    const s = toAwaitingApproval({ apply: 'Always' });
    let d = decide(input(s, T0 + 4000, { planCheck: { ok: true } }));
    d = decide(input(schema(d.status, s.spec), T0 + 5000, { planCheck: { ok: true } }));
    d = decide(
      input(schema(d.status, s.spec), T0 + 6000, {
        job: finished,
        harvest: result(d.status.claim!, 'succeeded', {}),
      }),
    );
    const proof = d.status.claim!;
    assert.equal(proof.planRef?.name, 'ptah-plan-1');
    d = decide(input(schema(d.status, s.spec), T0 + 7000, { job: { state: 'running', uid: 'proof-uid' } }));
    const after = decide(
      input(schema(d.status, s.spec), T0 + 8000, {
        job: { state: 'finished', uid: 'other-uid', succeeded: true },
        harvest: result(proof, 'succeeded', { drift }),
      }),
    );
    assert.notEqual(after.status.claim?.type, 'Plan', "the stranger's reading proves nothing");
    assert.equal(after.status.claim?.type, 'Observe');
    assert.deepEqual(after.status.claim?.planRef, proof.planRef, 'still a proof of the same Apply');
    assert.notEqual(after.status.claim?.jobName, proof.jobName);
    assert.equal(after.status.phase, 'VerifyingConvergence');
  });

  it('a result produced across a change of the realm Lease epoch is discarded, never read', () => {
    let s = schema(decide(input(schema({}), T0)).status);
    const d = runClaim(s, T0, result(s.status.claim!, 'succeeded', { drift }));
    s = schema({ ...d.status, claim: { ...d.status.claim!, leaseEpoch: 'epoch-1' } });
    const planClaim = s.status.claim!;
    const lost = decide(
      input(s, T0 + 5000, {
        job: finished,
        harvest: result(planClaim, 'succeeded', { plan: noChanges }),
        leaseContinuityLost: true,
      }),
    );
    assert.notEqual(lost.status.phase, 'InSync', 'the no-change answer is not believed');
    assert.equal(lost.status.claim, undefined);
    assert.ok(lost.events.some((e) => e.reason === 'LeaseContinuityLost'));
  });

  describe('deletion', () => {
    function dispatched(): SchemaView {
      const s = toAwaitingApproval({ apply: 'Always' });
      let d = decide(input(s, T0 + 4000, { planCheck: { ok: true } }));
      d = decide(input(schema(d.status, s.spec), T0 + 5000, { planCheck: { ok: true } }));
      assert.equal(d.status.claim?.dispatchStarted, true);
      return { ...schema(d.status, s.spec), deleting: true };
    }
    const kinds = (d: Decision) => [...d.pre.map((a) => a.kind), ...d.post.map((a) => a.kind)];

    it('puts the deletion guard on first, before anything can run', () => {
      const d = decide(input({ ...schema({}), hasFinalizer: false }, T0));
      assert.deepEqual(kinds(d), ['addFinalizer']);
      assert.equal(d.status.claim, undefined);
    });

    it('waits for a dispatched Apply, holding its Lease, and keeps the guard meanwhile', () => {
      const s = dispatched();
      const d = decide(input(s, T0 + 6000, { job: { state: 'running', uid: 'job-uid' } }));
      assert.deepEqual(kinds(d), ['acquireLease']);
      assert.ok(d.requeueAfterMs !== undefined);
    });

    it('journals how the Apply ended, then lets go: no proof, no SQL, the guard removed last', () => {
      const s = dispatched();
      const d = decide(
        input(s, T0 + 7000, {
          job: finished,
          harvest: result(s.status.claim!, 'succeeded', {
            apply: { planContentDigest: digest('p'), mutationStarted: true },
          }),
        }),
      );
      assert.equal(d.status.claim, undefined, 'no proof is claimed');
      assert.ok(!d.post.some((a) => a.kind === 'createJob'));
      assert.equal(kinds(d).at(-1), 'removeFinalizer');
      assert.ok(kinds(d).includes('releaseLease'));
      const entry = d.status.journal?.entries.find((e) => e.type === 'ApplyFinished');
      assert.equal(entry?.outcome, 'Succeeded');
      assert.ok(d.events.some((e) => e.reason === 'ApplyFinished'));
    });

    it('an Apply whose result cannot be read ends as Unknown; a read-only Job is simply stopped', () => {
      const s = dispatched();
      const late = T0 + 7000 + 200_000;
      const d = decide(
        input(s, late, { job: { ...finished, finishedAt: new Date(T0 + 7000).toISOString() } }),
      );
      assert.equal(d.status.journal?.entries.find((e) => e.type === 'ApplyFinished')?.outcome, 'Unknown');
      assert.equal(kinds(d).at(-1), 'removeFinalizer');
      const observing = { ...schema(decide(input(schema({}), T0)).status), deleting: true };
      const r = decide(input(observing, T0 + 1000, { job: { state: 'running', uid: 'j' } }));
      assert.deepEqual(kinds(r), ['finishJob', 'releaseLease', 'removeFinalizer']);
    });
  });

  describe('another realm on the same database', () => {
    const later = { other: 'other-ns/first', later: true, otherApplying: false };

    it('blocks the later resource when it is idle, naming the other', () => {
      const d = decide(input(schema({}), T0, { targetConflict: later }));
      assert.equal(d.status.phase, 'Blocked');
      const ready = d.status.conditions?.find((c) => c.type === 'Ready');
      assert.equal(ready?.reason, 'RealmConflict');
      assert.match(ready!.message, /other-ns\/first/);
      assert.equal(d.status.claim, undefined);
    });

    it('blocks it when its first read reports the database, before any Plan', () => {
      const s = schema(decide(input(schema({}), T0)).status);
      const d = runClaim(s, T0, result(s.status.claim!, 'succeeded', { drift }), { targetConflict: later });
      assert.equal(d.status.phase, 'Blocked');
      assert.notEqual(d.status.claim?.type, 'Plan');
    });

    it('a resource already waiting sees it before its Apply is dispatched', () => {
      const s = toAwaitingApproval({ apply: 'Always' });
      const claimed = decide(input(s, T0 + 4000, { planCheck: { ok: true } }));
      assert.equal(claimed.status.claim?.type, 'Apply');
      const d = decide(
        input(schema(claimed.status, s.spec), T0 + 5000, { planCheck: { ok: true }, targetConflict: later }),
      );
      assert.equal(d.status.phase, 'Blocked');
      assert.ok(!d.post.some((a) => a.kind === 'createJob'));
      assert.notEqual(d.status.claim?.dispatchStarted, true);
    });

    it('the earlier resource waits for the later one to finish its Apply before dispatching its own', () => {
      const s = toAwaitingApproval({ apply: 'Always' });
      const claimed = decide(input(s, T0 + 4000, { planCheck: { ok: true } }));
      const d = decide(
        input(schema(claimed.status, s.spec), T0 + 5000, {
          planCheck: { ok: true },
          targetConflict: { other: 'ns/late', later: false, otherApplying: true },
        }),
      );
      assert.ok(!d.post.some((a) => a.kind === 'createJob'));
      assert.equal(d.status.claim?.type, 'Apply');
      assert.ok(d.requeueAfterMs !== undefined && d.requeueAfterMs > 0);
    });
  });

  describe('the proof after an Apply runs under the Apply hold', () => {
    function applied(
      outcome: 'succeeded' | 'uncertain' = 'succeeded',
      partial?: { position: number; applied: number; errno?: number; sqlstate?: string },
    ): Decision {
      const s = toAwaitingApproval({ apply: 'Always' });
      let d = decide(input(s, T0 + 4000, { planCheck: { ok: true } }));
      d = decide(input(schema(d.status, s.spec), T0 + 5000, { planCheck: { ok: true } }));
      // The I/O layer records the epoch of the hold the Apply was dispatched under.
      const dispatched = { ...d.status, claim: { ...d.status.claim!, leaseEpoch: 'epoch-apply' } };
      return decide(
        input(schema(dispatched, s.spec), T0 + 6000, {
          job: finished,
          harvest: result(dispatched.claim, outcome, {
            apply: { planContentDigest: digest('p'), mutationStarted: true, ...(partial ? { partial } : {}) },
          }),
        }),
      );
    }

    it('a partial MySQL apply is an unknown outcome whose Event names the statement, errno and SQLSTATE', () => {
      const d = applied('uncertain', { position: 2, applied: 1, errno: 1062, sqlstate: '23000' });
      assert.equal(d.status.claim?.type, 'Observe', 'a proof reads the database');
      assert.equal(d.status.claim?.applyOutcome, 'Unknown');
      const finished = d.status.journal?.entries.filter((e) => e.type === 'ApplyFinished');
      assert.deepEqual(
        finished?.map((e) => e.outcome),
        ['Unknown'],
      );
      const event = d.events.find((e) => e.reason === 'ApplyOutcomeUnknown');
      assert.match(
        event?.message ?? '',
        /partially: statement 2 failed \(error 1062, SQLSTATE 23000\) after 1 statement\(s\) committed/,
      );
      // Values that are not what the runner promises are left out rather than echoed.
      const odd = applied('uncertain', { position: 2, applied: 1, errno: -1, sqlstate: "x' OR 1" });
      const text = odd.events.find((e) => e.reason === 'ApplyOutcomeUnknown')?.message ?? '';
      assert.match(text, /statement 2 failed after 1 statement/);
      assert.ok(!text.includes('OR 1'));
    });

    it('inherits the epoch and the outcome of the Apply, in Observe and in Plan', () => {
      const d = applied();
      assert.equal(d.status.claim?.type, 'Observe');
      assert.equal(d.status.claim?.leaseEpoch, 'epoch-apply');
      assert.equal(d.status.claim?.applyOutcome, 'Succeeded');
      const s = schema(d.status);
      const p = runClaim(s, T0 + 7000, result(s.status.claim!, 'succeeded', { drift }));
      assert.equal(p.status.claim?.type, 'Plan');
      assert.equal(p.status.claim?.leaseEpoch, 'epoch-apply');
    });

    it('a hold lost before the proof ran discards it: unknown outcome, a fresh proof under a new hold', () => {
      const s = schema(applied().status);
      const proof = s.status.claim!;
      for (const job of [undefined, finished]) {
        const d = decide(
          input(s, T0 + 7000, {
            leaseContinuityLost: true,
            ...(job ? { job, harvest: result(proof, 'succeeded', { drift }) } : {}),
          }),
        );
        assert.ok(!d.post.some((a) => a.kind === 'createJob'), 'the lost proof never runs or counts');
        assert.notEqual(d.status.claim?.type, 'Plan', 'its reading is not used');
        assert.equal(d.status.claim?.type, 'Observe');
        assert.notEqual(d.status.claim?.jobName, proof.jobName);
        assert.equal(d.status.claim?.leaseEpoch, undefined, 'a new hold, not the lost one');
        assert.equal(d.status.claim?.applyOutcome, 'Unknown');
        assert.equal(d.status.phase, 'VerifyingConvergence');
        assert.equal(d.status.conditions?.find((c) => c.type === 'InSync')?.status, 'Unknown');
        assert.ok(d.events.some((e) => e.reason === 'LeaseContinuityLost'));
        assert.ok(!d.status.journal?.entries.some((e) => e.type === 'Verified'));
        // The fresh proof finding changes: the Apply's outcome was unknown, so it is the next plan.
        const fresh = schema(d.status);
        const o = runClaim(fresh, T0 + 8000, result(fresh.status.claim!, 'succeeded', { drift }));
        const again = schema(o.status);
        const p = runClaim(again, T0 + 9000, result(again.status.claim!, 'succeeded', { plan: changes }), {
          published: { plan: publishedPlan(false, '2') },
        });
        assert.notEqual(p.status.phase, 'Failed');
        assert.equal(p.status.plan?.name, 'ptah-plan-2');
      }
    });
  });

  describe('the stored plan, read back whenever a decision rests on it', () => {
    const stale = (d: Decision) => d.post.filter((a) => a.kind === 'staleApprovals');

    it('a chunk that fails its read-back retires the waiting plan for good, with or without an approval', () => {
      const s = toAwaitingApproval({ apply: 'OnApproval' });
      const tampered = {
        ok: false as const,
        kind: 'tampered' as const,
        failing: 'ptah-plan-1-000',
        reason: 'DigestMismatch',
        message: 'm',
      };
      for (const approvals of [[], [approval()]]) {
        const d = decide(input(s, T0 + 5000, { approvals, planCheck: tampered }));
        assert.equal(d.status.plan, undefined, 'the plan is retired');
        assert.notEqual(d.status.claim?.type, 'Apply', 'never applied');
        assert.equal(d.status.claim?.type, 'Observe', 'a fresh read re-plans');
        assert.deepEqual(d.status.retiredPlans, [
          { name: 'ptah-plan-1', uid: 'plan-uid-1', fingerprint: digest('f'), reason: 'PlanTampered' },
        ]);
        assert.deepEqual(
          stale(d).map((a) => a.kind === 'staleApprovals' && a.reason),
          ['PlanTampered'],
        );
        const event = d.events.find((e) => e.reason === 'PlanTampered');
        assert.equal(event?.type, 'Warning');
        assert.match(event!.message, /chunk ptah-plan-1-000/);
      }
    });

    for (const [field, reason, journalReason] of [
      ['runnerImage', 'ExecutionBindingChanged', 'ExecutionBindingChanged'],
      ['executionEpoch', 'ExecutionBindingChanged', 'ExecutionBindingChanged'],
      ['policyFingerprint', 'Superseded', 'LiveBindingChanged'],
    ] as const) {
      it(`a binding that no longer matches the live inputs (${field}) supersedes the plan, in the journal, as ${reason}`, () => {
        const s = toAwaitingApproval({ apply: 'OnApproval' });
        const d = decide(
          input(s, T0 + 5000, {
            approvals: [approval()],
            planCheck: { ok: false, kind: 'superseded', fields: [field] },
          }),
        );
        assert.equal(d.status.plan, undefined);
        assert.equal(d.status.claim?.type, 'Observe');
        assert.equal(d.status.retiredPlans, undefined, 'superseded is not tampered: the name may come back');
        const entry = d.status.journal?.entries.find((e) => e.type === 'Verified');
        assert.deepEqual(
          { outcome: entry?.outcome, plan: entry?.plan, reason: entry?.reason },
          { outcome: 'Superseded', plan: 'ptah-plan-1', reason: journalReason },
        );
        const marks = stale(d);
        assert.equal(marks.length, 1);
        assert.ok(marks[0]!.kind === 'staleApprovals' && marks[0]!.reason === reason);
        assert.match(marks[0]!.kind === 'staleApprovals' ? marks[0]!.message : '', new RegExp(field));
      });
    }

    it('records the execution binding the pass runs under, epoch included: the next pass keeps that epoch', () => {
      const d = decide(input(toAwaitingApproval({ apply: 'OnApproval' }), T0 + 5000));
      assert.deepEqual(d.status.executionBinding, executionBinding);
    });

    it('a deleted plan is re-planned at once', () => {
      const s = toAwaitingApproval({ apply: 'Never' });
      assert.equal(s.status.phase, 'Blocked');
      const d = decide(
        input(s, T0 + 5000, {
          planCheck: { ok: false, kind: 'gone', message: 'plan ptah-plan-1 was deleted' },
        }),
      );
      assert.equal(d.status.plan, undefined);
      assert.equal(d.status.claim?.type, 'Observe');
      assert.ok(d.events.some((e) => e.reason === 'PlanNoLongerCurrent'));
    });

    it('a Failed resource whose plan fails its read-back loses the plan but keeps its retry delay', () => {
      const s = toAwaitingApproval({ apply: 'OnApproval' });
      const failed = schema(
        { ...s.status, phase: 'Failed', nextReconciliationTime: new Date(T0 + 60_000).toISOString() },
        s.spec,
      );
      const d = decide(
        input(failed, T0 + 5000, {
          planCheck: { ok: false, kind: 'gone', message: 'plan ptah-plan-1 was deleted' },
        }),
      );
      assert.equal(d.status.plan, undefined, 'the plan is retired at once');
      assert.equal(d.status.claim, undefined, 'the read waits for the retry');
      assert.ok(d.requeueAfterMs !== undefined && d.requeueAfterMs >= 50_000);
    });

    it('an approval never claims an Apply on a plan nobody read back', () => {
      const s = toAwaitingApproval({ apply: 'OnApproval' });
      const d = decide(input(s, T0 + 5000, { approvals: [approval()] }));
      assert.equal(d.status.claim, undefined);
    });

    it('a plan tampered with between claim and dispatch is withdrawn and retired for good', () => {
      const s = toAwaitingApproval({ apply: 'OnApproval' });
      const claimed = decide(input(s, T0 + 5000, { approvals: [approval()], planCheck: { ok: true } }));
      assert.equal(claimed.status.claim?.type, 'Apply');
      const d = decide(
        input(schema(claimed.status, s.spec), T0 + 6000, {
          approvals: [approval()],
          planCheck: {
            ok: false,
            kind: 'tampered',
            failing: 'ptah-plan-1',
            reason: 'PlanDigestMismatch',
            message: 'm',
          },
        }),
      );
      assert.equal(d.status.claim, undefined);
      assert.ok(!d.post.some((a) => a.kind === 'createJob' || a.kind === 'consumeApproval'));
      assert.equal(d.status.retiredPlans?.[0]?.name, 'ptah-plan-1');
    });

    it('a plan whose bindings the runner did not report is not published: Failed, no plan', () => {
      let s = schema(decide(input(schema({}), T0)).status);
      const d1 = runClaim(s, T0, result(s.status.claim!, 'succeeded', { drift }));
      s = schema(d1.status);
      const d = runClaim(s, T0 + 2000, result(s.status.claim!, 'succeeded', { plan: changes }), {
        publishRefused: { reason: 'PlanBindingIncomplete', message: 'the runner did not report x' },
      });
      assert.equal(d.status.phase, 'Failed');
      assert.equal(d.status.plan, undefined);
      assert.equal(
        d.status.conditions?.find((c) => c.type === 'ReconciliationFailed')?.reason,
        'PlanBindingIncomplete',
      );
    });
  });

  describe('durable writes are actions of the decision', () => {
    const publication: PlanPublication = {
      kind: 'PtahSchemaPlan',
      plan: { metadata: { name: 'ptah-plan-1', namespace: 'ns' } } as PtahSchemaPlan,
      pieces: [
        {
          name: 'ptah-plan-1-000',
          index: 0,
          size: 1,
          digest: digest('p') as `sha256:${string}`,
          bytes: Buffer.from('x'),
        },
      ],
    };

    it('a Plan with changes publishes first, as its only action, and the status records what was stored', () => {
      let s = schema(decide(input(schema({}), T0)).status);
      s = schema(runClaim(s, T0, result(s.status.claim!, 'succeeded', { drift })).status);
      const harvest = result(s.status.claim!, 'succeeded', { plan: changes });
      const finishedPass = input(s, T0 + 3000, { job: finished, harvest, publication });
      const d = decide(finishedPass);
      assert.deepEqual(d.pre, [{ kind: 'publishPlan', publication }]);
      assert.deepEqual([d.post, d.events, d.status], [[], [], s.status], 'nothing else, status unchanged');
      const after = decide({ ...finishedPass, published: { plan: publishedPlan() } });
      assert.equal(after.pre.filter((a) => a.kind === 'publishPlan').length, 0, 'published once');
      assert.equal(after.status.plan?.uid, publishedPlan().uid);
      assert.ok(after.events.some((e) => e.reason === 'PlanPublished'));
      const refused = decide({ ...finishedPass, publishRefused: { reason: 'PlanNameTaken', message: 'm' } });
      assert.equal(refused.pre.filter((a) => a.kind === 'publishPlan').length, 0);
      assert.equal(refused.status.phase, 'Failed');
    });

    it('a Plan that finds no changes publishes nothing', () => {
      let s = schema(decide(input(schema({}), T0)).status);
      s = schema(runClaim(s, T0, result(s.status.claim!, 'succeeded', { drift })).status);
      const harvest = result(s.status.claim!, 'succeeded', { plan: noChanges });
      const d = decide(input(s, T0 + 3000, { job: finished, harvest, publication }));
      assert.equal(d.pre.filter((a) => a.kind === 'publishPlan').length, 0);
    });

    it('a snapshot not yet written is written before the status that first names it, and only then', () => {
      const snapshot = { metadata: { name: resolution().value.snapshotName, namespace: 'ns' } };
      const d = decide(input(schema({}), T0, { resolution: { ...resolution(), write: snapshot } }));
      assert.deepEqual(
        d.pre.filter((a) => a.kind === 'writeSnapshot'),
        [{ kind: 'writeSnapshot', configMap: snapshot }],
      );
      assert.equal(d.status.resolution?.snapshotName, snapshot.metadata.name);
      assert.equal(d.status.claim?.snapshotName, snapshot.metadata.name);
      const written = decide(input(schema({}), T0));
      assert.equal(written.pre.filter((a) => a.kind === 'writeSnapshot').length, 0, 'it exists: no write');
      const failed = decide(
        input(schema({}), T0, {
          resolution: { ok: false, reason: 'SourceNotFound', message: 'ConfigMap schema does not exist' },
        }),
      );
      assert.equal(failed.pre.filter((a) => a.kind === 'writeSnapshot').length, 0);
    });
  });

  describe('read requests (operator.ptah.run/read-requested-at)', () => {
    const REQ = '2026-01-01T00:01:00Z';
    const AT = T0 + 60_000;
    const reasons = (d: Decision) => d.events.map((e) => e.reason);
    const mutating = (d: Decision) =>
      d.status.claim?.type === 'Apply' ||
      d.post.some((a) => a.kind === 'createJob' || a.kind === 'consumeApproval');

    function toInSync(): SchemaView {
      let s = schema(decide(input(schema({}), T0)).status);
      const d = runClaim(s, T0, result(s.status.claim!, 'succeeded', { drift }));
      s = schema(d.status);
      return schema(runClaim(s, T0 + 2000, result(s.status.claim!, 'succeeded', { plan: noChanges })).status);
    }

    const settled: [string, () => SchemaView][] = [
      ['InSync', toInSync],
      ['Blocked', () => toAwaitingApproval({ apply: 'Never' })],
      ['ReadyToApply', () => toAwaitingApproval({ apply: 'Always' })],
      ['AwaitingApproval', () => toAwaitingApproval({ apply: 'OnApproval' })],
    ];
    for (const [phase, reach] of settled) {
      it(`in ${phase}: recorded, next read due now, ReadRequested, and the next pass reads (never applies)`, () => {
        const s = reach();
        assert.equal(s.status.phase, phase);
        const extra = { readRequestedAt: REQ, approvals: [approval()], planCheck: { ok: true } as const };
        const answer = decide(input(s, AT, extra));
        assert.equal(answer.status.lastReadRequest, REQ);
        assert.equal(answer.status.nextReconciliationTime, new Date(AT).toISOString());
        assert.deepEqual(reasons(answer), ['ReadRequested']);
        assert.equal(answer.status.claim, undefined, 'the answer starts nothing itself');
        assert.ok(!mutating(answer), 'an exact approval does not turn the answer into an Apply');
        assert.equal(answer.requeueAfterMs, 0);
        assert.equal(answer.status.phase, phase);
        assert.deepEqual(answer.status.plan, s.status.plan, 'a waiting plan is kept');

        const next = decide(input(schema(answer.status, s.spec), AT + 1000, extra));
        assert.equal(next.status.claim?.type, 'Observe', 'the read the interval would have started');
        assert.ok(!mutating(next));
        assert.ok(!reasons(next).includes('ReadRequested'), 'answered once');
        assert.deepEqual(next.status.plan, s.status.plan);
      });
    }

    it('without the annotation, or with the value already answered, a settled resource waits for its interval', () => {
      const s = toInSync();
      const none = decide(input(s, AT));
      assert.equal(none.status.claim, undefined);
      assert.equal(none.status.lastReadRequest, undefined);
      assert.deepEqual(none.events, []);
      const answered = schema({ ...s.status, lastReadRequest: REQ });
      const same = decide(input(answered, AT, { readRequestedAt: REQ }));
      assert.equal(same.status.claim, undefined);
      assert.deepEqual(same.events, []);
      assert.equal(same.status.nextReconciliationTime, s.status.nextReconciliationTime);
      const newer = decide(input(answered, AT, { readRequestedAt: '2026-01-01T00:02:00Z' }));
      assert.equal(newer.status.lastReadRequest, '2026-01-01T00:02:00Z', 'a new value is a new request');
      assert.deepEqual(reasons(newer), ['ReadRequested']);
    });

    it('a waiting plan survives the read when the reading gives the same plan, and is retired by a different one', () => {
      const s = toAwaitingApproval({ apply: 'OnApproval' });
      const answered = decide(input(s, AT, { readRequestedAt: REQ, planCheck: { ok: true } })).status;
      let p = schema(
        decide(input(schema(answered, s.spec), AT + 1000, { readRequestedAt: REQ })).status,
        s.spec,
      );
      let d = runClaim(p, AT + 1000, result(p.status.claim!, 'succeeded', { drift }), {
        readRequestedAt: REQ,
      });
      p = schema(d.status, s.spec);
      const same = runClaim(p, AT + 3000, result(p.status.claim!, 'succeeded', { plan: changes }), {
        published: { plan: publishedPlan() },
        readRequestedAt: REQ,
      });
      assert.equal(same.status.phase, 'AwaitingApproval');
      assert.equal(same.status.plan?.uid, 'plan-uid-1', 'kept');
      assert.ok(!same.post.some((a) => a.kind === 'staleApprovals'), 'its approvals stay valid');
      assert.ok(!reasons(same).includes('PlanPublished'));
      const other = runClaim(p, AT + 3000, result(p.status.claim!, 'succeeded', { plan: changes }), {
        published: { plan: publishedPlan(false, '2') },
        readRequestedAt: REQ,
      });
      assert.equal(other.status.plan?.uid, 'plan-uid-2', 'the new reading retires the old plan');
      assert.ok(other.post.some((a) => a.kind === 'staleApprovals' && a.exceptPlanUID === 'plan-uid-2'));
      d = runClaim(p, AT + 3000, result(p.status.claim!, 'succeeded', { plan: noChanges }), {
        readRequestedAt: REQ,
      });
      assert.equal(d.status.phase, 'InSync');
      assert.equal(d.status.plan, undefined, 'a database that now matches retires it too');
    });

    it('a read already under way does not answer it; the read that starts after it does', () => {
      const s = toInSync();
      // The interval starts a refresh; the request arrives while it runs.
      let p = schema(decide(input(s, T0 + 700_000)).status);
      assert.equal(p.status.claim?.type, 'Observe');
      const running = decide(
        input(p, T0 + 701_000, { readRequestedAt: REQ, job: { state: 'running', uid: 'j' } }),
      );
      assert.equal(running.status.lastReadRequest, undefined);
      assert.deepEqual(reasons(running), []);
      let d = runClaim(p, T0 + 702_000, result(p.status.claim!, 'succeeded', { drift }), {
        readRequestedAt: REQ,
      });
      p = schema(d.status);
      d = runClaim(p, T0 + 704_000, result(p.status.claim!, 'succeeded', { plan: noChanges }), {
        readRequestedAt: REQ,
      });
      assert.equal(d.status.phase, 'InSync');
      assert.equal(d.status.lastReadRequest, undefined, 'the chain that was under way answers nothing');
      assert.ok(!reasons(d).includes('ReadRequested'));
      const after = decide(input(schema(d.status), T0 + 706_000, { readRequestedAt: REQ }));
      assert.equal(after.status.lastReadRequest, REQ);
      assert.equal(after.status.nextReconciliationTime, new Date(T0 + 706_000).toISOString());
    });

    it('a Failed resource keeps its retry delay and answers when its retry starts', () => {
      const s = schema(decide(input(schema({}), T0)).status);
      const failed = schema(
        runClaim(s, T0, result(s.status.claim!, 'failed', {}, 'connection_failed')).status,
      );
      assert.equal(failed.status.phase, 'Failed');
      const early = decide(input(failed, T0 + 10_000, { readRequestedAt: REQ }));
      assert.equal(early.status.claim, undefined);
      assert.equal(early.status.lastReadRequest, undefined);
      assert.equal(early.status.nextReconciliationTime, failed.status.nextReconciliationTime);
      assert.ok(early.requeueAfterMs! > 15_000, 'the retry delay is not shortened');
      const retry = decide(input(failed, T0 + 40_000, { readRequestedAt: REQ }));
      assert.equal(retry.status.claim?.type, 'Observe');
      assert.equal(retry.status.lastReadRequest, REQ);
      assert.deepEqual(reasons(retry), ['ReadRequested']);
    });

    it('a suspended resource starts nothing for a request', () => {
      const sp = spec({ suspend: true });
      const s = schema(decide(input(schema({}, sp), T0)).status, sp);
      const d = decide(input(s, AT, { readRequestedAt: REQ }));
      assert.equal(d.status.claim, undefined);
      assert.equal(d.status.lastReadRequest, undefined);
    });

    const invalid: [string, string][] = [
      ['a word', 'now'],
      ['a date without a time', '2026-01-01'],
      ['a time without an offset', '2026-01-01T00:01:00'],
      ['an empty value', ''],
    ];
    for (const [what, value] of invalid) {
      it(`${what} starts nothing and is reported once with ReadRequestInvalid`, () => {
        const s = toInSync();
        const d = decide(input(s, AT, { readRequestedAt: value }));
        assert.equal(d.status.claim, undefined);
        assert.equal(d.status.lastReadRequest, value);
        assert.equal(d.status.nextReconciliationTime, s.status.nextReconciliationTime, 'nothing moves');
        assert.deepEqual(
          d.events.map((e) => [e.type, e.reason]),
          [['Warning', 'ReadRequestInvalid']],
        );
        assert.ok(d.events[0]!.message.includes(JSON.stringify(value)), 'the event names the value');
        const again = decide(input(schema(d.status), AT + 1000, { readRequestedAt: value }));
        assert.deepEqual(again.events, []);
        assert.deepEqual(again.status, d.status);
      });
    }

    it('an invalid value waits for a running operation to end, then is answered even when Failed', () => {
      const p = schema(decide(input(schema({}), T0)).status);
      const running = decide(input(p, AT, { readRequestedAt: 'now', job: { state: 'running', uid: 'j' } }));
      assert.equal(running.status.lastReadRequest, undefined);
      const failed = schema(
        runClaim(p, T0, result(p.status.claim!, 'failed', {}, 'connection_failed')).status,
      );
      const d = decide(input(failed, T0 + 2000, { readRequestedAt: 'now' }));
      assert.equal(d.status.lastReadRequest, 'now');
      assert.equal(d.status.claim, undefined, 'nor does it shorten the retry');
    });

    const sha = (v: string) => `sha256:${createHash('sha256').update(v).digest('hex')}`;
    const long: [string, string, string, string][] = [
      ['64 bytes kept as is', 'x'.repeat(64), 'x'.repeat(64), 'ReadRequestInvalid'],
      ['65 bytes, invalid', 'x'.repeat(65), sha('x'.repeat(65)), 'ReadRequestInvalid'],
      ['a valid instant of 80 bytes', `2026-01-01T00:01:00.${'0'.repeat(59)}Z`, '', 'ReadRequested'],
    ];
    for (const [what, value, expected, reason] of long) {
      it(`records ${what}: ${reason}`, () => {
        const s = toInSync();
        const d = decide(input(s, AT, { readRequestedAt: value }));
        const recorded = expected === '' ? sha(value) : expected;
        assert.equal(d.status.lastReadRequest, recorded);
        assert.ok(Buffer.byteLength(d.status.lastReadRequest!) <= 71);
        assert.deepEqual(reasons(d), [reason]);
        if (value.length > 64) assert.ok(!d.events[0]!.message.includes(value), 'the event names the digest');
        const again = decide(input(schema(d.status), AT + 1, { readRequestedAt: value }));
        assert.ok(!reasons(again).includes(reason), 'the digest is recognised as answered');
      });
    }
  });
});

describe('journal times and Superseded, as the seed says', () => {
  const sp = spec({}, { apply: 'Always' });

  /** Through Observe and Plan to a published plan created a minute before T0, then dispatch and run Apply. */
  function applied(applyEnd: string): Decision {
    let s = schema(decide(input(schema({}, sp), T0)).status, sp);
    let d = runClaim(s, T0, result(s.status.claim!, 'succeeded', { drift }));
    s = schema(d.status, sp);
    const plan = { ...publishedPlan(), createdAt: new Date(T0 - 60_000).toISOString() };
    d = runClaim(s, T0 + 2000, result(s.status.claim!, 'succeeded', { plan: changes }), {
      published: { plan },
    });
    const published = d.status.journal?.entries.find((e) => e.type === 'PlanPublished');
    assert.equal(published?.time, plan.createdAt, "a plan's entry has the plan's creation time");
    d = decide(input(schema(d.status, sp), T0 + 4000, { planCheck: { ok: true } }));
    d = decide(input(schema(d.status, sp), T0 + 5000, { planCheck: { ok: true } }));
    assert.equal(d.status.claim?.dispatchStarted, true);
    return decide(
      input(schema(d.status, sp), T0 + 9000, {
        job: { state: 'finished', uid: 'job-uid', succeeded: true, finishedAt: applyEnd },
        harvest: result(d.status.claim!, 'succeeded', {
          apply: { planContentDigest: digest('p'), mutationStarted: true },
        }),
      }),
    );
  }

  it('starts complete at the first status write, before any entry', () => {
    const d = decide(input(schema({}), T0));
    assert.deepEqual(d.status.journal, { coveredSince: new Date(T0).toISOString(), entries: [] });
  });

  it("an Apply's entry has the Job's end, a failure the failed Job's end, not the manager's clock", () => {
    const end = new Date(T0 + 7000).toISOString();
    const d = applied(end);
    assert.equal(d.status.journal?.entries.find((e) => e.type === 'ApplyFinished')?.time, end);

    const s = schema(decide(input(schema({}), T0)).status);
    const failedAt = new Date(T0 + 500).toISOString();
    const created = decide(input(s, T0 + 100));
    const f = decide(
      input(schema(created.status), T0 + 30_000, {
        job: { state: 'finished', uid: 'job-uid', succeeded: false, finishedAt: failedAt },
        harvest: result(s.status.claim!, 'failed', {}, 'observe_failed'),
      }),
    );
    assert.equal(f.status.journal?.entries.at(-1)?.type, 'OperationFailed');
    assert.equal(f.status.journal?.entries.at(-1)?.time, failedAt);
  });

  it('a proof overtaken by a newer generation is Verified/Superseded and a fresh read starts', () => {
    const d = applied(new Date(T0 + 7000).toISOString());
    const proof = d.status.claim!;
    assert.equal(proof.type, 'Observe');
    // The spec is edited while the proof runs: the proof is owed and runs on, but settles nothing.
    const created = decide(input(schema(d.status, sp, 2), T0 + 10_000, { planCheck: { ok: true } }));
    assert.equal(created.status.claim?.operationId, proof.operationId, 'the proof is not withdrawn');
    const settled = decide(
      input(schema(created.status, sp, 2), T0 + 12_000, {
        job: {
          state: 'finished',
          uid: 'job-uid',
          succeeded: true,
          finishedAt: new Date(T0 + 11_000).toISOString(),
        },
        harvest: result(proof, 'succeeded', { drift }),
      }),
    );
    const verified = settled.status.journal?.entries.filter((e) => e.type === 'Verified');
    assert.deepEqual(
      verified?.map((e) => [e.outcome, e.reason, e.time]),
      [['Superseded', 'InputsChanged', new Date(T0 + 11_000).toISOString()]],
    );
    assert.equal(settled.status.claim?.type, 'Observe');
    assert.equal(settled.status.claim?.planRef, undefined, 'a fresh read, not a proof');
    assert.equal(settled.status.claim?.generation, 2);
    assert.notEqual(settled.status.phase, 'InSync');
    assert.ok(settled.post.some((a) => a.kind === 'releaseLease'));
  });

  it('a proof whose inputs stayed settles as before', () => {
    const d = applied(new Date(T0 + 7000).toISOString());
    const proof = d.status.claim!;
    const created = decide(input(schema(d.status, sp), T0 + 10_000));
    const observed = decide(
      input(schema(created.status, sp), T0 + 12_000, {
        job: finished,
        harvest: result(proof, 'succeeded', { drift }),
      }),
    );
    assert.equal(observed.status.claim?.type, 'Plan');
    assert.ok(observed.status.claim?.planRef !== undefined, 'still the proof');
  });
});

describe('plan store hygiene', () => {
  it('a newer plan and a settled proof collect every plan status no longer names', () => {
    const sp = spec({}, { apply: 'OnApproval' });
    let s = schema(decide(input(schema({}, sp), T0)).status, sp);
    let d = runClaim(s, T0, result(s.status.claim!, 'succeeded', { drift }));
    s = schema(d.status, sp);
    d = runClaim(s, T0 + 2000, result(s.status.claim!, 'succeeded', { plan: changes }), {
      published: { plan: publishedPlan() },
    });
    assert.deepEqual(
      d.post.filter((a) => a.kind === 'collectPlans'),
      [{ kind: 'collectPlans', keep: ['ptah-plan-1'] }],
    );
    // A refresh publishes a replacement: the first plan is no longer named.
    const waiting = {
      ...d.status,
      retiredPlans: [{ name: 'ptah-plan-0', uid: 'u0', fingerprint: digest('0'), reason: 'PlanTampered' }],
    };
    s = schema(decide(input(schema(waiting, sp), T0 + 700_000, { planCheck: { ok: true } })).status, sp);
    assert.equal(s.status.claim?.type, 'Observe');
    d = runClaim(s, T0 + 700_000, result(s.status.claim!, 'succeeded', { drift }));
    s = schema(d.status, sp);
    d = runClaim(s, T0 + 702_000, result(s.status.claim!, 'succeeded', { plan: changes }), {
      published: { plan: publishedPlan(false, '2') },
    });
    assert.deepEqual(
      d.post.filter((a) => a.kind === 'collectPlans'),
      [{ kind: 'collectPlans', keep: ['ptah-plan-0', 'ptah-plan-2'] }],
      'the tampered plan status records is kept as history; the replaced one goes',
    );
  });
});
