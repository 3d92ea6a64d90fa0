// Both families from OCI artifacts end to end: the real registry with TLS and basic auth, Resolve and
// Verify Jobs, the guard and fetch init containers. A PtahSchema and a PtahMigration reach InSync; a tag
// that moves retires the plan and its approval goes Stale; a registry outage says the source's freshness
// is unknown and heals; and the registry password is only where the routing table allows it.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, LABELS, READ_REQUESTED_ANNOTATION } from '../../src/api/meta.ts';
import type { PtahSchema } from '../../src/api/ptah-schema.ts';
import type { PtahSchemaApproval } from '../../src/api/ptah-schema-approval.ts';
import { hashMigrationDirectory } from '../../src/engine/migrations/migration-directory.ts';
import { ARTIFACT_TYPE, pushArtifact } from '../../src/sources/oci/index.ts';
import { startRegistry, type RegistryServer } from '../env/registry.ts';
import {
  at,
  createApproval,
  createSecret,
  dumpDebug,
  type E2E,
  eventually,
  getMigration,
  getSchema,
  operationJobs,
  query,
  useE2E,
  waitForPhase,
} from './harness.ts';

const { skip, e2e } = useE2E();
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

const ORDERS = `CREATE TABLE public.orders (id bigint PRIMARY KEY, note text NOT NULL);\n`;
const INVOICES = `CREATE TABLE public.invoices (id bigint PRIMARY KEY);\n`;

/** The registry, the credentials a person gives the operator for it, and the policies in the cluster. */
interface Registry {
  readonly server: RegistryServer;
  readonly ca: string;
  readonly password: string;
  readonly dockerConfigJson: string;
  /** A directory holding config.json and the CA, for the `ptah` CLI as a publisher runs it. */
  readonly cliDir: string;
}

let registry: Registry;

async function push(reference: string, type: string, files: Record<string, string>): Promise<string> {
  const pushed = await pushArtifact(
    reference,
    type,
    Object.entries(files).map(([path, content]) => ({ path, bytes: Buffer.from(content) })),
    { dockerConfigJson: registry.dockerConfigJson, caPem: registry.ca },
  );
  return pushed.artifact.digest;
}

const ociSource = (reference: string) => ({
  oci: {
    reference,
    credentialsSecretRef: { name: 'registry' },
    caConfigMapRef: { name: 'registry-ca', key: 'ca.crt' },
  },
});

async function createOciSchema(
  t: E2E,
  name: string,
  reference: string,
  policy: Record<string, unknown>,
): Promise<string> {
  const url = await t.env.postgres!.createDatabase(`${name}_db`);
  await createSecret(t, `${name}-db`, url);
  await t.objects.createNamespacedCustomObject({
    ...at(t, 'ptahschemas'),
    body: {
      apiVersion: `${API_GROUP}/${API_VERSION}`,
      kind: 'PtahSchema',
      metadata: { name },
      spec: {
        target: { engine: 'postgres', coordinationKey: name, urlFrom: { name: `${name}-db`, key: 'url' } },
        desired: ociSource(reference),
        verificationPolicyFrom: { name: 'schema-policy' },
        policy,
        interval: '10m',
        execution: { failureRetryInterval: '5s', activeDeadlineSeconds: 120 },
      },
    },
  });
  return url;
}

const condition = (
  s: {
    status?: { conditions?: readonly { type: string; status: string; reason: string; message: string }[] };
  },
  type: string,
) => s.status?.conditions?.find((c) => c.type === type);

async function requestRead(plural: string, name: string): Promise<void> {
  await e2e().objects.patchNamespacedCustomObject(
    {
      ...at(e2e(), plural),
      name,
      body: { metadata: { annotations: { [READ_REQUESTED_ANNOTATION]: new Date().toISOString() } } },
    },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
  );
}

async function inSync(name: string): Promise<PtahSchema> {
  const s = await waitForPhase(e2e(), name, ['InSync', 'Failed', 'Blocked'], 180_000);
  if (s.status?.phase !== 'InSync') await dumpDebug(e2e(), name);
  assert.equal(s.status?.phase, 'InSync', JSON.stringify(s.status?.conditions));
  return s;
}

