/**
 * The runner's options, compiled once from argv and the environment (Temporal's compileWorkerOptions
 * habit): every default applied here, every later module reads a CompiledRunnerOptions and never the raw
 * environment. An error names the field and says how to fix it, and never echoes a credential.
 */
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { parseTableName } from '../protocol/table-name.ts';
import { DatabaseUrlError, parseDatabaseUrl, type Dialect } from '../engine/database-url.ts';
import { isSha256Digest } from '../api/digest.ts';
import { RUNNER_PROTOCOL_VERSION } from '../protocol/result.ts';
import { PTAH_NODE_FLAGS, ptahProgramUrl } from '../build-info.ts';
import { parseVersion } from '../engine/migrations/migration-file.ts';

export type DatabaseOperation = 'observe' | 'plan' | 'apply' | 'migration-history' | 'migration-apply';
const DATABASE_OPERATIONS: readonly DatabaseOperation[] = [
  'observe',
  'plan',
  'apply',
  'migration-history',
  'migration-apply',
];
/** The operations that may change the database: each is bound to the target identity it was planned for. */
const MUTATING_OPERATIONS: ReadonlySet<DatabaseOperation> = new Set(['apply', 'migration-apply']);

/** One entry of the approved migration sequence: what ptah compares with its own selection under the lock. */
export interface ExpectedMigrationEntry {
  readonly version: string;
  readonly checksum: string;
}

export const DEFAULTS = {
  terminationMessagePath: '/dev/termination-log',
  schemaDir: '/work/schema',
  planDir: '/plan',
  /** Bytes of child stdout/stderr the runner keeps for its own log; the rest is counted and dropped. */
  maxOutputBytes: 64 * 1024,
  /** The seed's plan limit: sixteen chunks of 512 KiB. */
  maxPlanBytes: 8 * 1024 * 1024,
  timeoutSeconds: 600,
  terminationGraceSeconds: 30,
  migrationsDir: '/work/migrations',
  /** The approved sequence's limits: entries, and bytes of its JSON (well inside one env value's 128 KiB). */
  maxExpectedSequenceEntries: 1000,
  maxExpectedSequenceBytes: 120 * 1024,
} as const;

/** The command that starts `ptah`: a file to execute and the arguments before ptah's own. */
export interface PtahCommand {
  readonly file: string;
  readonly prefixArgs: readonly string[];
}

export interface CompiledRunOptions {
  readonly mode: 'run';
  readonly operation: DatabaseOperation;
  readonly operationId: string;
  readonly ptah: PtahCommand;
  /** Secret: reaches the child through PTAH_DB_URL only. */
  readonly databaseUrl: string;
  readonly dialect: Dialect;
  /** Secret, Plan only. */
  readonly devUrl?: string;
  /** The checked, copied desired-state files (Observe, Plan). */
  readonly schemaDir: string;
  /** Projected plan chunks `000.plan`, `001.plan`… (Apply). */
  readonly planDir: string;
  readonly expectedPlanContentDigest?: string;
  /**
   * Apply only: the credential-free identity digest of the database the plan was computed against. The
   * URL this Pod was given must hash to it, or nothing runs (a Secret repointed between plan and apply).
   */
  readonly expectedTargetIdentity?: string;
  /** The checked migration directory (migration-history, migration-apply). */
  readonly migrationsDir: string;
  /** migration-apply only: the approved sequence, in run order. */
  readonly expectedSequence?: readonly ExpectedMigrationEntry[];
  /** migration-apply only: the history fingerprint the sequence was selected against (`sha256:<hex>`). */
  readonly expectedHistoryFingerprint?: string;
  /** migration-apply only: spec.policy.transactionMode; undefined = unset (ptah chooses per file). */
  readonly transactionMode?: 'file' | 'none';
  /** spec.policy.exclude, passed to drift and both plans unchanged. */
  readonly exclude: readonly string[];
  /** spec.policy.protectedTables: ptah refuses a plan that would change one. */
  readonly protectedTables: readonly string[];
  /** Ptah's lock timeout for Apply, when the Job sets one. */
  readonly lockTimeoutMs?: number;
  /** Engine settings forwarded to the child by name (PTAH_CONNECT_TIMEOUT, PTAH_STATEMENT_TIMEOUT). */
  readonly childSettings: Readonly<Record<string, string>>;
  readonly workDir: string;
  readonly maxOutputBytes: number;
  readonly maxPlanBytes: number;
  /** Absolute instant after which the child is stopped. */
  readonly deadline: Date;
  readonly terminationGraceMs: number;
  readonly terminationMessagePath: string;
}

