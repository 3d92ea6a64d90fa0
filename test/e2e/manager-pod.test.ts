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
import { parseAllDocuments } from 'yaml';
import { READ_REQUESTED_ANNOTATION } from '../../src/api/meta.ts';
import { REALM_LEASE_LABEL } from '../../src/controller/realm/realm-lease.ts';
import { nodeAgentAvailable, startEnvironment, type Environment } from '../env/environment.ts';
import { installOperatorChart, OPERATOR_REPOSITORY, type OperatorChart } from '../env/operator-chart.ts';
import {
  at,
  chartE2E,
  chartManagerPods,
  createApproval,
  declareSchema,
  dumpDebug,
  eventually,
  getSchema,
  query,
  podReady,
  statementsIn,
  waitForPhase,
  type E2E,
} from './harness.ts';

const skip = nodeAgentAvailable() ? false : 'the node agent is not available';
const NS = 'ptah-operator';
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

const apps = () => e.admin.makeApiClient(k8s.AppsV1Api);
const leases = () => e.admin.makeApiClient(k8s.CoordinationV1Api);

const managerPods = () => chartManagerPods(e, NS);

async function managerLog(pod: string): Promise<string> {
  return String(await e.core.readNamespacedPodLog({ namespace: NS, name: pod, container: 'manager' }));
}

async function leaseHolder(): Promise<string | undefined> {
  const lease = await leases().readNamespacedLease({ namespace: NS, name: LEADER_LEASE });
  return lease.spec?.holderIdentity || undefined;
}

/** The realm Leases in the coordination namespace (the release namespace), held or not. */
async function realmLeases(): Promise<k8s.V1Lease[]> {
  const list = await leases().listNamespacedLease({ namespace: NS, labelSelector: REALM_LEASE_LABEL });
  return list.items;
}

interface ReleaseObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace?: string };
}

/** Every object `helm get manifest` says the release made. */
async function releaseObjects(): Promise<ReleaseObject[]> {
  const run = await chart.helm(['get', 'manifest', chart.release, '-n', NS]);
  assert.equal(run.code, 0, run.stderr);
  return parseAllDocuments(run.stdout)
    .map((d) => d.toJS() as ReleaseObject | null)
    .filter((o): o is ReleaseObject => o !== null && typeof o.kind === 'string');
}

/** Every manager Pod running `image`, all Ready, as many as the Deployment wants. */
async function rolledOutTo(image: string): Promise<k8s.V1Pod[] | undefined> {
  const pods = await managerPods();
  const ok = pods.length === 2 && pods.every((p) => p.spec?.containers[0]?.image === image && podReady(p));
  return ok ? pods : undefined;
}

