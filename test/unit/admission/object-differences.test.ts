import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { objectDifferences } from '../../../src/admission/object-differences.ts';

const expected = {
  apiVersion: 'batch/v1',
  kind: 'Job',
  metadata: { name: 'ptah-observe-x', annotations: { 'operator.ptah.run/operation-id': 'a' } },
  spec: {
    template: {
      metadata: { labels: { 'app.kubernetes.io/managed-by': 'ptah-operator' } },
      spec: {
        volumes: [{ name: 'work', emptyDir: {} }],
        containers: [{ name: 'ptah', image: 'runner@sha256:1', args: ['run'] }],
      },
    },
  },
};
const filled = [
  { path: 'spec.template.spec.containers[*].imagePullPolicy', accepts: (v: unknown) => v === 'IfNotPresent' },
  {
    path: 'spec.template.metadata.labels["job-name"]',
    accepts: (v: unknown, o: Readonly<Record<string, unknown>>) =>
      v === (o['metadata'] as { name: string }).name,
  },
];
const admitted = (edit: (o: typeof expected & Record<string, unknown>) => void = () => undefined) => {
  const o = structuredClone(expected) as typeof expected & Record<string, unknown>;
  (o.metadata as Record<string, unknown>)['uid'] = 'u1';
  (o.metadata as Record<string, unknown>)['resourceVersion'] = '7';
  o['status'] = { active: 1 };
  const c = o.spec.template.spec.containers[0] as Record<string, unknown>;
  c['imagePullPolicy'] = 'IfNotPresent';
  (o.spec.template.metadata.labels as Record<string, string>)['job-name'] = 'ptah-observe-x';
  edit(o);
  return o;
};

describe('objectDifferences', () => {
  it('admits what the server fills in, at its path with its value, and its own metadata and status', () => {
    assert.deepEqual(objectDifferences(expected, admitted(), filled), []);
  });

  it('names a changed annotation, an extra volume, another image, an added field and a wrong default', () => {
    const diffs = objectDifferences(
      expected,
      admitted((o) => {
        o.metadata.annotations['operator.ptah.run/operation-id'] = 'b';
        o.spec.template.spec.volumes.push({ name: 'extra', emptyDir: {} });
        const c = o.spec.template.spec.containers[0] as Record<string, unknown>;
        c['image'] = 'other';
        c['command'] = ['sh'];
        (o.spec.template.metadata.labels as Record<string, string>)['job-name'] = 'another';
      }),
      filled,
      10,
    );
    assert.deepEqual(diffs, [
      'metadata.annotations["operator.ptah.run/operation-id"] is "b"; the rebuild has "a"',
      'spec.template.metadata.labels["job-name"] is "another", which the rebuild does not have',
      'spec.template.spec.containers[name=ptah].image is "other"; the rebuild has "runner@sha256:1"',
      'spec.template.spec.containers[name=ptah].command is ["sh"], which the rebuild does not have',
      'spec.template.spec.volumes[name=extra] is there, which the rebuild does not have',
    ]);
  });

  it('names a missing item and stops at the limit', () => {
    const diffs = objectDifferences(
      expected,
      admitted((o) => {
        o.spec.template.spec.volumes = [];
        o.metadata.annotations['operator.ptah.run/operation-id'] = 'b';
      }),
      filled,
      1,
    );
    assert.equal(diffs.length, 1);
  });

  it('names the same differences in the same order whatever order either side lists its keys in', () => {
    const rebuilt = { kind: 'ConfigMap', metadata: { name: 'n' }, data: { b: '2', a: '1', c: '3' } };
    const shuffled = { data: { c: 'x', a: 'y', b: '2', d: '4' }, metadata: { name: 'n' }, kind: 'ConfigMap' };
    const sortedFirst = {
      kind: 'ConfigMap',
      metadata: { name: 'n' },
      data: { a: 'y', b: '2', c: 'x', d: '4' },
    };
    const want = [
      'data["a"] is "y"; the rebuild has "1"',
      'data["c"] is "x"; the rebuild has "3"',
      'data["d"] is "4", which the rebuild does not have',
    ];
    assert.deepEqual(objectDifferences(rebuilt, shuffled), want);
    assert.deepEqual(objectDifferences(rebuilt, sortedFirst), want);
    assert.deepEqual(objectDifferences(rebuilt, shuffled, [], 2), want.slice(0, 2));
    // Named lists: compared by name, in either order of their items' keys.
    const a = {
      spec: {
        containers: [
          { name: 'x', image: 'i' },
          { name: 'y', image: 'j' },
        ],
      },
    };
    const b = {
      spec: {
        containers: [
          { image: 'i', name: 'x' },
          { image: 'k', name: 'y' },
        ],
      },
    };
    assert.deepEqual(objectDifferences(a, b), ['spec.containers[name=y].image is "k"; the rebuild has "j"']);
    assert.deepEqual(objectDifferences(a, a), []);
  });
});
