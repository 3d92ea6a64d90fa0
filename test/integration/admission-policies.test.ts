// The release's ValidatingAdmissionPolicies on the real API server, table-driven: for each policy, the
// request it exists to refuse, sent by each identity that could send it (an ordinary user and a namespace
// admin, both granted every verb on the operator's kinds, and a cluster admin in system:masters, each with
// its own client certificate), is refused with a message naming the rule, and the manager's own write is
// admitted. Then each policy is broken on purpose (its binding dropped, its match widened, its literal
// changed) and the rows that depend on it must fail: the rows test the policies, not the API server.
// Every request is a server-side dry run, so refused and admitted rows alike leave the objects as they were
// and the table can be run again under every sabotage. Some rows go through the real kubectl.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as k8s from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { startControlPlane, type ControlPlane } from '../env/controlplane.ts';
import { findKubernetesBinaries } from '../env/k8s-binaries.ts';
import { issueCertificate } from '../env/pki.ts';
import { writeKubeconfig } from '../env/kubeconfig.ts';
import { eventually } from '../env/eventually.ts';
import { installCrds } from '../env/install-crds.ts';
import {
  admissionPolicies,
  CHUNK_POLICY_NAME,
  CONFIG_MAP_DELETION_POLICY_NAME,
  CONFIG_MAP_POLICY_NAME,
  JOB_POLICY_NAME,
  MIGRATION_PLAN_POLICY_NAME,
  RESOURCE_UPDATE_POLICY_NAME,
  SCHEMA_PLAN_POLICY_NAME,
  STATUS_GUARD_NAME,
  UNRESOLVED_RUN_GUARD_NAME,
  type GuardPolicy,
  type ReleaseIdentity,
} from '../../src/admission/admission-policies.ts';
import { sha256Digest } from '../../src/api/digest.ts';
import {
  API_GROUP,
  API_VERSION,
  CONTROLLER_STATE_VERSION,
  GROUP_VERSION,
  SCHEMA_FINALIZER,
} from '../../src/api/meta.ts';
import { MIGRATION_FINALIZER, UNRESOLVED_RUN_ANNOTATION } from '../../src/api/ptah-migration.ts';
import {
  buildMigrationJob,
  buildSchemaJob,
  type ManagerIdentity,
} from '../../src/controller/jobs/operation-job.ts';
import { buildPlanChunk } from '../../src/plan-store/plan-chunk.ts';
import { buildPlanProjection } from '../../src/plan-store/plan-projection.ts';
import type { PtahSchemaPlanChunk } from '../../src/api/ptah-schema-plan-chunk.ts';
import { buildSchemaPlan, type PlanInputs } from '../../src/plan-store/build-plan.ts';
import { buildSourceSnapshot } from '../../src/sources/snapshot-config-map.ts';
import type { ConfigMapObject } from '../../src/api/core.ts';
import type { Claim } from '../../src/api/ptah-schema.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const d = (s: string) => sha256Digest(s);
const OPERATION = d('apply operation 1');

type Who = 'user' | 'namespaceAdmin' | 'clusterAdmin' | 'manager';
const PEOPLE: readonly Who[] = ['user', 'namespaceAdmin', 'clusterAdmin'];

interface Identity {
  readonly kubeconfig: string;
  readonly objects: k8s.CustomObjectsApi;
  readonly core: k8s.CoreV1Api;
  readonly batch: k8s.BatchV1Api;
}

let cp: ControlPlane;
let namespace: string;
let release: ReleaseIdentity;
let policies: readonly GuardPolicy[];
let reg: k8s.AdmissionregistrationV1Api;
const as = {} as Record<Who, Identity>;

function identity(file: string): Identity {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(file);
  return {
    kubeconfig: file,
    objects: kc.makeApiClient(k8s.CustomObjectsApi),
    core: kc.makeApiClient(k8s.CoreV1Api),
    batch: kc.makeApiClient(k8s.BatchV1Api),
  };
}

const at = (plural: string) => ({ group: API_GROUP, version: API_VERSION, namespace, plural });
const mergePatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);
const now = () => new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');

async function createAll(admin: Identity, file: string): Promise<void> {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(admin.kubeconfig);
  const api = k8s.KubernetesObjectApi.makeApiClient(kc);
  for (const doc of parseAllDocuments(readFileSync(join(ROOT, file), 'utf8'))) {
    const spec = doc.toJSON() as k8s.KubernetesObject | null;
    if (!spec) continue;
    // The control plane made the manager's ServiceAccount already (its token is the manager's kubeconfig).
    await api.create(spec).catch((error: unknown) => {
      if ((error as { code?: number }).code !== 409) throw error;
    });
  }
}

/** The real kubectl as `who`; a non-zero exit throws with what it printed. */
function kubectl(who: Who, args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      findKubernetesBinaries().kubectl,
      ['--kubeconfig', as[who].kubeconfig, ...args],
      { encoding: 'utf8', timeout: 30_000 },
      (error, stdout, stderr) => (error ? reject(new Error(stderr || stdout)) : resolve(stdout)),
    );
  });
}

/** What the API server answered a refused request (or kubectl printed of it). */
function denial(error: unknown): string {
  if (!(error instanceof k8s.ApiException)) return error instanceof Error ? error.message : String(error);
  try {
    return `${error.code} ${(JSON.parse(String(error.body)) as { message: string }).message}`;
  } catch {
    return `${error.code} ${String(error.body)}`;
  }
}

// -- The objects the rows write to, left as the manager would leave them. ----------------------------------

async function get(plural: string, name: string): Promise<Record<string, unknown>> {
  return (await as.manager.objects.getNamespacedCustomObject({ ...at(plural), name })) as Record<
    string,
    unknown
  >;
}

async function writeStatusAsManager(plural: string, name: string, status: object): Promise<void> {
  await as.manager.objects.replaceNamespacedCustomObjectStatus({
    ...at(plural),
    name,
    body: { ...(await get(plural, name)), status },
  });
}

const unresolvedRun = {
  outcome: 'Partial',
  operationId: OPERATION,
  jobName: 'ptah-m-apply-shop-0123456789abcdef',
  recordedAt: now(),
};

const uids = { schema: '', migration: '', livePlan: '' };

