/**
 * Typed changes: what the diff returns. Each is classified (severity, reason, destructive) before any SQL
 * is rendered, so risk never depends on how a statement happens to be spelled.
 */
import type {
  Column,
  DefinedObject,
  Constraint,
  EnumType,
  Extension,
  Index,
  RowValues,
  Sequence,
  Table,
  TableOptions,
  View,
} from './model.ts';

export interface TableRef {
  readonly schema: string;
  readonly name: string;
}

export interface CommentTarget {
  readonly objectType: 'TABLE' | 'COLUMN' | 'VIEW' | 'TYPE' | 'SEQUENCE' | 'INDEX' | 'SCHEMA' | 'CONSTRAINT';
  readonly schema: string;
  /** The object; for COLUMN and CONSTRAINT, their table. */
  readonly name: string;
  readonly column?: string;
  readonly constraint?: string;
}

export type Change =
  | { readonly kind: 'CreateSchema'; readonly schema: string; readonly comment?: string }
  | { readonly kind: 'DropSchema'; readonly schema: string }
  | { readonly kind: 'CreateExtension'; readonly extension: Extension }
  | { readonly kind: 'UpdateExtension'; readonly extension: Extension }
  | { readonly kind: 'DropExtension'; readonly extension: Extension }
  | { readonly kind: 'CreateEnum'; readonly type: EnumType }
  | {
      readonly kind: 'AddEnumValue';
      readonly type: EnumType;
      readonly value: string;
      readonly after?: string;
      readonly before?: string;
    }
  | { readonly kind: 'DropEnum'; readonly type: EnumType }
  | { readonly kind: 'CreateSequence'; readonly sequence: Sequence }
  | { readonly kind: 'AlterSequence'; readonly from: Sequence; readonly sequence: Sequence }
  | { readonly kind: 'DropSequence'; readonly sequence: Sequence }
  | { readonly kind: 'CreateTable'; readonly table: Table }
  | { readonly kind: 'DropTable'; readonly table: Table }
  /** The table's dialect options change (MySQL: ENGINE, collation, ROW_FORMAT). */
  | {
      readonly kind: 'AlterTableOptions';
      readonly table: TableRef;
      readonly from: TableOptions;
      readonly options: TableOptions;
    }
  /** A declared rename (`-- ptah:renamed-from`): `table` is the live name. */
  | { readonly kind: 'RenameTable'; readonly table: TableRef; readonly to: string }
  /** A declared column rename; `table` is the table's desired name (renamed first when both are). */
  | {
      readonly kind: 'RenameColumn';
      readonly table: TableRef;
      readonly from: string;
      readonly to: string;
    }
  | {
      readonly kind: 'AddColumn';
      readonly table: TableRef;
      readonly column: Column;
      readonly tableIsNew: false;
    }
  | { readonly kind: 'DropColumn'; readonly table: TableRef; readonly column: Column }
  | {
      readonly kind: 'AlterColumnType';
      readonly table: TableRef;
      readonly from: Column;
      readonly column: Column;
    }
  | { readonly kind: 'SetNotNull'; readonly table: TableRef; readonly column: Column }
  | { readonly kind: 'DropNotNull'; readonly table: TableRef; readonly column: Column }
  | { readonly kind: 'SetDefault'; readonly table: TableRef; readonly column: Column }
  | { readonly kind: 'DropDefault'; readonly table: TableRef; readonly column: Column }
  | { readonly kind: 'AddIdentity'; readonly table: TableRef; readonly column: Column }
  | { readonly kind: 'SetIdentity'; readonly table: TableRef; readonly column: Column }
  | { readonly kind: 'DropIdentity'; readonly table: TableRef; readonly column: Column }
  | { readonly kind: 'AddConstraint'; readonly table: TableRef; readonly constraint: Constraint }
  /** A live NOT VALID check or foreign key (PostgreSQL) the desired state declares valid: its rows are checked. */
  | { readonly kind: 'ValidateConstraint'; readonly table: TableRef; readonly constraint: Constraint }
  | { readonly kind: 'DropConstraint'; readonly table: TableRef; readonly constraint: Constraint }
  | { readonly kind: 'CreateIndex'; readonly table: TableRef; readonly index: Index }
  | { readonly kind: 'DropIndex'; readonly table: TableRef; readonly index: Index }
  | { readonly kind: 'CreateView'; readonly view: View }
  | { readonly kind: 'DropView'; readonly view: View }
  | {
      readonly kind: 'SetComment';
      readonly target: CommentTarget;
      readonly comment?: string;
      /** For a column comment: the desired column (a dialect without COMMENT ON restates the column). */
      readonly column?: Column;
    }
  | {
      readonly kind: 'InsertRow';
      readonly table: TableRef;
      readonly key: readonly string[];
      readonly row: RowValues;
      readonly overridingSystemValue: boolean;
    }
  | {
      readonly kind: 'UpdateRow';
      readonly table: TableRef;
      readonly key: readonly string[];
      readonly row: RowValues;
      readonly set: readonly string[];
    }
  | {
      readonly kind: 'DeleteRow';
      readonly table: TableRef;
      readonly key: readonly string[];
      readonly row: RowValues;
    }
  | { readonly kind: 'CreateObject'; readonly object: DefinedObject }
  /** In place (CREATE OR REPLACE): the signature allows it. */
  | { readonly kind: 'ReplaceObject'; readonly from: DefinedObject; readonly object: DefinedObject }
  /** `recreated`: the desired object of the same identity is created again later in the plan. */
  | { readonly kind: 'DropObject'; readonly object: DefinedObject; readonly recreated?: boolean }
  | { readonly kind: 'CommentObject'; readonly object: DefinedObject; readonly comment?: string }
  /** A difference the engine will not plan: the plan is refused with this reason. */
  | {
      readonly kind: 'Unsupported';
      readonly object: string;
      readonly reason: string;
      readonly category?: DriftCategory;
    };

