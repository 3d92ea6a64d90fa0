/**
 * The snapshot manifest: every file's path, size and SHA-256, sorted by path, in canonical JSON. The
 * content digest is the SHA-256 of those bytes, so the same files give the same digest whatever ConfigMap
 * key they came from, and any change to a file's bytes or path gives another.
 */
import { canonicalJson } from '../api/canonical-json.ts';
import { sha256Digest, type Sha256Digest } from '../api/digest.ts';

export const MANIFEST_VERSION = 1;

export interface ManifestFile {
  readonly path: string;
  readonly size: number;
  readonly sha256: Sha256Digest;
}

export interface SnapshotManifest {
  readonly version: typeof MANIFEST_VERSION;
  readonly files: readonly ManifestFile[];
}

export interface SourceFileBytes {
  readonly path: string;
  readonly bytes: Uint8Array;
}

export interface BuiltManifest {
  readonly manifest: SnapshotManifest;
  /** The canonical bytes stored beside the files. */
  readonly bytes: Uint8Array;
  readonly contentDigest: Sha256Digest;
  /** The files in manifest order; file i is stored under `snapshotFileKey(i)`. */
  readonly files: readonly SourceFileBytes[];
}

export class ManifestError extends Error {
  override readonly name = 'ManifestError';
}

export function buildManifest(files: readonly SourceFileBytes[]): BuiltManifest {
  const sorted = [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i]!.path === sorted[i - 1]!.path)
      throw new ManifestError(`two files have the path ${sorted[i]!.path}`);
  }
  const manifest: SnapshotManifest = {
    version: MANIFEST_VERSION,
    files: sorted.map((f) => ({ path: f.path, size: f.bytes.length, sha256: sha256Digest(f.bytes) })),
  };
  const bytes = encodeManifest(manifest);
  return { manifest, bytes, contentDigest: sha256Digest(bytes), files: sorted };
}

export function encodeManifest(manifest: SnapshotManifest): Uint8Array {
  return Buffer.from(
    canonicalJson({
      version: manifest.version,
      files: manifest.files.map((f) => ({ path: f.path, size: f.size, sha256: f.sha256 })),
    }),
  );
}

/** Key of the i-th manifest file in the snapshot ConfigMap: paths may hold `/`, which a key may not. */
export function snapshotFileKey(index: number): string {
  return `file-${String(index).padStart(3, '0')}`;
}

export const MANIFEST_KEY = 'manifest.json';