async function createObjects(admin: Identity): Promise<void> {
  const schema = (await admin.objects.createNamespacedCustomObject({
    ...at('ptahschemas'),
    body: {
      apiVersion: GROUP_VERSION,
      kind: 'PtahSchema',
      metadata: { name: 'orders' },
      spec: {
        target: {
          engine: 'postgres',
          coordinationKey: 'orders-db',
          urlFrom: { name: 'orders-db', key: 'url' },
        },
        desired: { configMap: { name: 'orders-schema', files: [{ key: 'schema.sql' }] } },
      },
    },
  })) as { metadata: { uid: string } };
  uids.schema = schema.metadata.uid;
  await as.manager.objects.patchNamespacedCustomObject(
    { ...at('ptahschemas'), name: 'orders', body: { metadata: { finalizers: [SCHEMA_FINALIZER] } } },
    mergePatch,
  );
  await writeStatusAsManager('ptahschemas', 'orders', { phase: 'InSync' });

  const migration = (await admin.objects.createNamespacedCustomObject({
    ...at('ptahmigrations'),
    body: {
      apiVersion: GROUP_VERSION,
      kind: 'PtahMigration',
      metadata: { name: 'shop', annotations: { [UNRESOLVED_RUN_ANNOTATION]: JSON.stringify(unresolvedRun) } },
      spec: {
        target: { engine: 'postgres', coordinationKey: 'shop-db', urlFrom: { name: 'shop-db', key: 'url' } },
        desired: { configMap: { name: 'shop-migrations', files: [{ key: '0001_init.sql' }] } },
      },
    },
  })) as { metadata: { uid: string } };
  uids.migration = migration.metadata.uid;
  await as.manager.objects.patchNamespacedCustomObject(
    { ...at('ptahmigrations'), name: 'shop', body: { metadata: { finalizers: [MIGRATION_FINALIZER] } } },
    mergePatch,
  );
  await writeStatusAsManager('ptahmigrations', 'shop', { phase: 'Blocked', unresolvedRun });

  // An approval the manager consumed: no webhooks here, the status guard needs none.
  await admin.objects.createNamespacedCustomObject({
    ...at('ptahschemaapprovals'),
    body: {
      apiVersion: GROUP_VERSION,
      kind: 'PtahSchemaApproval',
      metadata: { name: 'orders-approval' },
      spec: {
        schemaRef: { name: 'orders', uid: schema.metadata.uid },
        planRef: { name: 'ptah-plan-000000000000000000000001', uid: 'plan-uid' },
        planFingerprint: d('plan'),
      },
    },
  });
  await writeStatusAsManager('ptahschemaapprovals', 'orders-approval', {
    conditions: [
      {
        type: 'Consumed',
        status: 'True',
        reason: 'ApplyDispatched',
        message: 'the Apply of this plan consumed it',
        lastTransitionTime: now(),
      },
    ],
  });
}

// -- What the manager builds, from its own builders, stamped by the release under test. --------------------

const MANAGER_IMAGE = `registry.example/ptah-operator@sha256:${'1'.repeat(64)}`;
const RUNNER = `registry.example/ptah-runner@sha256:${'2'.repeat(64)}`;
const builtBy: ManagerIdentity = {
  managerImage: MANAGER_IMAGE,
  managerRevision: 'abc1234',
  controllerStateVersion: CONTROLLER_STATE_VERSION,
  ptahVersion: '0.1.0',
  runnerImage: RUNNER,
};

function claim(type: Claim['type'], prefix: string, seed: string): Claim {
  const id = d(seed);
  return {
    type,
    operationId: id,
    inputsFingerprint: d(`inputs ${seed}`),
    jobName: `${prefix}-${id.slice(7, 23)}`,
    attempt: 1,
    generation: 1,
    startedAt: now(),
    contentDigest: d('manifest'),
    snapshotName: `ptah-src-${'a'.repeat(32)}`,
  };
}

type Job = k8s.V1Job;
const jobs = {
  observe: (seed = 'observe'): Job =>
    buildSchemaJob({
      schema: { name: 'orders', namespace, uid: uids.schema },
      claim: claim('Observe', 'ptah-observe-orders', seed),
      engine: 'postgres',
      urlFrom: { name: 'orders-db', key: 'url' },
      exclude: [],
      protectedTables: [],
      activeDeadlineSeconds: 600,
      manager: builtBy,
      now: new Date(),
    }),
  apply: (): Job =>
    buildSchemaJob({
      schema: { name: 'orders', namespace, uid: uids.schema },
      claim: { ...claim('Apply', 'ptah-apply-orders', 'apply'), snapshotName: undefined } as Claim,
      engine: 'postgres',
      urlFrom: { name: 'orders-db', key: 'url' },
      exclude: [],
      protectedTables: [],
      activeDeadlineSeconds: 600,
      plan: {
        fingerprint: d('plan'),
        contentDigest: d('plan bytes'),
        targetIdentityDigest: d('route'),
        chunks: [{ configMapName: `ptah-plan-${'b'.repeat(24)}-000`, key: 'chunk', index: 0 }],
      },
      manager: builtBy,
      now: new Date(),
    }),
  migrationApply: (): Job =>
    buildMigrationJob({
      migration: { name: 'shop', namespace, uid: uids.migration },
      claim: claim('Apply', 'ptah-m-apply-shop', 'migration apply') as never,
      engine: 'postgres',
      urlFrom: { name: 'shop-db', key: 'url' },
      activeDeadlineSeconds: 600,
      plan: {
        fingerprint: d('mplan'),
        sequence: [{ version: '1', checksum: 'c1' }],
        historyFingerprint: d('history'),
        targetIdentityDigest: d('route'),
        transactionMode: 'unset',
        lockTimeoutSeconds: 10,
      },
      manager: builtBy,
      now: new Date(),
    }),
};

/** A copy of `job` changed by `edit`. */
function changed(job: Job, edit: (j: Job) => void): Job {
  const copy = structuredClone(job);
  edit(copy);
  return copy;
}
const pod = (j: Job) => j.spec!.template.spec!;
const bothAnnotations = (j: Job, f: (a: Record<string, string>) => void) => {
  f(j.metadata!.annotations!);
  f(j.spec!.template.metadata!.annotations!);
};

const planInputs: PlanInputs = {
  sourceType: 'ConfigMap',
  configMapUID: 'cm-uid',
  contentDigest: d('manifest'),
  coordinationDigest: d('realm'),
  targetIdentityDigest: d('route'),
  observedStateFingerprint: d('observed'),
  desiredStateFingerprint: d('desired'),
  policyFingerprint: d('policy'),
  executionEpoch: 'v1-' + 'e'.repeat(32),
  managerImage: MANAGER_IMAGE,
  managerRevision: 'abc1234',
  controllerStateVersion: CONTROLLER_STATE_VERSION,
  ptahVersion: '0.1.0',
  runnerImage: RUNNER,
  runnerProtocolVersion: 1,
  dialect: 'postgres',
  destructive: false,
  statementCount: 1,
};

function schemaPlan(inputs: PlanInputs = planInputs, sql = 'CREATE TABLE orders (id bigint);\n') {
  return buildSchemaPlan(
    {
      apiVersion: GROUP_VERSION,
      kind: 'PtahSchema',
      metadata: { name: 'orders', namespace, uid: uids.schema },
    },
    inputs,
    Buffer.from(sql),
  );
}

/** The plan of `sql` with the live plan's UID (the live plan exists: garbage collection would take a
 * chunk or projection whose owner does not). */
function ownerPlan(sql: string) {
  const built = schemaPlan(planInputs, sql);
  return {
    ...built,
    plan: { ...built.plan, metadata: { ...built.plan.metadata, uid: uids.livePlan || 'plan-uid' } },
  };
}

/** A chunk of the plan of `sql`: the live one, or (another statement) one only dry runs create. */
function chunk(sql = 'CREATE TABLE live (id bigint);\n'): PtahSchemaPlanChunk {
  const { plan, pieces } = ownerPlan(sql);
  return buildPlanChunk(plan, pieces[0]!);
}

/** The projection an Apply of the plan of `sql` mounts: the live one, or one only dry runs create. */
function projection(sql = 'CREATE TABLE live (id bigint);\n'): ConfigMapObject {
  const { plan, pieces } = ownerPlan(sql);
  return buildPlanProjection(plan, pieces[0]!.name, pieces[0]!.bytes);
}

