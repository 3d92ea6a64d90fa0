/**
 * The one table of `ptah` exit codes. Like diff(1), "changes exist" has a code of its own so scripts can
 * branch on it without parsing output.
 */
export const EXIT = {
  /** Success; for plan, drift and status: nothing to do. */
  ok: 0,
  /** The command failed: a database error, a refused plan, an invalid file. */
  failed: 1,
  /** The command line was wrong: unknown flag, missing argument. */
  usage: 2,
  /** Success, and there are changes: a plan with statements, drift found, migrations pending. */
  changes: 3,
  /** The engine refused on purpose: stale plan, protected table, sequence mismatch, dirty history. */
  refused: 4,
  /** The outcome is unknown or partial: the database may have been changed; read it before retrying. */
  uncertain: 5,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];
