/**
 * End-to-end harness: the local control plane with the node agent and a real PostgreSQL, the CRDs and the
 * RBAC from deploy/ (the manager's, and ptah-approver bound for the approver), the approval webhooks served
 * by the manager process itself, and the manager started as a separate process with the manager
 * ServiceAccount's identity — so it can be killed and restarted like a Pod.
 */
import assert from 'node:assert/strict';
import { after, before } from 'node:test';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as k8s from '@kubernetes/client-node';
import pg from 'pg';
import { parseAllDocuments } from 'yaml';
import { buildCrds } from '../../src/api/crds.ts';
import { API_GROUP, API_VERSION, LABELS } from '../../src/api/meta.ts';
import type { PtahMigration } from '../../src/api/ptah-migration.ts';
import type { PtahSchema } from '../../src/api/ptah-schema.ts';
import type { PtahSchemaApproval } from '../../src/api/ptah-schema-approval.ts';
import { approvalWebhookConfigurations } from '../../src/admission/webhook-configurations.ts';
import { admissionPolicies } from '../../src/admission/admission-policies.ts';
import { CONTROLLER_STATE_VERSION } from '../../src/api/meta.ts';
import { nodeAgentAvailable, startEnvironment, type Environment } from '../env/environment.ts';
import { createCertificateAuthority, issueCertificate } from '../env/pki.ts';
import { portRefusesConnections } from '../env/host-state.ts';
import { freePort } from '../env/ports.ts';
import type { ManagedProcess } from '../env/process.ts';
import { startManagerProcess } from '../env/manager-process.ts';
import { registerImage } from '../env/build-output.ts';
import { OOM_KILL_FILE } from '../env/node-agent/index.ts';
import { eventually as eventuallyWithin } from '../env/eventually.ts';

/** End-to-end waits span whole Jobs, so they default to 90 s. */
export const eventually = <T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs = 90_000,
): Promise<T> => eventuallyWithin(what, probe, timeoutMs, 300);

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const RUNNER_IMAGE = 'ptah.local/ptah-runner:e2e';
/** The image the manager process says it runs, which the Job and plan policies hold it to. */
export const MANAGER_IMAGE = `ptah.local/ptah-operator@sha256:${'e'.repeat(64)}`;

export interface E2E {
  readonly env: Environment;
  readonly namespace: string;
  readonly admin: k8s.KubeConfig;
  readonly approver: k8s.KubeConfig;
  readonly objects: k8s.CustomObjectsApi;
  readonly core: k8s.CoreV1Api;
  readonly batch: k8s.BatchV1Api;
  manager?: ManagedProcess;
  readonly managerLogs: string[];
  startManager(extraEnv?: Record<string, string>): Promise<ManagedProcess>;
  stop(): Promise<void>;
}

function kubeconfig(file: string): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(file);
  return kc;
}

async function createAll(admin: k8s.KubeConfig, file: string): Promise<void> {
  const client = k8s.KubernetesObjectApi.makeApiClient(admin);
  for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) {
    const spec = doc.toJSON() as k8s.KubernetesObject | null;
    if (!spec) continue;
    try {
      await client.create(spec);
    } catch (error) {
      if ((error as { code?: number }).code !== 409) throw error;
    }
  }
}

/** What an e2e file starts besides the control plane, the node agent and PostgreSQL. */
export interface E2EOptions {
  /** A MariaDB server too, for `engine: mysql` resources; off by default so other files do not pay for it. */
  readonly mariadb?: boolean;
}

/**
 * The handle of a file whose manager runs as the chart's Deployment (test/env/operator-chart.ts) rather than
 * a process of the test's: the clients of the environment's identities, and no manager to start.
 */
