// `ptah migrations …`: thin. Parse flags, call the migrations engine, render its result as text or JSON,
// map it to an exit code (src/cli/exit-codes.ts). See docs/cli-migrations.md.
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline/promises';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { EXIT, type ExitCode } from './exit-codes.ts';
import { failureCauseOf } from './failure-cause.ts';
import { DatabaseUrlError, parseDatabaseUrl, redact, resolveDatabaseUrl } from '../engine/database-url.ts';
import { openMigrationAdapter } from '../engine/migrations/dialects/open-adapter.ts';
import type { MigrationAdapter } from '../engine/migrations/dialects/migration-adapter.ts';
import {
  hashMigrationDirectory,
  loadMigrationDirectory,
  newMigrationFile,
} from '../engine/migrations/migration-directory.ts';
import { parseVersion, type MigrationFile, type TxMode } from '../engine/migrations/migration-file.ts';
import { computeStatus, type MigrationStatus } from '../engine/migrations/migration-status.ts';
import { migrateUp, type ExpectedMigration, type UpResult } from '../engine/migrations/migrate-up.ts';
import {
  baseline,
  repair,
  setVersion,
  type RecoveryResult,
} from '../engine/migrations/migration-recovery.ts';
import { parseRevisionTableName } from '../engine/migrations/revision.ts';
import { splitStatements } from '../engine/migrations/statement-splitter.ts';

const USAGE = `usage: ptah migrations <command> [options]

commands:
  new NAME       create <timestamp>_NAME.sql and re-hash the directory
  hash           rewrite ptah.sum from the files as they are
  validate       check the directory against ptah.sum and that every file splits into statements
  status         read the history: one verdict (exit 0 up to date, 3 pending, 4 blocked)
  up             apply the pending versions under the migration lock
  baseline       record an existing schema as --version V, checked against --shadow-url
  repair         clear dirty revision rows after fixing the database by hand (--yes)
  set VERSION    mark one version --applied or --pending without running it (--yes)
  push REF PATH  publish the directory as an OCI artifact; pull REF@DIGEST --dir D fetches one
                 ('ptah migrations push --help', docs/oci.md)

options:
  --dir DIR                 migration directory (default: $PTAH_MIGRATIONS_DIR or ./migrations)
  --url URL                 database URL (default: $PTAH_DB_URL); never printed
  --revisions-table [S.]T   revision table (default: ptah_schema_revisions in the current schema)
  --json                    print the result as JSON on stdout
  --lock-timeout DURATION   wait for the migration lock (e.g. 30s, 5m; default $PTAH_MIGRATION_LOCK_TIMEOUT or 5m)
  --connect-timeout DURATION  wait for the server to accept the connection (default $PTAH_CONNECT_TIMEOUT or 30s)
  --tx-mode file|none       up: run-wide transaction mode override
  --expect-sequence FILE    up: JSON [{version, checksum}] the run must match, compared under the lock
  --expect-history-fingerprint HEX  up: refuse unless the history still has this fingerprint
  --version V               baseline: the version the existing schema stands at
  --shadow-url URL          baseline: an empty database of the same engine (default: $PTAH_SHADOW_DB_URL)
  --mark-applied            repair: keep dirty versions as applied instead of forgetting them
  --applied | --pending     set: the state to record
  --yes                     confirm repair/set without a prompt`;

const OPTIONS = {
  dir: { type: 'string' },
  'migrations-dir': { type: 'string' },
  url: { type: 'string' },
  'revisions-table': { type: 'string' },
  json: { type: 'boolean' },
  'lock-timeout': { type: 'string' },
  'connect-timeout': { type: 'string' },
  'tx-mode': { type: 'string' },
  'expect-sequence': { type: 'string' },
  'expect-history-fingerprint': { type: 'string' },
  version: { type: 'string' },
  'shadow-url': { type: 'string' },
  'mark-applied': { type: 'boolean' },
  applied: { type: 'boolean' },
  pending: { type: 'boolean' },
  yes: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} satisfies ParseArgsConfig['options'];

type Flags = {
  [K in keyof typeof OPTIONS]?: (typeof OPTIONS)[K]['type'] extends 'string' ? string : boolean;
};

class UsageError extends Error {}

