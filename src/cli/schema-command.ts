// `ptah schema inspect|plan|apply|drift`: parse flags, call the engine, print one result as JSON or text,
// and map it to an exit code (src/cli/exit-codes.ts). The engine never exits the process.
import { readFileSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline/promises';
import { EXIT, type ExitCode } from './exit-codes.ts';
import { TableNameError } from '../protocol/table-name.ts';
import { DatabaseUrlError, parseDatabaseUrl, redact, resolveDatabaseUrl } from '../engine/database-url.ts';
import { DatabaseError } from '../engine/session.ts';
import { failureCauseOf } from './failure-cause.ts';
import { DesiredStateError } from '../engine/desired-state-error.ts';
import { PlanFileError } from '../engine/plan-file.ts';
import {
  DesiredSourceError,
  applyPlan,
  dialectFor,
  drift,
  inspect,
  plan,
  readDesiredFiles,
} from '../engine/schema-engine.ts';
import {
  applyJson,
  applyText,
  driftJson,
  driftText,
  inspectJson,
  inspectText,
  planJson,
  planText,
} from './schema-output.ts';

const USAGE = `usage: ptah schema <command> [options]

commands:
  inspect   read the database and print its schema model
  plan      compute the statements that take the database to the desired state
  apply     apply a plan file (or validate it with --dry-run)
  drift     report how the database differs from the desired state (read-only); alias: observe
  push      publish schema files as an OCI artifact; pull fetches one by digest
            ('ptah schema push --help', docs/oci.md)

options:
  --url URL                 database URL (default: the PTAH_DB_URL environment variable; alias --from)
  --desired PATH            desired-state .sql file or directory (repeatable; plan, drift; aliases --to, --file)
  --dev-url URL             scratch database to normalise the desired SQL (default: PTAH_DEV_DB_URL)
  --exclude PATTERN         leave matching objects alone: schema.name, name, table.column; * and ? (repeatable)
  --protected-table NAME    refuse a plan that changes this table: table or schema.table (repeatable; plan)
  --out FILE                write the plan file's exact bytes here (plan; alias --output)
  --plan FILE               the plan file to apply (apply)
  --dry-run                 validate the plan bytes and list the statements without touching the database (apply)
  --lock-timeout MS         lock timeout for apply, in milliseconds (default 10000)
  --auto-approve            apply without asking (apply asks on a terminal; without one it never does)
  --json                    print one JSON document on stdout (same as --format json)
  -h, --help                show this help

exit codes:
  0 success, nothing to do (plan: no changes; drift: no drift; apply: applied or validated)
  1 failed, nothing changed (database error, invalid desired state or plan file, a failing statement that
    was rolled back or was the first of a MySQL plan)
  2 usage error
  3 success with changes (plan has statements; drift found)
  4 refused on purpose (protected table, unsupported change, stale plan)
  5 uncertain or partial (the connection failed while committing, or MySQL DDL ran before a failing
    statement and stays applied: inspect before retrying)

See docs/cli-schema.md.`;

class UsageError extends Error {}

interface Flags {
  readonly values: Map<string, string[]>;
  readonly bools: Set<string>;
  readonly positional: string[];
}

const VALUE_FLAGS = new Set([
  'url',
  'desired',
  'dev-url',
  'exclude',
  'protected-table',
  'out',
  'plan',
  'lock-timeout',
  'format',
]);
/** Spellings other tools use for the same flags. */
const ALIASES: Readonly<Record<string, string>> = {
  output: 'out',
  file: 'desired',
  to: 'desired', // Atlas: --to is the desired state, --from (or --url) the database
  from: 'url',
};
const BOOL_FLAGS = new Set(['json', 'dry-run', 'auto-approve', 'help']);

function parseFlags(argv: readonly string[]): Flags {
  const values = new Map<string, string[]>();
  const bools = new Set<string>();
  const positional: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (arg === '-h') {
      bools.add('help');
      continue;
    }
    if (!arg.startsWith('--')) {
      positional.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const raw = arg.slice(2, eq < 0 ? undefined : eq);
    const name = ALIASES[raw] ?? raw;
    if (BOOL_FLAGS.has(name)) {
      if (eq >= 0) throw new UsageError(`--${name} takes no value`);
      bools.add(name);
    } else if (VALUE_FLAGS.has(name)) {
      const v = eq >= 0 ? arg.slice(eq + 1) : argv[++i];
      if (v === undefined) throw new UsageError(`--${name} needs a value`);
      values.set(name, [...(values.get(name) ?? []), v]);
    } else {
      throw new UsageError(`unknown flag --${name}`);
    }
  }
  return { values, bools, positional };
}

function one(f: Flags, name: string): string | undefined {
  const v = f.values.get(name);
  if (v && v.length > 1) throw new UsageError(`--${name} may be given once`);
  return v?.[0];
}

/**
 * On a terminal, apply shows what the plan does and asks; only `yes` applies (Terraform's rule). Without
 * a terminal (scripts, CI, the runner) nothing is asked. A plan file that does not validate is not asked
 * about: apply reports why.
 */
async function approved(bytes: Buffer): Promise<boolean> {
  if (process.stdin.isTTY !== true) return true;
  const check = await applyPlan(undefined, bytes, { dryRun: true });
  if (check.outcome !== 'validated') return true;
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    process.stderr.write(applyText(check).replace('not applied (dry run)', 'to apply'));
    const answer = await rl.question(
      `Apply ${check.statements.length} statement(s)${check.destructive ? ' (DESTRUCTIVE)' : ''}? Only 'yes' applies: `,
    );
    return answer.trim() === 'yes';
  } finally {
    rl.close();
  }
}

