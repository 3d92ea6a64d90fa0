// The generated CRDs on a real API server: every CEL rule compiles, defaults are applied, the rules refuse
// what they exist to refuse, and the status the pure controller modules build is accepted as written.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import * as k8s from '@kubernetes/client-node';
import { execFileSync } from 'node:child_process';
import { startControlPlane, type ControlPlane } from '../env/controlplane.ts';
import { findKubernetesBinaries } from '../env/k8s-binaries.ts';
import { setCondition } from '../../src/api/conditions.ts';
import { buildCrds, crdFileName } from '../../src/api/crds.ts';
import { sha256Digest } from '../../src/api/digest.ts';
import { migrationPlanFingerprint, migrationPlanName } from '../../src/api/fingerprint.ts';
import { MAX_PLAN_MIGRATIONS, type PtahMigrationStatus } from '../../src/api/ptah-migration.ts';
import type { MigrationPlanBinding, PtahMigrationPlanSpec } from '../../src/api/ptah-migration-plan.ts';
import { API_GROUP, API_VERSION } from '../../src/api/meta.ts';
import type { PtahSchemaStatus } from '../../src/api/ptah-schema.ts';
import { buildClaim, type OperationInputs } from '../../src/controller/claims/claim.ts';
import { recordJournalEntry } from '../../src/controller/journal/journal.ts';
import { buildSchemaPlan, type PlanInputs } from '../../src/plan-store/build-plan.ts';

let cp: ControlPlane;
let objects: k8s.CustomObjectsApi;
let namespace: string;
const d = (s: string) => sha256Digest(s);
const root = join(import.meta.dirname, '..', '..');