export interface CompiledCheckSnapshotOptions {
  readonly mode: 'check-snapshot';
  readonly operationId: string;
  readonly snapshotDir: string;
  readonly contentDigest: string;
  readonly outDir: string;
  readonly terminationMessagePath: string;
}

export type CompiledRunnerOptions = CompiledRunOptions | CompiledCheckSnapshotOptions;

/** A refused option. `field` is the flag or variable to fix. */
export class RunnerOptionsError extends Error {
  override readonly name = 'RunnerOptionsError';
  constructor(
    readonly field: string,
    problem: string,
    readonly fix: string,
    /** A typed code for the result frame. */
    readonly code = 'invalid_options',
  ) {
    super(`${field}: ${problem}; ${fix}`);
  }
}

const ENGINE_SETTINGS = ['PTAH_CONNECT_TIMEOUT', 'PTAH_STATEMENT_TIMEOUT'] as const;
/** A claim's operation id: `sha256:<hex>` today; any short token of these characters is accepted. */
const OPERATION_ID = /^[A-Za-z0-9][A-Za-z0-9:._-]{0,127}$/;

export function compileRunnerOptions(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
  now: Date = new Date(),
): CompiledRunnerOptions {
  const [first, ...rest] = argv;
  if (first === 'check-snapshot') return compileCheckSnapshot(rest, env);
  return compileRun(first === 'run' ? rest : argv, env, now);
}

/** The operation id, when it can be read at all: lets a refusal still be framed for the right claim. */
export function operationIdOf(env: Readonly<Record<string, string | undefined>>): string {
  const id = env['PTAH_OPERATION_ID'];
  return id !== undefined && OPERATION_ID.test(id) ? id : 'unknown';
}

