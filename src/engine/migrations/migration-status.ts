/**
 * Reads a history against a directory and returns exactly one verdict. Pure: no database here.
 *
 * Verdict precedence (the first that holds wins):
 *   1. dirty        a revision row marks a run that stopped inside a version
 *   2. modified     an applied version's file checksum differs from the recorded one
 *   3. out_of_order a version that would be pending sorts below the newest applied version
 *   4. ahead        the database has versions the directory lacks (and no directory checkpoint retires)
 *   5. pending      the engine's selection is not empty
 *   6. up_to_date   nothing to run
 *
 * Pending selection honours checkpoints. On an empty history it starts at the newest checkpoint file (a
 * checkpoint stands for every lower version), so versions below it are neither pending nor out of order.
 * On a non-empty history, versions below the history's checkpoint row are covered, and checkpoint files
 * not yet applied are skipped (they only bootstrap empty databases).
 */
import { createHash } from 'node:crypto';
import { compareVersions, type MigrationFile, type TxMode } from './migration-file.ts';
import type { RevisionRow } from './revision.ts';

export type Verdict = 'dirty' | 'modified' | 'out_of_order' | 'ahead' | 'pending' | 'up_to_date';

export interface PendingMigration {
  readonly version: string;
  readonly description: string;
  readonly checksum: string;
  readonly checkpoint: boolean;
  /** The file's directive; null when it has none (the dialect default applies). */
  readonly txMode: TxMode | null;
}

export interface MigrationStatus {
  readonly verdict: Verdict;
  /** Newest version in the history, or null on an empty history. */
  readonly currentVersion: string | null;
  /**
   * The checkpoint the history stands on (newest checkpoint row); on an empty history, the checkpoint the
   * pending selection starts at; null when there is none.
   */
  readonly checkpointVersion: string | null;
  readonly appliedCount: number;
  readonly pendingCount: number;
  readonly pending: readonly PendingMigration[];
  /** SHA-256 hex over the canonical JSON of the history rows (see historyFingerprint). */
  readonly fingerprint: string;
  readonly dirtyVersions: readonly string[];
  readonly modifiedVersions: readonly string[];
  readonly outOfOrderVersions: readonly string[];
  readonly aheadVersions: readonly string[];
}

const max = (versions: readonly string[]): string | null =>
  versions.reduce<string | null>((m, v) => (m === null || compareVersions(v, m) > 0 ? v : m), null);

/**
 * Canonical form: the rows sorted by version, each `{version, checksum, checkpoint, dirty}` with keys in
 * that order, as a JSON array. Times are left out: they never change a row's meaning.
 */
export function historyFingerprint(rows: readonly RevisionRow[]): string {
  const canonical = [...rows]
    .sort((a, b) => compareVersions(a.version, b.version))
    .map((r) => ({ version: r.version, checksum: r.checksum, checkpoint: r.checkpoint, dirty: r.dirty }));
  return createHash('sha256').update(JSON.stringify(canonical)).digest('hex');
}

function toPending(f: MigrationFile): PendingMigration {
  return {
    version: f.version,
    description: f.description,
    checksum: f.checksum,
    checkpoint: f.checkpoint,
    txMode: f.txMode ?? null,
  };
}

export function computeStatus(
  unsorted: readonly MigrationFile[],
  rows: readonly RevisionRow[],
): MigrationStatus {
  const files = [...unsorted].sort((a, b) => compareVersions(a.version, b.version));
  const applied = new Map(rows.map((r) => [r.version, r]));
  const byVersion = new Map(files.map((f) => [f.version, f]));
  const current = max(rows.map((r) => r.version));
  const pending: MigrationFile[] = [];
  const outOfOrder: string[] = [];
  let checkpointVersion: string | null;

  if (rows.length === 0) {
    checkpointVersion = max(files.filter((f) => f.checkpoint).map((f) => f.version));
    for (const f of files) {
      if (checkpointVersion === null || compareVersions(f.version, checkpointVersion) >= 0) pending.push(f);
    }
  } else {
    checkpointVersion = max(rows.filter((r) => r.checkpoint).map((r) => r.version));
    for (const f of files) {
      if (applied.has(f.version)) continue;
      if (checkpointVersion !== null && compareVersions(f.version, checkpointVersion) < 0) continue;
      if (f.checkpoint) continue;
      if (current !== null && compareVersions(f.version, current) < 0) outOfOrder.push(f.version);
      else pending.push(f);
    }
  }

  const newestFileCheckpoint = max(files.filter((f) => f.checkpoint).map((f) => f.version));
  const sortedRows = [...rows].sort((a, b) => compareVersions(a.version, b.version));
  const dirty = sortedRows.filter((r) => r.dirty).map((r) => r.version);
  const modified = sortedRows
    .filter((r) => {
      const f = byVersion.get(r.version);
      return f !== undefined && f.checksum !== r.checksum;
    })
    .map((r) => r.version);
  // A row whose file was removed is fine when a newer checkpoint file in the directory stands for it.
  const ahead = sortedRows
    .filter(
      (r) =>
        !byVersion.has(r.version) &&
        (newestFileCheckpoint === null || compareVersions(r.version, newestFileCheckpoint) >= 0),
    )
    .map((r) => r.version);

  const verdict: Verdict =
    dirty.length > 0
      ? 'dirty'
      : modified.length > 0
        ? 'modified'
        : outOfOrder.length > 0
          ? 'out_of_order'
          : ahead.length > 0
            ? 'ahead'
            : pending.length > 0
              ? 'pending'
              : 'up_to_date';

  return {
    verdict,
    currentVersion: current,
    checkpointVersion,
    appliedCount: rows.length,
    pendingCount: pending.length,
    pending: pending.map(toPending),
    fingerprint: historyFingerprint(rows),
    dirtyVersions: dirty,
    modifiedVersions: modified,
    outOfOrderVersions: outOfOrder,
    aheadVersions: ahead,
  };
}
