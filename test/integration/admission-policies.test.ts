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
import {
  admissionPolicies,
  RESOURCE_UPDATE_POLICY_NAME,
  STATUS_GUARD_NAME,
  UNRESOLVED_RUN_GUARD_NAME,
  type GuardPolicy,
  type ReleaseIdentity,
} from '../../src/admission/admission-policies.ts';
import { crdClientModels } from '../../src/api/crd-client-model.ts';
import { buildCrds } from '../../src/api/crds.ts';
import { sha256Digest } from '../../src/api/digest.ts';
import {
  API_GROUP,
  API_VERSION,
  CONTROLLER_STATE_VERSION,
  GROUP_VERSION,
  SCHEMA_FINALIZER,
} from '../../src/api/meta.ts';
import { MIGRATION_FINALIZER, UNRESOLVED_RUN_ANNOTATION } from '../../src/api/ptah-migration.ts';

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
  await as.manager.objects.patchNamespacedCustomObject(
    { ...at('ptahschemas'), name: 'orders', body: { metadata: { finalizers: [SCHEMA_FINALIZER] } } },
    mergePatch,
  );
  await writeStatusAsManager('ptahschemas', 'orders', { phase: 'InSync' });

  await admin.objects.createNamespacedCustomObject({
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
  });
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
  const crds = ext.makeApiClient(k8s.ApiextensionsV1Api);
  for (const body of crdClientModels()) await crds.createCustomResourceDefinition({ body });
  for (const crd of buildCrds()) {
    await eventually(`CRD ${crd.metadata.name} served`, async () => {
      try {
        await admin.objects.listNamespacedCustomObject({ ...at(crd.spec.names.plural), limit: 1 });
        return true;
      } catch {
        return undefined;
      }
    });
  }
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

  release = {
    managerUsername: cp.identities.manager,
    managerImage: `registry.example/ptah-operator@sha256:${'1'.repeat(64)}`,
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
    // Policies reach the API server's admission chain asynchronously.
    await eventually('every row answered as expected', async () =>
      (await failing(table)).length === 0 ? true : undefined,
    );
    assert.deepEqual(await failing(table), []);
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
      );
    }
  });
});
