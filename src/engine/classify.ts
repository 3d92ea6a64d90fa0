/**
 * Risk of each change, decided from the typed change (never from rendered SQL): severity, a reason a person
 * can act on, whether it is destructive, and the drift category it counts under.
 */
import type { Change, Classification, ClassifiedChange, DriftCategory } from './changes.ts';
import type { TableWork } from './dialect.ts';
import type { Column, DefinedObjectType, TypeRef } from './model.ts';
import { PERSISTENCE_OPTION } from './model.ts';
import { highestSeverity } from './plan-file.ts';

const INT_RANK: Readonly<Record<string, number>> = { smallint: 1, integer: 2, bigint: 3 };
const FLOAT_RANK: Readonly<Record<string, number>> = { real: 1, 'double precision': 2 };

function mods(t: TypeRef): number[] {
  return t.mods === '' ? [] : t.mods.slice(1, -1).split(',').map(Number);
}

/** How a type change affects stored data: kept as is, rewritten without loss, or possibly lost or refused. */
export type TypeChangeRisk = 'widen' | 'rewrite' | 'narrow';

/** A dialect's own rules for its type names; undefined defers to the core (PostgreSQL-spelled) rules. */
export type DialectTypeRisk = (from: TypeRef, to: TypeRef) => TypeChangeRisk | undefined;

/** How a type change affects stored data. */
export function typeChangeRisk(from: Column, to: Column, dialectRisk?: DialectTypeRisk): TypeChangeRisk {
  const a = from.type;
  const b = to.type;
  const sameCollation = (from.collation ?? '') === (to.collation ?? '');
  // Only other attributes change (MySQL restates the column for ON UPDATE or INVISIBLE).
  if (sameCollation && a.name === b.name && a.mods === b.mods && a.array === b.array) return 'widen';
  const own = sameCollation ? dialectRisk?.(a, b) : undefined;
  if (own !== undefined) return own;
  if (
    (from.collation ?? '') !== (to.collation ?? '') &&
    a.name === b.name &&
    a.mods === b.mods &&
    a.array === b.array
  )
    return 'rewrite';
  if (a.array !== b.array || a.schema !== undefined || b.schema !== undefined) return 'narrow';
  const am = mods(a);
  const bm = mods(b);
  const text = (n: string) => n === 'character varying' || n === 'text';
  if (text(a.name) && text(b.name)) {
    if (b.name === 'text' || bm.length === 0) return 'widen';
    if (a.name === 'character varying' && am.length > 0 && (bm[0] ?? 0) >= (am[0] ?? 0)) return 'widen';
    return 'narrow';
  }
  if (a.name === 'character' && text(b.name) && (bm.length === 0 || (bm[0] ?? 0) >= (am[0] ?? 1)))
    return 'rewrite';
  if (INT_RANK[a.name] !== undefined && INT_RANK[b.name] !== undefined) {
    return (INT_RANK[b.name] ?? 0) > (INT_RANK[a.name] ?? 0) ? 'rewrite' : 'narrow';
  }
  if (INT_RANK[a.name] !== undefined && b.name === 'numeric' && bm.length === 0) return 'rewrite';
  if (FLOAT_RANK[a.name] !== undefined && FLOAT_RANK[b.name] !== undefined) {
    return (FLOAT_RANK[b.name] ?? 0) > (FLOAT_RANK[a.name] ?? 0) ? 'rewrite' : 'narrow';
  }
  if (a.name === 'numeric' && b.name === 'numeric') {
    if (bm.length === 0) return 'widen';
    if (am.length === 0) return 'narrow';
    const [ap = 0, as = 0] = am;
    const [bp = 0, bs = 0] = bm;
    if (bs === as && bp >= ap) return 'widen';
    if (bs >= as && bp - bs >= ap - as) return 'rewrite';
    return 'narrow';
  }
  if (
    (a.name === 'bit varying' || a.name === 'bit') &&
    b.name === 'bit varying' &&
    (bm.length === 0 || (bm[0] ?? 0) >= (am[0] ?? 0))
  )
    return 'widen';
  if (
    a.name.startsWith('timestamp') &&
    b.name.startsWith('timestamp') &&
    a.name === b.name &&
    (bm.length === 0 || (am.length > 0 && (bm[0] ?? 0) >= (am[0] ?? 0)))
  )
    return 'widen';
  if (a.name === 'timestamp without time zone' && b.name === 'timestamp with time zone') return 'rewrite';
  if (a.name === 'json' && b.name === 'jsonb') return 'rewrite';
  return 'narrow';
}

