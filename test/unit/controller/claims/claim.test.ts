import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sha256Digest } from '../../../../src/api/digest.ts';
import { claim as claimSchema, type OperationType } from '../../../../src/api/ptah-schema.ts';
import { validate } from '../../../../src/api/schema-dsl.ts';
import {
  buildClaim,
  claimMatches,
  inputsFingerprint,
  jobName,
  operationId,
  type ClaimRequest,
  type OperationInputs,
} from '../../../../src/controller/claims/claim.ts';

const d = (s: string) => sha256Digest(s);
const inputs: OperationInputs = {
  contentDigest: d('manifest'),
  snapshotName: 'ptah-src-0123456789abcdef0123456789abcdef',
  coordinationDigest: d('realm'),
  policyFingerprint: d('policy'),
  executionBinding: {
    managerImage: 'm@sha256:' + '1'.repeat(64),
    managerRevision: 'r1',
    controllerStateVersion: 1,
    ptahVersion: '0.1.0',
    runnerImage: 'r@sha256:' + '2'.repeat(64),
    runnerProtocolVersion: 1,
  },
  activeDeadlineSeconds: 900,
};
const request = (over: Partial<ClaimRequest> = {}): ClaimRequest => ({
  resourceUID: 'uid-orders',
  resourceName: 'orders',
  generation: 3,
  type: 'Plan',
  inputs,
  inputsFingerprint: inputsFingerprint('Plan', inputs),
  attempt: 1,
  ...over,
});
const now = new Date('2026-01-01T00:00:00Z');

describe('operation ids', () => {
  it('are deterministic: the same request gives the same id and Job name after a restart', () => {
    const a = buildClaim(request(), now);
    const b = buildClaim(request(), new Date('2026-01-02T00:00:00Z'));
    assert.equal(a.operationId, b.operationId);
    assert.equal(a.jobName, b.jobName);
    assert.ok(claimMatches(a, request()));
  });

  const variations: [string, Partial<ClaimRequest>][] = [
    ['resource UID', { resourceUID: 'uid-other' }],
    ['generation', { generation: 4 }],
    ['operation type', { type: 'Observe' }],
    ['inputs fingerprint', { inputsFingerprint: d('other inputs') }],
    ['attempt', { attempt: 2 }],
  ];
  for (const [name, over] of variations) {
    it(`change with the ${name}`, () => {
      assert.notEqual(operationId(request(over)), operationId(request()));
      assert.equal(claimMatches(buildClaim(request(), now), request(over)), false);
    });
  }

  const inputChanges: [keyof OperationInputs, unknown][] = [
    ['contentDigest', d('other manifest')],
    ['snapshotName', 'ptah-src-ffffffffffffffffffffffffffffffff'],
    ['coordinationDigest', d('other realm')],
    ['policyFingerprint', d('other policy')],
    ['executionBinding', { ...inputs.executionBinding, ptahVersion: '0.2.0' }],
    ['activeDeadlineSeconds', 901],
    ['planRef', { name: 'ptah-plan-a', uid: 'u' }],
    ['planFingerprint', d('plan')],
    ['approvalRef', { name: 'approve', uid: 'u' }],
  ];
  it('the input list covers every input', () => {
    const all = new Set<string>([...Object.keys(inputs), ...inputChanges.map(([k]) => k)]);
    assert.deepEqual([...all].sort(), inputChanges.map(([k]) => k).sort());
  });
  for (const [key, value] of inputChanges) {
    it(`inputs fingerprint changes with ${key}`, () => {
      assert.notEqual(
        inputsFingerprint('Plan', { ...inputs, [key]: value }),
        inputsFingerprint('Plan', inputs),
      );
    });
  }
  it('inputs fingerprint differs per operation type for the same inputs', () => {
    assert.notEqual(inputsFingerprint('Observe', inputs), inputsFingerprint('Plan', inputs));
  });

  it('refuses an attempt below 1', () => {
    assert.throws(() => operationId(request({ attempt: 0 })), RangeError);
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
});

describe('claim record', () => {
  it('carries what the status schema declares and nothing dispatched yet', () => {
    const c = buildClaim(
      request({ type: 'Apply', inputs: { ...inputs, planRef: { name: 'ptah-plan-a', uid: 'u1' } } }),
      now,
    );
    assert.deepEqual(validate(claimSchema, c).errors, []);
    assert.equal(c.type, 'Apply');
    assert.equal(c.startedAt, '2026-01-01T00:00:00.000Z');
    assert.deepEqual(c.planRef, { name: 'ptah-plan-a', uid: 'u1' });
    assert.equal(c.dispatchStarted, undefined);
    assert.equal(c.jobUID, undefined);
    assert.equal(c.contentDigest, inputs.contentDigest);
  });
});
