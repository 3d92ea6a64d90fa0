import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runRunner } from '../../../src/runner/main.ts';
import { decodeFrame, acceptFrame } from '../../../src/protocol/frame.ts';
import type { RunnerResult } from '../../../src/protocol/result.ts';
import { targetReport } from '../../../src/runner/target-identity.ts';

const FAKE_PTAH = fileURLToPath(new URL('./fixtures/fake-ptah.mjs', import.meta.url));
const PASSWORD = 's3cr3t-Pa55word';
const DB_URL = `postgres://app:${PASSWORD}@127.0.0.1:5432/orders`;
const OP_ID = 'sha256:' + 'c'.repeat(64);
/** The identity the plan was computed against: DB_URL's, as the Apply Job names it. */
const DB_IDENTITY = targetReport(DB_URL).identityDigest;
const roots: string[] = [];
after(() => roots.forEach((d) => rmSync(d, { recursive: true, force: true })));

interface Behaviour {
  exit: number;
  /** Written to the --out file of a plan. */
  planFile?: string;
  stdout?: string;
  stderr?: string;
  sleepMs?: number;
  stdoutRepeat?: string;
  times?: number;
}
type FakeConfig = Partial<Record<'drift' | 'plan' | 'dryRun' | 'apply', Behaviour | Behaviour[]>>;

interface Run {
  exitCode: number;
  stdout: string;
  stderr: string;
  termination: string;
  result: RunnerResult | undefined;
  calls: {
    kind: string;
    args: string[];
    envKeys: string[];
    hasUrl: boolean;
    hasDevUrl: boolean;
    planBytes?: string;
  }[];
  dir: string;
}

function workspace(config: FakeConfig): string {
  const dir = mkdtempSync(join(tmpdir(), 'ptah-runner-test-'));
  roots.push(dir);
  writeFileSync(join(dir, 'fake-ptah.json'), JSON.stringify(config));
  mkdirSync(join(dir, 'schema'));
  writeFileSync(join(dir, 'schema', 'schema.sql'), 'CREATE TABLE t (id int);\n');
  return dir;
}

async function run(
  operation: string,
  config: FakeConfig,
  env: Record<string, string> = {},
  prepare?: (dir: string) => void,
): Promise<Run> {
  const dir = workspace(config);
  prepare?.(dir);
  let stdout = '';
  let stderr = '';
  const fullEnv: Record<string, string | undefined> = {
    PATH: process.env['PATH'],
    TMPDIR: dir,
    PTAH_DB_URL: DB_URL,
    PTAH_OPERATION_ID: OP_ID,
    PTAH_SCHEMA_DIR: join(dir, 'schema'),
    PTAH_PLAN_DIR: join(dir, 'plan'),
    PTAH_WORK_DIR: dir,
    PTAH_TERMINATION_MESSAGE_PATH: join(dir, 'termination-log'),
    PTAH_RUNNER_PTAH_BINARY: FAKE_PTAH,
    PTAH_EXPECTED_TARGET_IDENTITY: DB_IDENTITY,
    ...env,
  };
  const exitCode = await runRunner(['--operation', operation], fullEnv, {
    writeStdout: (t) => (stdout += t),
    writeStderr: (t) => (stderr += t),
  });
  const decoded = decodeFrame(stdout);
  const logFile = join(dir, 'fake-ptah.log');
  return {
    exitCode,
    stdout,
    stderr,
    termination: existsSync(join(dir, 'termination-log'))
      ? readFileSync(join(dir, 'termination-log'), 'utf8')
      : '',
    result: decoded.kind === 'complete' ? decoded.result : undefined,
    calls: existsSync(logFile)
      ? readFileSync(logFile, 'utf8')
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as Run['calls'][number])
      : [],
    dir,
  };
}

const PLAN_DOC =
  JSON.stringify({
    statements: [{ sql: 'CREATE TABLE t (id int)' }],
    destructive: false,
    from_fingerprint: 'sha256:' + 'a'.repeat(64),
    to_fingerprint: 'sha256:' + 'b'.repeat(64),
  }) + '\n';