const c = (severity: Classification['severity'], reason: string, destructive = false): Classification => ({
  severity,
  reason,
  destructive,
});

/** Whether a table becomes logged or unlogged (PostgreSQL rewrites it either way). */
function persistenceChanges(c: Extract<Change, { kind: 'AlterTableOptions' }>): boolean {
  return c.from[PERSISTENCE_OPTION] !== c.options[PERSISTENCE_OPTION];
}

export function classify(change: Change, dialectRisk?: DialectTypeRisk): Classification {
  switch (change.kind) {
    case 'CreateSchema':
      return c('safe', 'creates a schema');
    case 'DropSchema':
      return c('destructive', 'drops a schema', true);
    case 'CreateExtension':
      return c('info', 'installs an extension');
    case 'UpdateExtension':
      return c('warning', 'updates an extension to another version');
    case 'DropExtension':
      return c('destructive', 'drops an extension and what it provides', true);
    case 'CreateEnum':
      return c('safe', 'creates an enum type');
    case 'AddEnumValue':
      return c('safe', 'adds an enum value; the new value is usable once the transaction commits');
    case 'DropEnum':
      return c('destructive', 'drops an enum type', true);
    case 'CreateSequence':
      return c('safe', 'creates a sequence');
    case 'AlterSequence':
      return c('info', 'changes sequence options');
    case 'DropSequence':
      return c('destructive', 'drops a sequence and its current value', true);
    case 'CreateTable':
      return c('safe', 'creates a table');
    case 'DropTable':
      return c('destructive', 'drops a table and every row in it', true);
    case 'AlterTableOptions':
      return persistenceChanges(change)
        ? {
            ...c(
              'warning',
              `makes the table ${change.options[PERSISTENCE_OPTION] === 'unlogged' ? 'UNLOGGED (not written to the WAL: emptied after a crash, not replicated)' : 'LOGGED (every row is written to the WAL)'}: rewrites the table under an exclusive lock`,
            ),
            rebuildsTable: true,
          }
        : c(
            'warning',
            'changes table options (MySQL engine, collation, row format: rebuilds the table; PostgreSQL storage parameters: apply to later writes)',
          );
    case 'RenameTable':
      return c('warning', 'renames a table (declared): its rows are kept; clients using the old name break');
    case 'RenameColumn':
      return c(
        'warning',
        'renames a column (declared): its values are kept; clients using the old name break',
      );
    case 'AddColumn': {
      const col = change.column;
      if (
        col.notNull &&
        col.default === undefined &&
        col.identity === undefined &&
        !col.serial &&
        col.generated === undefined
      ) {
        return c('warning', 'adds a NOT NULL column without a default: fails if the table has rows');
      }
      if (col.generated !== undefined || col.identity !== undefined || col.serial)
        return c('info', 'adds a computed column: rewrites the table');
      return c('safe', 'adds a column');
    }
    case 'DropColumn':
      return change.column.generated !== undefined
        ? c('warning', 'drops a generated column (its values are derived and are recomputed)')
        : c('destructive', 'drops a column and its data', true);
    case 'AlterColumnType': {
      const risk = typeChangeRisk(change.from, change.column, dialectRisk);
      if (risk === 'widen') return c('info', 'widens a column type');
      if (risk === 'rewrite')
        return c('warning', 'changes a column type without losing values: rewrites the table');
      return c('destructive', 'changes a column type in a way that may lose or reject data', true);
    }
    case 'SetNotNull':
      return c('warning', 'sets NOT NULL: fails if NULLs exist, scans the table');
    case 'DropNotNull':
      return c('safe', 'allows NULL');
    case 'SetDefault':
      return c('safe', 'sets a column default');
    case 'DropDefault':
      return c('info', 'removes a column default');
    case 'AddIdentity':
      return c('info', 'makes a column an identity column');
    case 'SetIdentity':
      return c('info', 'changes how an identity column is generated');
    case 'DropIdentity':
      return c('warning', 'removes identity generation from a column');
    case 'ValidateConstraint':
      return c(
        'warning',
        `validates a NOT VALID ${change.constraint.kind === 'ForeignKey' ? 'foreign key' : 'check constraint'}: scans every row of the table (writes go on: SHARE UPDATE EXCLUSIVE lock), and fails if a row breaks it`,
      );
    case 'AddConstraint': {
      const k = change.constraint.kind;
      if (k === 'ForeignKey')
        return c('warning', 'adds a foreign key: validates existing rows and locks both tables');
      if (k === 'Check') return c('warning', 'adds a check constraint: validates existing rows');
      if (k === 'Exclusion')
        return c('warning', 'adds an exclusion constraint: builds an index and fails on conflicting rows');
      return c(
        'warning',
        `adds a ${k === 'PrimaryKey' ? 'primary key' : 'unique constraint'}: builds an index and fails on duplicates`,
      );
    }
    case 'DropConstraint': {
      const k = change.constraint.kind;
      if (k === 'PrimaryKey' || k === 'Unique') return c('warning', 'removes a uniqueness guarantee');
      if (k === 'Exclusion') return c('warning', 'removes an exclusion guarantee');
      return c('info', `drops a ${k === 'ForeignKey' ? 'foreign key' : 'check constraint'}`);
    }
    case 'CreateIndex':
      return change.index.unique
        ? c('warning', 'builds a unique index: blocks writes while building, fails on duplicates')
        : c('info', 'builds an index: blocks writes to the table while building');
    case 'DropIndex':
      return change.index.unique
        ? c('warning', 'drops a unique index: removes a uniqueness guarantee')
        : c('info', 'drops an index');
    case 'CreateView':
      return c('safe', 'creates a view');
    case 'DropView':
      return c('info', 'drops a view');
    case 'SetComment':
      return c('safe', 'sets a comment');
    case 'InsertRow':
      return c('info', 'inserts a declared row');
    case 'UpdateRow':
      return c('warning', 'updates a declared row');
    case 'DeleteRow':
      return c('destructive', 'deletes a row the declaration no longer lists', true);
    case 'CreateObject':
      return c(
        ['trigger', 'policy', 'row security'].includes(change.object.objectType) ? 'warning' : 'safe',
        OBJECT_CREATE[change.object.objectType],
      );
    case 'ReplaceObject':
      return c('warning', `replaces ${OBJECT_LABEL[change.object.objectType]} in place`);
    case 'DropObject':
      return change.object.objectType === 'materialized view'
        ? c('warning', 'drops a materialized view and its stored rows (derived: a refresh recomputes them)')
        : change.object.objectType === 'domain' || change.object.objectType === 'composite type'
          ? c(
              'destructive',
              `drops ${change.object.objectType === 'domain' ? 'a domain type' : 'a composite type'}`,
              true,
            )
          : change.object.objectType === 'cluster' || change.object.objectType === 'column statistics'
            ? c('safe', `resets ${OBJECT_LABEL[change.object.objectType]} to PostgreSQL's default`)
            : c(
                'warning',
                `drops ${OBJECT_LABEL[change.object.objectType]}: what relies on it stops working`,
              );
    case 'CommentObject':
      return c('safe', 'sets a comment');
    case 'Unsupported':
      return c('error', change.reason);
  }
}

