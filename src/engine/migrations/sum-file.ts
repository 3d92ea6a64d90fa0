/**
 * `ptah.sum`: the directory's integrity file. Format (text, one entry a line, LF):
 *
 *     ptah-sum v1 sha256:<hex of the directory hash>
 *     <file name> sha256:<hex of the file bytes>
 *     ...
 *
 * File lines are sorted by version. The directory hash is the SHA-256 of the file lines exactly as written
 * (each with its trailing LF), so adding, removing, renaming or editing any file changes it.
 */
import { sha256Hex, type MigrationFile } from './migration-file.ts';

export const SUM_FILE_NAME = 'ptah.sum';
const HEADER = /^ptah-sum v1 sha256:([0-9a-f]{64})$/;
const ENTRY = /^(\S+) sha256:([0-9a-f]{64})$/;

export interface SumFile {
  readonly directoryHash: string;
  readonly entries: ReadonlyMap<string, string>;
  /** The directory hash recomputed from the entries, to detect an edited sum file. */
  readonly computedHash: string;
}

function entryLines(files: readonly Pick<MigrationFile, 'name' | 'checksum'>[]): string {
  return files.map((f) => `${f.name} sha256:${f.checksum}\n`).join('');
}

export function renderSumFile(files: readonly Pick<MigrationFile, 'name' | 'checksum'>[]): string {
  const body = entryLines(files);
  return `ptah-sum v1 sha256:${sha256Hex(body)}\n${body}`;
}

/** Parses a sum file; returns a reason string when it is not one. */
export function parseSumFile(text: string): SumFile | string {
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  const header = HEADER.exec(lines[0] ?? '');
  if (!header) return 'its first line is not "ptah-sum v1 sha256:<hex>"';
  const entries = new Map<string, string>();
  let body = '';
  for (const [i, line] of lines.slice(1).entries()) {
    const m = ENTRY.exec(line);
    if (!m) return `line ${i + 2} is not "<file> sha256:<hex>"`;
    entries.set(m[1] ?? '', m[2] ?? '');
    body += line + '\n';
  }
  return { directoryHash: header[1] ?? '', entries, computedHash: sha256Hex(body) };
}
