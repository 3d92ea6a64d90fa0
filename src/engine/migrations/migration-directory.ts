/**
 * Loading, creating and re-hashing a migration directory. Loading checks the directory against `ptah.sum`
 * and names the file at fault, so a tampered directory is refused before anything reads the database.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  compareVersions,
  isMigrationFileName,
  MigrationFileError,
  parseMigrationFile,
  type MigrationFile,
} from './migration-file.ts';
import { parseSumFile, renderSumFile, SUM_FILE_NAME } from './sum-file.ts';

export class MigrationDirectoryError extends Error {
  override readonly name = 'MigrationDirectoryError';
}

const FIX = `run "ptah migrations hash" after reviewing the change`;

/** Reads and parses every migration file, sorted by version; does not look at the sum file. */
export function readMigrationFiles(dir: string): MigrationFile[] {
  if (!existsSync(dir)) throw new MigrationDirectoryError(`migration directory ${dir} does not exist`);
  const files: MigrationFile[] = [];
  const seen = new Map<string, string>();
  for (const name of readdirSync(dir).sort()) {
    if (!name.endsWith('.sql')) continue;
    if (!isMigrationFileName(name)) {
      throw new MigrationFileError(`${name}: a migration file is named <version>_<description>.sql`);
    }
    const file = parseMigrationFile(name, readFileSync(join(dir, name)));
    const other = seen.get(file.version);
    if (other !== undefined) {
      throw new MigrationDirectoryError(`${name} and ${other} have the same version ${file.version}`);
    }
    seen.set(file.version, name);
    files.push(file);
  }
  return files.sort((a, b) => compareVersions(a.version, b.version));
}

/** Loads the directory and checks it against ptah.sum; throws naming the file and the fix. */
export function loadMigrationDirectory(dir: string): MigrationFile[] {
  const files = readMigrationFiles(dir);
  const sumPath = join(dir, SUM_FILE_NAME);
  if (!existsSync(sumPath)) {
    throw new MigrationDirectoryError(`${SUM_FILE_NAME} is missing in ${dir}: ${FIX}`);
  }
  const sum = parseSumFile(readFileSync(sumPath, 'utf8'));
  if (typeof sum === 'string') {
    throw new MigrationDirectoryError(`${SUM_FILE_NAME} is not valid: ${sum}; ${FIX}`);
  }
  for (const f of files) {
    const recorded = sum.entries.get(f.name);
    if (recorded === undefined) {
      throw new MigrationDirectoryError(`${f.name} is not in ${SUM_FILE_NAME}: ${FIX}`);
    }
    if (recorded !== f.checksum) {
      throw new MigrationDirectoryError(`${f.name} does not match its checksum in ${SUM_FILE_NAME}: ${FIX}`);
    }
  }
  const names = new Set(files.map((f) => f.name));
  for (const name of sum.entries.keys()) {
    if (!names.has(name)) {
      throw new MigrationDirectoryError(`${name} is in ${SUM_FILE_NAME} but not in the directory: ${FIX}`);
    }
  }
  if (sum.directoryHash !== sum.computedHash || renderSumFile(files) !== readFileSync(sumPath, 'utf8')) {
    throw new MigrationDirectoryError(`${SUM_FILE_NAME} was edited by hand (directory hash differs): ${FIX}`);
  }
  return files;
}

/** Rewrites ptah.sum from the files as they are now; returns the directory hash line. */
export function hashMigrationDirectory(dir: string): { files: number; header: string } {
  const files = readMigrationFiles(dir);
  const text = renderSumFile(files);
  writeFileSync(join(dir, SUM_FILE_NAME), text);
  return { files: files.length, header: text.split('\n')[0] ?? '' };
}

/** UTC timestamp version, yyyymmddhhmmss, the usual choice of tools that share a directory in git. */
export function timestampVersion(now: Date = new Date()): string {
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  return (
    p(now.getUTCFullYear(), 4) +
    p(now.getUTCMonth() + 1) +
    p(now.getUTCDate()) +
    p(now.getUTCHours()) +
    p(now.getUTCMinutes()) +
    p(now.getUTCSeconds())
  );
}

/** Creates `<version>_<name>.sql` and re-hashes the directory; returns the new file's name. */
export function newMigrationFile(dir: string, description: string, now: Date = new Date()): string {
  const slug = description
    .trim()
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
  if (slug === '') throw new MigrationDirectoryError('a migration needs a name made of letters or digits');
  mkdirSync(dir, { recursive: true });
  const existing = readMigrationFiles(dir);
  let version = timestampVersion(now);
  const newest = existing.at(-1)?.version;
  // Two files created in the same second still get distinct, increasing versions.
  if (newest !== undefined && compareVersions(version, newest) <= 0)
    version = (BigInt(newest) + 1n).toString();
  const name = `${version}_${slug}.sql`;
  writeFileSync(
    join(dir, name),
    `-- ${description.trim()}\n-- Directives (optional): "-- ptah:txmode file|none", "-- ptah:checkpoint".\n\n`,
    { flag: 'wx' },
  );
  hashMigrationDirectory(dir);
  return name;
}
