// Property tests for the approval validators (src/admission/mapproval.ts, vapproval.ts): no object a client
// can send crashes them; every approval mapproval stamps carries exactly the requesting identity and, for
// the current plan, is admitted by vapproval; an approval differing from the plan in any binding is not.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { ApprovalSubjects } from '../../../src/admission/approval-subjects.ts';
import { mutateApproval } from '../../../src/admission/mapproval.ts';
import type { AdmissionRequest } from '../../../src/admission/review.ts';
import { validateApproval } from '../../../src/admission/vapproval.ts';
import type { PtahSchema } from '../../../src/api/ptah-schema.ts';
import type { PtahSchemaApproval } from '../../../src/api/ptah-schema-approval.ts';
import type { PtahSchemaPlan } from '../../../src/api/ptah-schema-plan.ts';
import { applyPatch } from '../admission/apply-json-patch.ts';
import { runs } from './settings.ts';

const FP = 'sha256:' + 'f'.repeat(64);
const name = fc.stringMatching(/^[a-z][a-z0-9-]{0,20}$/);
const identity = fc.record(
  {
    username: fc.string({ minLength: 1, maxLength: 40 }),
    uid: fc.string({ maxLength: 40 }),
    groups: fc.array(fc.string({ minLength: 1, maxLength: 30 }), { maxLength: 6 }),
  },
  { requiredKeys: ['username'] },
);

function request(object: unknown, userInfo: AdmissionRequest['userInfo'], uid = 'req-1'): AdmissionRequest {
  return {
    uid,
    kind: { group: 'operator.ptah.run', version: 'v1alpha1', kind: 'PtahSchemaApproval' },
    resource: { group: 'operator.ptah.run', version: 'v1alpha1', resource: 'ptahschemaapprovals' },
    namespace: 'shop',
    operation: 'CREATE',
    userInfo,
    object,
  };
}

const world = fc.record({ schema: name, schemaUid: fc.uuid(), plan: name, planUid: fc.uuid() });
type World = typeof world extends fc.Arbitrary<infer T> ? T : never;

function subjectsOf(w: World): ApprovalSubjects {
  const schema = {
    metadata: { name: w.schema, namespace: 'shop', uid: w.schemaUid },
    spec: { policy: {} },
    status: { plan: { name: w.plan, uid: w.planUid, fingerprint: FP, destructive: false } },
  } as unknown as PtahSchema;
  const plan = {
    metadata: { name: w.plan, namespace: 'shop', uid: w.planUid },
    spec: { schemaRef: { name: w.schema, uid: w.schemaUid }, fingerprint: FP },
  } as unknown as PtahSchemaPlan;
  return {
    getSchema: async (_ns, n) => (n === w.schema ? schema : undefined),
    getPlan: async (_ns, n) => (n === w.plan ? plan : undefined),
  };
}

const approvalFor = (w: World): PtahSchemaApproval => ({
  apiVersion: 'operator.ptah.run/v1alpha1',
  kind: 'PtahSchemaApproval',
  metadata: { name: 'a', namespace: 'shop' },
  spec: {
    schemaRef: { name: w.schema, uid: w.schemaUid },
    planRef: { name: w.plan, uid: w.planUid },
    planFingerprint: FP,
  },
});

describe('approval validators (property)', () => {
  it('never throw on whatever object a client sends', async () => {
    const stamp = mutateApproval({ now: () => new Date(0) });
    await fc.assert(
      fc.asyncProperty(
        world,
        fc.oneof(
          fc.anything(),
          fc.record({ spec: fc.anything() }),
          fc.record({
            spec: fc.record({ schemaRef: fc.anything(), planRef: fc.anything(), approver: fc.anything() }),
          }),
        ),
        identity,
        async (w, object, user) => {
          const m = stamp(request(object, user));
          assert.equal(typeof m.allowed, 'boolean');
          const v = await validateApproval(subjectsOf(w))(request(object, user));
          assert.equal(typeof v.allowed, 'boolean');
          if (v.allowed) assert.ok(object !== null && typeof object === 'object');
        },
      ),
      runs(400),
    );
  });

  it('a stamped approval of the current plan round-trips: exactly the requester, admitted', async () => {
    await fc.assert(
      fc.asyncProperty(world, identity, fc.uuid(), async (w, user, requestUid) => {
        const before = approvalFor(w);
        const m = mutateApproval({ now: () => new Date('2026-05-06T07:08:09.123Z') })(
          request(before, user, requestUid),
        );
        if (!m.allowed) return; // an identity too large to record is refused, never truncated
        const after = applyPatch(
          before,
          JSON.parse(Buffer.from(m.patch!, 'base64').toString('utf8')),
        ) as PtahSchemaApproval;
        assert.deepEqual(after.spec.approver, {
          username: user.username,
          ...(user.uid ? { uid: user.uid } : {}),
          ...(user.groups && user.groups.length > 0 ? { groups: user.groups } : {}),
        });
        assert.equal(after.spec.approvedAt, '2026-05-06T07:08:09Z');
        assert.equal(after.spec.mutationRequestUID, requestUid);
        assert.deepEqual(
          { ...after.spec, approver: undefined, approvedAt: undefined, mutationRequestUID: undefined },
          { ...before.spec, approver: undefined, approvedAt: undefined, mutationRequestUID: undefined },
        );
        const v = await validateApproval(subjectsOf(w))(request(after, user, requestUid));
        assert.equal(v.allowed, true, v.status?.message);
      }),
      runs(200),
    );
  });

  it('an approval differing from the current plan in any binding is refused', async () => {
    const binding = fc.constantFrom('schemaUid', 'planName', 'planUid', 'fingerprint', 'schemaName');
    await fc.assert(
      fc.asyncProperty(world, identity, binding, async (w, user, which) => {
        const a = approvalFor(w);
        const spec = {
          ...a.spec,
          ...(which === 'schemaUid' ? { schemaRef: { name: w.schema, uid: `${w.schemaUid}x` } } : {}),
          ...(which === 'schemaName' ? { schemaRef: { name: `${w.schema}x`, uid: w.schemaUid } } : {}),
          ...(which === 'planName' ? { planRef: { name: `${w.plan}x`, uid: w.planUid } } : {}),
          ...(which === 'planUid' ? { planRef: { name: w.plan, uid: `${w.planUid}x` } } : {}),
          ...(which === 'fingerprint' ? { planFingerprint: 'sha256:' + 'e'.repeat(64) } : {}),
          approver: {
            username: user.username,
            ...(user.uid ? { uid: user.uid } : {}),
            ...(user.groups && user.groups.length > 0 ? { groups: user.groups } : {}),
          },
          approvedAt: '2026-05-06T07:08:09Z',
          mutationRequestUID: 'req-1',
        };
        const v = await validateApproval(subjectsOf(w))(request({ ...a, spec }, user));
        assert.equal(v.allowed, false, `admitted with a changed ${which}`);
        assert.ok((v.status?.message ?? '').length > 0, 'the refusal says why');
      }),
      runs(200),
    );
  });
});
