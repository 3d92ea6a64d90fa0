// Admission latency: the manager's webhook server (the handlers and rebuilds the manager process wires) on
// the local control plane, each webhook sent AdmissionReviews 50 at a time over HTTPS, as the API server
// sends them (from a thread of its own, bench/admission-client.ts, as the API server is another process): vcontrollerwrite judging the manager's Job (the resource and its claim read, the Job rebuilt
// and compared), its snapshot (the source read and rebuilt), a plan chunk (its plan read, the bytes held to
// the plan's record), a plan (its owner read, its bindings compared with what it records) and a plan projection (its plan and its chunk read), vpodintent judging the Job controller's Pod
// (the Job read and its template compared). Reports p50/p99 per webhook and the ratio of p99 to the target.
// The rebuilds read what the manager's watches hold, as in the manager process; PTAH_BENCH_READS=live sends
// every read to the API server instead (the webhooks before they read the watches), for comparison. Each
// row is also sent, just before, to a server that admits every review without deciding anything: the HTTPS
// server's own latency on this machine, the floor under the webhooks, printed beside it with the ratio.
// With vegeta, the CPU this process spent per review in the timed run is printed too, for the webhook and
// its floor: latency at 50 concurrent reviews moves with whatever else the machine runs, the CPU much less.
//
// The reviews come from vegeta (bench/admission-vegeta.ts, Go like the API server's client, built by the
// bench from its Go module) for PTAH_BENCH_SECONDS (default 5) per row; without Go, or with
// PTAH_BENCH_CLIENT=node, from the Node client thread (PTAH_BENCH_REQUESTS per row, default 2000).
//
//   npm run bench -- admission
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import * as k8s from '@kubernetes/client-node';
import { pino } from 'pino';
import { allowed } from '../src/admission/review.ts';
import { startAdmissionServer } from '../src/admission/server.ts';
import { controllerWebhooks, WEBHOOK_PATHS } from '../src/admission/webhooks.ts';
import type { ClientJob, ClientResult } from './admission-client.ts';
import { attack, vegeta } from './admission-vegeta.ts';
import { crdClientModels } from '../src/api/crd-client-model.ts';
import { sha256Digest } from '../src/api/digest.ts';
import type { ConfigMapObject } from '../src/api/core.ts';
import { API_GROUP, API_VERSION, CONTROLLER_STATE_VERSION, GROUP_VERSION } from '../src/api/meta.ts';
import type { Claim, PtahSchema } from '../src/api/ptah-schema.ts';
import { controllerWriteSources } from '../src/controller/admission-sources.ts';
import { buildClaim } from '../src/controller/claims/claim.ts';
import type { ManagerIdentity } from '../src/controller/jobs/operation-job.ts';
import { PtahObjects } from '../src/controller/runtime/kube.ts';
import { schemaJob } from '../src/controller/schema/schema-job.ts';
import { schemaView } from '../src/controller/schema/view.ts';
import { ManagerWatches, NO_CACHE } from '../src/controller/watches.ts';
import { buildSourceSnapshot } from '../src/sources/snapshot-config-map.ts';
import type { PtahSchemaPlan } from '../src/api/ptah-schema-plan.ts';
import type { PtahSchemaPlanChunk } from '../src/api/ptah-schema-plan-chunk.ts';
import { buildSchemaPlan } from '../src/plan-store/build-plan.ts';
import { coordinationDigest, policyFingerprint } from '../src/api/fingerprint.ts';
import { buildPlanChunk } from '../src/plan-store/plan-chunk.ts';
import { buildPlanProjection } from '../src/plan-store/plan-projection.ts';
import { startControlPlane } from '../test/env/controlplane.ts';
import { eventually } from '../test/env/eventually.ts';
import { createCertificateAuthority, issueCertificate } from '../test/env/pki.ts';

const REQUESTS = Number(process.env['PTAH_BENCH_REQUESTS'] ?? 2000);
const CONCURRENCY = 50;
const WARM_UP = 500;
const TARGET_P99_MS = 25;
const READS = process.env['PTAH_BENCH_READS'] === 'live' ? 'live' : 'cached';
/** vegeta (Go, as the API server's client is) unless it cannot be built or PTAH_BENCH_CLIENT=node. */
const VEGETA = process.env['PTAH_BENCH_CLIENT'] === 'node' ? { missing: 'PTAH_BENCH_CLIENT=node' } : vegeta();
const SECONDS = Number(process.env['PTAH_BENCH_SECONDS'] ?? 5);
const d = (s: string) => sha256Digest(s);

