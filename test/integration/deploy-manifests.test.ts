// The install without Helm, as docs/install.md writes it: deploy/crds, deploy/rbac and deploy/admission
// (rendered by the real envsubst naming its two variables) applied with the real kubectl to the local API
// server, first as a server-side dry run, then for real. A manifest the API server refuses fails here. Then
// what was applied is shown in force: the status guard refuses a cluster administrator's status write, and
// a PtahSchemaApproval is refused because the stamping webhook it must pass cannot be reached (no manager
// serves it here), which the configuration's failurePolicy Fail makes a refusal.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as k8s from '@kubernetes/client-node';
import { PLAIN_ADMISSION_DIR, PLAIN_VARIABLES } from '../../scripts/gen-admission-policies.ts';
import { admissionPolicies } from '../../src/admission/admission-policies.ts';
import { API_GROUP, API_VERSION, GROUP_VERSION } from '../../src/api/meta.ts';
import { startControlPlane, type ControlPlane } from '../env/controlplane.ts';
import { eventually } from '../env/eventually.ts';
import { findKubernetesBinaries } from '../env/k8s-binaries.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const IMAGE = `registry.example/ptah-operator@sha256:${'1'.repeat(64)}`;
const CA_BUNDLE = Buffer.from(
  '-----BEGIN CERTIFICATE-----\nnot a real CA\n-----END CERTIFICATE-----\n',
).toString('base64');

let cp: ControlPlane;
let kubectl: string;

function run(command: string, args: readonly string[], input?: string): string {
  const r = spawnSync(command, args, {
    encoding: 'utf8',
    timeout: 120_000,
    env: {
      ...process.env,
      KUBECONFIG: cp.kubeconfigs.admin,
      PTAH_MANAGER_IMAGE: IMAGE,
      PTAH_WEBHOOK_CA_BUNDLE: CA_BUNDLE,
    },
    ...(input !== undefined ? { input } : {}),
  });
  assert.equal(r.status, 0, `${command} ${args.join(' ')}: ${r.stderr}${r.stdout}`);
  return r.stdout;
}

/** deploy/admission as docs/install.md renders it: envsubst replacing exactly the named variables. */
function rendered(): string {
  const dir = join(cp.dir, 'admission');
  mkdirSync(dir, { recursive: true });
  const only = PLAIN_VARIABLES.map((v) => `$${v}`).join(' ');
  for (const file of readdirSync(join(ROOT, PLAIN_ADMISSION_DIR))) {
    const text = readFileSync(join(ROOT, PLAIN_ADMISSION_DIR, file), 'utf8');
    writeFileSync(join(dir, file), run('envsubst', [only], text));
  }
  return dir;
}

before(async () => {
  cp = await startControlPlane();
  kubectl = findKubernetesBinaries().kubectl;
});

after(async () => {
  await cp?.stop();
});

describe('deploy/ installed with kubectl, without Helm', () => {
  it('applies crds, rbac and admission: a server-side dry run, then for real', () => {
    run(kubectl, ['apply', '--server-side', '-f', join(ROOT, 'deploy/crds')]);
    run(kubectl, ['wait', '--for=condition=Established', '--timeout=60s', '-f', join(ROOT, 'deploy/crds')]);
    run(kubectl, ['apply', '--server-side', '-f', join(ROOT, 'deploy/rbac')]);
    const admission = rendered();
    for (const file of readdirSync(admission)) {
      const text = readFileSync(join(admission, file), 'utf8');
      assert.ok(!text.includes('${'), `${file}: envsubst left a variable`);
      assert.ok(
        text.includes(file === 'policies.yaml' ? IMAGE : CA_BUNDLE),
        `${file}: a variable was not filled`,
      );
    }
    const dry = run(kubectl, ['apply', '--server-side', '--dry-run=server', '-f', admission]);
    assert.match(
      dry,
      /validatingadmissionpolicy.admissionregistration.k8s.io\/ptah-status-guard serverside-applied \(server dry run\)/,
    );
    run(kubectl, ['apply', '--server-side', '-f', admission]);
    const names = run(kubectl, [
      'get',
      'validatingadmissionpolicies,validatingadmissionpolicybindings,mutatingwebhookconfigurations,validatingwebhookconfigurations',
      '-o',
      'name',
    ]);
    const policies = admissionPolicies({
      managerUsername: 'm',
      managerImage: IMAGE,
      controllerStateVersion: 1,
    });
    for (const expected of [
      ...policies.map(
        (p) => `validatingadmissionpolicy.admissionregistration.k8s.io/${p.policy.metadata!.name}`,
      ),
      ...policies.map(
        (p) => `validatingadmissionpolicybinding.admissionregistration.k8s.io/${p.binding.metadata!.name}`,
      ),
      'mutatingwebhookconfiguration.admissionregistration.k8s.io/ptah-mapproval',
      'validatingwebhookconfiguration.admissionregistration.k8s.io/ptah-vapproval',
      'validatingwebhookconfiguration.admissionregistration.k8s.io/ptah-vcontrollerwrite',
    ]) {
      assert.ok(names.split('\n').includes(expected), `${expected} installed:\n${names}`);
    }
  });

  it('what was applied is in force: the status guard refuses an administrator, the approval webhooks fail closed', async () => {
    const admin = new k8s.KubeConfig();
    admin.loadFromFile(cp.kubeconfigs.admin);
    const objects = admin.makeApiClient(k8s.CustomObjectsApi);
    const at = (plural: string) => ({
      group: API_GROUP,
      version: API_VERSION,
      namespace: cp.testNamespace,
      plural,
    });
    const schema = (await objects.createNamespacedCustomObject({
      ...at('ptahschemas'),
      body: {
        apiVersion: GROUP_VERSION,
        kind: 'PtahSchema',
        metadata: { name: 'orders' },
        spec: {
          target: { engine: 'postgres', coordinationKey: 'db', urlFrom: { name: 'db', key: 'url' } },
          desired: { configMap: { name: 'orders-schema', files: [{ key: 'schema.sql' }] } },
        },
      },
    })) as { metadata: { resourceVersion: string } };
    const refusal = async (write: () => Promise<unknown>) => {
      try {
        await write();
        return undefined;
      } catch (error) {
        return error instanceof k8s.ApiException ? `${error.code} ${String(error.body)}` : String(error);
      }
    };
    const status = await eventually('the status guard is in force', () =>
      refusal(() =>
        objects.replaceNamespacedCustomObjectStatus({
          ...at('ptahschemas'),
          name: 'orders',
          body: {
            apiVersion: GROUP_VERSION,
            kind: 'PtahSchema',
            metadata: { name: 'orders', resourceVersion: schema.metadata.resourceVersion },
            status: { phase: 'InSync' },
          },
          dryRun: 'All',
        }),
      ),
    );
    assert.match(status, /ptah-status-guard/);
    assert.match(
      status,
      /is written only by the Ptah manager \(system:serviceaccount:ptah-system:ptah-manager\)/,
    );
    const approval = await eventually('the approval webhooks are in force', () =>
      refusal(() =>
        objects.createNamespacedCustomObject({
          ...at('ptahschemaapprovals'),
          body: {
            apiVersion: GROUP_VERSION,
            kind: 'PtahSchemaApproval',
            metadata: { name: 'orders-approval' },
            spec: { schemaRef: { name: 'orders' } },
          },
          dryRun: 'All',
        }),
      ),
    );
    assert.match(approval, /failed calling webhook \\?"mapproval\.operator\.ptah\.run\\?"/);
  });
});
