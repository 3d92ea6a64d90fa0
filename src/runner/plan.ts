/**
 * Plan: two independent native plans, accepted only when they are byte-identical, then the native apply
 * path parses and dry-runs those exact bytes (seed: reconciliation). A no-change answer is only believed
 * when both plans say so by exit code AND by a readable plan document; empty or truncated output never
 * reads as convergence.
 */
import { writeFileSync } from 'node:fs';
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
} from './operation.ts';
import { applyDryRunCommand, planCommand } from './ptah-commands.ts';
import type { PlanOutputs } from './result.ts';

const EXIT_NO_CHANGES = 0;
const EXIT_CHANGES = 3;

export async function plan(ctx: OperationContext): Promise<OperationReport> {
  const { options } = ctx;
  const args = planCommand(options.schemaDir, options.exclude);
  // Captured one byte past the limit, so "exactly at the limit" and "over it" are told apart.
  const limits = { stdoutLimit: options.maxPlanBytes + 1, devUrl: true };

  const first = await ctx.runPtah(args, limits);
  const firstRefusal = refusePlanRun('first plan', first, ctx);
  if (firstRefusal !== undefined) return firstRefusal;
  const second = await ctx.runPtah(args, limits);
  const secondRefusal = refusePlanRun('second plan', second, ctx);
  if (secondRefusal !== undefined) return secondRefusal;

  if (first.exitCode !== second.exitCode || !first.stdout.equals(second.stdout)) {
    return failed(
      'plans_differ',
      'two independent plans were not byte-identical; the database or the inputs moved',
      second.exitCode,
    );
  }
  const bytes = first.stdout;
  const document = parseJsonObject(bytes);
  if (document === undefined)
    return failed('plan_unreadable', 'the plan is not a JSON document', first.exitCode);
  if (ctx.redactor.leaks(bytes)) {
    // Plan bytes cannot be redacted without changing their digest; a plan carrying a credential is refused.
    return refused('credential_in_plan', 'the plan document contains a database credential');
  }

  const statements = Array.isArray(document['statements']) ? document['statements'].length : undefined;
  const changes = first.exitCode === EXIT_CHANGES;
  if (statements !== undefined && statements > 0 !== changes) {
    return failed(
      'plan_inconsistent',
      `ptah exited ${first.exitCode} with ${statements} statements`,
      first.exitCode,
    );
  }
  const planContentDigest = sha256Digest(bytes);
  const facts = planFacts(document, statements);
  if (!changes) {
    const outputs: PlanOutputs = {
      planOutcome: 'NoChanges',
      planContentDigest,
      planSize: bytes.length,
      ...facts,
    };
    return {
      outcome: 'succeeded',
      exitCode: RUNNER_EXIT.succeeded,
      childExitCode: first.exitCode,
      outputs: { plan: outputs },
    };
  }

  const planFile = join(options.workDir, `plan-${safeFileToken(options.operationId)}.json`);
  writeFileSync(planFile, bytes, { mode: 0o400 });
  const dryRun = await ctx.runPtah(applyDryRunCommand(planFile), { stdoutLimit: 1024 * 1024 });
  if (dryRun.exitCode !== 0) {
    return failed(
      'dry_run_failed',
      childFailureMessage('apply dry-run', dryRun, ctx.redactor),
      dryRun.exitCode,
    );
  }
  const report = parseJsonObject(dryRun.stdout);
  if (report === undefined)
    return failed('dry_run_unreadable', 'the dry-run report is not a JSON object', dryRun.exitCode);
  const named = namedDigest(report);
  if (named !== undefined && named !== planContentDigest) {
    return failed(
      'dry_run_mismatch',
      'the dry-run report names another plan digest than the planned bytes',
      dryRun.exitCode,
    );
  }
  const dryRunStatements = Array.isArray(report['statements']) ? report['statements'].length : undefined;
  const outputs: PlanOutputs = {
    planOutcome: 'Changes',
    planContentDigest,
    planSize: bytes.length,
    bytesBase64: bytes.toString('base64'),
    ...(dryRunStatements !== undefined ? { dryRunStatements } : {}),
    ...facts,
  };
  return {
    outcome: 'succeeded',
    exitCode: RUNNER_EXIT.succeeded,
    childExitCode: dryRun.exitCode,
    outputs: { plan: outputs },
  };
}

/** A failed report when one plan run cannot be used: a bad exit code, or more bytes than a plan may have. */
function refusePlanRun(
  which: string,
  child: ChildResult,
  ctx: OperationContext,
): OperationReport | undefined {
  if (child.exitCode !== EXIT_NO_CHANGES && child.exitCode !== EXIT_CHANGES) {
    return failed('plan_failed', childFailureMessage(which, child, ctx.redactor), child.exitCode);
  }
  const limit = ctx.options.maxPlanBytes;
  if (child.stdoutBytesDropped > 0 || child.stdout.length > limit) {
    return failed('plan_too_large', `the ${which} exceeds ${limit} bytes`, child.exitCode);
  }
  return undefined;
}

/** Facts the plan document states about itself; the manager binds them, so only well-typed values pass. */
function planFacts(doc: Record<string, unknown>, statements: number | undefined): Partial<PlanOutputs> {
  const out: { -readonly [K in keyof PlanOutputs]?: PlanOutputs[K] } = {};
  if (statements !== undefined) out.statementCount = statements;
  if (typeof doc['destructive'] === 'boolean') out.destructive = doc['destructive'];
  for (const [key, field] of [
    ['observedStateFingerprint', 'observedStateFingerprint'],
    ['desiredStateFingerprint', 'desiredStateFingerprint'],
  ] as const) {
    const v = doc[key];
    if (typeof v === 'string' && /^sha256:[0-9a-f]{64}$/.test(v)) out[field] = v;
  }
  return out;
}

function namedDigest(report: Record<string, unknown>): string | undefined {
  for (const key of ['planContentDigest', 'contentDigest', 'planDigest']) {
    const v = report[key];
    if (typeof v === 'string') return v;
  }
  return undefined;
}

function safeFileToken(id: string): string {
  return id.replace(/[^A-Za-z0-9_-]/g, '_');
}
