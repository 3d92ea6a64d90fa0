// The migration decision webhooks as functions: mmigrationapproval and mmigrationrunacknowledgment stamp
// the requesting identity over whatever the client wrote; vmigrationapproval admits only the exact current
// plan of a migration that would run it; vmigrationrunacknowledgment only the operation id of the run the
// migration records as unresolved; neither admits an edit of what the decision binds.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { MigrationSubjects } from '../../../src/admission/approval-subjects.ts';
import { mutateMigrationApproval } from '../../../src/admission/mmigrationapproval.ts';
import { mutateRunAcknowledgment } from '../../../src/admission/mmigrationrunacknowledgment.ts';
import type { AdmissionDecision, AdmissionRequest } from '../../../src/admission/review.ts';
import { validateMigrationApproval } from '../../../src/admission/vmigrationapproval.ts';
import { validateRunAcknowledgment } from '../../../src/admission/vmigrationrunacknowledgment.ts';
import type { PtahMigration } from '../../../src/api/ptah-migration.ts';
import type {
  PtahMigrationApproval,
  PtahMigrationRunAcknowledgment,
} from '../../../src/api/ptah-migration-approval.ts';
import type { PtahMigrationPlan } from '../../../src/api/ptah-migration-plan.ts';
import { applyPatch } from './apply-json-patch.ts';

const FP = 'sha256:' + 'f'.repeat(64);
const OTHER_FP = 'sha256:' + 'e'.repeat(64);
const OP = 'sha256:' + 'a'.repeat(64);
const OTHER_OP = 'sha256:' + 'b'.repeat(64);
const NOW = new Date('2026-03-04T05:06:07.891Z');
const ALICE = { username: 'alice', uid: 'alice-uid', groups: ['approvers', 'system:authenticated'] };

function request(
  kind: string,
  object: unknown,
  userInfo: AdmissionRequest['userInfo'],
  operation: AdmissionRequest['operation'] = 'CREATE',
  oldObject?: unknown,
): AdmissionRequest {
  return {
    uid: 'req-123',
    kind: { group: 'operator.ptah.run', version: 'v1alpha1', kind },
    resource: { group: 'operator.ptah.run', version: 'v1alpha1', resource: `${kind.toLowerCase()}s` },
    namespace: 'shop',
    operation,
    userInfo,
    object,
    ...(oldObject !== undefined ? { oldObject } : {}),
  };
}

function patchedObject(before: unknown, d: AdmissionDecision): unknown {
  assert.equal(d.allowed, true, d.status?.message);
  if (d.patch === undefined) return before;
  return applyPatch(before, JSON.parse(Buffer.from(d.patch, 'base64').toString('utf8')));
}

const approval = (extra: Partial<PtahMigrationApproval['spec']> = {}): PtahMigrationApproval => ({
  apiVersion: 'operator.ptah.run/v1alpha1',
  kind: 'PtahMigrationApproval',
  metadata: { name: 'approve-1', namespace: 'shop' },
  spec: {
    migrationRef: { name: 'orders', uid: 'migration-uid' },
    planRef: { name: 'ptah-mplan-1', uid: 'plan-uid' },
    planFingerprint: FP,
    ...extra,
  },
});

const acknowledgment = (
  extra: Partial<PtahMigrationRunAcknowledgment['spec']> = {},
): PtahMigrationRunAcknowledgment => ({
  apiVersion: 'operator.ptah.run/v1alpha1',
  kind: 'PtahMigrationRunAcknowledgment',
  metadata: { name: 'ack-1', namespace: 'shop' },
  spec: { migrationRef: { name: 'orders', uid: 'migration-uid' }, operationId: OP, ...extra },
});

