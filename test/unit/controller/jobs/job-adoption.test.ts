// Adoption of a Job another manager process dispatched: confirmed only when this release builds the same
// Job from the claim apart from the manager identity it records, whatever the API server filled in.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Job } from '@kubernetes/client-node';
import { JOB_ANNOTATIONS } from '../../../../src/api/job-envelope.ts';
import type { ExecutionBinding, PtahSchema } from '../../../../src/api/ptah-schema.ts';
import { JobAdoption } from '../../../../src/controller/jobs/job-adoption.ts';
import type { JobReaders } from '../../../../src/controller/jobs/job-readers.ts';
import type { ManagerIdentity } from '../../../../src/controller/jobs/operation-job.ts';
import { schemaJob } from '../../../../src/controller/schema/schema-job.ts';
import { schemaView } from '../../../../src/controller/schema/view.ts';

const digest = (c: string) => `sha256:${c.repeat(64)}`;
const NOW = new Date('2026-12-03T10:00:00Z');
const CLAIMED = '2026-12-03T09:59:00.000Z';
const MANAGER: ManagerIdentity = {
  managerImage: 'registry.example/ptah-operator@sha256:' + '1'.repeat(64),
  managerRevision: 'r2',
  controllerStateVersion: 1,
  ptahVersion: '0.1.0',
  runnerImage: 'registry.example/ptah-runner@sha256:' + '2'.repeat(64),
};
const EXECUTION: ExecutionBinding = { ...MANAGER, runnerProtocolVersion: 1, epoch: 'v1-' + 'e'.repeat(32) };
const PREDECESSOR: ManagerIdentity = { ...MANAGER, managerImage: 'registry.example/ptah-operator:old' };

const schema = {
  apiVersion: 'operator.ptah.run/v1alpha1',
  kind: 'PtahSchema',
  metadata: { name: 'orders', namespace: 'ns', uid: 'u-1', generation: 1 },
  spec: {
    target: { engine: 'postgres', coordinationKey: 'orders-db', urlFrom: { name: 'db', key: 'url' } },
    desired: { configMap: { name: 'src', files: [{ key: 'schema.sql' }] } },
  },
  status: {
    claim: {
      type: 'Observe',
      operationId: digest('a'),
      inputsFingerprint: digest('b'),
      jobName: 'ptah-observe-orders-aaaaaaaaaaaaaaaa',
      attempt: 1,
      generation: 1,
      startedAt: CLAIMED,
      contentDigest: digest('c'),
      snapshotName: 'ptah-src-1234',
    },
  },
} as unknown as PtahSchema;

const readers: JobReaders = {
  core: { readNamespacedConfigMap: () => Promise.reject(new Error('not read')) },
  ptah: {
    get: async <T>(plural: string, _ns: string, name: string) =>
      (plural === 'ptahschemas' && name === 'orders' ? schema : undefined) as T | undefined,
  },
};
const owner = { kind: 'PtahSchema' as const, namespace: 'ns', name: 'orders', uid: 'u-1' };

/** The Job `built` by `manager` a moment after the claim, as the API server stores it. */
async function stored(manager: ManagerIdentity): Promise<V1Job> {
  const view = schemaView(schema);
  const job = await schemaJob(readers, view, view.status.claim!, manager, new Date(CLAIMED));
  const uid = 'job-uid-1';
  return {
    ...job,
    metadata: { ...job.metadata, uid, resourceVersion: '42', creationTimestamp: new Date(CLAIMED) },
    spec: {
      ...job.spec!,
      selector: { matchLabels: { 'batch.kubernetes.io/controller-uid': uid } },
      completionMode: 'NonIndexed',
      suspend: false,
      manualSelector: false,
      podReplacementPolicy: 'TerminatingOrFailed',
      ttlSecondsAfterFinished: 300,
      template: {
        ...job.spec!.template,
        metadata: {
          ...job.spec!.template.metadata,
          labels: {
            ...job.spec!.template.metadata!.labels,
            'batch.kubernetes.io/controller-uid': uid,
            'controller-uid': uid,
            'batch.kubernetes.io/job-name': job.metadata!.name!,
            'job-name': job.metadata!.name!,
          },
        },
      },
    },
    status: { succeeded: 1 },
  };
}

