// The people's ClusterRoles of deploy/rbac/user-roles.yaml on the real local control plane: applied as
// shipped, bound per namespace with RoleBindings, and judged by the API server's own authorizer through real
// requests as each person and access reviews.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as k8s from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { startControlPlane, type ControlPlane } from '../env/controlplane.ts';
import { buildCrds } from '../../src/api/crds.ts';
import { crdClientModels } from '../../src/api/crd-client-model.ts';
import { sha256Digest } from '../../src/api/digest.ts';
import { API_GROUP, API_VERSION } from '../../src/api/meta.ts';
import { eventually } from '../env/eventually.ts';

/** RBAC and CRD status answer yes or no; wait for the yes. */
const eventuallyTrue = (what: string, probe: () => Promise<boolean>): Promise<true> =>
  eventually(what, async () => ((await probe()) ? (true as const) : undefined), 15_000, 200);

const ALL_KINDS = [
  'ptahschemas',
  'ptahschemaplans',
  'ptahschemaapprovals',
  'ptahmigrations',
  'ptahmigrationplans',
  'ptahmigrationapprovals',
  'ptahmigrationrunacknowledgments',
];
const ROLES_FILE = fileURLToPath(new URL('../../deploy/rbac/user-roles.yaml', import.meta.url));
const ROLE_NAMES = ['ptah-viewer', 'ptah-schema-editor', 'ptah-approver', 'ptah-plan-reader'];
/** Bound to no credential: judged with SubjectAccessReview by the admin. */
const VIEWER = 'viewer@example.com';

let cp: ControlPlane;
let namespace: string;
let admin: k8s.KubeConfig;
let user: k8s.KubeConfig;
let approver: k8s.KubeConfig;

function kubeconfig(file: string): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(file);
  return kc;
}

function shippedRoles(): k8s.V1ClusterRole[] {
  return parseAllDocuments(readFileSync(ROLES_FILE, 'utf8'))
    .map((doc) => doc.toJSON() as k8s.V1ClusterRole | null)
    .filter((role): role is k8s.V1ClusterRole => role !== null);
}

async function bind(role: string, subject: string): Promise<void> {
  await admin.makeApiClient(k8s.RbacAuthorizationV1Api).createNamespacedRoleBinding({
    namespace,
    body: {
      metadata: { name: `${role}-${subject.split('@')[0]}` },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: subject }],
    },
  });
}

interface Access {
  readonly verb: string;
  readonly resource: string;
  readonly group?: string;
  readonly subresource?: string;
}

const attrs = (a: Access) => ({ namespace, group: API_GROUP, ...a });

/** What the API server's authorizer answers for the caller of `kc`. */
async function selfCan(kc: k8s.KubeConfig, access: Access): Promise<boolean> {
  const review = await kc.makeApiClient(k8s.AuthorizationV1Api).createSelfSubjectAccessReview({
    body: { spec: { resourceAttributes: attrs(access) } },
  });
  return review.status?.allowed === true;
}

/** The same answer for a user who holds no credential here, asked by the admin. */
async function userCan(name: string, access: Access): Promise<boolean> {
  const review = await admin.makeApiClient(k8s.AuthorizationV1Api).createSubjectAccessReview({
    body: { spec: { user: name, resourceAttributes: attrs(access) } },
  });
  return review.status?.allowed === true;
}

/** Runs a request and returns the HTTP status it failed with, or 'ok'. */
async function outcome(request: () => Promise<unknown>): Promise<number | 'ok'> {
  try {
    await request();
    return 'ok';
  } catch (error) {
    if (error instanceof k8s.ApiException) return error.code;
    throw error;
  }
}

const at = (plural: string) => ({ group: API_GROUP, version: API_VERSION, namespace, plural });

function schemaBody(name: string) {
  return {
    apiVersion: `${API_GROUP}/${API_VERSION}`,
    kind: 'PtahSchema',
    metadata: { name },
    spec: {
      target: { engine: 'postgres', coordinationKey: name, urlFrom: { name: `${name}-db`, key: 'url' } },
      desired: { configMap: { name: `${name}-src`, files: [{ key: 'schema.sql' }] } },
      policy: { apply: 'OnApproval' },
    },
  };
}

function approvalBody(name: string, schemaUID: string) {
  return {
    apiVersion: `${API_GROUP}/${API_VERSION}`,
    kind: 'PtahSchemaApproval',
    metadata: { name },
    spec: {
      schemaRef: { name: 'orders', uid: schemaUID },
      planRef: { name: 'orders-plan-1', uid: '5b0e7a3c-0000-4000-8000-000000000001' },
      planFingerprint: sha256Digest('plan 1'),
    },
  };
}