/** Only the form asked for is made: a plan's JSON reads its document, which hashes both states. */
function print(json: boolean, form: { json: () => unknown; text: () => string }): void {
  process.stdout.write(json ? JSON.stringify(form.json()) + '\n' : form.text());
}

export async function runSchemaCommand(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(USAGE + '\n');
    return command === undefined ? EXIT.usage : EXIT.ok;
  }
  let flags: Flags;
  try {
    flags = parseFlags(rest);
  } catch (error) {
    process.stderr.write(`ptah schema ${command}: ${(error as Error).message}\n\n${USAGE}\n`);
    return EXIT.usage;
  }
  if (flags.bools.has('help')) {
    process.stdout.write(USAGE + '\n');
    return EXIT.ok;
  }
  const format = flags.values.get('format')?.at(-1);
  if (format !== undefined && format !== 'json' && format !== 'text') {
    process.stderr.write(`ptah schema ${command}: --format must be json or text\n`);
    return EXIT.usage;
  }
  const json = flags.bools.has('json') || format === 'json';
  const secrets: string[] = [];
  try {
    return await dispatch(command, flags, json, secrets);
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`ptah schema ${command}: ${error.message}\n\n${USAGE}\n`);
      return EXIT.usage;
    }
    const known =
      error instanceof DatabaseUrlError ||
      error instanceof TableNameError ||
      error instanceof DesiredStateError ||
      error instanceof DesiredSourceError ||
      error instanceof PlanFileError ||
      error instanceof DatabaseError;
    let message = known
      ? (error as Error).message
      : `unexpected error: ${(error as Error).message ?? String(error)}`;
    if (error instanceof DatabaseError) {
      message = `database error${error.sqlstate ? ` (SQLSTATE ${error.sqlstate})` : ''}: ${message}; check the URL (--url or PTAH_DB_URL), that the server is reachable and the role may read the catalog`;
    }
    message = redact(message, secrets);
    if (json) {
      const roots = flags.values.get('desired') ?? [];
      const cause = failureCauseOf(error, roots.length === 1 ? roots[0] : undefined);
      process.stdout.write(
        JSON.stringify({ command, outcome: 'error', error: message, ...(cause ? { cause } : {}) }) + '\n',
      );
    }
    process.stderr.write(`ptah schema ${command}: ${message}\n`);
    return EXIT.failed;
  }
}

