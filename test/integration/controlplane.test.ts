import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { startControlPlane, type ControlPlane } from '../env/controlplane.ts';
import { createCertificateAuthority, issueCertificate } from '../env/pki.ts';
import { eventually } from '../env/eventually.ts';

let cp: ControlPlane;

before(async () => {
  cp = await startControlPlane();
});

after(async () => {
  await cp?.stop();
});

function client<T extends k8s.ApiType>(kubeconfig: string, api: k8s.ApiConstructor<T>): T {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(kubeconfig);
  return kc.makeApiClient(api);
}

function statusCode(error: unknown): number | undefined {
  return error instanceof k8s.ApiException ? error.code : undefined;
}

function errorText(error: unknown): string {
  if (error instanceof k8s.ApiException) return `${error.code} ${String(error.body)}`;
  return error instanceof Error ? error.message : String(error);
}

async function createNamespace(name: string): Promise<void> {
  await client(cp.kubeconfigs.admin, k8s.CoreV1Api).createNamespace({ body: { metadata: { name } } });
}

test('each identity authenticates as the user its kubeconfig names', async () => {
  const whoami = async (kubeconfig: string): Promise<string | undefined> => {
    const review = await client(kubeconfig, k8s.AuthenticationV1Api).createSelfSubjectReview({
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
    });
    return review.status?.userInfo?.username;
  };
  assert.equal(await whoami(cp.kubeconfigs.manager), cp.identities.manager);
  assert.equal(await whoami(cp.kubeconfigs.approver), cp.identities.approver);
  assert.equal(await whoami(cp.kubeconfigs.user), cp.identities.user);
  assert.equal(await whoami(cp.kubeconfigs.node), `system:node:${cp.nodeName}`);
  // The ordinary user holds no cluster-wide rights.
  await assert.rejects(
    client(cp.kubeconfigs.user, k8s.CoreV1Api).listNamespace(),
    (e: unknown) => statusCode(e) === 403,
  );
});

test('deleting an owner makes the garbage collector delete the ConfigMap it owns', async () => {
  const core = client(cp.kubeconfigs.admin, k8s.CoreV1Api);
  const namespace = 'gc';
  await createNamespace(namespace);
  const owner = await core.createNamespacedConfigMap({
    namespace,
    body: { metadata: { name: 'owner' }, data: { role: 'owner' } },
  });
  await core.createNamespacedConfigMap({
    namespace,
    body: {
      metadata: {
        name: 'owned',
        ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: owner.metadata!.uid! }],
      },
    },
  });
  await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: 'bystander' } } });
  await core.deleteNamespacedConfigMap({ namespace, name: 'owner' });
  await eventually('owned ConfigMap deleted', async () => {
    try {
      await core.readNamespacedConfigMap({ namespace, name: 'owned' });
      return undefined;
    } catch (error) {
      return statusCode(error) === 404 ? true : undefined;
    }
  });
  // Only what the owner owned goes.
  assert.equal(
    (await core.readNamespacedConfigMap({ namespace, name: 'bystander' })).metadata?.name,
    'bystander',
  );
});

test('a ValidatingAdmissionPolicy refuses a write and lets others through', async () => {
  const admission = client(cp.kubeconfigs.admin, k8s.AdmissionregistrationV1Api);
  const core = client(cp.kubeconfigs.admin, k8s.CoreV1Api);
  const namespace = 'vap';
  await createNamespace(namespace);
  await admission.createValidatingAdmissionPolicy({
    body: {
      metadata: { name: 'no-forbidden-configmaps' },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: {
          resourceRules: [
            { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['configmaps'] },
          ],
        },
        validations: [
          {
            expression: "!object.metadata.name.startsWith('forbidden-')",
            message: 'forbidden- names are refused',
          },
        ],
      },
    },
  });
  await admission.createValidatingAdmissionPolicyBinding({
    body: {
      metadata: { name: 'no-forbidden-configmaps' },
      spec: {
        policyName: 'no-forbidden-configmaps',
        validationActions: ['Deny'],
        matchResources: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': namespace } } },
      },
    },
  });
  let attempt = 0;
  const refusal = await eventually('policy refuses', async () => {
    try {
      await core.createNamespacedConfigMap({
        namespace,
        body: { metadata: { name: `forbidden-${attempt++}` } },
      });
      return undefined;
    } catch (error) {
      return errorText(error);
    }
  });
  assert.match(refusal, /forbidden- names are refused/);
  assert.match(refusal, /no-forbidden-configmaps/);
  const allowed = await core.createNamespacedConfigMap({
    namespace,
    body: { metadata: { name: 'allowed' } },
  });
  assert.equal(allowed.metadata?.name, 'allowed');
});