describe('adopting a Job another manager process dispatched', () => {
  it('confirms the Job a predecessor with another identity built from the same claim', async () => {
    const live = await stored(PREDECESSOR);
    assert.equal(
      live.spec!.template.metadata!.annotations![JOB_ANNOTATIONS.managerImage],
      PREDECESSOR.managerImage,
    );
    const adoption = new JobAdoption(readers, MANAGER, () => NOW);
    assert.equal(await adoption.unconfirmed(owner, live), undefined);
  });

  it('names what differs in a Job this release does not build the same, and never remembers it', async () => {
    const live = await stored(MANAGER);
    const main = live.spec!.template.spec!.containers[0]!;
    main.args = [...(main.args ?? []), '--extra'];
    const adoption = new JobAdoption(readers, MANAGER, () => NOW);
    const why = await adoption.unconfirmed(owner, live);
    assert.match(
      why ?? '',
      /spec\.template\.spec\.containers\[name=ptah\]\.args has 4 items; the rebuild has 3/,
    );
    assert.equal(await adoption.unconfirmed(owner, live), why, 'checked again, not taken as confirmed');
  });

  it('cannot confirm a Job the claim no longer names', async () => {
    const live = await stored(MANAGER);
    live.metadata!.name = 'ptah-observe-orders-bbbbbbbbbbbbbbbb';
    const adoption = new JobAdoption(readers, MANAGER, () => NOW);
    assert.match(
      (await adoption.unconfirmed(owner, live)) ?? '',
      /claims no operation whose Job is ptah-observe-orders-bbbbbbbbbbbbbbbb/,
    );
  });

  it("reads a finished Job's result only past the gate: claimed, continuous, of a running epoch, and adopted", async () => {
    const live = await stored(MANAGER);
    live.spec!.template.spec!.containers[0]!.image = 'somebody/else';
    const adoption = new JobAdoption(readers, MANAGER, () => NOW);
    const finished = { state: 'finished', uid: 'job-uid-1', succeeded: true } as const;
    const epoch = { ...EXECUTION, epoch: 'v1-' + 'a'.repeat(32) };
    const pass = { recorded: epoch, current: epoch };
    const apply = { type: 'Apply', dispatchStarted: true, executionEpoch: epoch.epoch };

    // Not an Apply: read without confirmation. A dispatched Apply this release does not build: not read.
    const observe = { type: 'Observe', executionEpoch: epoch.epoch };
    assert.deepEqual(await adoption.resultGate(owner, observe, live, finished, pass), {
      read: true,
      uid: 'job-uid-1',
    });
    const refused = await adoption.resultGate(owner, apply, live, finished, pass);
    assert.equal(refused.read, false);
    assert.match((!refused.read && refused.unconfirmedJob) || '', /image/);

    // Not finished, another UID, a broken hold, a retired epoch: not read, and nothing to confirm.
    const quiet = { read: false };
    assert.deepEqual(
      await adoption.resultGate(owner, apply, live, { state: 'running', uid: 'job-uid-1' }, pass),
      quiet,
    );
    assert.deepEqual(
      await adoption.resultGate(owner, { ...apply, jobUID: 'another' }, live, finished, pass),
      quiet,
    );
    assert.deepEqual(
      await adoption.resultGate(owner, apply, live, finished, { ...pass, leaseContinuityLost: true }),
      quiet,
    );
    const upgraded = { ...epoch, epoch: 'v1-' + 'b'.repeat(32) };
    assert.deepEqual(
      await adoption.resultGate(owner, apply, live, finished, { recorded: epoch, current: upgraded }),
      quiet,
    );

    // A Job this process created is its own: read without confirmation.
    adoption.created(live);
    assert.deepEqual(await adoption.resultGate(owner, apply, live, finished, pass), {
      read: true,
      uid: 'job-uid-1',
    });
  });
});