export function chartE2E(env: Environment): E2E {
  const cp = env.controlPlane;
  const admin = kubeconfig(cp.kubeconfigs.admin);
  return {
    env,
    namespace: cp.testNamespace,
    admin,
    approver: kubeconfig(cp.kubeconfigs.approver),
    objects: admin.makeApiClient(k8s.CustomObjectsApi),
    core: admin.makeApiClient(k8s.CoreV1Api),
    batch: admin.makeApiClient(k8s.BatchV1Api),
    managerLogs: [],
    startManager: () => Promise.reject(new Error('the manager runs as the chart Deployment here')),
    stop: () => env.stop(),
  };
}

/** The chart's manager Pods in `namespace` that are not being deleted. */
export async function chartManagerPods(e2e: E2E, namespace: string): Promise<k8s.V1Pod[]> {
  const list = await e2e.core.listNamespacedPod({
    namespace,
    labelSelector: 'app.kubernetes.io/component=manager',
  });
  return list.items.filter((p) => !p.metadata?.deletionTimestamp);
}

export const podReady = (p: k8s.V1Pod): boolean =>
  p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

export async function startE2E(options: E2EOptions = {}): Promise<E2E> {
  const env = await startEnvironment({
    components: ['node', 'postgres', ...(options.mariadb ? (['mariadb'] as const) : [])],
  });
  try {
    const cp = env.controlPlane;
    const namespace = cp.testNamespace;
    const admin = kubeconfig(cp.kubeconfigs.admin);
    const ext = admin.makeApiClient(k8s.ApiextensionsV1Api);
    for (const crd of buildCrds()) {
      await ext.createCustomResourceDefinition({ body: crd as unknown as k8s.V1CustomResourceDefinition });
    }
    for (const crd of buildCrds()) {
      await eventually(`CRD ${crd.metadata.name}`, async () => {
        const c = await ext.readCustomResourceDefinition({ name: crd.metadata.name });
        return c.status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True')
          ? true
          : undefined;
      });
    }
    await createAll(admin, join(ROOT, 'deploy/rbac/manager.yaml'));

    // The approver holds the shipped ptah-approver ClusterRole in the test namespace, nothing more.
    await createAll(admin, join(ROOT, 'deploy/rbac/user-roles.yaml'));
    await admin.makeApiClient(k8s.RbacAuthorizationV1Api).createNamespacedRoleBinding({
      namespace,
      body: {
        metadata: { name: 'ptah-approver' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'ptah-approver' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: cp.identities.approver }],
      },
    });

    // The runner image: this checkout's compiled ptah-runner under the Node that runs the tests.
    registerImage(env.description.imageMapFile, RUNNER_IMAGE, 'ptah-runner');

    // Webhook serving certificate for the manager process.
    const ca = createCertificateAuthority(env.dir, 'webhook-ca', 'ptah-webhook-ca');
    const serving = issueCertificate(env.dir, ca, {
      name: 'webhook',
      commonName: 'ptah-webhook',
      ipAddresses: ['127.0.0.1'],
      usage: 'server',
    });
    const webhookPort = await freePort();
    const caBundle = readFileSync(ca.certFile).toString('base64');
    const webhooks = approvalWebhookConfigurations({ baseUrl: `https://127.0.0.1:${webhookPort}`, caBundle });
    const reg = admin.makeApiClient(k8s.AdmissionregistrationV1Api);
    await reg.createMutatingWebhookConfiguration({ body: webhooks.mutating });
    await reg.createValidatingWebhookConfiguration({ body: webhooks.validating });
    // vcontrollerwrite and vpodintent: the manager's Jobs and snapshots, and their Pods, as the chart does.
    await reg.createValidatingWebhookConfiguration({ body: webhooks.controller });
    // As the chart installs them, for the manager process below (its ServiceAccount and image).
    for (const guard of admissionPolicies({
      managerUsername: cp.identities.manager,
      managerImage: MANAGER_IMAGE,
      controllerStateVersion: CONTROLLER_STATE_VERSION,
    })) {
      await reg.createValidatingAdmissionPolicy({ body: guard.policy });
      await reg.createValidatingAdmissionPolicyBinding({ body: guard.binding });
    }

    const managerLogs: string[] = [];
    let starts = 0;
    const e2e: E2E = {
      env,
      namespace,
      admin,
      approver: kubeconfig(cp.kubeconfigs.approver),
      objects: admin.makeApiClient(k8s.CustomObjectsApi),
      core: admin.makeApiClient(k8s.CoreV1Api),
      batch: admin.makeApiClient(k8s.BatchV1Api),
      managerLogs,
      async startManager(extraEnv: Record<string, string> = {}) {
        starts += 1;
        const logFile = join(env.dir, `manager-${starts}.log`);
        managerLogs.push(logFile);
        const proc = startManagerProcess({
          kubeconfig: cp.kubeconfigs.manager,
          coordinationNamespace: 'ptah-system',
          runnerImage: RUNNER_IMAGE,
          identity: `e2e-manager-${starts}`,
          leaderLeaseSeconds: 5,
          logLevel: 'debug',
          webhook: { certFile: serving.certFile, keyFile: serving.keyFile, port: webhookPort },
          logFile,
          extraEnv: { PTAH_MANAGER_IMAGE: MANAGER_IMAGE, ...extraEnv },
        });
        e2e.manager = proc;
        // The approval webhooks are served by this process: an approval created before it listens would be
        // refused by the API server (fail closed), so a started manager is one whose webhook port answers.
        await eventually(
          'the manager serves its webhooks',
          async () => (proc.exited() || !(await portRefusesConnections(webhookPort)) ? true : undefined),
          30_000,
        );
        return proc;
      },
      async stop() {
        await e2e.manager?.stop(5_000);
        if (process.env['PTAH_E2E_DEBUG']) {
          for (const f of managerLogs) {
            process.stderr.write(`--- ${f}\n${readFileSync(f, 'utf8').split('\n').slice(-60).join('\n')}\n`);
          }
        }
        await env.stop();
      },
    };
    return e2e;
  } catch (error) {
    await env.stop();
    throw error;
  }
}

