// vcontrollerwrite and vpodintent on the real API server, table-driven like the policy suite: the manager's
// admission server runs in this process with the handlers and rebuilds the manager process wires
// (src/controller/admission-sources.ts), registered by the configuration builder the chart and the e2e
// harness use. For each webhook, the request it exists to refuse, sent by each identity that could send it
// (an ordinary user and a namespace admin with every verb on Jobs, ConfigMaps and Pods, a cluster admin in
// system:masters), is refused with a message naming the rule; the manager's own write (the Job its claim
// builds, the snapshot its source makes) is admitted, and a Job with one thing changed is refused naming
// it. Then each webhook is broken on purpose (its registration dropped, its match narrowed to nothing, its
// handler admitting everything, another manager named) and the rows that depend on it must fail.
// The rebuilds read the manager's watches first, run here as the manager's identity under the release's
// RBAC; a cache that lags the manager's claim must not refuse the Job that claim builds.
// Requests are server-side dry runs, except the one Job made for real so its Pod and update rows exist.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import * as k8s from '@kubernetes/client-node';
import { pino } from 'pino';
import { startAdmissionServer, type AdmissionServer } from '../../src/admission/server.ts';
import { allowed, type AdmissionHandler } from '../../src/admission/review.ts';
import { approvalWebhookConfigurations } from '../../src/admission/webhook-configurations.ts';
import { controllerWebhooks, WEBHOOK_PATHS } from '../../src/admission/webhooks.ts';
import { sha256Digest } from '../../src/api/digest.ts';
import type { ConfigMapObject } from '../../src/api/core.ts';
import { API_GROUP, API_VERSION, CONTROLLER_STATE_VERSION, GROUP_VERSION } from '../../src/api/meta.ts';
import type { Claim, PtahSchema } from '../../src/api/ptah-schema.ts';
import { controllerWriteSources } from '../../src/controller/admission-sources.ts';
import { buildClaim } from '../../src/controller/claims/claim.ts';
import type { ManagerIdentity } from '../../src/controller/jobs/operation-job.ts';
import { PtahObjects } from '../../src/controller/runtime/kube.ts';
import { schemaJob } from '../../src/controller/schema/schema-job.ts';
import { schemaView } from '../../src/controller/schema/view.ts';
import { ManagerWatches, type CacheLookup } from '../../src/controller/watches.ts';
import { buildSourceSnapshot } from '../../src/sources/snapshot-config-map.ts';
import type { PtahSchemaPlan } from '../../src/api/ptah-schema-plan.ts';
import type { PtahSchemaPlanChunk } from '../../src/api/ptah-schema-plan-chunk.ts';
import { buildSchemaPlan, type PlanInputs } from '../../src/plan-store/build-plan.ts';
import {
  coordinationDigest,
  migrationPlanFingerprint,
  migrationPlanName,
  policyFingerprint,
} from '../../src/api/fingerprint.ts';
import type { ExecutionBinding } from '../../src/api/ptah-schema.ts';
import type { PtahMigration } from '../../src/api/ptah-migration.ts';
import type {
  MigrationPlanBinding,
  PlannedMigration,
  PtahMigrationPlan,
} from '../../src/api/ptah-migration-plan.ts';
import { buildPlanChunk } from '../../src/plan-store/plan-chunk.ts';
import { buildPlanProjection } from '../../src/plan-store/plan-projection.ts';
import { startControlPlane, type ControlPlane } from '../env/controlplane.ts';
import { eventually } from '../env/eventually.ts';
import { installCrds } from '../env/install-crds.ts';
import { writeKubeconfig } from '../env/kubeconfig.ts';
import { createCertificateAuthority, issueCertificate } from '../env/pki.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

type Who = 'user' | 'namespaceAdmin' | 'clusterAdmin' | 'manager';
const PEOPLE: readonly Who[] = ['user', 'namespaceAdmin', 'clusterAdmin'];
const d = (s: string) => sha256Digest(s);

interface Identity {
  readonly kc: k8s.KubeConfig;
  readonly core: k8s.CoreV1Api;
  readonly batch: k8s.BatchV1Api;
  readonly objects: k8s.CustomObjectsApi;
}

let cp: ControlPlane;
let namespace: string;
let server: AdmissionServer;
let reg: k8s.AdmissionregistrationV1Api;
let registration: k8s.V1ValidatingWebhookConfiguration;
const as = {} as Record<Who, Identity>;

function identity(file: string): Identity {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(file);
  return {
    kc,
    core: kc.makeApiClient(k8s.CoreV1Api),
    batch: kc.makeApiClient(k8s.BatchV1Api),
    objects: kc.makeApiClient(k8s.CustomObjectsApi),
  };
}

const at = (plural: string) => ({ group: API_GROUP, version: API_VERSION, namespace, plural });
const dryRun = 'All';
const mergePatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);
const jsonPatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.JsonPatch);

const builtBy: ManagerIdentity = {
  managerImage: `registry.example/ptah-operator@sha256:${'1'.repeat(64)}`,
  managerRevision: 'abc1234',
  controllerStateVersion: CONTROLLER_STATE_VERSION,
  ptahVersion: '0.1.0',
  runnerImage: `registry.example/ptah-runner@sha256:${'2'.repeat(64)}`,
};

// -- The webhook server, with a handler that a sabotage can swap. ------------------------------------------

let handlers: Record<string, AdmissionHandler> = {};
const sabotaged = new Map<string, AdmissionHandler>();
const through =
  (path: string): AdmissionHandler =>
  (request) =>
    (sabotaged.get(path) ?? handlers[path]!)(request);

let watches: ManagerWatches;
const stopWatches = new AbortController();

function installHandlers(managerUsername: string, caches: CacheLookup = watches): void {
  const sources = controllerWriteSources(as.manager.kc, builtBy, managerUsername, caches);
  handlers = controllerWebhooks(sources.writes, sources.pods);
}

