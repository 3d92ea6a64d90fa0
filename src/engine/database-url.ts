/**
 * Database URLs carry credentials. Everything that prints, logs or reports goes through these helpers so
 * that a password never reaches output, errors or status.
 */

export type Dialect = 'postgres' | 'mysql';

export interface ParsedDatabaseUrl {
  readonly dialect: Dialect;
  readonly url: string;
  /** The URL with user info removed: safe to print. */
  readonly redacted: string;
  /** Host, port and database only: a credential-free identity of the target. */
  readonly identity: string;
  /** Lower-cased host name, the port (the dialect's default when the URL names none), database and user, decoded. */
  readonly host: string;
  readonly port: string;
  readonly database: string;
  readonly user: string;
}

export class DatabaseUrlError extends Error {
  override readonly name = 'DatabaseUrlError';
}

/** Where the URL comes from: an explicit flag, else PTAH_DB_URL. The operator always uses the environment. */
export function resolveDatabaseUrl(
  flag: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): ParsedDatabaseUrl {
  const raw = flag ?? env['PTAH_DB_URL'];
  if (raw === undefined || raw === '') {
    throw new DatabaseUrlError('no database URL: pass --url or set PTAH_DB_URL (postgres://… or mysql://…)');
  }
  return parseDatabaseUrl(raw);
}

export function parseDatabaseUrl(raw: string): ParsedDatabaseUrl {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    // Never echo the input: it may hold a password.
    throw new DatabaseUrlError(
      'the database URL is not a valid URL; expected postgres://user:pass@host:port/db',
    );
  }
  const scheme = u.protocol.replace(/:$/, '');
  let dialect: Dialect;
  if (scheme === 'postgres' || scheme === 'postgresql') dialect = 'postgres';
  else if (scheme === 'mysql' || scheme === 'mariadb') dialect = 'mysql';
  else {
    throw new DatabaseUrlError(
      `the database URL scheme "${scheme}" is not supported; use postgres:// or mysql:// (or mariadb://)`,
    );
  }
  // Every part a driver decodes is decoded here first, so a bad escape is refused by name before anything
  // connects; the password is checked and never kept.
  const database = decodeUrlPart(u.pathname.replace(/^\//, ''), 'database name');
  const user = decodeUrlPart(u.username, 'user name');
  decodeUrlPart(u.password, 'password');
  const defaultPort = dialect === 'postgres' ? '5432' : '3306';
  const port = u.port || defaultPort;
  const identity = `${dialect}://${u.hostname}:${port}/${database}`;
  const safe = new URL(u.href);
  safe.username = '';
  safe.password = '';
  safe.search = '';
  return {
    dialect,
    url: raw,
    redacted: safe.href,
    identity,
    host: u.hostname.toLowerCase(),
    port,
    database,
    user,
  };
}

function decodeUrlPart(text: string, part: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    // Never echo the part: the user name and password are credentials.
    throw new DatabaseUrlError(
      `the ${part} in the database URL has an invalid percent-escape; write a reserved character as %XX (e.g. @ as %40)`,
    );
  }
}

/** Removes every credential-looking part of a text: URL user info and the literal secrets given. */
export function redact(text: string, secrets: readonly string[] = []): string {
  let out = text.replace(/([a-z][a-z0-9+.-]*:\/\/)([^/@\s]*)@/gi, '$1***@');
  for (const s of secrets) {
    if (s.length >= 4) out = out.split(s).join('***');
  }
  return out;
}
