/**
 * migration-apply: runs the approved sequence and nothing else, through `ptah migrations up
 * --expect-sequence`. Ptah compares the sequence with its own selection under the migration lock, the
 * moment every earlier check is behind it, and refuses any difference before its first write.
 *
 * The runner believes ptah's report only when it is complete and agrees with ptah's exit code; a run that
 * was killed, crashed, or left no such report is `uncertain` with run outcome `unknown`, never narrowed and
 * never retried: replaying a non-idempotent statement is the damage the latch downstream exists to prevent.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  childFailureMessage,
  parseJsonObject,
  refused,
  withChildCause,
  RUNNER_EXIT,
  type OperationContext,
  type OperationReport,
} from './operation.ts';
import { isCanonicalVersion } from './options.ts';
import { migrationUpCommand } from './ptah-commands.ts';
import { otherTargetRefusal } from './target-identity.ts';
import {
  MAX_FRAME_PENDING_MIGRATIONS,
  MIGRATION_RUN_REASONS,
  type MigrationApplyOutputs,
  type MigrationRunOutcome,
  type MigrationRunReason,
  type MigrationStop,
  type RunnerOutcome,
} from '../protocol/result.ts';

/** ptah's report is a few hundred bytes plus one version per applied file. */
const MAX_UP_REPORT_BYTES = 1024 * 1024;

/** Reasons ptah gives before its first write: nothing can have changed. */
const NOTHING_WRITTEN: ReadonlySet<MigrationRunReason> = new Set([
  'sequence_mismatch',
  'history_mismatch',
  'history_dirty',
  'history_modified',
  'history_out_of_order',
  'history_ahead',
  'lock_timeout',
  'invalid_directory',
  'invalid_file',
  'connection_failed',
]);

/** The reasons `ptah migrations up` exits 4 for (a refusal); every other failure exits 1. */
const REFUSAL_REASONS: ReadonlySet<MigrationRunReason> = new Set([
  'sequence_mismatch',
  'history_mismatch',
  'history_dirty',
  'history_modified',
  'history_out_of_order',
  'history_ahead',
]);

const RUN_OUTCOMES: readonly MigrationRunOutcome[] = [
  'up_to_date',
  'applied',
  'failed',
  'partial',
  'unknown',
];

/** How each of ptah's outcomes reads as a runner outcome, and the runner exit code it gives. */
const RUNNER_OUTCOME: Readonly<Record<MigrationRunOutcome, RunnerOutcome>> = {
  up_to_date: 'succeeded',
  applied: 'succeeded',
  failed: 'failed',
  partial: 'uncertain',
  unknown: 'uncertain',
};

