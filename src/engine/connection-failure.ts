/**
 * Which way a connection attempt failed, read from the driver's error code (and, where a driver gives no
 * code, from its fixed wording; never from anything the server sent but a SQLSTATE or MySQL errno).
 * Undefined when the error is a server's answer to an established connection.
 */
import type { ConnectionFailure } from '../protocol/cause.ts';

const BY_CODE: Readonly<Record<string, ConnectionFailure>> = {
  ECONNREFUSED: 'refused',
  ETIMEDOUT: 'timed-out',
  ESOCKETTIMEDOUT: 'timed-out',
  EHOSTUNREACH: 'timed-out',
  ENETUNREACH: 'timed-out',
  ENOTFOUND: 'host-not-found',
  EAI_AGAIN: 'host-not-found',
  ECONNRESET: 'closed',
  EPIPE: 'closed',
  PROTOCOL_CONNECTION_LOST: 'closed',
  // mysql2: the URL asks for TLS, the server offers none.
  HANDSHAKE_NO_SSL_SUPPORT: 'tls-unavailable',
};

/** node-postgres raises these without a code. */
const PG_WORDING: readonly (readonly [RegExp, ConnectionFailure])[] = [
  [/^Connection terminated due to connection timeout/, 'timed-out'],
  [/^timeout expired/, 'timed-out'],
  [/^The server does not support SSL connections/, 'tls-unavailable'],
  [/^Connection terminated unexpectedly/, 'closed'],
];

/** MySQL 8: require_secure_transport refuses a plain connection. */
const MYSQL_SECURE_TRANSPORT_REQUIRED = 3159;

export function connectionFailureOf(error: unknown): ConnectionFailure | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const e = error as { code?: unknown; message?: unknown; errno?: unknown; errors?: unknown };
  const code = typeof e.code === 'string' ? e.code : '';
  const message = typeof e.message === 'string' ? e.message : '';
  const byCode = BY_CODE[code];
  if (byCode !== undefined) return byCode;
  // PostgreSQL refuses a plain connection a hostssl-only pg_hba does not admit: 28000 "..., no encryption".
  if (code === '28000' && /\bno encryption\b/.test(message)) return 'tls-required';
  if (e.errno === MYSQL_SECURE_TRANSPORT_REQUIRED) return 'tls-required';
  for (const [wording, failure] of PG_WORDING) if (wording.test(message)) return failure;
  // Node's happy-eyeballs connect reports every address tried; the first says what happened.
  if (Array.isArray(e.errors) && e.errors.length > 0) return connectionFailureOf(e.errors[0]);
  return undefined;
}
