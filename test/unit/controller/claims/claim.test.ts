import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sha256Digest } from '../../../../src/api/digest.ts';
import {
  claim as claimSchema,
  type ExecutionBinding,
  type OperationType,
} from '../../../../src/api/ptah-schema.ts';
import { validate } from '../../../../src/api/schema-dsl.ts';
import {
  buildClaim,
  inputsFingerprint,
  jobName,
  operationId,
  type ClaimRequest,
  type OperationIdentity,
  type OperationInputs,
} from '../../../../src/controller/claims/claim.ts';

const d = (s: string) => sha256Digest(s);
const binding: ExecutionBinding = {
  epoch: 'v1-' + 'e'.repeat(32),
  managerImage: 'm@sha256:' + '1'.repeat(64),
  managerRevision: 'r1',
  controllerStateVersion: 1,
  ptahVersion: '0.1.0',
  runnerImage: 'r@sha256:' + '2'.repeat(64),
  runnerProtocolVersion: 1,
};
const inputs: OperationInputs = {
  contentDigest: d('manifest'),
  coordinationDigest: d('realm'),
  policyFingerprint: d('policy'),
  executionBinding: binding,
  activeDeadlineSeconds: 900,
};
const request = (over: Partial<ClaimRequest> = {}): ClaimRequest => ({
  resourceUID: 'uid-orders',
  resourceName: 'orders',
  generation: 3,
  type: 'Plan',
  inputs,
  attempt: 1,
  ...over,
});
const now = new Date('2026-01-01T00:00:00Z');
const later = new Date('2026-01-01T00:10:00Z');

describe('claims', () => {
  it('are deterministic for one request at one instant', () => {
    assert.deepEqual(buildClaim(request(), now), buildClaim(request(), new Date(now.getTime())));
  });

  it('a refresh with identical inputs is a new operation with a new Job name', () => {
    // A finished Job lingers for its TTL: reusing its name would harvest the old Job's result.
    const first = buildClaim(request(), now);
    const refresh = buildClaim(request(), later);
    assert.equal(refresh.inputsFingerprint, first.inputsFingerprint, 'the inputs did not change');
    assert.notEqual(refresh.operationId, first.operationId);
    assert.notEqual(refresh.jobName, first.jobName);
    assert.equal(refresh.startedAt, later.toISOString());
  });

  it('are consistent: fingerprint, id and Job name derive from the request and the instant written', () => {
    const c = buildClaim(request(), now);
    const fp = inputsFingerprint('Plan', inputs);
    const id = operationId({
      resourceUID: 'uid-orders',
      generation: 3,
      type: 'Plan',
      inputsFingerprint: fp,
      attempt: 1,
      startedAt: now.toISOString(),
    });
    assert.equal(c.inputsFingerprint, fp);
    assert.equal(c.operationId, id);
    assert.equal(c.jobName, jobName('Plan', 'orders', id));
  });

  const requestChanges: [string, Partial<ClaimRequest>][] = [
    ['resource UID', { resourceUID: 'uid-other' }],
    ['generation', { generation: 4 }],
    ['operation type', { type: 'Observe' }],
    ['inputs', { inputs: { ...inputs, contentDigest: d('other manifest') } }],
    ['attempt', { attempt: 2 }],
  ];
  for (const [name, over] of requestChanges) {
    it(`change with the ${name}`, () => {
      const a = buildClaim(request(), now);
      const b = buildClaim(request(over), now);
      assert.notEqual(b.operationId, a.operationId);
      assert.notEqual(b.jobName, a.jobName);
    });
  }

  it('carry what the status schema declares and nothing dispatched yet', () => {
    const c = buildClaim(
      request({
        type: 'Apply',
        inputs: {
          ...inputs,
          snapshotName: 'ptah-src-0123456789abcdef0123456789abcdef',
          planRef: { name: 'ptah-plan-a', uid: 'u1' },
          planFingerprint: d('plan'),
          approvalRef: { name: 'approve', uid: 'u2' },
        },
      }),
      now,
    );
    assert.deepEqual(validate(claimSchema, c).errors, []);
    assert.equal(c.type, 'Apply');
    assert.equal(c.startedAt, '2026-01-01T00:00:00.000Z');
    assert.equal(c.generation, 3);
    assert.equal(c.attempt, 1);
    assert.deepEqual(c.planRef, { name: 'ptah-plan-a', uid: 'u1' });
    assert.deepEqual(c.approvalRef, { name: 'approve', uid: 'u2' });
    assert.equal(c.snapshotName, 'ptah-src-0123456789abcdef0123456789abcdef');
    assert.equal(c.contentDigest, inputs.contentDigest);
    assert.equal(c.dispatchStarted, undefined);
    assert.equal(c.jobUID, undefined);
    assert.equal(c.leaseEpoch, undefined);
  });
});

