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
  withChildCause,
} from './operation.ts';
import { driftCommand } from './ptah-commands.ts';
import { type DriftSummary, serverReportOf } from '../protocol/result.ts';

const MAX_CATEGORIES = 64;
/** Severities in increasing order; a severity Ptah names outside this list ranks above all of them. */
const SEVERITY_ORDER = ['none', 'safe', 'info', 'warning', 'error', 'destructive'];
/** A drift report is small; a bigger one is refused rather than half-read. */
const MAX_REPORT_BYTES = 4 * 1024 * 1024;

export async function observe(ctx: OperationContext): Promise<OperationReport> {
  const { options } = ctx;
  const child = await ctx.runPtah(driftCommand(options.schemaDir, options), {
    stdoutLimit: MAX_REPORT_BYTES,
  });
  if (child.exitCode !== 0 && child.exitCode !== 3) {
    return withChildCause(
      failed('observe_failed', childFailureMessage('drift', child, ctx.redactor), child.exitCode),
      child,
    );
  }
  if (child.stdoutBytesDropped > 0) {
    return failed('report_too_large', `drift report exceeds ${MAX_REPORT_BYTES} bytes`, child.exitCode);
  }
  const report = parseJsonObject(child.stdout);
  if (report === undefined) {
    return failed('report_unreadable', 'drift report is not a JSON object', child.exitCode);
  }
  const drift = summarise(report, sha256Digest(child.stdout));
  if (drift === undefined) {
    return failed('report_unreadable', 'drift report states no total and no findings', child.exitCode);
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

/**
 * Reads ptah's report: `total`, `drifted`, `highest_severity` and `categories` ({name: count}) when it
 * states them, else a `findings` list of {category|kind|type, count?, severity}.
 */
export function summarise(report: Record<string, unknown>, reportDigest: string): DriftSummary | undefined {
  const counts = new Map<string, number>();
  let highest = 'none';
  const raise = (severity: unknown) => {
    // A severity outside the known set is kept as the word 'unknown' (ranked above all others), never as
    // the child's own text: whatever reaches the frame must be a fixed vocabulary.
    const lower = typeof severity === 'string' ? severity.toLowerCase() : '';
    const s = SEVERITY_ORDER.includes(lower) ? lower : 'unknown';
    if (rank(s) > rank(highest)) highest = s;
  };
  const declared = report['categories'];
  const findings = Array.isArray(report['findings']) ? (report['findings'] as unknown[]) : undefined;
  if (isCountRecord(declared)) {
    for (const [name, n] of Object.entries(declared)) add(counts, categoryName(name), n);
  } else if (findings !== undefined) {
    for (const f of findings) {
      const item = typeof f === 'object' && f !== null ? (f as Record<string, unknown>) : {};
      const n = Number.isSafeInteger(item['count']) ? (item['count'] as number) : 1;
      add(counts, categoryName(item['category'] ?? item['kind'] ?? item['type']), n);
    }
  }
  for (const f of findings ?? []) raise((f as Record<string, unknown> | null)?.['severity']);
  if (typeof report['highest_severity'] === 'string') raise(report['highest_severity']);

  const declaredTotal = report['total'];
  const counted = [...counts.values()].reduce((a, b) => a + b, 0);
  if (!Number.isSafeInteger(declaredTotal) && declared === undefined && findings === undefined)
    return undefined;
  const total = Number.isSafeInteger(declaredTotal) ? (declaredTotal as number) : counted;
  const drifted = typeof report['drifted'] === 'boolean' ? report['drifted'] : total > 0;
  if (!drifted) highest = 'none';

  const categories: Record<string, number> = {};
  const sorted = [...counts.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  for (const [i, [name, n]] of sorted.entries()) {
    const slot = i < MAX_CATEGORIES - 1 || sorted.length <= MAX_CATEGORIES ? name : 'other';
    categories[slot] = (categories[slot] ?? 0) + n;
  }
  const server = serverReportOf(report['server']);
  return {
    reportDigest,
    drifted,
    total,
    highestSeverity: highest,
    categories,
    ...(server !== undefined ? { server } : {}),
  };
}

function add(counts: Map<string, number>, name: string, n: number): void {
  if (n > 0) counts.set(name, (counts.get(name) ?? 0) + n);
}

function isCountRecord(v: unknown): v is Record<string, number> {
  return (
    typeof v === 'object' &&
    v !== null &&
    !Array.isArray(v) &&
    Object.values(v).every((n) => Number.isSafeInteger(n) && n >= 0)
  );
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
