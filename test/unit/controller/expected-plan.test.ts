// What the manager hands vcontrollerwrite for a created plan: its owner read now (UID checked), the metadata
// the builder gives that fingerprint, and the live bindings that differ — the reconciler's comparison, but
// against the execution binding the resource records and without what only the producing run knew.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sha256Digest } from '../../../src/api/digest.ts';
import {
  coordinationDigest,
  migrationPlanFingerprint,
  migrationPlanName,
  planName,
  policyFingerprint,
} from '../../../src/api/fingerprint.ts';
import type { PtahMigration } from '../../../src/api/ptah-migration.ts';
import type { MigrationPlanBinding, PtahMigrationPlan } from '../../../src/api/ptah-migration-plan.ts';
import type { ExecutionBinding, PtahSchema } from '../../../src/api/ptah-schema.ts';
import { planAgainstOwner } from '../../../src/controller/expected-plan.ts';
import type { JobReaders } from '../../../src/controller/jobs/job-readers.ts';
import { buildSchemaPlan, type PlanInputs } from '../../../src/plan-store/build-plan.ts';
import { migrationPlanMetadata } from '../../../src/plan-store/plan-metadata.ts';

const d = (s: string) => sha256Digest(s);
const EXECUTION: ExecutionBinding = {
  epoch: 'v1-' + 'e'.repeat(32),
  managerImage: 'registry.example/ptah-operator@sha256:' + '1'.repeat(64),
  managerRevision: 'abc1234',
  controllerStateVersion: 1,
  ptahVersion: '0.1.0',
  runnerImage: 'registry.example/ptah-runner@sha256:' + '2'.repeat(64),
  runnerProtocolVersion: 1,
};
const resolution = {
  sourceType: 'ConfigMap' as const,
  configMapUID: 'cm-1',
  contentDigest: d('files'),
  size: 1,
  resolvedAt: '2026-12-03T00:00:00Z',
};

function schemaWith(status: Record<string, unknown>): PtahSchema {
  return {
    apiVersion: 'operator.ptah.run/v1alpha1',
    kind: 'PtahSchema',
    metadata: { name: 'orders', namespace: 'ns', uid: 'u-1' },
    spec: {
      target: { engine: 'postgres', coordinationKey: 'orders-db', urlFrom: { name: 'db', key: 'url' } },
      desired: { configMap: { name: 'src', files: [{ key: 'schema.sql' }] } },
    },
    status: {
      resolution,
      executionBinding: EXECUTION,
      target: { identityDigest: d('the database Observe read') },
      ...status,
    },
  } as unknown as PtahSchema;
}

const { epoch, ...releases } = EXECUTION;
const inputs: PlanInputs = {
  sourceType: 'ConfigMap',
  configMapUID: 'cm-1',
  contentDigest: d('files'),
  coordinationDigest: coordinationDigest({
    engine: 'postgres',
    namespace: 'ns',
    coordinationKey: 'orders-db',
  }),
  // Another database than status records: the run's report, which the resource records only afterwards.
  targetIdentityDigest: d('the database Plan read'),
  observedStateFingerprint: d('observed'),
  desiredStateFingerprint: d('desired'),
  policyFingerprint: policyFingerprint(undefined),
  executionEpoch: epoch,
  ...releases,
  dialect: 'postgres',
  destructive: false,
  statementCount: 1,
};

const holding = (objects: Record<string, unknown>): JobReaders => ({
  core: { readNamespacedConfigMap: () => Promise.reject(new Error('not read')) },
  ptah: {
    get: async <T>(plural: string, _ns: string, name: string) =>
      objects[`${plural}/${name}`] as T | undefined,
  },
});
const owner = { kind: 'PtahSchema' as const, namespace: 'ns', name: 'orders', uid: 'u-1' };

