// One database walks through every desired state of the corpus and the sample schemas in turn: each step
// from whatever the previous step left must either converge (plan, apply, re-plan to nothing) or be refused
// on purpose with a reason. This exercises transitions no single case spells out.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { startPostgres, type PostgresServer } from '../../env/postgres.ts';
import { postgresDialect as dialect } from '../../../src/engine/pg/pg-dialect.ts';
import { applyPlan, plan } from '../../../src/engine/schema-engine.ts';
import { loadCases } from './case-runner.ts';

let server: PostgresServer;
before(async () => {
  server = await startPostgres();
});
after(async () => {
  await server?.stop();
});

test('every desired state is reachable from the one before it', async () => {
  const samples = ['dvd-rental.sql', 'music-store.sql', 'northwind-orders.sql'].map((f) =>
    readFileSync(join(import.meta.dirname, '../../fixtures/schemas', f), 'utf8'),
  );
  const cases = loadCases(join(import.meta.dirname, '../../cases/pg')).filter(
    (c) =>
      c.error === undefined &&
      c.devError === undefined &&
      c.exclude === undefined &&
      c.currentManaged === undefined,
  );
  const steps = [...samples, '', ...cases.map((c) => c.desired), samples[0] ?? '', ''];
  let converged = 0;
  let refused = 0;
  for (const [i, sql] of steps.entries()) {
    const source = { files: [{ path: `step-${i}.sql`, sql }] };
    const p = await plan(server.adminUrl, dialect, source);
    if (p.outcome === 'refused') {
      assert.ok((p.refusal?.reason ?? '').length > 20, `step ${i}: a refusal gives its reason`);
      refused++;
      continue;
    }
    if (p.outcome === 'changes') {
      const a = await applyPlan(server.adminUrl, Buffer.from(p.bytes ?? ''));
      assert.equal(a.outcome, 'applied', `step ${i}: ${JSON.stringify(a.failure)}\n${sql}`);
    }
    const again = await plan(server.adminUrl, dialect, source);
    assert.equal(
      again.outcome,
      'no_changes',
      `step ${i} did not converge: ${again.changes.map((c) => c.kind).join(', ')}\n${sql}`,
    );
    converged++;
  }
  assert.ok(
    converged > steps.length * 0.9,
    `${converged} of ${steps.length} steps converged, ${refused} refused`,
  );
});
