// The approval webhooks against the real local control plane: the API server calls the admission server
// by URL on loopback, verifying it with the caBundle, exactly as a cluster calls the manager's webhooks.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { startControlPlane, type ControlPlane } from '../env/controlplane.ts';
import { createCertificateAuthority, issueCertificate } from '../env/pki.ts';
import { startAdmissionServer, type AdmissionServer } from '../../src/admission/server.ts';
import { kubernetesApprovalSubjects } from '../../src/admission/approval-subjects.ts';
import { approvalWebhooks } from '../../src/admission/webhooks.ts';
import { approvalWebhookConfigurations } from '../../src/admission/webhook-configurations.ts';
import { buildCrds } from '../../src/api/crds.ts';
import { crdClientModels } from '../../src/api/crd-client-model.ts';
import { sha256Digest } from '../../src/api/digest.ts';
import { policyFingerprint } from '../../src/api/fingerprint.ts';
import { API_GROUP, API_VERSION } from '../../src/api/meta.ts';
import type { PtahSchemaApproval } from '../../src/api/ptah-schema-approval.ts';
import { eventually } from '../env/eventually.ts';

const d = (s: string) => sha256Digest(s);
const group = API_GROUP;
const version = API_VERSION;

let cp: ControlPlane;
let webhook: AdmissionServer;
let pkiDir: string;
let namespace: string;
let admin: k8s.KubeConfig;

function kubeconfig(file: string): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(file);
  return kc;
}

let schemaUID = '';
let planUID = '';
const PLAN = 'orders-plan-1';
const FINGERPRINT = d('fingerprint of plan 1');

