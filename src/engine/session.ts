/** What the engine needs from a database connection, independent of the dialect. */
import type { ConnectionFailure } from '../protocol/cause.ts';

export interface QueryResultRows {
  readonly rows: Record<string, unknown>[];
}

export interface Session {
  query(sql: string, params?: readonly unknown[]): Promise<QueryResultRows>;
  /** Round trips made so far on this session (the benchmark reports catalog round trips). */
  readonly roundTrips: number;
  close(): Promise<void>;
}

/**
 * A database error with its SQLSTATE (and MySQL's error number), or how the connection failed when there
 * was none to answer; the message is free of credentials.
 */
export class DatabaseError extends Error {
  override readonly name = 'DatabaseError';
  constructor(
    message: string,
    readonly sqlstate: string | undefined,
    readonly errno?: number,
    readonly connection?: ConnectionFailure,
  ) {
    super(message);
  }
}