function out(text: string): void {
  process.stdout.write(text.endsWith('\n') ? text : text + '\n');
}
function err(text: string): void {
  process.stderr.write(text.endsWith('\n') ? text : text + '\n');
}

export function parseDuration(text: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (!m) throw new UsageError(`duration "${text}" must look like 500ms, 30s, 5m or 1h`);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(m[2] ?? 's') as 'ms' | 's' | 'm' | 'h'];
  return Math.round(Number(m[1]) * unit);
}

function lockTimeout(flags: Flags): number {
  return parseDuration(
    flags['lock-timeout'] ??
      process.env['PTAH_MIGRATION_LOCK_TIMEOUT'] ??
      process.env['PTAH_LOCK_TIMEOUT'] ??
      '5m',
  );
}

function directory(flags: Flags): string {
  return flags.dir ?? flags['migrations-dir'] ?? process.env['PTAH_MIGRATIONS_DIR'] ?? 'migrations';
}

function txMode(flags: Flags): TxMode | undefined {
  const v = flags['tx-mode'] ?? process.env['PTAH_TX_MODE'];
  if (v === undefined || v === '') return undefined;
  if (v !== 'file' && v !== 'none') throw new UsageError('--tx-mode must be "file" or "none"');
  return v;
}

function readExpectedSequence(path: string): ExpectedMigration[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    throw new UsageError(`--expect-sequence ${path}: not a readable JSON file`);
  }
  if (!Array.isArray(parsed)) throw new UsageError('--expect-sequence: expected a JSON array');
  return parsed.map((item: unknown, i) => {
    const o = item as { version?: unknown; checksum?: unknown };
    if (
      (typeof o?.version !== 'string' && typeof o?.version !== 'number') ||
      typeof o.checksum !== 'string'
    ) {
      throw new UsageError(`--expect-sequence: entry ${i} needs "version" and "checksum"`);
    }
    return { version: parseVersion(String(o.version)), checksum: o.checksum.toLowerCase() };
  });
}

/** Opens the target; connection errors are reported with every credential removed. */
async function connect(url: string, flags: Flags): Promise<MigrationAdapter> {
  const parsed = parseDatabaseUrl(url);
  let table;
  try {
    table = parseRevisionTableName(flags['revisions-table']);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const timeout = flags['connect-timeout'] ?? process.env['PTAH_CONNECT_TIMEOUT'];
  const options = timeout ? { connectTimeoutMs: parseDuration(timeout) } : {};
  try {
    return await openMigrationAdapter(url, table, options);
  } catch (error) {
    const password = decodeURIComponent(new URL(url).password);
    const msg = error instanceof Error ? error.message : String(error);
    throw new ConnectError(`cannot connect to ${parsed.redacted}: ${redact(msg, [password])}`, {
      cause: error,
    });
  }
}
/** The target could not be opened; `cause` is the engine's DatabaseError, which `--json` classifies. */
class ConnectError extends Error {}

/** The classified cause of a failure, looking through a ConnectError to what the driver said. */
function causeOf(error: unknown) {
  return failureCauseOf(error instanceof ConnectError ? error.cause : error);
}

async function confirm(flags: Flags, question: string): Promise<boolean> {
  if (flags.yes === true) return true;
  if (!process.stdin.isTTY) return false;
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await rl.question(`${question} [y/N] `)).trim());
  } finally {
    rl.close();
  }
}

function renderStatus(s: MigrationStatus): string {
  const lines = [
    `verdict: ${s.verdict}`,
    `current version: ${s.currentVersion ?? '(none)'}`,
    `checkpoint version: ${s.checkpointVersion ?? '(none)'}`,
    `applied: ${s.appliedCount}, pending: ${s.pendingCount}`,
    `history fingerprint: sha256:${s.fingerprint}`,
  ];
  const list = (label: string, v: readonly string[]) => {
    if (v.length > 0) lines.push(`${label}: ${v.join(', ')}`);
  };
  list('dirty', s.dirtyVersions);
  list('modified', s.modifiedVersions);
  list('out of order', s.outOfOrderVersions);
  list('ahead (not in the directory)', s.aheadVersions);
  for (const p of s.pending)
    lines.push(`  pending ${p.version} ${p.description}${p.checkpoint ? ' (checkpoint)' : ''}`);
  return lines.join('\n');
}