/**
 * One environment and one manager for a whole test file, started before its tests and stopped after them;
 * where the node agent cannot run, `skip` says why (pass it to describe) and nothing starts.
 * `e2e()` is valid only inside tests and hooks, once the environment is up. `managerEnv` adds variables
 * to the manager's environment (read once, before it starts); `options` says which extra servers start.
 */
export function useE2E(
  managerEnv: () => Promise<Record<string, string>> = async () => ({}),
  options: E2EOptions = {},
): {
  readonly skip: string | false;
  e2e(): E2E;
} {
  const skip = nodeAgentAvailable() ? false : 'the node agent is not available';
  let current: E2E | undefined;
  before(async () => {
    if (skip) return;
    current = await startE2E(options);
    await current.startManager(await managerEnv());
  });
  after(async () => {
    await current?.stop();
  });
  return {
    skip,
    e2e() {
      if (!current) throw new Error('the e2e environment is not started');
      return current;
    },
  };
}

/** Runs one statement on its own connection and returns its rows. */
export async function query(url: string, sql: string): Promise<Record<string, unknown>[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql)).rows as Record<string, unknown>[];
  } finally {
    await client.end();
  }
}

/** Statements run in one database that match, from the server's own log. */
export function statementsIn(e2e: E2E, database: string, pattern: RegExp): string[] {
  return e2e.env
    .postgres!.statements()
    .filter((st) => st.database === database && pattern.test(st.sql))
    .map((st) => st.sql);
}

/** The approver creates a PtahSchemaApproval; `forgedApprover` is what a client might claim to be. */
export async function createApproval(
  e2e: E2E,
  name: string,
  spec: { schema: { name: string; uid: string }; plan: { name: string; uid: string }; fingerprint: string },
  forgedApprover?: string,
): Promise<PtahSchemaApproval> {
  const api = e2e.approver.makeApiClient(k8s.CustomObjectsApi);
  return (await api.createNamespacedCustomObject({
    ...at(e2e, 'ptahschemaapprovals'),
    body: {
      apiVersion: `${API_GROUP}/${API_VERSION}`,
      kind: 'PtahSchemaApproval',
      metadata: { name },
      spec: {
        schemaRef: spec.schema,
        planRef: spec.plan,
        planFingerprint: spec.fingerprint,
        ...(forgedApprover ? { approver: { username: forgedApprover, groups: ['system:masters'] } } : {}),
      },
    },
  })) as PtahSchemaApproval;
}

