/**
 * The MySQL/MariaDB connection: one mysql2 connection per command, values as text (the engine compares
 * catalog text, never driver-converted values), a round-trip counter, errors with errno and SQLSTATE and
 * free of credentials, and the facts core code asks for instead of testing the dialect by name.
 */
import mysql from 'mysql2/promise';
import { mysqlConnectionConfig, parseDatabaseUrl, redact } from '../database-url.ts';
import { connectionFailureOf } from '../connection-failure.ts';
import { DatabaseError, type Session } from '../session.ts';

export const mysqlAdapterFacts = {
  // DDL commits implicitly: a plan runs statement by statement, each committing on its own.
  supportsTransactionalDdl: false,
} as const;

/** The column a lock-taking SELECT names; a value other than 1 means the lock was not granted. */
export const LOCK_RESULT = 'ptah_lock_granted';

export function toDatabaseError(error: unknown, url: string): DatabaseError {
  const e = error as { message?: string; sqlState?: unknown; errno?: unknown };
  const password = safePassword(url);
  return new DatabaseError(
    redact(String(e.message ?? error), password ? [password] : []),
    typeof e.sqlState === 'string' ? e.sqlState : undefined,
    typeof e.errno === 'number' ? e.errno : undefined,
    connectionFailureOf(error),
  );
}

function safePassword(url: string): string | undefined {
  try {
    const p = decodeURIComponent(new URL(url).password);
    return p === '' ? undefined : p;
  } catch {
    return undefined;
  }
}

export async function connectMysql(
  url: string,
  options: { connectTimeoutMs?: number } = {},
): Promise<Session> {
  // The driver connects to exactly the target the identity names (one parser for both).
  const target = mysqlConnectionConfig(parseDatabaseUrl(url));
  let conn: mysql.Connection;
  try {
    conn = await mysql.createConnection({
      ...target,
      // Desired files and dev-database loads are whole scripts; plan statements are single ones.
      multipleStatements: true,
      connectTimeout: options.connectTimeoutMs ?? 10_000,
      connectAttributes: { program_name: 'ptah-schema' },
      supportBigNumbers: true,
      bigNumberStrings: true,
      dateStrings: true,
      charset: 'utf8mb4',
      typeCast: (field, next) => (field.type === 'GEOMETRY' ? next() : field.string()),
    });
  } catch (error) {
    throw toDatabaseError(error, url);
  }
  conn.on('error', () => undefined);
  if (target.database === undefined) {
    await conn.end().catch(() => undefined);
    throw new DatabaseError('the MySQL URL names no database; add /<database> to it', undefined);
  }
  let roundTrips = 0;
  return {
    async query(sql, params) {
      roundTrips++;
      let rows: Record<string, unknown>[];
      try {
        const [result] = await conn.query(sql, params as unknown[] | undefined);
        rows = Array.isArray(result) ? (result as Record<string, unknown>[]) : [];
      } catch (error) {
        throw toDatabaseError(error, url);
      }
      const lock = rows[0]?.[LOCK_RESULT];
      if (lock !== undefined && String(lock) !== '1') {
        throw new DatabaseError(
          'another ptah schema apply holds the schema lock of this database; wait for it to finish or raise --lock-timeout',
          'HY000',
        );
      }
      return { rows };
    },
    get roundTrips() {
      return roundTrips;
    },
    async close() {
      await conn.end().catch(() => undefined);
    },
  };
}
