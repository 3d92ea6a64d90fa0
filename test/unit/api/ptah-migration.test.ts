import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildCrds } from '../../../src/api/crds.ts';
import { sha256Digest } from '../../../src/api/digest.ts';
import {
  FingerprintError,
  migrationPlanFingerprint,
  migrationPlanName,
  migrationSequenceDigest,
} from '../../../src/api/fingerprint.ts';
import { ptahMigrationSpec, ptahMigrationStatus } from '../../../src/api/ptah-migration.ts';
import {
  ptahMigrationApprovalSpec,
  ptahMigrationRunAcknowledgmentSpec,
} from '../../../src/api/ptah-migration-approval.ts';
import {
  migrationPlanBinding,
  plannedMigration,
  ptahMigrationPlanSpec,
  type MigrationPlanBinding,
  type PlannedMigration,
} from '../../../src/api/ptah-migration-plan.ts';
import { validate } from '../../../src/api/schema-dsl.ts';

const d = (s: string) => sha256Digest(s);
const binding: MigrationPlanBinding = {
  contractVersion: 2,
  migrationUID: '6f1c1d2e-0000-4000-8000-000000000011',
  sourceType: 'ConfigMap',
  configMapUID: '6f1c1d2e-0000-4000-8000-000000000012',
  verificationPolicyUID: '6f1c1d2e-0000-4000-8000-000000000013',
  verificationPolicyDigest: sha256Digest('policy'),
  sourcePolicyUID: '6f1c1d2e-0000-4000-8000-000000000014',
  sourcePolicyDigest: sha256Digest('source policy'),
  sourceDigest: sha256Digest('repository and path'),
  contentDigest: d('manifest'),
  coordinationDigest: d('realm'),
  targetIdentityDigest: d('route'),
  historyFingerprint: d('history'),
  currentVersion: '3',
  transactionMode: 'unset',
  executionEpoch: 'v1-' + 'e'.repeat(32),
  managerImage: 'registry.example/ptah-operator@sha256:' + '1'.repeat(64),
  managerRevision: 'abc1234',
  controllerStateVersion: 1,
  ptahVersion: '0.1.0',
  runnerImage: 'registry.example/ptah-runner@sha256:' + '2'.repeat(64),
  runnerProtocolVersion: 1,
  dialect: 'postgres',
};
const migrations: PlannedMigration[] = [
  {
    version: '4',
    versionKey: '0004',
    description: 'add orders',
    checksum: 'c1',
    checkpoint: false,
    transactionMode: 'file',
  },
  {
    version: '5',
    versionKey: '0005',
    description: 'backfill',
    checksum: 'c2',
    checkpoint: false,
    transactionMode: 'none',
  },
];

/** Another valid value of the same field, whatever its type. */
function changed(key: string, value: unknown): unknown {
  if (key === 'sourceType') return 'Git';
  if (key === 'dialect') return 'mysql';
  if (key === 'transactionMode') return value === 'none' ? 'file' : 'none';
  if (typeof value === 'boolean') return !value;
  if (typeof value === 'number') return value + 1;
  if (typeof value === 'string' && /^[0-9]+$/.test(value)) return String(BigInt(value) + 1n);
  if (typeof value === 'string' && value.startsWith('sha256:')) return d(`${value} changed`);
  return `${String(value)}-changed`;
}

