/**
 * migration-history: one read of the revision table against the checked directory, through `ptah
 * migrations status --json`. It takes no lock and writes nothing. Ptah's report is checked field by field
 * and only versions, counts, checksums, flags and digests reach the frame: a report the runner cannot
 * read exactly is refused, never guessed at, because the manager plans from this list.
 */
import {
  childFailureMessage,
  failed,
  parseJsonObject,
  RUNNER_EXIT,
  type OperationContext,
  type OperationReport,
  withChildCause,
} from './operation.ts';
import { migrationStatusCommand } from './ptah-commands.ts';
import {
  MAX_FRAME_BLOCKED_VERSIONS,
  MAX_FRAME_PENDING_MIGRATIONS,
  MIGRATION_VERDICTS,
  type MigrationHistoryOutputs,
  type MigrationVerdict,
  type PendingMigrationOutput,
} from '../protocol/result.ts';
import { isCanonicalVersion } from './options.ts';

/** Room for well over MAX_FRAME_PENDING_MIGRATIONS entries; a longer report is refused, not half-read. */
const MAX_STATUS_REPORT_BYTES = 4 * 1024 * 1024;
const MAX_DESCRIPTION_CHARS = 128;
const MAX_VERSION_KEY_CHARS = 128;

/** The exit code `ptah migrations status` gives each verdict (src/cli/exit-codes.ts). */
const VERDICT_EXIT: Readonly<Record<MigrationVerdict, number>> = {
  dirty: 4,
  modified: 4,
  out_of_order: 4,
  ahead: 4,
  pending: 3,
  up_to_date: 0,
};

/** Which of the four version lists a verdict is about; the lists a verdict outranks must then be empty. */
const VERDICT_LIST: Readonly<Record<MigrationVerdict, BlockedList | undefined>> = {
  dirty: 'dirtyVersions',
  modified: 'modifiedVersions',
  out_of_order: 'outOfOrderVersions',
  ahead: 'aheadVersions',
  pending: undefined,
  up_to_date: undefined,
};
const BLOCKED_LISTS = ['dirtyVersions', 'modifiedVersions', 'outOfOrderVersions', 'aheadVersions'] as const;
type BlockedList = (typeof BLOCKED_LISTS)[number];

export async function migrationHistory(ctx: OperationContext): Promise<OperationReport> {
  const child = await ctx.runPtah(migrationStatusCommand(ctx.options.migrationsDir), {
    stdoutLimit: MAX_STATUS_REPORT_BYTES,
  });
  const accepted = child.stopped === undefined && [0, 3, 4].includes(child.exitCode);
  if (!accepted) {
    return withChildCause(
      failed(
        'history_read_failed',
        childFailureMessage('migrations status', child, ctx.redactor),
        child.exitCode,
      ),
      child,
    );
  }
  if (child.stdoutBytesDropped > 0) {
    return failed(
      'report_too_large',
      `status report exceeds ${MAX_STATUS_REPORT_BYTES} bytes`,
      child.exitCode,
    );
  }
  const report = parseJsonObject(child.stdout);
  if (report === undefined) {
    return failed('report_unreadable', 'status report is not a JSON object', child.exitCode);
  }
  const read = readStatusReport(report, child.exitCode);
  if (!read.ok) return failed(read.code, read.message, child.exitCode);
  return {
    outcome: 'succeeded',
    exitCode: RUNNER_EXIT.succeeded,
    childExitCode: child.exitCode,
    outputs: { history: read.history },
  };
}

export type StatusReading =
  | { readonly ok: true; readonly history: MigrationHistoryOutputs }
  | { readonly ok: false; readonly code: string; readonly message: string };

/**
 * Ptah's `migrations status --json` report as frame outputs (docs/cli-migrations.md). Every field is
 * checked; the verdict must agree with the exit code and with the lists it rests on.
 */
