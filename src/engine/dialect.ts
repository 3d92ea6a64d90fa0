/**
 * A dialect plugs into the engine as one object: it connects, inspects, loads desired SQL, renders changes
 * and states facts. Core code asks for the fact, never for the dialect's name. PostgreSQL and MySQL (MariaDB) are the two.
 */
import type { Change } from './changes.ts';
import type { DialectTypeRisk } from './classify.ts';
import type { RowSet, SchemaModel, Table } from './model.ts';
import type { DropTarget } from './plan-header.ts';
import type { Session } from './session.ts';
import type { ServerReport } from '../protocol/result.ts';

export type { Session };

/** What to read of a table's rows: its key and the declared columns that exist live. */
export interface RowRequest {
  readonly schema: string;
  readonly table: string;
  readonly key: readonly string[];
  readonly columns: readonly string[];
}

/**
 * The server a dialect is connected to, as a status records it: MariaDB and MySQL are one engine family
 * (one dialect), told apart here. `version` is the leading release number only (`10.11.6`, `8.4.3`, `15.8`).
 */
export type DatabaseServer = ServerReport;

/** How a server runs a change on its table: whether every row is written again, and whether writes wait. */
export interface TableWork {
  readonly rebuilds: boolean;
  readonly writesWait: boolean;
  /** How the server runs it, for the plan's reason (`rebuilds the table by copying every row: ...`). */
  readonly how: string;
}

export interface InspectOptions {
  /**
   * Called as soon as the role's default schema is known, before the rest of the catalog has answered, so
   * a plan can load its desired state (which needs that schema) while the server works.
   */
  readonly defaultSchemaRead?: (defaultSchema: string) => void;
  /**
   * Opens another connection to the session's database as the same role. Given only where the session's
   * transaction has written nothing (never for a dev database being loaded): a dialect that can share the
   * session's snapshot with another connection then reads part of the catalog there, at the same time.
   */
  readonly openReader?: () => Promise<Session>;
  /** How many relations a database needs before readers are opened; the dialect's own threshold by default. */
  readonly readersFrom?: number;
}

export interface SchemaDialect {
  readonly name: 'postgres' | 'mysql';
  readonly supportsTransactionalDdl: boolean;
  /**
   * A protected table name covers a table whatever the case of either. MySQL: the server may fold names
   * (lower_case_table_names 1 or 2) or keep them apart by case (0); protecting every spelling refuses
   * rather than lets a change through.
   */
  readonly protectedNamesIgnoreCase?: boolean;
  connect(url: string): Promise<Session>;
  /** Catalog queries an inspection makes, independent of the number of tables. */
  readonly catalogQueryCount: number;
  /** Which server and release the session talks to (one query). */
  describeServer(session: Session): Promise<DatabaseServer>;
  /** Reads the whole database into a model. */
  inspect(session: Session, options?: InspectOptions): Promise<SchemaModel>;
  readRows(session: Session, live: SchemaModel, requests: readonly RowRequest[]): Promise<RowSet[]>;
  normaliseRows(session: Session, liveTable: Table, rows: RowSet): Promise<RowSet>;
  /** Parses desired SQL; an unqualified name lives in `defaultSchema` (the target role's own default). */
  loadDesired(files: readonly { path: string; sql: string }[], defaultSchema: string): Promise<SchemaModel>;
  /** Statements that make a dev database's session resolve unqualified names into `defaultSchema`. */
  useDefaultSchema(defaultSchema: string): string[];
  /**
   * How the server runs a change on its table (MySQL's online DDL: instant, in place, or a copy), when the
   * dialect knows: a rebuild or a wait for writes raises the change to a warning and the plan header counts
   * the rebuilt tables from it. Absent: the generic rules of the plan header.
   */
  tableWork?(change: Change, plan: readonly Change[]): TableWork | undefined;
  /**
   * The dialect's rules for a type change between its own type names (MySQL's TINYINT, MEDIUMTEXT, ENUM...);
   * undefined, or absent, defers to the core rules, which speak PostgreSQL's names.
   */
  readonly typeChangeRisk?: DialectTypeRisk;
  /**
   * A desired file as the server runs it in one request (a dev database loads it so): MySQL respells the
   * mysql client's DELIMITER blocks. Absent: the file as written.
   */
  scriptText?(sql: string): string;
  /**
   * Runs the desired files in a dev database's open transaction, declarations in any order (PostgreSQL:
   * statement by statement in the loader's order, each in a savepoint, a statement naming what is declared
   * further down run again once it exists). Absent: each file runs whole, in file order.
   */
  loadIntoDev?(dev: Session, files: readonly { path: string; sql: string }[]): Promise<void>;
  /** A change's statements; `plan` is the whole ordered plan it is part of, for a dialect that joins changes. */
  render(change: Change, plan?: readonly Change[]): string[];
  /** Rows of each target table, or non-NULL values of each target column, in one round trip. */
  countData(session: Session, targets: readonly DropTarget[]): Promise<number[]>;
  /** Statements that open a transaction for applying a plan with the given lock timeout. */
  beginApply(lockTimeoutMs: number): string[];
  /** Statements that open a read-only, consistent snapshot. */
  beginReadOnly(): string[];
  /**
   * Finishes a desired model against the server it is compared with (MySQL: the connected database's name
   * and its default engine and collation fill what the desired SQL left to the server). Live and desired
   * then share one normal form. Absent: the desired model is already complete.
   */
  resolveDesired?(session: Session, desired: SchemaModel): Promise<SchemaModel>;
  /**
   * Checks planned changes against the server they will run on (PostgreSQL: that a cast exists for every
   * type change) and returns the refusals to add, so a plan that would fail on apply is refused when it is
   * made. `desired` is the model the changes lead to (what it declares but leaves unmanaged, too). Absent:
   * nothing to check.
   */
  checkChanges?(session: Session, changes: readonly Change[], desired: SchemaModel): Promise<Change[]>;
}
