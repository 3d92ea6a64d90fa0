/**
 * `up`: applies the engine's pending selection under the migration lock and resolves to a result, never a
 * throw. The result carries versions, positions and codes only: no SQL text, no server message, no rows.
 *
 * Per file, with the effective transaction mode (run-wide override, else the file's directive, else the
 * dialect default):
 *   - `file` on a database with transactional DDL: BEGIN, statements, revision row, COMMIT. A failure rolls
 *     the whole file back: outcome `failed`, history clean.
 *   - otherwise (mode `none`, or a database whose DDL commits implicitly): a dirty revision row is written
 *     first, statements run (inside a transaction for `file`, which protects DML only), then the row is
 *     marked clean. A failure that provably changed nothing (at statement 1, or in `file` mode while the
 *     database confirms no statement committed implicitly) removes the row: outcome `failed`. Any other
 *     failure leaves the row dirty with the number of statements done: outcome `partial`.
 *   - a broken connection during a statement or COMMIT: outcome `unknown` (it may or may not have run).
 */
import { compareVersions, type MigrationFile, type TxMode } from './migration-file.ts';
import { computeStatus, type MigrationStatus, type Verdict } from './migration-status.ts';
import { splitStatements, type SplitStatement } from './statement-splitter.ts';
import type { MigrationAdapter, StatementErrorClass } from './dialects/migration-adapter.ts';

export type UpOutcome = 'up_to_date' | 'applied' | 'failed' | 'partial' | 'unknown';

export type UpReason =
  | 'sequence_mismatch'
  | 'history_mismatch'
  | 'history_dirty'
  | 'history_modified'
  | 'history_out_of_order'
  | 'history_ahead'
  | 'lock_timeout'
  | 'invalid_file'
  /** The directory does not match ptah.sum or a file name/directive is invalid (reported by the CLI). */
  | 'invalid_directory'
  | 'statement_failed'
  | 'connection_lost'
  | 'database_error'
  | 'connection_failed'
  | 'interrupted';

export interface ExpectedMigration {
  readonly version: string;
  readonly checksum: string;
}

export interface UpFailure {
  readonly version: string;
  /** 1-based position of the failing statement within its file. */
  readonly statementIndex: number;
  /** Line of the file on which that statement's code starts, for people (not part of the contract). */
  readonly line: number;
  readonly sqlstate: string | null;
  /** MySQL/MariaDB error number; null on PostgreSQL. */
  readonly errno: number | null;
}

export interface UpResult {
  readonly outcome: UpOutcome;
  /** Versions applied by this run, in order. */
  readonly applied: readonly string[];
  /** The version the run stopped at (failed, partial or unknown). */
  readonly stoppedAt?: string;
  readonly failure?: UpFailure;
  /** Why the run did not apply everything; absent on success. */
  readonly reason?: UpReason;
  /** For sequence_mismatch: the first differing position (0-based) and both sides' version/checksum. */
  readonly mismatch?: {
    readonly position: number;
    readonly expected: ExpectedMigration | null;
    readonly actual: ExpectedMigration | null;
  };
  /** For invalid_file: the file's name (never its content). */
  readonly file?: string;
  readonly lockWaitMs: number;
  readonly durationMs: number;
}

export interface UpOptions {
  readonly files: readonly MigrationFile[];
  readonly lockTimeoutMs: number;
  readonly txMode?: TxMode;
  readonly expectSequence?: readonly ExpectedMigration[];
  /** The history fingerprint the sequence was approved against (SHA-256 hex); compared under the lock. */
  readonly expectHistoryFingerprint?: string;
  /** Stop after this version (used by baseline on a shadow database). */
  readonly toVersion?: string;
  /** Progress: versions and timings only. */
  readonly onProgress?: (event: { version: string; phase: 'start' | 'done'; ms?: number }) => void;
  /**
   * Aborting asks the run to stop before the next file (SIGTERM from the Job): the file running finishes,
   * the result is still returned, and the stopped version has not started.
   */
  readonly signal?: AbortSignal;
}

const BLOCKING: Partial<Record<Verdict, UpReason>> = {
  dirty: 'history_dirty',
  modified: 'history_modified',
  out_of_order: 'history_out_of_order',
  ahead: 'history_ahead',
};