function compileRun(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
  now: Date,
): CompiledRunOptions {
  const { values } = parse(argv, {
    operation: { type: 'string' },
    'ptah-binary': { type: 'string' },
    'max-output-bytes': { type: 'string' },
    'max-plan-bytes': { type: 'string' },
    'timeout-seconds': { type: 'string' },
  });

  const protocol = env['PTAH_RUNNER_PROTOCOL_VERSION'];
  if (protocol !== undefined && protocol !== String(RUNNER_PROTOCOL_VERSION)) {
    throw new RunnerOptionsError(
      'PTAH_RUNNER_PROTOCOL_VERSION',
      `the Job asks for protocol ${protocol.slice(0, 16)}, this runner speaks ${RUNNER_PROTOCOL_VERSION}`,
      'dispatch the Job with a runner image of the same protocol',
      'runner_protocol_mismatch',
    );
  }

  const operation = values['operation'] ?? env['PTAH_OPERATION'];
  if (operation === undefined || !(DATABASE_OPERATIONS as readonly string[]).includes(operation)) {
    throw new RunnerOptionsError(
      '--operation',
      operation === undefined ? 'missing' : `"${operation.slice(0, 32)}" is not a runner operation`,
      `pass --operation ${DATABASE_OPERATIONS.join('|')} (or set PTAH_OPERATION)`,
    );
  }
  const op = operation as DatabaseOperation;
  const operationId = requireOperationId(env);

  const databaseUrl = env['PTAH_DB_URL'];
  if (databaseUrl === undefined || databaseUrl === '') {
    throw new RunnerOptionsError(
      'PTAH_DB_URL',
      'missing',
      'map the target Secret key to PTAH_DB_URL in the Pod env',
    );
  }
  let dialect: Dialect;
  try {
    dialect = parseDatabaseUrl(databaseUrl).dialect;
  } catch (error) {
    // DatabaseUrlError messages never echo the URL; they say which part is wrong.
    throw new RunnerOptionsError(
      'PTAH_DB_URL',
      error instanceof DatabaseUrlError ? error.message : 'not a postgres:// or mysql:// URL',
      'fix the URL in the target Secret',
      'invalid_database_url',
    );
  }
  const expectedEngine = env['PTAH_EXPECTED_DATABASE_ENGINE'];
  if (expectedEngine !== undefined && expectedEngine !== '' && normaliseEngine(expectedEngine) !== dialect) {
    throw new RunnerOptionsError(
      'PTAH_DB_URL',
      `the URL is for ${dialect}, the resource declares ${expectedEngine.slice(0, 16)}`,
      'point the Secret at a database of the declared engine',
      'engine_mismatch',
    );
  }
  const devUrl = nonEmpty(env['PTAH_DEV_URL']) ?? nonEmpty(env['PTAH_DEV_DB_URL']);
  if (devUrl !== undefined && op !== 'plan') {
    // The seed: the dev database reaches Plan and nothing else.
    throw new RunnerOptionsError(
      'PTAH_DEV_URL',
      `set for ${op}`,
      'only a Plan Pod may carry a dev database URL',
    );
  }

  const expectedPlanContentDigest = nonEmpty(env['PTAH_EXPECTED_PLAN_CONTENT_DIGEST']);
  if (op === 'apply' && !isSha256Digest(expectedPlanContentDigest)) {
    throw new RunnerOptionsError(
      'PTAH_EXPECTED_PLAN_CONTENT_DIGEST',
      expectedPlanContentDigest === undefined ? 'missing' : 'not sha256:<64 hex>',
      'an Apply must name the content digest of the approved plan',
    );
  }

  const expectedTargetIdentity = nonEmpty(env['PTAH_EXPECTED_TARGET_IDENTITY']);
  if (
    (MUTATING_OPERATIONS.has(op) || expectedTargetIdentity !== undefined) &&
    !isSha256Digest(expectedTargetIdentity)
  ) {
    throw new RunnerOptionsError(
      'PTAH_EXPECTED_TARGET_IDENTITY',
      expectedTargetIdentity === undefined ? 'missing' : 'not sha256:<64 hex>',
      'an Apply must name the target identity digest its plan was computed against',
    );
  }
  const migrationApply = op === 'migration-apply' ? migrationApplyOptions(env) : {};

  const timeoutSeconds = positiveInt(values['timeout-seconds'], '--timeout-seconds', DEFAULTS.timeoutSeconds);
  let deadline = new Date(now.getTime() + timeoutSeconds * 1000);
  const notAfter = nonEmpty(env['PTAH_EXECUTION_NOT_AFTER']);
  if (notAfter === undefined && op === 'migration-apply') {
    throw new RunnerOptionsError(
      'PTAH_EXECUTION_NOT_AFTER',
      'missing',
      'a migration Apply must carry the execution deadline of its claim',
    );
  }
  if (notAfter !== undefined) {
    const t = Date.parse(notAfter);
    if (!/^\d{4}-\d\d-\d\dT/.test(notAfter) || Number.isNaN(t)) {
      throw new RunnerOptionsError(
        'PTAH_EXECUTION_NOT_AFTER',
        'not an RFC 3339 instant',
        'write it like 2026-01-02T03:04:05Z',
      );
    }
    if (t <= now.getTime()) {
      throw new RunnerOptionsError(
        'PTAH_EXECUTION_NOT_AFTER',
        'the execution deadline has passed',
        'the manager must dispatch a new operation',
        'deadline_expired',
      );
    }
    if (t < deadline.getTime()) deadline = new Date(t);
  }

  const childSettings: Record<string, string> = {};
  for (const name of ENGINE_SETTINGS) {
    const v = nonEmpty(env[name]);
    if (v !== undefined) childSettings[name] = v;
  }

  return {
    mode: 'run',
    operation: op,
    operationId,
    ptah: ptahCommand(values['ptah-binary'] ?? nonEmpty(env['PTAH_RUNNER_PTAH_BINARY'])),
    databaseUrl,
    dialect,
    ...(devUrl !== undefined ? { devUrl } : {}),
    schemaDir: nonEmpty(env['PTAH_SCHEMA_DIR']) ?? DEFAULTS.schemaDir,
    planDir: nonEmpty(env['PTAH_PLAN_DIR']) ?? DEFAULTS.planDir,
    ...(expectedPlanContentDigest !== undefined ? { expectedPlanContentDigest } : {}),
    ...(expectedTargetIdentity !== undefined ? { expectedTargetIdentity } : {}),
    migrationsDir: nonEmpty(env['PTAH_MIGRATIONS_DIR']) ?? DEFAULTS.migrationsDir,
    ...migrationApply,
    exclude: parsePatternList(env['PTAH_EXCLUDE'], 'PTAH_EXCLUDE', '["audit_*","tmp"]'),
    protectedTables: protectedTableList(env['PTAH_PROTECTED_TABLES']),
    ...lockTimeout(env['PTAH_LOCK_TIMEOUT']),
    childSettings,
    workDir: nonEmpty(env['PTAH_WORK_DIR']) ?? tmpdir(),
    maxOutputBytes: positiveInt(values['max-output-bytes'], '--max-output-bytes', DEFAULTS.maxOutputBytes),
    maxPlanBytes: positiveInt(values['max-plan-bytes'], '--max-plan-bytes', DEFAULTS.maxPlanBytes),
    deadline,
    terminationGraceMs:
      positiveInt(
        env['PTAH_TERMINATION_GRACE_PERIOD_SECONDS'],
        'PTAH_TERMINATION_GRACE_PERIOD_SECONDS',
        DEFAULTS.terminationGraceSeconds,
      ) * 1000,
    terminationMessagePath: terminationMessagePath(env),
  };
}