describe('PtahSchema and PtahMigration from an OCI source', { skip }, () => {
  before(async () => {
    if (skip) return;
    const server = await startRegistry({ tls: true, auth: true });
    const ca = readFileSync(server.caFile!, 'utf8');
    const auth = server.auth!;
    const dockerConfigJson = JSON.stringify({
      auths: { [server.host]: { auth: Buffer.from(`${auth.username}:${auth.password}`).toString('base64') } },
    });
    const cliDir = mkdtempSync(join(tmpdir(), 'ptah-e2e-oci-cli-'));
    writeFileSync(join(cliDir, 'config.json'), dockerConfigJson, { mode: 0o600 });
    writeFileSync(join(cliDir, 'ca.crt'), ca);
    registry = { server, ca, password: auth.password, dockerConfigJson, cliDir };

    const t = e2e();
    await t.core.createNamespacedSecret({
      namespace: t.namespace,
      body: {
        metadata: { name: 'registry' },
        type: 'kubernetes.io/dockerconfigjson',
        stringData: {
          '.dockerconfigjson': dockerConfigJson,
          registry: server.host,
          caSHA256: `sha256:${createHash('sha256').update(ca).digest('hex')}`,
        },
      },
    });
    await t.core.createNamespacedConfigMap({
      namespace: t.namespace,
      body: { metadata: { name: 'registry-ca' }, data: { 'ca.crt': ca } },
    });
    for (const [name, type] of [
      ['schema-policy', ARTIFACT_TYPE.schema],
      ['migrations-policy', ARTIFACT_TYPE.migrations],
    ] as const) {
      await t.core.createNamespacedConfigMap({
        namespace: t.namespace,
        body: {
          metadata: { name },
          immutable: true,
          data: { 'policy.yaml': `version: 1\nartifact_types: [${type}]\n` },
        },
      });
    }
  });
  after(async () => {
    await registry?.server.stop();
    if (registry) rmSync(registry.cliDir, { recursive: true, force: true });
  });

  it('a PtahSchema reaches InSync', async () => {
    const reference = `${registry.server.host}/schemas/orders:v1`;
    const digest = await push(reference, ARTIFACT_TYPE.schema, { 'schema.sql': ORDERS });
    const url = await createOciSchema(e2e(), 'oci', reference, { apply: 'Always' });
    const s = await inSync('oci');
    assert.equal(condition(s, 'ArtifactResolved')?.reason, 'DigestPinned');
    assert.equal(condition(s, 'ArtifactVerified')?.reason, 'PolicySatisfied');
    assert.equal(s.status?.resolution?.sourceType, 'OCI');
    assert.equal(s.status?.resolution?.digest, digest);
    assert.equal(s.status?.resolution?.requestedReference, reference);
    const tables = await query(
      url,
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'",
    );
    assert.deepEqual(
      tables.map((r) => r['table_name']),
      ['orders'],
    );
  });

  it('a PtahMigration from an artifact pushed with ptah migrations push reaches InSync', async () => {
    const t = e2e();
    const dir = mkdtempSync(join(tmpdir(), 'ptah-e2e-oci-mig-'));
    const reference = `${registry.server.host}/migrations/ledger:v1`;
    try {
      mkdirSync(join(dir, 'migrations'));
      writeFileSync(
        join(dir, 'migrations', '20260101000000_ledger.sql'),
        'CREATE TABLE ledger (id bigint PRIMARY KEY);\n',
      );
      writeFileSync(
        join(dir, 'migrations', '20260102000000_amount.sql'),
        'ALTER TABLE ledger ADD COLUMN amount numeric NOT NULL DEFAULT 0;\n',
      );
      hashMigrationDirectory(join(dir, 'migrations'));
      // As a publisher runs it: the credentials in a config.json, the CA in a file, nothing secret in argv.
      const pushed = spawnSync(
        process.execPath,
        [
          join(ROOT, 'bin/ptah.mjs'),
          'migrations',
          'push',
          reference,
          join(dir, 'migrations'),
          '--registry-config',
          join(registry.cliDir, 'config.json'),
          '--ca-file',
          join(registry.cliDir, 'ca.crt'),
          '--json',
        ],
        { encoding: 'utf8' },
      );
      assert.equal(pushed.status, 0, pushed.stderr);
      const doc = JSON.parse(pushed.stdout) as { artifact: { digest: string }; files: string[] };
      assert.deepEqual(doc.files, ['20260101000000_ledger.sql', '20260102000000_amount.sql', 'ptah.sum']);

      const url = await t.env.postgres!.createDatabase('ledger_db');
      await createSecret(t, 'ledger-db', url);
      await t.objects.createNamespacedCustomObject({
        ...at(t, 'ptahmigrations'),
        body: {
          apiVersion: `${API_GROUP}/${API_VERSION}`,
          kind: 'PtahMigration',
          metadata: { name: 'ledger' },
          spec: {
            target: {
              engine: 'postgres',
              coordinationKey: 'ledger',
              urlFrom: { name: 'ledger-db', key: 'url' },
            },
            desired: ociSource(reference),
            verificationPolicyFrom: { name: 'migrations-policy' },
            policy: { apply: 'Always' },
            interval: '10m',
            execution: { failureRetryInterval: '5s', activeDeadlineSeconds: 120 },
          },
        },
      });
      const m = await eventually(
        'ledger InSync',
        async () => {
          const now = await getMigration(t, 'ledger');
          return ['InSync', 'Failed', 'Blocked'].includes(now.status?.phase ?? '') ? now : undefined;
        },
        180_000,
      );
      assert.equal(m.status?.phase, 'InSync', JSON.stringify(m.status));
      assert.equal(condition(m, 'ArtifactResolved')?.reason, 'DigestPinned');
      assert.equal(condition(m, 'ArtifactVerified')?.reason, 'PolicySatisfied');
      assert.equal(m.status?.resolution?.digest, doc.artifact.digest);
      const columns = await query(
        url,
        "SELECT column_name FROM information_schema.columns WHERE table_name = 'ledger' ORDER BY ordinal_position",
      );
      assert.deepEqual(
        columns.map((r) => r['column_name']),
        ['id', 'amount'],
        'both migrations ran',
      );
      const applied = await query(url, 'SELECT version FROM public.ptah_schema_revisions ORDER BY version');
      assert.deepEqual(
        applied.map((r) => String(r['version'])),
        ['20260101000000', '20260102000000'],
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a tag that moves publishes a new plan, and the approval of the old one goes Stale', async () => {
    const t = e2e();
    const reference = `${registry.server.host}/schemas/billing:live`;
    await push(reference, ARTIFACT_TYPE.schema, { 'schema.sql': ORDERS });
    const url = await createOciSchema(t, 'moving', reference, { apply: 'OnApproval' });
    const first = await waitForPhase(
      t,
      'moving',
      ['AwaitingApproval', 'Failed', 'Blocked', 'InSync'],
      180_000,
    );
    assert.equal(first.status?.phase, 'AwaitingApproval', JSON.stringify(first.status?.conditions));
    const oldPlan = first.status!.plan!;

    // The tag moves; a read is requested, and while its Resolve runs the old plan is approved (admission
    // still admits it: it is the current plan until the Resolve says otherwise).
    const moved = await push(reference, ARTIFACT_TYPE.schema, { 'schema.sql': ORDERS + INVOICES });
    await requestRead('ptahschemas', 'moving');
    await eventually('the Resolve of the requested read', async () => {
      const s = await getSchema(t, 'moving');
      return s.status?.claim?.type === 'Resolve' ? true : undefined;
    });
    await createApproval(t, 'moving-old', {
      schema: { name: 'moving', uid: first.metadata.uid! },
      plan: { name: oldPlan.name, uid: oldPlan.uid },
      fingerprint: oldPlan.fingerprint,
    });

    const republished = await eventually(
      'a new plan for the moved tag',
      async () => {
        const s = await getSchema(t, 'moving');
        return s.status?.phase === 'AwaitingApproval' &&
          s.status.plan !== undefined &&
          s.status.plan.name !== oldPlan.name
          ? s
          : undefined;
      },
      180_000,
    );
    assert.equal(republished.status?.resolution?.digest, moved);
    const stale = await eventually('the old approval goes Stale', async () => {
      const a = (await t.objects.getNamespacedCustomObject({
        ...at(t, 'ptahschemaapprovals'),
        name: 'moving-old',
      })) as PtahSchemaApproval;
      return a.status?.conditions?.find((c) => c.type === 'Stale' && c.status === 'True');
    });
    assert.equal(stale.reason, 'PlanNoLongerCurrent');
    assert.equal(
      stale.message,
      `plan ${oldPlan.name} retired: ${reference} now names ${moved}; the plan describes another artifact`,
    );
    assert.deepEqual(await operationJobs(t, 'moving', 'apply'), [], 'the old plan never applied');

    const plan = republished.status!.plan!;
    await createApproval(t, 'moving-new', {
      schema: { name: 'moving', uid: first.metadata.uid! },
      plan: { name: plan.name, uid: plan.uid },
      fingerprint: plan.fingerprint,
    });
    await inSync('moving');
    const tables = await query(
      url,
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1",
    );
    assert.deepEqual(
      tables.map((r) => r['table_name']),
      ['invoices', 'orders'],
    );
  });

  it('a registry outage leaves the source Unknown with RefreshFailed, and both families recover', async () => {
    const t = e2e();
    await registry.server.interrupt();
    let resumed = false;
    try {
      await requestRead('ptahschemas', 'oci');
      await requestRead('ptahmigrations', 'ledger');
      const s = await eventually(
        'the schema says its source freshness is unknown',
        async () => {
          const now = await getSchema(t, 'oci');
          return condition(now, 'ArtifactResolved')?.status === 'Unknown' ? now : undefined;
        },
        120_000,
      );
      const resolved = condition(s, 'ArtifactResolved')!;
      assert.equal(resolved.reason, 'RefreshFailed');
      assert.match(
        resolved.message,
        new RegExp(`^${registry.server.host}/schemas/orders:v1 could not be resolved: `),
      );
      for (const type of ['InSync', 'PlanReady']) {
        const c = condition(s, type);
        assert.deepEqual([c?.status, c?.reason], ['Unknown', 'SourceFreshnessUnknown'], type);
        assert.equal(c?.message, resolved.message, type);
      }
      // What was recorded stays: the digest it last resolved, and nothing after the failed Resolve ran.
      assert.match(s.status?.resolution?.digest ?? '', /^sha256:[0-9a-f]{64}$/);
      const m = await eventually(
        'the migration says its source freshness is unknown',
        async () => {
          const now = await getMigration(t, 'ledger');
          return condition(now, 'ArtifactResolved')?.status === 'Unknown' ? now : undefined;
        },
        120_000,
      );
      assert.equal(condition(m, 'ArtifactResolved')?.reason, 'RefreshFailed');
      const progressing = condition(m, 'Progressing');
      assert.deepEqual([progressing?.status, progressing?.reason], ['Unknown', 'SourceFreshnessUnknown']);

      await registry.server.resume();
      resumed = true;
      // Failed until the retry after failureRetryInterval finds the registry again.
      const healed = await waitForPhase(t, 'oci', ['InSync'], 180_000);
      assert.equal(condition(healed, 'ArtifactResolved')?.status, 'True');
      assert.equal(condition(healed, 'InSync')?.status, 'True');
      const back = await eventually(
        'the migration recovers',
        async () => {
          const now = await getMigration(t, 'ledger');
          return now.status?.phase === 'InSync' && condition(now, 'ArtifactResolved')?.status === 'True'
            ? now
            : undefined;
        },
        180_000,
      );
      assert.equal(condition(back, 'ArtifactVerified')?.reason, 'PolicySatisfied');
    } finally {
      if (!resumed) await registry.server.resume();
    }
  });

  it('the registry password is only in Resolve, Verify and fetch containers, never beside the database URL', async () => {
    const t = e2e();
    const password = registry.password;
    const databaseSecrets = new Set(['oci-db', 'ledger-db', 'moving-db']);
    const jobs = (await t.batch.listNamespacedJob({ namespace: t.namespace })).items;
    const family = (j: k8s.V1Job) => (j.metadata?.labels?.[`${API_GROUP}/schema`] ? 'schema' : 'migration');
    const seen = new Set(jobs.map((j) => `${family(j)}/${j.metadata?.labels?.[LABELS.operation]}`));
    for (const op of ['schema/resolve', 'schema/verify', 'schema/observe', 'schema/plan', 'schema/apply'])
      assert.ok(seen.has(op), op);
    for (const op of ['migration/resolve', 'migration/verify', 'migration/apply'])
      assert.ok(seen.has(op), op);

    for (const job of jobs) {
      const operation = job.metadata!.labels![LABELS.operation]!;
      const pod = job.spec!.template.spec!;
      // The Secret whole, or a projection with the password in it; the guard's projection of the grant
      // keys alone holds no credential.
      const registryVolumes = new Set(
        (pod.volumes ?? [])
          .filter(
            (v) =>
              v.secret?.secretName === 'registry' &&
              (v.secret.items === undefined || v.secret.items.some((i) => i.key === '.dockerconfigjson')),
          )
          .map((v) => v.name),
      );
      const databaseVolumes = new Set(
        (pod.volumes ?? [])
          .filter((v) => v.secret !== undefined && databaseSecrets.has(v.secret.secretName ?? ''))
          .map((v) => v.name),
      );
      assert.equal(databaseVolumes.size, 0, `${job.metadata?.name} mounts a database Secret`);
      for (const c of [...(pod.initContainers ?? []), ...pod.containers]) {
        const where = `${job.metadata?.name}/${c.name}`;
        const secretsInEnv = [
          ...(c.env ?? []).map((e) => e.valueFrom?.secretKeyRef?.name),
          ...(c.envFrom ?? []).map((e) => e.secretRef?.name),
        ].filter((n): n is string => n !== undefined);
        const holdsDatabase = secretsInEnv.some((n) => databaseSecrets.has(n));
        const holdsRegistry =
          secretsInEnv.includes('registry') ||
          (c.volumeMounts ?? []).some((m) => registryVolumes.has(m.name));
        assert.ok(!(holdsRegistry && holdsDatabase), `${where} holds both credentials`);
        if (holdsRegistry) {
          assert.ok(
            c.name === 'fetch-source' || (c.name === 'ptah' && ['resolve', 'verify'].includes(operation)),
            `${where} holds the registry credential`,
          );
        }
        if (holdsDatabase) assert.ok(!['resolve', 'verify'].includes(operation), `${where} holds the URL`);
      }
      assert.ok(!JSON.stringify(job).includes(password), `${job.metadata?.name} carries the password`);
    }

    const pods = (await t.core.listNamespacedPod({ namespace: t.namespace })).items;
    let logsRead = 0;
    for (const pod of pods) {
      assert.ok(!JSON.stringify(pod).includes(password), `${pod.metadata?.name} carries the password`);
      for (const c of [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]) {
        const log = await t.core
          .readNamespacedPodLog({ namespace: t.namespace, name: pod.metadata!.name!, container: c.name })
          .catch(() => undefined);
        if (log === undefined) continue;
        logsRead += 1;
        assert.ok(!log.includes(password), `${pod.metadata?.name}/${c.name} logged the password`);
      }
    }
    assert.ok(logsRead >= pods.length, `logs of ${logsRead} containers read from ${pods.length} Pods`);

    for (const name of ['oci', 'moving'])
      assert.ok(!JSON.stringify((await getSchema(t, name)).status).includes(password), name);
    assert.ok(!JSON.stringify((await getMigration(t, 'ledger')).status).includes(password), 'ledger');
    const events = await t.core.listNamespacedEvent({ namespace: t.namespace });
    assert.ok(events.items.length > 0);
    assert.ok(!JSON.stringify(events.items).includes(password), 'an Event carries the password');
    for (const file of t.managerLogs)
      assert.ok(!readFileSync(file, 'utf8').includes(password), `${file} holds the password`);
  });
});