/** Events about one object with one reason. */
export async function eventsOf(e2e: E2E, name: string, reason: string): Promise<k8s.CoreV1Event[]> {
  const list = await e2e.core.listNamespacedEvent({
    namespace: e2e.namespace,
    fieldSelector: `involvedObject.name=${name},reason=${reason}`,
  });
  return list.items;
}

/**
 * The Events of one reason once at least one exists. The manager records Events after the status write that
 * a test usually waits for, so a list read straight after that write can miss one still on its way; on
 * timeout this returns what is there (maybe nothing) and leaves the verdict to the caller's assertion.
 */
export async function eventsOnceRecorded(
  e2e: E2E,
  name: string,
  reason: string,
  timeoutMs = 15_000,
): Promise<k8s.CoreV1Event[]> {
  return eventually(
    `a ${reason} Event on ${name}`,
    async () => {
      const events = await eventsOf(e2e, name, reason);
      return events.length > 0 ? events : undefined;
    },
    timeoutMs,
  ).catch(() => eventsOf(e2e, name, reason));
}

export function at(e2e: E2E, plural: string) {
  return { group: API_GROUP, version: API_VERSION, namespace: e2e.namespace, plural };
}

export async function getSchema(e2e: E2E, name: string): Promise<PtahSchema> {
  return (await e2e.objects.getNamespacedCustomObject({ ...at(e2e, 'ptahschemas'), name })) as PtahSchema;
}

export async function getMigration(e2e: E2E, name: string): Promise<PtahMigration> {
  return (await e2e.objects.getNamespacedCustomObject({
    ...at(e2e, 'ptahmigrations'),
    name,
  })) as PtahMigration;
}

/**
 * Writes a resource's status as the manager's ServiceAccount would (the status guard admits no one else),
 * from the object as it is now. A running manager may write status between the read and the write; the
 * API server then answers 409 and the write is retried on the fresh object, as any status writer must.
 */
export async function writeStatusAsManager<T extends PtahSchema | PtahMigration>(
  e2e: E2E,
  plural: 'ptahschemas' | 'ptahmigrations',
  name: string,
  status: (current: T) => T['status'],
): Promise<void> {
  const asManager = kubeconfig(e2e.env.controlPlane.kubeconfigs.manager).makeApiClient(k8s.CustomObjectsApi);
  for (let attempt = 1; ; attempt++) {
    const current = (await e2e.objects.getNamespacedCustomObject({ ...at(e2e, plural), name })) as T;
    try {
      await asManager.replaceNamespacedCustomObjectStatus({
        ...at(e2e, plural),
        name,
        body: { ...current, status: status(current) },
      });
      return;
    } catch (error) {
      if ((error as { code?: number }).code !== 409 || attempt === 5) throw error;
    }
  }
}

/** Waits until the PtahMigration satisfies `ok`; a timeout says what its status was. */
export async function migrationWhen(
  e2e: E2E,
  name: string,
  what: string,
  ok: (m: PtahMigration) => boolean,
  timeoutMs = 150_000,
): Promise<PtahMigration> {
  try {
    return await eventually(
      `${name}: ${what}`,
      async () => {
        const m = await getMigration(e2e, name);
        return ok(m) ? m : undefined;
      },
      timeoutMs,
    );
  } catch (error) {
    const m = await getMigration(e2e, name).catch(() => undefined);
    throw new Error(`${(error as Error).message}; status: ${JSON.stringify(m?.status)}`);
  }
}