interface AdmissionRequest {
  uid: string;
  name?: string;
  object?: { metadata?: { labels?: Record<string, string> }; data?: Record<string, string> };
}

async function startWebhookServer(
  dir: string,
  seen: { path: string; name: string | undefined }[],
): Promise<{ server: Server; port: number; caBundle: string }> {
  const ca = createCertificateAuthority(dir, 'webhook-ca', 'webhook-test-ca');
  const serving = issueCertificate(dir, ca, {
    name: 'webhook',
    commonName: 'webhook',
    ipAddresses: ['127.0.0.1'],
    usage: 'server',
  });
  const server = createServer(
    { cert: readFileSync(serving.certFile), key: readFileSync(serving.keyFile) },
    (req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (chunk: string) => (body += chunk));
      req.on('end', () => {
        const review = JSON.parse(body) as { request: AdmissionRequest };
        const request = review.request;
        // The API server appends ?timeout=…; route on the path alone.
        const path = new URL(req.url ?? '/', 'https://127.0.0.1').pathname;
        seen.push({ path, name: request.name });
        let response: Record<string, unknown> = { uid: request.uid, allowed: true };
        if (path === '/validate' && request.object?.data?.['verdict'] === 'reject') {
          response = {
            uid: request.uid,
            allowed: false,
            status: { code: 403, message: 'the test webhook says no' },
          };
        }
        if (path === '/mutate') {
          const patch = request.object?.metadata?.labels
            ? [{ op: 'add', path: '/metadata/labels/mutated-by', value: 'test-webhook' }]
            : [{ op: 'add', path: '/metadata/labels', value: { 'mutated-by': 'test-webhook' } }];
          response = {
            ...response,
            patchType: 'JSONPatch',
            patch: Buffer.from(JSON.stringify(patch)).toString('base64'),
          };
        }
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response }));
      });
    },
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return { server, port, caBundle: readFileSync(ca.certFile).toString('base64') };
}

test('admission webhooks on loopback are called by the API server and can mutate and refuse', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ptah-webhook-'));
  const seen: { path: string; name: string | undefined }[] = [];
  const { server, port, caBundle } = await startWebhookServer(dir, seen);
  try {
    const namespace = 'webhooks';
    await createNamespace(namespace);
    const admission = client(cp.kubeconfigs.admin, k8s.AdmissionregistrationV1Api);
    const common = {
      sideEffects: 'None',
      admissionReviewVersions: ['v1'],
      failurePolicy: 'Fail',
      timeoutSeconds: 5,
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': namespace } },
      rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['configmaps'] }],
    };
    await admission.createMutatingWebhookConfiguration({
      body: {
        metadata: { name: 'test-mutator' },
        webhooks: [
          {
            ...common,
            name: 'mutate.test.ptah.dev',
            clientConfig: { url: `https://127.0.0.1:${port}/mutate`, caBundle },
          },
        ],
      },
    });
    await admission.createValidatingWebhookConfiguration({
      body: {
        metadata: { name: 'test-validator' },
        webhooks: [
          {
            ...common,
            name: 'validate.test.ptah.dev',
            clientConfig: { url: `https://127.0.0.1:${port}/validate`, caBundle },
          },
        ],
      },
    });
    const core = client(cp.kubeconfigs.admin, k8s.CoreV1Api);
    let attempt = 0;
    const mutated = await eventually('webhook mutation', async () => {
      const created = await core.createNamespacedConfigMap({
        namespace,
        body: { metadata: { name: `probe-${attempt++}`, labels: { kept: 'yes' } } },
      });
      return created.metadata?.labels?.['mutated-by'] === 'test-webhook' ? created : undefined;
    });
    assert.equal(mutated.metadata?.labels?.['kept'], 'yes');
    // The stored object carries the mutation too, not just the create response.
    const stored = await core.readNamespacedConfigMap({ namespace, name: mutated.metadata!.name! });
    assert.equal(stored.metadata?.labels?.['mutated-by'], 'test-webhook');

    const refusal = await eventually('webhook refusal', async () => {
      try {
        await core.createNamespacedConfigMap({
          namespace,
          body: { metadata: { name: `rejected-${attempt++}` }, data: { verdict: 'reject' } },
        });
        return undefined;
      } catch (error) {
        return errorText(error);
      }
    });
    assert.match(refusal, /the test webhook says no/);
    assert.ok(seen.some((s) => s.path === '/validate'));
    assert.ok(seen.some((s) => s.path === '/mutate'));

    await admission.deleteMutatingWebhookConfiguration({ name: 'test-mutator' });
    await admission.deleteValidatingWebhookConfiguration({ name: 'test-validator' });
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    rmSync(dir, { recursive: true, force: true });
  }
});