describe('mmigrationapproval and mmigrationrunacknowledgment', () => {
  it('replace a forged approver, time and request UID with the authenticated request', () => {
    const forged = approval({
      approver: { username: 'ceo@example.com', uid: 'forged', groups: ['system:masters'] },
      approvedAt: '1999-01-01T00:00:00Z',
      mutationRequestUID: 'forged-request',
    });
    const d = mutateMigrationApproval({ now: () => NOW })(request('PtahMigrationApproval', forged, ALICE));
    const after = patchedObject(forged, d) as PtahMigrationApproval;
    assert.deepEqual(after.spec.approver, ALICE);
    assert.equal(after.spec.approvedAt, '2026-03-04T05:06:07Z');
    assert.equal(after.spec.mutationRequestUID, 'req-123');
    assert.equal(after.spec.planFingerprint, FP, 'what the approval names is the client’s and is kept');
  });

  it('replace a forged acknowledgedBy, and stamp acknowledgedAt and the request UID', () => {
    const forged = acknowledgment({
      acknowledgedBy: { username: 'dba-lead', uid: 'forged', groups: ['system:masters'] },
      acknowledgedAt: '1999-01-01T00:00:00Z',
      mutationRequestUID: 'forged-request',
    });
    const stamp = mutateRunAcknowledgment({ now: () => NOW });
    const after = patchedObject(
      forged,
      stamp(request('PtahMigrationRunAcknowledgment', forged, { username: 'bob' })),
    ) as PtahMigrationRunAcknowledgment;
    assert.deepEqual(after.spec.acknowledgedBy, { username: 'bob' }, 'no forged uid or group survives');
    assert.equal(after.spec.acknowledgedAt, '2026-03-04T05:06:07Z');
    assert.equal(after.spec.mutationRequestUID, 'req-123');
    assert.equal(after.spec.operationId, OP);
    assert.equal((after.spec as Record<string, unknown>)['approver'], undefined);
  });

  it('refuse an anonymous request, another kind, and leave anything but a create alone', () => {
    const stamp = mutateRunAcknowledgment({ now: () => NOW });
    const anonymous = stamp(request('PtahMigrationRunAcknowledgment', acknowledgment(), {}));
    assert.equal(anonymous.allowed, false);
    assert.match(anonymous.status?.message ?? '', /an acknowledgment needs an authenticated username/);
    const wrongKind = stamp(request('PtahMigrationApproval', approval(), ALICE));
    assert.match(
      wrongKind.status?.message ?? '',
      /mmigrationrunacknowledgment stamps PtahMigrationRunAcknowledgment, not PtahMigrationApproval/,
    );
    const update = stamp(request('PtahMigrationRunAcknowledgment', acknowledgment(), ALICE, 'UPDATE'));
    assert.deepEqual([update.allowed, update.patch], [true, undefined]);
  });
});

interface MigrationState {
  uid?: string;
  plan?: { name: string; uid: string; fingerprint: string } | undefined;
  apply?: 'Never' | 'OnApproval' | 'Always';
  transactionMode?: 'file' | 'none';
  phase?: string;
  blockedReason?: string;
  unresolved?: { operationId: string; outcome: 'Partial' | 'Unknown' };
}

const CURRENT = { name: 'ptah-mplan-1', uid: 'plan-uid', fingerprint: FP };

function migration(s: MigrationState = {}): PtahMigration {
  const plan = 'plan' in s ? s.plan : CURRENT;
  return {
    apiVersion: 'operator.ptah.run/v1alpha1',
    kind: 'PtahMigration',
    metadata: { name: 'orders', namespace: 'shop', uid: s.uid ?? 'migration-uid' },
    spec: {
      policy: {
        apply: s.apply ?? 'OnApproval',
        lockTimeout: '5m',
        ...(s.transactionMode ? { transactionMode: s.transactionMode } : {}),
      },
    },
    status: {
      ...(s.phase ? { phase: s.phase } : {}),
      ...(s.blockedReason
        ? {
            conditions: [
              {
                type: 'Blocked',
                status: 'True',
                reason: s.blockedReason,
                message: '',
                lastTransitionTime: '2026-01-01T00:00:00Z',
              },
            ],
          }
        : {}),
      ...(plan ? { plan: { ...plan, createdAt: '2026-01-01T00:00:00Z' } } : {}),
      ...(s.unresolved
        ? {
            unresolvedRun: {
              ...s.unresolved,
              jobName: 'ptah-m-apply-orders-0123456789abcdef',
              recordedAt: '2026-01-01T00:00:00Z',
            },
          }
        : {}),
    },
  } as unknown as PtahMigration;
}