/**
 * The JSON status names each pending file's version as its file name spells it (`versionKey`, leading
 * zeros kept) beside the canonical version: a plan binds both, so a file renamed from 0002_ to 2_ is
 * another plan even though Ptah would run it as the same version.
 */
function withVersionKeys(s: MigrationStatus, files: readonly MigrationFile[]): unknown {
  const keyOf = new Map(files.map((f) => [f.version, /^\d+/.exec(f.name)?.[0] ?? f.version]));
  return { ...s, pending: s.pending.map((p) => ({ ...p, versionKey: keyOf.get(p.version) ?? p.version })) };
}

function statusExit(s: MigrationStatus): ExitCode {
  if (s.verdict === 'up_to_date') return EXIT.ok;
  if (s.verdict === 'pending') return EXIT.changes;
  return EXIT.refused;
}

function upExit(r: UpResult): ExitCode {
  switch (r.outcome) {
    case 'up_to_date':
    case 'applied':
      return EXIT.ok;
    case 'partial':
    case 'unknown':
      return EXIT.uncertain;
    case 'failed':
      return r.reason === 'sequence_mismatch' || r.reason?.startsWith('history_')
        ? EXIT.refused
        : EXIT.failed;
  }
}

function renderUp(r: UpResult): string {
  const lines = [`outcome: ${r.outcome}`, `applied: ${r.applied.length ? r.applied.join(', ') : '(none)'}`];
  if (r.reason) lines.push(`reason: ${r.reason}`);
  if (r.stoppedAt) lines.push(`stopped at: ${r.stoppedAt}`);
  if (r.failure) {
    const f = r.failure;
    lines.push(
      `failure: version ${f.version}, statement ${f.statementIndex} (line ${f.line}), SQLSTATE ${f.sqlstate ?? '?'}${f.errno !== null ? `, error ${f.errno}` : ''}`,
    );
  }
  if (r.mismatch) {
    const side = (m: ExpectedMigration | null) => (m ? `${m.version} sha256:${m.checksum}` : '(nothing)');
    lines.push(
      `sequence differs at position ${r.mismatch.position}: expected ${side(r.mismatch.expected)}, would run ${side(r.mismatch.actual)}`,
    );
  }
  if (r.file) lines.push(`file: ${r.file}`);
  if (r.outcome === 'partial' || r.outcome === 'unknown') {
    lines.push(
      'the database may hold part of the stopped version: inspect it, then run "ptah migrations repair"',
    );
  }
  return lines.join('\n');
}

function renderRecovery(r: RecoveryResult, flags: Flags, verb: string): ExitCode {
  if (flags.json) out(JSON.stringify(r));
  else if (r.ok) out(r.changed.length ? `${verb}: ${r.changed.join(', ')}` : `${verb}: nothing to do`);
  else err([`ptah migrations: ${r.reason}`, ...(r.details ?? []).map((d) => `  ${d}`)].join('\n'));
  return r.ok ? EXIT.ok : r.reason === 'lock_timeout' ? EXIT.failed : EXIT.refused;
}

async function withDb<T>(url: string, flags: Flags, body: (db: MigrationAdapter) => Promise<T>): Promise<T> {
  const db = await connect(url, flags);
  try {
    return await body(db);
  } finally {
    await db.close();
  }
}

