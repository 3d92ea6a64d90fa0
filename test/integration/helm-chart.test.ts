// The Helm chart (deploy/helm/ptah-operator): helm lint, the values schema refusing an image without a
// digest, the rendered objects held against what the code and deploy/ say (CRDs, RBAC, webhook paths and
// rules, the manager's environment, the metrics port), and helm install, upgrade and uninstall on the
// local control plane.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { buildCrds } from '../../src/api/crds.ts';
import {
  approvalWebhookConfigurations,
  approvalWebhooksProblem,
  DEFAULT_APPROVAL_WEBHOOK_NAMES,
} from '../../src/admission/webhook-configurations.ts';
import { WEBHOOK_PATHS } from '../../src/admission/webhooks.ts';
import { DECISION_KINDS } from '../../src/admission/decisions.ts';
import {
  admissionPolicies,
  managerServiceAccountUsername,
  STATUS_GUARD_NAME,
} from '../../src/admission/admission-policies.ts';
import { CONTROLLER_STATE_VERSION } from '../../src/api/meta.ts';
import { parseBindAddress } from '../../src/controller/metrics/metrics-server.ts';
import { startControlPlane, type ControlPlane } from '../env/controlplane.ts';
import { eventually } from '../env/eventually.ts';
import { findPackagingTools, type PackagingTools } from '../env/tools.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const CHART = join(ROOT, 'deploy/helm/ptah-operator');
const DIGEST = `sha256:${'1'.repeat(64)}`;
const NEW_DIGEST = `sha256:${'2'.repeat(64)}`;
const DIGESTS = `image.digest=${DIGEST},runnerImage.digest=${DIGEST}`;
const NS = 'ptah-operator';

type Obj = k8s.KubernetesObject & Record<string, unknown>;
let tools: PackagingTools;
let home: string;

function helm(args: string[], kubeconfig?: string): { code: number; out: string; err: string } {
  const r = spawnSync(tools.helm, args, {
    encoding: 'utf8',
    env: {
      PATH: process.env['PATH'] ?? '',
      HOME: home,
      HELM_CACHE_HOME: join(home, 'cache'),
      HELM_CONFIG_HOME: join(home, 'config'),
      HELM_DATA_HOME: join(home, 'data'),
      ...(kubeconfig ? { KUBECONFIG: kubeconfig } : {}),
    },
  });
  return { code: r.status ?? -1, out: r.stdout, err: r.stderr };
}

function render(...set: string[]): Obj[] {
  const r = helm([
    'template',
    'ptah',
    CHART,
    '-n',
    NS,
    '--include-crds',
    '--set',
    DIGESTS,
    ...set.flatMap((s) => ['--set', s]),
  ]);
  assert.equal(r.code, 0, r.err);
  return parseAllDocuments(r.out)
    .map((d) => d.toJSON() as Obj | null)
    .filter((o): o is Obj => o !== null);
}

const yamlObjects = (file: string): Obj[] =>
  parseAllDocuments(readFileSync(join(ROOT, file), 'utf8'))
    .map((d) => d.toJSON() as Obj | null)
    .filter((o): o is Obj => o !== null);

/** A value as the kubelet passes it to a Pod whose IP is `podIP`. */
const withPodIP = (value: string, podIP: string): string => value.replaceAll('$(PTAH_POD_IP)', podIP);

function one(objects: Obj[], kind: string, name: string): Obj {
  const found = objects.find((o) => o.kind === kind && o.metadata?.name === name);
  assert.ok(found, `${kind} ${name} is rendered`);
  return found;
}

before(() => {
  tools = findPackagingTools();
  home = mkdtempSync(join(tmpdir(), 'ptah-helm-'));
});
after(() => rmSync(home, { recursive: true, force: true }));