/** The approver approves the plan the PtahMigration names now, exactly. */
export async function approveMigration(
  e2e: E2E,
  m: {
    readonly metadata: { readonly name?: string; readonly uid?: string };
    readonly status?: {
      readonly plan?: { readonly name: string; readonly uid: string; readonly fingerprint: string };
    };
  },
  approval: string,
): Promise<void> {
  const plan = m.status!.plan!;
  await e2e.approver.makeApiClient(k8s.CustomObjectsApi).createNamespacedCustomObject({
    ...at(e2e, 'ptahmigrationapprovals'),
    body: {
      apiVersion: `${API_GROUP}/${API_VERSION}`,
      kind: 'PtahMigrationApproval',
      metadata: { name: approval },
      spec: {
        migrationRef: { name: m.metadata.name, uid: m.metadata.uid },
        planRef: { name: plan.name, uid: plan.uid },
        planFingerprint: plan.fingerprint,
      },
    },
  });
}

export async function waitForPhase(
  e2e: E2E,
  name: string,
  phases: string[],
  timeoutMs = 120_000,
): Promise<PtahSchema> {
  return eventually(
    `${name} in ${phases.join('|')}`,
    async () => {
      const s = await getSchema(e2e, name);
      return s.status?.phase !== undefined && phases.includes(s.status.phase) ? s : undefined;
    },
    timeoutMs,
  );
}

export async function createSource(e2e: E2E, name: string, data: Record<string, string>): Promise<void> {
  await e2e.core.createNamespacedConfigMap({ namespace: e2e.namespace, body: { metadata: { name }, data } });
}

export async function createSecret(e2e: E2E, name: string, url: string): Promise<void> {
  await e2e.core.createNamespacedSecret({
    namespace: e2e.namespace,
    body: { metadata: { name }, stringData: { url } },
  });
}

export async function createSchema(
  e2e: E2E,
  name: string,
  options: {
    source: string;
    secret: string;
    key?: string;
    files?: string[];
    policy?: Record<string, unknown>;
    interval?: string;
    engine?: 'postgres' | 'mysql';
    /** spec.execution; a 5 s retry and a 120 s deadline by default. */
    execution?: { failureRetryInterval?: string; activeDeadlineSeconds?: number };
  },
): Promise<PtahSchema> {
  return (await e2e.objects.createNamespacedCustomObject({
    ...at(e2e, 'ptahschemas'),
    body: {
      apiVersion: `${API_GROUP}/${API_VERSION}`,
      kind: 'PtahSchema',
      metadata: { name },
      spec: {
        target: {
          engine: options.engine ?? 'postgres',
          coordinationKey: options.key ?? name,
          urlFrom: { name: options.secret, key: 'url' },
        },
        desired: {
          configMap: {
            name: options.source,
            files: (options.files ?? ['schema.sql']).map((key) => ({ key })),
          },
        },
        policy: options.policy ?? {},
        interval: options.interval ?? '10m',
        execution: { failureRetryInterval: '5s', activeDeadlineSeconds: 120, ...options.execution },
      },
    },
  })) as PtahSchema;
}

/**
 * A schema with everything it needs, named after it: database `<name>_db` (holding `existing` first, as a
 * database found in that state), its URL in Secret `<name>-db`, `data` in ConfigMap `<name>-src`, and the
 * PtahSchema declaring schema.sql from it. Returns the database URL.
 */
export async function declareSchema(
  e2e: E2E,
  name: string,
  options: {
    data: Record<string, string>;
    existing?: string;
    policy?: Record<string, unknown>;
    interval?: string;
  },
): Promise<string> {
  const url = await e2e.env.postgres!.createDatabase(`${name}_db`);
  if (options.existing !== undefined) await query(url, options.existing);
  await createSecret(e2e, `${name}-db`, url);
  await createSource(e2e, `${name}-src`, options.data);
  await createSchema(e2e, name, {
    source: `${name}-src`,
    secret: `${name}-db`,
    ...(options.policy ? { policy: options.policy } : {}),
    ...(options.interval ? { interval: options.interval } : {}),
  });
  return url;
}

