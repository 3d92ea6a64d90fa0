/**
 * Typed changes: what the diff returns. Each is classified (severity, reason, destructive) before any SQL
 * is rendered, so risk never depends on how a statement happens to be spelled.
 */
import type {
  Column,
  Constraint,
  EnumType,
  Extension,
  Index,
  RowValues,
  Sequence,
  Table,
  View,
} from './model.ts';

export interface TableRef {
  readonly schema: string;
  readonly name: string;
}

export interface CommentTarget {
  readonly objectType: 'TABLE' | 'COLUMN' | 'VIEW' | 'TYPE' | 'SEQUENCE' | 'INDEX' | 'SCHEMA';
  readonly schema: string;
  readonly name: string;
  readonly column?: string;
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
  | { readonly kind: 'DropConstraint'; readonly table: TableRef; readonly constraint: Constraint }
  | { readonly kind: 'CreateIndex'; readonly table: TableRef; readonly index: Index }
  | { readonly kind: 'DropIndex'; readonly table: TableRef; readonly index: Index }
  | { readonly kind: 'CreateView'; readonly view: View }
  | { readonly kind: 'DropView'; readonly view: View }
  | { readonly kind: 'SetComment'; readonly target: CommentTarget; readonly comment?: string }
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

/** The table a change touches, if any: what --protected-table checks. */
export function changedTable(c: Change): TableRef | undefined {
  switch (c.kind) {
    case 'CreateTable':
    case 'DropTable':
      return { schema: c.table.schema, name: c.table.name };
    case 'AddColumn':
    case 'DropColumn':
    case 'AlterColumnType':
    case 'SetNotNull':
    case 'DropNotNull':
    case 'SetDefault':
    case 'DropDefault':
    case 'AddIdentity':
    case 'SetIdentity':
    case 'DropIdentity':
    case 'AddConstraint':
    case 'DropConstraint':
    case 'CreateIndex':
    case 'DropIndex':
    case 'InsertRow':
    case 'UpdateRow':
    case 'DeleteRow':
      return c.table;
    case 'SetComment':
      return c.target.objectType === 'TABLE' || c.target.objectType === 'COLUMN'
        ? { schema: c.target.schema, name: c.target.name }
        : undefined;
    default:
      return undefined;
  }
}