type MigrationApplyOptions = Pick<
  CompiledRunOptions,
  'expectedSequence' | 'expectedHistoryFingerprint' | 'transactionMode'
>;

function migrationApplyOptions(env: Readonly<Record<string, string | undefined>>): MigrationApplyOptions {
  const expectedSequence = parseExpectedSequence(env['PTAH_EXPECTED_SEQUENCE']);
  const fingerprint = nonEmpty(env['PTAH_EXPECTED_HISTORY_FINGERPRINT']);
  if (fingerprint !== undefined && !isSha256Digest(fingerprint)) {
    throw new RunnerOptionsError(
      'PTAH_EXPECTED_HISTORY_FINGERPRINT',
      'not sha256:<64 hex>',
      "set it to the plan's historyFingerprint, or leave it out",
    );
  }
  const mode = nonEmpty(env['PTAH_TRANSACTION_MODE']);
  if (mode !== undefined && mode !== 'file' && mode !== 'none' && mode !== 'unset') {
    throw new RunnerOptionsError(
      'PTAH_TRANSACTION_MODE',
      `"${mode.slice(0, 16)}" is not a transaction mode`,
      'write file, none or unset (spec.policy.transactionMode)',
    );
  }
  return {
    expectedSequence,
    ...(fingerprint !== undefined ? { expectedHistoryFingerprint: fingerprint } : {}),
    ...(mode === 'file' || mode === 'none' ? { transactionMode: mode } : {}),
  };
}

/**
 * The approved sequence, exactly as the plan lists it: canonical versions (as the engine spells them, so
 * the comparison under the lock is string for string) and lower-case SHA-256 hex checksums, nothing else.
 */