before(async () => {
  cp = await startControlPlane();
  namespace = cp.testNamespace;
  admin = kubeconfig(cp.kubeconfigs.admin);
  user = kubeconfig(cp.kubeconfigs.user);
  approver = kubeconfig(cp.kubeconfigs.approver);

  const ext = admin.makeApiClient(k8s.ApiextensionsV1Api);
  for (const body of crdClientModels()) await ext.createCustomResourceDefinition({ body });
  for (const crd of buildCrds()) {
    await eventuallyTrue(`CRD ${crd.metadata.name} established`, async () => {
      const c = await ext.readCustomResourceDefinition({ name: crd.metadata.name });
      return c.status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True') ?? false;
    });
  }
  const objects = k8s.KubernetesObjectApi.makeApiClient(admin);
  for (const role of shippedRoles()) await objects.create(role);
  await bind('ptah-schema-editor', cp.identities.user);
  await bind('ptah-approver', cp.identities.approver);
  await bind('ptah-viewer', VIEWER);
  await admin.makeApiClient(k8s.CoreV1Api).createNamespacedSecret({
    namespace,
    body: { metadata: { name: 'orders-db' }, stringData: { url: 'postgres://u:p@127.0.0.1:1/orders' } },
  });
  // RBAC is served from an informer cache: wait until the last binding is seen.
  await eventuallyTrue('the viewer binding to take effect', () =>
    userCan(VIEWER, { verb: 'get', resource: 'ptahschemas' }),
  );
});

after(async () => {
  await cp?.stop();
});

describe('the shipped ClusterRoles', () => {
  it('are the four roles, as written, with no status subresource and no Secret in any rule', async () => {
    const rbac = admin.makeApiClient(k8s.RbacAuthorizationV1Api);
    assert.deepEqual(
      shippedRoles().map((r) => r.metadata?.name),
      ROLE_NAMES,
    );
    for (const shipped of shippedRoles()) {
      const stored = await rbac.readClusterRole({ name: shipped.metadata!.name! });
      assert.deepEqual(
        stored.rules?.map((r) => [r.apiGroups, r.resources, r.verbs]),
        shipped.rules?.map((r) => [r.apiGroups, r.resources, r.verbs]),
      );
      for (const rule of stored.rules ?? []) {
        for (const resource of rule.resources ?? []) {
          assert.ok(
            !resource.includes('/status') && resource !== '*',
            `${shipped.metadata?.name}: ${resource}`,
          );
          assert.notEqual(resource, 'secrets');
        }
      }
    }
  });
});

describe('the ordinary user, bound to ptah-schema-editor', () => {
  it('creates, changes and deletes a PtahSchema', async () => {
    const objects = user.makeApiClient(k8s.CustomObjectsApi);
    await objects.createNamespacedCustomObject({ ...at('ptahschemas'), body: schemaBody('orders') });
    const patched = await outcome(() =>
      objects.patchNamespacedCustomObject(
        {
          ...at('ptahschemas'),
          name: 'orders',
          body: {
            metadata: { annotations: { 'operator.ptah.run/read-requested-at': '2030-01-01T00:00:00Z' } },
          },
        },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      ),
    );
    assert.equal(patched, 'ok');
    await objects.createNamespacedCustomObject({ ...at('ptahschemas'), body: schemaBody('scratch') });
    assert.equal(
      await outcome(() => objects.deleteNamespacedCustomObject({ ...at('ptahschemas'), name: 'scratch' })),
      'ok',
    );
  });

  it('cannot create a PtahSchemaApproval', async () => {
    const objects = user.makeApiClient(k8s.CustomObjectsApi);
    const schema = (await objects.getNamespacedCustomObject({ ...at('ptahschemas'), name: 'orders' })) as {
      metadata: { uid: string };
    };
    assert.equal(await selfCan(user, { verb: 'create', resource: 'ptahschemaapprovals' }), false);
    assert.equal(
      await outcome(() =>
        objects.createNamespacedCustomObject({
          ...at('ptahschemaapprovals'),
          body: approvalBody('self-approved', schema.metadata.uid),
        }),
      ),
      403,
    );
  });

  it('cannot write the status of any kind', async () => {
    for (const resource of ALL_KINDS) {
      for (const verb of ['update', 'patch']) {
        assert.equal(
          await selfCan(user, { verb, resource, subresource: 'status' }),
          false,
          `${verb} ${resource}`,
        );
      }
    }
    const objects = user.makeApiClient(k8s.CustomObjectsApi);
    const written = await outcome(() =>
      objects.patchNamespacedCustomObjectStatus(
        { ...at('ptahschemas'), name: 'orders', body: { status: { phase: 'InSync' } } },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      ),
    );
    assert.equal(written, 403);
  });

  it('cannot create or change a PtahRealm: a namespace cannot grant itself a realm', async () => {
    for (const kc of [user, approver]) {
      for (const verb of ['create', 'update', 'patch', 'delete']) {
        const review = await kc.makeApiClient(k8s.AuthorizationV1Api).createSelfSubjectAccessReview({
          body: { spec: { resourceAttributes: { group: API_GROUP, resource: 'ptahrealms', verb } } },
        });
        assert.equal(review.status?.allowed, false, verb);
      }
    }
    const created = await outcome(() =>
      user.makeApiClient(k8s.CustomObjectsApi).createClusterCustomObject({
        group: API_GROUP,
        version: API_VERSION,
        plural: 'ptahrealms',
        body: {
          apiVersion: `${API_GROUP}/${API_VERSION}`,
          kind: 'PtahRealm',
          metadata: { name: 'mine' },
          spec: { engine: 'postgres', namespaces: [namespace], sharing: 'Shared' },
        },
      }),
    );
    assert.equal(created, 403);
  });
});

