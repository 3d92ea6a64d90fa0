/**
 * One versioned migration file: its name says version and description, its leading comments carry
 * directives. Versions are decimal integers compared numerically (as bigint) so that `9_x` sorts before
 * `10_x` whatever the zero padding; they are kept as canonical decimal strings everywhere else.
 */
import { createHash } from 'node:crypto';

export type TxMode = 'file' | 'none';

export interface MigrationFile {
  /** Canonical decimal string (no leading zeros). */
  readonly version: string;
  readonly description: string;
  /** File name inside the directory, e.g. `20250101120000_create_orders.sql`. */
  readonly name: string;
  /** SHA-256 of the file bytes, lower-case hex. */
  readonly checksum: string;
  /** The `-- ptah:txmode` directive; undefined when the file does not say (the dialect default applies). */
  readonly txMode: TxMode | undefined;
  /** `-- ptah:checkpoint`: this file stands for every lower version on an empty database. */
  readonly checkpoint: boolean;
  readonly sql: string;
}

export class MigrationFileError extends Error {
  override readonly name = 'MigrationFileError';
}

/** `<digits>_<description>.sql`; the description may be empty (`<digits>.sql`). */
const FILE_NAME = /^(\d+)(?:_(.*))?\.sql$/;
/** Versions are stored in a BIGINT column. */
const MAX_VERSION = 9223372036854775807n;

export function isMigrationFileName(name: string): boolean {
  return FILE_NAME.test(name);
}

export function parseVersion(text: string): string {
  if (!/^\d+$/.test(text)) throw new MigrationFileError(`version "${text}" is not a decimal number`);
  const v = BigInt(text);
  if (v < 1n || v > MAX_VERSION) {
    throw new MigrationFileError(`version ${text} is out of range (1 to ${MAX_VERSION})`);
  }
  return v.toString();
}

export function compareVersions(a: string, b: string): number {
  const x = BigInt(a);
  const y = BigInt(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

export function sha256Hex(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

/** Directives live in the comment lines before the first statement, so a reader sees them first. */
const DIRECTIVE = /^--\s*ptah:([a-z-]+)(?:\s+(\S+))?\s*$/;

function readDirectives(name: string, sql: string): { txMode: TxMode | undefined; checkpoint: boolean } {
  let txMode: TxMode | undefined;
  let checkpoint = false;
  for (const raw of sql.split('\n')) {
    const line = raw.trim();
    if (line === '') continue;
    if (!line.startsWith('--')) break;
    const m = DIRECTIVE.exec(line);
    if (!m) continue;
    const [, key, value] = m;
    if (key === 'txmode') {
      if (value !== 'file' && value !== 'none') {
        throw new MigrationFileError(`${name}: "-- ptah:txmode" must be "file" or "none"`);
      }
      txMode = value;
    } else if (key === 'checkpoint') {
      checkpoint = true;
    } else {
      throw new MigrationFileError(`${name}: unknown directive "ptah:${key}" (known: txmode, checkpoint)`);
    }
  }
  return { txMode, checkpoint };
}

export function parseMigrationFile(name: string, bytes: Buffer): MigrationFile {
  const m = FILE_NAME.exec(name);
  if (!m) {
    throw new MigrationFileError(`${name}: a migration file is named <version>_<description>.sql`);
  }
  const version = parseVersion(m[1] ?? '');
  const sql = bytes.toString('utf8');
  const { txMode, checkpoint } = readDirectives(name, sql);
  return {
    version,
    description: (m[2] ?? '').replace(/_/g, ' '),
    name,
    checksum: sha256Hex(bytes),
    txMode,
    checkpoint,
    sql,
  };
}