export function parseExpectedSequence(raw: string | undefined): ExpectedMigrationEntry[] {
  const field = 'PTAH_EXPECTED_SEQUENCE';
  const example = 'write it like [{"version":"20250101120000","checksum":"<64 hex>"}]';
  if (raw === undefined || raw === '') {
    throw new RunnerOptionsError(field, 'missing', 'a migration Apply must carry the approved sequence');
  }
  if (Buffer.byteLength(raw) > DEFAULTS.maxExpectedSequenceBytes) {
    throw new RunnerOptionsError(
      field,
      `${Buffer.byteLength(raw)} bytes, more than ${DEFAULTS.maxExpectedSequenceBytes}`,
      `approve at most ${DEFAULTS.maxExpectedSequenceEntries} migrations at once`,
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new RunnerOptionsError(field, 'not JSON', example);
  }
  if (!Array.isArray(parsed) || parsed.length === 0) {
    throw new RunnerOptionsError(field, 'not a non-empty JSON array', example);
  }
  if (parsed.length > DEFAULTS.maxExpectedSequenceEntries) {
    throw new RunnerOptionsError(
      field,
      `${parsed.length} entries, more than ${DEFAULTS.maxExpectedSequenceEntries}`,
      `approve at most ${DEFAULTS.maxExpectedSequenceEntries} migrations at once`,
    );
  }
  const seen = new Set<string>();
  return parsed.map((item: unknown, i): ExpectedMigrationEntry => {
    const o = typeof item === 'object' && item !== null && !Array.isArray(item) ? item : undefined;
    const keys = o === undefined ? [] : Object.keys(o).sort();
    const { version, checksum } = (o ?? {}) as { version?: unknown; checksum?: unknown };
    if (keys.join(',') !== 'checksum,version') {
      throw new RunnerOptionsError(field, `entry ${i} is not {version, checksum}`, example);
    }
    if (!isCanonicalVersion(version)) {
      throw new RunnerOptionsError(
        field,
        `entry ${i}: the version is not a canonical decimal string (1 to 2^63-1, no leading zero)`,
        'copy the version exactly as the history reading reported it',
      );
    }
    if (typeof checksum !== 'string' || !/^[0-9a-f]{64}$/.test(checksum)) {
      throw new RunnerOptionsError(field, `entry ${i}: the checksum is not 64 lower-case hex`, example);
    }
    if (seen.has(version)) throw new RunnerOptionsError(field, `version ${version} appears twice`, example);
    seen.add(version);
    return { version, checksum };
  });
}

/** A version as the engine spells it: the decimal string parseVersion gives back unchanged. */
export function isCanonicalVersion(v: unknown): v is string {
  if (typeof v !== 'string') return false;
  try {
    return parseVersion(v) === v;
  } catch {
    return false;
  }
}

function compileCheckSnapshot(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): CompiledCheckSnapshotOptions {
  const { values } = parse(argv, {
    snapshot: { type: 'string' },
    digest: { type: 'string' },
    out: { type: 'string' },
  });
  const snapshotDir = values['snapshot'];
  if (snapshotDir === undefined) {
    throw new RunnerOptionsError(
      '--snapshot',
      'missing',
      'pass the directory where the snapshot ConfigMap is mounted',
    );
  }
  const contentDigest = values['digest'];
  if (!isSha256Digest(contentDigest)) {
    throw new RunnerOptionsError(
      '--digest',
      contentDigest === undefined ? 'missing' : 'not sha256:<64 hex>',
      'pass the content digest the operation is bound to',
    );
  }
  const outDir = values['out'];
  if (outDir === undefined) {
    throw new RunnerOptionsError(
      '--out',
      'missing',
      'pass the EmptyDir the operation container reads the files from',
    );
  }
  return {
    mode: 'check-snapshot',
    operationId: operationIdOf(env),
    snapshotDir,
    contentDigest,
    outDir,
    terminationMessagePath: terminationMessagePath(env),
  };
}

type FlagSpec = Record<string, { type: 'string' }>;

function parse(argv: readonly string[], options: FlagSpec): { values: Record<string, string | undefined> } {
  try {
    const { values } = parseArgs({ args: [...argv], options, strict: true, allowPositionals: false });
    return { values: values as Record<string, string | undefined> };
  } catch (error) {
    const message = error instanceof Error ? error.message.split('\n')[0]! : 'unreadable arguments';
    throw new RunnerOptionsError(
      'argv',
      message.slice(0, 200),
      `accepted flags: ${Object.keys(options)
        .map((k) => `--${k}`)
        .join(', ')}`,
    );
  }
}

function requireOperationId(env: Readonly<Record<string, string | undefined>>): string {
  const id = env['PTAH_OPERATION_ID'];
  if (id === undefined || !OPERATION_ID.test(id)) {
    throw new RunnerOptionsError(
      'PTAH_OPERATION_ID',
      id === undefined ? 'missing' : 'not an id of at most 128 letters, digits and :._-',
      "set it to the claim's operation id",
    );
  }
  return id;
}

function terminationMessagePath(env: Readonly<Record<string, string | undefined>>): string {
  return nonEmpty(env['PTAH_TERMINATION_MESSAGE_PATH']) ?? DEFAULTS.terminationMessagePath;
}

function positiveInt(raw: string | undefined, field: string, fallback: number): number {
  if (raw === undefined || raw === '') return fallback;
  if (!/^[1-9][0-9]{0,9}$/.test(raw)) {
    throw new RunnerOptionsError(
      field,
      `"${raw.slice(0, 16)}" is not a positive integer`,
      `omit it for the default ${fallback}`,
    );
  }
  return Number(raw);
}

function lockTimeout(raw: string | undefined): { lockTimeoutMs?: number } {
  if (raw === undefined || raw === '') return {};
  const m = /^([0-9]{1,9})(ms|s|m)?$/.exec(raw);
  if (m === null) {
    throw new RunnerOptionsError(
      'PTAH_LOCK_TIMEOUT',
      `"${raw.slice(0, 16)}" is not a duration`,
      'write milliseconds, or a number with ms, s or m',
    );
  }
  const factor = { ms: 1, s: 1000, m: 60_000 }[m[2] ?? 'ms'] ?? 1;
  return { lockTimeoutMs: Number(m[1]) * factor };
}

function protectedTableList(raw: string | undefined): string[] {
  const names = parsePatternList(raw, 'PTAH_PROTECTED_TABLES', '["public.accounts", "\\"Orders\\""]');
  for (const name of names) {
    try {
      parseTableName(name);
    } catch (error) {
      throw new RunnerOptionsError(
        'PTAH_PROTECTED_TABLES',
        (error as Error).message,
        'write table or schema.table; double-quote a part to keep its case',
      );
    }
  }
  return names;
}

function parsePatternList(raw: string | undefined, field: string, example: string): string[] {
  if (raw === undefined || raw === '') return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    parsed = undefined;
  }
  if (
    !Array.isArray(parsed) ||
    !parsed.every((x) => typeof x === 'string' && x !== '' && !x.startsWith('-'))
  ) {
    throw new RunnerOptionsError(field, 'not a JSON list of names', `write it like ${example}`);
  }
  return parsed as string[];
}

function normaliseEngine(engine: string): Dialect | string {
  const e = engine.toLowerCase();
  if (e === 'postgres' || e === 'postgresql') return 'postgres';
  if (e === 'mysql' || e === 'mariadb') return 'mysql';
  return e;
}

function nonEmpty(v: string | undefined): string | undefined {
  return v === undefined || v === '' ? undefined : v;
}

/** A script is run by this Node (no shell, no PATH lookup for the interpreter); anything else is executed. */
export function ptahCommand(binary: string | undefined): PtahCommand {
  const file = binary ?? fileURLToPath(ptahProgramUrl());
  if (binary !== undefined && !existsSync(file)) {
    throw new RunnerOptionsError(
      '--ptah-binary',
      'no such file',
      'point it at the ptah executable in the image',
    );
  }
  if (/\.(mjs|cjs|js)$/.test(file)) return { file: process.execPath, prefixArgs: [...PTAH_NODE_FLAGS, file] };
  return { file, prefixArgs: [] };
}
