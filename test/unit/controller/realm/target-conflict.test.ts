import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { targetConflict, type TargetClaimant } from '../../../../src/controller/realm/target-conflict.ts';

const DB = 'sha256:' + '1'.repeat(64);
const claimant = (name: string, over: Partial<TargetClaimant> = {}): TargetClaimant => ({
  namespace: 'ns',
  name,
  uid: `uid-${name}`,
  createdAt: '2026-01-01T00:00:00.000Z',
  coordinationDigest: `realm-${name}`,
  identityDigest: DB,
  active: true,
  applying: false,
  ...over,
});

describe('two realms on one database', () => {
  const early = claimant('early', { createdAt: '2026-01-01T00:00:00.000Z' });
  const late = claimant('late', { createdAt: '2026-01-02T00:00:00.000Z' });

  it('the later resource is the one blocked, and it is told which resource came first', () => {
    assert.deepEqual(targetConflict(late, DB, [early, late]), {
      other: 'ns/early',
      later: true,
      otherApplying: false,
    });
    assert.deepEqual(targetConflict(early, DB, [early, late]), {
      other: 'ns/late',
      later: false,
      otherApplying: false,
    });
  });

  it('the earlier one waits while the later one still has an Apply in flight', () => {
    const applying = { ...late, applying: true };
    assert.equal(targetConflict(early, DB, [early, applying])?.otherApplying, true);
  });

  it('ignores the same realm (its Lease orders them), other databases, unknown identities and idle deleted ones', () => {
    const sameRealm = claimant('same', {
      coordinationDigest: late.coordinationDigest,
      createdAt: '2025-01-01T00:00:00.000Z',
    });
    const elsewhere = claimant('elsewhere', { identityDigest: 'sha256:' + '2'.repeat(64) });
    const unread = claimant('unread', { identityDigest: undefined });
    const gone = claimant('gone', { active: false, createdAt: '2025-01-01T00:00:00.000Z' });
    assert.equal(targetConflict(late, DB, [late, sameRealm, elsewhere, unread, gone]), undefined);
    assert.equal(targetConflict(late, undefined, [early, late]), undefined, 'nothing known before a read');
    assert.equal(
      targetConflict(late, DB, [{ ...gone, applying: true }])?.later,
      true,
      'an Apply in flight still counts',
    );
  });

  it('ties on creation time break by UID, so both sides agree who is later', () => {
    const a = claimant('a', { uid: 'uid-a', createdAt: '2026-01-01T00:00:00.000Z' });
    const b = claimant('b', { uid: 'uid-b', createdAt: '2026-01-01T00:00:00.000Z' });
    assert.equal(targetConflict(a, DB, [a, b])?.later, false);
    assert.equal(targetConflict(b, DB, [a, b])?.later, true);
  });
});