describe('helm lint and the values schema', () => {
  it('lints clean with pinned images', () => {
    const r = helm([
      'lint',
      CHART,
      '--strict',
      '--set',
      DIGESTS,
      '--set',
      'monitoring.prometheusRule.enabled=true',
    ]);
    assert.equal(r.code, 0, r.out + r.err);
    assert.match(r.out, /1 chart\(s\) linted, 0 chart\(s\) failed/);
  });

  it('refuses an image without a digest, or with a tag only, naming the value to set', () => {
    for (const set of [
      [],
      ['--set', `runnerImage.digest=${DIGEST}`],
      ['--set', `runnerImage.digest=${DIGEST},image.tag=1.0.0`],
    ]) {
      const r = helm(['template', 'ptah', CHART, ...set]);
      assert.notEqual(r.code, 0, `rendered with ${set.join(' ')}`);
      assert.match(r.err, /at '\/image\/digest': '' does not match pattern/);
    }
    const runner = helm([
      'template',
      'ptah',
      CHART,
      '--set',
      `image.digest=${DIGEST},runnerImage.digest=latest`,
    ]);
    assert.match(runner.err, /at '\/runnerImage\/digest': 'latest' does not match pattern/);
  });
});

describe('helm template', () => {
  it('installs the generated CRDs, exactly as src/api builds them', () => {
    const objects = render();
    for (const crd of buildCrds()) {
      assert.deepEqual(
        one(objects, 'CustomResourceDefinition', crd.metadata.name),
        JSON.parse(JSON.stringify(crd)),
      );
    }
  });

  it('grants the manager the rules of deploy/rbac and nothing on Secrets', () => {
    const objects = render();
    for (const [kind, name] of [
      ['ClusterRole', 'ptah-operator-manager'],
      ['Role', 'ptah-operator-leases'],
    ] as const) {
      const shipped = one(yamlObjects('deploy/rbac/manager.yaml'), kind, name);
      assert.deepEqual(one(objects, kind, name)['rules'], shipped['rules'], `${kind} ${name}`);
    }
    const rules = one(objects, 'ClusterRole', 'ptah-operator-manager')['rules'] as k8s.V1PolicyRule[];
    assert.ok(rules.every((r) => !r.resources?.includes('secrets') && !r.resources?.includes('*')));
    const binding = one(
      objects,
      'ClusterRoleBinding',
      'ptah-operator-manager',
    ) as unknown as k8s.V1ClusterRoleBinding;
    assert.deepEqual(binding.subjects, [{ kind: 'ServiceAccount', name: 'ptah-manager', namespace: NS }]);
    const deployment = one(objects, 'Deployment', 'ptah-operator') as unknown as k8s.V1Deployment;
    assert.equal(deployment.spec?.template.spec?.serviceAccountName, 'ptah-manager');
  });

  it("ships the people's ClusterRoles of deploy/rbac/user-roles.yaml, unbound", () => {
    const objects = render();
    for (const shipped of yamlObjects('deploy/rbac/user-roles.yaml')) {
      const name = shipped.metadata!.name!;
      const rendered = one(objects, 'ClusterRole', name);
      assert.deepEqual(rendered['rules'], shipped['rules'], name);
      for (const [k, v] of Object.entries(shipped.metadata?.labels ?? {})) {
        assert.equal(rendered.metadata?.labels?.[k], v, `${name} label ${k}`);
      }
    }
    const bound = objects.filter((o) => o.kind === 'RoleBinding' || o.kind === 'ClusterRoleBinding');
    assert.deepEqual(bound.map((b) => (b['roleRef'] as { name: string }).name).sort(), [
      'ptah-operator-leases',
      'ptah-operator-manager',
    ]);
    assert.equal(
      render('userRoles.create=false').filter((o) => o.metadata?.name === 'ptah-approver').length,
      0,
    );
  });

  it('registers the webhooks the admission server serves, through the Service, with a CA that signed the certificate', () => {
    const objects = render();
    const service = one(objects, 'Service', 'ptah-operator-webhook') as unknown as k8s.V1Service;
    const secret = one(objects, 'Secret', 'ptah-operator-webhook-tls') as unknown as k8s.V1Secret;
    const expected = approvalWebhookConfigurations({ baseUrl: 'https://unused', caBundle: 'unused' });
    const pairs = [
      ['MutatingWebhookConfiguration', DEFAULT_APPROVAL_WEBHOOK_NAMES.mutating, expected.mutating],
      ['ValidatingWebhookConfiguration', DEFAULT_APPROVAL_WEBHOOK_NAMES.validating, expected.validating],
      ['ValidatingWebhookConfiguration', DEFAULT_APPROVAL_WEBHOOK_NAMES.controller, expected.controller],
    ] as const;
    for (const [kind, name, code] of pairs) {
      const rendered = one(objects, kind, name) as unknown as k8s.V1ValidatingWebhookConfiguration;
      assert.deepEqual(
        rendered.webhooks!.map((w) => w.name),
        code.webhooks!.map((w) => w.name),
        `${kind}: the same webhooks in the same order`,
      );
      rendered.webhooks!.forEach((hook, i) => {
        const { clientConfig, ...rest } = hook;
        const { clientConfig: url, ...codeRest } = code.webhooks![i]!;
        assert.deepEqual(rest, codeRest, `${hook.name}: rules, failure policy, side effects, timeout`);
        assert.deepEqual(clientConfig.service, {
          name: service.metadata!.name,
          namespace: NS,
          path: new URL(url.url!).pathname,
          port: 443,
        });
        assert.equal(clientConfig.caBundle, secret.data!['ca.crt']);
      });
    }
    assert.deepEqual(
      Object.values(WEBHOOK_PATHS).sort(),
      [...expected.mutating.webhooks!, ...expected.validating.webhooks!, ...expected.controller.webhooks!]
        .map((w) => new URL(w.clientConfig.url!).pathname)
        .sort(),
      'every path the server serves is registered',
    );
    const ca = new X509Certificate(Buffer.from(secret.data!['ca.crt']!, 'base64'));
    const serving = new X509Certificate(Buffer.from(secret.data!['tls.crt']!, 'base64'));
    assert.ok(serving.verify(ca.publicKey), 'the serving certificate is signed by the caBundle');
    assert.match(serving.subjectAltName ?? '', new RegExp(`DNS:ptah-operator-webhook\\.${NS}\\.svc(,|$)`));

    // The Service reaches the container port the manager serves the webhooks on.
    const deployment = one(objects, 'Deployment', 'ptah-operator') as unknown as k8s.V1Deployment;
    const container = deployment.spec!.template.spec!.containers[0]!;
    const env = Object.fromEntries((container.env ?? []).map((e) => [e.name, e.value]));
    assert.equal(service.spec!.ports![0]!.targetPort, 'webhook');
    // Each replica listens on its own Pod IP, where the Service's endpoints lead, in either IP family.
    const bind = parseBindAddress(withPodIP(env['PTAH_WEBHOOK_BIND_ADDRESS']!, '10.1.2.3'), 'webhook');
    assert.equal(bind.host, '10.1.2.3', 'the webhooks listen on the Pod IP');
    assert.equal(parseBindAddress(withPodIP(env['PTAH_WEBHOOK_BIND_ADDRESS']!, 'fd00::7')).host, 'fd00::7');
    assert.equal(container.ports!.find((p) => p.name === 'webhook')!.containerPort, bind.port);
    // The manager's own gate accepts approvals only while the webhooks are registered as the chart does it.
    const registered = {
      mutating: [one(objects, 'MutatingWebhookConfiguration', DEFAULT_APPROVAL_WEBHOOK_NAMES.mutating)],
      validating: [one(objects, 'ValidatingWebhookConfiguration', DEFAULT_APPROVAL_WEBHOOK_NAMES.validating)],
    } as unknown as Parameters<typeof approvalWebhooksProblem>[0];
    for (const kind of DECISION_KINDS)
      assert.equal(approvalWebhooksProblem(registered, kind), undefined, kind);

    const certManager = render('webhook.certManager.enabled=true');
    assert.equal(certManager.filter((o) => o.kind === 'Secret').length, 0);
    assert.ok(certManager.some((o) => o.kind === 'Certificate'));
    const injected = one(certManager, 'ValidatingWebhookConfiguration', 'ptah-vapproval');
    assert.equal(
      injected.metadata?.annotations?.['cert-manager.io/inject-ca-from'],
      `${NS}/ptah-operator-webhook`,
    );
  });

  it('ships every admission policy as src/admission builds it, with the release namespace and manager image as literals', () => {
    for (const [objects, digest] of [
      [render(), DIGEST],
      [render(`image.digest=${NEW_DIGEST}`), NEW_DIGEST],
    ] as const) {
      const code = admissionPolicies({
        managerUsername: managerServiceAccountUsername(NS, 'ptah-manager'),
        managerImage: `ptah/ptah-operator@${digest}`,
        controllerStateVersion: CONTROLLER_STATE_VERSION,
      });
      assert.deepEqual(
        objects.filter((o) => o.kind === 'ValidatingAdmissionPolicy').map((o) => o.metadata?.name),
        code.map((c) => c.policy.metadata?.name),
        'the chart ships these policies and no other',
      );
      for (const c of code) {
        const name = c.policy.metadata!.name!;
        const policy = one(objects, 'ValidatingAdmissionPolicy', name);
        assert.deepEqual(policy['spec'], JSON.parse(JSON.stringify(c.policy.spec)), name);
        const binding = one(objects, 'ValidatingAdmissionPolicyBinding', name);
        assert.deepEqual(binding['spec'], c.binding.spec, name);
      }
    }
    // The exempt identity is the ServiceAccount the manager's Deployment runs as, in the release namespace,
    // and the image literal is the one the Deployment tells the manager it runs.
    const deployment = one(render(), 'Deployment', 'ptah-operator') as unknown as k8s.V1Deployment;
    assert.equal(deployment.spec?.template.spec?.serviceAccountName, 'ptah-manager');
    const env = deployment.spec!.template.spec!.containers[0]!.env ?? [];
    assert.equal(env.find((e) => e.name === 'PTAH_MANAGER_IMAGE')?.value, `ptah/ptah-operator@${DIGEST}`);
  });

  it('runs two replicas with leader election, digest-pinned images and only variables the manager reads', () => {
    const deployment = one(render(), 'Deployment', 'ptah-operator') as unknown as k8s.V1Deployment;
    assert.equal(deployment.spec?.replicas, 2);
    const pod = deployment.spec!.template.spec!;
    const container = pod.containers[0]!;
    assert.equal(container.image, `ptah/ptah-operator@${DIGEST}`);
    const env = Object.fromEntries((container.env ?? []).map((e) => [e.name, e]));
    assert.equal(env['PTAH_RUNNER_IMAGE']?.value, `ptah/ptah-runner@${DIGEST}`);
    assert.equal(env['PTAH_COORDINATION_NAMESPACE']?.value, NS);
    assert.deepEqual(env['PTAH_MANAGER_IDENTITY']?.valueFrom, { fieldRef: { fieldPath: 'metadata.name' } });
    // Every variable the Deployment sets is one src/controller/main.ts reads, or one the kubelet expands
    // into another's value ($(PTAH_POD_IP) in the bind addresses).
    const main = readFileSync(join(ROOT, 'src/controller/main.ts'), 'utf8');
    const values = Object.values(env).map((e) => e.value ?? '');
    for (const name of Object.keys(env)) {
      if (values.some((v) => v.includes(`$(${name})`))) continue;
      assert.match(main, new RegExp(`env\\['${name}'\\]`), name);
    }
    assert.deepEqual(env['PTAH_POD_IP']?.valueFrom, { fieldRef: { fieldPath: 'status.podIP' } });
    assert.equal(container.securityContext?.readOnlyRootFilesystem, true);
    assert.equal(pod.securityContext?.runAsNonRoot, true);

    const upgraded = one(
      render(`image.digest=${NEW_DIGEST}`),
      'Deployment',
      'ptah-operator',
    ) as unknown as k8s.V1Deployment;
    assert.equal(upgraded.spec!.template.spec!.containers[0]!.image, `ptah/ptah-operator@${NEW_DIGEST}`);
  });

  it('serves metrics on the bind address, behind a Service the ServiceMonitor selects', () => {
    const objects = render('monitoring.serviceMonitor.enabled=true', 'metrics.bindAddress=:9100');
    const deployment = one(objects, 'Deployment', 'ptah-operator') as unknown as k8s.V1Deployment;
    const container = deployment.spec!.template.spec!.containers[0]!;
    const bind = container.env!.find((e) => e.name === 'PTAH_METRICS_BIND_ADDRESS')!.value!;
    assert.equal(
      container.ports!.find((p) => p.name === 'metrics')!.containerPort,
      parseBindAddress(withPodIP(bind, '10.1.2.3')).port,
    );
    const byDefault = one(render(), 'Deployment', 'ptah-operator') as unknown as k8s.V1Deployment;
    const metricsBind = byDefault.spec!.template.spec!.containers[0]!.env!.find(
      (e) => e.name === 'PTAH_METRICS_BIND_ADDRESS',
    )!.value!;
    assert.deepEqual(parseBindAddress(withPodIP(metricsBind, '10.1.2.3')), { host: '10.1.2.3', port: 8080 });
    const service = one(objects, 'Service', 'ptah-operator-metrics') as unknown as k8s.V1Service;
    const monitor = one(objects, 'ServiceMonitor', 'ptah-operator');
    const spec = monitor['spec'] as {
      selector: { matchLabels: Record<string, string> };
      endpoints: { port: string; path: string }[];
    };
    for (const [k, v] of Object.entries(spec.selector.matchLabels))
      assert.equal(service.metadata?.labels?.[k], v, k);
    assert.deepEqual([spec.endpoints[0]!.port, spec.endpoints[0]!.path], ['metrics', '/metrics']);
    assert.equal(
      render('metrics.enabled=false').filter((o) => o.metadata?.name === 'ptah-operator-metrics').length,
      0,
    );
  });
});