function plan(
  extra: { uid?: string; fingerprint?: string; owner?: string; transactionMode?: string } = {},
): PtahMigrationPlan {
  return {
    apiVersion: 'operator.ptah.run/v1alpha1',
    kind: 'PtahMigrationPlan',
    metadata: { name: 'ptah-mplan-1', namespace: 'shop', uid: extra.uid ?? 'plan-uid' },
    spec: {
      migrationRef: { name: 'orders', uid: extra.owner ?? 'migration-uid' },
      fingerprint: extra.fingerprint ?? FP,
      binding: { transactionMode: extra.transactionMode ?? 'unset' },
    },
  } as unknown as PtahMigrationPlan;
}

function subjects(m: PtahMigration | undefined, p: PtahMigrationPlan | undefined): MigrationSubjects {
  return {
    getMigration: async (ns, name) => (ns === 'shop' && name === m?.metadata.name ? m : undefined),
    getMigrationPlan: async (ns, name) => (ns === 'shop' && name === p?.metadata.name ? p : undefined),
  };
}

const stampedApproval = (extra: Partial<PtahMigrationApproval['spec']> = {}) =>
  approval({ approver: ALICE, approvedAt: '2026-01-01T00:00:00Z', mutationRequestUID: 'r', ...extra });
const stampedAck = (extra: Partial<PtahMigrationRunAcknowledgment['spec']> = {}) =>
  acknowledgment({
    acknowledgedBy: ALICE,
    acknowledgedAt: '2026-01-01T00:00:00Z',
    mutationRequestUID: 'r',
    ...extra,
  });

