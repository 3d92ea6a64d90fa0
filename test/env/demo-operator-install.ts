/**
 * The demo's install step, done as a cluster admin would: the CRDs and the RBAC from deploy/ (the manager's,
 * and the people's ClusterRoles bound in the test namespace), the approval webhooks (served by the manager on
 * loopback with a certificate made here), the runner image in the node agent's image map, and the manager
 * process itself with the manager ServiceAccount's kubeconfig.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import * as k8s from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { registerImage } from './build-output.ts';
import { approvalWebhookConfigurations } from '../../src/admission/webhook-configurations.ts';
import { unresolvedRunAnnotationGuard } from '../../src/admission/admission-policies.ts';
import type { EnvironmentDescription } from './environment.ts';
import { createCertificateAuthority, issueCertificate } from './pki.ts';
import { freePort } from './ports.ts';
import type { ManagedProcess } from './process.ts';
import { startManagerProcess } from './manager-process.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const DEMO_RUNNER_IMAGE = 'ptah.local/ptah-runner:demo';
const COORDINATION_NAMESPACE = 'ptah-system';
const LEADER_LEASE = 'ptah-operator-leader';

/** Thrown from a probe to stop waiting at once: what was awaited can no longer happen. */
export class WaitAborted extends Error {
  override readonly name = 'WaitAborted';
}

/**
 * Polls until `probe` returns a value; on timeout the error names what was awaited and the last failure.
 * Other errors from the probe count as "not yet" (an API server hiccup), except WaitAborted.
 */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs: number,
  intervalMs = 300,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      if (error instanceof WaitAborted) throw error;
      last = error instanceof Error ? error.message.split('\n')[0]!.slice(0, 200) : String(error);
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${timeoutMs / 1000} s waiting for ${what}${last ? ` (last error: ${last})` : ''}`,
      );
    }
    await sleep(intervalMs);
  }
}

function isConflict(error: unknown): boolean {
  return error instanceof k8s.ApiException && error.code === 409;
}

/** Creates every document of a manifest; one that already exists is left as it is. */
async function createManifest(admin: k8s.KubeConfig, file: string): Promise<string[]> {
  const client = k8s.KubernetesObjectApi.makeApiClient(admin);
  const created: string[] = [];
  for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) {
    const object = doc.toJSON() as k8s.KubernetesObject | null;
    if (!object) continue;
    try {
      await client.create(object);
    } catch (error) {
      if (!isConflict(error)) throw error;
    }
    created.push(`${object.kind}/${object.metadata?.name}`);
  }
  return created;
}

async function installCrds(admin: k8s.KubeConfig): Promise<void> {
  const dir = join(ROOT, 'deploy/crds');
  const files = readdirSync(dir).filter((f) => f.endsWith('.yaml'));
  const names: string[] = [];
  for (const f of files) {
    await createManifest(admin, join(dir, f));
    names.push(f.replace(/\.yaml$/, ''));
  }
  const ext = admin.makeApiClient(k8s.ApiextensionsV1Api);
  for (const name of names) {
    await waitFor(
      `CRD ${name} to be Established`,
      async () => {
        const crd = await ext.readCustomResourceDefinition({ name });
        return crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')
          ? true
          : undefined;
      },
      30_000,
    );
  }
  console.log(`install: CRDs established: ${names.join(', ')}`);
}

/** A RoleBinding in `namespace` granting a ClusterRole of deploy/rbac to one user. */
async function bindClusterRole(
  rbac: k8s.RbacAuthorizationV1Api,
  namespace: string,
  role: string,
  user: string,
): Promise<void> {
  try {
    await rbac.createNamespacedRoleBinding({
      namespace,
      body: {
        metadata: { name: `${role}:${user}` },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
      },
    });
  } catch (error) {
    if (!isConflict(error)) throw error;
  }
}

/**
 * What each person may do in the namespace, granted as a platform team would: the ClusterRoles shipped in
 * deploy/rbac/user-roles.yaml bound per namespace. The user edits schemas and reads plan bytes; the approver
 * only approves. Creating the database URL Secret is the namespace's own business, not one of the operator's
 * roles, so the user gets exactly that (create, never read) from a Role of the demo's.
 */
async function bindPeople(admin: k8s.KubeConfig, description: EnvironmentDescription): Promise<void> {
  const rbac = admin.makeApiClient(k8s.RbacAuthorizationV1Api);
  const namespace = description.testNamespace;
  const { user, approver } = description.identities;
  await bindClusterRole(rbac, namespace, 'ptah-schema-editor', user);
  await bindClusterRole(rbac, namespace, 'ptah-plan-reader', user);
  await bindClusterRole(rbac, namespace, 'ptah-approver', approver);
  const secretWriter = 'ptah-demo-secret-writer';
  try {
    await rbac.createNamespacedRole({
      namespace,
      body: {
        metadata: { name: secretWriter },
        rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['create'] }],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace,
      body: {
        metadata: { name: secretWriter },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: secretWriter },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
      },
    });
  } catch (error) {
    if (!isConflict(error)) throw error;
  }
  console.log(
    `install: in ${namespace}, ${user} is bound to ptah-schema-editor and ptah-plan-reader (and may create ` +
      `Secrets); ${approver} is bound to ptah-approver`,
  );
}

/**
 * Points both decision webhook configurations at the manager's port, and installs the unresolved-run
 * annotation policy for the manager's identity, replacing registrations left from an earlier run.
 */
async function registerWebhooks(
  admin: k8s.KubeConfig,
  port: number,
  caFile: string,
  managerUsername: string,
): Promise<void> {
  const caBundle = readFileSync(caFile).toString('base64');
  const webhooks = approvalWebhookConfigurations({ baseUrl: `https://127.0.0.1:${port}`, caBundle });
  const reg = admin.makeApiClient(k8s.AdmissionregistrationV1Api);
  const ignoreMissing = (error: unknown) => {
    if (!(error instanceof k8s.ApiException && error.code === 404)) throw error;
  };
  await reg
    .deleteMutatingWebhookConfiguration({ name: webhooks.mutating.metadata!.name! })
    .catch(ignoreMissing);
  await reg
    .deleteValidatingWebhookConfiguration({ name: webhooks.validating.metadata!.name! })
    .catch(ignoreMissing);
  await reg.createMutatingWebhookConfiguration({ body: webhooks.mutating });
  await reg.createValidatingWebhookConfiguration({ body: webhooks.validating });
  const guard = unresolvedRunAnnotationGuard({ username: managerUsername });
  await reg
    .deleteValidatingAdmissionPolicyBinding({ name: guard.binding.metadata!.name! })
    .catch(ignoreMissing);
  await reg.deleteValidatingAdmissionPolicy({ name: guard.policy.metadata!.name! }).catch(ignoreMissing);
  await reg.createValidatingAdmissionPolicy({ body: guard.policy });
  await reg.createValidatingAdmissionPolicyBinding({ body: guard.binding });
  const paths = (c: { webhooks?: { clientConfig: { url?: string } }[] }) =>
    (c.webhooks ?? []).map((w) => new URL(w.clientConfig.url!).pathname).join(', ');
  console.log(
    `install: decision webhooks registered (mutating ${paths(webhooks.mutating)}; validating ${paths(webhooks.validating)}) -> 127.0.0.1:${port}; policy ${guard.policy.metadata!.name!} exempts ${managerUsername}`,
  );
}

