import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decideLease, leaseExpiry } from '../../../../src/controller/runtime/lease.ts';

const t0 = new Date('2026-01-01T00:00:00Z');
const plus = (s: number): Date => new Date(t0.getTime() + s * 1000);

test('a missing Lease is created for the asker', () => {
  const d = decideLease(undefined, 'me', 15, t0);
  assert.equal(d.action, 'create');
  assert.equal(d.action === 'create' && d.next.holderIdentity, 'me');
});

test('the holder renews without a transition', () => {
  const d = decideLease(
    { holderIdentity: 'me', leaseDurationSeconds: 15, renewTime: t0, leaseTransitions: 3 },
    'me',
    15,
    plus(5),
  );
  assert.equal(d.action, 'renew');
  if (d.action === 'renew') {
    assert.equal(d.next.leaseTransitions, 3);
    assert.deepEqual(d.next.renewTime, plus(5));
  }
});

test('another live holder makes the asker wait until expiry', () => {
  const d = decideLease(
    { holderIdentity: 'other', leaseDurationSeconds: 15, renewTime: t0 },
    'me',
    15,
    plus(14),
  );
  assert.deepEqual(d, { action: 'wait', holder: 'other', expiresAt: plus(15) });
});

test('an expired or released Lease is taken over with one more transition', () => {
  const expired = decideLease(
    { holderIdentity: 'other', leaseDurationSeconds: 15, renewTime: t0, leaseTransitions: 1 },
    'me',
    15,
    plus(16),
  );
  assert.equal(expired.action, 'takeover');
  if (expired.action === 'takeover') {
    assert.equal(expired.previousHolder, 'other');
    assert.equal(expired.next.leaseTransitions, 2);
  }
  const released = decideLease(
    { holderIdentity: '', leaseDurationSeconds: 15, renewTime: t0 },
    'me',
    15,
    plus(1),
  );
  assert.equal(released.action, 'takeover');
});

test('expiry comes from the renew time, else the acquire time', () => {
  assert.deepEqual(leaseExpiry({ leaseDurationSeconds: 10, acquireTime: t0 }), plus(10));
  assert.equal(leaseExpiry({ acquireTime: t0 }), undefined);
});
