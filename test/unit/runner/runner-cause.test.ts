// The runner carries ptah's classified cause into the frame: checked, redacted, never the server's text.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runRunner } from '../../../src/runner/main.ts';
import { decodeFrame } from '../../../src/protocol/frame.ts';
import type { RunnerResult } from '../../../src/protocol/result.ts';

const FAKE_PTAH = fileURLToPath(new URL('./fixtures/fake-ptah.mjs', import.meta.url));
const PASSWORD = 's3cr3t-Pa55word';
const DB_URL = `postgres://app:${PASSWORD}@127.0.0.1:5432/orders`;
const roots: string[] = [];
after(() => roots.forEach((d) => rmSync(d, { recursive: true, force: true })));

async function observe(
  drift: Record<string, unknown>,
  env: Record<string, string> = {},
): Promise<RunnerResult> {
  const dir = mkdtempSync(join(tmpdir(), 'ptah-runner-cause-'));
  roots.push(dir);
  writeFileSync(join(dir, 'fake-ptah.json'), JSON.stringify({ drift }));
  mkdirSync(join(dir, 'schema'));
  let stdout = '';
  await runRunner(
    ['--operation', 'observe'],
    {
      PATH: process.env['PATH'],
      TMPDIR: dir,
      PTAH_DB_URL: DB_URL,
      PTAH_OPERATION_ID: 'sha256:' + 'c'.repeat(64),
      PTAH_SCHEMA_DIR: join(dir, 'schema'),
      PTAH_WORK_DIR: dir,
      PTAH_TERMINATION_MESSAGE_PATH: join(dir, 'termination-log'),
      PTAH_RUNNER_PTAH_BINARY: FAKE_PTAH,
      ...env,
    },
    { writeStdout: (t) => (stdout += t), writeStderr: () => undefined },
  );
  const decoded = decodeFrame(stdout);
  assert.equal(decoded.kind, 'complete');
  return (decoded as { result: RunnerResult }).result;
}

const errorDoc = (cause: unknown) =>
  JSON.stringify({ command: 'drift', outcome: 'error', error: 'database error: ...', cause });

describe('runner: failure causes', () => {
  it('copies the SQLSTATE cause ptah states', async () => {
    const r = await observe({ exit: 1, stdout: errorDoc({ kind: 'database', sqlstate: '28P01' }) });
    assert.equal(r.outcome, 'failed');
    assert.deepEqual(r.cause, { kind: 'database', sqlstate: '28P01' });
  });

  it('redacts a credential out of a desired-state problem and drops junk', async () => {
    const r = await observe({
      exit: 1,
      stdout: errorDoc({
        kind: 'desired-state',
        problems: [{ file: 'schema.sql', line: 1, column: 3, message: `near "{PASSWORD}"` }],
        total: 1,
      }),
    });
    assert.ok(r.cause?.kind === 'desired-state');
    assert.equal(r.cause.problems[0]!.message, 'near "***"');
    const junk = await observe({ exit: 1, stdout: errorDoc({ kind: 'database', sqlstate: 'nope' }) });
    assert.equal(junk.cause, undefined);
    assert.equal(junk.error?.code, 'observe_failed');
  });

  it('a child stopped at the execution deadline is a deadline cause', async () => {
    const r = await observe(
      { exit: 0, sleepMs: 5_000, stdout: '{}' },
      {
        PTAH_EXECUTION_NOT_AFTER: new Date(Date.now() + 1_500).toISOString(),
        PTAH_TERMINATION_GRACE_PERIOD_SECONDS: '1',
      },
    );
    assert.equal(r.outcome, 'failed');
    assert.deepEqual(r.cause, { kind: 'deadline' });
  });
});