before(async () => {
  cp = await startControlPlane();
  namespace = cp.testNamespace;
  const admin = new k8s.KubeConfig();
  admin.loadFromFile(cp.kubeconfigs.admin);
  const ext = admin.makeApiClient(k8s.ApiextensionsV1Api);
  for (const crd of buildCrds()) {
    // The committed manifest, as a user applies it. loadYaml turns it into the client's model: handing the
    // typed client plain JSON would lose `default` and every `x-kubernetes-*` key on the way out.
    const body = k8s.loadYaml<k8s.V1CustomResourceDefinition>(
      readFileSync(join(root, crdFileName(crd)), 'utf8'),
    );
    await ext.createCustomResourceDefinition({ body });
  }
  for (const crd of buildCrds()) {
    for (let i = 0; ; i++) {
      const c = await ext.readCustomResourceDefinition({ name: crd.metadata.name });
      if (c.status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True')) break;
      if (i > 120) assert.fail(`CRD ${crd.metadata.name} not established`);
      await sleep(250);
    }
  }
  objects = admin.makeApiClient(k8s.CustomObjectsApi);
});

after(async () => {
  await cp?.stop();
});

// The descriptions the unit test requires (test/unit/api/crd-descriptions.test.ts) are what a person reads:
// the real kubectl explain, through the API server's published OpenAPI, shows them field by field.
describe('kubectl explain', () => {
  const explain = (field: string) =>
    execFileSync(
      findKubernetesBinaries().kubectl,
      [
        '--kubeconfig',
        cp.kubeconfigs.admin,
        'explain',
        field,
        '--api-version',
        `${API_GROUP}/${API_VERSION}`,
      ],
      { encoding: 'utf8', timeout: 60_000 },
    );

  it('shows each spec field of a PtahSchema with its description', async () => {
    // The published OpenAPI follows the CRD a moment later: wait until it names the kind's fields.
    let out = '';
    for (let i = 0; i < 60 && !out.includes('urlFrom'); i++) {
      try {
        out = explain('ptahschema.spec.target');
      } catch {
        await sleep(500);
      }
    }
    assert.match(out, /urlFrom\s+<Object> -required-\s+The Secret key holding the database URL/);
    assert.match(explain('ptahschema.spec'), /The database to converge, the declared schema/);
    assert.match(explain('ptahmigration.status.lastRun.outcome'), /How the run ended/);
  });
});

const at = (plural: string) => ({ group: API_GROUP, version: API_VERSION, namespace, plural });
type Obj = { metadata: { name: string; uid: string }; spec: Record<string, unknown>; status?: unknown };

async function create(plural: string, body: object): Promise<Obj> {
  return (await objects.createNamespacedCustomObject({ ...at(plural), body })) as Obj;
}

/** The API server's refusal message, or undefined when it accepted. */
async function refusal(action: () => Promise<unknown>): Promise<string | undefined> {
  try {
    await action();
    return undefined;
  } catch (error) {
    if (error instanceof k8s.ApiException) return `${error.code} ${String(error.body)}`;
    throw error;
  }
}

const schemaBody = (name: string, spec: Record<string, unknown> = {}) => ({
  apiVersion: `${API_GROUP}/${API_VERSION}`,
  kind: 'PtahSchema',
  metadata: { name },
  spec: {
    target: { engine: 'postgres', coordinationKey: 'orders', urlFrom: { name: 'orders-db', key: 'url' } },
    desired: { configMap: { name: 'orders-schema', files: [{ key: 'schema.sql' }] } },
    ...spec,
  },
});

describe('PtahSchema CRD', () => {
  it('applies every default', async () => {
    const created = await create('ptahschemas', schemaBody('defaults'));
    assert.deepEqual(created.spec['policy'], { apply: 'OnApproval', allowDestructive: false });
    assert.equal(created.spec['interval'], '10m');
    assert.equal(created.spec['suspend'], false);
    assert.deepEqual(created.spec['execution'], { activeDeadlineSeconds: 900, failureRetryInterval: '30s' });
  });

  const refused: [string, object, RegExp][] = [
    ['no source', schemaBody('no-source', { desired: {} }), /exactly one source must be set/],
    [
      'two files with one path',
      schemaBody('dup-path', {
        desired: { configMap: { name: 'x', files: [{ key: 'a.sql' }, { key: 'b', path: 'a.sql' }] } },
      }),
      /two files have the same path/,
    ],
    [
      'a key that is not a safe file name, without a path',
      schemaBody('unsafe-key', { desired: { configMap: { name: 'x', files: [{ key: '..' }] } } }),
      /needs an explicit path/,
    ],
    ['a name longer than 63 characters', schemaBody('x'.repeat(64)), /at most 63 characters/],
    ['an interval under 10s', schemaBody('short', { interval: '5s' }), /must be between 10s and 24h/],
    [
      'an unknown apply policy',
      schemaBody('policy', { policy: { apply: 'Sometimes' } }),
      /Unsupported value/,
    ],
    [
      'a source policy beside an OCI source',
      schemaBody('oci-source-policy', {
        desired: { oci: { reference: 'registry.example/schemas/orders:v1' } },
        verificationPolicyFrom: { name: 'verification' },
        sourcePolicyFrom: { name: 'sources' },
      }),
      /spec.sourcePolicyFrom applies to a ConfigMap or Git source/,
    ],
    [
      'a target naming both a coordination key and a PtahRealm',
      schemaBody('two-realms', {
        target: {
          engine: 'postgres',
          coordinationKey: 'orders',
          realmRef: { name: 'orders' },
          urlFrom: { name: 'orders-db', key: 'url' },
        },
      }),
      /exactly one of coordinationKey and realmRef/,
    ],
    [
      'a target naming no realm',
      schemaBody('no-realm', { target: { engine: 'postgres', urlFrom: { name: 'orders-db', key: 'url' } } }),
      /exactly one of coordinationKey and realmRef/,
    ],
  ];
  for (const [name, body, message] of refused) {
    it(`refuses ${name}`, async () => {
      const why = await refusal(() => create('ptahschemas', body));
      assert.match(why ?? 'accepted', message);
    });
  }

  it('accepts a source policy beside a ConfigMap source', async () => {
    const created = await create(
      'ptahschemas',
      schemaBody('cm-source-policy', { sourcePolicyFrom: { name: 'sources' } }),
    );
    assert.deepEqual(created.spec['sourcePolicyFrom'], { name: 'sources' });
  });

  it('accepts, through the status subresource, the status the controller modules build', async () => {
    const created = await create('ptahschemas', schemaBody('status'));
    const now = new Date();
    const inputs: OperationInputs = {
      contentDigest: d('manifest'),
      snapshotName: 'ptah-src-0123456789abcdef0123456789abcdef',
      configMapUID: 'uid-cm',
      coordinationDigest: d('realm'),
      policyFingerprint: d('policy'),
      executionBinding: {
        epoch: 'v1-' + 'e'.repeat(32),
        managerImage: 'm',
        managerRevision: 'r',
        controllerStateVersion: 1,
        ptahVersion: '0.1.0',
        runnerImage: 'r',
        runnerProtocolVersion: 1,
      },
      activeDeadlineSeconds: 900,
    };
    const status: PtahSchemaStatus = {
      observedGeneration: 1,
      phase: 'Observing',
      conditions: setCondition(
        undefined,
        { type: 'ArtifactResolved', status: 'True', reason: 'SnapshotTaken' },
        now,
      ),
      claim: buildClaim(
        {
          resourceUID: created.metadata.uid,
          resourceName: 'status',
          generation: 1,
          type: 'Observe',
          inputs,
          attempt: 1,
        },
        now,
      ),
      journal: recordJournalEntry(
        undefined,
        { type: 'OperationFailed', operation: 'Observe', reason: 'JobFailed', time: now.toISOString() },
        now,
      ),
    };
    const written = (await objects.patchNamespacedCustomObjectStatus(
      { ...at('ptahschemas'), name: 'status', body: { status } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    )) as Obj;
    assert.deepEqual(written.status, JSON.parse(JSON.stringify(status)));
  });
});

describe('PtahSchemaPlan and PtahSchemaApproval CRDs', () => {
  const planInputs: PlanInputs = {
    sourceType: 'ConfigMap',
    configMapUID: 'uid-cm',
    contentDigest: d('manifest'),
    coordinationDigest: d('realm'),
    targetIdentityDigest: d('route'),
    observedStateFingerprint: d('observed'),
    desiredStateFingerprint: d('desired'),
    policyFingerprint: d('policy'),
    executionEpoch: 'v1-' + 'e'.repeat(32),
    managerImage: 'm',
    managerRevision: 'r',
    controllerStateVersion: 1,
    ptahVersion: '0.1.0',
    runnerImage: 'r',
    runnerProtocolVersion: 1,
    dialect: 'postgres',
    destructive: false,
    statementCount: 1,
  };

  it('accepts a built plan once and refuses any change to its spec', async () => {
    const schema = await create('ptahschemas', schemaBody('planned'));
    const { plan } = buildSchemaPlan(
      {
        apiVersion: `${API_GROUP}/v1alpha1`,
        kind: 'PtahSchema',
        metadata: { ...schema.metadata, namespace },
      },
      planInputs,
      Buffer.from('CREATE TABLE t (id int);\n'),
    );
    const created = await create('ptahschemaplans', plan);
    assert.equal(created.metadata.name, plan.metadata.name);
    const why = await refusal(() =>
      objects.patchNamespacedCustomObject(
        { ...at('ptahschemaplans'), name: plan.metadata.name, body: { spec: { size: 26 } } },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      ),
    );
    assert.match(why ?? 'accepted', /a plan is immutable/);
  });

  it('refuses an approval whose spec changes after creation', async () => {
    const body = {
      apiVersion: `${API_GROUP}/${API_VERSION}`,
      kind: 'PtahSchemaApproval',
      metadata: { name: 'approve-1' },
      spec: {
        schemaRef: { name: 'planned', uid: 'u1' },
        planRef: { name: 'ptah-plan-1', uid: 'u2' },
        planFingerprint: d('fp'),
      },
    };
    await create('ptahschemaapprovals', body);
    const why = await refusal(() =>
      objects.patchNamespacedCustomObject(
        { ...at('ptahschemaapprovals'), name: 'approve-1', body: { spec: { planFingerprint: d('other') } } },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      ),
    );
    assert.match(why ?? 'accepted', /an approval is immutable/);
  });
});

const migrationBody = (name: string, spec: Record<string, unknown> = {}) => ({
  apiVersion: `${API_GROUP}/${API_VERSION}`,
  kind: 'PtahMigration',
  metadata: { name },
  spec: {
    target: { engine: 'mysql', coordinationKey: 'orders', urlFrom: { name: 'orders-db', key: 'url' } },
    desired: { configMap: { name: 'orders-migrations', files: [{ key: '0001_init.sql' }] } },
    ...spec,
  },
});

const mergePatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);

describe('PtahMigration CRD', () => {
  it('applies every default and leaves transactionMode unset', async () => {
    const created = await create('ptahmigrations', migrationBody('defaults'));
    assert.deepEqual(created.spec['policy'], { apply: 'OnApproval', lockTimeout: '5m' });
    assert.equal(created.spec['interval'], '10m');
    assert.equal(created.spec['suspend'], false);
    assert.deepEqual(created.spec['execution'], { activeDeadlineSeconds: 900, failureRetryInterval: '30s' });
  });

  const refused: [string, object, RegExp][] = [
    ['no source', migrationBody('no-source', { desired: {} }), /exactly one source must be set/],
    ['a name longer than 63 characters', migrationBody('m'.repeat(64)), /at most 63 characters/],
    [
      'a lock timeout over an hour',
      migrationBody('lock', { policy: { lockTimeout: '2h' } }),
      /must be between 1s and 1h/,
    ],
    [
      'a transaction mode spelled unset',
      migrationBody('mode', { policy: { transactionMode: 'unset' } }),
      /Unsupported value/,
    ],
  ];
  for (const [name, body, message] of refused) {
    it(`refuses ${name}`, async () => {
      const why = await refusal(() => create('ptahmigrations', body));
      assert.match(why ?? 'accepted', message);
    });
  }

  it('accepts a status with history, claim, last run, unresolved run and journal as written', async () => {
    await create('ptahmigrations', migrationBody('status', { policy: { transactionMode: 'none' } }));
    const status: PtahMigrationStatus = {
      observedGeneration: 1,
      phase: 'Blocked',
      history: {
        observedAt: '2026-12-01T10:00:00Z',
        contractVersion: 1,
        verdict: 'ReadyToPlan',
        currentVersion: '20261201100000',
        appliedCount: 3,
        pendingCount: 2,
        fingerprint: d('history'),
        targetIdentityDigest: d('route'),
        dirty: false,
      },
      claim: {
        type: 'History',
        operationId: d('op'),
        inputsFingerprint: d('in'),
        jobName: 'ptah-history-status-1',
        attempt: 1,
        generation: 1,
        startedAt: '2026-12-01T10:00:00Z',
      },
      lastRun: {
        outcome: 'Partial',
        operationId: d('run'),
        jobName: 'ptah-apply-status-1',
        startedAt: '2026-12-01T10:00:00Z',
        finishedAt: '2026-12-01T10:00:05Z',
        appliedVersions: ['4'],
        failure: { version: '5', statementPosition: 2, sqlState: '23000', mysqlErrorNumber: 1062 },
      },
      unresolvedRun: {
        outcome: 'Partial',
        operationId: d('run'),
        jobName: 'ptah-apply-status-1',
        recordedAt: '2026-12-01T10:00:05Z',
      },
      journal: {
        coveredSince: '2026-12-01T09:00:00Z',
        entries: [
          {
            type: 'RunFinished',
            time: '2026-12-01T10:00:05Z',
            outcome: 'Partial',
            operation: 'Apply',
            appliedCount: 1,
            stoppedAtVersion: '5',
          },
        ],
      },
    };
    const written = (await objects.patchNamespacedCustomObjectStatus(
      { ...at('ptahmigrations'), name: 'status', body: { status } },
      mergePatch,
    )) as Obj;
    assert.deepEqual(written.status, JSON.parse(JSON.stringify(status)));
    const why = await refusal(() =>
      objects.patchNamespacedCustomObjectStatus(
        { ...at('ptahmigrations'), name: 'status', body: { status: { claim: { type: 'Observe' } } } },
        mergePatch,
      ),
    );
    assert.match(why ?? 'accepted', /status.claim.type: Unsupported value/);
  });
});

describe('PtahMigrationPlan, PtahMigrationApproval and PtahMigrationRunAcknowledgment CRDs', () => {
  const binding: MigrationPlanBinding = {
    contractVersion: 2,
    migrationUID: 'uid-m',
    sourceType: 'ConfigMap',
    configMapUID: 'uid-cm',
    contentDigest: d('manifest'),
    coordinationDigest: d('realm'),
    targetIdentityDigest: d('route'),
    historyFingerprint: d('history'),
    currentVersion: '0',
    transactionMode: 'unset',
    executionEpoch: 'v1-' + 'e'.repeat(32),
    managerImage: 'm',
    managerRevision: 'r',
    controllerStateVersion: 1,
    ptahVersion: '0.1.0',
    runnerImage: 'r',
    runnerProtocolVersion: 1,
    dialect: 'mysql',
  };
  const step = (n: number) => ({
    version: String(n),
    versionKey: String(n).padStart(4, '0'),
    description: `step ${n}`,
    checksum: `c${n}`,
    checkpoint: false,
    transactionMode: 'file' as const,
  });
  const planBody = (name: string, spec: Partial<PtahMigrationPlanSpec> = {}) => {
    const migrations = spec.migrations ?? [step(1), step(2)];
    const b = spec.binding ?? binding;
    return {
      apiVersion: `${API_GROUP}/${API_VERSION}`,
      kind: 'PtahMigrationPlan',
      metadata: { name },
      spec: {
        migrationRef: spec.migrationRef ?? { name: 'orders', uid: 'uid-m' },
        fingerprint: migrationPlanFingerprint(b, migrations),
        binding: b,
        migrations,
      },
    };
  };

  it('accepts the longest sequence once and refuses any change to its spec', async () => {
    const migrations = Array.from({ length: MAX_PLAN_MIGRATIONS }, (_, i) => step(i + 1));
    const body = planBody(migrationPlanName(migrationPlanFingerprint(binding, migrations)), { migrations });
    const created = await create('ptahmigrationplans', body);
    assert.equal((created.spec['migrations'] as unknown[]).length, MAX_PLAN_MIGRATIONS);
    const why = await refusal(() =>
      objects.patchNamespacedCustomObject(
        {
          ...at('ptahmigrationplans'),
          name: body.metadata.name,
          body: { spec: { binding: { currentVersion: '1' } } },
        },
        mergePatch,
      ),
    );
    assert.match(why ?? 'accepted', /a plan is immutable/);
  });

  it('refuses a plan bound to another migration UID, and two migrations of one version', async () => {
    const other = await refusal(() =>
      create('ptahmigrationplans', planBody('mplan-other', { migrationRef: { name: 'orders', uid: 'x' } })),
    );
    assert.match(other ?? 'accepted', /binding.migrationUID must equal migrationRef.uid/);
    const twice = await refusal(() =>
      create('ptahmigrationplans', planBody('mplan-twice', { migrations: [step(1), step(1)] })),
    );
    assert.match(twice ?? 'accepted', /two migrations have the same version/);
  });

  it('takes versions up to the int64 maximum as strings, and refuses one past it', async () => {
    const top = { ...step(1), version: '9223372036854775807' };
    await create('ptahmigrationplans', planBody('mplan-top', { migrations: [top] }));
    const past = await refusal(() =>
      create(
        'ptahmigrationplans',
        planBody('mplan-past', { migrations: [{ ...top, version: '9223372036854775808' }] }),
      ),
    );
    assert.match(past ?? 'accepted', /must be at most 9223372036854775807/);
  });

  const decisions: [string, string, string, Record<string, unknown>, Record<string, unknown>, RegExp][] = [
    [
      'an approval',
      'ptahmigrationapprovals',
      'PtahMigrationApproval',
      {
        migrationRef: { name: 'orders', uid: 'u1' },
        planRef: { name: 'ptah-mplan-1', uid: 'u2' },
        planFingerprint: d('fp'),
      },
      { planFingerprint: d('other') },
      /an approval is immutable/,
    ],
    [
      'an acknowledgment',
      'ptahmigrationrunacknowledgments',
      'PtahMigrationRunAcknowledgment',
      { migrationRef: { name: 'orders', uid: 'u1' }, operationId: d('run') },
      { operationId: d('another run') },
      /an acknowledgment is immutable/,
    ],
  ];
  for (const [what, plural, kind, spec, change, message] of decisions) {
    it(`refuses ${what} whose spec changes after creation`, async () => {
      const name = `${plural.slice(0, 20)}-1`;
      await create(plural, { apiVersion: `${API_GROUP}/${API_VERSION}`, kind, metadata: { name }, spec });
      const why = await refusal(() =>
        objects.patchNamespacedCustomObject({ ...at(plural), name, body: { spec: change } }, mergePatch),
      );
      assert.match(why ?? 'accepted', message);
    });
  }
});

describe('PtahRealm CRD', () => {
  const realms = { group: API_GROUP, version: API_VERSION, plural: 'ptahrealms' };
  const realmBody = (name: string, spec: Record<string, unknown>) => ({
    apiVersion: `${API_GROUP}/${API_VERSION}`,
    kind: 'PtahRealm',
    metadata: { name },
    spec,
  });

  it('is cluster-scoped, keeps its engine and takes a new namespace list', async () => {
    await objects.createClusterCustomObject({
      ...realms,
      body: realmBody('orders', { engine: 'postgres', namespaces: ['shop'], sharing: 'Exclusive' }),
    });
    const why = await refusal(() =>
      objects.patchClusterCustomObject(
        { ...realms, name: 'orders', body: { spec: { engine: 'mysql' } } },
        mergePatch,
      ),
    );
    assert.match(why ?? 'accepted', /spec.engine is immutable/);
    const granted = (await objects.patchClusterCustomObject(
      { ...realms, name: 'orders', body: { spec: { namespaces: ['shop', 'billing'] } } },
      mergePatch,
    )) as Obj;
    assert.deepEqual(granted.spec['namespaces'], ['shop', 'billing']);
  });

  for (const [what, spec, message] of [
    ['an empty namespace list', { engine: 'postgres', namespaces: [], sharing: 'Shared' }, /namespaces/],
    [
      'a namespace twice',
      { engine: 'postgres', namespaces: ['a', 'a'], sharing: 'Shared' },
      /Duplicate value/,
    ],
    [
      'an unknown sharing',
      { engine: 'postgres', namespaces: ['a'], sharing: 'Sometimes' },
      /Unsupported value/,
    ],
  ] as const) {
    it(`refuses ${what}`, async () => {
      const why = await refusal(() =>
        objects.createClusterCustomObject({ ...realms, body: realmBody('refused', spec) }),
      );
      assert.match(why ?? 'accepted', message);
    });
  }
});
