/**
 * Database URLs carry credentials. Everything that prints, logs or reports goes through these helpers so
 * that a password never reaches output, errors or status.
 */

import type pg from 'pg';
import { parseIntoClientConfig } from 'pg-connection-string';

export type Dialect = 'postgres' | 'mysql';

export interface ParsedDatabaseUrl {
  readonly dialect: Dialect;
  readonly url: string;
  /** The URL with user info removed: safe to print. */
  readonly redacted: string;
  /** Host, port and database only: a credential-free identity of the target. */
  readonly identity: string;
  /**
   * What the driver connects to, and all the target identity binds: the lower-cased host (IPv6 without
   * brackets), the port (the dialect's default when the URL names none), the database (for PostgreSQL the
   * user's name when the URL names none) and the user, decoded. pgConnectionConfig and
   * mysqlConnectionConfig hand exactly these to the drivers.
   */
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

/**
 * Query parameters the drivers honour that only tune a connection to the target the URL's authority and
 * path name (TLS, timeouts, the application name, a password). Anything else is refused by name: a
 * parameter that moves the connection (`?host=`, `?port=`, `?user=`, `?dbname=` …) would let the target
 * identity name one database while the driver reaches another, and an unknown one may start to do so in
 * a later driver version.
 */
const TUNING_PARAMETERS: Readonly<Record<Dialect, ReadonlySet<string>>> = {
  postgres: new Set([
    'sslmode',
    'ssl',
    'sslrootcert',
    'sslcert',
    'sslkey',
    'sslnegotiation',
    'uselibpqcompat',
    'application_name',
    'fallback_application_name',
    'connect_timeout',
    'statement_timeout',
    'lock_timeout',
    'idle_in_transaction_session_timeout',
    'query_timeout',
    'password',
  ]),
  // The MySQL connection is built from the URL's parts alone; no query parameter reaches the driver.
  mysql: new Set(),
};

/** Parameters that redirect the connection under the driver or libpq, with what to write instead. */
const REDIRECTING_PARAMETERS: Readonly<Record<string, string>> = {
  host: 'put the host in the URL authority (scheme://user@HOST:port/db)',
  hostaddr: 'put the address in the URL authority (scheme://user@ADDRESS:port/db)',
  port: 'put the port in the URL authority (scheme://user@host:PORT/db)',
  user: 'put the user in the URL (scheme://USER@host/db)',
  dbname: 'put the database in the URL path (scheme://user@host/DB)',
  database: 'put the database in the URL path (scheme://user@host/DB)',
  db: 'put the database in the URL path (scheme://user@host/DB)',
  service: 'write the service’s host, port and database into the URL itself',
  servicefile: 'write the service’s host, port and database into the URL itself',
  options: 'set server options on the role or database (ALTER ROLE … SET), not in the URL',
  socketPath: 'name a TCP host in the URL authority; unix sockets are not supported',
  socket: 'name a TCP host in the URL authority; unix sockets are not supported',
  localAddress: 'remove it; the connection leaves from the Pod’s own address',
  replication: 'remove it; ptah needs an ordinary connection',
  target_session_attrs: 'remove it; name exactly one host',
};

/** A parameter name that is safe to repeat in an error: user text could otherwise carry a secret. */
const NAMEABLE = /^[A-Za-z_][A-Za-z0-9_]{0,39}$/;

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
  refuseRedirectingQuery(u, dialect);
  // Every part a driver decodes is decoded here first, so a bad escape is refused by name before anything
  // connects; the password is checked and never kept.
  const user = decodeUrlPart(u.username, 'user name');
  decodeUrlPart(u.password, 'password');
  if (user === '') {
    // Without one the driver would pick a user from its environment, which the identity cannot see.
    throw new DatabaseUrlError('the database URL names no user; write scheme://USER:password@host/db');
  }
  const host = decodeUrlPart(u.hostname.replace(/^\[(.*)\]$/, '$1'), 'host').toLowerCase();
  if (host === '') throw new DatabaseUrlError('the database URL names no host; write scheme://user@HOST/db');
  if (host.startsWith('/'))
    throw new DatabaseUrlError(
      'the database URL names a unix socket as its host; name a TCP host (scheme://user@HOST:port/db)',
    );
  if (host.includes(','))
    throw new DatabaseUrlError('the database URL names several hosts; name exactly one host');
  const path = decodeUrlPart(u.pathname.replace(/^\//, ''), 'database name');
  // PostgreSQL's own default when no database is named is the user's name; MySQL connects to none.
  const database = path === '' && dialect === 'postgres' ? user : path;
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
    host,
    port,
    database,
    user,
  };
}

function refuseRedirectingQuery(u: URL, dialect: Dialect): void {
  for (const name of new Set(u.searchParams.keys())) {
    if (TUNING_PARAMETERS[dialect].has(name)) continue;
    const fix = REDIRECTING_PARAMETERS[name];
    if (fix !== undefined) {
      throw new DatabaseUrlError(
        `the database URL's query parameter "${name}" would redirect the connection away from the host, port, user and database the URL names (and the plan is bound to); ${fix}, and remove ?${name}=`,
      );
    }
    const shown = NAMEABLE.test(name) ? `"${name}"` : '(a name not shown)';
    const allowed = [...TUNING_PARAMETERS[dialect]].join(', ');
    throw new DatabaseUrlError(
      `the database URL's query parameter ${shown} is not one ptah passes to the ${dialect} driver; ${
        allowed === '' ? `a ${dialect} URL takes no query parameters` : `only ${allowed} are accepted`
      }: remove it`,
    );
  }
}

/**
 * The pg client configuration for a parsed URL: the host, port, user and database are exactly the ones
 * the target identity is computed from (never re-read from the URL by the driver, never taken from PG*
 * environment variables), and the accepted tuning parameters are read by pg-connection-string as pg would.
 */
export function pgConnectionConfig(parsed: ParsedDatabaseUrl): pg.ClientConfig {
  const tuning = parseIntoClientConfig(parsed.url);
  return {
    ...tuning,
    host: parsed.host,
    port: Number(parsed.port),
    user: parsed.user,
    database: parsed.database,
  };
}

/** The mysql2 options for a parsed URL: the identity's host, port, user and database, and the password. */
export function mysqlConnectionConfig(parsed: ParsedDatabaseUrl): {
  host: string;
  port: number;
  user: string;
  password: string;
  database: string | undefined;
} {
  return {
    host: parsed.host,
    port: Number(parsed.port),
    user: parsed.user,
    password: decodeURIComponent(new URL(parsed.url).password),
    database: parsed.database === '' ? undefined : parsed.database,
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