before(async () => {
  if (skip) return;
  env = await startEnvironment({ components: ['node', 'postgres'] });
  const cp = env.controlPlane;
  e = chartE2E(env);
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
  await e.admin.makeApiClient(k8s.RbacAuthorizationV1Api).createNamespacedRoleBinding({
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
    // The realm Lease Plan and Apply take lives in the release namespace while it is held.
    let realmLeaseSeen = false;
    const watching = new AbortController();
    const watchLeases = (async () => {
      while (!watching.signal.aborted && !realmLeaseSeen) {
        realmLeaseSeen = (await realmLeases().catch(() => [])).some((l) => l.spec?.holderIdentity);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    })();
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
    // The review is logged once answered; the node writes a container's log a moment later.
    const answered = (logs: readonly string[]) =>
      logs.some((log) => /"path":"\/mapproval[?"].*"allowed":true/.test(log)) &&
      logs.some((log) => /"path":"\/vapproval[?"].*"allowed":true/.test(log));
    let reviews: string[] = [];
    await eventually(
      'both admission reviews were answered by a manager Pod',
      async () => {
        reviews = await Promise.all((await managerPods()).map((p) => managerLog(p.metadata!.name!)));
        return answered(reviews) ? true : undefined;
      },
      15_000,
    ).catch(() => {
      const reviewLines = reviews.map((log) => log.split('\n').filter((l) => /admission review/.test(l)));
      assert.fail(
        `no allowed /mapproval and /vapproval reviews in the manager logs: ${JSON.stringify(reviewLines)}`,
      );
    });

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
    watching.abort();
    await watchLeases;
    assert.ok(realmLeaseSeen, 'a realm Lease was held in the release namespace on the way');
    // Released once the proof settled InSync: its holder deleted it rather than leave it idle.
    await eventually('no idle realm Lease', async () =>
      (await realmLeases()).length === 0 ? true : undefined,
    );
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
        // The request is recorded when its read starts, while the phase is still the one before it: the
        // answer is the phase once no operation is claimed and no Job of the resource runs.
        const settled = ['InSync', 'AwaitingApproval', 'Blocked', 'Failed', 'Suspended'];
        if (s.status?.lastReadRequest !== requested || !settled.includes(s.status.phase ?? ''))
          return undefined;
        if (s.status.claim !== undefined) return undefined;
        const jobs = (await e.batch.listNamespacedJob({ namespace: e.namespace })).items;
        return jobs.some((j) => (j.status?.active ?? 0) > 0) ? undefined : s;
      },
      120_000,
    );
    if (read.status?.phase !== 'InSync') await dumpDebug(e, 'podshop');
    assert.equal(read.status?.phase, 'InSync', JSON.stringify(read.status?.conditions));
    assert.equal(statementsIn(e, 'podshop_db', ORDERS_CREATED).length, 1, 'nothing applied again');
  });

  it('helm uninstall leaves no object of the release and no Lease, ConfigMap or Job of the manager behind', async () => {
    const made = await releaseObjects();
    const kinds = new Set(made.map((o) => o.kind));
    for (const kind of [
      'Deployment',
      'PodDisruptionBudget',
      'Service',
      'Secret',
      'ServiceAccount',
      'ClusterRole',
      'ClusterRoleBinding',
      'Role',
      'RoleBinding',
      'MutatingWebhookConfiguration',
      'ValidatingWebhookConfiguration',
      'ValidatingAdmissionPolicy',
      'ValidatingAdmissionPolicyBinding',
    ]) {
      assert.ok(kinds.has(kind), `the release made a ${kind} (made: ${[...kinds].join(', ')})`);
    }
    assert.ok(await leaseHolder(), 'the leader Lease is held before the uninstall');

    const removed = await chart.uninstall();
    assert.equal(removed.code, 0, removed.stderr);
    await eventually('no manager Pod left', async () =>
      (await e.core.listNamespacedPod({ namespace: NS })).items.length === 0 ? true : undefined,
    );

    const objects = k8s.KubernetesObjectApi.makeApiClient(e.admin);
    const left: string[] = [];
    for (const o of made) {
      const id = `${o.kind} ${o.metadata.namespace ?? ''}/${o.metadata.name}`;
      await objects.read({ apiVersion: o.apiVersion, kind: o.kind, metadata: o.metadata }).then(
        () => left.push(id),
        (error: { code?: number }) => {
          if (error.code !== 404) left.push(`${id} (${String(error)})`);
        },
      );
    }
    assert.deepEqual(left, [], 'every object of the release is gone');

    // What the manager made itself: the replica stopping last deleted the leader Lease, the realm Leases were
    // deleted when released, and it keeps no ConfigMap or Job in its own namespace.
    const leftLeases = (await leases().listNamespacedLease({ namespace: NS })).items;
    assert.deepEqual(
      leftLeases.map((l) => l.metadata?.name),
      [],
      `no Lease is left in the coordination namespace: ${JSON.stringify(leftLeases.map((l) => [l.metadata, l.spec]))}`,
    );
    assert.deepEqual(
      (await e.core.listNamespacedConfigMap({ namespace: NS })).items.map((c) => c.metadata?.name),
      ['kube-root-ca.crt'],
      "only the API server's CA bundle, which every namespace gets",
    );
    assert.deepEqual((await e.batch.listNamespacedJob({ namespace: NS })).items, []);
    // Operation Jobs live with the resource that owns them, in its namespace, and are collected with it. An
    // Observe the manager dispatched just before it stopped may still run: it is read-only and ends on its own,
    // without a manager; none may be left running.
    const jobs = (await e.batch.listNamespacedJob({ namespace: e.namespace })).items;
    for (const job of jobs) {
      assert.equal(job.metadata?.ownerReferences?.[0]?.kind, 'PtahSchema', `${job.metadata?.name} is owned`);
    }
    const running = async (): Promise<string[]> =>
      (await e.batch.listNamespacedJob({ namespace: e.namespace })).items
        .filter((j) => (j.status?.active ?? 0) > 0)
        .map((j) => j.metadata?.name ?? '');
    await eventually(
      'every operation Job ends without the manager',
      async () => ((await running()).length === 0 ? true : undefined),
      120_000,
    ).catch(async (error: unknown) => {
      throw new Error(`${String(error)}; still running: ${(await running()).join(', ')}`);
    });
    for (const name of jobs.filter((j) => (j.status?.active ?? 0) > 0).map((j) => j.metadata?.name ?? '')) {
      assert.ok(
        !name.startsWith('ptah-apply-'),
        `${name}: no Apply was running when the manager was removed`,
      );
    }

    // By the chart's documented policy: the CRDs and the resources stay (Helm never deletes a chart's CRDs),
    // and so does the namespace `--create-namespace` made (Helm does not delete namespaces).
    const ext = e.admin.makeApiClient(k8s.ApiextensionsV1Api);
    await ext.readCustomResourceDefinition({ name: 'ptahschemas.operator.ptah.run' });
    assert.equal((await getSchema(e, 'podshop')).metadata.name, 'podshop');
    assert.equal((await e.core.readNamespace({ name: NS })).metadata?.name, NS);
  });
});