const builtBy: ManagerIdentity = {
  managerImage: `registry.example/ptah-operator@sha256:${'1'.repeat(64)}`,
  managerRevision: 'bench',
  controllerStateVersion: CONTROLLER_STATE_VERSION,
  ptahVersion: '0.1.0',
  runnerImage: `registry.example/ptah-runner@sha256:${'2'.repeat(64)}`,
};

const cp = await startControlPlane();
try {
  const namespace = cp.testNamespace;
  const admin = new k8s.KubeConfig();
  admin.loadFromFile(cp.kubeconfigs.admin);
  // The manager's reads go out as an administrator here: RBAC costs the same per request.
  const core = admin.makeApiClient(k8s.CoreV1Api);
  const batch = admin.makeApiClient(k8s.BatchV1Api);
  const objects = admin.makeApiClient(k8s.CustomObjectsApi);
  const ext = admin.makeApiClient(k8s.ApiextensionsV1Api);
  for (const body of crdClientModels()) await ext.createCustomResourceDefinition({ body });
  const at = { group: API_GROUP, version: API_VERSION, namespace, plural: 'ptahschemas' };
  await eventually('CRDs served', async () =>
    objects
      .listNamespacedCustomObject({ ...at, limit: 1 })
      .then(() => true)
      .catch(() => undefined),
  );

  await core.createNamespacedConfigMap({
    namespace,
    body: {
      metadata: { name: 'orders-schema' },
      data: { 'schema.sql': 'CREATE TABLE orders (id bigint);\n' },
    },
  });
  let schema = (await objects.createNamespacedCustomObject({
    ...at,
    body: {
      apiVersion: GROUP_VERSION,
      kind: 'PtahSchema',
      metadata: { name: 'orders' },
      spec: {
        target: { engine: 'postgres', coordinationKey: 'db', urlFrom: { name: 'db', key: 'url' } },
        desired: { configMap: { name: 'orders-schema', files: [{ key: 'schema.sql' }] } },
      },
    },
  })) as PtahSchema;
  const source = (await core.readNamespacedConfigMap({
    namespace,
    name: 'orders-schema',
  })) as ConfigMapObject;
  const snapshot = buildSourceSnapshot(
    schema,
    { name: 'orders-schema', files: [{ key: 'schema.sql' }] },
    source,
  ).configMap;
  const contentDigest = snapshot.metadata.annotations!['operator.ptah.run/content-digest']!;
  const executionBinding = { ...builtBy, runnerProtocolVersion: 1, epoch: `v1-${'e'.repeat(32)}` };
  const claim = buildClaim(
    {
      resourceUID: schema.metadata.uid!,
      resourceName: 'orders',
      generation: 1,
      type: 'Observe',
      attempt: 1,
      inputs: {
        contentDigest,
        snapshotName: snapshot.metadata.name,
        configMapUID: source.metadata.uid!,
        coordinationDigest: d('realm'),
        policyFingerprint: d('policy'),
        executionBinding,
        activeDeadlineSeconds: 600,
      },
    },
    new Date(),
  ) as Claim;
  schema = (await objects.replaceNamespacedCustomObjectStatus({
    ...at,
    name: 'orders',
    body: {
      ...schema,
      status: {
        phase: 'Observing',
        claim,
        // What a plan binds is judged against these: the source as resolved and the execution binding.
        executionBinding,
        resolution: {
          sourceType: 'ConfigMap',
          configMapName: 'orders-schema',
          configMapUID: source.metadata.uid!,
          contentDigest,
          snapshotName: snapshot.metadata.name,
          size: 1,
          resolvedAt: new Date().toISOString(),
        },
      },
    },
  })) as PtahSchema;
  const job = await schemaJob(
    { core, ptah: new PtahObjects(objects) },
    schemaView(schema),
    claim,
    builtBy,
    new Date(),
  );
  // As the API server hands a create to admission: the Job as stored, dry-run, with its defaults.
  const admittedJob = await batch.createNamespacedJob({ namespace, body: job, dryRun: 'All' });
  const stored = await batch.createNamespacedJob({ namespace, body: job });
  const pod = await eventually(
    'the Job controller creates the Pod',
    async () =>
      (
        await core.listNamespacedPod({
          namespace,
          labelSelector: `batch.kubernetes.io/job-name=${stored.metadata!.name}`,
        })
      ).items[0],
    60_000,
  );

  // A published plan: its chunk stored and committed, as publication leaves it; a projection of it to judge.
  const built = buildSchemaPlan(
    schema,
    {
      sourceType: 'ConfigMap',
      configMapUID: source.metadata.uid!,
      contentDigest,
      coordinationDigest: coordinationDigest({ engine: 'postgres', namespace, coordinationKey: 'db' }),
      targetIdentityDigest: d('route'),
      observedStateFingerprint: d('observed'),
      desiredStateFingerprint: d('desired'),
      policyFingerprint: policyFingerprint(undefined),
      executionEpoch: `v1-${'e'.repeat(32)}`,
      ...builtBy,
      runnerProtocolVersion: 1,
      dialect: 'postgres',
      destructive: false,
      statementCount: 1,
    },
    Buffer.from('CREATE TABLE orders (id bigint);\n'),
  );
  const plans = { ...at, plural: 'ptahschemaplans' };
  const plan = (await objects.createNamespacedCustomObject({ ...plans, body: built.plan })) as PtahSchemaPlan;
  const piece = built.pieces[0]!;
  const chunk = buildPlanChunk(plan, piece);
  const storedChunk = (await objects.createNamespacedCustomObject({
    ...at,
    plural: 'ptahschemaplanchunks',
    body: chunk,
  })) as PtahSchemaPlanChunk;
  await objects.replaceNamespacedCustomObjectStatus({
    ...plans,
    name: plan.metadata.name,
    body: {
      ...plan,
      status: { publishedChunks: [{ name: piece.name, uid: storedChunk.metadata.uid!, index: 0 }] },
    },
  });
  const projection = buildPlanProjection(plan, piece.name, piece.bytes);

  // The manager's watches, as its process keeps them (here they wake no queue: nothing reconciles).
  const watches = new ManagerWatches(admin, pino({ level: 'silent' }));
  const stopWatches = new AbortController();
  if (READS === 'cached') {
    watches.start(stopWatches.signal, () => undefined);
    await eventually('the manager watches list', async () =>
      (['ptahschemas', 'jobs', 'configmaps', 'ptahschemaplans'] as const).every((w) => watches.synced(w))
        ? true
        : undefined,
    );
  }
  const sources = controllerWriteSources(
    admin,
    builtBy,
    cp.identities.manager,
    READS === 'cached' ? watches : NO_CACHE,
  );
  const dir = join(cp.dir, 'webhook');
  const ca = createCertificateAuthority(dir, 'webhook-ca', 'ptah-webhook-ca');
  const serving = issueCertificate(dir, ca, {
    name: 'webhook',
    commonName: 'ptah-webhook',
    ipAddresses: ['127.0.0.1'],
    usage: 'server',
  });
  const serve = (handlers: Parameters<typeof startAdmissionServer>[0]['handlers']) =>
    startAdmissionServer({
      cert: readFileSync(serving.certFile),
      key: readFileSync(serving.keyFile),
      handlers,
    });
  const server = await serve(controllerWebhooks(sources.writes, sources.pods));
  const floor = await serve(
    Object.fromEntries(Object.values(WEBHOOK_PATHS).map((path) => [path, () => allowed()])),
  );

  // Each review is serialised once and only its UID changed per request: the API server, which sends them
  // in a cluster, runs in another process, so what this process spends writing them is not the webhook's.
  const review = (
    kind: { group: string; version: string; kind: string },
    resource: string,
    username: string,
    object: unknown,
  ) => {
    const body = JSON.stringify({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: {
        uid: 'bench-@@UID@@',
        kind,
        resource: { group: kind.group, version: kind.version, resource },
        namespace,
        operation: 'CREATE',
        userInfo: { username },
        object,
      },
    });
    const at = body.indexOf('@@UID@@');
    return { head: body.slice(0, at), tail: body.slice(at + '@@UID@@'.length) };
  };
  const cases: [string, string, { head: string; tail: string }][] = [
    [
      'vcontrollerwrite (Job)',
      WEBHOOK_PATHS.vcontrollerwrite,
      review({ group: 'batch', version: 'v1', kind: 'Job' }, 'jobs', cp.identities.manager, admittedJob),
    ],
    [
      'vcontrollerwrite (snapshot)',
      WEBHOOK_PATHS.vcontrollerwrite,
      review({ group: '', version: 'v1', kind: 'ConfigMap' }, 'configmaps', cp.identities.manager, snapshot),
    ],
    [
      'vcontrollerwrite (plan)',
      WEBHOOK_PATHS.vcontrollerwrite,
      review(
        { group: API_GROUP, version: API_VERSION, kind: 'PtahSchemaPlan' },
        'ptahschemaplans',
        cp.identities.manager,
        // Another publication of the stored plan's fingerprint would be named anew; this one is the first.
        built.plan,
      ),
    ],
    [
      'vcontrollerwrite (plan chunk)',
      WEBHOOK_PATHS.vcontrollerwrite,
      review(
        { group: API_GROUP, version: API_VERSION, kind: 'PtahSchemaPlanChunk' },
        'ptahschemaplanchunks',
        cp.identities.manager,
        chunk,
      ),
    ],
    [
      'vcontrollerwrite (projection)',
      WEBHOOK_PATHS.vcontrollerwrite,
      review(
        { group: '', version: 'v1', kind: 'ConfigMap' },
        'configmaps',
        cp.identities.manager,
        projection,
      ),
    ],
    [
      'vpodintent (Pod)',
      WEBHOOK_PATHS.vpodintent,
      review({ group: '', version: 'v1', kind: 'Pod' }, 'pods', 'system:kube-controller-manager', {
        ...pod,
        metadata: { ...pod.metadata, name: `${pod.metadata!.name}-b` },
      }),
    ],
  ];

  const client = (port: number, path: string, review: { head: string; tail: string }) =>
    new Promise<ClientResult>((resolve, reject) => {
      const job: ClientJob = {
        port,
        ca: readFileSync(ca.certFile, 'utf8'),
        path,
        ...review,
        concurrency: CONCURRENCY,
        warmUp: WARM_UP,
        requests: REQUESTS,
      };
      const worker = new Worker(new URL('./admission-client.ts', import.meta.url), { workerData: job });
      worker.once('message', resolve);
      worker.once('error', reject);
    });

  console.log(
    `admission latency: ${'bin' in VEGETA ? `${SECONDS} s of reviews per webhook from vegeta` : `${REQUESTS} reviews per webhook from a Node client (${VEGETA.missing})`}, ${CONCURRENCY} concurrent, target p99 <= ${TARGET_P99_MS} ms, reads ${READS === 'cached' ? "from the manager's watches" : 'from the API server'}; the floor admits every review undecided`,
  );
  console.log(
    `${'webhook'.padEnd(30)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)} ${'max ms'.padStart(8)} ${'req/s'.padStart(8)} ${'floor p99'.padStart(10)} ${'p99/floor'.padStart(10)} ${'p99/target'.padStart(11)} ${'cpu µs'.padStart(7)} ${'floor µs'.padStart(9)}`,
  );
  const measure = async (
    name: string,
    port: number,
    path: string,
    review: { head: string; tail: string },
  ) => {
    if ('bin' in VEGETA) {
      return attack(VEGETA.bin, {
        url: `https://127.0.0.1:${port}${path}`,
        ca: readFileSync(ca.certFile, 'utf8'),
        body: `${review.head}1${review.tail}`,
        concurrency: CONCURRENCY,
        seconds: SECONDS,
      });
    }
    const result = await client(port, path, review);
    if (!result.ok) throw new Error(`${name}: ${result.message}`);
    const samples = [...result.samples].sort((a, b) => a - b);
    const q = (p: number) => samples[Math.min(samples.length - 1, Math.floor(p * samples.length))]!;
    return {
      p50: q(0.5),
      p99: q(0.99),
      max: samples[samples.length - 1]!,
      perSecond: (samples.length / result.wallMs) * 1000,
      // The client thread runs in this process too: its CPU cannot be told from the server's.
      cpuPerReviewUs: Number.NaN,
    };
  };
  let missed = 0;
  for (const [name, path, review] of cases) {
    // The floor first, under the same conditions of the machine, then the webhook itself.
    const under = await measure(name, floor.port, path, review);
    const m = await measure(name, server.port, path, review);
    if (m.p99 > TARGET_P99_MS) missed++;
    console.log(
      `${name.padEnd(30)} ${m.p50.toFixed(1).padStart(8)} ${m.p99.toFixed(1).padStart(8)} ${m.max.toFixed(1).padStart(8)} ${m.perSecond.toFixed(0).padStart(8)} ${under.p99.toFixed(1).padStart(10)} ${(m.p99 / under.p99).toFixed(2).padStart(10)} ${(m.p99 / TARGET_P99_MS).toFixed(2).padStart(11)} ${m.cpuPerReviewUs.toFixed(0).padStart(7)} ${under.cpuPerReviewUs.toFixed(0).padStart(9)}`,
    );
  }
  await server.close();
  await floor.close();
  stopWatches.abort();
  await watches.stop();
  if (missed > 0) console.log(`${missed} webhook(s) above the p99 target`);
} finally {
  await cp.stop();
}