describe('helm install on the local control plane', () => {
  let cp: ControlPlane;
  before(async () => {
    cp = await startControlPlane();
  });
  after(async () => {
    await cp?.stop();
  });

  it('creates the objects server-side, upgrades the image and keeps the certificate, and uninstalls every manager object', async () => {
    const kc = cp.kubeconfigs.admin;
    const admin = new k8s.KubeConfig();
    admin.loadFromFile(kc);
    const apps = admin.makeApiClient(k8s.AppsV1Api);
    const core = admin.makeApiClient(k8s.CoreV1Api);
    const rbac = admin.makeApiClient(k8s.RbacAuthorizationV1Api);
    const reg = admin.makeApiClient(k8s.AdmissionregistrationV1Api);
    const ext = admin.makeApiClient(k8s.ApiextensionsV1Api);

    const install = helm(['install', 'ptah', CHART, '-n', NS, '--create-namespace', '--set', DIGESTS], kc);
    assert.equal(install.code, 0, install.err);
    for (const crd of buildCrds()) await ext.readCustomResourceDefinition({ name: crd.metadata.name });
    const deployment = await apps.readNamespacedDeployment({ namespace: NS, name: 'ptah-operator' });
    assert.equal(deployment.spec?.replicas, 2);
    // The controller-manager acts on it: a ReplicaSet with two Pods (Pending here without a node).
    await eventually(
      'two manager Pods',
      async () => {
        const pods = await core.listNamespacedPod({
          namespace: NS,
          labelSelector: 'app.kubernetes.io/component=manager',
        });
        return pods.items.length === 2 ? pods : undefined;
      },
      30_000,
      250,
    );
    await core.readNamespacedServiceAccount({ namespace: NS, name: 'ptah-manager' });
    await rbac.readClusterRole({ name: 'ptah-operator-manager' });
    await rbac.readClusterRole({ name: 'ptah-approver' });
    const validating = await reg.readValidatingWebhookConfiguration({ name: 'ptah-vapproval' });
    assert.equal(validating.webhooks?.[0]?.clientConfig.service?.path, WEBHOOK_PATHS.vapproval);
    assert.deepEqual(
      validating.webhooks?.map((w) => w.clientConfig.service?.path),
      [WEBHOOK_PATHS.vapproval, WEBHOOK_PATHS.vmigrationapproval, WEBHOOK_PATHS.vmigrationrunacknowledgment],
    );
    const policyNames = admissionPolicies({
      managerUsername: 'x',
      managerImage: 'y',
      controllerStateVersion: CONTROLLER_STATE_VERSION,
    }).map((p) => p.policy.metadata!.name!);
    const installedPolicies = new Map<string, k8s.V1ValidatingAdmissionPolicy>();
    for (const name of policyNames) {
      const policy = await reg.readValidatingAdmissionPolicy({ name });
      assert.equal(policy.spec?.failurePolicy, 'Fail', name);
      installedPolicies.set(name, policy);
      await reg.readValidatingAdmissionPolicyBinding({ name });
    }
    const secret = await core.readNamespacedSecret({ namespace: NS, name: 'ptah-operator-webhook-tls' });
    // The leader Lease is the release's; a manager writes its holder (as LeaderElector does: a PUT).
    const coordination = admin.makeApiClient(k8s.CoordinationV1Api);
    const lease = await coordination.readNamespacedLease({ namespace: NS, name: 'ptah-operator-leader' });
    await coordination.replaceNamespacedLease({
      namespace: NS,
      name: 'ptah-operator-leader',
      body: { metadata: lease.metadata!, spec: { holderIdentity: 'replica-a', leaseDurationSeconds: 15 } },
    });

    const upgrade = helm(
      ['upgrade', 'ptah', CHART, '-n', NS, '--set', DIGESTS, '--set', `image.digest=${NEW_DIGEST}`],
      kc,
    );
    assert.equal(upgrade.code, 0, upgrade.err);
    const rolled = await apps.readNamespacedDeployment({ namespace: NS, name: 'ptah-operator' });
    assert.equal(rolled.spec?.template.spec?.containers[0]?.image, `ptah/ptah-operator@${NEW_DIGEST}`);
    const held = await coordination.readNamespacedLease({ namespace: NS, name: 'ptah-operator-leader' });
    assert.equal(held.metadata?.uid, lease.metadata?.uid, 'an upgrade keeps the leader Lease');
    assert.equal(held.spec?.holderIdentity, 'replica-a', 'and leaves its holder alone');
    const kept = await core.readNamespacedSecret({ namespace: NS, name: 'ptah-operator-webhook-tls' });
    assert.deepEqual(kept.data, secret.data, 'an upgrade keeps the webhook certificate and its CA');
    const after = await reg.readValidatingWebhookConfiguration({ name: 'ptah-vapproval' });
    assert.equal(after.webhooks?.[0]?.clientConfig.caBundle, secret.data?.['ca.crt']);
    // The policies are updated in place: the same objects, the new manager image as their literal wherever
    // they carry one, the old one nowhere.
    for (const name of policyNames) {
      const policy = await reg.readValidatingAdmissionPolicy({ name });
      assert.equal(policy.metadata?.uid, installedPolicies.get(name)?.metadata?.uid, `${name} kept`);
      assert.ok(!JSON.stringify(policy.spec).includes(DIGEST), `${name} names no old image`);
      const carried = JSON.stringify(installedPolicies.get(name)?.spec).includes(DIGEST);
      assert.equal(
        JSON.stringify(policy.spec).includes(NEW_DIGEST),
        carried,
        `${name} carries the new image`,
      );
    }

    const uninstall = helm(['uninstall', 'ptah', '-n', NS, '--wait'], kc);
    assert.equal(uninstall.code, 0, uninstall.err);
    const gone = async (what: string, read: () => Promise<unknown>) => {
      await eventually(
        `${what} deleted`,
        async () => {
          try {
            await read();
            return undefined;
          } catch (error) {
            return (error as { code?: number }).code === 404 ? true : undefined;
          }
        },
        30_000,
        250,
      );
    };
    await gone('Deployment', () => apps.readNamespacedDeployment({ namespace: NS, name: 'ptah-operator' }));
    await gone('leader Lease', () =>
      coordination.readNamespacedLease({ namespace: NS, name: 'ptah-operator-leader' }),
    );
    await gone('ServiceAccount', () =>
      core.readNamespacedServiceAccount({ namespace: NS, name: 'ptah-manager' }),
    );
    await gone('Secret', () =>
      core.readNamespacedSecret({ namespace: NS, name: 'ptah-operator-webhook-tls' }),
    );
    await gone('Service', () => core.readNamespacedService({ namespace: NS, name: 'ptah-operator-webhook' }));
    await gone('ClusterRole', () => rbac.readClusterRole({ name: 'ptah-operator-manager' }));
    await gone('ClusterRoleBinding', () => rbac.readClusterRoleBinding({ name: 'ptah-operator-manager' }));
    await gone('MutatingWebhookConfiguration', () =>
      reg.readMutatingWebhookConfiguration({ name: 'ptah-mapproval' }),
    );
    await gone('ValidatingWebhookConfiguration', () =>
      reg.readValidatingWebhookConfiguration({ name: 'ptah-vapproval' }),
    );
    await gone('ValidatingAdmissionPolicy', () =>
      reg.readValidatingAdmissionPolicy({ name: STATUS_GUARD_NAME }),
    );
    await eventually(
      'no manager Pod left',
      async () => {
        const pods = await core.listNamespacedPod({
          namespace: NS,
          labelSelector: 'app.kubernetes.io/component=manager',
        });
        return pods.items.length === 0 ? true : undefined;
      },
      30_000,
      250,
    );
    // CRDs stay, by Helm's rule for a chart's crds/: deleting them would delete every resource.
    for (const crd of buildCrds()) await ext.readCustomResourceDefinition({ name: crd.metadata.name });
  });
});
