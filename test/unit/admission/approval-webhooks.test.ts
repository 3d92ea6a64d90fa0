import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mutateApproval } from '../../../src/admission/mapproval.ts';
import { validateApproval } from '../../../src/admission/vapproval.ts';
import type { ApprovalSubjects } from '../../../src/admission/approval-subjects.ts';
import type { AdmissionDecision, AdmissionRequest } from '../../../src/admission/review.ts';
import type { PtahSchemaApproval } from '../../../src/api/ptah-schema-approval.ts';
import type { PtahSchema } from '../../../src/api/ptah-schema.ts';
import type { PtahSchemaPlan } from '../../../src/api/ptah-schema-plan.ts';
import { applyPatch } from './apply-json-patch.ts';

const FP = 'sha256:' + 'f'.repeat(64);
const OTHER_FP = 'sha256:' + 'e'.repeat(64);
const NOW = new Date('2026-03-04T05:06:07.891Z');

function approval(specExtra: Partial<PtahSchemaApproval['spec']> = {}): PtahSchemaApproval {
  return {
    apiVersion: 'operator.ptah.run/v1alpha1',
    kind: 'PtahSchemaApproval',
    metadata: { name: 'approve-1', namespace: 'shop' },
    spec: {
      schemaRef: { name: 'orders', uid: 'schema-uid' },
      planRef: { name: 'orders-plan-1', uid: 'plan-uid' },
      planFingerprint: FP,
      ...specExtra,
    },
  };
}

function request(
  object: unknown,
  userInfo: AdmissionRequest['userInfo'],
  operation: AdmissionRequest['operation'] = 'CREATE',
): AdmissionRequest {
  return {
    uid: 'req-123',
    kind: { group: 'operator.ptah.run', version: 'v1alpha1', kind: 'PtahSchemaApproval' },
    resource: { group: 'operator.ptah.run', version: 'v1alpha1', resource: 'ptahschemaapprovals' },
    namespace: 'shop',
    operation,
    userInfo,
    object,
  };
}

function patchedObject(before: unknown, d: AdmissionDecision): unknown {
  assert.equal(d.allowed, true);
  if (d.patch === undefined) return before;
  return applyPatch(before, JSON.parse(Buffer.from(d.patch, 'base64').toString('utf8')));
}

describe('mapproval', () => {
  const stamp = mutateApproval({ now: () => NOW });

  it('replaces a forged approver, time and request UID with the authenticated request', () => {
    const forged = approval({
      approver: { username: 'ceo@example.com', uid: 'forged-uid', groups: ['system:masters'] },
      approvedAt: '1999-01-01T00:00:00Z',
      mutationRequestUID: 'forged-request',
    });
    const d = stamp(
      request(forged, { username: 'alice', uid: 'alice-uid', groups: ['approvers', 'system:authenticated'] }),
    );
    const after = patchedObject(forged, d) as PtahSchemaApproval;
    assert.deepEqual(after.spec.approver, {
      username: 'alice',
      uid: 'alice-uid',
      groups: ['approvers', 'system:authenticated'],
    });
    assert.equal(after.spec.approvedAt, '2026-03-04T05:06:07Z');
    assert.equal(after.spec.mutationRequestUID, 'req-123');
    assert.equal(after.spec.planFingerprint, FP, 'the bindings are the client’s and are kept');
  });

  it('a client-written uid or groups does not survive an identity without them', () => {
    const forged = approval({ approver: { username: 'x', uid: 'forged', groups: ['g'] } });
    const after = patchedObject(forged, stamp(request(forged, { username: 'bob' }))) as PtahSchemaApproval;
    assert.deepEqual(after.spec.approver, { username: 'bob' });
  });

  it('stamps an approval the client left unstamped', () => {
    const plain = approval();
    const after = patchedObject(
      plain,
      stamp(request(plain, { username: 'carol', groups: ['a'] })),
    ) as PtahSchemaApproval;
    assert.deepEqual(after.spec.approver, { username: 'carol', groups: ['a'] });
  });

  it('refuses a request without a username or with too many groups', () => {
    assert.equal(stamp(request(approval(), {})).allowed, false);
    const groups = Array.from({ length: 65 }, (_, i) => `g${i}`);
    const d = stamp(request(approval(), { username: 'dave', groups }));
    assert.equal(d.allowed, false);
    assert.match(d.status?.message ?? '', /64 groups/);
  });

  it('leaves anything but a create alone', () => {
    const d = stamp(request(approval(), { username: 'x' }, 'UPDATE'));
    assert.deepEqual([d.allowed, d.patch], [true, undefined]);
  });
});

