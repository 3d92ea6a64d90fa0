/**
 * A source policy through both families' decide (snapshot/artifact-steps.ts, source-step.ts): a Git host it
 * refuses gets no Resolve claim, a commit over its size is not recorded, a refused ConfigMap source retires
 * the plan and plans nothing, and a policy replaced in the cluster retires the plan made under the old one.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decide, type DecideInput } from '../../../../src/controller/schema/decide.ts';
import { decideMigration, type MigrationDecideInput } from '../../../../src/controller/migration/decide.ts';
import type { SchemaStatus, SchemaView } from '../../../../src/controller/schema/model.ts';
import type { MigrationStatus, MigrationView } from '../../../../src/controller/migration/model.ts';
import { gitArtifactInput, type GitSourceView } from '../../../../src/controller/snapshot/artifact-steps.ts';
import type { SourcePolicyRead } from '../../../../src/controller/snapshot/source-policy.ts';
import { sourceBinding } from '../../../../src/controller/snapshot/source-binding.ts';
import { parseSourcePolicy } from '../../../../src/sources/source-policy.ts';
import type { Resolution } from '../../../../src/api/ptah-schema.ts';
import type { RunnerOutputs } from '../../../../src/protocol/result.ts';
import {
  digest,
  finishedJob,
  migrationInputOf,
  migrationViewOf,
  schemaInputOf,
  schemaViewOf,
  T0,
} from './pipeline-fixture.ts';

const REPO = 'https://git.example.com/org/schemas.git';
const COMMIT = 'a'.repeat(40);

const policy = (text: string, uid = 'sp-1', d = digest('1')): SourcePolicyRead => ({
  ok: true,
  name: 'sources',
  uid,
  digest: d,
  policy: parseSourcePolicy({ 'source-policy.yaml': text }),
});
const ALLOWING = policy('version: 1\ngit:\n  allowed_hosts: [git.example.com]\nmax_selected_bytes: 100\n');

const git: GitSourceView = {
  kind: 'git',
  repository: REPO,
  ref: 'refs/heads/main',
  path: 'db',
  plainHttp: false,
};

const PLAN = {
  name: 'ptah-plan-1',
  uid: 'plan-1',
  fingerprint: digest('f'),
  contentDigest: digest('e'),
  destructive: false,
  statementCount: 1,
  createdAt: new Date(T0).toISOString(),
};

const schemaView = (status: SchemaStatus, configMapSource = false): SchemaView =>
  schemaViewOf(
    configMapSource
      ? { configMap: { name: 'orders-schema', files: [] }, sourcePolicyName: 'sources' }
      : { configMap: { name: '', files: [] }, git, sourcePolicyName: 'sources' },
    status,
  );
const migrationView = (status: MigrationStatus): MigrationView =>
  migrationViewOf({ configMap: { name: '', files: [] }, git, sourcePolicyName: 'sources' }, status, 'uid-1');

const schemaInput = (
  view: SchemaView,
  at: number,
  read: SourcePolicyRead,
  extra: Partial<DecideInput> = {},
): DecideInput => schemaInputOf(view, at, 'Git', gitArtifactInput(git, read), extra);
const migrationInput = (
  view: MigrationView,
  at: number,
  read: SourcePolicyRead,
  extra: Partial<MigrationDecideInput> = {},
) => migrationInputOf(view, at, 'Git', gitArtifactInput(git, read), extra);
const finished = (claim: { operationId: string }, outputs: RunnerOutputs) =>
  finishedJob(claim, 'resolve', outputs);

const commit = (size: number): RunnerOutputs => ({
  gitCommit: {
    repository: REPO,
    ref: 'refs/heads/main',
    path: 'db',
    commit: COMMIT,
    contentDigest: digest('b'),
    sourceDigest: digest('d'),
    files: 2,
    size,
  },
});

const cond = (
  status: { conditions?: readonly { type: string; status: string; reason: string; message?: string }[] },
  t: string,
) => status.conditions?.find((c) => c.type === t);

describe('source policy, Git source', () => {
  it('a refused host fails with the rule named and claims no Resolve (both families)', () => {
    const refusing = policy('version: 1\ngit:\n  allowed_hosts: [git.corp.example]\n');
    for (const next of [
      decide(schemaInput(schemaView({}), T0, refusing)),
      decideMigration(migrationInput(migrationView({}), T0, refusing)),
    ]) {
      assert.equal(next.status.phase, 'Failed');
      assert.equal(next.status.claim, undefined);
      assert.ok(!next.post.some((p) => p.kind === 'createJob'));
      const resolved = cond(next.status, 'ArtifactResolved');
      assert.equal(resolved?.status, 'False');
      assert.equal(resolved?.reason, 'SourcePolicyRefused');
      assert.equal(
        resolved?.message,
        `source policy sources refused ${REPO}: git.allowed_hosts: host git.example.com:443 is not among git.corp.example`,
      );
      assert.equal(cond(next.status, 'Ready')?.reason, 'SourcePolicyRefused');
    }
  });

  it('records the policy beside the commit, and every plan binds it', () => {
    const first = decide(schemaInput(schemaView({}), T0, ALLOWING));
    assert.equal(first.status.claim?.type, 'Resolve');
    const after = decide(
      schemaInput(schemaView(first.status), T0 + 1000, ALLOWING, finished(first.status.claim!, commit(100))),
    );
    assert.equal(after.status.claim?.type, 'Observe');
    assert.deepEqual(after.status.resolution?.sourcePolicy, {
      name: 'sources',
      uid: 'sp-1',
      digest: digest('1'),
    });
    const binding = sourceBinding(after.status.resolution);
    assert.ok(binding.ok);
    assert.equal(binding.value.sourcePolicyUID, 'sp-1');
    assert.equal(binding.value.sourcePolicyDigest, digest('1'));
  });

  it('a commit whose selected files are over the limit is not recorded and plans nothing (both families)', () => {
    const s1 = decide(schemaInput(schemaView({}), T0, ALLOWING));
    const s2 = decide(
      schemaInput(schemaView(s1.status), T0 + 1000, ALLOWING, finished(s1.status.claim!, commit(101))),
    );
    const m1 = decideMigration(migrationInput(migrationView({}), T0, ALLOWING));
    const m2 = decideMigration(
      migrationInput(migrationView(m1.status), T0 + 1000, ALLOWING, finished(m1.status.claim!, commit(101))),
    );
    for (const next of [s2, m2]) {
      assert.equal(next.status.resolution, undefined);
      assert.equal(next.status.phase, 'Failed');
      assert.notEqual(next.status.claim?.type, 'Observe');
      assert.notEqual(next.status.claim?.type, 'History');
      assert.equal(
        cond(next.status, 'ArtifactResolved')?.message,
        `source policy sources refused commit ${COMMIT} at db: max_selected_bytes: the selected files hold 101 bytes, over the limit of 100`,
      );
    }
  });

  it('a policy replaced in the cluster retires the plan at once and resolves again under the new one', () => {
    const first = decide(schemaInput(schemaView({}), T0, ALLOWING));
    const after = decide(
      schemaInput(schemaView(first.status), T0 + 1000, ALLOWING, finished(first.status.claim!, commit(50))),
    );
    const waiting: SchemaStatus = {
      ...after.status,
      claim: undefined,
      phase: 'AwaitingApproval',
      nextReconciliationTime: new Date(T0 + 600_000).toISOString(),
      plan: PLAN,
    };
    const edited = policy('version: 1\nmax_selected_bytes: 100\n', 'sp-1', digest('2'));
    const next = decide(schemaInput(schemaView(waiting), T0 + 2000, edited));
    assert.equal(next.status.plan, undefined);
    assert.ok(next.post.some((p) => p.kind === 'staleApprovals' && p.reason === 'SourcePolicyChanged'));
    assert.equal(cond(next.status, 'PlanReady')?.reason, 'SourcePolicyChanged');
    assert.equal(next.status.claim?.type, 'Resolve');
    const again = decide(
      schemaInput(schemaView(next.status), T0 + 3000, edited, finished(next.status.claim!, commit(50))),
    );
    assert.equal(again.status.resolution?.sourcePolicy?.digest, digest('2'));
    assert.equal(again.status.claim?.type, 'Observe');
  });

  it('a policy replaced so that it refuses the host retires the plan with the rule named', () => {
    const first = decideMigration(migrationInput(migrationView({}), T0, ALLOWING));
    const after = decideMigration(
      migrationInput(
        migrationView(first.status),
        T0 + 1000,
        ALLOWING,
        finished(first.status.claim!, commit(50)),
      ),
    );
    const waiting: MigrationStatus = {
      ...after.status,
      claim: undefined,
      phase: 'AwaitingApproval',
      nextReconciliationTime: new Date(T0 + 600_000).toISOString(),
      plan: { ...PLAN, name: 'ptah-mplan-1', migrationCount: 1 } as MigrationStatus['plan'],
    };
    const refusing = policy('version: 1\ngit:\n  allowed_hosts: [git.corp.example]\n', 'sp-1', digest('3'));
    const next = decideMigration(migrationInput(migrationView(waiting), T0 + 2000, refusing));
    assert.equal(next.status.plan, undefined);
    assert.ok(next.post.some((p) => p.kind === 'staleApprovals' && p.reason === 'SourcePolicyRefused'));
    assert.equal(next.status.claim, undefined);
    assert.equal(next.status.phase, 'Failed');
  });
});

describe('source policy, ConfigMap source', () => {
  it('a refused ConfigMap retires the plan made under the old policy and plans nothing', () => {
    const res: Resolution = {
      sourceType: 'ConfigMap',
      configMapName: 'orders-schema',
      configMapUID: 'cm-1',
      contentDigest: digest('b'),
      snapshotName: 'ptah-src-1',
      fileCount: 1,
      size: 10,
      sourcePolicy: { name: 'sources', uid: 'sp-1', digest: digest('1') },
      resolvedAt: new Date(T0).toISOString(),
    };
    const status: SchemaStatus = {
      resolution: res,
      phase: 'AwaitingApproval',
      observedGeneration: 1,
      nextReconciliationTime: new Date(T0 + 600_000).toISOString(),
      plan: PLAN,
    };
    const message =
      'source policy sources refused ConfigMap orders-schema: config_map.allowed_names: ConfigMap name orders-schema matches none of billing-*';
    const input: DecideInput = {
      ...schemaInput(schemaView(status, true), T0 + 1000, ALLOWING),
      resolution: { ok: false, reason: 'SourcePolicyRefused', message },
    };
    delete (input as { artifact?: unknown }).artifact;
    const next = decide(input);
    assert.equal(next.status.plan, undefined);
    assert.equal(next.status.claim, undefined);
    assert.equal(next.status.phase, 'Failed');
    assert.ok(next.post.some((p) => p.kind === 'staleApprovals' && p.reason === 'SourcePolicyRefused'));
    assert.equal(cond(next.status, 'ArtifactResolved')?.message, message);

    // An edit the policy still admits: a new digest recorded, the plan under the old one retired.
    const edited: DecideInput = {
      ...input,
      resolution: {
        ok: true,
        value: { ...res, sourcePolicy: { ...res.sourcePolicy!, digest: digest('2') } },
      },
    };
    const kept = decide(edited);
    assert.equal(kept.status.plan, undefined);
    assert.equal(kept.status.resolution?.sourcePolicy?.digest, digest('2'));
    assert.ok(kept.post.some((p) => p.kind === 'staleApprovals' && p.reason === 'SourcePolicyChanged'));
  });
});
