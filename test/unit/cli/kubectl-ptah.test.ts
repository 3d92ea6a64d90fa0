import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PtahSchema } from '../../../src/api/ptah-schema.ts';
import type { PtahSchemaPlan } from '../../../src/api/ptah-schema-plan.ts';
import { serialisePlan, type PlanDocument } from '../../../src/engine/plan-file.ts';
import { candidates, cobraAnswer } from '../../../src/cli/kubectl-ptah-completion.ts';
import { RENDERERS, type VerifiedPlan } from '../../../src/cli/kubectl-ptah-plan.ts';
import { renderStatus } from '../../../src/cli/kubectl-ptah-status.ts';

const document: PlanDocument = {
  format_version: 1,
  dialect: 'postgres',
  from_fingerprint: 'sha256:' + 'a'.repeat(64),
  to_fingerprint: 'sha256:' + 'b'.repeat(64),
  destructive: false,
  statements: [
    {
      sql: 'CREATE TABLE "public"."orders" ("id" bigint NOT NULL)',
      severity: 'safe',
      reason: 'create table',
    },
    {
      sql: 'CREATE INDEX "orders_id" ON "public"."orders" ("id");\n',
      severity: 'safe',
      reason: 'create index',
    },
  ],
  managed_rows: [],
  rows_fingerprint: 'sha256:' + 'c'.repeat(64),
};
const bytes = new TextEncoder().encode(serialisePlan(document));
const verified = {
  schema: { metadata: { name: 'orders', namespace: 'shop' } },
  plan: { metadata: { name: 'orders-plan-1' }, spec: { fingerprint: 'sha256:' + 'd'.repeat(64) } },
  bytes,
  document,
} as unknown as VerifiedPlan;

describe('kubectl ptah plan output', () => {
  it('-o sql terminates every statement exactly once, each under a comment naming its severity', () => {
    const sql = String(RENDERERS.sql(verified));
    assert.match(sql, /^-- plan orders-plan-1 of PtahSchema orders: 2 statement\(s\)\n/);
    assert.match(
      sql,
      /-- 1\/2 \[safe\] create table\nCREATE TABLE "public"\."orders" \("id" bigint NOT NULL\);\n/,
    );
    assert.match(
      sql,
      /-- 2\/2 \[safe\] create index\nCREATE INDEX "orders_id" ON "public"\."orders" \("id"\);\n$/,
    );
    assert.ok(!sql.includes(';;'));
  });

  it('-o json is the stored document byte for byte', () => {
    assert.deepEqual(RENDERERS.json(verified), bytes);
  });

  it('-o diff names both fingerprints and adds every statement', () => {
    const diff = String(RENDERERS.diff(verified));
    assert.match(diff, /^--- database {3}sha256:a{64}\n\+\+\+ declared {3}sha256:b{64}\n/);
    assert.match(diff, /@@ 2 \[safe\] create index @@\n\+ CREATE INDEX/);
    assert.match(diff, /2 statement\(s\), destructive: no/);
  });
});

describe('kubectl ptah status output', () => {
  it('prints phase, plan, conditions and journal as tables', () => {
    const schema = {
      metadata: { name: 'orders', namespace: 'shop' },
      status: {
        phase: 'InSync',
        conditions: [
          {
            type: 'Ready',
            status: 'True',
            reason: 'InSync',
            message: 'the database matches',
            lastTransitionTime: '2026-12-01T10:00:00Z',
          },
        ],
        applied: {
          planRef: { name: 'orders-plan-1', uid: 'u1' },
          planFingerprint: 'sha256:x',
          contentDigest: 'sha256:y',
          completedAt: '2026-12-01T10:00:00Z',
        },
        journal: {
          coveredSince: '2026-12-01T09:00:00Z',
          entries: [
            {
              type: 'ApprovalAccepted',
              time: '2026-12-01T09:59:00Z',
              plan: 'orders-plan-1',
              approver: 'alice',
            },
            {
              type: 'OperationFailed',
              time: '2026-12-01T09:58:00Z',
              operation: 'Plan',
              reason: 'Timeout',
              count: 3,
            },
          ],
        },
      },
    } as unknown as PtahSchema;
    const out = renderStatus(schema);
    assert.match(out, /^PtahSchema shop\/orders\nphase: +InSync\nplan: +none\napplied: +orders-plan-1 at /);
    assert.match(
      out,
      /CONDITIONS\nTYPE +STATUS +REASON +SINCE +MESSAGE\nReady +True +InSync +2026-12-01T10:00:00Z +the database matches\n/,
    );
    assert.match(out, /ApprovalAccepted +(?: +)?orders-plan-1 +alice/);
    assert.match(out, /OperationFailed +Plan +Timeout \(x3\)/);
  });
});

describe('kubectl ptah completion', () => {
  const names = async () => ['orders', 'billing'];
  it('completes commands, flags, -o values and schema names', async () => {
    assert.deepEqual(await candidates([''], names), ['plan', 'approve', 'status', 'migration', 'completion']);
    assert.deepEqual(await candidates(['ap'], names), ['approve']);
    assert.deepEqual(await candidates(['plan', ''], names), ['orders', 'billing']);
    assert.deepEqual(await candidates(['plan', 'orders', '-o', ''], names), ['sql', 'json', 'diff']);
    assert.deepEqual(await candidates(['plan', 'orders', '--ap'], names), ['--applied']);
    assert.deepEqual(await candidates(['plan', 'orders', ''], names), []);
    assert.deepEqual(await candidates(['plan', '-n', 'shop', 'b'], names), ['billing']);
    assert.deepEqual(await candidates(['completion', ''], names), ['bash', 'zsh']);
  });

  it('completes migration commands, their flags and migration names', async () => {
    const of = async (plural: string) => (plural === 'ptahmigrations' ? ['shop-db'] : ['orders']);
    assert.deepEqual(await candidates(['migration', ''], of), ['status', 'plan', 'approve', 'acknowledge']);
    assert.deepEqual(await candidates(['migration', 'ack'], of), ['acknowledge']);
    assert.deepEqual(await candidates(['migration', 'acknowledge', ''], of), ['shop-db']);
    assert.deepEqual(await candidates(['migration', 'acknowledge', 'shop-db', '--op'], of), ['--operation']);
    assert.deepEqual(await candidates(['migration', 'acknowledge', '--operation', ''], of), []);
    assert.deepEqual(await candidates(['migration', 'plan', 'shop-db', '-o', ''], of), ['text', 'json']);
    assert.deepEqual(await candidates(['migration', 'plan', '-n', 'shop', ''], of), ['shop-db']);
    assert.deepEqual(await candidates(['migration', 'nosuch', ''], of), []);
  });

  it('answers in the format kubectl reads from kubectl_complete-ptah', () => {
    assert.equal(cobraAnswer(['orders']), 'orders\n:4\n');
  });
});

// A plan object the type checker holds to the API shape, so the fixtures above stay honest about fields.
export const _planShape: Pick<PtahSchemaPlan, 'metadata'> = { metadata: { name: 'orders-plan-1' } };