describe('vapproval', () => {
  const schema = (
    plan?: { name: string; uid: string; fingerprint: string },
    uid = 'schema-uid',
    extra: { policy?: Record<string, unknown>; destructive?: boolean; phase?: string; reason?: string } = {},
  ): PtahSchema =>
    ({
      apiVersion: 'operator.ptah.run/v1alpha1',
      kind: 'PtahSchema',
      metadata: { name: 'orders', namespace: 'shop', uid },
      spec: extra.policy ? { policy: extra.policy } : {},
      status:
        plan === undefined
          ? {}
          : {
              ...(extra.phase ? { phase: extra.phase } : {}),
              ...(extra.reason
                ? { conditions: [{ type: 'Ready', status: 'False', reason: extra.reason, message: '' }] }
                : {}),
              plan: {
                ...plan,
                contentDigest: FP,
                destructive: extra.destructive ?? false,
                statementCount: 1,
                createdAt: '2026-01-01T00:00:00Z',
              },
            },
    }) as unknown as PtahSchema;
  const plan = (uid = 'plan-uid', fingerprint = FP, schemaUid = 'schema-uid'): PtahSchemaPlan =>
    ({
      apiVersion: 'operator.ptah.run/v1alpha1',
      kind: 'PtahSchemaPlan',
      metadata: { name: 'orders-plan-1', namespace: 'shop', uid },
      spec: { schemaRef: { name: 'orders', uid: schemaUid }, fingerprint },
    }) as unknown as PtahSchemaPlan;
  const subjects = (s: PtahSchema | undefined, p: PtahSchemaPlan | undefined): ApprovalSubjects => ({
    getSchema: async (ns, name) => (ns === 'shop' && name === s?.metadata.name ? s : undefined),
    getPlan: async (ns, name) => (ns === 'shop' && name === p?.metadata.name ? p : undefined),
  });
  const stamped = (extra: Partial<PtahSchemaApproval['spec']> = {}) =>
    approval({
      approver: { username: 'alice' },
      approvedAt: '2026-01-01T00:00:00Z',
      mutationRequestUID: 'r',
      ...extra,
    });
  const current = { name: 'orders-plan-1', uid: 'plan-uid', fingerprint: FP };

  const cases: {
    name: string;
    s: PtahSchema | undefined;
    p: PtahSchemaPlan | undefined;
    a: PtahSchemaApproval;
    ok: boolean;
    why?: RegExp;
  }[] = [
    { name: 'the exact current plan', s: schema(current), p: plan(), a: stamped(), ok: true },
    {
      name: 'a wrong fingerprint',
      s: schema(current),
      p: plan(),
      a: stamped({ planFingerprint: OTHER_FP }),
      ok: false,
      why: /fingerprint/,
    },
    {
      name: 'a stale plan',
      s: schema({ ...current, name: 'orders-plan-2', uid: 'plan-2' }),
      p: plan(),
      a: stamped(),
      ok: false,
      why: /current plan/,
    },
    {
      name: 'a recreated plan (same name, other UID)',
      s: schema(current),
      p: plan('plan-uid-2'),
      a: stamped(),
      ok: false,
      why: /with UID plan-uid, but the plan of that name has another UID, plan-uid-2/,
    },
    {
      name: 'a recreated schema',
      s: schema(current, 'schema-uid-2'),
      p: plan(),
      a: stamped(),
      ok: false,
      why: /names PtahSchema orders with UID schema-uid, but the PtahSchema of that name has UID schema-uid-2/,
    },
    { name: 'a schema with no plan', s: schema(), p: plan(), a: stamped(), ok: false, why: /not waiting/ },
    { name: 'a missing schema', s: undefined, p: plan(), a: stamped(), ok: false, why: /does not exist/ },
    {
      name: 'a plan object with another fingerprint',
      s: schema(current),
      p: plan('plan-uid', OTHER_FP),
      a: stamped(),
      ok: false,
      why: /plan object/,
    },
    {
      name: 'a plan of another schema',
      s: schema(current),
      p: plan('plan-uid', FP, 'other'),
      a: stamped(),
      ok: false,
      why: /another PtahSchema/,
    },
    {
      name: 'an approver typed by the client (mapproval did not run)',
      s: schema(current),
      p: plan(),
      a: stamped({ approver: { username: 'ceo@example.com', groups: ['system:masters'] } }),
      ok: false,
      why: /not the user making this request/,
    },
    {
      name: 'a plan the policy will never apply (apply Never)',
      s: schema(current, 'schema-uid', { policy: { apply: 'Never' } }),
      p: plan(),
      a: stamped(),
      ok: false,
      why: /spec\.policy\.apply Never: no plan is applied/,
    },
    {
      name: 'a destructive plan while allowDestructive is false',
      s: schema(current, 'schema-uid', { destructive: true }),
      p: plan(),
      a: stamped(),
      ok: false,
      why: /is destructive and PtahSchema orders has spec\.policy\.allowDestructive false/,
    },
    {
      name: 'a destructive plan while allowDestructive is true',
      s: schema(current, 'schema-uid', { destructive: true, policy: { allowDestructive: true } }),
      p: plan(),
      a: stamped(),
      ok: true,
    },
    {
      name: 'a plan of a Blocked resource, naming the block',
      s: schema(current, 'schema-uid', { phase: 'Blocked', reason: 'RealmConflict' }),
      p: plan(),
      a: stamped(),
      ok: false,
      why: /is Blocked \(RealmConflict\)/,
    },
    {
      name: 'an unstamped approval',
      s: schema(current),
      p: plan(),
      a: approval(),
      ok: false,
      why: /not stamped/,
    },
  ];
  for (const c of cases) {
    it(`${c.ok ? 'admits' : 'refuses'} ${c.name}`, async () => {
      const d = await validateApproval(subjects(c.s, c.p))(request(c.a, { username: 'alice' }));
      assert.equal(d.allowed, c.ok, d.status?.message);
      if (c.why !== undefined) assert.match(d.status?.message ?? '', c.why);
    });
  }

  it('fails closed when the API cannot be read', async () => {
    const broken: ApprovalSubjects = {
      getSchema: async () => {
        throw new Error('connection refused');
      },
      getPlan: async () => undefined,
    };
    const d = await validateApproval(broken)(request(stamped(), { username: 'alice' }));
    assert.equal(d.allowed, false);
    assert.equal(d.status?.code, 500);
  });
});