export async function schemaJobs(e2e: E2E, name: string): Promise<k8s.V1Job[]> {
  const list = await e2e.batch.listNamespacedJob({
    namespace: e2e.namespace,
    labelSelector: `${API_GROUP}/schema=${name}`,
  });
  return list.items;
}

/** A schema's Jobs of one operation (observe, plan, apply, ...), by the label the manager sets. */
export async function operationJobs(e2e: E2E, name: string, operation: string): Promise<k8s.V1Job[]> {
  return (await schemaJobs(e2e, name)).filter((j) => j.metadata?.labels?.[LABELS.operation] === operation);
}

/** With PTAH_E2E_DEBUG set: the resource status and every Pod's container states and logs, to stderr. */
/**
 * The node agent's OOM hook (test/env/node-agent): app containers of Pods whose labels match one of these
 * selectors are killed as the kernel's OOM killer would, and reported OOMKilled. An empty list ends it.
 */
export function oomKillPods(e2e: E2E, selectors: readonly Record<string, string>[]): void {
  writeFileSync(
    join(e2e.env.dir, 'node', OOM_KILL_FILE),
    selectors
      .map((s) =>
        Object.entries(s)
          .map(([k, v]) => `${k}=${v}`)
          .join(','),
      )
      .join('\n') + '\n',
  );
}

export async function dumpDebug(e2e: E2E, name: string): Promise<void> {
  if (!process.env['PTAH_E2E_DEBUG']) return;
  const s = await getSchema(e2e, name).catch(() => undefined);
  process.stderr.write(`status of ${name}: ${JSON.stringify(s?.status, null, 1)}\n`);
  const pods = await e2e.core.listNamespacedPod({ namespace: e2e.namespace });
  for (const p of pods.items) {
    const states = [...(p.status?.initContainerStatuses ?? []), ...(p.status?.containerStatuses ?? [])];
    process.stderr.write(
      `pod ${p.metadata?.name}: ${JSON.stringify(states.map((c) => [c.name, c.state]))}\n`,
    );
    for (const c of states) {
      const log = await e2e.core
        .readNamespacedPodLog({ namespace: e2e.namespace, name: p.metadata!.name!, container: c.name })
        .catch((e: unknown) => `(no log: ${String(e).slice(0, 100)})`);
      process.stderr.write(`  log ${c.name}: ${String(log).slice(-1500)}\n`);
    }
  }
}

export { withSum } from '../env/migration-files.ts';

/**
 * A failure's cause, for either family: the ReconciliationFailed reason, its message, and the one Warning
 * Event (retries count on it) that says the same.
 */
export async function assertCause(
  e2e: E2E,
  obj: {
    readonly metadata?: { readonly name?: string };
    readonly status?: {
      readonly conditions?: readonly { type: string; status: string; reason: string; message: string }[];
    };
  },
  reason: string,
  message: RegExp,
): Promise<void> {
  const name = obj.metadata?.name ?? '';
  const failed = obj.status?.conditions?.find((c) => c.type === 'ReconciliationFailed');
  assert.equal(failed?.status, 'True');
  assert.equal(failed?.reason, reason, failed?.message);
  assert.match(failed?.message ?? '', message);
  const events = await eventually(
    `a ${reason} Event on ${name}`,
    async () => {
      const list = await eventsOf(e2e, name, reason);
      return list.length > 0 ? list : undefined;
    },
    30_000,
  );
  assert.equal(events.length, 1, 'retries count on one Event');
  assert.equal(events[0]!.type, 'Warning');
  assert.match(events[0]!.message ?? '', message);
}

/** Puts another URL in a database Secret, as a person fixing it would. */
export async function replaceSecret(e2e: E2E, name: string, url: string): Promise<void> {
  await e2e.core.replaceNamespacedSecret({
    name,
    namespace: e2e.namespace,
    body: { metadata: { name }, stringData: { url } },
  });
}
