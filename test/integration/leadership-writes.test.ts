// A deposed leader writes nothing: the reconciler checks the leadership signal before each write, on a real
// API server. The same pass with a live signal writes the snapshot and the claim, so the check is what stops
// the aborted one.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import pino from 'pino';
import { buildCrds } from '../../src/api/crds.ts';
import { API_GROUP, API_VERSION, SCHEMA_FINALIZER } from '../../src/api/meta.ts';
import type { PtahSchema } from '../../src/api/ptah-schema.ts';
import { RealmLeases } from '../../src/controller/realm/realm-lease.ts';
import { LeaderElector } from '../../src/controller/runtime/leader-election.ts';
import { PtahObjects } from '../../src/controller/runtime/kube.ts';
import { SchemaReconciler } from '../../src/controller/schema/reconciler.ts';
import { startControlPlane, type ControlPlane } from '../env/controlplane.ts';
import { eventually } from '../env/eventually.ts';

let cp: ControlPlane;
let admin: k8s.KubeConfig;

before(async () => {
  cp = await startControlPlane();
  admin = new k8s.KubeConfig();
  admin.loadFromFile(cp.kubeconfigs.admin);
  const ext = admin.makeApiClient(k8s.ApiextensionsV1Api);
  for (const crd of buildCrds()) {
    await ext.createCustomResourceDefinition({ body: crd as unknown as k8s.V1CustomResourceDefinition });
  }
  for (const crd of buildCrds()) {
    await eventually(
      `CRD ${crd.metadata.name}`,
      async () => {
        const c = await ext.readCustomResourceDefinition({ name: crd.metadata.name });
        return c.status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True')
          ? true
          : undefined;
      },
      30_000,
      250,
    );
    // Established is not yet served: storage may answer 429 for a moment after it.
    const custom = admin.makeApiClient(k8s.CustomObjectsApi);
    await eventually(
      `${crd.spec.names.plural} served`,
      () =>
        custom
          .listClusterCustomObject({ group: API_GROUP, version: API_VERSION, plural: crd.spec.names.plural })
          .then(() => true),
      30_000,
      250,
    );
  }
});

after(async () => {
  await cp?.stop();
});

