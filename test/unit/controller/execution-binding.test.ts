import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EXECUTION_EPOCH_PATTERN } from '../../../src/api/ptah-schema.ts';
import {
  currentExecutionBinding,
  executionPlanBinding,
  newExecutionEpoch,
  supersededBy,
} from '../../../src/controller/execution-binding.ts';
import type { ManagerIdentity } from '../../../src/controller/jobs/operation-job.ts';

const releaseA: ManagerIdentity = {
  managerImage: `registry.example/ptah-operator@sha256:${'1'.repeat(64)}`,
  managerRevision: 'a1',
  controllerStateVersion: 1,
  ptahVersion: '0.1.0',
  runnerImage: `registry.example/ptah-operator@sha256:${'1'.repeat(64)}`,
};
const releaseB: ManagerIdentity = { ...releaseA, managerRevision: 'b2' };

describe('execution binding epoch', () => {
  it('is v1- and 32 random hex digits, different each time', () => {
    const a = newExecutionEpoch();
    assert.match(a, new RegExp(EXECUTION_EPOCH_PATTERN));
    assert.notEqual(newExecutionEpoch(), a);
  });

  it('keeps the recorded epoch while every bound release is the one recorded', () => {
    const first = currentExecutionBinding(undefined, releaseA);
    const again = currentExecutionBinding(first, releaseA);
    assert.equal(again.epoch, first.epoch);
    assert.deepEqual(again, first);
  });

  for (const [field, value] of [
    ['managerImage', `registry.example/ptah-operator@sha256:${'2'.repeat(64)}`],
    ['managerRevision', 'b2'],
    ['controllerStateVersion', 2],
    ['ptahVersion', '0.2.0'],
    ['runnerImage', `registry.example/ptah-runner@sha256:${'3'.repeat(64)}`],
  ] as const) {
    it(`rotates when ${field} changes`, () => {
      const first = currentExecutionBinding(undefined, releaseA);
      const next = currentExecutionBinding(first, { ...releaseA, [field]: value });
      assert.notEqual(next.epoch, first.epoch);
      assert.equal(next[field], value);
    });
  }

  it('a rollback to the earlier releases is a change of its own: a third epoch, never the first again', () => {
    const a = currentExecutionBinding(undefined, releaseA);
    const b = currentExecutionBinding(a, releaseB);
    const back = currentExecutionBinding(b, releaseA);
    assert.equal(new Set([a.epoch, b.epoch, back.epoch]).size, 3);
    assert.deepEqual(executionPlanBinding(back), { ...executionPlanBinding(a), executionEpoch: back.epoch });
  });

  it('a plan retired for an execution field says the execution binding took over; any other field is Superseded', () => {
    assert.equal(supersededBy(['executionEpoch']), 'ExecutionBindingChanged');
    assert.equal(supersededBy(['policyFingerprint', 'controllerStateVersion']), 'ExecutionBindingChanged');
    assert.equal(supersededBy(['policyFingerprint', 'fingerprint']), 'Superseded');
  });
});