describe('migration plan fingerprint', () => {
  it('the fixtures are valid and set every binding the plan schema declares', () => {
    assert.deepEqual(validate(migrationPlanBinding, binding).errors, []);
    for (const m of migrations) assert.deepEqual(validate(plannedMigration, m).errors, []);
    const declared = Object.keys(migrationPlanBinding.openApi().properties ?? {}).sort();
    assert.deepEqual(Object.keys(binding).sort(), declared);
  });

  const base = migrationPlanFingerprint(binding, migrations);
  for (const key of Object.keys(binding) as (keyof MigrationPlanBinding)[]) {
    if (key === 'contractVersion') continue;
    it(`changes when ${key} changes`, () => {
      const other = { ...binding, [key]: changed(key, binding[key]) } as MigrationPlanBinding;
      assert.notEqual(migrationPlanFingerprint(other, migrations), base);
    });
  }

  it('binds the policy transaction mode with unset a value of its own', () => {
    const fps = (['file', 'none', 'unset'] as const).map((transactionMode) =>
      migrationPlanFingerprint({ ...binding, transactionMode }, migrations),
    );
    assert.equal(new Set(fps).size, 3);
  });

  for (const key of ['version', 'versionKey', 'checksum', 'checkpoint', 'transactionMode'] as const) {
    it(`changes when a migration's ${key} changes`, () => {
      const other = migrations.map((m, i) => (i === 1 ? { ...m, [key]: changed(key, m[key]) } : m));
      assert.notEqual(migrationPlanFingerprint(binding, other), base);
    });
  }

  it('changes when the order changes, or a migration is added or left out', () => {
    assert.notEqual(migrationPlanFingerprint(binding, [...migrations].reverse()), base);
    assert.notEqual(migrationPlanFingerprint(binding, migrations.slice(0, 1)), base);
    const extra = { ...migrations[1]!, version: '6', versionKey: '0006', checksum: 'c3' };
    assert.notEqual(migrationPlanFingerprint(binding, [...migrations, extra]), base);
  });

  it('does not bind the description, which names a file for a person and changes no run', () => {
    const renamed = migrations.map((m) => ({ ...m, description: 'renamed' }));
    assert.equal(migrationPlanFingerprint(binding, renamed), base);
    assert.equal(migrationSequenceDigest(renamed), migrationSequenceDigest(migrations));
  });

  it('refuses another contract version, a ConfigMap source without its UID, and an empty sequence', () => {
    assert.throws(
      () => migrationPlanFingerprint({ ...binding, contractVersion: 3 }, migrations),
      FingerprintError,
    );
    assert.throws(
      () => migrationPlanFingerprint({ ...binding, configMapUID: undefined }, migrations),
      FingerprintError,
    );
    assert.throws(() => migrationPlanFingerprint(binding, []), FingerprintError);
  });

  it('spells versions as the engine does: canonical decimal strings, no leading zero', () => {
    for (const version of ['0', '007', '-1', '1.5', '1'.repeat(20)]) {
      const errors = validate(plannedMigration, { ...migrations[0]!, version }).errors;
      assert.ok(errors.length > 0, version);
    }
    assert.deepEqual(validate(plannedMigration, { ...migrations[0]!, version: '20261201100000' }).errors, []);
  });

  it('names the plan ptah-mplan-<24 hex> from the fingerprint', () => {
    assert.equal(migrationPlanName(base), `ptah-mplan-${base.slice(7, 31)}`);
  });
});

const spec = {
  target: { engine: 'postgres', coordinationKey: 'orders', urlFrom: { name: 'orders-db', key: 'url' } },
  desired: { configMap: { name: 'orders-migrations', files: [{ key: '0001_init.sql' }] } },
};

