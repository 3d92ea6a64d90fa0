/**
 * Apply: executes exactly the approved plan bytes. Whatever happens after the child starts, the runner
 * never reports convergence; it reports succeeded, failed (Ptah says nothing changed) or uncertain, and
 * the manager proves the database state with a fresh Observe and Plan.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FailureCause } from '../protocol/cause.ts';
import {
  childCause,
  childFailureMessage,
  parseJsonObject,
  refused,
  RUNNER_EXIT,
  type OperationContext,
  type OperationReport,
} from './operation.ts';
import type { PartialApply } from '../protocol/result.ts';
import { readPlanDir } from './plan-dir.ts';
import { applyCommand } from './ptah-commands.ts';
import { otherTargetRefusal } from './target-identity.ts';

/**
 * ptah's exit codes for apply (src/cli/exit-codes.ts): 1 failed (the transaction rolled back, or the first
 * statement of a MySQL plan failed) and 4 refused (a stale plan, checked before any statement) leave the
 * database as it was. A MySQL apply that fails after its first statement exits 5 (partial: the statements
 * before it committed on their own), which lands below as uncertain.
 */
const CLEAN_FAILURES = new Set([1, 4]);

export async function apply(ctx: OperationContext): Promise<OperationReport> {
  const { options } = ctx;
  const expected = options.expectedPlanContentDigest ?? '';
  const rebuilt = readPlanDir(options.planDir, expected, options.maxPlanBytes);
  const base = { planContentDigest: expected, mutationStarted: false };
  const otherTarget = otherTargetRefusal(options, { apply: base });
  if (otherTarget !== undefined) return otherTarget;
  if (!rebuilt.ok) return refused('plan_refused', rebuilt.reason, { apply: base });

  const planFile = join(options.workDir, `apply-${options.operationId.replace(/[^A-Za-z0-9_-]/g, '_')}.json`);
  writeFileSync(planFile, rebuilt.bytes, { mode: 0o400 });
  const outputs = { apply: { ...base, mutationStarted: true } };
  const child = await ctx.runPtah(applyCommand(planFile, options.lockTimeoutMs), {
    stdoutLimit: 1024 * 1024,
  });
  if (child.exitCode === 0 && child.stopped === undefined) {
    return { outcome: 'succeeded', exitCode: RUNNER_EXIT.succeeded, childExitCode: 0, outputs };
  }
  if (child.spawnFailed) {
    return refused('spawn_failed', childFailureMessage('apply', child, ctx.redactor), { apply: base });
  }
  const message = childFailureMessage('apply', child, ctx.redactor);
  if (CLEAN_FAILURES.has(child.exitCode) && child.stopped === undefined) {
    return {
      outcome: 'failed',
      exitCode: RUNNER_EXIT.failed,
      childExitCode: child.exitCode,
      outputs,
      error: { code: 'apply_failed', message },
      ...causeOf(child),
    };
  }
  // Killed, crashed, or ptah itself said the outcome is unknown: never narrowed, never replayed.
  const partial = child.stopped === undefined ? partialApply(child.stdout) : undefined;
  return {
    outcome: 'uncertain',
    exitCode: RUNNER_EXIT.uncertain,
    childExitCode: child.exitCode,
    outputs: partial ? { apply: { ...outputs.apply, partial } } : outputs,
    error: { code: 'outcome_unknown', message },
    ...causeOf(child),
  };
}

function causeOf(child: Parameters<typeof childCause>[0]): { cause?: FailureCause } {
  const cause = childCause(child);
  return cause === undefined ? {} : { cause };
}

/** The failing statement of a partial apply, from ptah's --json report; only its numbers and SQLSTATE. */
function partialApply(stdout: Buffer): PartialApply | undefined {
  const report = parseJsonObject(stdout);
  const failure = report?.['failure'];
  if (report?.['outcome'] !== 'partial' || typeof failure !== 'object' || failure === null) return undefined;
  const f = failure as Record<string, unknown>;
  const count = (v: unknown): number | undefined =>
    typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : undefined;
  const position = count(f['position']);
  const applied = count(f['applied']);
  if (position === undefined || applied === undefined) return undefined;
  const errno = count(f['errno']);
  const sqlstate =
    typeof f['sqlstate'] === 'string' && /^[0-9A-Z]{5}$/.test(f['sqlstate']) ? f['sqlstate'] : undefined;
  return {
    position,
    applied,
    ...(errno !== undefined ? { errno } : {}),
    ...(sqlstate !== undefined ? { sqlstate } : {}),
  };
}