describe('inputs fingerprint', () => {
  const inputChanges: [keyof OperationInputs, unknown][] = [
    ['contentDigest', d('other manifest')],
    ['snapshotName', 'ptah-src-ffffffffffffffffffffffffffffffff'],
    ['configMapUID', 'uid-cm-2'],
    ['coordinationDigest', d('other realm')],
    ['policyFingerprint', d('other policy')],
    ['executionBinding', { ...binding, ptahVersion: '0.2.0' }],
    ['activeDeadlineSeconds', 901],
    ['planRef', { name: 'ptah-plan-a', uid: 'u' }],
    ['planFingerprint', d('plan')],
    ['approvalRef', { name: 'approve', uid: 'u' }],
  ];
  it('the list below covers every input', () => {
    const all = new Set<string>([...Object.keys(inputs), ...inputChanges.map(([k]) => k)]);
    assert.deepEqual([...all].sort(), inputChanges.map(([k]) => k).sort());
  });
  for (const [key, value] of inputChanges) {
    it(`changes with ${key}`, () => {
      assert.notEqual(
        inputsFingerprint('Plan', { ...inputs, [key]: value }),
        inputsFingerprint('Plan', inputs),
      );
    });
  }

  const bindingChanges: [keyof ExecutionBinding, string | number][] = [
    ['epoch', `v1-${'f'.repeat(32)}`],
    ['managerImage', 'm2'],
    ['managerRevision', 'r2'],
    ['controllerStateVersion', 2],
    ['ptahVersion', '0.3.0'],
    ['runnerImage', 'r2'],
    ['runnerProtocolVersion', 2],
  ];
  it('the binding list below covers every execution binding member', () => {
    assert.deepEqual(Object.keys(binding).sort(), bindingChanges.map(([k]) => k).sort());
  });
  for (const [key, value] of bindingChanges) {
    it(`changes with executionBinding.${key}`, () => {
      const moved = { ...inputs, executionBinding: { ...binding, [key]: value } };
      assert.notEqual(inputsFingerprint('Plan', moved), inputsFingerprint('Plan', inputs));
    });
  }

  it('differs per operation type for the same inputs', () => {
    assert.notEqual(inputsFingerprint('Observe', inputs), inputsFingerprint('Plan', inputs));
  });
});

describe('operation ids', () => {
  const identity: OperationIdentity = {
    resourceUID: 'uid-orders',
    generation: 3,
    type: 'Plan',
    inputsFingerprint: d('inputs'),
    attempt: 1,
    startedAt: now.toISOString(),
  };
  const changes: [keyof OperationIdentity, unknown][] = [
    ['resourceUID', 'uid-other'],
    ['generation', 4],
    ['type', 'Observe'],
    ['inputsFingerprint', d('other inputs')],
    ['attempt', 2],
    ['startedAt', later.toISOString()],
  ];
  it('the list below covers every identity member', () => {
    assert.deepEqual(Object.keys(identity).sort(), changes.map(([k]) => k).sort());
  });
  for (const [key, value] of changes) {
    it(`change with the ${key}`, () => {
      assert.notEqual(operationId({ ...identity, [key]: value }), operationId(identity));
    });
  }
  it('refuse an attempt below 1', () => {
    assert.throws(() => operationId({ ...identity, attempt: 0 }), RangeError);
    assert.throws(() => buildClaim(request({ attempt: 0 }), now), RangeError);
  });
});

describe('Job names', () => {
  const id = d('op');
  const label = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
  const cases: [string, OperationType, string][] = [
    ['a short name', 'Observe', 'orders'],
    ['a 63-character name', 'Apply', 'a'.repeat(63)],
    ['a name with dots', 'Plan', 'shop.orders.v2'],
    ['a name cut at a dash', 'Observe', `${'x'.repeat(32)}-tail`],
    ['a name that sanitises away', 'Plan', '...'],
  ];
  for (const [name, type, resource] of cases) {
    it(`are DNS-1123 labels of at most 63 characters for ${name}`, () => {
      const job = jobName(type, resource, id);
      assert.ok(job.length <= 63, job);
      assert.match(job, label);
      assert.ok(job.startsWith(`ptah-${type.toLowerCase()}-`));
      assert.ok(job.endsWith(id.slice(7, 23)));
    });
  }
  it('keep a short resource name whole', () => {
    assert.equal(jobName('Observe', 'orders', id), `ptah-observe-orders-${id.slice(7, 23)}`);
  });
});
