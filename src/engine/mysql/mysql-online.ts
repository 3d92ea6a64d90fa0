/**
 * How InnoDB runs each change (online DDL): instantly or in place without touching the rows, by rebuilding
 * the table in place while writes continue, or by copying every row while writes wait. Measured on MariaDB
 * 10.11 (each change tried with ALGORITHM=INSTANT, NOCOPY, INPLACE, COPY and LOCK=NONE) and taken from the
 * MySQL 8.4 manual's online DDL tables; where the two differ, the costlier is said and the reason names
 * the server. The plan shows it as a warning and counts the rebuilt tables in its header.
 */
import type { Change } from '../changes.ts';
import type { TableWork } from '../dialect.ts';
import type { Column, TypeRef } from '../model.ts';

const COPY: TableWork = {
  rebuilds: true,
  writesWait: true,
  how: 'rebuilds the table by copying every row (ALGORITHM=COPY): writes to it wait until the copy ends',
};
const REBUILD_ONLINE: TableWork = {
  rebuilds: true,
  writesWait: false,
  how: 'rebuilds the table in place (ALGORITHM=INPLACE): every row is written again; writes continue unless the table has a FULLTEXT index',
};
const WRITES_WAIT: TableWork = {
  rebuilds: false,
  writesWait: true,
  how: 'builds in place but writes to the table wait until it ends (InnoDB allows no LOCK=NONE for it)',
};

/** Bytes a character of the column's character set takes at most (its collation's name begins with it). */
function bytesPerChar(c: Column): number {
  const charset = (c.collation ?? 'utf8mb4').split('_')[0] ?? 'utf8mb4';
  const bytes: Readonly<Record<string, number>> = {
    latin1: 1,
    ascii: 1,
    binary: 1,
    cp1250: 1,
    cp1251: 1,
    cp1252: 1,
    ucs2: 2,
    utf8: 3,
    utf8mb3: 3,
  };
  return bytes[charset] ?? 4;
}