describe('the manager judges a created plan against its owner', () => {
  it('a schema plan the builder makes from what the resource records agrees; the run-reported database is not compared', async () => {
    const schema = schemaWith({});
    const { plan } = buildSchemaPlan(schema, inputs, Buffer.from('SELECT 1;\n'));
    const judged = await planAgainstOwner(
      holding({ 'ptahschemas/orders': schema }),
      'SchemaPlan',
      owner,
      plan,
    );
    assert.deepEqual(judged, { ok: true, owner: schema, metadata: plan.metadata, differing: [] });
  });

  it('a fingerprint retired before is expected under the name its count of retirements gives', async () => {
    const first = buildSchemaPlan(schemaWith({}), inputs, Buffer.from('SELECT 1;\n')).plan;
    const fp = first.spec.fingerprint as `sha256:${string}`;
    const schema = schemaWith({ retiredPlans: [{ name: first.metadata.name, uid: 'p-1', fingerprint: fp }] });
    const again = buildSchemaPlan(schema, inputs, Buffer.from('SELECT 1;\n'), 1).plan;
    const judged = await planAgainstOwner(
      holding({ 'ptahschemas/orders': schema }),
      'SchemaPlan',
      owner,
      again,
    );
    assert.equal(judged.ok && judged.metadata.name, planName(fp, 1));
    assert.notEqual(planName(fp, 1), first.metadata.name);
  });

  it('compares the execution binding the resource records, every field of it when it records none', async () => {
    const { plan } = buildSchemaPlan(
      schemaWith({}),
      { ...inputs, executionEpoch: 'v1-' + 'f'.repeat(32) },
      Buffer.from('SELECT 1;\n'),
    );
    const judged = await planAgainstOwner(
      holding({ 'ptahschemas/orders': schemaWith({}) }),
      'SchemaPlan',
      owner,
      plan,
    );
    assert.deepEqual(judged.ok && judged.differing, ['executionEpoch']);
    const unrecorded = await planAgainstOwner(
      holding({ 'ptahschemas/orders': schemaWith({ executionBinding: undefined }) }),
      'SchemaPlan',
      owner,
      plan,
    );
    assert.deepEqual(unrecorded.ok && unrecorded.differing, [
      'controllerStateVersion',
      'executionEpoch',
      'managerImage',
      'managerRevision',
      'ptahVersion',
      'runnerImage',
      'runnerProtocolVersion',
    ]);
  });

  it('an owner gone or of another UID says nothing; nor is a plan without a digest fingerprint judged', async () => {
    const { plan } = buildSchemaPlan(schemaWith({}), inputs, Buffer.from('SELECT 1;\n'));
    const other = { ...owner, uid: 'u-9' };
    assert.deepEqual(
      await planAgainstOwner(holding({ 'ptahschemas/orders': schemaWith({}) }), 'SchemaPlan', other, plan),
      {
        ok: false,
        reason: 'its owner PtahSchema orders with UID u-9 does not exist',
      },
    );
    assert.deepEqual(await planAgainstOwner(holding({}), 'SchemaPlan', owner, plan), {
      ok: false,
      reason: 'its owner PtahSchema orders with UID u-1 does not exist',
    });
    const unhashed = { ...plan, spec: { ...plan.spec, fingerprint: 'x' } };
    assert.deepEqual(await planAgainstOwner(holding({}), 'SchemaPlan', owner, unhashed), {
      ok: false,
      reason: 'its fingerprint is not a SHA-256 digest',
    });
  });

  it('a migration plan: the history and database its run read are not compared, its fingerprint must hash', async () => {
    const migration = {
      apiVersion: 'operator.ptah.run/v1alpha1',
      kind: 'PtahMigration',
      metadata: { name: 'shop', namespace: 'ns', uid: 'm-1' },
      spec: {
        target: { engine: 'postgres', coordinationKey: 'shop-db', urlFrom: { name: 'db', key: 'url' } },
        desired: { configMap: { name: 'src', files: [{ key: '0001.sql' }] } },
      },
      status: { resolution, executionBinding: EXECUTION, history: { fingerprint: d('an older history') } },
    } as unknown as PtahMigration;
    const binding: MigrationPlanBinding = {
      contractVersion: 2,
      migrationUID: 'm-1',
      sourceType: 'ConfigMap',
      configMapUID: 'cm-1',
      contentDigest: d('files'),
      coordinationDigest: coordinationDigest({
        engine: 'postgres',
        namespace: 'ns',
        coordinationKey: 'shop-db',
      }),
      targetIdentityDigest: d('the database History read'),
      historyFingerprint: d('the history History read'),
      currentVersion: '3',
      transactionMode: 'unset',
      executionEpoch: epoch,
      ...releases,
      dialect: 'postgres',
    };
    const migrations = [
      {
        version: '4',
        versionKey: '0004',
        description: 'x',
        checksum: 'c',
        checkpoint: false,
        transactionMode: 'file' as const,
      },
    ];
    const fingerprint = migrationPlanFingerprint(binding, migrations);
    const plan: PtahMigrationPlan = {
      apiVersion: 'operator.ptah.run/v1alpha1',
      kind: 'PtahMigrationPlan',
      metadata: migrationPlanMetadata(migration, migrationPlanName(fingerprint)),
      spec: { migrationRef: { name: 'shop', uid: 'm-1' }, fingerprint, binding, migrations },
    };
    const readers = holding({ 'ptahmigrations/shop': migration });
    const shop = { kind: 'PtahMigration' as const, namespace: 'ns', name: 'shop', uid: 'm-1' };
    const judged = await planAgainstOwner(readers, 'MigrationPlan', shop, plan);
    assert.deepEqual(judged, { ok: true, owner: migration, metadata: plan.metadata, differing: [] });
    const edited = {
      ...plan,
      spec: { ...plan.spec, binding: { ...binding, transactionMode: 'none' as const } },
    };
    const refused = await planAgainstOwner(readers, 'MigrationPlan', shop, edited);
    assert.deepEqual(refused.ok && refused.differing, ['transactionMode', 'fingerprint']);
  });
});
