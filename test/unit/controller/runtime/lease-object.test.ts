import { test } from 'node:test';
import assert from 'node:assert/strict';
import { leaseSpecFor } from '../../../../src/controller/runtime/lease-object.ts';
import { leaseStateOf } from '../../../../src/controller/runtime/lease.ts';

test('Lease times serialise with the six fractional digits the API server requires', () => {
  const at = new Date('2026-11-30T05:00:00.123Z');
  const spec = leaseSpecFor({
    holderIdentity: 'me',
    leaseDurationSeconds: 15,
    acquireTime: at,
    renewTime: at,
  });
  const wire = JSON.parse(JSON.stringify(spec)) as Record<string, unknown>;
  assert.equal(wire['renewTime'], '2026-11-30T05:00:00.123000Z');
  assert.equal(wire['acquireTime'], '2026-11-30T05:00:00.123000Z');
});

test('a Lease read back gives the state it was written from', () => {
  const at = new Date('2026-11-30T05:00:00.123Z');
  const state = {
    holderIdentity: 'me',
    leaseDurationSeconds: 15,
    acquireTime: at,
    renewTime: at,
    leaseTransitions: 2,
  };
  assert.deepEqual(leaseStateOf(leaseSpecFor(state)), state);
});
