// finishJob touches only the Job the claim names: this UID, this resource as its controller owner, this
// operation id in its envelope (the decision's action carries the claim's). Anything else under the name is
// left as it is.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { BatchV1Api, V1Job } from '@kubernetes/client-node';
import { pino } from 'pino';
import { JOB_ANNOTATIONS } from '../../../../src/api/job-envelope.ts';
import { finishJobAction } from '../../../../src/controller/jobs/claim-job.ts';
import { finishJob } from '../../../../src/controller/jobs/finish-job.ts';

const OPERATION = `sha256:${'a'.repeat(64)}`;

function finished(overrides: { owner?: string; operation?: string } = {}): V1Job {
  return {
    metadata: {
      name: 'ptah-apply-orders-aaaaaaaaaaaaaaaa',
      uid: 'job-uid',
      ownerReferences: [
        {
          apiVersion: 'operator.ptah.run/v1alpha1',
          kind: 'PtahSchema',
          name: 'orders',
          uid: overrides.owner ?? 'schema-uid',
          controller: true,
        },
      ],
      annotations: { [JOB_ANNOTATIONS.operationId]: overrides.operation ?? OPERATION },
    },
    spec: { template: {} },
    status: { conditions: [{ type: 'Complete', status: 'True' }], succeeded: 1 },
  };
}

/** The calls finishJob makes, against one stored Job. */
function batchHolding(job: V1Job): { batch: BatchV1Api; patched: unknown[] } {
  const patched: unknown[] = [];
  const batch = {
    readNamespacedJob: async () => job,
    patchNamespacedJob: async (request: { body: unknown }) => {
      patched.push(request.body);
      return job;
    },
    deleteNamespacedJob: async () => {
      throw new Error('a finished Job is never deleted');
    },
  } as unknown as BatchV1Api;
  return { batch, patched };
}

const log = pino({ level: 'silent' });
const action = finishJobAction({
  jobName: 'ptah-apply-orders-aaaaaaaaaaaaaaaa',
  jobUID: 'job-uid',
  operationId: OPERATION,
});

describe('finishJob', () => {
  it('adds the cleanup TTL to the finished Job of the claimed operation', async () => {
    const { batch, patched } = batchHolding(finished());
    await finishJob(batch, 'ns', action, 'schema-uid', log);
    assert.deepEqual(patched, [{ spec: { ttlSecondsAfterFinished: 300 } }]);
  });

  it('leaves alone a Job of another controller owner or another operation under the name', async () => {
    for (const job of [finished({ owner: 'another' }), finished({ operation: `sha256:${'b'.repeat(64)}` })]) {
      const { batch, patched } = batchHolding(job);
      await finishJob(batch, 'ns', action, 'schema-uid', log);
      assert.deepEqual(patched, []);
    }
  });
});
