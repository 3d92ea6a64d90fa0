/**
 * The check the snapshot-copy init container runs before the container holding the database URL starts:
 * the manifest must hash to the content digest the operation was bound to, and every file must match the
 * manifest. A refusal names the first thing that failed.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { sha256Digest, type Sha256Digest } from '../api/digest.ts';
import { SOURCE_PATH_PATTERN } from '../api/ptah-schema.ts';
import {
  encodeManifest,
  MANIFEST_KEY,
  MANIFEST_VERSION,
  snapshotFileKey,
  type ManifestFile,
  type SnapshotManifest,
  type SourceFileBytes,
} from './snapshot-manifest.ts';

export type SnapshotVerification =
  | { readonly ok: true; readonly files: readonly SourceFileBytes[] }
  | {
      readonly ok: false;
      /** `manifest.json`, or the path of the first file that failed. */
      readonly failing: string;
      readonly reason: 'Missing' | 'DigestMismatch' | 'Malformed' | 'SizeMismatch';
      readonly message: string;
    };

const safePath = new RegExp(SOURCE_PATH_PATTERN);

/** `read(key)` returns a snapshot key's bytes, or undefined when the key is absent. */
export function verifySnapshot(
  read: (key: string) => Uint8Array | undefined,
  boundDigest: Sha256Digest,
): SnapshotVerification {
  const refuse = (
    failing: string,
    reason: Exclude<SnapshotVerification, { ok: true }>['reason'],
    message: string,
  ) => ({ ok: false, failing, reason, message }) as const;
  const manifestBytes = read(MANIFEST_KEY);
  if (manifestBytes === undefined) return refuse(MANIFEST_KEY, 'Missing', 'the snapshot has no manifest');
  if (sha256Digest(manifestBytes) !== boundDigest) {
    return refuse(
      MANIFEST_KEY,
      'DigestMismatch',
      `the manifest does not give the bound content digest ${boundDigest}`,
    );
  }
  const manifest = parseManifest(manifestBytes);
  if (manifest === undefined)
    return refuse(MANIFEST_KEY, 'Malformed', 'the manifest is not a canonical snapshot manifest');
  const files: SourceFileBytes[] = [];
  for (const [i, entry] of manifest.files.entries()) {
    const bytes = read(snapshotFileKey(i));
    if (bytes === undefined)
      return refuse(entry.path, 'Missing', `${entry.path} is missing from the snapshot`);
    if (bytes.length !== entry.size) {
      return refuse(
        entry.path,
        'SizeMismatch',
        `${entry.path} has ${bytes.length} bytes; the manifest says ${entry.size}`,
      );
    }
    if (sha256Digest(bytes) !== entry.sha256) {
      return refuse(entry.path, 'DigestMismatch', `${entry.path} does not match its SHA-256 in the manifest`);
    }
    files.push({ path: entry.path, bytes });
  }
  return { ok: true, files };
}

/** Accepts only a manifest whose canonical re-encoding is byte-identical, with safe sorted unique paths. */
function parseManifest(bytes: Uint8Array): SnapshotManifest | undefined {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(bytes).toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const m = value as { version?: unknown; files?: unknown };
  if (m.version !== MANIFEST_VERSION || !Array.isArray(m.files)) return undefined;
  const files: ManifestFile[] = [];
  for (const f of m.files as unknown[]) {
    if (typeof f !== 'object' || f === null) return undefined;
    const { path, size, sha256 } = f as Record<string, unknown>;
    if (typeof path !== 'string' || !safePath.test(path)) return undefined;
    if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0) return undefined;
    if (typeof sha256 !== 'string' || !/^sha256:[0-9a-f]{64}$/.test(sha256)) return undefined;
    if (files.length > 0 && !(files[files.length - 1]!.path < path)) return undefined;
    files.push({ path, size, sha256: sha256 as Sha256Digest });
  }
  const manifest: SnapshotManifest = { version: MANIFEST_VERSION, files };
  return Buffer.compare(Buffer.from(encodeManifest(manifest)), Buffer.from(bytes)) === 0
    ? manifest
    : undefined;
}

/**
 * The init container's whole job: verify the mounted snapshot directory and copy its files to `outDir`
 * under their paths. Nothing is written unless everything verified.
 */
export function materialiseSnapshot(
  snapshotDir: string,
  boundDigest: Sha256Digest,
  outDir: string,
): SnapshotVerification {
  const result = verifySnapshot((key) => {
    try {
      return readFileSync(join(snapshotDir, key));
    } catch {
      return undefined;
    }
  }, boundDigest);
  if (!result.ok) return result;
  for (const f of result.files) {
    const target = join(outDir, f.path);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, f.bytes, { mode: 0o444 });
  }
  return result;
}
