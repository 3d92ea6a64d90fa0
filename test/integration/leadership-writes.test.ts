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
import { coordinationDigest, realmLeaseName } from '../../src/api/fingerprint.ts';
import {
  LEASE_EPOCH_ANNOTATION,
  RealmLeases,
  realmHolderIdentity,
} from '../../src/controller/realm/realm-lease.ts';
import { RealmCensus } from '../../src/controller/realm/realm-census.ts';
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
    const ptah = new PtahObjects(custom);
    const reconciler = new SchemaReconciler({
      core,
      batch: admin.makeApiClient(k8s.BatchV1Api),
      ptah,
      census: new RealmCensus({ ptah }),
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

  it('a holder renews the Lease it last wrote in one request; a write by anybody since sends it back to reading', async () => {
    const real = admin.makeApiClient(k8s.CoordinationV1Api);
    const calls: string[] = [];
    // The real client, counting what the elector sends.
    const api = new Proxy(real, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver) as unknown;
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          calls.push(String(prop));
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    const elector = new LeaderElector({
      api,
      namespace: 'ptah-system',
      name: 'fast-renew',
      identity: 'solo',
    });
    assert.equal(await elector.tryAcquireOrRenew(), true);
    calls.length = 0;
    assert.equal(await elector.tryAcquireOrRenew(), true);
    assert.equal(await elector.tryAcquireOrRenew(), true);
    assert.deepEqual(calls, ['replaceNamespacedLease', 'replaceNamespacedLease'], 'no read before a renewal');
    // Another writer takes the Lease over: the renewal conflicts, the Lease is read, and it is not ours.
    const lease = await real.readNamespacedLease({ namespace: 'ptah-system', name: 'fast-renew' });
    await real.replaceNamespacedLease({
      namespace: 'ptah-system',
      name: 'fast-renew',
      body: { ...lease, spec: { ...lease.spec, holderIdentity: 'other', renewTime: new k8s.V1MicroTime() } },
    });
    calls.length = 0;
    assert.equal(await elector.tryAcquireOrRenew(), false, 'the other holder is not overwritten');
    assert.deepEqual(calls, ['replaceNamespacedLease', 'readNamespacedLease']);
  });

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
      const coordination = admin.makeApiClient(k8s.CoordinationV1Api);
      const heldByA = await coordination.readNamespacedLease({
        namespace: 'ptah-system',
        name: 'release-test',
      });
      const stopped = Date.now();
      stopA.abort();
      await a;
      const took = (await bLeads) - stopped;
      // A let go by deleting its Lease; B created another (a cleared one would have kept A's UID).
      const heldByB = await coordination.readNamespacedLease({
        namespace: 'ptah-system',
        name: 'release-test',
      });
      assert.equal(heldByB.spec?.holderIdentity, 'replica-b');
      assert.notEqual(heldByB.metadata?.uid, heldByA.metadata?.uid, 'a new Lease, not the released one');
      assert.equal(bLedWhileAActed, false, 'never two leaders acting at once');
      assert.ok(took < 5_000, `the second replica led ${took} ms after the first stopped, not 120 s`);
      stopB.abort();
      await b;
      await assert.rejects(
        coordination.readNamespacedLease({ namespace: 'ptah-system', name: 'release-test' }),
        (error: { code?: number }) => error.code === 404,
        'the last replica to stop leaves no Lease behind',
      );
    },
  );
});

describe('the leader Lease of a Helm release', () => {
  it('is never created by the manager nor deleted; it is given up by clearing the holder', async () => {
    const api = admin.makeApiClient(k8s.CoordinationV1Api);
    const name = 'release-owned';
    const elector = (identity: string) =>
      new LeaderElector({ api, namespace: 'ptah-system', name, identity, leaseFromRelease: true });
    assert.equal(await elector('replica-a').tryAcquireOrRenew(), false, 'no Lease yet: nobody leads');
    await assert.rejects(api.readNamespacedLease({ namespace: 'ptah-system', name }), { code: 404 });

    // As helm creates it: metadata only.
    const made = await api.createNamespacedLease({ namespace: 'ptah-system', body: { metadata: { name } } });
    assert.equal(await elector('replica-a').tryAcquireOrRenew(), true);
    assert.equal(await elector('replica-a').release(), true);
    const released = await api.readNamespacedLease({ namespace: 'ptah-system', name });
    assert.equal(released.metadata?.uid, made.metadata?.uid, 'the release object stays');
    assert.ok(!released.spec?.holderIdentity, 'with no holder');
    assert.equal(await elector('replica-b').tryAcquireOrRenew(), true, 'another replica takes it at once');

    // helm uninstall deletes it while a replica is still stopping: its renewal does not make it again.
    await api.deleteNamespacedLease({ namespace: 'ptah-system', name });
    assert.equal(await elector('replica-b').tryAcquireOrRenew(), false);
    assert.equal(await elector('replica-b').release(), false);
    await assert.rejects(api.readNamespacedLease({ namespace: 'ptah-system', name }), { code: 404 });
  });
});

