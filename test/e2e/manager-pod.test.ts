// The operator installed as a platform team installs it: `helm install` of deploy/helm/ptah-operator on the
// local control plane. The Deployment's two Pods run on the node agent from the compiled bundles (laid out as
// the operator image lays them out), talk to the API server with their projected ServiceAccount token and
// CA, elect a leader, and serve the approval webhooks, which the API server reaches through the chart's
// Service at the Pods' own IPs. A PtahSchema converges through them; an upgrade rolls them; an uninstall
// removes them.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { READ_REQUESTED_ANNOTATION } from '../../src/api/meta.ts';
import { nodeAgentAvailable, startEnvironment, type Environment } from '../env/environment.ts';
import { installOperatorChart, OPERATOR_REPOSITORY, type OperatorChart } from '../env/operator-chart.ts';
import {
  at,
  createApproval,
  declareSchema,
  dumpDebug,
  eventually,
  getSchema,
  query,
  statementsIn,
  waitForPhase,
  type E2E,
} from './harness.ts';

const skip = nodeAgentAvailable() ? false : 'the node agent is not available';
const NS = 'ptah-operator';
const MANAGER_PODS = 'app.kubernetes.io/component=manager';
const LEADER_LEASE = 'ptah-operator-leader';
const ORDERS = `
CREATE TABLE public.customers (id bigint PRIMARY KEY, email text NOT NULL);
CREATE TABLE public.orders (id bigint PRIMARY KEY, customer_id bigint NOT NULL REFERENCES public.customers (id));
`;

const ORDERS_CREATED = /CREATE TABLE\s+(IF NOT EXISTS\s+)?"?public"?\."?orders"?/i;

let env: Environment;
let chart: OperatorChart;
let e: E2E;
let installMs = 0;

function kubeconfig(file: string): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(file);
  return kc;
}

const apps = () => e.admin.makeApiClient(k8s.AppsV1Api);
const leases = () => e.admin.makeApiClient(k8s.CoordinationV1Api);

async function managerPods(): Promise<k8s.V1Pod[]> {
  const list = await e.core.listNamespacedPod({ namespace: NS, labelSelector: MANAGER_PODS });
  return list.items.filter((p) => !p.metadata?.deletionTimestamp);
}

const isReady = (p: k8s.V1Pod) =>
  p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');

async function managerLog(pod: string): Promise<string> {
  return String(await e.core.readNamespacedPodLog({ namespace: NS, name: pod, container: 'manager' }));
}

async function leaseHolder(): Promise<string | undefined> {
  const lease = await leases().readNamespacedLease({ namespace: NS, name: LEADER_LEASE });
  return lease.spec?.holderIdentity || undefined;
}

/** Every manager Pod running `image`, all Ready, as many as the Deployment wants. */
async function rolledOutTo(image: string): Promise<k8s.V1Pod[] | undefined> {
  const pods = await managerPods();
  const ok = pods.length === 2 && pods.every((p) => p.spec?.containers[0]?.image === image && isReady(p));
  return ok ? pods : undefined;
}

before(async () => {
  if (skip) return;
  env = await startEnvironment({ components: ['node', 'postgres'] });
  const cp = env.controlPlane;
  const admin = kubeconfig(cp.kubeconfigs.admin);
  e = {
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
  const started = Date.now();
  chart = await installOperatorChart({
    kubeconfig: cp.kubeconfigs.admin,
    imageMapFile: env.description.imageMapFile,
    workDir: env.dir,
    namespace: NS,
    set: ['logLevel=debug', 'leaderElection.leaseSeconds=6'],
  });
  installMs = Date.now() - started;
  // The chart ships the people's ClusterRoles unbound; the approver gets ptah-approver in the test namespace.
  await admin.makeApiClient(k8s.RbacAuthorizationV1Api).createNamespacedRoleBinding({
    namespace: e.namespace,
    body: {
      metadata: { name: 'ptah-approver' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'ptah-approver' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: cp.identities.approver }],
    },
  });
});

after(async () => {
  if (process.env['PTAH_E2E_DEBUG'] && e) {
    for (const pod of await managerPods().catch(() => [])) {
      const log = await managerLog(pod.metadata!.name!).catch(() => '(no log)');
      process.stderr.write(`--- ${pod.metadata?.name}\n${log.split('\n').slice(-60).join('\n')}\n`);
    }
  }
  await env?.stop();
});