async function run(command: string, positionals: string[], flags: Flags): Promise<ExitCode> {
  const dir = directory(flags);
  switch (command) {
    case 'new': {
      const name = positionals.join(' ');
      if (name === '') throw new UsageError('new: give the migration a name');
      const file = newMigrationFile(dir, name);
      out(flags.json ? JSON.stringify({ file }) : `created ${file}`);
      return EXIT.ok;
    }
    case 'hash': {
      const r = hashMigrationDirectory(dir);
      out(flags.json ? JSON.stringify(r) : `hashed ${r.files} files: ${r.header}`);
      return EXIT.ok;
    }
    case 'validate': {
      const files = loadMigrationDirectory(dir);
      const dialect =
        flags.url || process.env['PTAH_DB_URL'] ? resolveDatabaseUrl(flags.url).dialect : undefined;
      // Without a URL the dialect is unknown: a file is valid when it splits as either dialect.
      let statements = 0;
      for (const f of files) {
        const errors: string[] = [];
        for (const d of dialect ? [dialect] : (['postgres', 'mysql'] as const)) {
          try {
            statements += splitStatements(f.sql, d).length;
            break;
          } catch (e) {
            errors.push(`${(e as Error).message}${dialect ? '' : ` (as ${d})`}`);
          }
        }
        if (errors.length === (dialect ? 1 : 2)) throw new Error(`${f.name}: ${errors.join('; ')}`);
      }
      out(
        flags.json
          ? JSON.stringify({ valid: true, files: files.length, statements })
          : `valid: ${files.length} files, ${statements} statements`,
      );
      return EXIT.ok;
    }
    case 'status': {
      const files = loadMigrationDirectory(dir);
      const url = resolveDatabaseUrl(flags.url).url;
      const status = await withDb(url, flags, async (db) => computeStatus(files, await db.readRevisions()));
      out(flags.json ? JSON.stringify(withVersionKeys(status, files)) : renderStatus(status));
      return statusExit(status);
    }
    case 'up': {
      let files;
      try {
        files = loadMigrationDirectory(dir);
      } catch (error) {
        // The runner reads a result from stdout whatever happened: a refused directory is one too.
        if (flags.json) {
          const refused: UpResult = {
            outcome: 'failed',
            applied: [],
            reason: 'invalid_directory',
            lockWaitMs: 0,
            durationMs: 0,
          };
          out(JSON.stringify(refused));
        }
        throw error;
      }
      const url = resolveDatabaseUrl(flags.url).url;
      const expected = flags['expect-sequence'] ? readExpectedSequence(flags['expect-sequence']) : undefined;
      const mode = txMode(flags);
      const historyFingerprint = flags['expect-history-fingerprint']?.replace(/^sha256:/, '').toLowerCase();
      if (historyFingerprint !== undefined && !/^[0-9a-f]{64}$/.test(historyFingerprint)) {
        throw new UsageError('--expect-history-fingerprint must be a SHA-256 hex digest');
      }
      const timeout = lockTimeout(flags);
      let result: UpResult;
      // SIGTERM/SIGINT stop the run between files, so the result still reaches stdout.
      const stop = new AbortController();
      const onSignal = () => {
        err('ptah migrations: stopping after the running migration');
        stop.abort();
      };
      process.once('SIGTERM', onSignal);
      process.once('SIGINT', onSignal);
      try {
        result = await withDb(url, flags, (db) =>
          migrateUp(db, {
            files,
            lockTimeoutMs: timeout,
            ...(mode ? { txMode: mode } : {}),
            ...(expected ? { expectSequence: expected } : {}),
            ...(historyFingerprint ? { expectHistoryFingerprint: historyFingerprint } : {}),
            signal: stop.signal,
            onProgress: (e) => {
              if (e.phase === 'done' && !flags.json) err(`applied ${e.version} (${e.ms} ms)`);
            },
          }),
        );
      } catch (error) {
        if (!(error instanceof ConnectError)) throw error;
        err(`ptah migrations: ${error.message}`);
        result = {
          outcome: 'failed',
          applied: [],
          reason: 'connection_failed',
          lockWaitMs: 0,
          durationMs: 0,
        };
        // Nothing ran: say why in a form the runner can carry to status (codes only, never server text).
        const cause = causeOf(error);
        if (flags.json) {
          out(JSON.stringify(cause === undefined ? result : { ...result, cause }));
          return upExit(result);
        }
      } finally {
        process.off('SIGTERM', onSignal);
        process.off('SIGINT', onSignal);
      }
      out(flags.json ? JSON.stringify(result) : renderUp(result));
      return upExit(result);
    }
    case 'baseline': {
      const files = loadMigrationDirectory(dir);
      if (!flags.version) throw new UsageError('baseline: --version V is required');
      const version = parseVersion(flags.version);
      const shadowUrl = flags['shadow-url'] ?? process.env['PTAH_SHADOW_DB_URL'];
      if (!shadowUrl) throw new UsageError('baseline: --shadow-url URL (or PTAH_SHADOW_DB_URL) is required');
      const url = resolveDatabaseUrl(flags.url).url;
      if (parseDatabaseUrl(shadowUrl).dialect !== parseDatabaseUrl(url).dialect) {
        throw new UsageError('baseline: the shadow database must be the same engine as the target');
      }
      const r = await withDb(url, flags, (target) =>
        withDb(shadowUrl, flags, (shadow) =>
          baseline(target, shadow, { files, version, lockTimeoutMs: lockTimeout(flags) }),
        ),
      );
      if (r.shadowRun && !r.result.ok && !flags.json) err(renderUp(r.shadowRun));
      return renderRecovery(r.result, flags, 'recorded as baseline');
    }
    case 'repair': {
      const url = resolveDatabaseUrl(flags.url).url;
      const action = flags['mark-applied'] ? 'mark-applied' : 'forget';
      err(
        action === 'forget'
          ? 'WARNING: repair removes every dirty revision row; those versions will run again on the next "up".\n' +
              'Do this only after undoing what the stopped run left in the database.'
          : 'WARNING: repair marks every dirty version as applied; the rest of those files will NOT run.\n' +
              'Do this only after finishing what the stopped run left undone.',
      );
      if (!(await confirm(flags, 'Repair the revision table?'))) {
        err('ptah migrations: not confirmed; pass --yes to repair');
        return EXIT.refused;
      }
      const r = await withDb(url, flags, (db) => repair(db, action, lockTimeout(flags)));
      return renderRecovery(r, flags, action === 'forget' ? 'forgot dirty versions' : 'marked applied');
    }
    case 'set': {
      const [raw] = positionals;
      if (raw === undefined) throw new UsageError('set: give a VERSION');
      if (flags.applied === flags.pending)
        throw new UsageError('set: pass exactly one of --applied or --pending');
      const version = parseVersion(raw);
      const state = flags.applied ? 'applied' : 'pending';
      const files = loadMigrationDirectory(dir);
      err(
        `WARNING: this rewrites the migration history by hand. Version ${version} will be recorded as ${state.toUpperCase()}\n` +
          `without running any SQL. The database and its history can disagree after this; you own the result.`,
      );
      if (!(await confirm(flags, `Mark ${version} as ${state}?`))) {
        err('ptah migrations: not confirmed; pass --yes');
        return EXIT.refused;
      }
      const url = resolveDatabaseUrl(flags.url).url;
      const r = await withDb(url, flags, (db) => setVersion(db, files, version, state, lockTimeout(flags)));
      return renderRecovery(r, flags, `marked ${state}`);
    }
    default:
      throw new UsageError(`unknown migrations command "${command}"`);
  }
}

