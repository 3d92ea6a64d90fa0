/**
 * The demo's install step, done as a cluster admin would: `helm install` of deploy/helm/ptah-operator (CRDs,
 * the manager's RBAC, the people's ClusterRoles, the two-replica Deployment, the webhook Service, certificate
 * and configurations), the people's ClusterRoles bound in the test namespace, and the operator image mapped
 * to this checkout's bundles in the node agent's image map. The manager runs as the Deployment's Pods.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import * as k8s from '@kubernetes/client-node';
import type { EnvironmentDescription } from './environment.ts';
import { installOperatorChart, OPERATOR_REPOSITORY } from './operator-chart.ts';

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

export interface InstalledOperator {
  readonly namespace: string;
  /** Why the manager cannot be running now (no ready replica), or undefined. */
  problem(): Promise<string | undefined>;
  /** The last lines of every manager Pod's log. */
  logTail(lines: number): Promise<string>;
  /** `helm uninstall --wait`. */
  uninstall(): Promise<void>;
}

const NAMESPACE = 'ptah-operator';
const LEADER_LEASE = 'ptah-operator-leader';

/**
 * Installs the chart and waits until the Deployment is available and one replica holds the leader Lease;
 * uninstalls again if it does not get there.
 */
export async function installOperator(description: EnvironmentDescription): Promise<InstalledOperator> {
  const admin = new k8s.KubeConfig();
  admin.loadFromFile(description.kubeconfigs.admin);
  const workDir = join(description.dir, 'demo-operator');
  mkdirSync(workDir, { recursive: true });
  const started = Date.now();
  const chart = await installOperatorChart({
    kubeconfig: description.kubeconfigs.admin,
    imageMapFile: description.imageMapFile,
    workDir,
    namespace: NAMESPACE,
    set: ['leaderElection.leaseSeconds=10'],
    timeout: '2m',
  });
  console.log(
    `install: helm install ptah deploy/helm/ptah-operator -n ${NAMESPACE} --wait: Deployment available in ` +
      `${((Date.now() - started) / 1000).toFixed(1)} s (image ${OPERATOR_REPOSITORY}@${chart.digest.slice(0, 19)}...)`,
  );
  const core = admin.makeApiClient(k8s.CoreV1Api);
  const managerPods = async () =>
    (
      await core.listNamespacedPod({
        namespace: NAMESPACE,
        labelSelector: 'app.kubernetes.io/component=manager',
      })
    ).items;
  const installed: InstalledOperator = {
    namespace: NAMESPACE,
    async problem() {
      const pods = await managerPods();
      const ready = pods.filter((p) =>
        p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
      );
      if (ready.length > 0) return undefined;
      return `no manager Pod is Ready: ${pods
        .map((p) => `${p.metadata?.name} ${JSON.stringify(p.status?.containerStatuses?.[0]?.state)}`)
        .join('; ')}`;
    },
    async logTail(lines) {
      const parts: string[] = [];
      for (const pod of await managerPods()) {
        const log = await core
          .readNamespacedPodLog({ namespace: NAMESPACE, name: pod.metadata!.name!, container: 'manager' })
          .catch((error: unknown) => `(no log: ${(error as Error).message.split('\n')[0]})`);
        parts.push(
          `--- ${pod.metadata?.name}\n${String(log).trimEnd().split('\n').slice(-lines).join('\n')}`,
        );
      }
      return parts.join('\n');
    },
    async uninstall() {
      const run = await chart.uninstall();
      if (run.code !== 0) throw new Error(`helm uninstall failed: ${run.stderr.trim()}`);
    },
  };
  try {
    await bindPeople(admin, description);
    const coordination = admin.makeApiClient(k8s.CoordinationV1Api);
    const pods = (await managerPods()).map((p) => p.metadata?.name);
    const leader = await waitFor(
      'a manager replica to hold the leader Lease',
      async () => {
        const lease = await coordination.readNamespacedLease({ namespace: NAMESPACE, name: LEADER_LEASE });
        const holder = lease.spec?.holderIdentity;
        return holder && pods.includes(holder) ? holder : undefined;
      },
      60_000,
    );
    console.log(
      `install: manager Pods ${pods.join(', ')} serve the webhooks behind Service ptah-operator-webhook; ` +
        `${leader} holds the Lease ${NAMESPACE}/${LEADER_LEASE}`,
    );
  } catch (error) {
    await installed.uninstall().catch(() => undefined);
    throw error;
  }
  return installed;
}
