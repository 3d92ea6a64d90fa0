// Shared by the migrations tests: throwaway migration directories, the CLI as a child process (URL in the
// environment, never argv), and direct reads of the database to check what the engine did.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import mysql from 'mysql2/promise';
import type { RowDataPacket } from 'mysql2/promise';
import type { Dialect } from '../../../src/engine/database-url.ts';
import { hashMigrationDirectory } from '../../../src/engine/migrations/migration-directory.ts';

export const PTAH_BIN = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'bin', 'ptah.mjs');

const created: string[] = [];

export function migrationDir(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'ptah-migrations-'));
  created.push(dir);
  writeDir(dir, files);
  return dir;
}

/** Removes every directory migrationDir made; call from an `after` hook. */
export function removeMigrationDirs(): void {
  for (const dir of created.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/** Adds or replaces files (a null content removes one) and re-hashes, as a person would. */
export function writeDir(dir: string, files: Record<string, string | null>): void {
  for (const [name, content] of Object.entries(files)) {
    if (content === null) rmSync(join(dir, name));
    else writeFileSync(join(dir, name), content);
  }
  hashMigrationDirectory(dir);
}

export interface CliResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export function ptah(args: readonly string[], env: Record<string, string>): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [PTAH_BIN, ...args],
      { env: { ...process.env, ...env }, timeout: 60_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** Runs one query against the database with a fresh connection and returns its rows. */
export async function rows(dialect: Dialect, url: string, sql: string): Promise<Record<string, unknown>[]> {
  if (dialect === 'postgres') {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      return (await c.query(sql)).rows as Record<string, unknown>[];
    } finally {
      await c.end();
    }
  }
  const c = await mysql.createConnection(url);
  try {
    const [r] = await c.query<RowDataPacket[]>(sql);
    return r as Record<string, unknown>[];
  } finally {
    await c.end();
  }
}

/** Table names in the target schema/database, sorted. */
export async function tables(dialect: Dialect, url: string): Promise<string[]> {
  const where = dialect === 'postgres' ? "table_schema = 'public'" : 'table_schema = DATABASE()';
  const r = await rows(
    dialect,
    url,
    `SELECT table_name AS t FROM information_schema.tables WHERE ${where} ORDER BY table_name`,
  );
  return r.map((x) => String(x['t']));
}

export interface RevisionView {
  version: string;
  checkpoint: boolean;
  dirty: boolean;
  statementsDone: number | null;
}

export async function revisions(dialect: Dialect, url: string): Promise<RevisionView[]> {
  const r = await rows(
    dialect,
    url,
    "SELECT CONCAT(version, '') AS version, checkpoint, dirty, statements_done FROM ptah_schema_revisions ORDER BY version",
  );
  return r.map((x) => ({
    version: String(x['version']),
    checkpoint: Boolean(x['checkpoint']),
    dirty: Boolean(x['dirty']),
    statementsDone: x['statements_done'] === null ? null : Number(x['statements_done']),
  }));
}