export async function runMigrationsCommand(argv: readonly string[]): Promise<number> {
  let parsed: { values: Flags; positionals: string[] };
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true }) as {
      values: Flags;
      positionals: string[];
    };
  } catch (error) {
    err(`ptah migrations: ${(error as Error).message}\n\n${USAGE}`);
    return EXIT.usage;
  }
  const [command, ...positionals] = parsed.positionals;
  if (command === undefined || parsed.values.help) {
    out(USAGE);
    return command === undefined && !parsed.values.help ? EXIT.usage : EXIT.ok;
  }
  try {
    return await run(command, positionals, parsed.values);
  } catch (error) {
    if (error instanceof UsageError) {
      err(`ptah migrations: ${error.message}\n\n${USAGE}`);
      return EXIT.usage;
    }
    if (error instanceof DatabaseUrlError) {
      err(`ptah migrations: ${error.message}`);
      return EXIT.usage;
    }
    const url = parsed.values.url ?? process.env['PTAH_DB_URL'];
    const secrets: string[] = [];
    for (const u of [url, parsed.values['shadow-url'], process.env['PTAH_SHADOW_DB_URL']]) {
      try {
        if (u) secrets.push(decodeURIComponent(new URL(u).password));
      } catch {
        // not a URL: nothing to hide from it
      }
    }
    const message = redact(error instanceof Error ? error.message : String(error), secrets);
    err(`ptah migrations: ${message}`);
    // `up` prints its own result document (or none, when it cannot know what ran); every other command, as
    // `ptah schema --json` does, one error document on stdout, with the classified cause when there is one.
    if (parsed.values.json && command !== 'up') {
      const cause = causeOf(error);
      out(JSON.stringify({ command, outcome: 'error', error: message, ...(cause ? { cause } : {}) }));
    }
    return EXIT.failed;
  }
}