describe('leadership guards every write', () => {
  it('an aborted leadership signal stops the pass before its first write; a live one writes', async () => {
    const namespace = cp.testNamespace;
    const core = admin.makeApiClient(k8s.CoreV1Api);
    const custom = admin.makeApiClient(k8s.CustomObjectsApi);
    await core.createNamespacedConfigMap({
      namespace,
      body: {
        metadata: { name: 'led-src' },
        data: { 'schema.sql': 'CREATE TABLE t (id int PRIMARY KEY);\n' },
      },
    });
    const at = { group: API_GROUP, version: API_VERSION, namespace, plural: 'ptahschemas' };
    // A CRD just Established may still answer 429 while its storage initialises: retry only that.
    await eventually('the PtahSchema is created', () =>
      custom
        .createNamespacedCustomObject({
          ...at,
          body: {
            apiVersion: `${API_GROUP}/${API_VERSION}`,
            kind: 'PtahSchema',
            metadata: { name: 'led', finalizers: [SCHEMA_FINALIZER] },
            spec: {
              target: { engine: 'postgres', coordinationKey: 'led', urlFrom: { name: 'led-db', key: 'url' } },
              desired: { configMap: { name: 'led-src', files: [{ key: 'schema.sql' }] } },
              policy: { apply: 'OnApproval' },
            },
          },
        })
        .then(() => true)
        .catch((error: unknown) => {
          if ((error as { code?: number }).code === 429) return undefined;
          throw error;
        }),
    );
    const reconciler = new SchemaReconciler({
      core,
      batch: admin.makeApiClient(k8s.BatchV1Api),
      ptah: new PtahObjects(custom),
      leases: new RealmLeases(admin.makeApiClient(k8s.CoordinationV1Api), 'ptah-system'),
      manager: {
        managerImage: 'manager:test',
        managerRevision: 'test',
        controllerStateVersion: 1,
        ptahVersion: '0.0.0',
        runnerImage: 'runner:test',
      },
      log: pino({ level: 'silent' }),
      // The approval webhooks are not what this test is about: approvals count as served.
      approvalGate: async () => ({ ok: true, since: new Date(0) }),
    });
    const snapshots = async () =>
      (await core.listNamespacedConfigMap({ namespace })).items.filter((c) =>
        c.metadata?.name?.startsWith('ptah-src-'),
      );
    const status = async () =>
      ((await custom.getNamespacedCustomObject({ ...at, name: 'led' })) as PtahSchema).status;

    const deposed = new AbortController();
    deposed.abort(new Error('leadership lost'));
    await assert.rejects(reconciler.reconcile({ namespace, name: 'led' }, deposed.signal), /leadership lost/);
    assert.deepEqual(await snapshots(), [], 'no snapshot was written');
    assert.equal(await status(), undefined, 'no status was written');

    await reconciler.reconcile({ namespace, name: 'led' }, new AbortController().signal);
    assert.equal((await snapshots()).length, 1, 'the leader writes the snapshot');
    assert.equal((await status())?.claim?.type, 'Observe', 'and the claim');
  });

  it(
    'leadership ends at the renew deadline when no renewal came back in time',
    { timeout: 20_000 },
    async () => {
      const elector = new LeaderElector({
        api: admin.makeApiClient(k8s.CoordinationV1Api),
        namespace: 'ptah-system',
        name: 'deadline-test',
        identity: 'replica-a',
        leaseDurationSeconds: 3,
        // No renewal is even attempted before the deadline (2 s): the deadline alone must end leadership.
        renewEveryMs: 60_000,
      });
      const started = Date.now();
      let reason = '';
      await elector.run(new AbortController().signal, async (leadership) => {
        await new Promise<void>((resolve) =>
          leadership.addEventListener('abort', () => resolve(), { once: true }),
        );
        reason = String(leadership.reason);
      });
      const held = Date.now() - started;
      assert.match(reason, /deadline/);
      assert.ok(held >= 1_900 && held < 3_000, `leadership lasted ${held} ms, within the 3 s Lease`);
    },
  );

  it(
    'a leader that shuts down gives the Lease up once it stopped acting; another replica takes it at once',
    { timeout: 30_000 },
    async () => {
      const elector = (identity: string) =>
        new LeaderElector({
          api: admin.makeApiClient(k8s.CoordinationV1Api),
          namespace: 'ptah-system',
          name: 'release-test',
          identity,
          // Far longer than the test: only a release lets the second replica in.
          leaseDurationSeconds: 120,
          retryEveryMs: 200,
        });
      const stopA = new AbortController();
      let aActing = false;
      let aLed!: () => void;
      const aLeads = new Promise<void>((resolve) => (aLed = resolve));
      const a = elector('replica-a').run(stopA.signal, async (leadership) => {
        aActing = true;
        aLed();
        await new Promise<void>((resolve) =>
          leadership.addEventListener('abort', () => resolve(), { once: true }),
        );
        // Still finishing its work: the Lease must stay held until this returns.
        await new Promise((resolve) => setTimeout(resolve, 500));
        aActing = false;
      });
      await aLeads;
      const stopB = new AbortController();
      let bLedWhileAActed: boolean | undefined;
      let bLed!: (at: number) => void;
      const bLeads = new Promise<number>((resolve) => (bLed = resolve));
      const b = elector('replica-b').run(stopB.signal, async (leadership) => {
        bLedWhileAActed = aActing;
        bLed(Date.now());
        await new Promise<void>((resolve) =>
          leadership.addEventListener('abort', () => resolve(), { once: true }),
        );
      });
      const stopped = Date.now();
      stopA.abort();
      await a;
      const took = (await bLeads) - stopped;
      assert.equal(bLedWhileAActed, false, 'never two leaders acting at once');
      assert.ok(took < 5_000, `the second replica led ${took} ms after the first stopped, not 120 s`);
      stopB.abort();
      await b;
    },
  );
});
