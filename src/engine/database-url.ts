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
  const database = decodeURIComponent(u.pathname.replace(/^\//, ''));
  const defaultPort = dialect === 'postgres' ? '5432' : '3306';
  const identity = `${dialect}://${u.hostname}:${u.port || defaultPort}/${database}`;
  const safe = new URL(u.href);
  safe.username = '';
  safe.password = '';
  safe.search = '';
  return { dialect, url: raw, redacted: safe.href, identity };
}

/** Removes every credential-looking part of a text: URL user info and the literal secrets given. */
export function redact(text: string, secrets: readonly string[] = []): string {
  let out = text.replace(/([a-z][a-z0-9+.-]*:\/\/)([^/@\s]*)@/gi, '$1***@');
  for (const s of secrets) {
    if (s.length >= 4) out = out.split(s).join('***');
  }
  return out;
}
