/**
 * The termination message: one short line Kubernetes keeps in the container status after the log is
 * gone. It names the frame it summarises by digest, so it can be matched with a frame but never replace
 * one for a schema operation, and it says which file a refused snapshot failed on.
 */
import { writeFileSync } from 'node:fs';
import type { Redactor } from './redact.ts';
import type { RunnerResult } from '../protocol/result.ts';

export const SUMMARY_MARKER = 'PTAH_RUNNER_SUMMARY_V1';
/** Kubernetes keeps 4096 bytes; the summary stays well inside. */
const MAX_SUMMARY_BYTES = 2048;

export function terminationSummary(
  result: RunnerResult,
  frameDigest: string | undefined,
  redactor: Redactor,
): string {
  const summary: Record<string, unknown> = {
    protocolVersion: result.protocolVersion,
    operation: result.operation,
    operationId: result.operationId,
    outcome: result.outcome,
    exitCode: result.exitCode,
    ...(frameDigest !== undefined ? { frameDigest } : {}),
    ...(result.error !== undefined
      ? { errorCode: result.error.code, message: redactor.redact(result.error.message).slice(0, 512) }
      : {}),
    ...(result.outputs.snapshot?.failingFile !== undefined
      ? { failingFile: result.outputs.snapshot.failingFile.slice(0, 512) }
      : {}),
    ...migrationSummary(result),
  };
  let line = `${SUMMARY_MARKER} ${JSON.stringify(summary)}`;
  if (Buffer.byteLength(line) > MAX_SUMMARY_BYTES) {
    delete summary['message'];
    line = `${SUMMARY_MARKER} ${JSON.stringify(summary)}`;
  }
  return redactor.redact(line);
}

/**
 * A migration Apply's run in a few fixed-size fields: what a reader can still learn when the log with the
 * frame is gone (the versions in between are the plan's sequence).
 */
function migrationSummary(result: RunnerResult): { migration?: Record<string, unknown> } {
  const run = result.outputs.migrationApply;
  if (run === undefined) return {};
  const first = run.appliedVersions[0];
  const last = run.appliedVersions.at(-1);
  return {
    migration: {
      runOutcome: run.runOutcome,
      mutationStarted: run.mutationStarted,
      appliedCount: run.appliedVersions.length,
      ...(first !== undefined ? { firstApplied: first } : {}),
      ...(last !== undefined ? { lastApplied: last } : {}),
      ...(run.stoppedAt !== undefined ? { stoppedAt: run.stoppedAt } : {}),
    },
  };
}

/** Best effort: a Pod without a writable termination path still has its frame. */
export function writeTerminationMessage(path: string, text: string): boolean {
  try {
    writeFileSync(path, text + '\n');
    return true;
  } catch {
    return false;
  }
}
