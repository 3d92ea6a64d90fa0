/**
 * A snapshot as files in a directory, laid out exactly as a snapshot ConfigMap is mounted (`manifest.json`
 * and `file-NNN`), so whatever fetched the files (Git, a registry) hands them on in the one form the
 * snapshot check (`materialiseSnapshot`) reads back and verifies again before the engine sees them.
 */
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MANIFEST_KEY, snapshotFileKey, type BuiltManifest } from './snapshot-manifest.ts';

/** Writes into `dir`, which must be empty or absent; never overwrites. */
export function writeSnapshotDirectory(dir: string, built: BuiltManifest): void {
  mkdirSync(dir, { recursive: true });
  if (readdirSync(dir).length > 0)
    throw new Error(`${dir} is not empty; write a snapshot into an empty directory`);
  built.files.forEach((f, i) =>
    writeFileSync(join(dir, snapshotFileKey(i)), f.bytes, { flag: 'wx', mode: 0o444 }),
  );
  writeFileSync(join(dir, MANIFEST_KEY), built.bytes, { flag: 'wx', mode: 0o444 });
}