export type ChangeKind = Change['kind'];

export type Severity = 'safe' | 'info' | 'warning' | 'error' | 'destructive';

export const SEVERITY_ORDER: readonly Severity[] = ['safe', 'info', 'warning', 'error', 'destructive'];

export interface Classification {
  readonly severity: Severity;
  readonly reason: string;
  readonly destructive: boolean;
  /**
   * The change writes every row of its table again. Set when the dialect says how its server runs the
   * change (SchemaDialect.tableWork); absent, the plan header applies the generic rules.
   */
  readonly rebuildsTable?: boolean;
}

export type ClassifiedChange = Change & { readonly classification: Classification };

/** The closed drift vocabulary the operator reports. */
export type DriftCategory =
  | 'tables_added'
  | 'tables_removed'
  | 'columns_added'
  | 'columns_modified'
  | 'columns_removed'
  | 'constraints_added'
  | 'constraints_removed'
  | 'table_constraints_added'
  | 'table_constraints_removed'
  | 'unique_protections_removed'
  | 'indexes_added'
  | 'indexes_removed'
  | 'enums_added'
  | 'enums_removed'
  | 'enum_values_added'
  | 'enum_values_removed'
  | 'extensions_added'
  | 'extensions_modified'
  | 'extensions_removed'
  | 'data_rows_inserted'
  | 'data_rows_updated'
  | 'data_rows_deleted';

type TableOf = { readonly [K in ChangeKind]: (c: Extract<Change, { kind: K }>) => TableRef | undefined };

const none = (): undefined => undefined;
const own = (c: { readonly table: TableRef }): TableRef => ({ schema: c.table.schema, name: c.table.name });

/**
 * The table each change kind touches: what --protected-table checks. A Record over every kind, so a new
 * kind does not compile until it says which table it changes (never a silent "none").
 */
const TABLE_OF: TableOf = {
  // A dropped schema's tables are dropped by their own DropTable changes, which are checked one by one.
  CreateSchema: none,
  DropSchema: none,
  CreateExtension: none,
  UpdateExtension: none,
  DropExtension: none,
  CreateEnum: none,
  AddEnumValue: none,
  DropEnum: none,
  CreateSequence: none,
  AlterSequence: none,
  DropSequence: none,
  CreateTable: own,
  DropTable: own,
  AlterTableOptions: own,
  RenameTable: own,
  RenameColumn: own,
  AddColumn: own,
  DropColumn: own,
  AlterColumnType: own,
  SetNotNull: own,
  DropNotNull: own,
  SetDefault: own,
  DropDefault: own,
  AddIdentity: own,
  SetIdentity: own,
  DropIdentity: own,
  AddConstraint: own,
  ValidateConstraint: own,
  DropConstraint: own,
  CreateIndex: own,
  DropIndex: own,
  CreateView: none,
  DropView: none,
  // An index's comment names the index, not its table; the index itself is checked through CreateIndex.
  SetComment: (c) =>
    c.target.objectType === 'TABLE' ||
    c.target.objectType === 'COLUMN' ||
    c.target.objectType === 'CONSTRAINT'
      ? { schema: c.target.schema, name: c.target.name }
      : undefined,
  InsertRow: own,
  UpdateRow: own,
  DeleteRow: own,
  // A trigger, policy or row-level security changes what its table does; a function is no table's.
  CreateObject: (c) => objectTable(c.object),
  ReplaceObject: (c) => objectTable(c.object),
  DropObject: (c) => objectTable(c.object),
  CommentObject: none,
  // The whole plan is refused for an Unsupported change before any table is checked.
  Unsupported: none,
};

function objectTable(o: DefinedObject): TableRef | undefined {
  return o.table === undefined || o.objectType === 'index' ? undefined : { schema: o.schema, name: o.table };
}

/** The table a change touches, if any: what --protected-table checks. */
export function changedTable(c: Change): TableRef | undefined {
  return (TABLE_OF[c.kind] as (change: Change) => TableRef | undefined)(c);
}