function firstMismatch(
  expected: readonly ExpectedMigration[],
  actual: readonly ExpectedMigration[],
): UpResult['mismatch'] | undefined {
  const n = Math.max(expected.length, actual.length);
  for (let i = 0; i < n; i++) {
    const e = expected[i];
    const a = actual[i];
    if (e === undefined || a === undefined || e.version !== a.version || e.checksum !== a.checksum) {
      return {
        position: i,
        expected: e ? { version: e.version, checksum: e.checksum } : null,
        actual: a ? { version: a.version, checksum: a.checksum } : null,
      };
    }
  }
  return undefined;
}

type FileOutcome =
  | { readonly ok: true; readonly ms: number }
  | {
      readonly ok: false;
      readonly outcome: 'failed' | 'partial' | 'unknown';
      readonly failure?: UpFailure;
      readonly reason: UpReason;
    };

async function applyFile(
  db: MigrationAdapter,
  file: MigrationFile,
  statements: readonly SplitStatement[],
  mode: TxMode,
): Promise<FileOutcome> {
  const started = performance.now();
  const fail = (
    stmt: SplitStatement | undefined,
    cls: StatementErrorClass,
    outcome: 'failed' | 'partial' | 'unknown',
  ): FileOutcome => ({
    ok: false,
    outcome,
    reason: cls.kind === 'connection' ? 'connection_lost' : 'statement_failed',
    ...(stmt
      ? {
          failure: {
            version: file.version,
            statementIndex: stmt.index,
            line: stmt.line,
            sqlstate: cls.sqlstate,
            errno: cls.errno,
          },
        }
      : {}),
  });
  const row = {
    version: file.version,
    description: file.description,
    checksum: file.checksum,
    checkpoint: file.checkpoint,
  };

  if (mode === 'file' && db.supportsTransactionalDdl) {
    await db.begin();
    for (const stmt of statements) {
      try {
        await db.execute(stmt.sql);
      } catch (error) {
        const cls = db.classifyError(error);
        if (cls.kind === 'connection') return fail(stmt, cls, 'unknown');
        await db.rollback().catch(() => undefined);
        return fail(stmt, cls, 'failed');
      }
    }
    const ms = Math.round(performance.now() - started);
    try {
      await db.insertRevision({ ...row, executionMs: ms, dirty: false, statementsDone: null });
      await db.commit();
    } catch (error) {
      const cls = db.classifyError(error);
      if (cls.kind === 'connection') return fail(undefined, cls, 'unknown');
      await db.rollback().catch(() => undefined);
      return fail(undefined, cls, 'failed');
    }
    return { ok: true, ms };
  }

  // No transactional DDL (or mode none): the dirty row is what survives a stop half way.
  await db.insertRevision({ ...row, executionMs: 0, dirty: true, statementsDone: 0 });
  const inTx = mode === 'file';
  // In `file` mode, whether every statement so far stayed inside the transaction (so ROLLBACK undoes
  // them all); false once one committed implicitly or the database cannot say.
  let rollbackUndoesAll = inTx;
  if (inTx) await db.begin();
  for (const stmt of statements) {
    try {
      await db.execute(stmt.sql);
      if (rollbackUndoesAll) rollbackUndoesAll = (await db.inTransaction()) === true;
    } catch (error) {
      const cls = db.classifyError(error);
      if (cls.kind === 'connection') return fail(stmt, cls, 'unknown');
      // MySQL commits implicitly before a DDL statement runs, even one that then fails: ask again.
      if (rollbackUndoesAll) rollbackUndoesAll = (await db.inTransaction().catch(() => false)) === true;
      if (inTx) await db.rollback().catch(() => undefined);
      const done = rollbackUndoesAll ? 0 : stmt.index - 1;
      try {
        if (done === 0) await db.deleteRevision(file.version);
        else await db.markRevisionStopped(file.version, done);
      } catch {
        // The statement failed cleanly but the record could not be corrected: the database holds a dirty
        // row with statements_done = 0, which reads as dirty. Report the statement's failure, as unknown.
        return fail(stmt, cls, 'unknown');
      }
      return fail(stmt, cls, done === 0 ? 'failed' : 'partial');
    }
  }
  const ms = Math.round(performance.now() - started);
  try {
    if (inTx) await db.commit();
    await db.markRevisionClean(file.version, ms);
  } catch (error) {
    return fail(undefined, db.classifyError(error), 'unknown');
  }
  return { ok: true, ms };
}