const OBJECT_LABEL: Readonly<Record<DefinedObjectType, string>> = {
  function: 'a function',
  procedure: 'a procedure',
  aggregate: 'an aggregate',
  collation: 'a collation',
  'text search configuration': 'a text search configuration',
  'composite type': 'a composite type',
  trigger: 'a trigger',
  domain: 'a domain',
  policy: 'a row-level security policy',
  'row security': "a table's row-level security",
  'materialized view': 'a materialized view',
  index: "a materialized view's index",
  cluster: "a table's CLUSTER ON index",
  'column statistics': "a column's statistics target",
};

const OBJECT_CREATE: Readonly<Record<DefinedObjectType, string>> = {
  function: 'creates a function',
  procedure: 'creates a procedure',
  aggregate: 'creates an aggregate',
  collation: 'creates a collation',
  'text search configuration': 'creates a text search configuration',
  'composite type': 'creates a composite type',
  trigger: 'creates a trigger: every later write to its table runs it',
  domain: 'creates a domain type',
  policy: 'creates a row-level security policy: changes which rows roles see and write',
  'row security': 'enables row-level security: roles without a policy see no rows',
  'materialized view': 'creates a materialized view',
  index: "builds a materialized view's index",
  cluster: 'marks the index CLUSTER uses for the table (no row moves until a CLUSTER runs)',
  'column statistics': "sets a column's statistics target (ANALYZE uses it)",
};

