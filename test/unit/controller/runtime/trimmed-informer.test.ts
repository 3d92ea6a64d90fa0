import { test } from 'node:test';
import assert from 'node:assert/strict';
import type * as k8s from '@kubernetes/client-node';
import {
  metadataOf,
  trimJob,
  withoutBookkeeping,
} from '../../../../src/controller/runtime/trimmed-informer.ts';

const metadata: k8s.V1ObjectMeta = {
  namespace: 'team-a',
  name: 'orders',
  uid: 'u-1',
  resourceVersion: '42',
  labels: { 'app.kubernetes.io/managed-by': 'ptah-operator', 'operator.ptah.run/schema': 'orders' },
  annotations: {
    'kubectl.kubernetes.io/last-applied-configuration': '{"data":{"schema.sql":"CREATE TABLE t ()"}}',
    note: 'kept',
  },
  ownerReferences: [{ apiVersion: 'v1', kind: 'X', name: 'o', uid: 'o-1', controller: true }],
  managedFields: [{ manager: 'kubectl', operation: 'Apply', fieldsType: 'FieldsV1', fieldsV1: { f: {} } }],
};

test('a cached object loses managedFields and the last-applied copy, and keeps what routing reads', () => {
  const schema = { apiVersion: 'operator.ptah.run/v1alpha1', kind: 'PtahSchema', metadata, spec: { a: 1 } };
  const kept = withoutBookkeeping(schema);
  assert.equal(kept.metadata.managedFields, undefined);
  assert.deepEqual(kept.metadata.annotations, { note: 'kept' });
  assert.deepEqual(kept.spec, { a: 1 });
  for (const field of ['namespace', 'name', 'uid', 'resourceVersion', 'labels', 'ownerReferences'] as const) {
    assert.deepEqual(kept.metadata[field], metadata[field], field);
  }
  // The input is not changed: a list's items may be shared with whoever listed them.
  assert.ok(
    metadata.managedFields !== undefined &&
      metadata.annotations?.['kubectl.kubernetes.io/last-applied-configuration'],
  );
});

test('a ConfigMap or a plan is cached by its metadata alone, without data', () => {
  const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata, data: { 'schema.sql': 'CREATE TABLE t ();' } };
  const kept = metadataOf(cm as k8s.V1ConfigMap);
  assert.equal(kept.data, undefined);
  assert.deepEqual(Object.keys(kept).sort(), ['apiVersion', 'kind', 'metadata']);
  assert.equal(kept.metadata?.resourceVersion, '42');
});

test('a finished Job is cached without its Pod template, with its status', () => {
  const job: k8s.V1Job = {
    metadata,
    spec: {
      template: { spec: { containers: [{ name: 'main', args: ['run', '--plan', 'x'.repeat(1000)] }] } },
    },
    status: { succeeded: 1, conditions: [{ type: 'Complete', status: 'True' }] },
  };
  const kept = trimJob(job);
  assert.equal(kept.spec, undefined);
  assert.deepEqual(kept.status, job.status);
  assert.deepEqual(kept.metadata?.labels, metadata.labels);
});

test('a running Job keeps its Pod template (vpodintent holds its Pods to it) and nothing else of its spec', () => {
  const template = { spec: { containers: [{ name: 'main', args: ['run'] }] } };
  const job: k8s.V1Job = {
    metadata,
    spec: { template, backoffLimit: 0, activeDeadlineSeconds: 600 },
    status: { active: 1, conditions: [{ type: 'Complete', status: 'False' }] },
  };
  const kept = trimJob(job);
  assert.deepEqual(kept.spec, { template });
  assert.equal(kept.metadata?.managedFields, undefined);
  const failed = trimJob({ ...job, status: { failed: 1, conditions: [{ type: 'Failed', status: 'True' }] } });
  assert.equal(failed.spec, undefined);
});
