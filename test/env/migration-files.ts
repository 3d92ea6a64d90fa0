/** A migration directory as a person commits it: the files and the ptah.sum `ptah migrations hash` writes. */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hashMigrationDirectory } from '../../src/engine/migrations/migration-directory.ts';

/** The files and the ptah.sum `ptah migrations hash` writes for them: a migration directory in a ConfigMap. */
export function withSum(files: Readonly<Record<string, string>>): Record<string, string> {
  const dir = mkdtempSync(join(tmpdir(), 'ptah-migrations-'));
  try {
    for (const [name, sql] of Object.entries(files)) writeFileSync(join(dir, name), sql);
    hashMigrationDirectory(dir);
    return { ...files, 'ptah.sum': readFileSync(join(dir, 'ptah.sum'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
