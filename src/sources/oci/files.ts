/**
 * Files between a local directory and an artifact. Reading takes regular files only (a symlink could point
 * out of the directory) and skips dot-files (.git, editor state); writing creates only paths the artifact
 * format has already checked, and never overwrites.
 */
import { lstatSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative, sep } from 'node:path';
import { OciError } from './errors.ts';
import { DEFAULT_LIMITS, type ReadLimits } from './limits.ts';

export interface LocalFile {
  readonly path: string;
  readonly bytes: Uint8Array;
}

/** Each input is a file (taken under its base name) or a directory (its files, under their relative paths). */
export function readLocalFiles(inputs: readonly string[], limits: ReadLimits = DEFAULT_LIMITS): LocalFile[] {
  const out: LocalFile[] = [];
  for (const input of inputs) {
    const stat = lstatSync(input, { throwIfNoEntry: false });
    if (stat === undefined) throw new OciError('UnsafeContent', `${input} does not exist`);
    if (stat.isFile()) out.push(readOne(input, basename(input), limits));
    else if (stat.isDirectory()) walk(input, input, out, limits);
    else throw new OciError('UnsafeContent', `${input} is neither a regular file nor a directory`);
  }
  return out;
}

function walk(root: string, dir: string, out: LocalFile[], limits: ReadLimits): void {
  for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
    if (entry.name.startsWith('.')) continue;
    const full = join(dir, entry.name);
    if (entry.isDirectory()) walk(root, full, out, limits);
    else if (entry.isFile()) out.push(readOne(full, relative(root, full).split(sep).join('/'), limits));
    else
      throw new OciError(
        'UnsafeContent',
        `${full} is a symbolic link or special file; only regular files are pushed`,
      );
    if (out.length > limits.files)
      throw new OciError('TooLarge', `${root} has more than ${limits.files} files`);
  }
}

function readOne(file: string, path: string, limits: ReadLimits): LocalFile {
  const size = lstatSync(file).size;
  if (size > limits.fileBytes)
    throw new OciError('TooLarge', `${file} is ${size} bytes, over the limit of ${limits.fileBytes}`);
  return { path, bytes: readFileSync(file) };
}

/** Writes pulled files under `dir`, which must be empty or absent. */
export function writeLocalFiles(
  dir: string,
  files: readonly { readonly path: string; readonly content: Uint8Array }[],
): void {
  mkdirSync(dir, { recursive: true });
  if (readdirSync(dir).length > 0)
    throw new OciError('UnsafeContent', `${dir} is not empty; pull into an empty directory`);
  for (const file of files) {
    const target = join(dir, ...file.path.split('/'));
    // The format check already refused "..", absolute and empty parts; this is the second lock.
    if (relative(dir, target).startsWith('..'))
      throw new OciError('UnsafeContent', `the path ${file.path} leaves ${dir}`);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, file.content, { flag: 'wx', mode: 0o644 });
  }
}
