import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LABELS } from '../../../../src/api/meta.ts';
import {
  buildMigrationJob,
  buildSchemaJob,
  type MigrationJobInput,
  type SchemaJobInput,
} from '../../../../src/controller/jobs/operation-job.ts';

const digest = (c: string) => `sha256:${c.repeat(64)}`;
const base: SchemaJobInput = {
  schema: { name: 'orders', namespace: 'ns', uid: 'uid-1' },
  claim: {
    type: 'Observe',
    operationId: digest('a'),
    inputsFingerprint: digest('b'),
    jobName: 'ptah-observe-orders-aaaaaaaaaaaaaaaa',
    attempt: 1,
    generation: 1,
    startedAt: '2026-01-01T00:00:00.000Z',
    contentDigest: digest('c'),
    snapshotName: 'ptah-src-1234',
  },
  engine: 'postgres',
  urlFrom: { name: 'db-secret', key: 'url' },
  exclude: ['b', 'a'],
  protectedTables: ['public.audit'],
  activeDeadlineSeconds: 900,
  manager: {
    managerImage: 'ptah/manager:dev',
    managerRevision: 'r1',
    controllerStateVersion: 1,
    ptahVersion: '0.1.0',
    runnerImage: 'ptah/runner:dev',
  },
  now: new Date('2026-01-01T00:00:00Z'),
};

describe('schema operation Job', () => {
  it('is hardened: no token, non-root, read-only root, no capabilities, no retries, a deadline', () => {
    const job = buildSchemaJob(base);
    const pod = job.spec!.template.spec!;
    assert.equal(job.metadata!.name, base.claim.jobName);
    assert.equal(job.spec!.backoffLimit, 0);
    assert.equal(job.spec!.activeDeadlineSeconds, 900);
    assert.equal(pod.activeDeadlineSeconds, 900);
    assert.equal(pod.restartPolicy, 'Never');
    assert.equal(pod.automountServiceAccountToken, false);
    assert.equal(pod.securityContext!.runAsNonRoot, true);
    for (const c of [...pod.initContainers!, ...pod.containers]) {
      assert.equal(c.securityContext!.readOnlyRootFilesystem, true, c.name);
      assert.equal(c.securityContext!.runAsNonRoot, true, c.name);
      assert.deepEqual(c.securityContext!.capabilities!.drop, ['ALL'], c.name);
      assert.equal(c.securityContext!.allowPrivilegeEscalation, false, c.name);
    }
    assert.equal(job.metadata!.ownerReferences![0]!.uid, 'uid-1');
    assert.equal(job.metadata!.ownerReferences![0]!.controller, true);
  });

  it('labels the Job and its Pod with the whole resource name, up to the 63 characters the CRD allows', () => {
    const name = `orders-${'x'.repeat(56)}`;
    assert.equal(name.length, 63);
    const job = buildSchemaJob({ ...base, schema: { ...base.schema, name } });
    assert.equal(job.metadata!.labels![LABELS.schema], name);
    assert.equal(job.spec!.template.metadata!.labels![LABELS.schema], name);
  });

  it('checks the snapshot in an init container with no credential, then runs the runner with the URL from env only', () => {
    const job = buildSchemaJob(base);
    const pod = job.spec!.template.spec!;
    const [init] = pod.initContainers!;
    assert.equal(init!.name, 'check-snapshot');
    assert.deepEqual(init!.args, [
      'check-snapshot',
      '--snapshot',
      '/ptah/snapshot',
      '--digest',
      digest('c'),
      '--out',
      '/ptah/work/schema',
    ]);
    assert.ok(
      !(init!.env ?? []).some((e) => e.valueFrom?.secretKeyRef),
      'the init container holds no Secret',
    );
    const main = pod.containers[0]!;
    const url = main.env!.find((e) => e.name === 'PTAH_DB_URL')!;
    assert.deepEqual(url.valueFrom!.secretKeyRef, { name: 'db-secret', key: 'url', optional: false });
    assert.equal(url.value, undefined);
    assert.ok(!JSON.stringify(main.args).includes('db-secret'));
    assert.equal(pod.volumes!.find((v) => v.name === 'snapshot')!.configMap!.name, 'ptah-src-1234');
    assert.equal(main.env!.find((e) => e.name === 'PTAH_EXCLUDE')!.value, '["a","b"]');
  });

  it('projects the plan chunks in order for an Apply and binds their digest', () => {
    const job = buildSchemaJob({
      ...base,
      claim: { ...base.claim, type: 'Apply', jobName: 'ptah-apply-orders-aaaaaaaaaaaaaaaa' },
      plan: {
        fingerprint: digest('f'),
        contentDigest: digest('p'),
        targetIdentityDigest: digest('e'),
        chunks: [
          { configMapName: 'plan-001', key: 'chunk', index: 1 },
          { configMapName: 'plan-000', key: 'chunk', index: 0 },
        ],
      },
    });
    const pod = job.spec!.template.spec!;
    assert.equal(pod.initContainers!.length, 0);
    const sources = pod.volumes!.find((v) => v.name === 'plan')!.projected!.sources!;
    assert.deepEqual(
      sources.map((s) => [s.configMap!.name, s.configMap!.items![0]!.path]),
      [
        ['plan-000', '000.plan'],
        ['plan-001', '001.plan'],
      ],
    );
    const env = pod.containers[0]!.env!;
    assert.equal(env.find((e) => e.name === 'PTAH_EXPECTED_PLAN_CONTENT_DIGEST')!.value, digest('p'));
    // The plan's bound target identity: the runner refuses a URL that names another database.
    assert.equal(env.find((e) => e.name === 'PTAH_EXPECTED_TARGET_IDENTITY')!.value, digest('e'));
    assert.equal(job.metadata!.annotations!['operator.ptah.run/plan-fingerprint'], digest('f'));
  });
});