export async function migrateUp(db: MigrationAdapter, options: UpOptions): Promise<UpResult> {
  const t0 = performance.now();
  const elapsed = () => Math.round(performance.now() - t0);
  const applied: string[] = [];
  let lockWaitMs = 0;
  let locked = false;
  let mutationStarted = false;
  try {
    const lockStart = performance.now();
    locked = await db.acquireLock(options.lockTimeoutMs);
    lockWaitMs = Math.round(performance.now() - lockStart);
    if (!locked)
      return { outcome: 'failed', applied, reason: 'lock_timeout', lockWaitMs, durationMs: elapsed() };

    // Everything below runs under the lock: the history cannot move between reading and applying.
    const status: MigrationStatus = computeStatus(options.files, await db.readRevisions());
    const blocked = BLOCKING[status.verdict];
    if (blocked !== undefined)
      return { outcome: 'failed', applied, reason: blocked, lockWaitMs, durationMs: elapsed() };

    if (
      options.expectHistoryFingerprint !== undefined &&
      options.expectHistoryFingerprint !== status.fingerprint
    ) {
      return { outcome: 'failed', applied, reason: 'history_mismatch', lockWaitMs, durationMs: elapsed() };
    }

    const selection = status.pending.filter(
      (p) => options.toVersion === undefined || compareVersions(p.version, options.toVersion) <= 0,
    );
    if (options.expectSequence !== undefined) {
      const mismatch = firstMismatch(
        options.expectSequence,
        selection.map((p) => ({ version: p.version, checksum: p.checksum })),
      );
      if (mismatch !== undefined) {
        return {
          outcome: 'failed',
          applied,
          reason: 'sequence_mismatch',
          mismatch,
          lockWaitMs,
          durationMs: elapsed(),
        };
      }
    }
    if (selection.length === 0) return { outcome: 'up_to_date', applied, lockWaitMs, durationMs: elapsed() };

    const byVersion = new Map(options.files.map((f) => [f.version, f]));
    const plan: { file: MigrationFile; statements: SplitStatement[] }[] = [];
    for (const p of selection) {
      const file = byVersion.get(p.version);
      if (file === undefined) continue;
      try {
        plan.push({ file, statements: splitStatements(file.sql, db.dialect) });
      } catch {
        return {
          outcome: 'failed',
          applied,
          reason: 'invalid_file',
          file: file.name,
          lockWaitMs,
          durationMs: elapsed(),
        };
      }
    }

    mutationStarted = true;
    await db.ensureRevisionTable();
    for (const { file, statements } of plan) {
      if (options.signal?.aborted) {
        return {
          outcome: 'failed',
          applied,
          stoppedAt: file.version,
          reason: 'interrupted',
          lockWaitMs,
          durationMs: elapsed(),
        };
      }
      const mode = options.txMode ?? file.txMode ?? db.defaultTxMode;
      options.onProgress?.({ version: file.version, phase: 'start' });
      const r = await applyFile(db, file, statements, mode);
      if (!r.ok) {
        return {
          outcome: r.outcome,
          applied,
          stoppedAt: file.version,
          reason: r.reason,
          ...(r.failure ? { failure: r.failure } : {}),
          lockWaitMs,
          durationMs: elapsed(),
        };
      }
      applied.push(file.version);
      options.onProgress?.({ version: file.version, phase: 'done', ms: r.ms });
    }
    return { outcome: 'applied', applied, lockWaitMs, durationMs: elapsed() };
  } catch (error) {
    // A bookkeeping query failed between statements (history read, revision row, BEGIN). Files already
    // applied are committed; once writing started, a broken connection leaves the last write in doubt.
    const cls = db.classifyError(error);
    const lost = cls.kind === 'connection';
    return {
      outcome: lost && mutationStarted ? 'unknown' : 'failed',
      applied,
      reason: lost ? 'connection_lost' : 'database_error',
      lockWaitMs,
      durationMs: elapsed(),
    };
  } finally {
    if (locked) await db.releaseLock().catch(() => undefined);
  }
}