const CHANGES_REPORT = JSON.stringify({ command: 'plan', planOutcome: 'Changes', statement_count: 1 });
const NO_CHANGES = {
  exit: 0,
  stdout: JSON.stringify({ command: 'plan', planOutcome: 'NoChanges', statement_count: 0 }),
};
const CHANGES = { exit: 3, stdout: CHANGES_REPORT, planFile: PLAN_DOC };
const sha = (b: string | Buffer) => 'sha256:' + createHash('sha256').update(b).digest('hex');

describe('runner: Plan', () => {
  it('two identical plans, then a dry-run of those exact bytes, publish the bytes in the frame', async () => {
    const r = await run('plan', {
      plan: CHANGES,
      dryRun: {
        exit: 0,
        stdout: JSON.stringify({ outcome: 'validated', digest: sha(PLAN_DOC), statements: [{}] }),
      },
    });
    assert.equal(r.exitCode, 0, r.stderr);
    assert.deepEqual(
      r.calls.map((c) => c.kind),
      ['plan', 'plan', 'dryRun'],
    );
    const p = r.result?.outputs.plan;
    assert.equal(p?.planOutcome, 'Changes');
    assert.equal(p?.planContentDigest, sha(PLAN_DOC));
    assert.equal(Buffer.from(p?.bytesBase64 ?? '', 'base64').toString(), PLAN_DOC);
    assert.equal(p?.statementCount, 1);
    assert.equal(p?.dryRunStatements, 1);
    assert.equal(p?.destructive, false);
    assert.equal(p?.observedStateFingerprint, 'sha256:' + 'a'.repeat(64));
    assert.equal(p?.desiredStateFingerprint, 'sha256:' + 'b'.repeat(64));
    // Each plan wrote its own file; the dry-run read exactly the planned bytes.
    const outs = r.calls.slice(0, 2).map((c) => c.args[c.args.indexOf('--out') + 1]);
    assert.notEqual(outs[0], outs[1]);
    assert.equal(Buffer.from(r.calls[2]!.planBytes!, 'base64').toString(), PLAN_DOC);
    // The URL only ever travels in env.
    for (const c of r.calls) {
      assert.equal(c.hasUrl, true);
      assert.ok(!c.args.join(' ').includes(PASSWORD));
      assert.ok(!c.envKeys.includes('PTAH_OPERATION_ID'), 'runner control variables are not passed on');
    }
    assert.equal(
      acceptFrame(decodeFrame(r.stdout), { operation: 'plan', operationId: OP_ID }).accepted,
      true,
    );
    assert.equal(r.result?.target?.dialect, 'postgres');
    assert.match(r.termination, /^PTAH_RUNNER_SUMMARY_V1 \{.*"outcome":"succeeded"/);
  });

  it('passes exclusions and protected tables to both plans', async () => {
    const r = await run(
      'plan',
      { plan: NO_CHANGES },
      { PTAH_EXCLUDE: '["audit_*"]', PTAH_PROTECTED_TABLES: '["public.accounts"]' },
    );
    for (const c of r.calls) {
      assert.deepEqual(c.args.slice(c.args.indexOf('--exclude'), c.args.indexOf('--exclude') + 2), [
        '--exclude',
        'audit_*',
      ]);
      assert.ok(c.args.includes('--protected-table') && c.args.includes('public.accounts'));
    }
  });

  it('a protected-table refusal is reported as protected_table, with nothing published', async () => {
    const refusal = {
      exit: 4,
      stdout: JSON.stringify({
        outcome: 'refused',
        refusal: { table: 'public.accounts', reason: 'table public.accounts is protected' },
      }),
    };
    const r = await run('plan', { plan: refusal });
    assert.equal(r.result?.error?.code, 'protected_table');
    assert.equal(r.result?.outputs.plan, undefined);
  });

  it('the frame is the last thing on stdout', async () => {
    const r = await run('plan', { plan: NO_CHANGES });
    assert.ok(r.stdout.startsWith('PTAH_RESULT_V1 '));
    assert.ok(r.stdout.endsWith('PTAH_RESULT_END_V1\n'));
  });

  it('no change is believed only from both plans, and runs no dry-run', async () => {
    const r = await run('plan', { plan: NO_CHANGES });
    assert.equal(r.exitCode, 0);
    assert.equal(r.result?.outputs.plan?.planOutcome, 'NoChanges');
    assert.equal(r.result?.outputs.plan?.bytesBase64, undefined);
    assert.deepEqual(
      r.calls.map((c) => c.kind),
      ['plan', 'plan'],
    );
  });

  it('plans that differ by one byte are refused, and nothing is dry-run', async () => {
    const r = await run('plan', { plan: [CHANGES, { ...CHANGES, planFile: PLAN_DOC.replace('id', 'ID') }] });
    assert.equal(r.exitCode, 1);
    assert.equal(r.result?.outcome, 'failed');
    assert.equal(r.result?.error?.code, 'plans_differ');
    assert.deepEqual(
      r.calls.map((c) => c.kind),
      ['plan', 'plan'],
    );
  });

  it('one plan with changes and one without are refused', async () => {
    const r = await run('plan', { plan: [CHANGES, NO_CHANGES] });
    assert.equal(r.result?.error?.code, 'plans_differ');
  });

  it('an empty or unreadable report never reads as convergence', async () => {
    const r = await run('plan', { plan: { exit: 0, stdout: '' } });
    assert.equal(r.result?.outcome, 'failed');
    assert.equal(r.result?.error?.code, 'plan_unreadable');
    assert.equal(r.result?.outputs.plan, undefined);
    const noFile = await run('plan', { plan: { exit: 3, stdout: CHANGES_REPORT } });
    assert.equal(noFile.result?.error?.code, 'plan_unreadable');
  });

  it('exit code and report must agree', async () => {
    const r = await run('plan', { plan: { exit: 0, stdout: CHANGES_REPORT } });
    assert.equal(r.result?.error?.code, 'plan_inconsistent');
  });

  it('a plan over the byte limit is refused', async () => {
    const big = await runWithArgs(['--operation', 'plan', '--max-plan-bytes', '100'], { plan: CHANGES });
    assert.equal(big.result?.error?.code, 'plan_too_large');
  });

  it('a failed dry-run fails the plan', async () => {
    const r = await run('plan', { plan: CHANGES, dryRun: { exit: 1, stderr: 'syntax error at 1\n' } });
    assert.equal(r.exitCode, 1);
    assert.equal(r.result?.error?.code, 'dry_run_failed');
    assert.match(r.result?.error?.message ?? '', /syntax error at 1/);
  });

  it('a dry-run naming other bytes fails the plan', async () => {
    const r = await run('plan', {
      plan: CHANGES,
      dryRun: { exit: 0, stdout: JSON.stringify({ digest: sha('other') }) },
    });
    assert.equal(r.result?.error?.code, 'dry_run_mismatch');
  });

  it('a dev URL reaches Plan only', async () => {
    const devUrl = 'postgres://dev:devpassword99@127.0.0.1:5433/scratch';
    const r = await run('plan', { plan: NO_CHANGES }, { PTAH_DEV_URL: devUrl });
    assert.equal(r.calls[0]?.hasDevUrl, true);
    const o = await run(
      'observe',
      { drift: { exit: 0, stdout: '{"findings":[]}' } },
      { PTAH_DEV_URL: devUrl },
    );
    assert.equal(o.exitCode, 2);
    assert.equal(o.calls.length, 0);
    assert.match(o.result?.error?.message ?? '', /PTAH_DEV_URL/);
  });
});

async function runWithArgs(argv: string[], config: FakeConfig): Promise<Run> {
  const dir = workspace(config);
  let stdout = '';
  const exitCode = await runRunner(
    argv,
    {
      PATH: process.env['PATH'],
      TMPDIR: dir,
      PTAH_DB_URL: DB_URL,
      PTAH_OPERATION_ID: OP_ID,
      PTAH_SCHEMA_DIR: join(dir, 'schema'),
      PTAH_WORK_DIR: dir,
      PTAH_TERMINATION_MESSAGE_PATH: join(dir, 'termination-log'),
      PTAH_RUNNER_PTAH_BINARY: FAKE_PTAH,
    },
    { writeStdout: (t) => (stdout += t), writeStderr: () => undefined },
  );
  const d = decodeFrame(stdout);
  return {
    exitCode,
    stdout,
    stderr: '',
    termination: '',
    result: d.kind === 'complete' ? d.result : undefined,
    calls: [],
    dir,
  };
}

describe('runner: redaction', () => {
  it('a password ptah prints never reaches stdout, stderr, the frame or the termination message', async () => {
    const leaky = {
      exit: 1,
      stdout: 'connecting to {URL}\n',
      stderr:
        'error: could not connect to {URL} (password {PASSWORD}) "{PASSWORD}"\nfatal: auth failed for app:{PASSWORD}\n',
    };
    for (const op of ['observe', 'plan', 'apply'] as const) {
      const planDigest = sha(PLAN_DOC);
      const r = await run(
        op,
        { drift: leaky, plan: leaky, apply: leaky },
        { PTAH_EXPECTED_PLAN_CONTENT_DIGEST: planDigest },
        (dir) => {
          mkdirSync(join(dir, 'plan'));
          writeFileSync(join(dir, 'plan', '000.plan'), PLAN_DOC);
        },
      );
      assert.ok(r.calls.length > 0, `${op}: ptah ran`);
      for (const [where, text] of [
        ['stdout', r.stdout],
        ['stderr', r.stderr],
        ['termination', r.termination],
        ['frame', JSON.stringify(r.result)],
      ] as const) {
        assert.ok(!text.includes(PASSWORD), `${op}: password in ${where}: ${text}`);
        assert.ok(!text.includes(encodeURIComponent(PASSWORD)), `${op}: encoded password in ${where}`);
        assert.ok(!text.includes('app:'), `${op}: user info in ${where}`);
      }
      // The diagnostics are still there, redacted.
      assert.match(r.stderr, /could not connect to postgres:\/\/\*\*\*@127\.0\.0\.1:5432\/orders/);
      assert.match(r.result?.error?.message ?? '', /auth failed/);
    }
  });

  it('an options error never echoes the URL', async () => {
    const r = await run('observe', {}, { PTAH_DB_URL: `ftp://app:${PASSWORD}@host/x` });
    assert.equal(r.exitCode, 2);
    assert.ok(
      !r.stderr.includes(PASSWORD) && !r.stdout.includes(PASSWORD) && !r.termination.includes(PASSWORD),
    );
    assert.match(r.result?.error?.message ?? '', /^PTAH_DB_URL: /);
  });

  it('a plan document carrying the credential is refused, not published', async () => {
    const doc = JSON.stringify({ statements: [`-- ${DB_URL}`] });
    const r = await run('plan', { plan: { ...CHANGES, planFile: doc }, dryRun: { exit: 0, stdout: '{}' } });
    assert.equal(r.result?.error?.code, 'credential_in_plan');
    assert.equal(r.result?.outputs.plan, undefined);
    assert.ok(!r.stdout.includes(PASSWORD));
  });

  it('child output cannot plant a result frame', async () => {
    const forged = 'PTAH_RESULT_V1 2 ' + 'a'.repeat(64) + '\n{}\nPTAH_RESULT_END_V1\n';
    const r = await run('observe', { drift: { exit: 1, stderr: forged } });
    const frames = r.stdout.split('\n').filter((l) => l.startsWith('PTAH_RESULT_V1 '));
    assert.equal(frames.length, 1);
    assert.ok(!r.stderr.split('\n').some((l) => l.startsWith('PTAH_RESULT_')));
  });
});

describe('runner: Observe', () => {
  it('reports a bounded drift summary, not the report', async () => {
    const report = JSON.stringify({
      findings: [
        { category: 'MissingTable', severity: 'warning', table: 'secret_table_name' },
        { category: 'MissingTable', severity: 'warning' },
        { category: 'ExtraColumn', severity: 'destructive' },
      ],
    });
    const r = await run('observe', { drift: { exit: 3, stdout: report } });
    assert.equal(r.exitCode, 0, r.stderr);
    const d = r.result?.outputs.drift;
    assert.deepEqual(d, {
      reportDigest: sha(report),
      drifted: true,
      total: 3,
      highestSeverity: 'destructive',
      categories: { missing_table: 2, extra_column: 1 },
    });
    assert.ok(!r.stdout.includes('secret_table_name'));
  });

  it('reads the engine report shape: stated totals, categories and highest severity', async () => {
    const report = JSON.stringify({
      command: 'drift',
      digest: 'sha256:' + '1'.repeat(64),
      drifted: true,
      total: 4,
      highest_severity: 'destructive',
      categories: { missing_column: 1, extra_table: 2 },
      findings: [
        { category: 'missing_column', count: 1, severity: 'warning' },
        { category: 'extra_table', count: 2, severity: 'destructive' },
      ],
      uncategorised: 1,
    });
    const r = await run('observe', { drift: { exit: 3, stdout: report } });
    assert.deepEqual(r.result?.outputs.drift, {
      reportDigest: sha(report),
      drifted: true,
      total: 4,
      highestSeverity: 'destructive',
      categories: { extra_table: 2, missing_column: 1 },
    });
  });

  it('exit 0 with findings is inconsistent and refused', async () => {
    const r = await run('observe', { drift: { exit: 0, stdout: '{"findings":[{"category":"x"}]}' } });
    assert.equal(r.result?.error?.code, 'report_inconsistent');
  });
});

describe('runner: Apply', () => {
  const chunks = (parts: string[]) => (dir: string) => {
    mkdirSync(join(dir, 'plan'));
    parts.forEach((p, i) => writeFileSync(join(dir, 'plan', `${String(i).padStart(3, '0')}.plan`), p));
  };
  const half = Math.floor(PLAN_DOC.length / 2);
  const parts = [PLAN_DOC.slice(0, half), PLAN_DOC.slice(half)];

  it('rebuilds the chunks, checks the digest and runs exactly those bytes', async () => {
    const r = await run(
      'apply',
      { apply: { exit: 0, stdout: '{}' } },
      { PTAH_EXPECTED_PLAN_CONTENT_DIGEST: sha(PLAN_DOC) },
      chunks(parts),
    );
    assert.equal(r.exitCode, 0, r.stderr);
    assert.deepEqual(
      r.calls.map((c) => c.kind),
      ['apply'],
    );
    assert.equal(Buffer.from(r.calls[0]!.planBytes!, 'base64').toString(), PLAN_DOC);
    assert.equal(r.result?.outputs.apply?.mutationStarted, true);
  });

  it('refuses bytes that do not give the approved digest, before ptah starts', async () => {
    const r = await run(
      'apply',
      { apply: { exit: 0 } },
      { PTAH_EXPECTED_PLAN_CONTENT_DIGEST: sha(PLAN_DOC) },
      chunks([parts[0]!, parts[1]! + ' ']),
    );
    assert.equal(r.exitCode, 2);
    assert.equal(r.result?.outcome, 'refused');
    assert.equal(r.result?.outputs.apply?.mutationStarted, false);
    assert.equal(r.calls.length, 0);
  });

  it('refuses a missing chunk', async () => {
    const r = await run(
      'apply',
      { apply: { exit: 0 } },
      { PTAH_EXPECTED_PLAN_CONTENT_DIGEST: sha(PLAN_DOC) },
      (dir) => {
        mkdirSync(join(dir, 'plan'));
        writeFileSync(join(dir, 'plan', '000.plan'), parts[0]!);
        writeFileSync(join(dir, 'plan', '002.plan'), parts[1]!);
      },
    );
    assert.equal(r.exitCode, 2);
    assert.match(r.result?.error?.message ?? '', /001\.plan is missing/);
  });

  it('a runner error before ptah starts is failed, not uncertain: nothing could have changed', async () => {
    const broken = await run(
      'apply',
      { apply: { exit: 0 } },
      {
        PTAH_EXPECTED_PLAN_CONTENT_DIGEST: sha(PLAN_DOC),
        PTAH_WORK_DIR: join(tmpdir(), 'ptah-no-such-dir', 'x'),
      },
      chunks(parts),
    );
    assert.equal(broken.calls.length, 0);
    assert.equal(broken.result?.outcome, 'failed');
    assert.equal(broken.exitCode, 1);
  });

  it('a URL naming another database than the plan was computed against is refused before ptah starts', async () => {
    // Same host, user and password; the Secret now names another database on the same server.
    const other = `postgres://app:${PASSWORD}@127.0.0.1:5432/orders_copy`;
    const r = await run(
      'apply',
      { apply: { exit: 0, stdout: '{}' } },
      { PTAH_EXPECTED_PLAN_CONTENT_DIGEST: sha(PLAN_DOC), PTAH_DB_URL: other },
      chunks(parts),
    );
    assert.equal(r.calls.length, 0, 'ptah must not start');
    assert.equal(r.exitCode, 2);
    assert.equal(r.result?.outcome, 'refused');
    assert.equal(r.result?.childExitCode, -1);
    assert.equal(r.result?.error?.code, 'target_identity_mismatch');
    assert.equal(r.result?.outputs.apply?.mutationStarted, false);
    // The frame reports which identity the Pod was given, so the manager can name the difference.
    assert.equal(r.result?.target?.identityDigest, targetReport(other).identityDigest);
    for (const text of [r.stdout, r.stderr, r.termination]) {
      assert.ok(!text.includes(PASSWORD) && !text.includes('orders_copy') && !text.includes('app:'), text);
    }
    // The same Pod pointed at the plan's database runs it.
    const ok = await run(
      'apply',
      { apply: { exit: 0, stdout: '{}' } },
      { PTAH_EXPECTED_PLAN_CONTENT_DIGEST: sha(PLAN_DOC) },
      chunks(parts),
    );
    assert.deepEqual([ok.exitCode, ok.calls.length], [0, 1]);
  });

  it('an Apply without an expected target identity is refused by the options', async () => {
    const r = await run(
      'apply',
      { apply: { exit: 0 } },
      { PTAH_EXPECTED_PLAN_CONTENT_DIGEST: sha(PLAN_DOC), PTAH_EXPECTED_TARGET_IDENTITY: '' },
      chunks(parts),
    );
    assert.equal(r.exitCode, 2);
    assert.equal(r.calls.length, 0);
    assert.match(r.result?.error?.message ?? '', /PTAH_EXPECTED_TARGET_IDENTITY: missing/);
  });

  it('an Apply without an expected digest is refused by the options', async () => {
    const r = await run('apply', { apply: { exit: 0 } });
    assert.equal(r.exitCode, 2);
    assert.match(r.result?.error?.message ?? '', /PTAH_EXPECTED_PLAN_CONTENT_DIGEST/);
  });

  it('a clean failure is failed; exit 5 and a kill at the deadline are uncertain', async () => {
    const env = { PTAH_EXPECTED_PLAN_CONTENT_DIGEST: sha(PLAN_DOC) };
    const f = await run('apply', { apply: { exit: 1, stderr: 'relation exists\n' } }, env, chunks(parts));
    assert.deepEqual([f.exitCode, f.result?.outcome], [1, 'failed']);
    const u = await run('apply', { apply: { exit: 5 } }, env, chunks(parts));
    assert.deepEqual([u.exitCode, u.result?.outcome], [5, 'uncertain']);
    assert.equal(u.result?.outputs.apply?.partial, undefined, 'no report, no position');
    // A partial MySQL apply: the failing statement's numbers and SQLSTATE travel, the server's text does not.
    const partialReport = JSON.stringify({
      outcome: 'partial',
      failure: { position: 2, applied: 1, errno: 1062, sqlstate: '23000', message: "Duplicate entry '7'" },
    });
    const p = await run('apply', { apply: { exit: 5, stdout: partialReport } }, env, chunks(parts));
    assert.deepEqual([p.exitCode, p.result?.outcome], [5, 'uncertain']);
    assert.deepEqual(p.result?.outputs.apply?.partial, {
      position: 2,
      applied: 1,
      errno: 1062,
      sqlstate: '23000',
    });
    assert.ok(!JSON.stringify(p.result).includes('Duplicate entry'));
    const forged = JSON.stringify({
      outcome: 'partial',
      failure: { position: 2, applied: 1, sqlstate: "x' OR" },
    });
    const g = await run('apply', { apply: { exit: 5, stdout: forged } }, env, chunks(parts));
    assert.deepEqual(g.result?.outputs.apply?.partial, { position: 2, applied: 1 });
    const soon = new Date(Date.now() + 400).toISOString();
    const k = await run(
      'apply',
      { apply: { exit: 0, sleepMs: 5000 } },
      { ...env, PTAH_EXECUTION_NOT_AFTER: soon, PTAH_TERMINATION_GRACE_PERIOD_SECONDS: '1' },
      chunks(parts),
    );
    assert.deepEqual([k.exitCode, k.result?.outcome], [5, 'uncertain']);
    assert.match(k.result?.error?.message ?? '', /deadline/);
  });
});

describe('runner: stopping', () => {
  it('a Pod stop during Apply stops ptah and reports the outcome as uncertain, still framed', async () => {
    const dir = workspace({ apply: { exit: 0, sleepMs: 10_000 } });
    mkdirSync(join(dir, 'plan'));
    writeFileSync(join(dir, 'plan', '000.plan'), PLAN_DOC);
    const controller = new AbortController();
    let stdout = '';
    setTimeout(() => controller.abort(), 300);
    const started = Date.now();
    const exitCode = await runRunner(
      ['--operation', 'apply'],
      {
        PATH: process.env['PATH'],
        TMPDIR: dir,
        PTAH_DB_URL: DB_URL,
        PTAH_OPERATION_ID: OP_ID,
        PTAH_PLAN_DIR: join(dir, 'plan'),
        PTAH_WORK_DIR: dir,
        PTAH_EXPECTED_PLAN_CONTENT_DIGEST: sha(PLAN_DOC),
        PTAH_EXPECTED_TARGET_IDENTITY: DB_IDENTITY,
        PTAH_TERMINATION_MESSAGE_PATH: join(dir, 'termination-log'),
        PTAH_TERMINATION_GRACE_PERIOD_SECONDS: '3',
        PTAH_RUNNER_PTAH_BINARY: FAKE_PTAH,
      },
      { writeStdout: (t) => (stdout += t), writeStderr: () => undefined, signal: controller.signal },
    );
    assert.ok(Date.now() - started < 5000, 'ptah was stopped, not waited for');
    assert.equal(exitCode, 5);
    const d = decodeFrame(stdout);
    assert.equal(d.kind, 'complete');
    if (d.kind === 'complete') {
      assert.equal(d.result.outcome, 'uncertain');
      assert.match(d.result.error?.message ?? '', /terminating/);
    }
  });
});

describe('runner: options', () => {
  it('a missing operation id is refused naming the field, with no frame but a termination message', async () => {
    const r = await run('observe', {}, { PTAH_OPERATION_ID: '' });
    assert.equal(r.exitCode, 2);
    assert.equal(r.calls.length, 0);
    assert.match(r.stderr, /PTAH_OPERATION_ID: missing|PTAH_OPERATION_ID: not/);
    assert.match(r.termination, /PTAH_OPERATION_ID/);
  });

  it('a Job of another runner protocol is refused before ptah starts', async () => {
    const r = await run('plan', { plan: NO_CHANGES }, { PTAH_RUNNER_PROTOCOL_VERSION: '99' });
    assert.equal(r.exitCode, 2);
    assert.equal(r.result?.error?.code, 'runner_protocol_mismatch');
    assert.equal(r.calls.length, 0);
  });

  it('a URL with a bad percent-escape in its user info is refused naming the part, never reported uncertain', async () => {
    const r = await run(
      'apply',
      {},
      {
        PTAH_DB_URL: `postgres://%zz:${PASSWORD}@127.0.0.1:5432/orders`,
        PTAH_EXPECTED_PLAN_CONTENT_DIGEST: 'sha256:' + 'd'.repeat(64),
      },
    );
    assert.equal(r.exitCode, 2);
    assert.equal(r.result?.outcome, 'refused');
    assert.equal(r.calls.length, 0);
    assert.match(r.stderr, /PTAH_DB_URL: the user name in the database URL has an invalid percent-escape/);
    assert.ok(!(r.stdout + r.stderr + r.termination).includes(PASSWORD));
  });

  it('an engine mismatch is refused', async () => {
    const r = await run('plan', {}, { PTAH_EXPECTED_DATABASE_ENGINE: 'mysql' });
    assert.equal(r.result?.error?.code, 'engine_mismatch');
  });

  it('an expired execution deadline is refused', async () => {
    const r = await run('plan', {}, { PTAH_EXECUTION_NOT_AFTER: '2000-01-01T00:00:00Z' });
    assert.equal(r.result?.error?.code, 'deadline_expired');
  });
});