describe('the manager as a Pod, installed with helm', { skip }, () => {
  it('helm install --wait: two Ready replicas at their own Pod IPs, one holding the leader Lease', async () => {
    process.stdout.write(`# helm install --wait took ${installMs} ms\n`);
    const deployment = await apps().readNamespacedDeployment({ namespace: NS, name: 'ptah-operator' });
    const available = deployment.status?.conditions?.find((c) => c.type === 'Available');
    assert.equal(available?.status, 'True', JSON.stringify(deployment.status?.conditions));
    assert.equal(deployment.status?.readyReplicas, 2);

    const pods = await managerPods();
    assert.equal(pods.length, 2);
    const ips = pods.map((p) => p.status?.podIP);
    assert.equal(new Set(ips).size, 2, `each replica has its own IP: ${ips.join(', ')}`);
    for (const pod of pods) {
      assert.equal(pod.spec?.containers[0]?.image, `${OPERATOR_REPOSITORY}@${chart.digest}`);
      // The ServiceAccount admission plugin's projected volume: token, kube-root-ca.crt and namespace.
      const mount = pod.spec?.containers[0]?.volumeMounts?.find(
        (m) => m.mountPath === '/var/run/secrets/kubernetes.io/serviceaccount',
      );
      assert.ok(mount, 'the ServiceAccount token and CA are mounted where in-cluster clients look');
      const log = await managerLog(pod.metadata!.name!);
      assert.match(log, /"msg":"webhooks serving"/, `${pod.metadata?.name} serves the webhooks`);
    }

    // Only an in-cluster client with a valid token and CA can hold the Lease: that is the manager's own.
    const holder = await eventually('a leader', leaseHolder, 60_000);
    assert.ok(
      pods.some((p) => p.metadata?.name === holder),
      `the Lease holder ${holder} is one of the replicas`,
    );

    // The webhook Service's endpoints are the two Pod IPs, ready: what the API server dials.
    const discovery = e.admin.makeApiClient(k8s.DiscoveryV1Api);
    const endpoints = await eventually(
      'both replicas are ready endpoints of the webhook Service',
      async () => {
        const slices = await discovery.listNamespacedEndpointSlice({
          namespace: NS,
          labelSelector: 'kubernetes.io/service-name=ptah-operator-webhook',
        });
        const all = slices.items.flatMap((s) => s.endpoints ?? []);
        return all.length === 2 && all.every((ep) => ep.conditions?.ready === true) ? all : undefined;
      },
    );
    assert.deepEqual(endpoints.map((ep) => ep.addresses[0]).sort(), [...ips].sort());
  });

  it('a PtahSchema converges through the manager Pod; the approval is stamped by the webhook the Pod serves', async () => {
    const url = await declareSchema(e, 'podshop', { data: { 'schema.sql': ORDERS } });
    const waiting = await waitForPhase(e, 'podshop', ['AwaitingApproval', 'Failed', 'Blocked']);
    if (waiting.status?.phase !== 'AwaitingApproval') await dumpDebug(e, 'podshop');
    assert.equal(waiting.status?.phase, 'AwaitingApproval', JSON.stringify(waiting.status?.conditions));
    const plan = waiting.status!.plan!;

    // A forged approver in the request: the mutating webhook, served only by the manager Pods, replaces it.
    const stored = await createApproval(
      e,
      'podshop-approval',
      {
        schema: { name: 'podshop', uid: waiting.metadata.uid! },
        plan: { name: plan.name, uid: plan.uid },
        fingerprint: plan.fingerprint,
      },
      'mallory',
    );
    assert.equal(stored.spec.approver?.username, env.controlPlane.identities.approver);
    const reviews = await Promise.all((await managerPods()).map((p) => managerLog(p.metadata!.name!)));
    assert.ok(
      reviews.some((log) => /"path":"\/mapproval[?"].*"allowed":true/.test(log)) &&
        reviews.some((log) => /"path":"\/vapproval[?"].*"allowed":true/.test(log)),
      'both admission reviews were answered by a manager Pod',
    );

    const done = await waitForPhase(e, 'podshop', ['InSync', 'Failed', 'Blocked']);
    if (done.status?.phase !== 'InSync') await dumpDebug(e, 'podshop');
    assert.equal(done.status?.phase, 'InSync', JSON.stringify(done.status?.conditions));
    assert.equal(done.status?.applied?.planRef.uid, plan.uid);
    const tables = await query(
      url,
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1",
    );
    assert.deepEqual(
      tables.map((r) => r['table_name']),
      ['customers', 'orders'],
    );
    assert.equal(statementsIn(e, 'podshop_db', ORDERS_CREATED).length, 1, 'applied exactly once');
  });

  it('the other replica takes the Lease when the leader Pod is deleted', async () => {
    const before = await eventually('a leader', leaseHolder, 60_000);
    const deleted = Date.now();
    await e.core.deleteNamespacedPod({ namespace: NS, name: before });
    const after = await eventually(
      'another replica leads',
      async () => {
        const holder = await leaseHolder();
        return holder && holder !== before ? holder : undefined;
      },
      60_000,
    );
    process.stdout.write(
      `# the Lease moved from ${before} to ${after} ${Date.now() - deleted} ms after the delete\n`,
    );
    assert.ok((await managerPods()).some((p) => p.metadata?.name === after));
    await eventually('two Ready replicas again', () => rolledOutTo(`${OPERATOR_REPOSITORY}@${chart.digest}`));
  });

  it('helm upgrade to a new manager image rolls the Deployment and the resource stays InSync', async () => {
    const previous = chart.digest;
    const upgraded = await chart.upgradeImage('rebuilt');
    assert.equal(upgraded.code, 0, upgraded.stderr);
    assert.notEqual(chart.digest, previous);
    const image = `${OPERATOR_REPOSITORY}@${chart.digest}`;
    await eventually('every replica runs the new image', () => rolledOutTo(image), 120_000);
    const deployment = await apps().readNamespacedDeployment({ namespace: NS, name: 'ptah-operator' });
    assert.equal(deployment.spec?.template.spec?.containers[0]?.image, image);

    // The new managers read the database again on request and find nothing to do.
    const requested = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    await e.objects.patchNamespacedCustomObject(
      {
        ...at(e, 'ptahschemas'),
        name: 'podshop',
        body: { metadata: { annotations: { [READ_REQUESTED_ANNOTATION]: requested } } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    const read = await eventually(
      'the read request answered by the upgraded manager',
      async () => {
        const s = await getSchema(e, 'podshop');
        // The request is recorded when its read starts; the answer is the phase that read settles in.
        const settled = ['InSync', 'AwaitingApproval', 'Blocked', 'Failed', 'Suspended'];
        return s.status?.lastReadRequest === requested && settled.includes(s.status.phase ?? '')
          ? s
          : undefined;
      },
      120_000,
    );
    if (read.status?.phase !== 'InSync') await dumpDebug(e, 'podshop');
    assert.equal(read.status?.phase, 'InSync', JSON.stringify(read.status?.conditions));
    assert.equal(statementsIn(e, 'podshop_db', ORDERS_CREATED).length, 1, 'nothing applied again');
  });

  it('helm uninstall leaves no manager Pod, Deployment, Service or webhook configuration behind', async () => {
    const removed = await chart.uninstall();
    assert.equal(removed.code, 0, removed.stderr);
    await eventually('no manager Pod left', async () =>
      (await managerPods()).length === 0 ? true : undefined,
    );
    const gone = async (what: string, read: () => Promise<unknown>) => {
      await assert.rejects(read, (error: { code?: number }) => error.code === 404, `${what} is gone`);
    };
    await gone('Deployment', () => apps().readNamespacedDeployment({ namespace: NS, name: 'ptah-operator' }));
    await gone('webhook Service', () =>
      e.core.readNamespacedService({ namespace: NS, name: 'ptah-operator-webhook' }),
    );
    const reg = e.admin.makeApiClient(k8s.AdmissionregistrationV1Api);
    await gone('mutating webhook', () => reg.readMutatingWebhookConfiguration({ name: 'ptah-mapproval' }));
    await gone('validating webhook', () =>
      reg.readValidatingWebhookConfiguration({ name: 'ptah-vapproval' }),
    );
    // The resource outlives the operator: CRDs stay, by Helm's rule.
    assert.equal((await getSchema(e, 'podshop')).metadata.name, 'podshop');
  });
});