describe('PtahMigration validators', () => {
  it('defaults the policy, interval and execution, and leaves transactionMode unset', () => {
    const r = validate(ptahMigrationSpec, spec);
    assert.deepEqual(r.errors, []);
    assert.deepEqual(r.value.policy, { apply: 'OnApproval', lockTimeout: '5m' });
    assert.equal(r.value.policy.transactionMode, undefined);
    assert.equal(r.value.interval, '10m');
    assert.equal(r.value.suspend, false);
  });

  it('refuses an unknown transaction mode and an unknown field', () => {
    const bad = validate(ptahMigrationSpec, { ...spec, policy: { transactionMode: 'unset' }, extra: 1 });
    assert.deepEqual(bad.errors, [
      '$.extra: is not a known field',
      '$.policy.transactionMode: must be one of file, none',
    ]);
  });

  it('accepts a failure with position and error codes, and has no field for text', () => {
    const status = {
      lastRun: {
        outcome: 'Partial',
        operationId: d('op'),
        jobName: 'ptah-apply-orders-1',
        startedAt: '2026-12-01T10:00:00Z',
        finishedAt: '2026-12-01T10:00:05Z',
        appliedVersions: ['4'],
        failure: { version: '5', statementPosition: 2, sqlState: '23505', mysqlErrorNumber: 1062 },
      },
      unresolvedRun: {
        outcome: 'Partial',
        operationId: d('op'),
        jobName: 'ptah-apply-orders-1',
        recordedAt: '2026-12-01T10:00:05Z',
      },
    };
    assert.deepEqual(validate(ptahMigrationStatus, status).errors, []);
    const withText = structuredClone(status) as { lastRun: { failure: Record<string, unknown> } };
    withText.lastRun.failure['message'] = 'duplicate key value (id)=(42)';
    assert.deepEqual(validate(ptahMigrationStatus, withText).errors, [
      '$.lastRun.failure.message: is not a known field',
    ]);
    const applied = structuredClone(status) as { unresolvedRun: { outcome: string } };
    applied.unresolvedRun.outcome = 'Applied';
    assert.deepEqual(validate(ptahMigrationStatus, applied).errors, [
      '$.unresolvedRun.outcome: must be one of Partial, Unknown',
    ]);
  });

  it('a migration claim names History, which a schema claim cannot', () => {
    const claim = {
      type: 'History',
      operationId: d('op'),
      inputsFingerprint: d('in'),
      jobName: 'ptah-history-orders-1',
      attempt: 1,
      generation: 1,
      startedAt: '2026-12-01T10:00:00Z',
    };
    assert.deepEqual(validate(ptahMigrationStatus, { claim }).errors, []);
    assert.deepEqual(validate(ptahMigrationStatus, { claim: { ...claim, type: 'Observe' } }).errors, [
      '$.claim.type: must be one of Resolve, Verify, History, Apply',
    ]);
  });

  it('plans, approvals and acknowledgments validate their references', () => {
    const plan = {
      migrationRef: { name: 'orders', uid: binding.migrationUID },
      fingerprint: migrationPlanFingerprint(binding, migrations),
      binding,
      migrations,
    };
    assert.deepEqual(validate(ptahMigrationPlanSpec, plan).errors, []);
    assert.deepEqual(validate(ptahMigrationPlanSpec, { ...plan, migrations: [] }).errors, [
      '$.migrations: must have at least 1 items',
    ]);
    const ref = { name: 'orders', uid: 'u1' };
    assert.deepEqual(
      validate(ptahMigrationApprovalSpec, { migrationRef: ref, planRef: ref, planFingerprint: d('fp') })
        .errors,
      [],
    );
    assert.deepEqual(
      validate(ptahMigrationRunAcknowledgmentSpec, { migrationRef: ref, operationId: 'run-1' }).errors.length,
      1,
    );
  });
});

describe('PtahMigration CRDs', () => {
  const version = (kind: string) => {
    const crd = buildCrds().find((c) => c.spec.names.kind === kind);
    assert.ok(crd, kind);
    return crd.spec.versions[0]!;
  };

  it('prints phase, current version, pending count and outcome', () => {
    assert.deepEqual(
      version('PtahMigration').additionalPrinterColumns.map((c) => [c.name, c.jsonPath]),
      [
        ['Phase', '.status.phase'],
        ['Current', '.status.history.currentVersion'],
        ['Pending', '.status.history.pendingCount'],
        ['Outcome', '.status.lastRun.outcome'],
        ['Digest', '.status.resolution.contentDigest'],
        ['Age', '.metadata.creationTimestamp'],
      ],
    );
  });

  it('makes plans, approvals and acknowledgments immutable with self == oldSelf on spec', () => {
    for (const kind of ['PtahMigrationPlan', 'PtahMigrationApproval', 'PtahMigrationRunAcknowledgment']) {
      const s = version(kind).schema.openAPIV3Schema.properties!['spec']!;
      assert.ok(
        s['x-kubernetes-validations']?.some((r) => r.rule === 'self == oldSelf'),
        kind,
      );
    }
  });

  it('gives spec.policy.transactionMode no default, so unset stays unset', () => {
    const policy =
      version('PtahMigration').schema.openAPIV3Schema.properties!['spec']!.properties!['policy']!;
    assert.equal(policy.properties!['transactionMode']!.default, undefined);
    assert.deepEqual(policy.properties!['transactionMode']!.enum, ['file', 'none']);
  });
});
