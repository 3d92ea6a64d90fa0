/**
 * Observe: a read-only drift report. The report's detail stays inside the Pod; the result carries its
 * digest, whether there is drift, a count, the highest severity and at most 64 category counts.
 */
import { sha256Digest } from '../api/digest.ts';
import {
  childFailureMessage,
  failed,
  parseJsonObject,
  RUNNER_EXIT,
  type OperationContext,
  type OperationReport,
} from './operation.ts';
import { driftCommand } from './ptah-commands.ts';
import type { DriftSummary } from './result.ts';

const MAX_CATEGORIES = 64;
/** Severities in increasing order; a severity Ptah names outside this list ranks above all of them. */
const SEVERITY_ORDER = ['none', 'safe', 'info', 'warning', 'error', 'destructive'];
/** Where a drift report lists its findings, in the order they are looked for. */
const FINDING_KEYS = ['findings', 'changes', 'differences', 'drift'];
/** A drift report is small; a bigger one is refused rather than half-read. */
const MAX_REPORT_BYTES = 4 * 1024 * 1024;

export async function observe(ctx: OperationContext): Promise<OperationReport> {
  const child = await ctx.runPtah(driftCommand(ctx.options.schemaDir), { stdoutLimit: MAX_REPORT_BYTES });
  if (child.exitCode !== 0 && child.exitCode !== 3) {
    return failed('observe_failed', childFailureMessage('drift', child, ctx.redactor), child.exitCode);
  }
  if (child.stdoutBytesDropped > 0) {
    return failed('report_too_large', `drift report exceeds ${MAX_REPORT_BYTES} bytes`, child.exitCode);
  }
  const report = parseJsonObject(child.stdout);
  if (report === undefined) {
    return failed('report_unreadable', 'drift report is not a JSON object', child.exitCode);
  }
  const drift = summarise(report, child.exitCode === 3, sha256Digest(child.stdout));
  if (drift === undefined) {
    return failed('report_unreadable', 'drift report lists no findings array and no total', child.exitCode);
  }
  if (drift.drifted !== (child.exitCode === 3)) {
    // The exit code and the report disagree: neither is believed.
    return failed(
      'report_inconsistent',
      `ptah exited ${child.exitCode} with ${drift.total} findings`,
      child.exitCode,
    );
  }
  return {
    outcome: 'succeeded',
    exitCode: RUNNER_EXIT.succeeded,
    childExitCode: child.exitCode,
    outputs: { drift },
  };
}

function summarise(
  report: Record<string, unknown>,
  drifted: boolean,
  reportDigest: string,
): DriftSummary | undefined {
  const key = FINDING_KEYS.find((k) => Array.isArray(report[k]));
  const findings = key === undefined ? undefined : (report[key] as unknown[]);
  const declaredTotal = report['total'];
  if (findings === undefined && !Number.isSafeInteger(declaredTotal)) return undefined;
  const counts = new Map<string, number>();
  let highest = 'none';
  for (const f of findings ?? []) {
    const item = typeof f === 'object' && f !== null ? (f as Record<string, unknown>) : {};
    const category = categoryName(item['category'] ?? item['kind'] ?? item['type']);
    counts.set(category, (counts.get(category) ?? 0) + 1);
    const severity = typeof item['severity'] === 'string' ? item['severity'].toLowerCase() : 'unknown';
    if (rank(severity) > rank(highest)) highest = severity;
  }
  const categories: Record<string, number> = {};
  const sorted = [...counts.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  for (const [i, [name, n]] of sorted.entries()) {
    const slot = i < MAX_CATEGORIES - 1 || sorted.length <= MAX_CATEGORIES ? name : 'other';
    categories[slot] = (categories[slot] ?? 0) + n;
  }
  const total = findings?.length ?? (declaredTotal as number);
  return { reportDigest, drifted: drifted || total > 0, total, highestSeverity: highest, categories };
}

/** Category names become status map keys: lowercase snake case, bounded. */
function categoryName(raw: unknown): string {
  if (typeof raw !== 'string') return 'unknown';
  const name = raw
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .replace(/[^a-z0-9_]+/g, '_')
    .replace(/^[^a-z]+/, '')
    .slice(0, 64);
  return name === '' ? 'unknown' : name;
}

function rank(severity: string): number {
  const i = SEVERITY_ORDER.indexOf(severity);
  return i < 0 ? SEVERITY_ORDER.length : i;
}