export function classifyAll(changes: readonly Change[], dialectRisk?: DialectTypeRisk): ClassifiedChange[] {
  return changes.map((ch) => ({ ...ch, classification: classify(ch, dialectRisk) }));
}

/**
 * What the dialect says of each change's work on its table: a rebuild or a wait for writes is at least a
 * warning, and its reason says how the server runs it; the dialect's word on rebuilding replaces the
 * plan header's generic rules.
 */
export function withTableWork(
  changes: readonly ClassifiedChange[],
  workOf: (c: Change) => TableWork | undefined,
): ClassifiedChange[] {
  return changes.map((c) => {
    const work = workOf(c);
    if (work === undefined) return { ...c, classification: { ...c.classification, rebuildsTable: false } };
    const heavy = work.rebuilds || work.writesWait;
    return {
      ...c,
      classification: {
        ...c.classification,
        severity: heavy
          ? highestSeverity([c.classification, { severity: 'warning' }])
          : c.classification.severity,
        reason: `${c.classification.reason}; ${work.how}`,
        rebuildsTable: work.rebuilds,
      },
    };
  });
}

export function driftCategory(change: Change): DriftCategory | undefined {
  switch (change.kind) {
    case 'CreateTable':
      return 'tables_added';
    case 'DropTable':
      return 'tables_removed';
    case 'AddColumn':
      return 'columns_added';
    case 'DropColumn':
      return 'columns_removed';
    case 'AlterColumnType':
    case 'SetNotNull':
    case 'DropNotNull':
    case 'SetDefault':
    case 'DropDefault':
    case 'AddIdentity':
    case 'SetIdentity':
    case 'DropIdentity':
      return 'columns_modified';
    case 'AddConstraint':
      return change.constraint.kind === 'PrimaryKey' || change.constraint.kind === 'Unique'
        ? 'table_constraints_added'
        : 'constraints_added';
    case 'DropConstraint':
      return change.constraint.kind === 'PrimaryKey' || change.constraint.kind === 'Unique'
        ? 'unique_protections_removed'
        : 'constraints_removed';
    case 'CreateIndex':
      return 'indexes_added';
    case 'DropIndex':
      return change.index.unique ? 'unique_protections_removed' : 'indexes_removed';
    case 'CreateEnum':
      return 'enums_added';
    case 'DropEnum':
      return 'enums_removed';
    case 'AddEnumValue':
      return 'enum_values_added';
    case 'CreateExtension':
      return 'extensions_added';
    case 'UpdateExtension':
      return 'extensions_modified';
    case 'DropExtension':
      return 'extensions_removed';
    case 'InsertRow':
      return 'data_rows_inserted';
    case 'UpdateRow':
      return 'data_rows_updated';
    case 'DeleteRow':
      return 'data_rows_deleted';
    case 'Unsupported':
      return change.category;
    default:
      return undefined;
  }
}
