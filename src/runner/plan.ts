/**
 * Plan: two independent native plans, accepted only when they are byte-identical, then the native apply
 * path parses and dry-runs those exact bytes (seed: reconciliation). Each plan writes its plan file to a
 * file of its own (`--out`); the bytes compared, published and dry-run are those files. A no-change
 * answer is only believed when both plans say so by exit code AND by a readable report; empty or
 * truncated output never reads as convergence.
 */
import { existsSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { sha256Digest } from '../api/digest.ts';
import type { ChildResult } from './child.ts';
import {
  childFailureMessage,
  failed,
  parseJsonObject,
  refused,
  RUNNER_EXIT,
  type OperationContext,
  type OperationReport,
  withChildCause,
} from './operation.ts';
import { applyDryRunCommand, planCommand } from './ptah-commands.ts';
import type { PlanOutputs } from '../protocol/result.ts';

const EXIT_NO_CHANGES = 0;
const EXIT_CHANGES = 3;
const EXIT_REFUSED = 4;
/** The report is a summary plus the statements; it is bounded like the plan. */
const REPORT_SLACK_BYTES = 1024 * 1024;

interface PlanRun {
  readonly child: ChildResult;
  readonly report: Record<string, unknown>;
  /** The plan file's bytes; undefined when ptah wrote none (no change). */
  readonly bytes: Buffer | undefined;
}

export async function plan(ctx: OperationContext): Promise<OperationReport> {
  const first = await runPlan(ctx, 1);
  if (!isRun(first)) return first;
  const second = await runPlan(ctx, 2);
  if (!isRun(second)) return second;

  const sameBytes =
    first.bytes === undefined
      ? second.bytes === undefined
      : second.bytes !== undefined && first.bytes.equals(second.bytes);
  if (first.child.exitCode !== second.child.exitCode || !sameBytes) {
    return failed(
      'plans_differ',
      'two independent plans were not byte-identical; the database or the inputs moved',
      second.child.exitCode,
    );
  }
  const exitCode = first.child.exitCode;
  const changes = exitCode === EXIT_CHANGES;
  const statements = statementCount(first.report);
  if (statements !== undefined && statements > 0 !== changes) {
    return failed('plan_inconsistent', `ptah exited ${exitCode} with ${statements} statements`, exitCode);
  }
  const stated = first.report['planOutcome'];
  if (stated !== undefined && stated !== (changes ? 'Changes' : 'NoChanges')) {
    return failed(
      'plan_inconsistent',
      `ptah exited ${exitCode} but reported ${String(stated).slice(0, 32)}`,
      exitCode,
    );
  }

  if (!changes) {
    const bytes = first.bytes ?? Buffer.alloc(0);
    const outputs: PlanOutputs = {
      planOutcome: 'NoChanges',
      planContentDigest: sha256Digest(bytes),
      planSize: bytes.length,
      statementCount: 0,
    };
    return {
      outcome: 'succeeded',
      exitCode: RUNNER_EXIT.succeeded,
      childExitCode: exitCode,
      outputs: { plan: outputs },
    };
  }

  const bytes = first.bytes;
  if (bytes === undefined || bytes.length === 0)
    return failed('plan_unreadable', 'ptah reported changes but wrote no plan file', exitCode);
  const document = parseJsonObject(bytes);
  if (document === undefined)
    return failed('plan_unreadable', 'the plan file is not a JSON document', exitCode);
  if (ctx.redactor.leaks(bytes)) {
    // Plan bytes cannot be redacted without changing their digest; a plan carrying a credential is refused.
    return refused('credential_in_plan', 'the plan file contains a database credential');
  }
  const planContentDigest = sha256Digest(bytes);
  const reported = namedDigest(first.report);
  if (reported !== undefined && reported !== planContentDigest) {
    return failed('plan_inconsistent', 'the plan report names another digest than the plan file', exitCode);
  }

  // The dry-run reads the first plan's file: the very bytes that were compared and will be published.
  const planFile = planFilePath(ctx, 1);
  const dryRun = await ctx.runPtah(applyDryRunCommand(planFile), {
    stdoutLimit: ctx.options.maxPlanBytes + REPORT_SLACK_BYTES,
  });
  if (dryRun.exitCode !== 0) {
    return withChildCause(
      failed('dry_run_failed', childFailureMessage('apply dry-run', dryRun, ctx.redactor), dryRun.exitCode),
      dryRun,
    );
  }
  const dryReport = parseJsonObject(dryRun.stdout);
  if (dryReport === undefined)
    return failed('dry_run_unreadable', 'the dry-run report is not a JSON object', dryRun.exitCode);
  const named = namedDigest(dryReport);
  if (named !== undefined && named !== planContentDigest) {
    return failed(
      'dry_run_mismatch',
      'the dry-run report names another plan digest than the planned bytes',
      dryRun.exitCode,
    );
  }
  const dryRunStatements = statementCount(dryReport);
  const outputs: PlanOutputs = {
    planOutcome: 'Changes',
    planContentDigest,
    planSize: bytes.length,
    bytesBase64: bytes.toString('base64'),
    ...(dryRunStatements !== undefined ? { dryRunStatements } : {}),
    ...planFacts(document),
  };
  return {
    outcome: 'succeeded',
    exitCode: RUNNER_EXIT.succeeded,
    childExitCode: dryRun.exitCode,
    outputs: { plan: outputs },
  };
}

function isRun(r: PlanRun | OperationReport): r is PlanRun {
  return 'child' in r;
}

function planFilePath(ctx: OperationContext, n: number): string {
  return join(
    ctx.options.workDir,
    `plan-${ctx.options.operationId.replace(/[^A-Za-z0-9_-]/g, '_')}-${n}.json`,
  );
}

/** One plan run, or the failed report that ends the operation. */
async function runPlan(ctx: OperationContext, n: 1 | 2): Promise<PlanRun | OperationReport> {
  const which = n === 1 ? 'first plan' : 'second plan';
  const { options } = ctx;
  const out = planFilePath(ctx, n);
  // A file left by an earlier attempt must never stand in for this run's output.
  rmSync(out, { force: true });
  const child = await ctx.runPtah(planCommand(options.schemaDir, options, out), {
    stdoutLimit: options.maxPlanBytes + REPORT_SLACK_BYTES,
    devUrl: true,
  });
  if (child.exitCode === EXIT_REFUSED && child.stopped === undefined) {
    const report = parseJsonObject(child.stdout);
    const refusal = (report?.['refusal'] ?? {}) as Record<string, unknown>;
    const reason =
      typeof refusal['reason'] === 'string'
        ? ctx.redactor.redact(refusal['reason']).slice(0, 512)
        : 'ptah refused the plan';
    // A protected table is the one refusal the manager turns into Blocked rather than Failed.
    const code = typeof refusal['table'] === 'string' ? 'protected_table' : 'plan_refused';
    return failed(code, reason, child.exitCode);
  }
  if (child.exitCode !== EXIT_NO_CHANGES && child.exitCode !== EXIT_CHANGES) {
    return withChildCause(
      failed('plan_failed', childFailureMessage(which, child, ctx.redactor), child.exitCode),
      child,
    );
  }
  if (child.stdoutBytesDropped > 0)
    return failed('plan_too_large', `the ${which} report exceeds its bound`, child.exitCode);
  const report = parseJsonObject(child.stdout);
  if (report === undefined)
    return failed('plan_unreadable', `the ${which} report is not a JSON object`, child.exitCode);
  if (!existsSync(out)) return { child, report, bytes: undefined };
  if (statSync(out).size > options.maxPlanBytes) {
    return failed('plan_too_large', `the ${which} exceeds ${options.maxPlanBytes} bytes`, child.exitCode);
  }
  return { child, report, bytes: readFileSync(out) };
}

function statementCount(doc: Record<string, unknown>): number | undefined {
  if (Array.isArray(doc['statements'])) return doc['statements'].length;
  const n = doc['statement_count'] ?? doc['statementCount'];
  return Number.isSafeInteger(n) ? (n as number) : undefined;
}

/** Facts the plan file states about itself; the manager binds them, so only well-typed values pass. */
function planFacts(doc: Record<string, unknown>): Partial<PlanOutputs> {
  const out: { -readonly [K in keyof PlanOutputs]?: PlanOutputs[K] } = {};
  const statements = statementCount(doc);
  if (statements !== undefined) out.statementCount = statements;
  if (typeof doc['destructive'] === 'boolean') out.destructive = doc['destructive'];
  const digest = (v: unknown) => (typeof v === 'string' && /^sha256:[0-9a-f]{64}$/.test(v) ? v : undefined);
  const observed = digest(doc['from_fingerprint'] ?? doc['observedStateFingerprint']);
  const desired = digest(doc['to_fingerprint'] ?? doc['desiredStateFingerprint']);
  if (observed !== undefined) out.observedStateFingerprint = observed;
  if (desired !== undefined) out.desiredStateFingerprint = desired;
  return out;
}

function namedDigest(report: Record<string, unknown>): string | undefined {
  for (const key of ['digest', 'planContentDigest', 'contentDigest', 'planDigest']) {
    const v = report[key];
    if (typeof v === 'string') return v;
  }
  return undefined;
}
