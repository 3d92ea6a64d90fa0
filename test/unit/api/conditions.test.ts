import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  ConditionError,
  findCondition,
  isConditionTrue,
  MAX_CONDITION_MESSAGE,
  removeCondition,
  setCondition,
  setConditions,
} from '../../../src/api/conditions.ts';
import { conditions as conditionsSchema } from '../../../src/api/meta.ts';
import { validate } from '../../../src/api/schema-dsl.ts';

const t1 = new Date('2026-01-01T00:00:00.500Z');
const t2 = new Date('2026-01-01T01:00:00Z');
const t3 = new Date('2026-01-01T02:00:00Z');

describe('conditions', () => {
  it('adds a condition with its transition time at second precision', () => {
    const list = setCondition(
      undefined,
      { type: 'Ready', status: 'False', reason: 'Pending', observedGeneration: 1 },
      t1,
    );
    assert.deepEqual(list, [
      {
        type: 'Ready',
        status: 'False',
        reason: 'Pending',
        message: '',
        observedGeneration: 1,
        lastTransitionTime: '2026-01-01T00:00:00Z',
      },
    ]);
    assert.deepEqual(validate(conditionsSchema, list).errors, []);
  });

  it('keeps lastTransitionTime when only the reason, message or generation changes', () => {
    const a = setCondition(undefined, { type: 'Ready', status: 'False', reason: 'Pending' }, t1);
    const b = setCondition(
      a,
      {
        type: 'Ready',
        status: 'False',
        reason: 'AwaitingApproval',
        message: 'waiting',
        observedGeneration: 2,
      },
      t2,
    );
    assert.equal(findCondition(b, 'Ready')?.lastTransitionTime, '2026-01-01T00:00:00Z');
    assert.equal(findCondition(b, 'Ready')?.reason, 'AwaitingApproval');
    assert.equal(findCondition(b, 'Ready')?.observedGeneration, 2);
  });

  it('moves lastTransitionTime when the status changes', () => {
    const a = setCondition(undefined, { type: 'InSync', status: 'False', reason: 'Pending' }, t1);
    const b = setCondition(a, { type: 'InSync', status: 'True', reason: 'NoChanges' }, t2);
    const c = setCondition(b, { type: 'InSync', status: 'True', reason: 'NoChanges' }, t3);
    assert.equal(findCondition(b, 'InSync')?.lastTransitionTime, '2026-01-01T01:00:00Z');
    assert.equal(findCondition(c, 'InSync')?.lastTransitionTime, '2026-01-01T01:00:00Z');
    assert.ok(isConditionTrue(c, 'InSync'));
  });

  it('returns the same array when nothing changed, so no status write is needed', () => {
    const a = setCondition(undefined, { type: 'Ready', status: 'True', reason: 'InSync', message: 'ok' }, t1);
    assert.equal(setCondition(a, { type: 'Ready', status: 'True', reason: 'InSync', message: 'ok' }, t2), a);
  });

  it('keeps one condition per type and the order of the others', () => {
    const list = setConditions(
      undefined,
      [
        { type: 'ArtifactResolved', status: 'True', reason: 'SnapshotTaken' },
        { type: 'PlanReady', status: 'Unknown', reason: 'Pending' },
        { type: 'ArtifactResolved', status: 'False', reason: 'ResolveFailed' },
      ],
      t1,
    );
    assert.deepEqual(
      list.map((c) => [c.type, c.reason]),
      [
        ['ArtifactResolved', 'ResolveFailed'],
        ['PlanReady', 'Pending'],
      ],
    );
    assert.deepEqual(
      removeCondition(list, 'ArtifactResolved').map((c) => c.type),
      ['PlanReady'],
    );
  });

  it('refuses a reason that is not a CamelCase token', () => {
    assert.throws(
      () => setCondition(undefined, { type: 'Ready', status: 'False', reason: 'bad reason' }, t1),
      ConditionError,
    );
  });

  it('bounds a long message', () => {
    const list = setCondition(
      undefined,
      { type: 'Ready', status: 'False', reason: 'Failed', message: 'x'.repeat(5000) },
      t1,
    );
    assert.equal(Array.from(list[0]!.message).length, MAX_CONDITION_MESSAGE);
  });
});
