/** A row of the revision table, as the engine reads and writes it. */
export interface RevisionRow {
  /** Canonical decimal string. */
  readonly version: string;
  readonly description: string;
  /** SHA-256 hex of the file bytes that were applied (or recorded by baseline/set). */
  readonly checksum: string;
  /**
   * True when the row stands for every lower version too: a checkpoint file applied on an empty database,
   * or a version recorded by `baseline`.
   */
  readonly checkpoint: boolean;
  /** ISO 8601 instant. */
  readonly appliedAt: string;
  readonly executionMs: number;
  /** The run stopped inside this version (or is still running it): the database may hold part of it. */
  readonly dirty: boolean;
  /** For a dirty row: how many statements of the file had completed when the run stopped. */
  readonly statementsDone: number | null;
}

export interface RevisionTableName {
  /** PostgreSQL schema or MySQL database; undefined = the connection's current one. */
  readonly schema: string | undefined;
  readonly table: string;
}

export const DEFAULT_REVISION_TABLE = 'ptah_schema_revisions';

/** `--revisions-table` accepts `table` or `schema.table` (plain identifiers, no quoting needed). */
export function parseRevisionTableName(text: string | undefined): RevisionTableName {
  if (text === undefined || text === '') return { schema: undefined, table: DEFAULT_REVISION_TABLE };
  const parts = text.split('.');
  const ident = /^[A-Za-z_][A-Za-z0-9_$]{0,62}$/;
  if (parts.length > 2 || !parts.every((p) => ident.test(p))) {
    throw new Error(
      `--revisions-table "${text}" must be "table" or "schema.table" made of letters, digits and _`,
    );
  }
  return parts.length === 2
    ? { schema: parts[0], table: parts[1] ?? DEFAULT_REVISION_TABLE }
    : { schema: undefined, table: parts[0] ?? DEFAULT_REVISION_TABLE };
}
