/**
 * Why an operation failed, as a small closed vocabulary that can travel from `ptah` through the runner's
 * frame to status: never database text (a server's message can quote row values and names), only codes,
 * and for the user's own desired-state files the file, line, column and the parser's words about them.
 *
 * `ptah --json` writes it beside its error, the runner copies it into the frame, and the manager reads it
 * back with `readCause`, which re-checks every field and bound: the frame comes from a Pod log.
 */

/** How a connection attempt failed before the server answered with a SQLSTATE. */
export const CONNECTION_FAILURES = [
  /** Nothing listens on the host and port (ECONNREFUSED). */
  'refused',
  /** The host did not answer in time (connect timeout, ETIMEDOUT). */
  'timed-out',
  /** The host name does not resolve (ENOTFOUND, EAI_AGAIN). */
  'host-not-found',
  /** The server refuses an unencrypted connection (pg_hba hostssl, require_secure_transport). */
  'tls-required',
  /** The URL asks for TLS and the server does not offer it. */
  'tls-unavailable',
  /** The server closed the connection before it was established (ECONNRESET, EPIPE). */
  'closed',
] as const;
export type ConnectionFailure = (typeof CONNECTION_FAILURES)[number];

export interface DesiredStateProblem {
  /** The file's path inside the desired state, relative to its root. */
  readonly file?: string;
  readonly line?: number;
  readonly column?: number;
  /** The parser's or loader's words about the user's own file. */
  readonly message: string;
}

export type FailureCause =
  /** The desired state does not load: problems in the user's files, the first few of them. */
  | {
      readonly kind: 'desired-state';
      readonly problems: readonly DesiredStateProblem[];
      /** How many problems there were in all; `problems` holds at most MAX_PROBLEMS. */
      readonly total: number;
    }
  /** The server answered with an error: its SQLSTATE and, on MySQL, its error number. */
  | { readonly kind: 'database'; readonly sqlstate?: string; readonly errno?: number }
  /** No connection was established. */
  | { readonly kind: 'connection'; readonly failure: ConnectionFailure }
  /** The execution deadline passed before the operation ended. */
  | { readonly kind: 'deadline' };

export type CauseKind = FailureCause['kind'];

export const MAX_PROBLEMS = 5;
export const MAX_PROBLEM_MESSAGE = 300;
const MAX_FILE = 256;
const SQLSTATE = /^[0-9A-Z]{5}$/;

function isCount(v: unknown, max = 1_000_000_000): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 && v <= max;
}

/** Control characters go; a long text is cut, so nothing unbounded reaches status. */
function boundedText(v: string, max: number): string {
  // eslint-disable-next-line no-control-regex
  const clean = v.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
  const chars = Array.from(clean);
  return chars.length <= max ? clean : `${chars.slice(0, max - 1).join('')}…`;
}

/** A relative file path of safe segments, or undefined. */
function safeFile(v: unknown): string | undefined {
  if (typeof v !== 'string' || v === '' || v.length > MAX_FILE) return undefined;
  if (v.startsWith('/') || v.split('/').some((s) => s === '' || s === '.' || s === '..')) return undefined;
  return /^[A-Za-z0-9._/+@=-]+$/.test(v) ? v : undefined;
}

function readProblem(v: unknown): DesiredStateProblem | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const p = v as Record<string, unknown>;
  if (typeof p['message'] !== 'string') return undefined;
  const file = safeFile(p['file']);
  const line = isCount(p['line']) && p['line'] > 0 ? p['line'] : undefined;
  const column = line !== undefined && isCount(p['column']) && p['column'] > 0 ? p['column'] : undefined;
  return {
    ...(file !== undefined ? { file } : {}),
    ...(file !== undefined && line !== undefined ? { line } : {}),
    ...(file !== undefined && column !== undefined ? { column } : {}),
    message: boundedText(p['message'], MAX_PROBLEM_MESSAGE),
  };
}

/** The cause a frame (or ptah's JSON) states, checked and bounded; undefined when it states none or junk. */
export function readCause(value: unknown): FailureCause | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const v = value as Record<string, unknown>;
  switch (v['kind']) {
    case 'desired-state': {
      if (!Array.isArray(v['problems'])) return undefined;
      const problems = v['problems']
        .slice(0, MAX_PROBLEMS)
        .map(readProblem)
        .filter((p): p is DesiredStateProblem => p !== undefined);
      if (problems.length === 0) return undefined;
      const total = isCount(v['total']) && v['total'] >= problems.length ? v['total'] : problems.length;
      return { kind: 'desired-state', problems, total };
    }
    case 'database': {
      const sqlstate =
        typeof v['sqlstate'] === 'string' && SQLSTATE.test(v['sqlstate']) ? v['sqlstate'] : undefined;
      const errno = isCount(v['errno'], 65_535) ? v['errno'] : undefined;
      if (sqlstate === undefined && errno === undefined) return undefined;
      return {
        kind: 'database',
        ...(sqlstate !== undefined ? { sqlstate } : {}),
        ...(errno !== undefined ? { errno } : {}),
      };
    }
    case 'connection':
      return (CONNECTION_FAILURES as readonly unknown[]).includes(v['failure'])
        ? { kind: 'connection', failure: v['failure'] as ConnectionFailure }
        : undefined;
    case 'deadline':
      return { kind: 'deadline' };
    default:
      return undefined;
  }
}

/**
 * The problems a desired-state error message lists, one per line, each `file:line:column: text`,
 * `file: text` or plain text (the engine's message form, one problem or "N problems…" then one per line).
 * `root`, when given, is the directory the files were read from; paths are made relative to it.
 */
export function desiredStateCause(message: string, root?: string): FailureCause {
  const lines = message
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
  const listed =
    lines.length > 1 && /^\d+ problems\b/.test(lines[0] ?? '') ? lines.slice(1) : lines.slice(0, 1);
  const prefix = root === undefined ? undefined : root.endsWith('/') ? root : `${root}/`;
  const relative = (file: string): string | undefined => {
    const rel = prefix !== undefined && file.startsWith(prefix) ? file.slice(prefix.length) : file;
    return safeFile(rel) ?? safeFile(rel.split('/').at(-1));
  };
  const problems = listed.slice(0, MAX_PROBLEMS).map((l): DesiredStateProblem => {
    const positioned = /^(\S+?):(\d+):(\d+): (.*)$/.exec(l);
    if (positioned !== null) {
      const file = relative(positioned[1]!);
      return file === undefined
        ? { message: boundedText(l, MAX_PROBLEM_MESSAGE) }
        : {
            file,
            line: Number(positioned[2]),
            column: Number(positioned[3]),
            message: boundedText(positioned[4]!, MAX_PROBLEM_MESSAGE),
          };
    }
    const filed = /^(\S+?\.sql): (.*)$/.exec(l);
    const file = filed === null ? undefined : relative(filed[1]!);
    return file !== undefined && filed !== null
      ? { file, message: boundedText(filed[2]!, MAX_PROBLEM_MESSAGE) }
      : { message: boundedText(l, MAX_PROBLEM_MESSAGE) };
  });
  return {
    kind: 'desired-state',
    problems: problems.length > 0 ? problems : [{ message: 'the desired state does not load' }],
    total: Math.max(listed.length, 1),
  };
}
