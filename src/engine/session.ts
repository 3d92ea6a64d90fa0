/** What the engine needs from a database connection, independent of the dialect. */

export interface QueryResultRows {
  readonly rows: Record<string, unknown>[];
}

export interface Session {
  query(sql: string, params?: readonly unknown[]): Promise<QueryResultRows>;
  /** Round trips made so far on this session (the benchmark reports catalog round trips). */
  readonly roundTrips: number;
  close(): Promise<void>;
}

/** A database error with its SQLSTATE (and MySQL's error number); the message is free of credentials. */
export class DatabaseError extends Error {
  override readonly name = 'DatabaseError';
  constructor(
    message: string,
    readonly sqlstate: string | undefined,
    readonly errno?: number,
  ) {
    super(message);
  }
}
