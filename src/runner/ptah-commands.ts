/**
 * The exact `ptah` command lines the runner starts, in one place (documented in docs/runner.md; flags as
 * `ptah schema --help` defines them). Each is a fixed argv of flags and local paths: no credential ever
 * appears here; the database URL reaches the child only through PTAH_DB_URL (and PTAH_DEV_DB_URL for Plan).
 */

export interface Scope {
  readonly exclude: readonly string[];
  readonly protectedTables: readonly string[];
}

const excludeFlags = (scope: Scope) => scope.exclude.flatMap((e) => ['--exclude', e]);

/** `ptah schema drift`: read-only comparison with the declared files. Exit 0 no drift, 3 drift. */
export function driftCommand(schemaDir: string, scope: Scope): string[] {
  return ['schema', 'drift', '--desired', schemaDir, ...excludeFlags(scope), '--json'];
}

/**
 * `ptah schema plan`: writes the plan file's exact bytes to `out` and a JSON report on stdout.
 * Exit 0 no change, 3 changes, 4 refused (a protected table).
 */
export function planCommand(schemaDir: string, scope: Scope, out: string): string[] {
  return [
    'schema',
    'plan',
    '--desired',
    schemaDir,
    ...excludeFlags(scope),
    ...scope.protectedTables.flatMap((t) => ['--protected-table', t]),
    '--out',
    out,
    '--json',
  ];
}

/** `ptah schema apply --dry-run`: parses and validates the plan bytes, touches no database. Exit 0 valid. */
export function applyDryRunCommand(planFile: string): string[] {
  return ['schema', 'apply', '--plan', planFile, '--dry-run', '--json'];
}

/** `ptah schema apply`: executes exactly the plan file. Exit 0 applied, 1 failed (rolled back), 4 stale, 5 uncertain. */
export function applyCommand(planFile: string, lockTimeoutMs: number | undefined): string[] {
  return [
    'schema',
    'apply',
    '--plan',
    planFile,
    ...(lockTimeoutMs !== undefined ? ['--lock-timeout', String(lockTimeoutMs)] : []),
    '--json',
  ];
}

/**
 * `ptah migrations status`: reads the history against the checked directory without a lock or a write.
 * Exit 0 up to date, 3 pending, 4 Blocked (dirty, modified, out of order, ahead), with a JSON report.
 */
export function migrationStatusCommand(migrationsDir: string): string[] {
  return ['migrations', 'status', '--dir', migrationsDir, '--json'];
}

export interface MigrationUpFlags {
  readonly expectedHistoryFingerprint?: string;
  readonly transactionMode?: 'file' | 'none';
  readonly lockTimeoutMs?: number;
}

/**
 * `ptah migrations up --expect-sequence`: compares the approved sequence with its own selection under the
 * migration lock, refuses any difference before its first write, then applies. Exit 0 applied, 1 failed,
 * 4 refused, 5 partial or unknown; the JSON report says which.
 */
export function migrationUpCommand(
  migrationsDir: string,
  sequenceFile: string,
  flags: MigrationUpFlags,
): string[] {
  return [
    'migrations',
    'up',
    '--dir',
    migrationsDir,
    '--expect-sequence',
    sequenceFile,
    ...(flags.expectedHistoryFingerprint !== undefined
      ? ['--expect-history-fingerprint', flags.expectedHistoryFingerprint]
      : []),
    ...(flags.transactionMode !== undefined ? ['--tx-mode', flags.transactionMode] : []),
    // ptah migrations reads a bare number as seconds: the unit is always written.
    ...(flags.lockTimeoutMs !== undefined ? ['--lock-timeout', `${flags.lockTimeoutMs}ms`] : []),
    '--json',
  ];
}
