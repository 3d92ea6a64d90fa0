/** What every operation module receives and returns; main.ts turns a report into the frame. */
import type { ChildResult } from './child.ts';
import type { CompiledRunOptions } from './options.ts';
import type { Redactor } from './redact.ts';
import { readCause, type FailureCause } from '../protocol/cause.ts';
import type { RunnerError, RunnerOutcome, RunnerOutputs } from '../protocol/result.ts';

export interface OperationContext {
  readonly options: CompiledRunOptions;
  readonly redactor: Redactor;
  /** Runs `ptah` with the target URL in its env; its stderr is printed through redaction and bounding. */
  runPtah(
    args: readonly string[],
    limits: { readonly stdoutLimit: number; readonly devUrl?: boolean },
  ): Promise<ChildResult>;
  log(message: string): void;
}

export interface OperationReport {
  readonly outcome: RunnerOutcome;
  readonly exitCode: number;
  readonly childExitCode: number;
  readonly outputs: RunnerOutputs;
  readonly error?: RunnerError;
  readonly cause?: FailureCause;
}

/** Runner exit codes; the table lives in docs/runner.md. */
export const RUNNER_EXIT = {
  succeeded: 0,
  failed: 1,
  refused: 2,
  uncertain: 5,
} as const;

export function failed(
  code: string,
  message: string,
  childExitCode: number,
  outputs: RunnerOutputs = {},
): OperationReport {
  return {
    outcome: 'failed',
    exitCode: RUNNER_EXIT.failed,
    childExitCode,
    outputs,
    error: { code, message },
  };
}

export function refused(code: string, message: string, outputs: RunnerOutputs = {}): OperationReport {
  return {
    outcome: 'refused',
    exitCode: RUNNER_EXIT.refused,
    childExitCode: -1,
    outputs,
    error: { code, message },
  };
}

/** Why a child ended badly, in one short redacted line: its last stderr line, or how it was stopped. */
export function childFailureMessage(what: string, child: ChildResult, redactor: Redactor): string {
  if (child.spawnFailed) return `${what}: ptah could not be started`;
  if (child.stopped === 'deadline') return `${what}: stopped at the execution deadline`;
  if (child.stopped === 'aborted') return `${what}: stopped because the Pod is terminating`;
  const lines = child.stderr
    .toString('utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
  const last = lines.at(-1);
  const tail = last === undefined ? '' : `: ${redactor.redact(last).slice(0, 300)}`;
  return `${what}: ptah exited with ${child.exitCode}${tail}`;
}

/**
 * Why the child failed, classified: the execution deadline stopped it, or the cause its `--json` error
 * document states (checked again here). Undefined when neither says.
 */
export function childCause(child: ChildResult): FailureCause | undefined {
  if (child.stopped === 'deadline') return { kind: 'deadline' };
  if (child.stopped !== undefined || child.spawnFailed) return undefined;
  return readCause(parseJsonObject(child.stdout)?.['cause']);
}

/** The report with the child's classified cause, when it has one. */
export function withChildCause(report: OperationReport, child: ChildResult): OperationReport {
  const cause = childCause(child);
  return cause === undefined ? report : { ...report, cause };
}

/** Parses JSON Ptah printed; undefined when it is not a JSON object. */
export function parseJsonObject(bytes: Buffer): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(bytes.toString('utf8'));
    return typeof v === 'object' && v !== null && !Array.isArray(v)
      ? (v as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}