export async function migrationApply(ctx: OperationContext): Promise<OperationReport> {
  const { options } = ctx;
  const nothing: MigrationApplyOutputs = {
    runOutcome: 'failed',
    mutationStarted: false,
    appliedVersions: [],
  };
  const otherTarget = otherTargetRefusal(options, { migrationApply: nothing });
  if (otherTarget !== undefined) return otherTarget;

  const sequenceFile = join(
    options.workDir,
    `sequence-${options.operationId.replace(/[^A-Za-z0-9_-]/g, '_')}.json`,
  );
  writeFileSync(sequenceFile, JSON.stringify(options.expectedSequence ?? []), { mode: 0o400 });
  const child = await ctx.runPtah(
    migrationUpCommand(options.migrationsDir, sequenceFile, {
      ...(options.expectedHistoryFingerprint !== undefined
        ? { expectedHistoryFingerprint: options.expectedHistoryFingerprint }
        : {}),
      ...(options.transactionMode !== undefined ? { transactionMode: options.transactionMode } : {}),
      ...(options.lockTimeoutMs !== undefined ? { lockTimeoutMs: options.lockTimeoutMs } : {}),
    }),
    { stdoutLimit: MAX_UP_REPORT_BYTES },
  );
  if (child.spawnFailed) {
    return refused('spawn_failed', childFailureMessage('migrations up', child, ctx.redactor), {
      migrationApply: nothing,
    });
  }

  const parsed = child.stdoutBytesDropped > 0 ? undefined : parseJsonObject(child.stdout);
  const report = parsed === undefined ? undefined : readUpReport(parsed, child.exitCode);
  if (report === undefined) {
    // Killed, crashed, or a report that is cut, malformed or disagrees with the exit code: the database
    // may hold any prefix of the run.
    return {
      outcome: 'uncertain',
      exitCode: RUNNER_EXIT.uncertain,
      childExitCode: child.exitCode,
      outputs: { migrationApply: { runOutcome: 'unknown', mutationStarted: true, appliedVersions: [] } },
      error: {
        code: 'outcome_unknown',
        message: childFailureMessage('migrations up', child, ctx.redactor),
      },
      // Only the deadline classifies here: a killed run has no report to read a cause from.
      ...(child.stopped === 'deadline' ? { cause: { kind: 'deadline' } as const } : {}),
    };
  }

  const outcome = RUNNER_OUTCOME[report.runOutcome];
  const exitCode = { succeeded: 0, failed: 1, refused: 2, uncertain: 5 }[outcome];
  if (outcome === 'succeeded') {
    return { outcome, exitCode, childExitCode: child.exitCode, outputs: { migrationApply: report } };
  }
  const code =
    report.runOutcome === 'partial'
      ? 'outcome_partial'
      : report.runOutcome === 'unknown'
        ? 'outcome_unknown'
        : (report.reason ?? 'migration_failed');
  // The deadline stopped ptah between files (its report says `interrupted`), or its report states why it
  // failed (a connection refused before anything ran, a password refused …).
  return withChildCause(
    {
      outcome,
      exitCode,
      childExitCode: child.exitCode,
      outputs: { migrationApply: report },
      error: { code, message: describeRun(report) },
    },
    child,
  );
}

/**
 * Ptah's `migrations up --json` report as frame outputs (docs/cli-migrations.md), or undefined when any
 * field is not what the contract says or the outcome is not the one ptah's exit code stands for.
 */
export function readUpReport(
  report: Record<string, unknown>,
  exitCode: number,
): MigrationApplyOutputs | undefined {
  const runOutcome = report['outcome'];
  if (typeof runOutcome !== 'string' || !(RUN_OUTCOMES as readonly string[]).includes(runOutcome)) {
    return undefined;
  }
  const outcome = runOutcome as MigrationRunOutcome;
  const rawReason = report['reason'];
  let reason: MigrationRunReason | undefined;
  if (rawReason !== undefined && rawReason !== null) {
    if (typeof rawReason !== 'string' || !(MIGRATION_RUN_REASONS as readonly string[]).includes(rawReason)) {
      return undefined;
    }
    reason = rawReason as MigrationRunReason;
  }
  if (exitCode !== expectedExit(outcome, reason)) return undefined;
  if ((outcome === 'applied' || outcome === 'up_to_date') !== (reason === undefined)) return undefined;

  const applied = report['applied'];
  if (
    !Array.isArray(applied) ||
    applied.length > MAX_FRAME_PENDING_MIGRATIONS ||
    !applied.every(isCanonicalVersion)
  ) {
    return undefined;
  }
  const stoppedAt = stopOf(report, outcome);
  if (stoppedAt === null) return undefined;
  const mismatch = mismatchOf(report['mismatch']);
  if (mismatch === null) return undefined;

  const mutationStarted =
    outcome === 'applied' ||
    outcome === 'partial' ||
    outcome === 'unknown' ||
    (outcome === 'failed' && (applied.length > 0 || reason === undefined || !NOTHING_WRITTEN.has(reason)));
  return {
    runOutcome: outcome,
    mutationStarted,
    appliedVersions: applied,
    ...(stoppedAt !== undefined ? { stoppedAt } : {}),
    ...(reason !== undefined ? { reason } : {}),
    ...(mismatch !== undefined ? { mismatch } : {}),
  };
}

function expectedExit(outcome: MigrationRunOutcome, reason: MigrationRunReason | undefined): number {
  if (outcome === 'applied' || outcome === 'up_to_date') return 0;
  if (outcome === 'partial' || outcome === 'unknown') return 5;
  return reason !== undefined && REFUSAL_REASONS.has(reason) ? 4 : 1;
}

