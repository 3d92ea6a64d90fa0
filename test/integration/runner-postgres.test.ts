// ptah-runner driving the real `ptah` CLI against a real PostgreSQL: Plan (two plans + dry-run), Apply
// from chunks, and a fresh Plan that finds nothing — with the statement log and every output checked.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startPostgres, type PostgresServer } from '../env/postgres.ts';
import { runRunner } from '../../src/runner/main.ts';
import { acceptFrame, decodeFrame } from '../../src/protocol/frame.ts';
import type { RunnerResult } from '../../src/protocol/result.ts';

let server: PostgresServer;
let root: string;

before(async () => {
  server = await startPostgres();
  root = mkdtempSync(join(tmpdir(), 'ptah-runner-pg-'));
});
after(async () => {
  await server?.stop();
  if (root !== undefined) rmSync(root, { recursive: true, force: true });
});

interface Outcome {
  exitCode: number;
  stdout: string;
  stderr: string;
  termination: string;
  result: RunnerResult;
}

async function runner(operation: string, operationId: string, env: Record<string, string>): Promise<Outcome> {
  let stdout = '';
  let stderr = '';
  const termination = join(root, `${operationId}.termination`);
  const exitCode = await runRunner(
    ['run', '--operation', operation],
    {
      PATH: process.env['PATH'],
      HOME: process.env['HOME'],
      PTAH_OPERATION_ID: operationId,
      PTAH_RUNNER_PROTOCOL_VERSION: '1',
      PTAH_EXPECTED_DATABASE_ENGINE: 'postgres',
      PTAH_WORK_DIR: root,
      PTAH_TERMINATION_MESSAGE_PATH: termination,
      ...env,
    },
    { writeStdout: (t) => (stdout += t), writeStderr: (t) => (stderr += t) },
  );
  const accepted = acceptFrame(decodeFrame(stdout), { operation: operation as 'plan', operationId });
  assert.ok(accepted.accepted, `${operation}: ${stderr}`);
  return {
    exitCode,
    stdout,
    stderr,
    termination: readFileSync(termination, 'utf8'),
    result: accepted.result,
  };
}

describe('runner with the real ptah on PostgreSQL', () => {
  it('plans, applies the exact chunks, and a fresh plan then finds nothing', async () => {
    const url = await server.createDatabase('runner_it');
    const password = new URL(url).password;
    const schemaDir = join(root, 'schema');
    mkdirSync(schemaDir);
    writeFileSync(
      join(schemaDir, 'schema.sql'),
      'CREATE TABLE orders (id bigint PRIMARY KEY, note text NOT NULL);\n',
    );
    const base = { PTAH_DB_URL: url, PTAH_SCHEMA_DIR: schemaDir };

    const observed = await runner('observe', 'op-observe-1', base);
    assert.equal(observed.exitCode, 0, observed.stderr);
    assert.equal(observed.result.outputs.drift?.drifted, true);

    const planned = await runner('plan', 'op-plan-1', base);
    assert.equal(planned.exitCode, 0, planned.stderr);
    const plan = planned.result.outputs.plan!;
    assert.equal(plan.planOutcome, 'Changes');
    const bytes = Buffer.from(plan.bytesBase64!, 'base64');
    assert.ok(bytes.toString('utf8').includes('orders'));
    const ddlBeforeApply = server
      .statements()
      .filter((s) => s.database === 'runner_it' && /CREATE TABLE/i.test(s.sql));
    assert.equal(ddlBeforeApply.length, 0, 'planning ran no DDL');

    // The plan as the manager publishes it: chunks, projected as 000.plan, 001.plan…
    const planDir = join(root, 'plan');
    mkdirSync(planDir);
    const cut = Math.floor(bytes.length / 2);
    writeFileSync(join(planDir, '000.plan'), bytes.subarray(0, cut));
    writeFileSync(join(planDir, '001.plan'), bytes.subarray(cut));
    const applied = await runner('apply', 'op-apply-1', {
      ...base,
      PTAH_PLAN_DIR: planDir,
      PTAH_EXPECTED_PLAN_CONTENT_DIGEST: plan.planContentDigest,
      // What the manager copies from the plan's binding: the identity the Plan Pod reported.
      PTAH_EXPECTED_TARGET_IDENTITY: planned.result.target!.identityDigest,
    });
    assert.equal(applied.exitCode, 0, applied.stderr);
    assert.equal(applied.result.outcome, 'succeeded');

    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const cols = await client.query(
        "SELECT column_name FROM information_schema.columns WHERE table_name = 'orders' ORDER BY 1",
      );
      assert.deepEqual(
        cols.rows.map((r: { column_name: string }) => r.column_name),
        ['id', 'note'],
      );
    } finally {
      await client.end();
    }
    const creates = server
      .statements()
      .filter((s) => s.database === 'runner_it' && /CREATE TABLE/i.test(s.sql));
    assert.equal(creates.length, 1, 'the table was created exactly once');

    const verified = await runner('plan', 'op-plan-2', base);
    assert.equal(verified.result.outputs.plan?.planOutcome, 'NoChanges', verified.stderr);

    for (const o of [observed, planned, applied, verified]) {
      for (const text of [o.stdout, o.stderr, o.termination])
        assert.ok(!text.includes(password), 'password printed');
    }
  });

  it('a wrong password is reported, redacted, as a failed plan', async () => {
    const url = await server.createDatabase('runner_it_bad');
    const wrong = new URL(url);
    wrong.password = 'definitely-not-the-password';
    const schemaDir = join(root, 'schema');
    const r = await runner('plan', 'op-plan-bad', { PTAH_DB_URL: wrong.href, PTAH_SCHEMA_DIR: schemaDir });
    assert.equal(r.exitCode, 1);
    assert.equal(r.result.outcome, 'failed');
    for (const text of [r.stdout, r.stderr, r.termination])
      assert.ok(!text.includes('definitely-not-the-password'));
  });
});