const lengthOf = (t: TypeRef) => Number(/^\((\d+)/.exec(t.mods)?.[1] ?? 0);

/** A type change InnoDB makes without touching rows: VARCHAR widened, ENUM/SET values appended. */
function typeChangeInPlace(from: Column, to: Column): TableWork | undefined | 'copy' {
  const a = from.type;
  const b = to.type;
  if ((a.name === 'enum' || a.name === 'set') && a.name === b.name && b.mods.startsWith(a.mods.slice(0, -1)))
    // Appending within the same storage size (up to 256 ENUM values, 8 SET members) is metadata only.
    return undefined;
  if (a.name === 'varchar' && b.name === 'varchar' && from.collation === to.collation) {
    if (lengthOf(b) < lengthOf(a)) return 'copy';
    const before = lengthOf(a) * bytesPerChar(from);
    const after = lengthOf(b) * bytesPerChar(to);
    // One length byte up to 255 bytes, two beyond: MySQL copies the table to add the second; MariaDB does not.
    if (before <= 255 && after > 255)
      return {
        ...COPY,
        how: `${COPY.how} on MySQL, whose VARCHAR needs a second length byte past 255 bytes (MariaDB widens it in place)`,
      };
    return undefined;
  }
  return 'copy';
}

const sameColumn = (c: Change, table: string, column: string): boolean =>
  'table' in c && c.table.name === table && 'column' in c && c.column?.name === column;

type ChangeOf<K extends Change['kind']> = Extract<Change, { kind: K }>;
type WorkRule<K extends Change['kind']> = (
  change: ChangeOf<K>,
  plan: readonly Change[],
) => TableWork | undefined;

/** Touches no row and lets writes continue (or does not touch a table at all). */
const NONE = (): undefined => undefined;

/** NOT NULL set or dropped: restated with a type change of the same column, that change says the cost. */
const notNullWork = (change: ChangeOf<'SetNotNull' | 'DropNotNull'>, plan: readonly Change[]) =>
  plan.some((c) => c.kind === 'AlterColumnType' && sameColumn(c, change.table.name, change.column.name))
    ? undefined
    : REBUILD_ONLINE;

/** Every kind is named, so a new change kind must say what InnoDB does with it. */
const WORK: { readonly [K in Change['kind']]: WorkRule<K> } = {
  AddColumn: (change) => {
    // An added column is instant on MySQL 8.0.29+ and MariaDB 10.4+, unless its values must be computed.
    if (change.column.identity !== undefined)
      return { ...COPY, how: `${COPY.how} (an AUTO_INCREMENT column is numbered row by row)` };
    if (change.column.generated !== undefined && change.column.generatedStorage !== 'virtual')
      return { ...COPY, how: `${COPY.how} (a STORED column is computed row by row)` };
    return undefined;
  },
  AlterColumnType: (change) => {
    const work = typeChangeInPlace(change.from, change.column);
    return work === 'copy' ? COPY : work;
  },
  SetNotNull: notNullWork,
  DropNotNull: notNullWork,
  AddIdentity: () => COPY,
  DropIdentity: () => COPY,
  SetIdentity: () => COPY,
  AddConstraint: (change) => {
    if (change.constraint.kind === 'PrimaryKey') return REBUILD_ONLINE;
    // With foreign_key_checks on, both servers validate a new foreign key or check by copying the table.
    if (change.constraint.kind === 'ForeignKey' || change.constraint.kind === 'Check') return COPY;
    return undefined;
  },
  DropConstraint: (change, plan) => {
    if (change.constraint.kind !== 'PrimaryKey') return undefined;
    // Dropped alone, the primary key is copied away; replaced in the same plan, the table is rebuilt in place.
    return plan.some(
      (c) =>
        c.kind === 'AddConstraint' &&
        c.constraint.kind === 'PrimaryKey' &&
        c.table.name === change.table.name,
    )
      ? REBUILD_ONLINE
      : COPY;
  },
  // FULLTEXT and SPATIAL indexes build in place under a shared lock (the first FULLTEXT adds a hidden column).
  CreateIndex: (change) =>
    change.index.method === 'fulltext' || change.index.method === 'spatial' ? WRITES_WAIT : undefined,
  AlterTableOptions: (change) => (onlyRowFormatChanges(change) ? REBUILD_ONLINE : COPY),
  // Metadata only (instant), whole-table creates and drops, row data, and kinds MySQL has no table work for.
  CreateSchema: NONE,
  DropSchema: NONE,
  CreateExtension: NONE,
  UpdateExtension: NONE,
  DropExtension: NONE,
  CreateEnum: NONE,
  AddEnumValue: NONE,
  ValidateConstraint: NONE,
  DropEnum: NONE,
  CreateSequence: NONE,
  AlterSequence: NONE,
  DropSequence: NONE,
  CreateTable: NONE,
  DropTable: NONE,
  RenameTable: NONE,
  DropColumn: NONE,
  RenameColumn: NONE,
  SetDefault: NONE,
  DropDefault: NONE,
  DropIndex: NONE,
  CreateView: NONE,
  DropView: NONE,
  CreateObject: NONE,
  ReplaceObject: NONE,
  DropObject: NONE,
  SetComment: NONE,
  CommentObject: NONE,
  InsertRow: NONE,
  UpdateRow: NONE,
  DeleteRow: NONE,
  Unsupported: NONE,
};

/** The work a change makes on its table; undefined when no row is touched and writes continue. */
export function mysqlTableWork(change: Change, plan: readonly Change[]): TableWork | undefined {
  return (WORK[change.kind] as WorkRule<Change['kind']>)(change, plan);
}

/** Whether an options change is a new ROW_FORMAT alone (engine and character set conversions copy). */
export function onlyRowFormatChanges(c: Extract<Change, { kind: 'AlterTableOptions' }>): boolean {
  const keys = new Set([...Object.keys(c.options), ...Object.keys(c.from)]);
  return [...keys].every((k) => k === 'row_format' || c.options[k] === c.from[k]);
}