/** The runner image: this checkout's compiled ptah-runner under the Node running the demo. */
function registerRunnerImage(description: EnvironmentDescription): void {
  registerImage(description.imageMapFile, DEMO_RUNNER_IMAGE, 'ptah-runner');
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

export interface InstalledOperator {
  readonly manager: ManagedProcess;
  readonly logFile: string;
}

/**
 * Installs everything and starts the manager; resolves once it serves the webhooks and holds the leader
 * Lease. The manager is stopped again if it does not get there.
 */
export async function installOperator(
  description: EnvironmentDescription,
  runId: string,
): Promise<InstalledOperator> {
  const admin = new k8s.KubeConfig();
  admin.loadFromFile(description.kubeconfigs.admin);
  await installCrds(admin);
  for (const file of readdirSync(join(ROOT, 'deploy/rbac')).filter((f) => f.endsWith('.yaml'))) {
    const rbac = await createManifest(admin, join(ROOT, 'deploy/rbac', file));
    console.log(`install: RBAC from deploy/rbac/${file}: ${rbac.join(', ')}`);
  }
  await bindPeople(admin, description);
  registerRunnerImage(description);

  const dir = join(description.dir, 'demo-operator');
  mkdirSync(dir, { recursive: true });
  const ca = createCertificateAuthority(dir, `webhook-ca-${runId}`, 'ptah-demo-webhook-ca');
  const serving = issueCertificate(dir, ca, {
    name: `webhook-${runId}`,
    commonName: 'ptah-webhook',
    ipAddresses: ['127.0.0.1'],
    usage: 'server',
  });
  const port = await freePort();
  await registerWebhooks(admin, port, ca.certFile, description.identities.manager);

  const logFile = join(dir, `manager-${runId}.log`);
  const identity = `demo-manager-${runId}`;
  if (!existsSync(description.kubeconfigs.manager)) {
    throw new Error(`the manager kubeconfig ${description.kubeconfigs.manager} does not exist`);
  }
  const manager = startManagerProcess({
    kubeconfig: description.kubeconfigs.manager,
    coordinationNamespace: COORDINATION_NAMESPACE,
    runnerImage: DEMO_RUNNER_IMAGE,
    identity,
    leaderLeaseSeconds: 10,
    webhook: { certFile: serving.certFile, keyFile: serving.keyFile, port },
    logFile,
  });
  console.log(
    `install: manager started (pid ${manager.pid}) as ${description.identities.manager}; logs: ${logFile}`,
  );
  try {
    const coordination = admin.makeApiClient(k8s.CoordinationV1Api);
    await waitFor(
      'the manager to serve its webhooks and hold the leader Lease',
      async () => {
        if (manager.exited()) throw new WaitAborted(`the manager exited during start-up; see ${logFile}`);
        if (!(await portOpen(port))) return undefined;
        const lease = await coordination.readNamespacedLease({
          namespace: COORDINATION_NAMESPACE,
          name: LEADER_LEASE,
        });
        return lease.spec?.holderIdentity === identity ? true : undefined;
      },
      60_000,
    );
  } catch (error) {
    await manager.stop(5_000);
    throw error;
  }
  console.log(
    `install: manager is the leader (Lease ${COORDINATION_NAMESPACE}/${LEADER_LEASE}) and serves admission`,
  );
  return { manager, logFile };
}