/** Undefined when the report names no stop; null when what it names is malformed. */
function stopOf(
  report: Record<string, unknown>,
  outcome: MigrationRunOutcome,
): MigrationStop | undefined | null {
  const version = report['stoppedAt'];
  const failure = report['failure'];
  if (version === undefined && failure === undefined) return undefined;
  if (version !== undefined && !isCanonicalVersion(version)) return null;
  if (failure === undefined || failure === null) return typeof version === 'string' ? { version } : undefined;
  if (typeof failure !== 'object' || Array.isArray(failure)) return null;
  const f = failure as Record<string, unknown>;
  const failed = f['version'];
  const position = f['statementIndex'];
  if (!isCanonicalVersion(failed) || (version !== undefined && version !== failed)) return null;
  if (typeof position !== 'number' || !Number.isSafeInteger(position) || position < 1) return null;
  const sqlstate = f['sqlstate'];
  const errno = f['errno'];
  if (
    sqlstate !== null &&
    sqlstate !== undefined &&
    (typeof sqlstate !== 'string' || !/^[0-9A-Z]{5}$/.test(sqlstate))
  ) {
    return null;
  }
  if (
    errno !== null &&
    errno !== undefined &&
    (typeof errno !== 'number' || !Number.isSafeInteger(errno) || errno < 1 || errno > 65535)
  ) {
    return null;
  }
  return {
    version: failed,
    position,
    // A partial run leaves every statement before the failing one applied (the dirty row's
    // statements_done); a failed one committed nothing of this file.
    ...(outcome === 'partial'
      ? { statementsApplied: position - 1 }
      : outcome === 'failed'
        ? { statementsApplied: 0 }
        : {}),
    ...(typeof sqlstate === 'string' ? { sqlstate } : {}),
    ...(typeof errno === 'number' ? { errno } : {}),
  };
}

/** Undefined when absent; null when malformed. */
function mismatchOf(raw: unknown): MigrationApplyOutputs['mismatch'] | undefined | null {
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw !== 'object' || Array.isArray(raw)) return null;
  const m = raw as Record<string, unknown>;
  const position = m['position'];
  if (typeof position !== 'number' || !Number.isSafeInteger(position) || position < 0) return null;
  const side = (v: unknown): string | undefined | null => {
    if (v === null || v === undefined) return undefined;
    if (typeof v !== 'object') return null;
    const version = (v as Record<string, unknown>)['version'];
    return isCanonicalVersion(version) ? version : null;
  };
  const expectedVersion = side(m['expected']);
  const actualVersion = side(m['actual']);
  if (expectedVersion === null || actualVersion === null) return null;
  return {
    position,
    ...(expectedVersion !== undefined ? { expectedVersion } : {}),
    ...(actualVersion !== undefined ? { actualVersion } : {}),
  };
}

/** One line for people: versions, positions and codes, the same facts the outputs carry. */
function describeRun(r: MigrationApplyOutputs): string {
  const parts = [`migrations up: ${r.runOutcome}${r.reason !== undefined ? ` (${r.reason})` : ''}`];
  if (r.appliedVersions.length > 0) parts.push(`applied ${r.appliedVersions.length} versions`);
  const s = r.stoppedAt;
  if (s !== undefined) {
    parts.push(
      `stopped at ${s.version}` +
        (s.position !== undefined ? ` statement ${s.position}` : '') +
        (s.sqlstate !== undefined ? ` SQLSTATE ${s.sqlstate}` : '') +
        (s.errno !== undefined ? ` errno ${s.errno}` : ''),
    );
  }
  if (r.mismatch !== undefined) {
    parts.push(
      `the approved sequence differs at position ${r.mismatch.position}: approved ${r.mismatch.expectedVersion ?? '(nothing)'}, pending ${r.mismatch.actualVersion ?? '(nothing)'}`,
    );
  }
  if (r.runOutcome === 'partial' || r.runOutcome === 'unknown') {
    parts.push('the database may hold part of the stopped version; nothing is retried');
  }
  return parts.join('; ');
}
