/**
 * The PostgreSQL connection: one client per command, a round-trip counter (the benchmark reports catalog
 * round trips), and the facts core code asks for instead of testing the dialect by name.
 */
import pg from 'pg';
import { parseDatabaseUrl, pgConnectionConfig, redact } from '../database-url.ts';
import { connectionFailureOf } from '../connection-failure.ts';
import { DatabaseError, type Session } from '../session.ts';

export { DatabaseError, type Session };

export const pgAdapterFacts = {
  supportsTransactionalDdl: true,
} as const;

/** Errors from the driver may quote the URL; everything leaving here is redacted. */
export function toDatabaseError(error: unknown, url: string): DatabaseError {
  const e = error as { message?: string; code?: string };
  const password = safePassword(url);
  // node-postgres puts the server's SQLSTATE in `code`, and Node's socket errors (ECONNREFUSED …) too.
  const sqlstate = typeof e.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code) ? e.code : undefined;
  return new DatabaseError(
    redact(String(e.message ?? error), password ? [password] : []),
    sqlstate,
    undefined,
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

export async function connectPostgres(
  url: string,
  options: { connectTimeoutMs?: number } = {},
): Promise<Session> {
  // The driver connects to exactly the target the identity names: never a connection string it re-reads.
  const client = new pg.Client({
    application_name: 'ptah-schema',
    ...pgConnectionConfig(parseDatabaseUrl(url)),
    connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
  });
  // Values come back as text: the engine compares catalog text, never driver-converted values.
  const textTypes = { getTypeParser: () => (v: string) => v };
  try {
    await client.connect();
  } catch (error) {
    await client.end().catch(() => undefined);
    throw toDatabaseError(error, url);
  }
  client.on('error', () => undefined);
  let roundTrips = 0;
  return {
    async query(sql, params) {
      roundTrips++;
      try {
        const r = await client.query({
          text: sql,
          values: params as unknown[] | undefined,
          types: textTypes,
        });
        return { rows: r.rows as Record<string, unknown>[] };
      } catch (error) {
        throw toDatabaseError(error, url);
      }
    },
    get roundTrips() {
      return roundTrips;
    },
    async close() {
      await client.end().catch(() => undefined);
    },
  };
}
