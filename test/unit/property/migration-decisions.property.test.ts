// Property tests for the migration decision webhooks (mmigrationapproval, mmigrationrunacknowledgment,
// vmigrationapproval, vmigrationrunacknowledgment): no object a client can send, on create or update, crashes
// them; what the stamping side builds from a request carries exactly that identity and is admitted by the
// checking side for the run or plan recorded; an acknowledgment naming any other operation is not.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { MigrationSubjects } from '../../../src/admission/approval-subjects.ts';
import { mutateMigrationApproval } from '../../../src/admission/mmigrationapproval.ts';
import { mutateRunAcknowledgment } from '../../../src/admission/mmigrationrunacknowledgment.ts';
import type { AdmissionRequest } from '../../../src/admission/review.ts';
import { validateMigrationApproval } from '../../../src/admission/vmigrationapproval.ts';
import { validateRunAcknowledgment } from '../../../src/admission/vmigrationrunacknowledgment.ts';
import type { PtahMigration } from '../../../src/api/ptah-migration.ts';
import type { PtahMigrationPlan } from '../../../src/api/ptah-migration-plan.ts';
import { applyPatch } from '../admission/apply-json-patch.ts';
import { runs } from './settings.ts';

const FP = 'sha256:' + 'f'.repeat(64);
const digest = fc.stringMatching(/^[0-9a-f]{64}$/).map((h) => `sha256:${h}`);
const name = fc.stringMatching(/^[a-z][a-z0-9-]{0,20}$/);
const identity = fc.record(
  {
    username: fc.string({ minLength: 1, maxLength: 40 }),
    uid: fc.string({ maxLength: 40 }),
    groups: fc.array(fc.string({ minLength: 1, maxLength: 30 }), { maxLength: 6 }),
  },
  { requiredKeys: ['username'] },
);
const world = fc.record({
  migration: name,
  uid: fc.uuid(),
  plan: name,
  planUid: fc.uuid(),
  operation: digest,
});
type World = typeof world extends fc.Arbitrary<infer T> ? T : never;

function request(
  kind: string,
  object: unknown,
  userInfo: AdmissionRequest['userInfo'],
  operation: AdmissionRequest['operation'] = 'CREATE',
  oldObject?: unknown,
): AdmissionRequest {
  return {
    uid: 'req-1',
    kind: { group: 'operator.ptah.run', version: 'v1alpha1', kind },
    resource: { group: 'operator.ptah.run', version: 'v1alpha1', resource: 'x' },
    namespace: 'shop',
    operation,
    userInfo,
    object,
    ...(oldObject !== undefined ? { oldObject } : {}),
  };
}

function subjectsOf(w: World): MigrationSubjects {
  const migration = {
    metadata: { name: w.migration, namespace: 'shop', uid: w.uid },
    spec: { policy: { apply: 'OnApproval' } },
    status: {
      plan: { name: w.plan, uid: w.planUid, fingerprint: FP, createdAt: '2026-01-01T00:00:00Z' },
      unresolvedRun: {
        outcome: 'Unknown',
        operationId: w.operation,
        jobName: 'j',
        recordedAt: '2026-01-01T00:00:00Z',
      },
    },
  } as unknown as PtahMigration;
  const plan = {
    metadata: { name: w.plan, namespace: 'shop', uid: w.planUid },
    spec: {
      migrationRef: { name: w.migration, uid: w.uid },
      fingerprint: FP,
      binding: { transactionMode: 'unset' },
    },
  } as unknown as PtahMigrationPlan;
  return {
    getMigration: async (_ns, n) => (n === w.migration ? migration : undefined),
    getMigrationPlan: async (_ns, n) => (n === w.plan ? plan : undefined),
  };
}

const stamped = (before: unknown, d: { allowed: boolean; patch?: string }) =>
  d.patch === undefined
    ? before
    : applyPatch(before, JSON.parse(Buffer.from(d.patch, 'base64').toString('utf8')));

describe('migration decision webhooks (property)', () => {
  it('never throw on whatever a client sends, created or updated', async () => {
    const anyObject = fc.oneof(
      fc.anything(),
      fc.record({ spec: fc.anything() }),
      fc.record({
        spec: fc.record({
          migrationRef: fc.anything(),
          planRef: fc.anything(),
          operationId: fc.anything(),
          approver: fc.anything(),
          acknowledgedBy: fc.anything(),
        }),
      }),
    );
    await fc.assert(
      fc.asyncProperty(
        world,
        anyObject,
        anyObject,
        identity,
        fc.constantFrom('CREATE', 'UPDATE') as fc.Arbitrary<'CREATE' | 'UPDATE'>,
        async (w, object, old, user, op) => {
          for (const [kind, stamp, validate] of [
            ['PtahMigrationApproval', mutateMigrationApproval(), validateMigrationApproval(subjectsOf(w))],
            [
              'PtahMigrationRunAcknowledgment',
              mutateRunAcknowledgment(),
              validateRunAcknowledgment(subjectsOf(w)),
            ],
          ] as const) {
            assert.equal(typeof stamp(request(kind, object, user, op, old)).allowed, 'boolean');
            const v = await validate(request(kind, object, user, op, old));
            assert.equal(typeof v.allowed, 'boolean');
            if (v.allowed && op === 'CREATE') assert.ok(object !== null && typeof object === 'object');
          }
        },
      ),
      runs(300),
    );
  });

  it('a stamped acknowledgment of the recorded run is admitted, with exactly the requester; any other operation is not', async () => {
    await fc.assert(
      fc.asyncProperty(world, identity, digest, async (w, user, other) => {
        const ack = (operationId: string) => ({
          apiVersion: 'operator.ptah.run/v1alpha1',
          kind: 'PtahMigrationRunAcknowledgment',
          metadata: { name: 'a', namespace: 'shop' },
          spec: {
            migrationRef: { name: w.migration, uid: w.uid },
            operationId,
            acknowledgedBy: { username: 'forged', groups: ['system:masters'] },
          },
        });
        const kind = 'PtahMigrationRunAcknowledgment';
        const m = mutateRunAcknowledgment()(request(kind, ack(w.operation), user));
        if (!m.allowed) return; // an identity too large to record is refused, never truncated
        const after = stamped(ack(w.operation), m) as { spec: { acknowledgedBy: unknown } };
        assert.deepEqual(after.spec.acknowledgedBy, {
          username: user.username,
          ...(user.uid ? { uid: user.uid } : {}),
          ...(user.groups && user.groups.length > 0 ? { groups: user.groups } : {}),
        });
        const validate = validateRunAcknowledgment(subjectsOf(w));
        assert.equal((await validate(request(kind, after, user))).allowed, true);
        if (other !== w.operation) {
          const wrong = stamped(ack(other), mutateRunAcknowledgment()(request(kind, ack(other), user)));
          assert.equal((await validate(request(kind, wrong, user))).allowed, false);
        }
        const approval = {
          spec: {
            migrationRef: { name: w.migration, uid: w.uid },
            planRef: { name: w.plan, uid: w.planUid },
            planFingerprint: FP,
          },
        };
        const a = stamped(
          approval,
          mutateMigrationApproval()(request('PtahMigrationApproval', approval, user)),
        );
        // The migration records an unresolved run: no plan of it is approved until that is settled.
        const v = await validateMigrationApproval(subjectsOf(w))(request('PtahMigrationApproval', a, user));
        assert.equal(v.allowed, false);
        assert.match(v.status?.message ?? '', /has an unresolved run \(Unknown/);
      }),
      runs(200),
    );
  });
});
