/**
 * The files a source path selects in a commit: every regular file under the path (or the one file it
 * names), under its path relative to the selected directory. Dot-files are skipped as for an artifact push.
 * A submodule, a symbolic link or an LFS pointer at the path is refused, never followed or taken as content:
 * each would make the digest describe something other than the files the engine reads.
 */
import { SOURCE_PATH_PATTERN } from '../../api/ptah-schema.ts';
import { GitSourceError } from './errors.ts';
import type { GitLimits } from './limits.ts';
import { runGit } from './run-git.ts';

export interface TreeFile {
  readonly path: string;
  readonly bytes: Uint8Array;
}

interface Entry {
  readonly mode: string;
  readonly type: string;
  readonly oid: string;
  readonly size: number;
  readonly fullPath: string;
}

const SAFE_PATH = new RegExp(SOURCE_PATH_PATTERN);
const LFS_POINTER = /^version https:\/\/git-lfs\.github\.com\/spec\/v1\n/;

/** `.` selects the repository's root. */
export function checkSourcePath(path: string): void {
  if (path !== '.' && !SAFE_PATH.test(path))
    throw new GitSourceError(
      'InvalidPath',
      `the path "${path.slice(0, 200)}" is not a plain relative path (or "." for the root)`,
    );
}

export async function readSelectedFiles(
  repo: string,
  env: NodeJS.ProcessEnv,
  commit: string,
  path: string,
  limits: GitLimits,
): Promise<TreeFile[]> {
  const listing = await runGit(
    ['-C', repo, 'ls-tree', '-r', '-l', '-z', '--full-tree', commit, '--', ...(path === '.' ? [] : [path])],
    {
      env,
      maxStdout: 64 * 1024 * 1024,
    },
  );
  const entries = parseLsTree(listing.stdout);
  const prefix = path === '.' ? '' : path;
  const selected: Array<Entry & { path: string }> = [];
  let total = 0;
  for (const e of entries) {
    const relative =
      e.fullPath === prefix
        ? lastSegment(e.fullPath)
        : prefix === ''
          ? e.fullPath
          : e.fullPath.slice(prefix.length + 1);
    if (relative.split('/').some((s) => s.startsWith('.'))) continue;
    if (e.mode === '160000')
      throw new GitSourceError(
        'Submodule',
        `${e.fullPath} at ${commit.slice(0, 12)} is a submodule; a source path must hold the files themselves`,
      );
    if (e.mode === '120000')
      throw new GitSourceError(
        'UnsafeContent',
        `${e.fullPath} at ${commit.slice(0, 12)} is a symbolic link; only regular files are read`,
      );
    if (e.type !== 'blob') continue;
    if (!SAFE_PATH.test(relative))
      throw new GitSourceError(
        'UnsafeContent',
        `${e.fullPath} is not a plain file name (letters, digits, '.', '_', '-')`,
      );
    if (e.size > limits.fileBytes)
      throw new GitSourceError(
        'TooLarge',
        `${e.fullPath} is ${e.size} bytes, over the limit of ${limits.fileBytes}`,
      );
    total += e.size;
    if (total > limits.totalBytes)
      throw new GitSourceError(
        'TooLarge',
        `the files under ${path} are over ${limits.totalBytes} bytes together`,
      );
    selected.push({ ...e, path: relative });
    if (selected.length > limits.files)
      throw new GitSourceError('TooLarge', `${path} holds more than ${limits.files} files`);
  }
  if (selected.length === 0)
    throw new GitSourceError('PathNotFound', `${commit.slice(0, 12)} has no files at ${path}`);
  const blobs = await readBlobs(repo, env, selected, total);
  return selected.map((e, i) => {
    const bytes = blobs[i]!;
    if (bytes.length < 1024 && LFS_POINTER.test(Buffer.from(bytes).toString('latin1')))
      throw new GitSourceError(
        'LfsPointer',
        `${e.fullPath} at ${commit.slice(0, 12)} is a Git LFS pointer, not the file; commit the file itself`,
      );
    return { path: e.path, bytes };
  });
}

export function parseLsTree(out: Buffer): Entry[] {
  const entries: Entry[] = [];
  for (const record of out.toString('utf8').split('\0')) {
    if (record === '') continue;
    const tab = record.indexOf('\t');
    const m = /^(\d{6}) (\w+) ([0-9a-f]+) +(-|\d+)$/.exec(record.slice(0, tab));
    if (tab < 0 || m === null)
      throw new GitSourceError(
        'ProtocolError',
        `git ls-tree wrote an unexpected line "${record.slice(0, 120)}"`,
      );
    entries.push({
      mode: m[1]!,
      type: m[2]!,
      oid: m[3]!,
      size: m[4] === '-' ? 0 : Number(m[4]),
      fullPath: record.slice(tab + 1),
    });
  }
  return entries;
}

/** All blobs in one `git cat-file --batch`, in order, each checked against the size ls-tree gave. */
async function readBlobs(
  repo: string,
  env: NodeJS.ProcessEnv,
  entries: readonly Entry[],
  total: number,
): Promise<Uint8Array[]> {
  const out = await runGit(['-C', repo, 'cat-file', '--batch'], {
    env,
    input: entries.map((e) => e.oid).join('\n') + '\n',
    maxStdout: total + entries.length * 200 + 1024,
  });
  const blobs: Uint8Array[] = [];
  let offset = 0;
  for (const e of entries) {
    const nl = out.stdout.indexOf(0x0a, offset);
    const header = out.stdout.subarray(offset, nl).toString('latin1');
    const m = /^([0-9a-f]+) blob (\d+)$/.exec(header);
    if (nl < 0 || m === null || m[1] !== e.oid || Number(m[2]) !== e.size)
      throw new GitSourceError(
        'ProtocolError',
        `git cat-file answered "${header.slice(0, 120)}" for ${e.fullPath}`,
      );
    blobs.push(out.stdout.subarray(nl + 1, nl + 1 + e.size));
    offset = nl + 1 + e.size + 1;
  }
  return blobs;
}

function lastSegment(p: string): string {
  return p.slice(p.lastIndexOf('/') + 1);
}
