/**
 * The credential routing table for a Git source, row by row, on the Jobs the manager builds: the Git
 * credential reaches the Resolve container and the fetch-source init container only; the container with the
 * database URL mounts the checked files read-only and no Secret; the fetch is held to the bound commit and
 * content digest.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Container, V1Job } from '@kubernetes/client-node';
import { gitSourceView } from '../../../../src/controller/snapshot/artifact-steps.ts';
import {
  commitOfPinnedReference,
  gitPinnedReference,
  gitRequestedReference,
} from '../../../../src/controller/snapshot/git-reference.ts';
import { sourceBinding } from '../../../../src/controller/snapshot/source-binding.ts';
import {
  buildArtifactJob,
  buildMigrationJob,
  type ManagerIdentity,
} from '../../../../src/controller/jobs/operation-job.ts';
import { FETCH_CONTAINER } from '../../../../src/controller/jobs/oci-job-source.ts';
import { JOB_VOLUMES } from '../../../../src/api/job-envelope.ts';

const digest = (c: string) => `sha256:${c.repeat(64)}`;
const COMMIT = 'c'.repeat(40);
const manager: ManagerIdentity = {
  managerImage: 'ptah/manager:dev',
  managerRevision: 'r1',
  controllerStateVersion: 1,
  ptahVersion: '0.1.0',
  runnerImage: 'ptah/runner:dev',
};
const now = new Date('2026-01-01T00:00:00Z');
const claimBase = {
  operationId: digest('1'),
  inputsFingerprint: digest('2'),
  attempt: 1,
  generation: 1,
  startedAt: now.toISOString(),
};
const git = gitSourceView({
  git: {
    repository: 'https://git.example/shop/db.git',
    branch: 'main',
    path: 'migrations',
    credentialsSecretRef: { name: 'git' },
    caConfigMapRef: { name: 'git-ca', key: 'ca.crt' },
  },
})!;

const pod = (job: V1Job) => job.spec!.template.spec!;
const containers = (job: V1Job): V1Container[] => [
  ...(pod(job).initContainers ?? []),
  ...pod(job).containers,
];
const holders = (job: V1Job, secret: string) => {
  const vols = new Set(
    (pod(job).volumes ?? []).filter((v) => v.secret?.secretName === secret).map((v) => v.name),
  );
  return containers(job)
    .filter((c) => (c.volumeMounts ?? []).some((m) => vols.has(m.name)))
    .map((c) => c.name);
};
const databaseHolders = (job: V1Job) =>
  containers(job)
    .filter((c) => (c.env ?? []).some((e) => e.name === 'PTAH_DB_URL'))
    .map((c) => c.name);

describe('Git source Jobs', () => {
  it('the view spells the ref as the runner reads it, and references parse back', () => {
    assert.equal(git.ref, 'refs/heads/main');
    assert.equal(gitSourceView({ git: { repository: 'x@h:p', tag: 'v1', path: '.' } })!.ref, 'refs/tags/v1');
    assert.equal(gitSourceView({ git: { repository: 'x@h:p', commit: COMMIT, path: '.' } })!.ref, COMMIT);
    assert.equal(gitRequestedReference(git), 'https://git.example/shop/db.git#refs/heads/main:migrations');
    assert.equal(commitOfPinnedReference(gitPinnedReference({ ...git, commit: COMMIT })), COMMIT);
    assert.equal(commitOfPinnedReference(gitRequestedReference(git)), undefined);
  });

  it('a plan of a Git source binds the digest of its repository and path beside the content digest', () => {
    const res = {
      sourceType: 'Git' as const,
      contentDigest: digest('a'),
      size: 1,
      resolvedAt: now.toISOString(),
    };
    assert.deepEqual(sourceBinding(res), { ok: false, missing: ['sourceDigest'] });
    assert.deepEqual(sourceBinding({ ...res, sourceDigest: digest('b') }), {
      ok: true,
      value: { sourceType: 'Git', contentDigest: digest('a'), sourceDigest: digest('b') },
    });
  });

  it('Resolve holds the Git credential and no database credential', () => {
    const job = buildArtifactJob({
      owner: { kind: 'PtahMigration', name: 'ledger', namespace: 'ns', uid: 'uid-1' },
      claim: {
        ...claimBase,
        type: 'Resolve',
        jobName: 'ptah-m-resolve-ledger-1111111111111111',
        artifactReference: gitRequestedReference(git),
      },
      source: git,
      activeDeadlineSeconds: 900,
      manager,
      now,
    });
    assert.deepEqual(holders(job, 'git'), ['ptah']);
    assert.deepEqual(databaseHolders(job), []);
    const args = pod(job).containers[0]!.args!;
    assert.equal(args[0], 'resolve-git');
    assert.equal(args[args.indexOf('--ref') + 1], 'refs/heads/main');
    for (const v of pod(job).volumes ?? []) assert.ok(v.name in JOB_VOLUMES, v.name);
  });

  it('History: the fetch-source init container holds the credential and the bound commit; the URL holder reads only the files', () => {
    const job = buildMigrationJob({
      migration: { name: 'ledger', namespace: 'ns', uid: 'uid-1' },
      claim: {
        ...claimBase,
        type: 'History',
        jobName: 'ptah-m-history-ledger-1111111111111111',
        contentDigest: digest('a'),
        artifactReference: gitPinnedReference({ ...git, commit: COMMIT }),
      },
      engine: 'postgres',
      urlFrom: { name: 'db', key: 'url' },
      activeDeadlineSeconds: 900,
      git,
      manager,
      now,
    });
    assert.deepEqual(
      pod(job).initContainers!.map((c) => c.name),
      [FETCH_CONTAINER],
    );
    assert.deepEqual(holders(job, 'git'), [FETCH_CONTAINER]);
    assert.deepEqual(databaseHolders(job), ['ptah']);
    const fetch = pod(job).initContainers![0]!;
    assert.equal(fetch.args![0], 'fetch-git');
    assert.equal(fetch.args![fetch.args!.indexOf('--commit') + 1], COMMIT);
    assert.equal(fetch.args![fetch.args!.indexOf('--digest') + 1], digest('a'));
    const main = pod(job).containers[0]!;
    assert.deepEqual(
      main.volumeMounts!.map((m) => [m.name, m.readOnly === true]),
      [
        ['work', false],
        ['source', true],
      ],
      'no Secret, no private Git directory where the URL is',
    );
    for (const v of pod(job).volumes ?? []) assert.ok(v.name in JOB_VOLUMES, v.name);
  });
});
