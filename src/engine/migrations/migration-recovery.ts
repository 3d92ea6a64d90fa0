/**
 * Recovery commands, for people: baseline, repair and set. Each runs under the migration lock and returns
 * a result object; the CLI asks for confirmation before calling them.
 */
import { compareVersions, type MigrationFile } from './migration-file.ts';
import { migrateUp, type UpResult } from './migrate-up.ts';
import type { MigrationAdapter } from './dialects/migration-adapter.ts';

export type RecoveryResult =
  | { readonly ok: true; readonly changed: readonly string[] }
  | { readonly ok: false; readonly reason: string; readonly details?: readonly string[] };

async function underLock(
  db: MigrationAdapter,
  lockTimeoutMs: number,
  body: () => Promise<RecoveryResult>,
): Promise<RecoveryResult> {
  if (!(await db.acquireLock(lockTimeoutMs))) return { ok: false, reason: 'lock_timeout' };
  try {
    return await body();
  } finally {
    await db.releaseLock().catch(() => undefined);
  }
}

export interface BaselineOptions {
  readonly files: readonly MigrationFile[];
  readonly version: string;
  readonly lockTimeoutMs: number;
}

export interface BaselineResult {
  readonly result: RecoveryResult;
  /** The shadow database's run, for a person to read when it failed. */
  readonly shadowRun?: UpResult;
}

/**
 * Applies every file up to `version` to an empty shadow database, compares table and column sets of the
 * shadow and the target (information_schema, revision table excluded), and only when they are equal records
 * `version` in the target as a checkpoint row (it stands for every lower version) without running anything.
 */
export async function baseline(
  target: MigrationAdapter,
  shadow: MigrationAdapter,
  options: BaselineOptions,
): Promise<BaselineResult> {
  const file = options.files.find((f) => f.version === options.version);
  if (file === undefined) {
    return { result: { ok: false, reason: `version ${options.version} is not in the directory` } };
  }
  if ((await shadow.readRevisions()).length > 0 || (await shadow.describeColumns()).length > 0) {
    return { result: { ok: false, reason: 'the shadow database is not empty' } };
  }
  // On the shadow, run the whole directory up to the version, checkpoints honoured as on any empty database.
  const shadowRun = await migrateUp(shadow, {
    files: options.files.filter((f) => compareVersions(f.version, options.version) <= 0),
    lockTimeoutMs: options.lockTimeoutMs,
    txMode: undefined,
  });
  if (shadowRun.outcome !== 'applied' && shadowRun.outcome !== 'up_to_date') {
    return { result: { ok: false, reason: 'the files did not apply to the shadow database' }, shadowRun };
  }
  const expected = await shadow.describeColumns();
  const result = await underLock(target, options.lockTimeoutMs, async () => {
    if ((await target.readRevisions()).length > 0) {
      return { ok: false, reason: 'the target already has a migration history; baseline needs an empty one' };
    }
    const actual = await target.describeColumns();
    const want = new Set(expected);
    const have = new Set(actual);
    const details = [
      ...expected.filter((c) => !have.has(c)).map((c) => `missing in target: ${c}`),
      ...actual.filter((c) => !want.has(c)).map((c) => `only in target: ${c}`),
    ];
    if (details.length > 0) {
      return { ok: false, reason: 'the target schema differs from the directory at that version', details };
    }
    await target.ensureRevisionTable();
    await target.insertRevision({
      version: file.version,
      description: file.description,
      checksum: file.checksum,
      checkpoint: true,
      executionMs: 0,
      dirty: false,
      statementsDone: null,
    });
    return { ok: true, changed: [file.version] };
  });
  return { result, shadowRun };
}

export type RepairAction = 'forget' | 'mark-applied';

/**
 * Clears dirty rows after a person fixed the database. `forget` removes the row (the person undid the
 * partial change; the version runs again); `mark-applied` keeps it as applied (the person finished it).
 */
export async function repair(
  db: MigrationAdapter,
  action: RepairAction,
  lockTimeoutMs: number,
): Promise<RecoveryResult> {
  return await underLock(db, lockTimeoutMs, async () => {
    const dirty = (await db.readRevisions()).filter((r) => r.dirty).map((r) => r.version);
    for (const v of dirty) {
      if (action === 'forget') await db.deleteRevision(v);
      else await db.markRevisionClean(v, 0);
    }
    return { ok: true, changed: dirty };
  });
}

/** Marks one version applied (recorded from its file, nothing run) or pending (its row removed). */
export async function setVersion(
  db: MigrationAdapter,
  files: readonly MigrationFile[],
  version: string,
  state: 'applied' | 'pending',
  lockTimeoutMs: number,
): Promise<RecoveryResult> {
  return await underLock(db, lockTimeoutMs, async () => {
    const rows = await db.readRevisions();
    const row = rows.find((r) => r.version === version);
    if (state === 'pending') {
      if (row === undefined) return { ok: false, reason: `version ${version} is not in the history` };
      await db.deleteRevision(version);
      return { ok: true, changed: [version] };
    }
    const file = files.find((f) => f.version === version);
    if (file === undefined) return { ok: false, reason: `version ${version} is not in the directory` };
    await db.ensureRevisionTable();
    if (row !== undefined) await db.deleteRevision(version);
    await db.insertRevision({
      version,
      description: file.description,
      checksum: file.checksum,
      checkpoint: false,
      executionMs: 0,
      dirty: false,
      statementsDone: null,
    });
    return { ok: true, changed: [version] };
  });
}