before(async () => {
  cp = await startControlPlane();
  namespace = cp.testNamespace;
  admin = kubeconfig(cp.kubeconfigs.admin);

  // The webhook server, with a serving certificate of its own CA, reading as the manager identity.
  pkiDir = mkdtempSync(join(tmpdir(), 'ptah-admission-it-'));
  const ca = createCertificateAuthority(pkiDir, 'webhook-ca', 'ptah-webhook-ca');
  const serving = issueCertificate(pkiDir, ca, {
    name: 'webhook',
    commonName: 'ptah-webhook',
    ipAddresses: ['127.0.0.1'],
    usage: 'server',
  });
  webhook = await startAdmissionServer({
    cert: readFileSync(serving.certFile),
    key: readFileSync(serving.keyFile),
    handlers: approvalWebhooks(kubernetesApprovalSubjects(kubeconfig(cp.kubeconfigs.manager))),
  });

  const ext = admin.makeApiClient(k8s.ApiextensionsV1Api);
  for (const body of crdClientModels()) await ext.createCustomResourceDefinition({ body });
  for (const crd of buildCrds()) {
    await eventually(`CRD ${crd.metadata.name} established`, async () => {
      const c = await ext.readCustomResourceDefinition({ name: crd.metadata.name });
      return c.status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True')
        ? true
        : undefined;
    });
  }

  const rbac = admin.makeApiClient(k8s.RbacAuthorizationV1Api);
  const rule = (resources: string[], verbs: string[]) => ({ apiGroups: [group], resources, verbs });
  await rbac.createClusterRole({
    body: {
      metadata: { name: 'ptah:test-webhook-reader' },
      rules: [rule(['ptahschemas', 'ptahschemaplans'], ['get'])],
    },
  });
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name: 'ptah:test-webhook-reader' },
      roleRef: {
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'ClusterRole',
        name: 'ptah:test-webhook-reader',
      },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: cp.identities.manager }],
    },
  });
  await rbac.createNamespacedRole({
    namespace,
    body: {
      metadata: { name: 'approver' },
      rules: [rule(['ptahschemaapprovals'], ['create', 'get', 'delete'])],
    },
  });
  await rbac.createNamespacedRoleBinding({
    namespace,
    body: {
      metadata: { name: 'approver' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'approver' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: cp.identities.approver }],
    },
  });

  const caBundle = Buffer.from(readFileSync(ca.certFile)).toString('base64');
  const webhooks = approvalWebhookConfigurations({
    baseUrl: webhook.url,
    caBundle,
    names: { mutating: 'ptah-test-mapproval', validating: 'ptah-test-vapproval' },
    timeoutSeconds: 5,
  });
  const reg = admin.makeApiClient(k8s.AdmissionregistrationV1Api);
  await reg.createMutatingWebhookConfiguration({ body: webhooks.mutating });
  await reg.createValidatingWebhookConfiguration({ body: webhooks.validating });

  // A schema waiting on plan 1, as the manager would leave it.
  const objects = admin.makeApiClient(k8s.CustomObjectsApi);
  const schema = (await objects.createNamespacedCustomObject({
    group,
    version,
    namespace,
    plural: 'ptahschemas',
    body: {
      apiVersion: `${group}/${version}`,
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
  schemaUID = schema.metadata.uid;
  const plan = (await objects.createNamespacedCustomObject({
    group,
    version,
    namespace,
    plural: 'ptahschemaplans',
    body: {
      apiVersion: `${group}/${version}`,
      kind: 'PtahSchemaPlan',
      metadata: { name: PLAN },
      spec: {
        schemaRef: { name: 'orders', uid: schemaUID },
        fingerprint: FINGERPRINT,
        binding: {
          contractVersion: 3,
          schemaUID,
          planContentDigest: d('plan bytes'),
          sourceType: 'ConfigMap',
          configMapUID: 'cm-uid',
          contentDigest: d('manifest'),
          coordinationDigest: d('realm'),
          targetIdentityDigest: d('route'),
          observedStateFingerprint: d('observed'),
          desiredStateFingerprint: d('desired'),
          // The policy the schema declares (none: every default), as the manager would bind it.
          policyFingerprint: policyFingerprint({}),
          executionEpoch: 'v1-' + 'e'.repeat(32),
          managerImage: 'registry.example/ptah-operator@sha256:' + '1'.repeat(64),
          managerRevision: 'abc1234',
          controllerStateVersion: 1,
          ptahVersion: '0.1.0',
          runnerImage: 'registry.example/ptah-runner@sha256:' + '2'.repeat(64),
          runnerProtocolVersion: 1,
          dialect: 'postgres',
          destructive: false,
          statementCount: 1,
        },
        size: 10,
        chunks: [{ name: `${PLAN}-000`, index: 0, digest: d('plan bytes'), size: 10 }],
      },
    },
  })) as { metadata: { uid: string } };
  planUID = plan.metadata.uid;
  const current = (await objects.getNamespacedCustomObject({
    group,
    version,
    namespace,
    plural: 'ptahschemas',
    name: 'orders',
  })) as Record<string, unknown>;
  await objects.replaceNamespacedCustomObjectStatus({
    group,
    version,
    namespace,
    plural: 'ptahschemas',
    name: 'orders',
    body: {
      ...current,
      status: {
        plan: {
          name: PLAN,
          uid: planUID,
          fingerprint: FINGERPRINT,
          contentDigest: d('plan bytes'),
          destructive: false,
          statementCount: 1,
          createdAt: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
        },
      },
    },
  });
});

after(async () => {
  await webhook?.close();
  await cp?.stop();
  if (pkiDir !== undefined) rmSync(pkiDir, { recursive: true, force: true });
});

function approvalBody(name: string, spec: Partial<PtahSchemaApproval['spec']>): object {
  return {
    apiVersion: `${group}/${version}`,
    kind: 'PtahSchemaApproval',
    metadata: { name },
    spec: {
      schemaRef: { name: 'orders', uid: schemaUID },
      planRef: { name: PLAN, uid: planUID },
      planFingerprint: FINGERPRINT,
      ...spec,
    },
  };
}

async function createAsApprover(
  name: string,
  spec: Partial<PtahSchemaApproval['spec']>,
): Promise<PtahSchemaApproval> {
  const api = kubeconfig(cp.kubeconfigs.approver).makeApiClient(k8s.CustomObjectsApi);
  return (await api.createNamespacedCustomObject({
    group,
    version,
    namespace,
    plural: 'ptahschemaapprovals',
    body: approvalBody(name, spec),
  })) as PtahSchemaApproval;
}

function denial(error: unknown): string | undefined {
  return error instanceof k8s.ApiException ? `${error.code} ${String(error.body)}` : undefined;
}

describe('approval admission on the real API server', () => {
  it('an approval with a forged approver is stored with the authenticated identity', async () => {
    const forged = {
      approver: { username: 'ceo@example.com', uid: 'forged-uid', groups: ['system:masters'] },
      approvedAt: '1999-01-01T00:00:00Z',
      mutationRequestUID: 'forged-request',
    };
    let attempt = 0;
    // Webhook configurations reach the API server asynchronously: until they do, creation is unstamped.
    const stored = await eventually('the stamped approval', async () => {
      const name = `approve-${attempt++}`;
      const created = await createAsApprover(name, forged);
      if (created.spec.approver?.username !== 'ceo@example.com') return created;
      await kubeconfig(cp.kubeconfigs.admin)
        .makeApiClient(k8s.CustomObjectsApi)
        .deleteNamespacedCustomObject({ group, version, namespace, plural: 'ptahschemaapprovals', name });
      return undefined;
    });
    // Read back from storage, not from the create response.
    const read = (await admin.makeApiClient(k8s.CustomObjectsApi).getNamespacedCustomObject({
      group,
      version,
      namespace,
      plural: 'ptahschemaapprovals',
      name: stored.metadata.name,
    })) as PtahSchemaApproval;
    assert.equal(read.spec.approver?.username, cp.identities.approver);
    assert.notEqual(read.spec.approver?.uid, 'forged-uid');
    assert.ok(read.spec.approver?.groups?.includes('ptah:approvers'), JSON.stringify(read.spec.approver));
    assert.ok(!read.spec.approver?.groups?.includes('system:masters'));
    assert.notEqual(read.spec.mutationRequestUID, 'forged-request');
    assert.match(read.spec.mutationRequestUID ?? '', /^[0-9a-f-]{36}$/);
    assert.ok(Math.abs(Date.parse(read.spec.approvedAt ?? '') - Date.now()) < 120_000, read.spec.approvedAt);
  });

  it('an approval with a wrong fingerprint is refused by the API server', async () => {
    await assert.rejects(createAsApprover('wrong-fingerprint', { planFingerprint: d('another plan') }), (e) =>
      /fingerprint/.test(denial(e) ?? ''),
    );
  });

  it('an approval of a plan that is no longer current is refused', async () => {
    await assert.rejects(
      createAsApprover('stale-plan', { planRef: { name: 'orders-plan-0', uid: 'old-plan-uid' } }),
      (e) => /current plan/.test(denial(e) ?? ''),
    );
  });
});