describe('the approver, bound to ptah-approver', () => {
  it('creates a PtahSchemaApproval and reads schemas and plans', async () => {
    const objects = approver.makeApiClient(k8s.CustomObjectsApi);
    const schema = (await objects.getNamespacedCustomObject({ ...at('ptahschemas'), name: 'orders' })) as {
      metadata: { uid: string };
    };
    await objects.createNamespacedCustomObject({
      ...at('ptahschemaapprovals'),
      body: approvalBody('orders-approval', schema.metadata.uid),
    });
    assert.equal(await selfCan(approver, { verb: 'list', resource: 'ptahschemaplans' }), true);
  });

  it('approves migration plans and acknowledges runs, which the editor cannot', async () => {
    for (const resource of ['ptahmigrationapprovals', 'ptahmigrationrunacknowledgments']) {
      assert.equal(await selfCan(approver, { verb: 'create', resource }), true, resource);
      assert.equal(await selfCan(approver, { verb: 'update', resource }), false, resource);
      assert.equal(await selfCan(user, { verb: 'create', resource }), false, resource);
    }
    assert.equal(await selfCan(user, { verb: 'create', resource: 'ptahmigrations' }), true);
    assert.equal(await selfCan(approver, { verb: 'create', resource: 'ptahmigrations' }), false);
  });

  it('cannot change or delete a PtahSchema, nor change an approval', async () => {
    const objects = approver.makeApiClient(k8s.CustomObjectsApi);
    const patched = await outcome(() =>
      objects.patchNamespacedCustomObject(
        { ...at('ptahschemas'), name: 'orders', body: { spec: { policy: { apply: 'Always' } } } },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      ),
    );
    assert.equal(patched, 403);
    assert.equal(
      await outcome(() => objects.deleteNamespacedCustomObject({ ...at('ptahschemas'), name: 'orders' })),
      403,
    );
    assert.equal(
      await outcome(() =>
        objects.createNamespacedCustomObject({ ...at('ptahschemas'), body: schemaBody('approvers-own') }),
      ),
      403,
    );
    for (const verb of ['update', 'patch', 'delete']) {
      assert.equal(await selfCan(approver, { verb, resource: 'ptahschemaapprovals' }), false, verb);
    }
    assert.equal(
      await selfCan(approver, { verb: 'update', resource: 'ptahschemaapprovals', subresource: 'status' }),
      false,
    );
  });
});

describe('Secrets and plan bytes', () => {
  it('neither the user nor the approver can read a Secret', async () => {
    for (const kc of [user, approver]) {
      for (const verb of ['get', 'list', 'watch']) {
        assert.equal(await selfCan(kc, { verb, resource: 'secrets', group: '' }), false, verb);
      }
      const core = kc.makeApiClient(k8s.CoreV1Api);
      assert.equal(await outcome(() => core.readNamespacedSecret({ namespace, name: 'orders-db' })), 403);
    }
  });

  it('ptah-viewer reads the kinds but no chunk and no ConfigMap, so no plan bytes, and writes nothing', async () => {
    for (const resource of ALL_KINDS) {
      assert.equal(await userCan(VIEWER, { verb: 'list', resource }), true, resource);
      assert.equal(await userCan(VIEWER, { verb: 'create', resource }), false, resource);
    }
    assert.equal(await userCan(VIEWER, { verb: 'get', resource: 'ptahschemaplanchunks' }), false);
    assert.equal(await userCan(VIEWER, { verb: 'get', resource: 'configmaps', group: '' }), false);
    assert.equal(await userCan(VIEWER, { verb: 'get', resource: 'secrets', group: '' }), false);
  });

  it('ptah-plan-reader is what grants reading plan chunks, and it reads no ConfigMap', async () => {
    const reader = 'plan-reader@example.com';
    assert.equal(await userCan(reader, { verb: 'get', resource: 'ptahschemaplanchunks' }), false);
    await bind('ptah-plan-reader', reader);
    await eventuallyTrue('the plan-reader binding to take effect', () =>
      userCan(reader, { verb: 'get', resource: 'ptahschemaplanchunks' }),
    );
    assert.equal(await userCan(reader, { verb: 'get', resource: 'ptahschemaplans' }), true);
    assert.equal(await userCan(reader, { verb: 'get', resource: 'configmaps', group: '' }), false);
    assert.equal(await userCan(reader, { verb: 'create', resource: 'ptahschemaplanchunks' }), false);
    assert.equal(await userCan(reader, { verb: 'get', resource: 'secrets', group: '' }), false);
  });
});
