import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { planRead } from '../../../../src/controller/decision/plan-read.ts';

describe('planRead: how much of a stored plan a pass reads back', () => {
  const never = () => assert.fail('authorisation is not asked once an operation is claimed');

  it('a waiting plan that nothing lets run yet is read without its chunks', () => {
    assert.equal(
      planRead(undefined, () => false),
      'bindings',
    );
  });

  it('a plan that policy or an approval lets run now is read whole', () => {
    assert.equal(
      planRead(undefined, () => true),
      'whole',
    );
  });

  it('an Apply claimed and not yet dispatched reads the plan whole', () => {
    assert.equal(planRead({ type: 'Apply' }, never), 'whole');
    assert.equal(planRead({ type: 'Apply', dispatchStarted: false }, never), 'whole');
  });

  it('an operation already under way reads nothing', () => {
    assert.equal(planRead({ type: 'Apply', dispatchStarted: true }, never), 'none');
    assert.equal(planRead({ type: 'Observe' }, never), 'none');
    assert.equal(planRead({ type: 'Plan' }, never), 'none');
  });
});