function remember(secrets: string[], url: string | undefined): void {
  if (url === undefined) return;
  try {
    const p = decodeURIComponent(new URL(url).password);
    if (p !== '') secrets.push(p);
  } catch {
    /* an invalid URL is reported by the parser without echoing it */
  }
}

async function dispatch(command: string, f: Flags, json: boolean, secrets: string[]): Promise<ExitCode> {
  const exclude = f.values.get('exclude') ?? [];
  const desiredPaths = [...(f.values.get('desired') ?? []), ...f.positional];
  const target = () => {
    const u = resolveDatabaseUrl(one(f, 'url'));
    remember(secrets, u.url);
    return u;
  };
  const devUrl = () => {
    const raw = one(f, 'dev-url') ?? (process.env['PTAH_DEV_DB_URL'] || undefined);
    if (raw === undefined) return undefined;
    remember(secrets, raw);
    return parseDatabaseUrl(raw).url;
  };
  switch (command) {
    case 'inspect': {
      const u = target();
      const r = await inspect(u.url, await dialectFor(u.dialect), { exclude });
      print(json, { json: () => inspectJson(r), text: () => inspectText(r) });
      return EXIT.ok;
    }
    case 'plan': {
      const u = target();
      const files = readDesiredFiles(desiredPaths);
      const dev = devUrl();
      const r = await plan(
        u.url,
        await dialectFor(u.dialect),
        { files, ...(dev ? { devUrl: dev } : {}) },
        {
          exclude,
          protectedTables: f.values.get('protected-table') ?? [],
        },
      );
      const out = one(f, 'out');
      if (out !== undefined && r.bytes !== undefined) writeFileSync(out, r.bytes);
      print(json, { json: () => planJson(r, out), text: () => planText(r, out) });
      return r.outcome === 'refused' ? EXIT.refused : r.outcome === 'changes' ? EXIT.changes : EXIT.ok;
    }
    case 'apply': {
      const file = one(f, 'plan');
      if (file === undefined)
        throw new UsageError('apply needs --plan FILE (write one with `ptah schema plan --out FILE`)');
      let bytes: Buffer;
      try {
        bytes = readFileSync(file);
      } catch {
        throw new PlanFileError(`cannot read the plan file ${file}; check the path`);
      }
      const dryRun = f.bools.has('dry-run');
      const lt = one(f, 'lock-timeout');
      const lockTimeoutMs = lt === undefined ? undefined : Number(lt);
      if (lockTimeoutMs !== undefined && (!Number.isFinite(lockTimeoutMs) || lockTimeoutMs < 0))
        throw new UsageError('--lock-timeout must be a number of milliseconds');
      const url = dryRun ? undefined : target().url;
      if (!dryRun && !f.bools.has('auto-approve') && !(await approved(bytes))) {
        process.stderr.write('not applied: the plan was not approved; nothing was changed\n');
        return EXIT.refused;
      }
      const r = await applyPlan(url, bytes, {
        dryRun,
        ...(lockTimeoutMs !== undefined ? { lockTimeoutMs } : {}),
      });
      print(json, { json: () => applyJson(r), text: () => applyText(r) });
      switch (r.outcome) {
        case 'applied':
        case 'validated':
          return EXIT.ok;
        case 'stale':
          return EXIT.refused;
        case 'failed':
          return EXIT.failed;
        // Statements that committed on their own stay applied: the runner must read the database again.
        case 'partial':
        case 'uncertain':
          return EXIT.uncertain;
      }
      return EXIT.failed;
    }
    case 'drift':
    case 'observe': {
      const u = target();
      const files = readDesiredFiles(desiredPaths);
      const dev = devUrl();
      const r = await drift(
        u.url,
        await dialectFor(u.dialect),
        { files, ...(dev ? { devUrl: dev } : {}) },
        { exclude },
      );
      print(json, { json: () => driftJson(r), text: () => driftText(r) });
      return r.drifted ? EXIT.changes : EXIT.ok;
    }
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}
