/**
 * The snapshot-check init mode: before the container that holds the database URL starts, check the mounted
 * `ptah-src-<hash>` snapshot against the content digest the operation is bound to, and only then copy its
 * files where the operation reads them.
 *
 * Snapshot layout (one ConfigMap, mounted as a directory):
 *   ptah-manifest.json  {"files":[{"path","key"?,"size","sha256"}…]} — paths sorted, no duplicates
 *   <key>               the bytes of one file; `key` defaults to `path` when the path is itself a key
 * The content digest is the SHA-256 of the manifest bytes exactly as stored. Each file is read once, and
 * the bytes that were checked are the bytes written, so nothing can change in between.
 */
import { chmodSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { sha256Digest } from '../api/digest.ts';

export const MANIFEST_KEY = 'ptah-manifest.json';
const CONFIG_MAP_KEY = /^[-._a-zA-Z0-9]+$/;
/** A ConfigMap holds at most 1 MiB; anything larger was not written by the manager. */
const MAX_MANIFEST_BYTES = 1024 * 1024;

export interface SnapshotFile {
  readonly path: string;
  readonly bytes: Buffer;
}

export type SnapshotVerdict =
  | { readonly ok: true; readonly files: readonly SnapshotFile[] }
  | { readonly ok: false; readonly failingFile: string; readonly reason: string };

export function verifySnapshot(dir: string, contentDigest: string): SnapshotVerdict {
  let manifestBytes: Buffer;
  try {
    manifestBytes = readFileSync(join(dir, MANIFEST_KEY));
  } catch {
    return refuse(MANIFEST_KEY, 'the manifest is missing');
  }
  if (manifestBytes.length > MAX_MANIFEST_BYTES) return refuse(MANIFEST_KEY, 'the manifest is too large');
  if (sha256Digest(manifestBytes) !== contentDigest) {
    return refuse(MANIFEST_KEY, 'the manifest does not give the bound content digest');
  }
  const entries = parseManifest(manifestBytes);
  if (typeof entries === 'string') return refuse(MANIFEST_KEY, entries);

  const listedKeys = new Set(entries.map((e) => e.key));
  const present = readdirSync(dir).filter((n) => !n.startsWith('..') && n !== MANIFEST_KEY);
  const stray = present.find((n) => !listedKeys.has(n));
  if (stray !== undefined) return refuse(stray, 'the snapshot holds a file its manifest does not list');

  const files: SnapshotFile[] = [];
  for (const entry of entries) {
    let bytes: Buffer;
    try {
      bytes = readFileSync(join(dir, entry.key));
    } catch {
      return refuse(entry.path, 'the file is missing');
    }
    if (bytes.length !== entry.size)
      return refuse(entry.path, `the file has ${bytes.length} bytes, the manifest says ${entry.size}`);
    if (sha256Digest(bytes) !== entry.sha256)
      return refuse(entry.path, 'the file does not match its SHA-256 in the manifest');
    files.push({ path: entry.path, bytes });
  }
  return { ok: true, files };
}

/** Writes checked files under `outDir`, read-only. Paths were validated as relative and inside. */
export function copySnapshot(files: readonly SnapshotFile[], outDir: string): void {
  for (const f of files) {
    const target = join(outDir, f.path);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, f.bytes, { mode: 0o444, flag: 'wx' });
    chmodSync(target, 0o444);
  }
}

interface ManifestEntry {
  readonly path: string;
  readonly key: string;
  readonly size: number;
  readonly sha256: string;
}

function parseManifest(bytes: Buffer): ManifestEntry[] | string {
  let doc: unknown;
  try {
    doc = JSON.parse(bytes.toString('utf8'));
  } catch {
    return 'the manifest is not JSON';
  }
  const files = (doc as { files?: unknown } | null)?.files;
  if (!Array.isArray(files)) return 'the manifest lists no files';
  const out: ManifestEntry[] = [];
  const paths = new Set<string>();
  for (const raw of files) {
    const f = (raw ?? {}) as Record<string, unknown>;
    const path = f['path'];
    if (typeof path !== 'string' || !safeRelativePath(path))
      return 'the manifest names an unsafe or empty path';
    const key = f['key'] ?? path;
    if (
      typeof key !== 'string' ||
      !CONFIG_MAP_KEY.test(key) ||
      key.startsWith('..') ||
      key === MANIFEST_KEY
    ) {
      return `the manifest entry for ${path} has an invalid key`;
    }
    if (!Number.isSafeInteger(f['size']) || (f['size'] as number) < 0)
      return `the manifest entry for ${path} has no size`;
    const sha = typeof f['sha256'] === 'string' ? f['sha256'] : '';
    const digest = /^[0-9a-f]{64}$/.test(sha) ? `sha256:${sha}` : sha;
    if (!/^sha256:[0-9a-f]{64}$/.test(digest)) return `the manifest entry for ${path} has no SHA-256`;
    if (paths.has(path)) return `the manifest lists ${path} twice`;
    paths.add(path);
    out.push({ path, key, size: f['size'] as number, sha256: digest });
  }
  return out;
}

function safeRelativePath(p: string): boolean {
  if (p === '' || p.length > 1024 || p.startsWith('/') || p.includes('\\') || p.includes('\0')) return false;
  return p.split('/').every((seg) => seg !== '' && seg !== '.' && seg !== '..');
}

function refuse(failingFile: string, reason: string): SnapshotVerdict {
  return { ok: false, failingFile, reason };
}