describe('vmigrationapproval', () => {
  const cases: {
    name: string;
    m: PtahMigration | undefined;
    p?: PtahMigrationPlan | undefined;
    a?: PtahMigrationApproval;
    ok: boolean;
    why?: RegExp;
  }[] = [
    { name: 'the exact current plan', m: migration(), ok: true },
    {
      name: 'the exact plan under apply Always',
      m: migration({ apply: 'Always', transactionMode: 'none' }),
      p: plan({ transactionMode: 'none' }),
      ok: true,
    },
    {
      name: 'a wrong fingerprint',
      m: migration(),
      a: stampedApproval({ planFingerprint: OTHER_FP }),
      ok: false,
      why: /the approval names another fingerprint than the current plan/,
    },
    {
      name: 'a plan that is no longer current',
      m: migration({ plan: { ...CURRENT, name: 'ptah-mplan-2', uid: 'plan-2' } }),
      ok: false,
      why: /the approval names plan ptah-mplan-1, but the current plan of orders is ptah-mplan-2/,
    },
    {
      name: 'a migration waiting on no plan',
      m: migration({ plan: undefined }),
      ok: false,
      why: /PtahMigration orders is not waiting on any plan/,
    },
    {
      name: 'a recreated migration (same name, other UID)',
      m: migration({ uid: 'migration-uid-2' }),
      ok: false,
      why: /names PtahMigration orders with UID migration-uid, but the PtahMigration of that name has UID migration-uid-2/,
    },
    { name: 'a missing migration', m: undefined, ok: false, why: /PtahMigration orders does not exist/ },
    {
      name: 'a missing plan object',
      m: migration(),
      p: undefined,
      ok: false,
      why: /PtahMigrationPlan ptah-mplan-1 does not exist/,
    },
    {
      name: 'a recreated plan (same name, other UID)',
      m: migration(),
      p: plan({ uid: 'plan-uid-2' }),
      ok: false,
      why: /with UID plan-uid, but the plan of that name has another UID, plan-uid-2/,
    },
    {
      name: 'a plan object with another fingerprint',
      m: migration(),
      p: plan({ fingerprint: OTHER_FP }),
      ok: false,
      why: /the plan object carries another fingerprint/,
    },
    {
      name: 'a plan of another migration',
      m: migration(),
      p: plan({ owner: 'other' }),
      ok: false,
      why: /PtahMigrationPlan ptah-mplan-1 belongs to another PtahMigration/,
    },
    {
      name: 'a plan the policy never applies (apply Never)',
      m: migration({ apply: 'Never' }),
      ok: false,
      why: /PtahMigration orders has spec\.policy\.apply Never: no plan is applied/,
    },
    {
      name: 'a plan of a migration with an unresolved run',
      m: migration({ unresolved: { operationId: OP, outcome: 'Partial' } }),
      ok: false,
      why: /has an unresolved run \(Partial, operation sha256:a{64}, Job ptah-m-apply-orders-0123456789abcdef\): no plan is applied until it is settled; check the database, then `kubectl ptah migration acknowledge orders`/,
    },
    {
      name: 'a plan of a Blocked migration, naming the block',
      m: migration({ phase: 'Blocked', blockedReason: 'HistoryDirty' }),
      ok: false,
      why: /PtahMigration orders is Blocked \(HistoryDirty\): its plan will not be applied/,
    },
    {
      name: 'a plan made under another transaction mode than the policy asks now',
      m: migration({ transactionMode: 'none' }),
      p: plan({ transactionMode: 'unset' }),
      ok: false,
      why: /spec\.policy\.transactionMode of PtahMigration orders is none, but plan ptah-mplan-1 was made under unset: the plan will be replaced/,
    },
    {
      name: 'an approver typed by the client (mmigrationapproval did not run)',
      m: migration(),
      a: stampedApproval({ approver: { username: 'ceo@example.com', groups: ['system:masters'] } }),
      ok: false,
      why: /the approver recorded is not the user making this request; the approval must be stamped by the mmigrationapproval webhook/,
    },
    {
      name: 'an unstamped approval',
      m: migration(),
      a: approval(),
      ok: false,
      why: /the approval is not stamped by admission; is the mmigrationapproval webhook registered\?/,
    },
    {
      name: 'an approval without a planRef',
      m: migration(),
      a: { ...stampedApproval(), spec: { ...stampedApproval().spec, planRef: 'x' as never } },
      ok: false,
      why: /needs migrationRef and planRef \(name and uid\) and planFingerprint/,
    },
  ];
  for (const c of cases) {
    it(`${c.ok ? 'admits' : 'refuses'} ${c.name}`, async () => {
      const p = 'p' in c ? c.p : plan();
      const d = await validateMigrationApproval(subjects(c.m, p))(
        request('PtahMigrationApproval', c.a ?? stampedApproval(), ALICE),
      );
      assert.equal(d.allowed, c.ok, d.status?.message);
      if (c.why !== undefined) assert.match(d.status?.message ?? '', c.why);
    });
  }

  it('refuses an edit of what an approval binds, naming the fields, and admits a metadata-only update', async () => {
    const validate = validateMigrationApproval(subjects(migration(), plan()));
    const old = stampedApproval();
    const edited = stampedApproval({
      planRef: { name: 'ptah-mplan-2', uid: 'p2' },
      planFingerprint: OTHER_FP,
    });
    const d = await validate(
      request('PtahMigrationApproval', edited, { username: 'mallory' }, 'UPDATE', old),
    );
    assert.equal(d.allowed, false);
    assert.equal(
      d.status?.message,
      'PtahMigrationApproval approve-1 binds what it names and who decided, and is never edited (changed: spec.planFingerprint, spec.planRef); create another approval instead',
    );
    const restamped = stampedApproval({ approver: { username: 'mallory' } });
    assert.match(
      (await validate(request('PtahMigrationApproval', restamped, { username: 'mallory' }, 'UPDATE', old)))
        .status?.message ?? '',
      /\(changed: spec\.approver\)/,
    );
    const labelled = { ...old, metadata: { ...old.metadata, labels: { team: 'db' } } };
    const ok = await validate(request('PtahMigrationApproval', labelled, { username: 'x' }, 'UPDATE', old));
    assert.equal(ok.allowed, true);
  });

  it('fails closed when the API cannot be read', async () => {
    const broken: MigrationSubjects = {
      getMigration: async () => {
        throw new Error('connection refused');
      },
      getMigrationPlan: async () => undefined,
    };
    const d = await validateMigrationApproval(broken)(
      request('PtahMigrationApproval', stampedApproval(), ALICE),
    );
    assert.equal(d.allowed, false);
    assert.equal(d.status?.code, 500);
    assert.match(d.status?.message ?? '', /could not read the migration or plan: connection refused/);
  });
});