// -- What the rows write: the resource, its source, its claim, the Job and snapshot they make. -----------

const SOURCE_SQL = 'CREATE TABLE orders (id bigint);\n';
let schema: PtahSchema;
/** The resource as it was before its claim was written: what a cache that lags the claim holds. */
let unclaimed: PtahSchema;
let claim: Claim;
let job: k8s.V1Job;
let snapshot: ConfigMapObject;
/** A published plan: its chunk exists and is committed in its status. */
let chunk: PtahSchemaPlanChunk;
let projection: ConfigMapObject;
/** A plan whose chunk was never written: nothing may project it. */
let unpublishedProjection: ConfigMapObject;
/** The plan the manager would publish now: every binding it takes from its inputs is what `orders` records. */
let livePlan: PtahSchemaPlan;
/** The same for the PtahMigration `shop`. */
let liveMigrationPlan: PtahMigrationPlan;
let migration: PtahMigration;

const EXECUTION: ExecutionBinding = {
  epoch: 'v1-' + 'e'.repeat(32),
  managerImage: builtBy.managerImage,
  managerRevision: builtBy.managerRevision,
  controllerStateVersion: builtBy.controllerStateVersion,
  ptahVersion: builtBy.ptahVersion,
  runnerImage: builtBy.runnerImage,
  runnerProtocolVersion: 1,
};

/** What `orders` records now, as the manager's plan binds it (and what the run reported beside). */
function liveInputs(source: { readonly uid: string; readonly contentDigest: string }): PlanInputs {
  const { epoch, ...releases } = EXECUTION;
  return {
    sourceType: 'ConfigMap',
    configMapUID: source.uid,
    contentDigest: source.contentDigest,
    coordinationDigest: coordinationDigest({ engine: 'postgres', namespace, coordinationKey: 'orders-db' }),
    targetIdentityDigest: d('the database the Plan run read'),
    observedStateFingerprint: d('observed'),
    desiredStateFingerprint: d('desired'),
    policyFingerprint: policyFingerprint(undefined),
    executionEpoch: epoch,
    ...releases,
    dialect: 'postgres',
    destructive: false,
    statementCount: 1,
  };
}

const LIVE_PLAN_SQL = Buffer.from('CREATE TABLE live (id bigint);\n');
/** The manager's plan with some of its inputs changed, the fingerprint and name made from them. */
const livePlanWith = (inputs: Partial<PlanInputs>): PtahSchemaPlan =>
  buildSchemaPlan(schema, { ...liveSourceInputs, ...inputs }, LIVE_PLAN_SQL).plan;
let liveSourceInputs: PlanInputs;

