/**
 * The credential routing table for an OCI source, row by row, on the Jobs the manager builds: the registry
 * credential reaches Resolve, Verify and the fetch init container only; the guard sees the grant keys and
 * no password; the container with the database URL mounts the fetched files read-only and no Secret.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Container, V1Job, V1Volume } from '@kubernetes/client-node';
import {
  buildArtifactJob,
  buildMigrationJob,
  buildSchemaJob,
  type ManagerIdentity,
} from '../../../../src/controller/jobs/operation-job.ts';
import { FETCH_CONTAINER, GUARD_CONTAINER } from '../../../../src/controller/jobs/oci-job-source.ts';

const digest = (c: string) => `sha256:${c.repeat(64)}`;
const PINNED = `registry.example:5000/schemas/orders@${digest('a')}`;
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
const source = {
  credentialsSecretName: 'registry',
  ca: { name: 'registry-ca', key: 'ca.crt' },
  plainHttp: false,
  artifactType: 'application/vnd.ptah.schema.v1',
};

const pod = (job: V1Job) => job.spec!.template.spec!;
const containers = (job: V1Job): V1Container[] => [
  ...(pod(job).initContainers ?? []),
  ...pod(job).containers,
];
const volume = (job: V1Job, name: string): V1Volume | undefined =>
  pod(job).volumes?.find((v) => v.name === name);

/** Which containers can read the registry Secret's .dockerconfigjson (the whole Secret mounted). */
function credentialHolders(job: V1Job): string[] {
  const whole = new Set(
    (pod(job).volumes ?? [])
      .filter(
        (v) =>
          v.secret !== undefined &&
          (v.secret.items === undefined || v.secret.items.some((i) => i.key === '.dockerconfigjson')),
      )
      .map((v) => v.name),
  );
  return containers(job)
    .filter((c) => (c.volumeMounts ?? []).some((m) => whole.has(m.name)))
    .map((c) => c.name);
}

const databaseHolders = (job: V1Job) =>
  containers(job)
    .filter((c) => (c.env ?? []).some((e) => e.name === 'PTAH_DB_URL'))
    .map((c) => c.name);

function observeJob(): V1Job {
  return buildSchemaJob({
    schema: { name: 'orders', namespace: 'ns', uid: 'uid-1' },
    claim: {
      ...claimBase,
      type: 'Observe',
      jobName: 'ptah-observe-orders-1111111111111111',
      contentDigest: digest('a'),
      artifactReference: PINNED,
    },
    engine: 'postgres',
    urlFrom: { name: 'db', key: 'url' },
    exclude: [],
    protectedTables: [],
    activeDeadlineSeconds: 900,
    oci: source,
    manager,
    now,
  });
}