const migration: MigrationJobInput = {
  migration: { name: 'orders', namespace: 'ns', uid: 'uid-m' },
  claim: { ...base.claim, type: 'History', jobName: 'ptah-m-history-orders-aaaaaaaaaaaaaaaa' },
  engine: 'mysql',
  urlFrom: { name: 'db-secret', key: 'url' },
  activeDeadlineSeconds: 600,
  manager: base.manager,
  now: base.now,
};

describe('migration operation Job', () => {
  it('shares the schema Pod: the same hardening, snapshot check and URL from env only', () => {
    const job = buildMigrationJob(migration);
    const schemaPod = buildSchemaJob(base).spec!.template.spec!;
    const pod = job.spec!.template.spec!;
    assert.deepEqual(pod.securityContext, schemaPod.securityContext);
    assert.deepEqual(pod.containers[0]!.securityContext, schemaPod.containers[0]!.securityContext);
    assert.equal(pod.automountServiceAccountToken, false);
    assert.deepEqual(pod.initContainers![0]!.args!.slice(-2), ['--out', '/ptah/work/migrations']);
    assert.deepEqual(pod.containers[0]!.args, ['run', '--operation', 'migration-history']);
    const url = pod.containers[0]!.env!.find((e) => e.name === 'PTAH_DB_URL')!;
    assert.equal(url.value, undefined);
    assert.equal(job.metadata!.labels![LABELS.migration], 'orders');
    assert.equal(job.metadata!.labels![LABELS.schema], undefined);
    assert.equal(job.metadata!.labels![LABELS.operation], 'history');
    assert.equal(job.metadata!.ownerReferences![0]!.kind, 'PtahMigration');
    // History mutates nothing and carries no sequence.
    assert.ok(!pod.containers[0]!.env!.some((e) => e.name === 'PTAH_EXPECTED_SEQUENCE'));
  });

  it('hands an Apply the approved sequence, the history it was read against and the bound mode', () => {
    const plan = {
      fingerprint: digest('f'),
      sequence: [
        { version: '2', checksum: 'c2' },
        { version: '3', checksum: 'c3' },
      ],
      historyFingerprint: digest('h'),
      targetIdentityDigest: digest('e'),
      transactionMode: 'none' as const,
      lockTimeoutSeconds: 300,
    };
    const claim = { ...migration.claim, type: 'Apply' as const };
    const env = buildMigrationJob({ ...migration, claim, plan }).spec!.template.spec!.containers[0]!.env!;
    const value = (name: string) => env.find((e) => e.name === name)?.value;
    assert.equal(
      value('PTAH_EXPECTED_SEQUENCE'),
      '[{"version":"2","checksum":"c2"},{"version":"3","checksum":"c3"}]',
    );
    assert.equal(value('PTAH_EXPECTED_HISTORY_FINGERPRINT'), digest('h'));
    assert.equal(value('PTAH_EXPECTED_TARGET_IDENTITY'), digest('e'));
    assert.equal(value('PTAH_TRANSACTION_MODE'), 'none');
    assert.equal(value('PTAH_OPERATION'), 'migration-apply');
    const unset = buildMigrationJob({ ...migration, claim, plan: { ...plan, transactionMode: 'unset' } });
    assert.ok(
      !unset.spec!.template.spec!.containers[0]!.env!.some((e) => e.name === 'PTAH_TRANSACTION_MODE'),
      'unset passes no mode: Ptah chooses',
    );
    assert.throws(() => buildMigrationJob({ ...migration, claim }), /needs its plan/);
  });
});