/** A migration plan as the manager builds one for `shop`, the bindings changed by `edit`. */
function migrationPlanOf(edit: Partial<MigrationPlanBinding> = {}): PtahMigrationPlan {
  const { epoch, ...releases } = EXECUTION;
  const binding: MigrationPlanBinding = {
    contractVersion: 2,
    migrationUID: migration.metadata.uid!,
    sourceType: 'ConfigMap',
    configMapUID: migration.status!.resolution!.configMapUID!,
    contentDigest: migration.status!.resolution!.contentDigest,
    coordinationDigest: coordinationDigest({ engine: 'postgres', namespace, coordinationKey: 'shop-db' }),
    targetIdentityDigest: d('the database the History run read'),
    historyFingerprint: d('the history the History run read'),
    currentVersion: '3',
    transactionMode: 'unset',
    executionEpoch: epoch,
    ...releases,
    dialect: 'postgres',
    ...edit,
  };
  const migrations: PlannedMigration[] = [
    {
      version: '4',
      versionKey: '0004',
      description: 'add orders',
      checksum: 'c4',
      checkpoint: false,
      transactionMode: 'file',
    },
  ];
  const fingerprint = migrationPlanFingerprint(binding, migrations);
  return {
    apiVersion: GROUP_VERSION,
    kind: 'PtahMigrationPlan',
    metadata: {
      name: migrationPlanName(fingerprint),
      namespace,
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
          uid: migration.metadata.uid!,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: {
      migrationRef: { name: 'shop', uid: migration.metadata.uid! },
      fingerprint,
      binding,
      migrations,
    },
  };
}

const planInputs = (): PlanInputs => ({
  sourceType: 'ConfigMap',
  configMapUID: 'cm-uid',
  contentDigest: d('files'),
  coordinationDigest: d('realm'),
  targetIdentityDigest: d('route'),
  observedStateFingerprint: d('observed'),
  desiredStateFingerprint: d('desired'),
  policyFingerprint: d('policy'),
  executionEpoch: 'v1-' + 'e'.repeat(32),
  managerImage: builtBy.managerImage,
  managerRevision: builtBy.managerRevision,
  controllerStateVersion: builtBy.controllerStateVersion,
  ptahVersion: builtBy.ptahVersion,
  runnerImage: builtBy.runnerImage,
  runnerProtocolVersion: 1,
  dialect: 'postgres',
  destructive: false,
  statementCount: 1,
});

/** A plan of `sql` created by the manager; with `publish`, its chunk written and committed as publication does. */
async function createPlan(sql: string, publish: boolean) {
  const built = buildSchemaPlan(schema, planInputs(), Buffer.from(sql));
  const plan = (await as.manager.objects.createNamespacedCustomObject({
    ...at('ptahschemaplans'),
    body: built.plan,
  })) as PtahSchemaPlan;
  const piece = built.pieces[0]!;
  const stored = buildPlanChunk(plan, piece);
  if (publish) {
    const written = (await as.manager.objects.createNamespacedCustomObject({
      ...at('ptahschemaplanchunks'),
      body: stored,
    })) as PtahSchemaPlanChunk;
    await as.manager.objects.replaceNamespacedCustomObjectStatus({
      ...at('ptahschemaplans'),
      name: plan.metadata.name,
      body: {
        ...plan,
        status: {
          publishedChunks: [{ name: piece.name, uid: written.metadata.uid!, index: 0 }],
        },
      },
    });
  }
  return { chunk: stored, projection: buildPlanProjection(plan, piece.name, piece.bytes) };
}

async function createObjects(): Promise<void> {
  await as.clusterAdmin.core.createNamespacedConfigMap({
    namespace,
    body: { metadata: { name: 'orders-schema' }, data: { 'schema.sql': SOURCE_SQL } },
  });
  schema = (await as.clusterAdmin.objects.createNamespacedCustomObject({
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
  })) as PtahSchema;
  unclaimed = schema;
  const source = (await as.manager.core.readNamespacedConfigMap({
    namespace,
    name: 'orders-schema',
  })) as ConfigMapObject;
  snapshot = buildSourceSnapshot(
    schema,
    { name: 'orders-schema', files: [{ key: 'schema.sql' }] },
    source,
  ).configMap;
  const snapshotDigest = snapshot.metadata.annotations!['operator.ptah.run/content-digest']!;
  claim = buildClaim(
    {
      resourceUID: schema.metadata.uid!,
      resourceName: 'orders',
      generation: 1,
      type: 'Observe',
      attempt: 1,
      inputs: {
        contentDigest: snapshotDigest,
        snapshotName: snapshot.metadata.name,
        configMapUID: source.metadata.uid!,
        coordinationDigest: d('realm'),
        policyFingerprint: d('policy'),
        executionBinding: {
          epoch: 'v1-' + 'e'.repeat(32),
          managerImage: builtBy.managerImage,
          managerRevision: builtBy.managerRevision,
          controllerStateVersion: builtBy.controllerStateVersion,
          ptahVersion: builtBy.ptahVersion,
          runnerImage: builtBy.runnerImage,
          runnerProtocolVersion: 1,
        },
        activeDeadlineSeconds: 600,
      },
    },
    new Date(),
  ) as Claim;
  // The claim is durable in status before its Job exists, as the manager writes it.
  const live = (await as.manager.objects.getNamespacedCustomObject({
    ...at('ptahschemas'),
    name: 'orders',
  })) as PtahSchema;
  schema = (await as.manager.objects.replaceNamespacedCustomObjectStatus({
    ...at('ptahschemas'),
    name: 'orders',
    body: {
      ...live,
      status: {
        phase: 'Observing',
        claim,
        executionBinding: EXECUTION,
        resolution: {
          sourceType: 'ConfigMap',
          configMapName: 'orders-schema',
          configMapUID: source.metadata.uid!,
          contentDigest: snapshotDigest,
          snapshotName: snapshot.metadata.name,
          size: SOURCE_SQL.length,
          resolvedAt: new Date().toISOString(),
        },
      },
    },
  })) as PtahSchema;
  liveSourceInputs = liveInputs({ uid: source.metadata.uid!, contentDigest: snapshotDigest });
  livePlan = livePlanWith({});
  await createMigration();
  ({ chunk, projection } = await createPlan('CREATE TABLE published (id bigint);\n', true));
  unpublishedProjection = (await createPlan('CREATE TABLE never (id bigint);\n', false)).projection;
  job = await schemaJob(
    { core: as.manager.core, ptah: new PtahObjects(as.manager.objects) },
    schemaView(schema),
    claim,
    builtBy,
    new Date(),
  );
}

/** The PtahMigration `shop`, its source resolved and its execution binding recorded as the manager writes them. */
async function createMigration(): Promise<void> {
  const created = (await as.clusterAdmin.objects.createNamespacedCustomObject({
    ...at('ptahmigrations'),
    body: {
      apiVersion: GROUP_VERSION,
      kind: 'PtahMigration',
      metadata: { name: 'shop' },
      spec: {
        target: { engine: 'postgres', coordinationKey: 'shop-db', urlFrom: { name: 'shop-db', key: 'url' } },
        desired: { configMap: { name: 'shop-migrations', files: [{ key: '0004_add_orders.sql' }] } },
      },
    },
  })) as PtahMigration;
  migration = (await as.manager.objects.replaceNamespacedCustomObjectStatus({
    ...at('ptahmigrations'),
    name: 'shop',
    body: {
      ...created,
      status: {
        phase: 'Reading',
        executionBinding: EXECUTION,
        resolution: {
          sourceType: 'ConfigMap',
          configMapName: 'shop-migrations',
          configMapUID: '0b7f3c1e-0000-4000-8000-000000000001',
          contentDigest: d('shop migrations'),
          size: 10,
          resolvedAt: new Date().toISOString(),
        },
      },
    },
  })) as PtahMigration;
  liveMigrationPlan = migrationPlanOf();
}

/** A copy of the manager's Job changed by `edit`. */
function changed(edit: (j: k8s.V1Job) => void): k8s.V1Job {
  const copy = structuredClone(job);
  edit(copy);
  return copy;
}
const podSpec = (j: k8s.V1Job) => j.spec!.template.spec!;
const main = (j: k8s.V1Job) => podSpec(j).containers.find((c) => c.name === 'ptah')!;

// -- The table. ---------------------------------------------------------------------------------------------

interface Row {
  readonly id: string;
  readonly webhook: 'vcontrollerwrite' | 'vpodintent';
  readonly who: Who;
  readonly expect: RegExp | 'admitted';
  send(): Promise<unknown>;
}

const refused = (rule: string, message: string) =>
  new RegExp(`admission webhook "${rule}\\.operator\\.ptah\\.run" denied the request: ${rule}: ${message}`);

const createJob = (who: Who, body: k8s.V1Job) => () =>
  as[who].batch.createNamespacedJob({ namespace, body, dryRun });
const createConfigMap = (who: Who, body: ConfigMapObject) => () =>
  as[who].core.createNamespacedConfigMap({ namespace, body: body as k8s.V1ConfigMap, dryRun });
const createSchemaPlan = (who: Who, body: PtahSchemaPlan) => () =>
  as[who].objects.createNamespacedCustomObject({ ...at('ptahschemaplans'), body, dryRun });
const createMigrationPlan = (who: Who, body: PtahMigrationPlan) => () =>
  as[who].objects.createNamespacedCustomObject({ ...at('ptahmigrationplans'), body, dryRun });
const createChunk = (who: Who, body: PtahSchemaPlanChunk) => () =>
  as[who].objects.createNamespacedCustomObject({ ...at('ptahschemaplanchunks'), body, dryRun });

/** The name of the Job made for real, and of the Pod its controller made. */
const live = { job: '', pod: '' };

function rows(): Row[] {
  const out: Row[] = [];
  for (const who of PEOPLE) {
    out.push(
      {
        id: 'a person creates the exact operation Job the claim names',
        webhook: 'vcontrollerwrite',
        who,
        expect: refused(
          'vcontrollerwrite',
          `only the manager \\(${cp.identities.manager}\\) creates operation Job ${job.metadata!.name}`,
        ),
        send: createJob(who, job),
      },
      {
        id: 'a person creates the exact source snapshot',
        webhook: 'vcontrollerwrite',
        who,
        expect: refused(
          'vcontrollerwrite',
          `only the manager .* creates source snapshot ${snapshot.metadata.name}`,
        ),
        send: createConfigMap(who, snapshot),
      },
      {
        id: 'a person creates the exact schema plan the manager would publish',
        webhook: 'vcontrollerwrite',
        who,
        expect: refused(
          'vcontrollerwrite',
          `only the manager .* creates schema plan ${livePlan.metadata.name}`,
        ),
        send: createSchemaPlan(who, livePlan),
      },
      {
        id: 'a person creates the exact migration plan the manager would publish',
        webhook: 'vcontrollerwrite',
        who,
        expect: refused(
          'vcontrollerwrite',
          `only the manager .* creates migration plan ${liveMigrationPlan.metadata.name}`,
        ),
        send: createMigrationPlan(who, liveMigrationPlan),
      },
      {
        id: 'a person relabels a stored schema plan',
        webhook: 'vcontrollerwrite',
        who,
        expect: refused(
          'vcontrollerwrite',
          `schema plan ${chunk.metadata.ownerReferences![0]!.name} is never changed but for finalizers; .* changed: metadata.labels\\["extra"\\]`,
        ),
        send: () =>
          as[who].objects.patchNamespacedCustomObject(
            {
              ...at('ptahschemaplans'),
              name: chunk.metadata.ownerReferences![0]!.name,
              body: { metadata: { labels: { extra: 'x' } } },
              dryRun,
            },
            mergePatch,
          ),
      },
      {
        id: 'a person creates the exact plan chunk',
        webhook: 'vcontrollerwrite',
        who,
        expect: refused('vcontrollerwrite', `only the manager .* creates plan chunk ${chunk.metadata.name}`),
        send: createChunk(who, chunk),
      },
      {
        id: 'a person creates the exact plan projection',
        webhook: 'vcontrollerwrite',
        who,
        expect: refused(
          'vcontrollerwrite',
          `only the manager .* creates plan projection ${projection.metadata.name}`,
        ),
        send: createConfigMap(who, projection),
      },
      {
        id: 'a person relabels the published plan chunk',
        webhook: 'vcontrollerwrite',
        who,
        expect: refused(
          'vcontrollerwrite',
          `plan chunk ${chunk.metadata.name} is never changed but for finalizers; .* changed: metadata.labels\\["extra"\\]`,
        ),
        send: () =>
          as[who].objects.patchNamespacedCustomObject(
            {
              ...at('ptahschemaplanchunks'),
              name: chunk.metadata.name,
              body: { metadata: { labels: { extra: 'x' } } },
              dryRun,
            },
            mergePatch,
          ),
      },
      {
        id: 'a person changes an annotation of the running operation Job',
        webhook: 'vcontrollerwrite',
        who,
        expect: refused(
          'vcontrollerwrite',
          `operation Job ${live.job} is changed only by the manager adding its cleanup TTL; .* changed: metadata.annotations\\["operator.ptah.run/input-fingerprint"\\]`,
        ),
        send: () =>
          as[who].batch.patchNamespacedJob(
            {
              namespace,
              name: live.job,
              body: { metadata: { annotations: { 'operator.ptah.run/input-fingerprint': d('other') } } },
              dryRun,
            },
            mergePatch,
          ),
      },
      {
        id: 'a person creates a Pod under the operation Job',
        webhook: 'vpodintent',
        who,
        expect: refused('vpodintent', 'only the Job controller creates operation Pods'),
        send: async () => {
          const pod = await as.manager.core.readNamespacedPod({ namespace, name: live.pod });
          return as[who].core.createNamespacedPod({
            namespace,
            body: {
              metadata: {
                name: `${live.pod}-copy`,
                labels: pod.metadata!.labels!,
                ownerReferences: pod.metadata!.ownerReferences!,
              },
              spec: pod.spec!,
            },
            dryRun,
          });
        },
      },
      {
        id: 'a person relabels the operation Pod',
        webhook: 'vpodintent',
        who,
        expect: refused(
          'vpodintent',
          `operation Pod ${live.pod} runs its Job's template unchanged; .* changed: metadata.labels\\["operator.ptah.run/operation"\\]`,
        ),
        send: () =>
          as[who].core.patchNamespacedPod(
            {
              namespace,
              name: live.pod,
              body: { metadata: { labels: { 'operator.ptah.run/operation': 'apply' } } },
              dryRun,
            },
            mergePatch,
          ),
      },
    );
  }
  out.push(
    {
      id: 'a cluster admin adds an ephemeral container to the operation Pod',
      webhook: 'vpodintent',
      who: 'clusterAdmin',
      expect: refused(
        'vpodintent',
        `operation Pod ${live.pod} runs its Job's template; no ephemeralcontainers change reaches it`,
      ),
      send: () =>
        as.clusterAdmin.core.patchNamespacedPodEphemeralcontainers(
          {
            namespace,
            name: live.pod,
            body: [
              {
                op: 'add',
                path: '/spec/ephemeralContainers',
                value: [{ name: 'debug', image: 'busybox', targetContainerName: 'ptah' }],
              },
            ],
            dryRun,
          },
          jsonPatch,
        ),
    },
    {
      id: 'the manager creates the Job its claim builds',
      webhook: 'vcontrollerwrite',
      who: 'manager',
      expect: 'admitted',
      send: createJob('manager', job),
    },
    {
      id: 'the manager creates the snapshot its source makes',
      webhook: 'vcontrollerwrite',
      who: 'manager',
      expect: 'admitted',
      send: createConfigMap('manager', snapshot),
    },
    {
      id: 'the manager creates the schema plan its resource binds now',
      webhook: 'vcontrollerwrite',
      who: 'manager',
      expect: 'admitted',
      send: createSchemaPlan('manager', livePlan),
    },
    {
      id: 'the manager creates the migration plan its resource binds now',
      webhook: 'vcontrollerwrite',
      who: 'manager',
      expect: 'admitted',
      send: createMigrationPlan('manager', liveMigrationPlan),
    },
    ...(
      [
        ['contentDigest', { contentDigest: d('other files') }],
        ['executionEpoch', { executionEpoch: 'v1-' + 'f'.repeat(32) }],
        ['policyFingerprint', { policyFingerprint: d('another policy') }],
        ['configMapUID, coordinationDigest', { configMapUID: 'another-cm', coordinationDigest: d('x') }],
      ] as const
    ).map(([fields, inputs]): Row => {
      const plan = livePlanWith(inputs);
      return {
        id: `the manager creates a schema plan binding another ${fields}`,
        webhook: 'vcontrollerwrite',
        who: 'manager',
        expect: refused(
          'vcontrollerwrite',
          `schema plan ${plan.metadata.name} is refused: its bindings differ from what PtahSchema orders records now: ${fields}$`,
        ),
        send: createSchemaPlan('manager', plan),
      };
    }),
    {
      id: 'the manager creates a schema plan whose binding no longer hashes to its fingerprint',
      webhook: 'vcontrollerwrite',
      who: 'manager',
      expect: refused(
        'vcontrollerwrite',
        `schema plan ${livePlan.metadata.name} is refused: its bindings differ from what PtahSchema orders records now: contentDigest, fingerprint$`,
      ),
      send: createSchemaPlan('manager', {
        ...livePlan,
        spec: { ...livePlan.spec, binding: { ...livePlan.spec.binding, contentDigest: d('other files') } },
      }),
    },
    {
      id: 'the manager creates a schema plan with a label of its own',
      webhook: 'vcontrollerwrite',
      who: 'manager',
      expect: refused(
        'vcontrollerwrite',
        `schema plan ${livePlan.metadata.name} is refused: it is not the object the plan builder makes for PtahSchema orders: metadata.labels\\["extra"\\]`,
      ),
      send: createSchemaPlan('manager', {
        ...livePlan,
        metadata: { ...livePlan.metadata, labels: { ...livePlan.metadata.labels, extra: 'x' } },
      }),
    },
    {
      id: 'the manager creates a schema plan owned by a PtahSchema of another UID',
      webhook: 'vcontrollerwrite',
      who: 'manager',
      expect: refused(
        'vcontrollerwrite',
        `schema plan ${livePlan.metadata.name} is refused: its owner PtahSchema orders with UID 0b7f3c1e-0000-4000-8000-00000000dead does not exist`,
      ),
      send: createSchemaPlan('manager', {
        ...livePlan,
        metadata: {
          ...livePlan.metadata,
          ownerReferences: [
            { ...livePlan.metadata.ownerReferences![0]!, uid: '0b7f3c1e-0000-4000-8000-00000000dead' },
          ],
        },
      }),
    },
    ...(
      [
        ['contentDigest', { contentDigest: d('other migrations') }],
        ['executionEpoch', { executionEpoch: 'v1-' + 'f'.repeat(32) }],
        ['transactionMode', { transactionMode: 'none' }],
      ] as const
    ).map(([fields, edit]): Row => {
      const plan = migrationPlanOf(edit);
      return {
        id: `the manager creates a migration plan binding another ${fields}`,
        webhook: 'vcontrollerwrite',
        who: 'manager',
        expect: refused(
          'vcontrollerwrite',
          `migration plan ${plan.metadata.name} is refused: its bindings differ from what PtahMigration shop records now: ${fields}$`,
        ),
        send: createMigrationPlan('manager', plan),
      };
    }),
    {
      id: 'the manager creates the chunk its plan records',
      webhook: 'vcontrollerwrite',
      who: 'manager',
      expect: 'admitted',
      send: createChunk('manager', chunk),
    },
    {
      id: 'the manager creates the projection of a committed chunk',
      webhook: 'vcontrollerwrite',
      who: 'manager',
      expect: 'admitted',
      send: createConfigMap('manager', projection),
    },
    {
      id: 'the manager creates a chunk with other bytes of the same size',
      webhook: 'vcontrollerwrite',
      who: 'manager',
      expect: refused(
        'vcontrollerwrite',
        `plan chunk ${chunk.metadata.name} cannot be rebuilt: chunk ${chunk.metadata.name} does not match its digest`,
      ),
      send: createChunk('manager', {
        ...chunk,
        spec: {
          data: Buffer.from(
            'DROP   TABLE published (id bigint);\n'.slice(0, Buffer.from(chunk.spec.data, 'base64').length),
          ).toString('base64'),
        },
      }),
    },
    {
      id: 'the manager creates a chunk with a label of its own',
      webhook: 'vcontrollerwrite',
      who: 'manager',
      expect: refused(
        'vcontrollerwrite',
        `plan chunk ${chunk.metadata.name} is not the object its plan rebuilds: metadata.labels\\["extra"\\]`,
      ),
      send: createChunk('manager', {
        ...chunk,
        metadata: { ...chunk.metadata, labels: { ...chunk.metadata.labels, extra: 'x' } },
      }),
    },
    {
      id: 'the manager creates a projection with other bytes',
      webhook: 'vcontrollerwrite',
      who: 'manager',
      expect: refused(
        'vcontrollerwrite',
        `plan projection ${projection.metadata.name} cannot be rebuilt: its bytes differ from those of chunk`,
      ),
      send: createConfigMap('manager', {
        ...projection,
        binaryData: { chunk: Buffer.from('DROP TABLE orders;\n').toString('base64') },
      }),
    },
    {
      id: 'the manager creates a projection of a chunk never published',
      webhook: 'vcontrollerwrite',
      who: 'manager',
      expect: refused(
        'vcontrollerwrite',
        `plan projection ${unpublishedProjection.metadata.name} cannot be rebuilt: chunk \\S+ is not the one plan \\S+ committed`,
      ),
      send: createConfigMap('manager', unpublishedProjection),
    },
    {
      id: 'the manager adds the cleanup TTL to its Job',
      webhook: 'vcontrollerwrite',
      who: 'manager',
      expect: 'admitted',
      send: () =>
        as.manager.batch.patchNamespacedJob(
          { namespace, name: live.job, body: { spec: { ttlSecondsAfterFinished: 300 } }, dryRun },
          mergePatch,
        ),
    },
    {
      id: 'the manager creates its Job with one annotation changed',
      webhook: 'vcontrollerwrite',
      who: 'manager',
      expect: refused(
        'vcontrollerwrite',
        `operation Job ${job.metadata!.name} is not the object PtahSchema orders rebuilds: metadata.annotations\\["operator.ptah.run/input-fingerprint"\\] is "${d('other')}"`,
      ),
      send: createJob(
        'manager',
        changed((j) => (j.metadata!.annotations!['operator.ptah.run/input-fingerprint'] = d('other'))),
      ),
    },
    {
      id: 'the manager creates its Job with an extra volume',
      webhook: 'vcontrollerwrite',
      who: 'manager',
      expect: refused(
        'vcontrollerwrite',
        `.*spec.template.spec.volumes\\[name=extra\\] is there, which the rebuild does not have`,
      ),
      send: createJob(
        'manager',
        changed((j) => podSpec(j).volumes!.push({ name: 'extra', emptyDir: {} })),
      ),
    },
    {
      id: 'the manager creates its Job with another image',
      webhook: 'vcontrollerwrite',
      who: 'manager',
      expect: refused(
        'vcontrollerwrite',
        `.*spec.template.spec.containers\\[name=ptah\\].image is "registry.example/other@sha256:`,
      ),
      send: createJob(
        'manager',
        changed((j) => (main(j).image = `registry.example/other@sha256:${'3'.repeat(64)}`)),
      ),
    },
    {
      id: 'the manager creates its Job with a command of its own',
      webhook: 'vcontrollerwrite',
      who: 'manager',
      expect: refused(
        'vcontrollerwrite',
        `.*spec.template.spec.containers\\[name=ptah\\].command is \\["sh"\\], which the rebuild does not have`,
      ),
      send: createJob(
        'manager',
        changed((j) => (main(j).command = ['sh'])),
      ),
    },
    {
      id: 'the manager creates a Job no claim names',
      webhook: 'vcontrollerwrite',
      who: 'manager',
      expect: refused(
        'vcontrollerwrite',
        `operation Job ptah-observe-orders-ffffffffffffffff cannot be rebuilt: PtahSchema orders claims no operation whose Job is ptah-observe-orders-ffffffffffffffff`,
      ),
      send: createJob(
        'manager',
        changed((j) => (j.metadata!.name = 'ptah-observe-orders-ffffffffffffffff')),
      ),
    },
    {
      id: 'the manager creates a snapshot with other bytes',
      webhook: 'vcontrollerwrite',
      who: 'manager',
      expect: refused(
        'vcontrollerwrite',
        `source snapshot ${snapshot.metadata.name} is not the object PtahSchema orders rebuilds: binaryData\\["f0000"\\]`,
      ),
      send: createConfigMap('manager', {
        ...snapshot,
        binaryData: { ...snapshot.binaryData, f0000: Buffer.from('DROP TABLE orders;\n').toString('base64') },
      }),
    },
    {
      id: 'the manager changes an annotation of its running Job',
      webhook: 'vcontrollerwrite',
      who: 'manager',
      expect: refused(
        'vcontrollerwrite',
        `operation Job ${live.job} is changed only by the manager adding its cleanup TTL`,
      ),
      send: () =>
        as.manager.batch.patchNamespacedJob(
          {
            namespace,
            name: live.job,
            body: { metadata: { annotations: { 'operator.ptah.run/input-fingerprint': d('other') } } },
            dryRun,
          },
          mergePatch,
        ),
    },
  );
  return out;
}

async function check(row: Row): Promise<{ readonly ok: boolean; readonly detail: string }> {
  try {
    await row.send();
    return { ok: row.expect === 'admitted', detail: 'admitted' };
  } catch (error) {
    const text = denial(error);
    // The manager's Job exists (made for real in before()): a dry-run create of it again passes admission
    // and then meets the stored object, which only a create that admission let through can.
    if (text.startsWith('409 ') && /already exists/.test(text))
      return { ok: row.expect === 'admitted', detail: text };
    return { ok: row.expect !== 'admitted' && row.expect.test(text), detail: text };
  }
}

function denial(error: unknown): string {
  if (!(error instanceof k8s.ApiException)) return error instanceof Error ? error.message : String(error);
  try {
    return `${error.code} ${(JSON.parse(String(error.body)) as { message: string }).message}`;
  } catch {
    return `${error.code} ${String(error.body)}`;
  }
}

async function failing(table: readonly Row[]): Promise<string[]> {
  const results = await Promise.all(table.map(async (r) => ({ r, c: await check(r) })));
  return results.filter((x) => !x.c.ok).map((x) => `${x.r.id} (${x.r.who}): ${x.c.detail}`);
}

// -- Sabotage. ---------------------------------------------------------------------------------------------

interface Sabotage {
  readonly webhook: Row['webhook'];
  readonly how: string;
  apply(): Promise<void>;
  undo(): Promise<void>;
  readonly breaks: (r: Row) => boolean;
}

async function replaceRegistration(edit: (c: k8s.V1ValidatingWebhookConfiguration) => void): Promise<void> {
  const current = await reg.readValidatingWebhookConfiguration({ name: registration.metadata!.name! });
  const body = structuredClone(registration);
  edit(body);
  await reg.replaceValidatingWebhookConfiguration({
    name: body.metadata!.name!,
    body: { ...body, metadata: { ...body.metadata, resourceVersion: current.metadata!.resourceVersion } },
  });
}

function sabotages(): Sabotage[] {
  const refusedOf = (w: Row['webhook']) => (r: Row) => r.webhook === w && r.expect !== 'admitted';
  const restore = () => replaceRegistration(() => undefined);
  const out: Sabotage[] = [];
  for (const webhook of ['vcontrollerwrite', 'vpodintent'] as const) {
    const path = WEBHOOK_PATHS[webhook];
    const only = (c: k8s.V1ValidatingWebhookConfiguration, f: (w: k8s.V1ValidatingWebhook) => void) =>
      c.webhooks!.filter((w) => w.name.startsWith(`${webhook}.`)).forEach(f);
    out.push(
      {
        webhook,
        how: 'registration dropped',
        apply: () =>
          replaceRegistration(
            (c) => (c.webhooks = c.webhooks!.filter((w) => !w.name.startsWith(`${webhook}.`))),
          ),
        undo: restore,
        breaks: refusedOf(webhook),
      },
      {
        webhook,
        how: 'match narrowed to nothing',
        apply: () =>
          replaceRegistration((c) =>
            only(c, (w) => (w.matchConditions = [{ name: 'nothing', expression: 'false' }])),
          ),
        undo: restore,
        breaks: refusedOf(webhook),
      },
      {
        webhook,
        how: 'handler admitting everything',
        apply: async () => void sabotaged.set(path, () => allowed()),
        undo: async () => void sabotaged.delete(path),
        breaks: refusedOf(webhook),
      },
    );
  }
  out.push({
    webhook: 'vcontrollerwrite',
    how: 'another manager named as the only writer',
    apply: async () => installHandlers('system:serviceaccount:elsewhere:impostor'),
    undo: async () => installHandlers(cp.identities.manager),
    breaks: (r) =>
      r.webhook === 'vcontrollerwrite' &&
      r.who === 'manager' &&
      r.expect === 'admitted' &&
      !r.id.includes('TTL'),
  });
  return out;
}

// -- Setup. ------------------------------------------------------------------------------------------------

before(async () => {
  cp = await startControlPlane();
  namespace = cp.testNamespace;
  as.clusterAdmin = identity(cp.kubeconfigs.admin);
  as.manager = identity(cp.kubeconfigs.manager);
  as.user = identity(cp.kubeconfigs.user);
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

  await installCrds(as.clusterAdmin.kc);
  // The manager holds the release's own grants (deploy/rbac/manager.yaml); the ordinary user and the
  // namespace admin hold every verb on Jobs, ConfigMaps and Pods (RBAC granted too much), so what refuses
  // them below is the webhook, not RBAC.
  const objectsApi = k8s.KubernetesObjectApi.makeApiClient(as.clusterAdmin.kc);
  for (const doc of parseAllDocuments(readFileSync(join(ROOT, 'deploy/rbac/manager.yaml'), 'utf8'))) {
    const spec = doc.toJSON() as k8s.KubernetesObject | null;
    if (!spec) continue;
    await objectsApi.create(spec).catch((error: unknown) => {
      if ((error as { code?: number }).code !== 409) throw error;
    });
  }
  const rbac = as.clusterAdmin.kc.makeApiClient(k8s.RbacAuthorizationV1Api);
  await rbac.createNamespacedRole({
    namespace,
    body: {
      metadata: { name: 'everything' },
      rules: [
        { apiGroups: [API_GROUP], resources: ['*'], verbs: ['*'] },
        { apiGroups: [''], resources: ['configmaps', 'pods', 'pods/ephemeralcontainers'], verbs: ['*'] },
        { apiGroups: ['batch'], resources: ['jobs'], verbs: ['*'] },
      ],
    },
  });
  await rbac.createNamespacedRoleBinding({
    namespace,
    body: {
      metadata: { name: 'everything' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'everything' },
      subjects: [cp.identities.user, 'namespace-admin@example.com'].map((name) => ({
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'User',
        name,
      })),
    },
  });
  await rbac.createNamespacedRoleBinding({
    namespace,
    body: {
      metadata: { name: 'namespace-admin' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'admin' },
      subjects: [
        { apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'namespace-admin@example.com' },
      ],
    },
  });

  // The manager's watches, as its process keeps them, with the manager's own credentials and RBAC.
  watches = new ManagerWatches(as.manager.kc, pino({ level: 'silent' }));
  watches.start(stopWatches.signal, () => undefined);
  await createObjects();

  // The webhook server, as the manager process runs it, registered as the chart registers it.
  installHandlers(cp.identities.manager);
  const ca = createCertificateAuthority(join(cp.dir, 'webhook'), 'webhook-ca', 'ptah-webhook-ca');
  const serving = issueCertificate(join(cp.dir, 'webhook'), ca, {
    name: 'webhook',
    commonName: 'ptah-webhook',
    ipAddresses: ['127.0.0.1'],
    usage: 'server',
  });
  server = await startAdmissionServer({
    cert: readFileSync(serving.certFile),
    key: readFileSync(serving.keyFile),
    handlers: Object.fromEntries(Object.keys(handlers).map((p) => [p, through(p)])),
  });
  registration = approvalWebhookConfigurations({
    baseUrl: server.url,
    caBundle: readFileSync(ca.certFile).toString('base64'),
  }).controller;
  reg = as.clusterAdmin.kc.makeApiClient(k8s.AdmissionregistrationV1Api);
  await reg.createValidatingWebhookConfiguration({ body: registration });

  // The Job made for real by the manager (its Pod and the update rows need one), once the registration is
  // in force.
  await eventually('the registration is in force', async () =>
    (
      await check({
        id: '',
        webhook: 'vcontrollerwrite',
        who: 'user',
        expect: /vcontrollerwrite/,
        send: createJob('user', job),
      })
    ).ok
      ? true
      : undefined,
  );
  const created = await as.manager.batch.createNamespacedJob({ namespace, body: job });
  live.job = created.metadata!.name!;
  // The Job controller makes its Pod: vpodintent admitted it.
  const pod = await eventually(
    'the Job controller creates the operation Pod',
    async () => {
      const pods = await as.manager.core.listNamespacedPod({
        namespace,
        labelSelector: `batch.kubernetes.io/job-name=${live.job}`,
      });
      return pods.items[0];
    },
    60_000,
  );
  live.pod = pod.metadata!.name!;
});

after(async () => {
  stopWatches.abort();
  await watches?.stop();
  await server?.close();
  await cp?.stop();
});

describe('vcontrollerwrite and vpodintent on the real API server', () => {
  it('the Job controller creates the Pod of the manager Job (vpodintent admits its template)', async () => {
    const pod = await as.manager.core.readNamespacedPod({ namespace, name: live.pod });
    assert.equal(pod.spec!.containers[0]!.image, builtBy.runnerImage);
    assert.equal(pod.metadata!.ownerReferences![0]!.name, live.job);
  });

  it('refuse each request they exist to refuse, as every identity that could send it, and admit the manager', async () => {
    const table = rows();
    await eventually('every row answered as expected', async () =>
      (await failing(table)).length === 0 ? true : undefined,
    ).catch(() => undefined);
    const bad = await failing(table);
    if (bad.length > 0) process.stderr.write(`${bad.join('\n')}\n`);
    assert.deepEqual(bad, []);
    for (const webhook of ['vcontrollerwrite', 'vpodintent'] as const) {
      for (const who of PEOPLE) {
        assert.ok(
          table.some((r) => r.webhook === webhook && r.who === who && r.expect !== 'admitted'),
          `${webhook} refuses ${who}`,
        );
      }
    }
  });

  it('decide again from the API server what a lagging cache would refuse: the manager’s fresh Job is admitted, every refusal stands', async () => {
    await eventually('the manager watches listed', async () =>
      (['ptahschemas', 'jobs', 'configmaps'] as const).every((w) => watches.synced(w)) ? true : undefined,
    );
    // The moment after the manager wrote its claim: the cache still holds the resource without it, and no Job.
    const lagging: CacheLookup = {
      find: (kind, ns, name) => ({
        object:
          kind === 'ptahschemas' && ns === namespace && name === 'orders'
            ? (unclaimed as unknown as k8s.KubernetesObject)
            : undefined,
      }),
    };
    const fromCache = await controllerWriteSources(
      as.manager.kc,
      builtBy,
      cp.identities.manager,
      lagging,
    ).writes.rebuildJob(
      { kind: 'PtahSchema', namespace, name: 'orders', uid: schema.metadata.uid! },
      { name: job.metadata!.name!, identity: {} },
      'cached',
    );
    assert.deepEqual(fromCache, {
      ok: false,
      reason: `PtahSchema orders claims no operation whose Job is ${job.metadata!.name}`,
    });
    installHandlers(cp.identities.manager, lagging);
    try {
      assert.deepEqual(await failing(rows()), []);
    } finally {
      installHandlers(cp.identities.manager);
    }
  });

  it('rows fail when the webhook they depend on is broken on purpose: dropped, narrowed, admitting all, another writer', async () => {
    const table = rows();
    for (const s of sabotages()) {
      const dependent = table.filter(s.breaks);
      assert.ok(dependent.length > 0, `${s.webhook} ${s.how}: some row depends on it`);
      await s.apply();
      await eventually(
        `${s.webhook} ${s.how}: every dependent row fails`,
        async () => ((await failing(dependent)).length === dependent.length ? true : undefined),
        20_000,
      );
      await s.undo();
      await eventually(`${s.webhook} restored after ${s.how}`, async () =>
        (await failing(table)).length === 0 ? true : undefined,
      ).catch(() => undefined);
      assert.deepEqual(await failing(table), [], `${s.webhook} restored after ${s.how}`);
    }
  });
});
