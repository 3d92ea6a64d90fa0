// The Event recorder on a real API server: an occurrence repeated ten times is one Event with count >= 10,
// a restarted recorder (empty index) carries the same Event on by its name, and a different message is a
// different Event.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import pino from 'pino';
import { EventRecorder, type InvolvedObject } from '../../src/controller/events/event-recorder.ts';
import { startControlPlane, type ControlPlane } from '../env/controlplane.ts';

let cp: ControlPlane;
let core: k8s.CoreV1Api;

before(async () => {
  cp = await startControlPlane();
  const admin = new k8s.KubeConfig();
  admin.loadFromFile(cp.kubeconfigs.admin);
  core = admin.makeApiClient(k8s.CoreV1Api);
});

after(async () => {
  await cp?.stop();
});

function recorder(): EventRecorder {
  return new EventRecorder({
    core,
    log: pino({ level: 'silent' }),
    component: 'ptah-operator',
    controller: 'operator.ptah.run/manager',
    instance: 'test',
  });
}

async function eventsOf(namespace: string, uid: string): Promise<k8s.CoreV1Event[]> {
  const list = await core.listNamespacedEvent({ namespace, fieldSelector: `involvedObject.uid=${uid}` });
  return list.items;
}

describe('event recorder', () => {
  it('ten retries of one occurrence are one Event with a rising count, across a restart', async () => {
    const namespace = cp.testNamespace;
    const cm = await core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: 'event-subject' }, data: {} },
    });
    const involved: InvolvedObject = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      name: cm.metadata!.name!,
      namespace,
      uid: cm.metadata!.uid!,
    };
    const failed = {
      type: 'Warning',
      reason: 'OperationFailed',
      message: 'operation failed: x',
    } as const;

    const first = recorder();
    for (let i = 0; i < 10; i++) await first.record(involved, failed);
    let events = await eventsOf(namespace, involved.uid);
    assert.equal(events.length, 1, `one Event, got ${events.map((e) => e.metadata?.name).join(', ')}`);
    assert.equal(events[0]!.count, 10);
    assert.equal(events[0]!.type, 'Warning');
    assert.equal(events[0]!.reason, 'OperationFailed');
    assert.ok(
      new Date(events[0]!.lastTimestamp!).getTime() >= new Date(events[0]!.firstTimestamp!).getTime(),
    );

    // A new manager process knows nothing of the series; the deterministic name finds it.
    const restarted = recorder();
    await restarted.record(involved, failed);
    events = await eventsOf(namespace, involved.uid);
    assert.equal(events.length, 1);
    assert.equal(events[0]!.count, 11);

    // Another message on the same object is its own series.
    await restarted.record(involved, { ...failed, message: 'operation failed: y' });
    events = await eventsOf(namespace, involved.uid);
    assert.equal(events.length, 2);
    const counts = events.map((e) => e.count).sort((a, b) => (a ?? 0) - (b ?? 0));
    assert.deepEqual(counts, [1, 11]);
  });

  it('the index is bounded: an evicted series still lands on its Event', async () => {
    const namespace = cp.testNamespace;
    const cm = await core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: 'event-subject-2' }, data: {} },
    });
    const involved: InvolvedObject = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      name: cm.metadata!.name!,
      namespace,
      uid: cm.metadata!.uid!,
    };
    const small = new EventRecorder({
      core,
      log: pino({ level: 'silent' }),
      component: 'ptah-operator',
      controller: 'operator.ptah.run/manager',
      instance: 'test',
      maxEntries: 2,
    });
    for (let round = 0; round < 3; round++) {
      for (const reason of ['A', 'B', 'C']) {
        await small.record(involved, { type: 'Normal', reason, message: `step ${reason}` });
      }
    }
    assert.equal(small.size, 2);
    const events = await eventsOf(namespace, involved.uid);
    assert.deepEqual(events.map((e) => [e.reason, e.count]).sort(), [
      ['A', 3],
      ['B', 3],
      ['C', 3],
    ]);
  });
});