describe('OCI source Jobs', () => {
  it('Observe: guard, then fetch, then the main container with the URL and only the fetched files', () => {
    const job = observeJob();
    assert.deepEqual(
      pod(job).initContainers!.map((c) => c.name),
      [GUARD_CONTAINER, FETCH_CONTAINER],
    );
    assert.deepEqual(credentialHolders(job), [FETCH_CONTAINER]);
    assert.deepEqual(databaseHolders(job), ['ptah']);
    const guard = pod(job).initContainers![0]!;
    const grants = volume(job, 'registry-grants')!;
    assert.deepEqual(
      grants.secret!.items!.map((i) => i.key),
      ['registry', 'caSHA256'],
      'the guard sees the grant keys, never the password',
    );
    assert.ok(guard.volumeMounts!.some((m) => m.name === 'registry-ca'));
    assert.ok(guard.args!.includes('--ca-out'));
    const fetch = pod(job).initContainers![1]!;
    assert.ok(
      !fetch.volumeMounts!.some((m) => m.name === 'registry-ca'),
      'the fetch reads the CA snapshot only',
    );
    assert.equal(fetch.args![fetch.args!.indexOf('--reference') + 1], PINNED);
    const main = pod(job).containers[0]!;
    const sourceMount = main.volumeMounts!.find((m) => m.name === 'source')!;
    assert.equal(sourceMount.readOnly, true);
    assert.equal(main.env!.find((e) => e.name === 'PTAH_SCHEMA_DIR')!.value, sourceMount.mountPath);
    assert.ok(!main.volumeMounts!.some((m) => m.name.startsWith('registry')));
    for (const c of containers(job)) {
      assert.equal(c.securityContext!.readOnlyRootFilesystem, true, c.name);
      assert.ok(!(c.args ?? []).some((a) => /password|dockerconfigjson/i.test(a)), c.name);
    }
  });

  it('Resolve and Verify hold the registry credential and no database credential', () => {
    const owner = { kind: 'PtahSchema' as const, name: 'orders', namespace: 'ns', uid: 'uid-1' };
    const resolve = buildArtifactJob({
      owner,
      claim: {
        ...claimBase,
        type: 'Resolve',
        jobName: 'ptah-resolve-orders-1111111111111111',
        artifactReference: 'registry.example:5000/schemas/orders:v1',
      },
      source,
      activeDeadlineSeconds: 900,
      manager,
      now,
    });
    assert.deepEqual(credentialHolders(resolve), ['ptah']);
    assert.deepEqual(databaseHolders(resolve), []);
    assert.deepEqual(pod(resolve).containers[0]!.args!.slice(0, 3), [
      'resolve',
      '--reference',
      'registry.example:5000/schemas/orders:v1',
    ]);
    const verify = buildArtifactJob({
      owner,
      claim: { ...claimBase, type: 'Verify', jobName: 'ptah-verify-orders-1', artifactReference: PINNED },
      source: {
        ...source,
        requestedReference: 'r',
        policy: { data: '{"policy.yaml":"version: 1"}', digest: digest('p') },
      },
      activeDeadlineSeconds: 900,
      manager,
      now,
    });
    const main = pod(verify).containers[0]!;
    assert.deepEqual(databaseHolders(verify), []);
    assert.equal(
      main.env!.find((e) => e.name === 'PTAH_VERIFICATION_POLICY')!.value,
      '{"policy.yaml":"version: 1"}',
    );
    assert.equal(main.args![main.args!.indexOf('--policy-digest') + 1], digest('p'));
    assert.equal(main.args![main.args!.indexOf('--artifact-type') + 1], source.artifactType);
    assert.throws(() =>
      buildArtifactJob({
        owner,
        claim: { ...claimBase, type: 'Verify', jobName: 'x', artifactReference: PINNED },
        source,
        activeDeadlineSeconds: 900,
        manager,
        now,
      }),
    );
  });

  it('a migration History fetches the pinned directory the same way', () => {
    const job = buildMigrationJob({
      migration: { name: 'orders', namespace: 'ns', uid: 'uid-m' },
      claim: {
        ...claimBase,
        type: 'History',
        jobName: 'ptah-m-history-orders-1111111111111111',
        contentDigest: digest('a'),
        artifactReference: PINNED,
      },
      engine: 'postgres',
      urlFrom: { name: 'db', key: 'url' },
      activeDeadlineSeconds: 900,
      oci: { ...source, artifactType: 'application/vnd.ptah.migrations.v1' },
      manager,
      now,
    });
    assert.deepEqual(credentialHolders(job), [FETCH_CONTAINER]);
    assert.deepEqual(databaseHolders(job), ['ptah']);
    const main = pod(job).containers[0]!;
    const mount = main.volumeMounts!.find((m) => m.name === 'source')!;
    assert.equal(main.env!.find((e) => e.name === 'PTAH_MIGRATIONS_DIR')!.value, mount.mountPath);
    assert.equal(mount.readOnly, true);
  });

  it('without a credential there is no Secret anywhere, and plain HTTP is only passed when set', () => {
    const job = buildSchemaJob({
      schema: { name: 'orders', namespace: 'ns', uid: 'uid-1' },
      claim: {
        ...claimBase,
        type: 'Plan',
        jobName: 'ptah-plan-orders-1111111111111111',
        contentDigest: digest('a'),
        artifactReference: PINNED,
      },
      engine: 'postgres',
      urlFrom: { name: 'db', key: 'url' },
      exclude: [],
      protectedTables: [],
      activeDeadlineSeconds: 900,
      oci: { plainHttp: true, artifactType: source.artifactType },
      manager,
      now,
    });
    assert.ok(!(pod(job).volumes ?? []).some((v) => v.secret !== undefined));
    for (const c of pod(job).initContainers!) assert.ok(c.args!.includes('--plain-http'), c.name);
    assert.ok(
      !observeJob().spec!.template.spec!.initContainers!.some((c) => c.args!.includes('--plain-http')),
    );
  });
});
