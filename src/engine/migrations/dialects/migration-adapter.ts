/**
 * What the migrations engine needs from a database connection. Each dialect states facts
 * (`supportsTransactionalDdl`, `defaultTxMode`) and core code asks for the fact, never for the dialect.
 */
import type { Dialect } from '../../database-url.ts';
import type { TxMode } from '../migration-file.ts';
import type { RevisionRow } from '../revision.ts';

/** How a failed statement is reported: codes only, never the server's message (it can quote row values). */
export type StatementErrorClass =
  | { readonly kind: 'statement'; readonly sqlstate: string | null; readonly errno: number | null }
  /** The connection broke: the statement may or may not have taken effect. */
  | { readonly kind: 'connection'; readonly sqlstate: string | null; readonly errno: number | null };

export interface MigrationAdapter {
  readonly dialect: Dialect;
  /** DDL can be rolled back with the transaction it ran in (PostgreSQL: yes; MySQL/MariaDB: no). */
  readonly supportsTransactionalDdl: boolean;
  /** The mode used for a file without a `-- ptah:txmode` directive and without a run-wide override. */
  readonly defaultTxMode: TxMode;
  /** Schema (PostgreSQL) or database (MySQL) holding the revision table and the migrated objects. */
  readonly schema: string;
  readonly revisionTable: string;

  /** Rows of the revision table; an empty list when the table does not exist yet (nothing is created). */
  readRevisions(): Promise<RevisionRow[]>;
  ensureRevisionTable(): Promise<void>;
  insertRevision(row: Omit<RevisionRow, 'appliedAt'>): Promise<void>;
  /** Marks a version finished: clean, with its execution time, applied now. */
  markRevisionClean(version: string, executionMs: number): Promise<void>;
  markRevisionStopped(version: string, statementsDone: number): Promise<void>;
  deleteRevision(version: string): Promise<void>;

  /** Waits up to timeoutMs for the engine's migration lock; false when it timed out. */
  acquireLock(timeoutMs: number): Promise<boolean>;
  releaseLock(): Promise<void>;

  begin(): Promise<void>;
  commit(): Promise<void>;
  rollback(): Promise<void>;
  execute(sql: string): Promise<void>;
  /**
   * Whether the transaction begun for a file is still open after a statement (false: the statement
   * committed implicitly, as MySQL DDL does); undefined when the database cannot say.
   */
  inTransaction(): Promise<boolean | undefined>;
  classifyError(error: unknown): StatementErrorClass;

  /**
   * `table.column type` for every column of every table in the connection's current schema (where
   * unqualified objects are created), except the revision table.
   */
  describeColumns(): Promise<string[]>;
  close(): Promise<void>;
}

export interface ConnectOptions {
  /** How long to wait for the server to accept the connection; 30 s when not given. */
  readonly connectTimeoutMs?: number;
}

export const DEFAULT_CONNECT_TIMEOUT_MS = 30_000;
