// vcontrollerwrite's judgement of a created plan, with the manager's half (what the owner says now) faked:
// the owner reference must name the plan family's owner kind, the builder's metadata and resource reference
// must match, and the differing bindings are named by field, never by value.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  judgePlan,
  type PlanAgainstOwner,
  type PlanObjectReads,
} from '../../../src/admission/plan-objects.ts';
import type { OwningResource, Written } from '../../../src/admission/vcontrollerwrite.ts';
import { schemaPlanMetadata } from '../../../src/plan-store/plan-metadata.ts';

const owner = {
  apiVersion: 'operator.ptah.run/v1alpha1',
  kind: 'PtahSchema',
  metadata: { name: 'orders', namespace: 'ns', uid: 'u-1' },
};
const metadata = schemaPlanMetadata(owner, 'ptah-plan-abc');
const SECRET_LOOKING = 'sha256:' + 'a'.repeat(64);

const plan = (
  edit: (p: { metadata: Record<string, unknown>; spec: Record<string, unknown> }) => void = () => {},
) => {
  const p = {
    metadata: structuredClone(metadata) as unknown as Record<string, unknown>,
    spec: { schemaRef: { name: 'orders', uid: 'u-1' }, binding: { contentDigest: SECRET_LOOKING } },
  };
  edit(p);
  return p as unknown as Written;
};

function reads(answer: PlanAgainstOwner): PlanObjectReads & { asked: OwningResource[] } {
  const asked: OwningResource[] = [];
  return {
    asked,
    planAgainstOwner: async (_kind, o) => {
      asked.push(o);
      return answer;
    },
  };
}
const agrees: PlanAgainstOwner = { ok: true, owner, metadata, differing: [] };

describe('vcontrollerwrite judges a created plan against its owner', () => {
  it('admits the plan its owner and builder make, asking about the owner its controller reference names', async () => {
    const r = reads(agrees);
    assert.deepEqual(await judgePlan('SchemaPlan', plan(), 'ns', r, 'cached'), { ok: true });
    assert.deepEqual(r.asked, [{ kind: 'PtahSchema', namespace: 'ns', name: 'orders', uid: 'u-1' }]);
  });

  it('refuses a plan owned by no resource of its family, without asking the manager', async () => {
    const r = reads(agrees);
    const judged = await judgePlan('MigrationPlan', plan(), 'ns', r, 'cached');
    assert.deepEqual(judged, { ok: false, reason: 'it names no PtahMigration as its controller owner' });
    const orphan = await judgePlan(
      'SchemaPlan',
      plan((p) => delete p.metadata['ownerReferences']),
      'ns',
      r,
      'cached',
    );
    assert.deepEqual(orphan, { ok: false, reason: 'it names no PtahSchema as its controller owner' });
    assert.deepEqual(r.asked, []);
  });

  it('names the differing bindings by field only', async () => {
    const judged = await judgePlan(
      'SchemaPlan',
      plan(),
      'ns',
      reads({ ...agrees, differing: ['contentDigest', 'executionEpoch'] }),
      'live',
    );
    assert.deepEqual(judged, {
      ok: false,
      reason: 'its bindings differ from what PtahSchema orders records now: contentDigest, executionEpoch',
    });
    assert.doesNotMatch(JSON.stringify(judged), /aaaa/);
  });

  it('refuses a label, an owner or a resource reference the builder does not make', async () => {
    const cases: [string, Parameters<typeof plan>[0], RegExp][] = [
      [
        'a label',
        (p) => ((p.metadata['labels'] as Record<string, string>)['extra'] = 'x'),
        /metadata\.labels\["extra"\]/,
      ],
      [
        'a second owner',
        (p) =>
          (p.metadata['ownerReferences'] as unknown[]).push({
            apiVersion: 'v1',
            kind: 'ConfigMap',
            name: 'x',
            uid: 'u-2',
          }),
        /metadata\.ownerReferences/,
      ],
      [
        'another resource UID',
        (p) => (p.spec['schemaRef'] = { name: 'orders', uid: 'u-9' }),
        /spec\.schemaRef\.uid/,
      ],
      ['another name', (p) => (p.metadata['name'] = 'ptah-plan-other'), /metadata\.name/],
    ];
    for (const [what, edit, names] of cases) {
      const judged = await judgePlan('SchemaPlan', plan(edit), 'ns', reads(agrees), 'cached');
      assert.equal(judged.ok, false, what);
      if (!judged.ok) {
        assert.match(
          judged.reason,
          /^it is not the object the plan builder makes for PtahSchema orders: /,
          what,
        );
        assert.match(judged.reason, names, what);
      }
    }
  });

  it('passes on why the owner says nothing', async () => {
    const judged = await judgePlan('SchemaPlan', plan(), 'ns', reads({ ok: false, reason: 'gone' }), 'live');
    assert.deepEqual(judged, { ok: false, reason: 'gone' });
  });
});