const WIDGETS = { group: 'test.ptah.dev', version: 'v1', plural: 'widgets' } as const;

test('a policy keyed on the manager identity refuses status writes by anyone else', async () => {
  const ext = client(cp.kubeconfigs.admin, k8s.ApiextensionsV1Api);
  await ext.createCustomResourceDefinition({
    body: {
      metadata: { name: `${WIDGETS.plural}.${WIDGETS.group}` },
      spec: {
        group: WIDGETS.group,
        scope: 'Namespaced',
        names: { plural: WIDGETS.plural, singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
        versions: [
          {
            name: 'v1',
            served: true,
            storage: true,
            subresources: { status: {} },
            schema: {
              openAPIV3Schema: {
                type: 'object',
                properties: {
                  spec: { type: 'object', properties: { size: { type: 'integer' } } },
                  status: { type: 'object', properties: { phase: { type: 'string' } } },
                },
              },
            },
          },
        ],
      },
    },
  });
  const namespace = cp.testNamespace;
  const rbac = client(cp.kubeconfigs.admin, k8s.RbacAuthorizationV1Api);
  await rbac.createNamespacedRole({
    namespace,
    body: {
      metadata: { name: 'widget-writer' },
      rules: [
        {
          apiGroups: [WIDGETS.group],
          resources: ['widgets', 'widgets/status'],
          verbs: ['get', 'list', 'create', 'update', 'patch'],
        },
      ],
    },
  });
  await rbac.createNamespacedRoleBinding({
    namespace,
    body: {
      metadata: { name: 'widget-writer' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'widget-writer' },
      subjects: [
        { apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: cp.identities.user },
        { kind: 'ServiceAccount', name: 'ptah-manager', namespace: 'ptah-system' },
      ],
    },
  });
  const admission = client(cp.kubeconfigs.admin, k8s.AdmissionregistrationV1Api);
  await admission.createValidatingAdmissionPolicy({
    body: {
      metadata: { name: 'widget-status-by-manager-only' },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: {
          resourceRules: [
            {
              apiGroups: [WIDGETS.group],
              apiVersions: ['*'],
              operations: ['UPDATE'],
              resources: ['widgets/status'],
            },
          ],
        },
        validations: [
          {
            expression: `request.userInfo.username == '${cp.identities.manager}'`,
            message: 'only the manager writes widget status',
          },
        ],
      },
    },
  });
  await admission.createValidatingAdmissionPolicyBinding({
    body: {
      metadata: { name: 'widget-status-by-manager-only' },
      spec: { policyName: 'widget-status-by-manager-only', validationActions: ['Deny'] },
    },
  });

  const asUser = client(cp.kubeconfigs.user, k8s.CustomObjectsApi);
  const asManager = client(cp.kubeconfigs.manager, k8s.CustomObjectsApi);
  // The CRD's REST endpoint appears shortly after it is established.
  await eventually('widget created', async () => {
    try {
      return (await asUser.createNamespacedCustomObject({
        ...WIDGETS,
        namespace,
        body: { apiVersion: 'test.ptah.dev/v1', kind: 'Widget', metadata: { name: 'w1' }, spec: { size: 1 } },
      })) as unknown;
    } catch (error) {
      if (statusCode(error) === 404) return undefined;
      throw error;
    }
  });
  const writeStatus = async (api: k8s.CustomObjectsApi, phase: string): Promise<unknown> => {
    const current = (await api.getNamespacedCustomObject({ ...WIDGETS, namespace, name: 'w1' })) as Record<
      string,
      unknown
    >;
    return await api.replaceNamespacedCustomObjectStatus({
      ...WIDGETS,
      namespace,
      name: 'w1',
      body: { ...current, status: { phase } },
    });
  };
  const refusal = await eventually('policy refuses the ordinary user', async () => {
    try {
      await writeStatus(asUser, 'ForgedByUser');
      return undefined;
    } catch (error) {
      return errorText(error);
    }
  });
  assert.match(refusal, /only the manager writes widget status/);
  assert.match(refusal, /widget-status-by-manager-only/);

  await writeStatus(asManager, 'Ready');
  const stored = (await asUser.getNamespacedCustomObject({ ...WIDGETS, namespace, name: 'w1' })) as {
    status?: { phase?: string };
  };
  assert.equal(stored.status?.phase, 'Ready');
  // The user still writes the main resource: the policy is about status alone.
  const current = (await asUser.getNamespacedCustomObject({ ...WIDGETS, namespace, name: 'w1' })) as Record<
    string,
    unknown
  >;
  await asUser.replaceNamespacedCustomObject({
    ...WIDGETS,
    namespace,
    name: 'w1',
    body: { ...current, spec: { size: 2 } },
  });
});