describe('vmigrationrunacknowledgment', () => {
  const partial = migration({ unresolved: { operationId: OP, outcome: 'Partial' }, phase: 'Blocked' });
  const cases: {
    name: string;
    m: PtahMigration | undefined;
    a?: PtahMigrationRunAcknowledgment;
    ok: boolean;
    why?: RegExp;
  }[] = [
    { name: 'the operation id of the unresolved run', m: partial, ok: true },
    {
      name: 'another operation id',
      m: partial,
      a: stampedAck({ operationId: OTHER_OP }),
      ok: false,
      why: /the acknowledgment names operation sha256:b{64}, but the unresolved run of PtahMigration orders is operation sha256:a{64} \(Partial, Job ptah-m-apply-orders-0123456789abcdef\); acknowledge that one/,
    },
    {
      name: 'a migration with no unresolved run',
      m: migration(),
      ok: false,
      why: /PtahMigration orders records no unresolved run: there is nothing to acknowledge/,
    },
    {
      name: 'a recreated migration',
      m: migration({ uid: 'migration-uid-2', unresolved: { operationId: OP, outcome: 'Unknown' } }),
      ok: false,
      why: /names PtahMigration orders with UID migration-uid, but the PtahMigration of that name has UID migration-uid-2: it is another object than the acknowledgment was written for/,
    },
    { name: 'a missing migration', m: undefined, ok: false, why: /PtahMigration orders does not exist/ },
    {
      name: 'a run only the annotation still holds (status dropped), saying the manager restores it',
      m: {
        ...migration(),
        metadata: {
          ...migration().metadata,
          annotations: { 'operator.ptah.run/unresolved-run': JSON.stringify({ operationId: OP }) },
        },
      },
      ok: false,
      why: /records no unresolved run in its status, but its operator\.ptah\.run\/unresolved-run annotation holds one .*the manager brings it back into status at its next pass/,
    },
    {
      name: 'an acknowledgedBy typed by the client',
      m: partial,
      a: stampedAck({ acknowledgedBy: { username: 'dba-lead' } }),
      ok: false,
      why: /the acknowledger recorded is not the user making this request; the acknowledgment must be stamped by the mmigrationrunacknowledgment webhook/,
    },
    {
      name: 'an unstamped acknowledgment',
      m: partial,
      a: acknowledgment(),
      ok: false,
      why: /not stamped by admission; is the mmigrationrunacknowledgment webhook registered\?/,
    },
  ];
  for (const c of cases) {
    it(`${c.ok ? 'admits' : 'refuses'} ${c.name}`, async () => {
      const d = await validateRunAcknowledgment(subjects(c.m, undefined))(
        request('PtahMigrationRunAcknowledgment', c.a ?? stampedAck(), ALICE),
      );
      assert.equal(d.allowed, c.ok, d.status?.message);
      if (c.why !== undefined) assert.match(d.status?.message ?? '', c.why);
    });
  }

  it('refuses any edit of the spec after creation', async () => {
    const validate = validateRunAcknowledgment(subjects(partial, undefined));
    const d = await validate(
      request(
        'PtahMigrationRunAcknowledgment',
        stampedAck({ operationId: OTHER_OP }),
        ALICE,
        'UPDATE',
        stampedAck(),
      ),
    );
    assert.equal(d.allowed, false);
    assert.match(
      d.status?.message ?? '',
      /never edited \(changed: spec\.operationId\); create another acknowledgment/,
    );
  });
});