/** A snapshot of `sql`: the live one, or (another file) one only dry runs create. */
function snapshot(sql = 'CREATE TABLE live (id bigint);\n'): ConfigMapObject {
  return buildSourceSnapshot(
    {
      apiVersion: GROUP_VERSION,
      kind: 'PtahSchema',
      metadata: { name: 'orders', namespace, uid: uids.schema },
    },
    { name: 'orders-schema', files: [{ key: 'schema.sql' }] },
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'orders-schema', namespace, uid: 'source-uid' },
      data: { 'schema.sql': sql },
    },
  ).configMap;
}

function migrationPlan(managerImage = MANAGER_IMAGE): object {
  return {
    apiVersion: GROUP_VERSION,
    kind: 'PtahMigrationPlan',
    metadata: {
      name: `ptah-mplan-${'c'.repeat(24)}`,
      labels: {
        'app.kubernetes.io/managed-by': 'ptah-operator',
        'app.kubernetes.io/component': 'migration-plan',
        'operator.ptah.run/migration': 'shop',
      },
      ownerReferences: [
        {
          apiVersion: GROUP_VERSION,
          kind: 'PtahMigration',
          name: 'shop',
          uid: uids.migration,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: {
      migrationRef: { name: 'shop', uid: uids.migration },
      fingerprint: d('mplan'),
      binding: {
        contractVersion: 2,
        migrationUID: uids.migration,
        sourceType: 'ConfigMap',
        configMapUID: 'cm-uid',
        contentDigest: d('files'),
        coordinationDigest: d('realm'),
        targetIdentityDigest: d('route'),
        historyFingerprint: d('history'),
        currentVersion: '0',
        transactionMode: 'unset',
        executionEpoch: 'v1-' + 'e'.repeat(32),
        managerImage,
        managerRevision: 'abc1234',
        controllerStateVersion: CONTROLLER_STATE_VERSION,
        ptahVersion: '0.1.0',
        runnerImage: RUNNER,
        runnerProtocolVersion: 1,
        dialect: 'postgres',
      },
      migrations: [
        {
          version: '1',
          versionKey: '0001',
          description: 'init',
          checksum: 'c1',
          checkpoint: false,
          transactionMode: 'file',
        },
      ],
    },
  };
}

/**
 * Objects the update and deletion rows act on: a running Job, a person's ConfigMap, a chunk, its projection,
 * a snapshot.
 */
async function createTypedObjects(admin: Identity): Promise<void> {
  await as.manager.batch.createNamespacedJob({ namespace, body: jobs.observe('live') });
  await admin.core.createNamespacedConfigMap({
    namespace,
    body: {
      metadata: { name: 'orders-schema' },
      data: { 'schema.sql': 'CREATE TABLE orders (id bigint);\n' },
    },
  });
  const plan = (await as.manager.objects.createNamespacedCustomObject({
    ...at('ptahschemaplans'),
    body: schemaPlan(planInputs, 'CREATE TABLE live (id bigint);\n').plan,
  })) as { metadata: { uid: string } };
  uids.livePlan = plan.metadata.uid;
  await as.manager.objects.createNamespacedCustomObject({ ...at('ptahschemaplanchunks'), body: chunk() });
  await as.manager.core.createNamespacedConfigMap({ namespace, body: projection() as k8s.V1ConfigMap });
  await as.manager.core.createNamespacedConfigMap({ namespace, body: snapshot() as k8s.V1ConfigMap });
}

// -- The table. -------------------------------------------------------------------------------------------

interface Row {
  readonly id: string;
  readonly policy: string;
  readonly who: Who;
  /** Refused with a message matching this, or admitted. */
  readonly expect: RegExp | 'admitted';
  send(): Promise<unknown>;
}

const denied = (policy: string, message: string) =>
  new RegExp(`ValidatingAdmissionPolicy '${policy}' with binding '${policy}' denied request: ${message}`);

const dryRun = 'All';

/** A merge patch of the status subresource, as `who`, through the client or through kubectl. */
function statusPatch(who: Who, plural: string, name: string, status: object, via: 'client' | 'kubectl') {
  if (via === 'kubectl') {
    return () =>
      kubectl(who, [
        'patch',
        plural,
        name,
        '-n',
        namespace,
        '--subresource=status',
        '--type=merge',
        '--dry-run=server',
        '-p',
        JSON.stringify({ status }),
      ]);
  }
  return () =>
    as[who].objects.patchNamespacedCustomObjectStatus(
      { ...at(plural), name, body: { status }, dryRun },
      mergePatch,
    );
}

function metadataPatch(who: Who, plural: string, name: string, metadata: object) {
  return () =>
    as[who].objects.patchNamespacedCustomObject(
      { ...at(plural), name, body: { metadata }, dryRun },
      mergePatch,
    );
}

function specPatch(who: Who, plural: string, name: string, spec: object) {
  return () =>
    as[who].objects.patchNamespacedCustomObject({ ...at(plural), name, body: { spec }, dryRun }, mergePatch);
}

const statusRefused = (kind: string, name: string) =>
  denied(STATUS_GUARD_NAME, `the status of ${kind} ${name} is written only by the Ptah manager`);
const unresolvedRefused = denied(
  UNRESOLVED_RUN_GUARD_NAME,
  `only the manager may change the operator\\.ptah\\.run/unresolved-run annotation of PtahMigration shop`,
);

function rows(): Row[] {
  const out: Row[] = [];
  for (const who of PEOPLE) {
    const via = who === 'clusterAdmin' ? 'kubectl' : 'client';
    // The replay of issue 16: a consumed approval made to count again, an unresolved run cleared.
    out.push(
      {
        id: `status: ${who} re-counts a consumed approval`,
        policy: STATUS_GUARD_NAME,
        who,
        expect: statusRefused('PtahSchemaApproval', 'orders-approval'),
        send: statusPatch(who, 'ptahschemaapprovals', 'orders-approval', { conditions: null }, via),
      },
      {
        id: `status: ${who} clears status.unresolvedRun`,
        policy: STATUS_GUARD_NAME,
        who,
        expect: statusRefused('PtahMigration', 'shop'),
        send: statusPatch(who, 'ptahmigrations', 'shop', { unresolvedRun: null }, via),
      },
      {
        id: `status: ${who} rewrites a PtahSchema's phase`,
        policy: STATUS_GUARD_NAME,
        who,
        expect: statusRefused('PtahSchema', 'orders'),
        send: statusPatch(who, 'ptahschemas', 'orders', { phase: 'Failed' }, 'client'),
      },
      {
        id: `unresolved-run: ${who} removes the annotation`,
        policy: UNRESOLVED_RUN_GUARD_NAME,
        who,
        expect: unresolvedRefused,
        send: metadataPatch(who, 'ptahmigrations', 'shop', {
          annotations: { [UNRESOLVED_RUN_ANNOTATION]: null },
        }),
      },
      {
        id: `unresolved-run: ${who} rewrites the annotation`,
        policy: UNRESOLVED_RUN_GUARD_NAME,
        who,
        expect: unresolvedRefused,
        send: metadataPatch(who, 'ptahmigrations', 'shop', {
          annotations: { [UNRESOLVED_RUN_ANNOTATION]: '{}' },
        }),
      },
      // What people may still do: the guards match nothing else.
      {
        id: `people: ${who} edits a PtahSchema's spec`,
        policy: STATUS_GUARD_NAME,
        who,
        expect: 'admitted',
        send: specPatch(who, 'ptahschemas', 'orders', { suspend: true }),
      },
      {
        id: `people: ${who} asks for a read on a PtahMigration`,
        policy: UNRESOLVED_RUN_GUARD_NAME,
        who,
        expect: 'admitted',
        send: metadataPatch(who, 'ptahmigrations', 'shop', {
          annotations: { 'operator.ptah.run/read-requested-at': now() },
        }),
      },
    );
  }
  const updateRefused = (message: string) => denied(RESOURCE_UPDATE_POLICY_NAME, message);
  out.push(
    // The manager's own writes.
    {
      id: 'status: the manager writes a PtahMigration status',
      policy: STATUS_GUARD_NAME,
      who: 'manager',
      expect: 'admitted',
      send: statusPatch('manager', 'ptahmigrations', 'shop', { phase: 'Blocked' }, 'client'),
    },
    {
      id: 'status: the manager writes an approval status (kubectl)',
      policy: STATUS_GUARD_NAME,
      who: 'manager',
      expect: 'admitted',
      send: statusPatch(
        'manager',
        'ptahschemaapprovals',
        'orders-approval',
        { observedGeneration: 1 },
        'kubectl',
      ),
    },
    {
      id: 'unresolved-run: the manager removes the annotation',
      policy: UNRESOLVED_RUN_GUARD_NAME,
      who: 'manager',
      expect: 'admitted',
      send: metadataPatch('manager', 'ptahmigrations', 'shop', {
        annotations: { [UNRESOLVED_RUN_ANNOTATION]: null },
      }),
    },
    {
      id: 'update: the manager removes its finalizer from a PtahSchema',
      policy: RESOURCE_UPDATE_POLICY_NAME,
      who: 'manager',
      expect: 'admitted',
      send: metadataPatch('manager', 'ptahschemas', 'orders', { finalizers: null }),
    },
    {
      id: 'update: the manager rewrites the unresolved-run annotation of a PtahMigration',
      policy: RESOURCE_UPDATE_POLICY_NAME,
      who: 'manager',
      expect: 'admitted',
      send: metadataPatch('manager', 'ptahmigrations', 'shop', {
        annotations: {
          [UNRESOLVED_RUN_ANNOTATION]: JSON.stringify({ ...unresolvedRun, outcome: 'Unknown' }),
        },
      }),
    },
    // What the manager may not do to a person's resource.
    {
      id: 'update: the manager edits a PtahSchema spec',
      policy: RESOURCE_UPDATE_POLICY_NAME,
      who: 'manager',
      expect: updateRefused('the manager may not change the spec of PtahSchema orders'),
      send: specPatch('manager', 'ptahschemas', 'orders', { suspend: true }),
    },
    {
      id: 'update: the manager edits a PtahMigration spec',
      policy: RESOURCE_UPDATE_POLICY_NAME,
      who: 'manager',
      expect: updateRefused('the manager may not change the spec of PtahMigration shop'),
      send: specPatch('manager', 'ptahmigrations', 'shop', { suspend: true }),
    },
    {
      id: 'update: the manager moves another annotation',
      policy: RESOURCE_UPDATE_POLICY_NAME,
      who: 'manager',
      expect: updateRefused(
        'the manager moves no annotation of PtahMigration shop but operator\\.ptah\\.run/unresolved-run',
      ),
      send: metadataPatch('manager', 'ptahmigrations', 'shop', {
        annotations: { 'operator.ptah.run/read-requested-at': now() },
      }),
    },
    {
      id: 'update: the manager sets the unresolved-run annotation on a PtahSchema',
      policy: RESOURCE_UPDATE_POLICY_NAME,
      who: 'manager',
      expect: updateRefused('the manager moves no annotation of PtahSchema orders'),
      send: metadataPatch('manager', 'ptahschemas', 'orders', {
        annotations: { [UNRESOLVED_RUN_ANNOTATION]: '{}' },
      }),
    },
    {
      id: 'update: the manager adds a finalizer not its own',
      policy: RESOURCE_UPDATE_POLICY_NAME,
      who: 'manager',
      expect: updateRefused(
        'the manager adds or removes no finalizer of PtahSchema orders but operator\\.ptah\\.run/apply-guard',
      ),
      send: metadataPatch('manager', 'ptahschemas', 'orders', {
        finalizers: [SCHEMA_FINALIZER, 'example.com/hold'],
      }),
    },
    {
      id: 'update: the manager relabels a PtahMigration',
      policy: RESOURCE_UPDATE_POLICY_NAME,
      who: 'manager',
      expect: updateRefused('the manager may not change the labels or owners of PtahMigration shop'),
      send: metadataPatch('manager', 'ptahmigrations', 'shop', { labels: { team: 'payments' } }),
    },
  );
  return [...out, ...typedRows()];
}

const createJob = (who: Who, body: Job) => () =>
  as[who].batch.createNamespacedJob({ namespace, body, dryRun });
const createConfigMap = (who: Who, body: ConfigMapObject | k8s.V1ConfigMap) => () =>
  as[who].core.createNamespacedConfigMap({ namespace, body: body as k8s.V1ConfigMap, dryRun });
const createChunk = (who: Who, body: PtahSchemaPlanChunk) => () =>
  as[who].objects.createNamespacedCustomObject({ ...at('ptahschemaplanchunks'), body, dryRun });
const createPlan = (who: Who, plural: string, body: object) => () =>
  as[who].objects.createNamespacedCustomObject({ ...at(plural), body, dryRun });

const schemaOwner = () => ({
  apiVersion: GROUP_VERSION,
  kind: 'PtahSchema',
  name: 'orders',
  uid: uids.schema,
  controller: true,
  blockOwnerDeletion: true,
});

function typedRows(): Row[] {
  const job = (message: string) => denied(JOB_POLICY_NAME, `Job ptah-[-a-z0-9]+${message}`);
  const out: Row[] = [];
  const manager = (id: string, policy: string, expect: Row['expect'], send: () => Promise<unknown>): Row => ({
    id,
    policy,
    who: 'manager',
    expect,
    send,
  });
  // Jobs: the manager's own, of either family, admitted; anything outside the shape refused.
  out.push(
    manager(
      'job: the manager creates a schema Observe Job',
      JOB_POLICY_NAME,
      'admitted',
      createJob('manager', jobs.observe()),
    ),
    manager(
      'job: the manager creates a schema Apply Job (ten annotations)',
      JOB_POLICY_NAME,
      'admitted',
      createJob('manager', jobs.apply()),
    ),
    manager(
      'job: the manager creates a migration Apply Job',
      JOB_POLICY_NAME,
      'admitted',
      createJob('manager', jobs.migrationApply()),
    ),
    manager(
      'job: a Job stamped by another manager image',
      JOB_POLICY_NAME,
      job(
        ' was stamped by manager image registry.example/ptah-operator@sha256:9+ at controller-state version 1; this release runs',
      ),
      createJob(
        'manager',
        changed(jobs.observe(), (j) =>
          bothAnnotations(
            j,
            (a) =>
              (a['operator.ptah.run/controller-image'] =
                `registry.example/ptah-operator@sha256:${'9'.repeat(64)}`),
          ),
        ),
      ),
    ),
    manager(
      'job: a Job of another controller-state version',
      JOB_POLICY_NAME,
      job(' was stamped by manager image \\S+ at controller-state version 2'),
      createJob(
        'manager',
        changed(jobs.migrationApply(), (j) =>
          bothAnnotations(j, (a) => (a['operator.ptah.run/controller-state-version'] = '2')),
        ),
      ),
    ),
    manager(
      'job: a Job with an annotation more than the envelope',
      JOB_POLICY_NAME,
      job(' does not carry the annotation envelope as a set'),
      createJob(
        'manager',
        changed(jobs.observe(), (j) =>
          bothAnnotations(j, (a) => (a['operator.ptah.run/plan-fingerprint'] = d('x'))),
        ),
      ),
    ),
    manager(
      'job: a schema Apply without its plan content digest',
      JOB_POLICY_NAME,
      job(' does not carry the annotation envelope as a set'),
      createJob(
        'manager',
        changed(jobs.apply(), (j) =>
          bothAnnotations(j, (a) => delete a['operator.ptah.run/plan-content-digest']),
        ),
      ),
    ),
    manager(
      'job: a Job without the controller identity',
      JOB_POLICY_NAME,
      job(' carries no controller identity'),
      createJob(
        'manager',
        changed(jobs.observe(), (j) =>
          bothAnnotations(j, (a) => delete a['operator.ptah.run/controller-revision']),
        ),
      ),
    ),
    manager(
      'job: a Job with an extra volume',
      JOB_POLICY_NAME,
      job(': the only volumes are work'),
      createJob(
        'manager',
        changed(jobs.observe(), (j) => pod(j).volumes!.push({ name: 'extra', hostPath: { path: '/' } })),
      ),
    ),
    manager(
      'job: a Job whose work volume is a host path',
      JOB_POLICY_NAME,
      job(': the only volumes are work'),
      createJob(
        'manager',
        changed(jobs.observe(), (j) => (pod(j).volumes![0] = { name: 'work', hostPath: { path: '/var' } })),
      ),
    ),
    manager(
      'job: a Job whose snapshot check runs another image',
      JOB_POLICY_NAME,
      job(': every container runs the one runner image'),
      createJob(
        'manager',
        changed(
          jobs.observe(),
          (j) => (pod(j).initContainers![0]!.image = 'registry.example/other@sha256:' + '3'.repeat(64)),
        ),
      ),
    ),
    manager(
      'job: a Job whose main container may escalate',
      JOB_POLICY_NAME,
      job(': every container runs the one runner image'),
      createJob(
        'manager',
        changed(
          jobs.apply(),
          (j) => (pod(j).containers[0]!.securityContext!.allowPrivilegeEscalation = true),
        ),
      ),
    ),
    manager(
      'job: a Job giving the init container a Secret',
      JOB_POLICY_NAME,
      job(': every container runs the one runner image'),
      createJob(
        'manager',
        changed(jobs.observe(), (j) =>
          pod(j).initContainers![0]!.env!.push({
            name: 'PTAH_DB_URL',
            valueFrom: { secretKeyRef: { name: 'orders-db', key: 'url' } },
          }),
        ),
      ),
    ),
    manager(
      'job: a Job with a sidecar',
      JOB_POLICY_NAME,
      job(': one main container ptah'),
      createJob(
        'manager',
        changed(jobs.observe(), (j) => pod(j).containers.push({ ...pod(j).containers[0]!, name: 'sidecar' })),
      ),
    ),
    manager(
      'job: a Job with the ServiceAccount token mounted',
      JOB_POLICY_NAME,
      job(': the operation Pod has no ServiceAccount token'),
      createJob(
        'manager',
        changed(jobs.observe(), (j) => (pod(j).automountServiceAccountToken = true)),
      ),
    ),
    manager(
      'job: a Job that retries',
      JOB_POLICY_NAME,
      job(': an operation runs once'),
      createJob(
        'manager',
        changed(jobs.observe(), (j) => (j.spec!.backoffLimit = 3)),
      ),
    ),
    manager(
      'job: a Job owned by another kind',
      JOB_POLICY_NAME,
      job(' must have exactly one owner'),
      createJob(
        'manager',
        changed(jobs.observe(), (j) => (j.metadata!.ownerReferences![0]!.kind = 'PtahMigration')),
      ),
    ),
    manager(
      'job: a Job whose Pod carries other annotations',
      JOB_POLICY_NAME,
      job(': its Pod template must carry'),
      createJob(
        'manager',
        changed(
          jobs.observe(),
          (j) =>
            (j.spec!.template.metadata!.annotations = {
              ...j.metadata!.annotations,
              'operator.ptah.run/input-fingerprint': d('other'),
            }),
        ),
      ),
    ),
    manager('job: the manager adds the cleanup TTL to a finished Job', JOB_POLICY_NAME, 'admitted', () =>
      as.manager.batch.patchNamespacedJob(
        {
          namespace,
          name: jobs.observe('live').metadata!.name!,
          body: { spec: { ttlSecondsAfterFinished: 300 } },
          dryRun,
        },
        mergePatch,
      ),
    ),
    manager(
      'job: the manager sets another TTL',
      JOB_POLICY_NAME,
      job(' is an operation Job: nothing of it changes after creation but the cleanup TTL'),
      () =>
        as.manager.batch.patchNamespacedJob(
          {
            namespace,
            name: jobs.observe('live').metadata!.name!,
            body: { spec: { ttlSecondsAfterFinished: 5 } },
            dryRun,
          },
          mergePatch,
        ),
    ),
  );
  for (const who of PEOPLE) {
    out.push(
      {
        id: `job: ${who} creates a forged operation Job with an extra volume`,
        policy: JOB_POLICY_NAME,
        who,
        expect: job(': the only volumes are work'),
        send: createJob(
          who,
          changed(jobs.apply(), (j) => pod(j).volumes!.push({ name: 'extra', emptyDir: {} })),
        ),
      },
      {
        id: `job: ${who} rewrites the envelope of a live operation Job`,
        policy: JOB_POLICY_NAME,
        who,
        expect: job(' is an operation Job: nothing of it changes after creation'),
        send: () =>
          as[who].batch.patchNamespacedJob(
            {
              namespace,
              name: jobs.observe('live').metadata!.name!,
              body: { metadata: { annotations: { 'operator.ptah.run/content-digest': d('other') } } },
              dryRun,
            },
            mergePatch,
          ),
      },
      {
        id: `job: ${who} strips the controller identity from a live operation Job`,
        policy: JOB_POLICY_NAME,
        who,
        expect: job(' carries no controller identity'),
        send: () =>
          as[who].batch.patchNamespacedJob(
            {
              namespace,
              name: jobs.observe('live').metadata!.name!,
              body: { metadata: { annotations: { 'operator.ptah.run/controller-image': null } } },
              dryRun,
            },
            mergePatch,
          ),
      },
      {
        id: `people: ${who} runs a Job of their own`,
        policy: JOB_POLICY_NAME,
        who,
        expect: 'admitted',
        send: createJob(who, {
          metadata: { name: `own-${who.toLowerCase()}` },
          spec: {
            template: { spec: { restartPolicy: 'Never', containers: [{ name: 'x', image: 'busybox' }] } },
          },
        }),
      },
      {
        id: `chunk: ${who} forges a plan chunk owned by nothing`,
        policy: CHUNK_POLICY_NAME,
        who,
        expect: denied(CHUNK_POLICY_NAME, 'plan chunk ptah-plan-[0-9a-f]+-000 must have exactly one owner'),
        send: createChunk(who, { ...chunk(), metadata: { ...chunk().metadata, ownerReferences: [] } }),
      },
      {
        id: `config-map: ${who} forges a plan projection holding a second key`,
        policy: CONFIG_MAP_POLICY_NAME,
        who,
        expect: denied(
          CONFIG_MAP_POLICY_NAME,
          'plan projection ptah-plan-[0-9a-f]+-000 is immutable and holds one binaryData key',
        ),
        send: createConfigMap(who, {
          ...projection(),
          binaryData: { ...projection().binaryData, extra: 'AA==' },
        }),
      },
      {
        id: `config-map: ${who} forges a mutable source snapshot`,
        policy: CONFIG_MAP_POLICY_NAME,
        who,
        expect: denied(CONFIG_MAP_POLICY_NAME, 'source snapshot ptah-src-[0-9a-f]+ is immutable'),
        send: createConfigMap(who, { ...snapshot(), immutable: false }),
      },
      {
        id: `people: ${who} creates a ConfigMap of their own`,
        policy: CONFIG_MAP_POLICY_NAME,
        who,
        expect: 'admitted',
        send: createConfigMap(who, { metadata: { name: 'notes' }, data: { a: 'b' } }),
      },
      {
        id: `schema-plan: ${who} writes a plan by hand`,
        policy: SCHEMA_PLAN_POLICY_NAME,
        who,
        expect: denied(
          SCHEMA_PLAN_POLICY_NAME,
          'PtahSchemaPlan ptah-plan-[0-9a-f]+ must be owned by exactly the PtahSchema',
        ),
        send: createPlan(who, 'ptahschemaplans', {
          ...schemaPlan().plan,
          metadata: { ...schemaPlan().plan.metadata, ownerReferences: [] },
        }),
      },
      {
        id: `migration-plan: ${who} writes a plan of another manager`,
        policy: MIGRATION_PLAN_POLICY_NAME,
        who,
        expect: denied(
          MIGRATION_PLAN_POLICY_NAME,
          'PtahMigrationPlan ptah-mplan-c+ was stamped by manager image registry.example/forged',
        ),
        send: createPlan(
          who,
          'ptahmigrationplans',
          migrationPlan('registry.example/forged@sha256:' + '4'.repeat(64)),
        ),
      },
    );
  }
  const plan = schemaPlan();
  out.push(
    manager(
      'chunk: the manager creates a plan chunk',
      CHUNK_POLICY_NAME,
      'admitted',
      createChunk('manager', chunk('SELECT 1;\n')),
    ),
    manager(
      'chunk: a chunk owned by the schema, not its plan',
      CHUNK_POLICY_NAME,
      denied(CHUNK_POLICY_NAME, 'plan chunk \\S+ must have exactly one owner'),
      createChunk('manager', {
        ...chunk(),
        metadata: { ...chunk().metadata, ownerReferences: [schemaOwner()] },
      }),
    ),
    manager(
      'chunk: a chunk under another name',
      CHUNK_POLICY_NAME,
      denied(CHUNK_POLICY_NAME, 'plan chunk renamed must be named <plan>-NNN'),
      createChunk('manager', { ...chunk(), metadata: { ...chunk().metadata, name: 'renamed' } }),
    ),
    manager(
      'config-map: the manager creates a plan projection',
      CONFIG_MAP_POLICY_NAME,
      'admitted',
      createConfigMap('manager', projection('SELECT 1;\n')),
    ),
    manager(
      'config-map: a projection owned by the schema, not its plan',
      CONFIG_MAP_POLICY_NAME,
      denied(CONFIG_MAP_POLICY_NAME, 'plan projection \\S+ must have exactly one owner'),
      createConfigMap('manager', {
        ...projection(),
        metadata: { ...projection().metadata, ownerReferences: [schemaOwner()] },
      }),
    ),
    manager(
      'config-map: a mutable projection',
      CONFIG_MAP_POLICY_NAME,
      denied(CONFIG_MAP_POLICY_NAME, 'plan projection \\S+ is immutable'),
      createConfigMap('manager', { ...projection(), immutable: false }),
    ),
    manager(
      'config-map: a projection under another name',
      CONFIG_MAP_POLICY_NAME,
      denied(CONFIG_MAP_POLICY_NAME, 'plan projection renamed must be named <plan>-NNN'),
      createConfigMap('manager', {
        ...projection(),
        metadata: { ...projection().metadata, name: 'renamed' },
      }),
    ),
    manager(
      'config-map: the manager creates a ConfigMap labelled as a chunk',
      CONFIG_MAP_POLICY_NAME,
      denied(
        CONFIG_MAP_POLICY_NAME,
        'the Ptah manager creates no ConfigMap but a plan projection or a source snapshot',
      ),
      createConfigMap('manager', {
        ...projection(),
        metadata: {
          ...projection().metadata,
          labels: { ...projection().metadata.labels, 'app.kubernetes.io/component': 'plan-chunk' },
        },
      }),
    ),
    manager(
      'config-map: the manager creates a source snapshot',
      CONFIG_MAP_POLICY_NAME,
      'admitted',
      createConfigMap('manager', snapshot('SELECT 1;\n')),
    ),
    manager(
      'config-map: the manager creates any other ConfigMap',
      CONFIG_MAP_POLICY_NAME,
      denied(
        CONFIG_MAP_POLICY_NAME,
        'the Ptah manager creates no ConfigMap but a plan projection or a source snapshot',
      ),
      createConfigMap('manager', { metadata: { name: 'exfiltrate' }, data: { a: 'b' } }),
    ),
    manager(
      'config-map: a snapshot with a second annotation',
      CONFIG_MAP_POLICY_NAME,
      denied(CONFIG_MAP_POLICY_NAME, 'source snapshot \\S+ must be named'),
      createConfigMap('manager', {
        ...snapshot(),
        metadata: { ...snapshot().metadata, annotations: { ...snapshot().metadata.annotations, extra: 'x' } },
      }),
    ),
    manager(
      'config-map: a snapshot owned by another resource than its label names',
      CONFIG_MAP_POLICY_NAME,
      denied(CONFIG_MAP_POLICY_NAME, 'source snapshot \\S+ must have exactly one owner'),
      createConfigMap('manager', {
        ...snapshot(),
        metadata: {
          ...snapshot().metadata,
          labels: { ...snapshot().metadata.labels, 'operator.ptah.run/schema': 'other' },
        },
      }),
    ),
    manager(
      'deletion: the manager deletes a source snapshot',
      CONFIG_MAP_DELETION_POLICY_NAME,
      'admitted',
      () => as.manager.core.deleteNamespacedConfigMap({ namespace, name: snapshot().metadata.name, dryRun }),
    ),
    manager(
      "deletion: the manager deletes a person's ConfigMap",
      CONFIG_MAP_DELETION_POLICY_NAME,
      denied(
        CONFIG_MAP_DELETION_POLICY_NAME,
        'the Ptah manager deletes no ConfigMap but a source snapshot it made .*; orders-schema is not one',
      ),
      () => as.manager.core.deleteNamespacedConfigMap({ namespace, name: 'orders-schema', dryRun }),
    ),
    manager(
      'deletion: the manager deletes a plan projection (garbage collection does)',
      CONFIG_MAP_DELETION_POLICY_NAME,
      denied(CONFIG_MAP_DELETION_POLICY_NAME, 'the Ptah manager deletes no ConfigMap but a source snapshot'),
      () =>
        as.manager.core.deleteNamespacedConfigMap({ namespace, name: projection().metadata.name, dryRun }),
    ),
    manager(
      'schema-plan: the manager creates a plan',
      SCHEMA_PLAN_POLICY_NAME,
      'admitted',
      createPlan('manager', 'ptahschemaplans', plan.plan),
    ),
    manager(
      'schema-plan: a plan stamped by another manager image',
      SCHEMA_PLAN_POLICY_NAME,
      denied(
        SCHEMA_PLAN_POLICY_NAME,
        'PtahSchemaPlan ptah-plan-[0-9a-f]+ was stamped by manager image registry.example/old',
      ),
      createPlan(
        'manager',
        'ptahschemaplans',
        schemaPlan({ ...planInputs, managerImage: 'registry.example/old@sha256:' + '5'.repeat(64) }).plan,
      ),
    ),
    manager(
      'schema-plan: a plan without its labels',
      SCHEMA_PLAN_POLICY_NAME,
      denied(SCHEMA_PLAN_POLICY_NAME, 'PtahSchemaPlan ptah-plan-[0-9a-f]+ must be named like'),
      createPlan('manager', 'ptahschemaplans', {
        ...plan.plan,
        metadata: { ...plan.plan.metadata, labels: {} },
      }),
    ),
    manager(
      'migration-plan: the manager creates a plan',
      MIGRATION_PLAN_POLICY_NAME,
      'admitted',
      createPlan('manager', 'ptahmigrationplans', migrationPlan()),
    ),
  );
  return out;
}

/** Whether the row's request got the answer the row expects; `detail` says what it got. */
async function check(row: Row): Promise<{ readonly ok: boolean; readonly detail: string }> {
  try {
    await row.send();
    return { ok: row.expect === 'admitted', detail: 'admitted' };
  } catch (error) {
    const text = denial(error);
    return { ok: row.expect !== 'admitted' && row.expect.test(text), detail: text };
  }
}

async function failing(table: readonly Row[]): Promise<string[]> {
  const results = await Promise.all(table.map(async (r) => ({ r, c: await check(r) })));
  return results.filter((x) => !x.c.ok).map((x) => `${x.r.id} (${x.r.who}): ${x.c.detail}`);
}

// -- Sabotage: each policy broken on purpose, and the rows that must notice. ---------------------------------

interface Sabotage {
  readonly policy: string;
  readonly how: string;
  /** The broken policy object, or undefined to drop the binding. */
  readonly policyObject?: (p: k8s.V1ValidatingAdmissionPolicy) => k8s.V1ValidatingAdmissionPolicy;
  /** Rows (by id prefix and identity) that must fail while it holds. */
  readonly breaks: (r: Row) => boolean;
}

const OTHER_MANAGER = 'system:serviceaccount:elsewhere:impostor';
const withLiteral = (p: k8s.V1ValidatingAdmissionPolicy, from: string, to: string) =>
  JSON.parse(JSON.stringify(p).replaceAll(from, to)) as k8s.V1ValidatingAdmissionPolicy;

function sabotages(): Sabotage[] {
  const refusedOf = (policy: string) => (r: Row) => r.policy === policy && r.expect !== 'admitted';
  const managerAdmittedOf = (policy: string) => (r: Row) =>
    r.policy === policy && r.who === 'manager' && r.expect === 'admitted';
  return [
    { policy: STATUS_GUARD_NAME, how: 'binding dropped', breaks: refusedOf(STATUS_GUARD_NAME) },
    {
      policy: STATUS_GUARD_NAME,
      how: 'match widened from */status to every resource of the group',
      policyObject: (p) => {
        const q = structuredClone(p);
        q.spec!.matchConstraints!.resourceRules![0]!.resources = ['*', '*/status'];
        return q;
      },
      breaks: (r) => r.id.startsWith('people: ') && r.policy === STATUS_GUARD_NAME,
    },
    {
      policy: STATUS_GUARD_NAME,
      how: 'manager literal changed',
      policyObject: (p) => withLiteral(p, release.managerUsername, OTHER_MANAGER),
      breaks: managerAdmittedOf(STATUS_GUARD_NAME),
    },
    {
      policy: UNRESOLVED_RUN_GUARD_NAME,
      how: 'binding dropped',
      breaks: refusedOf(UNRESOLVED_RUN_GUARD_NAME),
    },
    {
      policy: UNRESOLVED_RUN_GUARD_NAME,
      how: 'match moved to another annotation',
      policyObject: (p) => withLiteral(p, UNRESOLVED_RUN_ANNOTATION, 'operator.ptah.run/read-requested-at'),
      breaks: (r) => r.id.startsWith('people: ') && r.policy === UNRESOLVED_RUN_GUARD_NAME,
    },
    {
      policy: UNRESOLVED_RUN_GUARD_NAME,
      how: 'manager literal changed',
      policyObject: (p) => withLiteral(p, release.managerUsername, OTHER_MANAGER),
      breaks: managerAdmittedOf(UNRESOLVED_RUN_GUARD_NAME),
    },
    {
      policy: RESOURCE_UPDATE_POLICY_NAME,
      how: 'binding dropped',
      breaks: refusedOf(RESOURCE_UPDATE_POLICY_NAME),
    },
    {
      policy: RESOURCE_UPDATE_POLICY_NAME,
      how: 'manager literal changed',
      policyObject: (p) => withLiteral(p, release.managerUsername, OTHER_MANAGER),
      breaks: refusedOf(RESOURCE_UPDATE_POLICY_NAME),
    },
    {
      policy: RESOURCE_UPDATE_POLICY_NAME,
      how: 'movable annotation widened to every key',
      policyObject: (p) => {
        const q = structuredClone(p);
        for (const v of q.spec!.validations!)
          v.expression = v.expression.replaceAll('k != variables.movable', 'false');
        return q;
      },
      breaks: (r) =>
        r.id === 'update: the manager moves another annotation' || r.id.includes('on a PtahSchema'),
    },
    ...[
      JOB_POLICY_NAME,
      CHUNK_POLICY_NAME,
      CONFIG_MAP_POLICY_NAME,
      SCHEMA_PLAN_POLICY_NAME,
      MIGRATION_PLAN_POLICY_NAME,
      CONFIG_MAP_DELETION_POLICY_NAME,
    ].map((policy): Sabotage => ({ policy, how: 'binding dropped', breaks: refusedOf(policy) })),
    ...[JOB_POLICY_NAME, SCHEMA_PLAN_POLICY_NAME, MIGRATION_PLAN_POLICY_NAME].map((policy): Sabotage => ({
      policy,
      how: 'manager image literal changed',
      policyObject: (p) =>
        withLiteral(p, release.managerImage, `registry.example/ptah-operator@sha256:${'8'.repeat(64)}`),
      // What the manager creates; the TTL it adds to a Job of a predecessor release is no creation.
      breaks: (r) => managerAdmittedOf(policy)(r) && r.id.includes(' creates '),
    })),
    {
      policy: JOB_POLICY_NAME,
      how: 'match widened to every Job',
      policyObject: (p) => {
        const q = structuredClone(p);
        q.spec!.matchConditions![0]!.expression = 'true';
        return q;
      },
      breaks: (r) => r.id.startsWith('people: ') && r.policy === JOB_POLICY_NAME,
    },
    {
      policy: CONFIG_MAP_POLICY_NAME,
      how: 'match widened to every ConfigMap',
      policyObject: (p) => {
        const q = structuredClone(p);
        q.spec!.matchConditions![0]!.expression = 'true';
        return q;
      },
      breaks: (r) => r.id.startsWith('people: ') && r.policy === CONFIG_MAP_POLICY_NAME,
    },
    {
      policy: CONFIG_MAP_DELETION_POLICY_NAME,
      how: 'manager literal changed',
      policyObject: (p) => withLiteral(p, release.managerUsername, OTHER_MANAGER),
      breaks: refusedOf(CONFIG_MAP_DELETION_POLICY_NAME),
    },
  ];
}

async function install(guard: GuardPolicy): Promise<void> {
  await reg.createValidatingAdmissionPolicy({ body: guard.policy });
  await reg.createValidatingAdmissionPolicyBinding({ body: guard.binding });
}

async function replacePolicy(body: k8s.V1ValidatingAdmissionPolicy): Promise<void> {
  const name = body.metadata!.name!;
  const live = await reg.readValidatingAdmissionPolicy({ name });
  await reg.replaceValidatingAdmissionPolicy({
    name,
    body: { ...body, metadata: { ...body.metadata, resourceVersion: live.metadata!.resourceVersion } },
  });
}

before(async () => {
  cp = await startControlPlane();
  namespace = cp.testNamespace;
  const admin = identity(cp.kubeconfigs.admin);
  as.clusterAdmin = admin;
  as.manager = identity(cp.kubeconfigs.manager);
  as.user = identity(cp.kubeconfigs.user);
  // A namespace admin with a client certificate of its own, signed by the cluster CA.
  const pki = join(cp.dir, 'pki');
  const cert = issueCertificate(
    pki,
    { certFile: join(pki, 'ca.crt'), keyFile: join(pki, 'ca.key') },
    { name: 'namespace-admin', commonName: 'namespace-admin@example.com', usage: 'client' },
  );
  as.namespaceAdmin = identity(
    writeKubeconfig(join(cp.dir, 'namespace-admin.kubeconfig'), {
      server: cp.server,
      caFile: cp.caFile,
      userName: 'namespace-admin@example.com',
      credentials: cert,
      namespace,
    }),
  );

  const ext = new k8s.KubeConfig();
  ext.loadFromFile(cp.kubeconfigs.admin);
  await installCrds(ext);
  await createAll(admin, 'deploy/rbac/manager.yaml');

  // The ordinary user and the namespace admin hold every verb on the operator's kinds and their status in
  // the namespace (RBAC granted too much), so what refuses them below is the policy, not RBAC.
  const rbac = ext.makeApiClient(k8s.RbacAuthorizationV1Api);
  await rbac.createNamespacedRole({
    namespace,
    body: {
      metadata: { name: 'ptah-everything' },
      rules: [
        { apiGroups: [API_GROUP], resources: ['*'], verbs: ['*'] },
        { apiGroups: [''], resources: ['configmaps'], verbs: ['*'] },
        { apiGroups: ['batch'], resources: ['jobs'], verbs: ['*'] },
      ],
    },
  });
  const subjects = [
    { apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: cp.identities.user },
    { apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'namespace-admin@example.com' },
  ];
  await rbac.createNamespacedRoleBinding({
    namespace,
    body: {
      metadata: { name: 'ptah-everything' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'ptah-everything' },
      subjects,
    },
  });
  await rbac.createNamespacedRoleBinding({
    namespace,
    body: {
      metadata: { name: 'namespace-admin' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'admin' },
      subjects: [subjects[1]!],
    },
  });

  await createObjects(admin);
  await createTypedObjects(admin);

  release = {
    managerUsername: cp.identities.manager,
    managerImage: MANAGER_IMAGE,
    controllerStateVersion: CONTROLLER_STATE_VERSION,
  };
  policies = admissionPolicies(release);
  reg = ext.makeApiClient(k8s.AdmissionregistrationV1Api);
  for (const p of policies) await install(p);
});

after(async () => {
  await cp?.stop();
});

describe('the admission policies on the real API server', () => {
  it('refuse each request they exist to refuse, as every identity that could send it, and admit the manager', async () => {
    const table = rows();
    // Policies reach the API server's admission chain asynchronously; past the wait, name the rows that fail.
    await eventually('every row answered as expected', async () =>
      (await failing(table)).length === 0 ? true : undefined,
    ).catch(() => undefined);
    const bad = await failing(table);
    if (bad.length > 0) process.stderr.write(`${bad.join('\n')}\n`);
    assert.deepEqual(bad, []);
    // Every identity is in the table for every refusing rule, and every policy has an admitted manager row
    // or an admitted people row.
    for (const p of policies) {
      const name = p.policy.metadata!.name!;
      assert.ok(
        table.some((r) => r.policy === name && r.expect !== 'admitted'),
        `${name} refuses something`,
      );
      assert.ok(
        table.some((r) => r.policy === name && r.expect === 'admitted'),
        `${name} admits something`,
      );
    }
  });

  it('rows fail when the policy they depend on is broken on purpose: dropped, widened, its literal changed', async () => {
    const table = rows();
    for (const s of sabotages()) {
      const guard = policies.find((p) => p.policy.metadata!.name === s.policy)!;
      const dependent = table.filter(s.breaks);
      assert.ok(dependent.length > 0, `${s.policy} ${s.how}: some row depends on it`);
      if (s.policyObject === undefined) {
        await reg.deleteValidatingAdmissionPolicyBinding({ name: s.policy });
      } else {
        await replacePolicy(s.policyObject(guard.policy));
      }
      await eventually(
        `${s.policy} ${s.how}: every dependent row fails`,
        async () => {
          const bad = new Set(await failing(dependent));
          return bad.size === dependent.length ? true : undefined;
        },
        20_000,
      );
      // Put the policy back and see the table whole again, before the next sabotage.
      if (s.policyObject === undefined) {
        await reg.createValidatingAdmissionPolicyBinding({ body: guard.binding });
      } else {
        await replacePolicy(guard.policy);
      }
      await eventually(`${s.policy} restored`, async () =>
        (await failing(table)).length === 0 ? true : undefined,
      ).catch(() => undefined);
      assert.deepEqual(await failing(table), [], `${s.policy} restored after ${s.how}`);
    }
  });
});