export function readStatusReport(report: Record<string, unknown>, exitCode: number): StatusReading {
  const bad = (why: string): StatusReading => ({
    ok: false,
    code: 'report_unreadable',
    message: `status report: ${why}`,
  });
  const verdict = report['verdict'];
  if (typeof verdict !== 'string' || !(MIGRATION_VERDICTS as readonly string[]).includes(verdict)) {
    return bad('the verdict is missing or unknown');
  }
  const v = verdict as MigrationVerdict;
  if (VERDICT_EXIT[v] !== exitCode) {
    return {
      ok: false,
      code: 'report_inconsistent',
      message: `ptah exited ${exitCode} with the verdict ${v}`,
    };
  }
  const current = report['currentVersion'];
  if (current !== null && !isCanonicalVersion(current)) return bad('currentVersion is not a version');
  const checkpoint = report['checkpointVersion'];
  if (checkpoint !== null && checkpoint !== undefined && !isCanonicalVersion(checkpoint)) {
    return bad('checkpointVersion is not a version');
  }
  const appliedCount = report['appliedCount'];
  const pendingCount = report['pendingCount'];
  if (!isCount(appliedCount) || !isCount(pendingCount)) return bad('the counts are missing');
  const fingerprint = report['fingerprint'];
  if (typeof fingerprint !== 'string' || !/^[0-9a-f]{64}$/.test(fingerprint)) {
    return bad('the history fingerprint is not 64 hex');
  }
  if (current === null && appliedCount !== 0) return bad('an empty history with applied versions');

  const rawPending = report['pending'];
  if (!Array.isArray(rawPending)) return bad('the pending list is missing');
  if (rawPending.length !== pendingCount) return bad('pendingCount differs from the pending list');
  if (rawPending.length > MAX_FRAME_PENDING_MIGRATIONS) {
    return {
      ok: false,
      code: 'too_many_pending',
      message: `${rawPending.length} migrations are pending, more than the ${MAX_FRAME_PENDING_MIGRATIONS} one reading may report; apply them in smaller directories or with ptah migrations up by hand`,
    };
  }
  const pending: PendingMigrationOutput[] = [];
  const seen = new Set<string>();
  for (const [i, item] of rawPending.entries()) {
    const entry = pendingEntry(item);
    if (entry === undefined) return bad(`pending entry ${i} is malformed`);
    if (seen.has(entry.version)) return bad(`version ${entry.version} is pending twice`);
    seen.add(entry.version);
    pending.push(entry);
  }

  const lists = {} as Record<BlockedList, string[]>;
  let omitted = 0;
  for (const name of BLOCKED_LISTS) {
    const raw = report[name];
    if (!Array.isArray(raw) || !raw.every(isCanonicalVersion))
      return bad(`${name} is not a list of versions`);
    lists[name] = raw.slice(0, MAX_FRAME_BLOCKED_VERSIONS);
    omitted += Math.max(0, raw.length - MAX_FRAME_BLOCKED_VERSIONS);
  }
  // The verdict's own list is not empty, and every list of a verdict it outranks is (the engine's order).
  const own = VERDICT_LIST[v];
  if (own !== undefined && lists[own].length === 0) return bad(`the verdict ${v} names no version`);
  const outranking = BLOCKED_LISTS.slice(
    0,
    own === undefined ? BLOCKED_LISTS.length : BLOCKED_LISTS.indexOf(own),
  );
  if (outranking.some((name) => lists[name].length > 0))
    return bad(`the verdict ${v} is outranked by another`);
  if (v === 'pending' && pending.length === 0) return bad('the verdict pending with nothing pending');
  if (v === 'up_to_date' && pending.length > 0) return bad('the verdict up_to_date with versions pending');

  return {
    ok: true,
    history: {
      verdict: v,
      currentVersion: current ?? '0',
      ...(typeof checkpoint === 'string' ? { checkpointVersion: checkpoint } : {}),
      appliedCount,
      pendingCount,
      historyFingerprint: `sha256:${fingerprint}`,
      pending,
      ...lists,
      ...(omitted > 0 ? { versionsOmitted: omitted } : {}),
    },
  };
}

function pendingEntry(item: unknown): PendingMigrationOutput | undefined {
  if (typeof item !== 'object' || item === null || Array.isArray(item)) return undefined;
  const o = item as Record<string, unknown>;
  const { version, versionKey, description, checksum, checkpoint, txMode } = o;
  if (!isCanonicalVersion(version)) return undefined;
  // The key is the file name's digits: the same number as the version, however many zeros lead it.
  if (
    typeof versionKey !== 'string' ||
    versionKey.length > MAX_VERSION_KEY_CHARS ||
    !/^[0-9]+$/.test(versionKey) ||
    BigInt(versionKey).toString() !== version
  ) {
    return undefined;
  }
  if (typeof description !== 'string') return undefined;
  if (typeof checksum !== 'string' || !/^[0-9a-f]{64}$/.test(checksum)) return undefined;
  if (typeof checkpoint !== 'boolean') return undefined;
  if (txMode !== null && txMode !== 'file' && txMode !== 'none') return undefined;
  return {
    version,
    versionKey,
    description: [...description].slice(0, MAX_DESCRIPTION_CHARS).join(''),
    checksum,
    checkpoint,
    transactionMode: txMode ?? 'unset',
  };
}

function isCount(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}