describe('a realm Lease is deleted when released, and fencing survives its recreation', () => {
  const namespace = 'ptah-system';
  const coordination = () => admin.makeApiClient(k8s.CoordinationV1Api);
  const realm = (key: string) =>
    coordinationDigest({ engine: 'postgres', namespace: 'shop', coordinationKey: key });
  const read = (digest: string) =>
    coordination()
      .readNamespacedLease({ namespace, name: realmLeaseName(digest as `sha256:${string}`) })
      .catch((error: { code?: number }) => {
        if (error.code === 404) return undefined;
        throw error;
      });

  it('the holder deletes it; a Lease created again has a new epoch, so the old hold reads the gap', async () => {
    const leases = new RealmLeases(coordination(), namespace);
    const digest = realm('recreated');
    const a = realmHolderIdentity('uid-a');
    const b = realmHolderIdentity('uid-b');
    const first = await leases.acquire(digest, a, 30);
    assert.ok(first.held && first.action === 'create');
    // Nobody else may let go of it, nor take it while it is held.
    await leases.release(digest, b);
    assert.equal((await leases.current(digest))?.holder, a, 'a foreign release changes nothing');
    assert.equal((await leases.acquire(digest, b, 30)).held, false);

    await leases.release(digest, a);
    assert.equal(await read(digest), undefined, 'released: no Lease is left behind');

    const second = await leases.acquire(digest, b, 30);
    assert.ok(second.held && second.action === 'create', 'free to anyone at once, as a cleared one was');
    await leases.release(digest, b);
    const third = await leases.acquire(digest, a, 30);
    assert.ok(third.held);
    // A claim that persisted the first epoch compares it with the current hold, as the reconcilers do.
    const now = await leases.current(digest);
    assert.equal(now?.holder, a, 'the same holder identity again');
    assert.ok(now?.epoch.startsWith('v1-'));
    assert.notEqual(now?.epoch, first.epoch, 'a recreated Lease never carries an epoch a claim persisted');
    assert.equal(new Set([first.epoch, second.held && second.epoch, now?.epoch]).size, 3);
    await leases.release(digest, a);
  });

  it('a release never deletes a Lease written since its holder read it', async () => {
    const api = coordination();
    const digest = realm('raced');
    const name = realmLeaseName(digest);
    const a = realmHolderIdentity('uid-a');
    const b = realmHolderIdentity('uid-b');
    // The real API server, with another manager's takeover landing between the release's read and its delete.
    const racing = new Proxy(api, {
      get(target, property, receiver) {
        if (property !== 'deleteNamespacedLease') return Reflect.get(target, property, receiver) as unknown;
        return async (request: k8s.CoordinationV1ApiDeleteNamespacedLeaseRequest) => {
          const lease = await api.readNamespacedLease({ namespace, name });
          await api.replaceNamespacedLease({
            namespace,
            name,
            body: {
              metadata: {
                ...lease.metadata,
                annotations: { ...lease.metadata?.annotations, [LEASE_EPOCH_ANNOTATION]: 'v1-taken-over' },
              },
              spec: {
                ...lease.spec,
                holderIdentity: b,
                leaseTransitions: (lease.spec?.leaseTransitions ?? 0) + 1,
              },
            },
          });
          return target.deleteNamespacedLease(request);
        };
      },
    });
    assert.ok((await new RealmLeases(api, namespace).acquire(digest, a, 30)).held);
    await new RealmLeases(racing, namespace).release(digest, a);
    const lease = await read(digest);
    assert.ok(lease, 'the Lease written in between is still there');
    assert.equal(lease.spec?.holderIdentity, b);
    assert.equal(lease.metadata?.annotations?.[LEASE_EPOCH_ANNOTATION], 'v1-taken-over');
    await new RealmLeases(api, namespace).release(digest, b);
    assert.equal(await read(digest), undefined);
  });
});
