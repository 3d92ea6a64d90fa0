/**
 * The exact `ptah` command lines the runner starts, in one place (documented in docs/runner.md). Each is
 * a fixed argv of flags and local paths: no credential ever appears here, the database URL reaches the
 * child only through PTAH_DB_URL (and PTAH_DEV_URL for Plan).
 */

/** `ptah schema drift`: read-only comparison of the database with the declared files. Exit 0 none, 3 drift. */
export function driftCommand(schemaDir: string): string[] {
  return ['schema', 'drift', '--desired', schemaDir, '--json'];
}

/** `ptah schema plan`: prints the plan document on stdout. Exit 0 no change, 3 changes. */
export function planCommand(schemaDir: string, exclude: readonly string[]): string[] {
  return ['schema', 'plan', '--desired', schemaDir, ...exclude.flatMap((e) => ['--exclude', e]), '--json'];
}

/** `ptah schema apply --dry-run`: parses the plan file and executes nothing. Exit 0 when it would run. */
export function applyDryRunCommand(planFile: string): string[] {
  return ['schema', 'apply', '--plan', planFile, '--dry-run', '--json'];
}

/** `ptah schema apply`: executes exactly the plan file. Exit 0 applied, 1/4 failed cleanly, 5 uncertain. */
export function applyCommand(planFile: string): string[] {
  return ['schema', 'apply', '--plan', planFile, '--json'];
}
