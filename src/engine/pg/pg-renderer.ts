/**
 * Renders typed changes as PostgreSQL statements: the shared renderer with PostgreSQL's hooks, plus the
 * statements only PostgreSQL has (enums, sequences, identity, extensions, COMMENT ON, index methods).
 * Every identifier is quoted.
 */
import type { Change, CommentTarget } from '../changes.ts';
import type { Column, Index, Sequence, Table } from '../model.ts';
import { PERSISTENCE_OPTION } from '../model.ts';
import { type RendererTable, sharedRenderer } from '../sql-renderer.ts';
import { type AstNode, quoteIdent, quoteLiteral, quoteQualified, renderType } from './pg-normalize.ts';
import { parseSync } from './pg-parser.ts';
import { identityClause, identitySetActions } from './pg-identity.ts';
import { fromTableOptions, parameterList, parameterName, withClause } from './pg-storage.ts';

const SERIAL_NAME: Readonly<Record<string, string>> = {
  smallint: 'smallserial',
  integer: 'serial',
  bigint: 'bigserial',
};

export function columnDefinition(c: Column): string {
  let sql = `${quoteIdent(c.name)} ${c.serial && c.type.schema === undefined ? (SERIAL_NAME[c.type.name] ?? renderType(c.type)) : renderType(c.type)}`;
  if (c.collation !== undefined) sql += ` COLLATE ${c.collation}`;
  if (c.identity !== undefined)
    sql += ` GENERATED ${c.identity === 'always' ? 'ALWAYS' : 'BY DEFAULT'} AS IDENTITY${identityClause(c)}`;
  else if (c.generated !== undefined) sql += ` GENERATED ALWAYS AS (${c.generated.text}) STORED`;
  else if (c.default !== undefined) sql += ` DEFAULT ${columnDefault(c.default.text)}`;
  if (c.notNull && c.identity === undefined && !c.serial) sql += ' NOT NULL';
  return sql;
}

/**
 * A default as a column definition takes it. Its grammar (b_expr) refuses some expressions bare, `now() AT
 * TIME ZONE 'utc'` or `a IS NULL`, and reads a trailing `COLLATE` as the column's: those are written in
 * parentheses. The parser says which: the text must come back as the column's one clause, its default.
 */
function columnDefault(text: string): string {
  let tree: unknown;
  try {
    tree = parseSync(`CREATE TABLE t (c int DEFAULT ${text})`);
  } catch {
    return `(${text})`;
  }
  const stmt = (tree as { stmts?: { stmt?: { CreateStmt?: { tableElts?: unknown[] } } }[] }).stmts;
  const elements = stmt?.length === 1 ? stmt[0]?.stmt?.CreateStmt?.tableElts : undefined;
  const column = elements?.length === 1 ? (elements[0] as { ColumnDef?: AstNode }).ColumnDef : undefined;
  const clauses = column?.['constraints'];
  const alone =
    column !== undefined &&
    column['collClause'] === undefined &&
    Array.isArray(clauses) &&
    clauses.length === 1 &&
    (clauses[0] as { Constraint?: AstNode }).Constraint?.['contype'] === 'CONSTR_DEFAULT';
  return alone ? text : `(${text})`;
}

const cols = (list: readonly string[]) => list.map(quoteIdent).join(', ');

function indexDefinition(table: string, i: Index): string {
  const keys = i.keys.map((k) => {
    let s = k.column !== undefined ? quoteIdent(k.column) : `(${k.expression?.text ?? ''})`;
    if (k.collation !== undefined) s += ` COLLATE ${k.collation}`;
    if (k.opclass !== undefined) s += ` ${k.opclass}`;
    if (k.descending) s += ' DESC';
    if (k.nulls !== undefined) s += ` NULLS ${k.nulls.toUpperCase()}`;
    return s;
  });
  return (
    `CREATE ${i.unique ? 'UNIQUE ' : ''}INDEX ${i.name === undefined ? '' : quoteIdent(i.name) + ' '}ON ${table} USING ${quoteIdent(i.method)} (${keys.join(', ')})` +
    `${i.include.length > 0 ? ` INCLUDE (${cols(i.include)})` : ''}${i.nullsNotDistinct ? ' NULLS NOT DISTINCT' : ''}${withClause(i.storage)}${i.where !== undefined ? ` WHERE (${i.where.text})` : ''}`
  );
}

function sequenceOptions(s: Sequence): string {
  return `AS ${s.dataType} INCREMENT BY ${s.increment} MINVALUE ${s.min} MAXVALUE ${s.max} START WITH ${s.start} CACHE ${s.cache} ${s.cycle ? '' : 'NO '}CYCLE`;
}

function ownedBy(s: Sequence): string {
  if (s.ownedBy === undefined) return 'OWNED BY NONE';
  const { schema, table, column } = s.ownedBy;
  return `OWNED BY ${quoteQualified(schema, table)}.${quoteIdent(column)}`;
}

function commentTarget(t: CommentTarget): string {
  if (t.objectType === 'SCHEMA') return `SCHEMA ${quoteIdent(t.name)}`;
  if (t.objectType === 'COLUMN')
    return `COLUMN ${quoteQualified(t.schema, t.name)}.${quoteIdent(t.column ?? '')}`;
  if (t.objectType === 'CONSTRAINT')
    return `CONSTRAINT ${quoteIdent(t.constraint ?? '')} ON ${quoteQualified(t.schema, t.name)}`;
  return `${t.objectType} ${quoteQualified(t.schema, t.name)}`;
}

const tablePrefix = (t: Table) => (t.options?.[PERSISTENCE_OPTION] === 'unlogged' ? 'UNLOGGED ' : '');

const SHARED = sharedRenderer({
  quoteIdent,
  quoteLiteral,
  renderType,
  columnDefinition,
  tablePrefix,
  tableSuffix: (t) =>
    `${t.partitionBy !== undefined ? ` PARTITION BY ${t.partitionBy.text}` : ''}${withClause(fromTableOptions(t.options))}`,
});

const RENDER: RendererTable = {
  ...SHARED,
  // A partition has its parent's columns: it is created as one, with its own constraints added after.
  CreateTable: (c) => {
    const p = c.table.partitionOf;
    if (p === undefined) return SHARED.CreateTable(c);
    const t = quoteQualified(c.table.schema, c.table.name);
    return [
      `CREATE ${tablePrefix(c.table)}TABLE ${t} PARTITION OF ${quoteQualified(p.schema, p.table)} ${p.bound}${c.table.partitionBy !== undefined ? ` PARTITION BY ${c.table.partitionBy.text}` : ''}${withClause(fromTableOptions(c.table.options))}`,
      ...c.table.constraints.flatMap((k) =>
        SHARED.AddConstraint({ kind: 'AddConstraint', table: c.table, constraint: k }),
      ),
    ];
  },
  // Storage parameters: the changed ones set, the ones no longer declared reset to PostgreSQL's default.
  AlterTableOptions: (c) => {
    const to = fromTableOptions(c.options);
    const set = to.filter((p) => !fromTableOptions(c.from).includes(p));
    const reset = Object.keys(c.from)
      .filter((k) => c.options[k] === undefined && k !== PERSISTENCE_OPTION)
      .sort();
    const actions = [
      ...(set.length > 0 ? [`SET (${parameterList(set)})`] : []),
      ...(reset.length > 0 ? [`RESET (${reset.map(parameterName).join(', ')})`] : []),
    ];
    const table = quoteQualified(c.table.schema, c.table.name);
    const unlogged = c.options[PERSISTENCE_OPTION] === 'unlogged';
    return [
      ...(actions.length === 0 ? [] : [`ALTER TABLE ${table} ${actions.join(', ')}`]),
      ...(unlogged !== (c.from[PERSISTENCE_OPTION] === 'unlogged')
        ? [`ALTER TABLE ${table} SET ${unlogged ? 'UNLOGGED' : 'LOGGED'}`]
        : []),
    ];
  },
  ValidateConstraint: (c) => [
    `ALTER TABLE ${quoteQualified(c.table.schema, c.table.name)} VALIDATE CONSTRAINT ${quoteIdent(c.constraint.name ?? '')}`,
  ],
  CreateSchema: (c) => [
    `CREATE SCHEMA ${quoteIdent(c.schema)}`,
    ...(c.comment !== undefined
      ? [`COMMENT ON SCHEMA ${quoteIdent(c.schema)} IS ${quoteLiteral(c.comment)}`]
      : []),
  ],
  DropSchema: (c) => [`DROP SCHEMA ${quoteIdent(c.schema)}`],
  CreateExtension: (c) => [
    `CREATE EXTENSION IF NOT EXISTS ${quoteIdent(c.extension.name)}${c.extension.schema !== undefined ? ` SCHEMA ${quoteIdent(c.extension.schema)}` : ''}${c.extension.version !== undefined ? ` VERSION ${quoteLiteral(c.extension.version)}` : ''}`,
  ],
  UpdateExtension: (c) => [
    `ALTER EXTENSION ${quoteIdent(c.extension.name)} UPDATE TO ${quoteLiteral(c.extension.version ?? '')}`,
  ],
  DropExtension: (c) => [`DROP EXTENSION ${quoteIdent(c.extension.name)}`],
  CreateEnum: (c) => [
    `CREATE TYPE ${quoteQualified(c.type.schema, c.type.name)} AS ENUM (${c.type.values.map(quoteLiteral).join(', ')})`,
  ],
  AddEnumValue: (c) => [
    `ALTER TYPE ${quoteQualified(c.type.schema, c.type.name)} ADD VALUE ${quoteLiteral(c.value)}${c.after !== undefined ? ` AFTER ${quoteLiteral(c.after)}` : c.before !== undefined ? ` BEFORE ${quoteLiteral(c.before)}` : ''}`,
  ],
  DropEnum: (c) => [`DROP TYPE ${quoteQualified(c.type.schema, c.type.name)}`],
  // Ownership is set by a separate AlterSequence once the owning table exists.
  CreateSequence: (c) => [
    `CREATE SEQUENCE ${quoteQualified(c.sequence.schema, c.sequence.name)} ${sequenceOptions(c.sequence)}`,
  ],
  AlterSequence: (c) => [
    `ALTER SEQUENCE ${quoteQualified(c.sequence.schema, c.sequence.name)} ${sequenceOptions(c.sequence)} ${ownedBy(c.sequence)}`,
  ],
  // IF EXISTS: a sequence owned by a column goes with its table when the table is dropped first.
  DropSequence: (c) => [`DROP SEQUENCE IF EXISTS ${quoteQualified(c.sequence.schema, c.sequence.name)}`],
  AlterColumnType: (c) => {
    const t = renderType(c.column.type);
    const coll = c.column.collation !== undefined ? ` COLLATE ${c.column.collation}` : '';
    const via = castVia(c.from, c.column);
    const seq = c.from.serialSequence;
    return [
      `ALTER TABLE ${quoteQualified(c.table.schema, c.table.name)} ALTER COLUMN ${quoteIdent(c.column.name)} TYPE ${t}${coll} USING ${quoteIdent(c.column.name)}${via}::${t}`,
      // serial ↔ bigserial: the sequence feeding the column takes the new type too, or it stops at the old
      // type's limit while the column could hold more.
      ...(c.from.serial && c.column.serial && seq !== undefined
        ? [`ALTER SEQUENCE ${quoteQualified(seq.schema, seq.name)} AS ${renderType(c.column.type)}`]
        : []),
    ];
  },
  SetNotNull: (c) => [
    `ALTER TABLE ${quoteQualified(c.table.schema, c.table.name)} ALTER COLUMN ${quoteIdent(c.column.name)} SET NOT NULL`,
  ],
  DropNotNull: (c) => [
    `ALTER TABLE ${quoteQualified(c.table.schema, c.table.name)} ALTER COLUMN ${quoteIdent(c.column.name)} DROP NOT NULL`,
  ],
  AddIdentity: (c) => [
    `ALTER TABLE ${quoteQualified(c.table.schema, c.table.name)} ALTER COLUMN ${quoteIdent(c.column.name)} ADD GENERATED ${c.column.identity === 'always' ? 'ALWAYS' : 'BY DEFAULT'} AS IDENTITY${identityClause(c.column)}`,
  ],
  SetIdentity: (c) => [
    `ALTER TABLE ${quoteQualified(c.table.schema, c.table.name)} ALTER COLUMN ${quoteIdent(c.column.name)} SET GENERATED ${c.column.identity === 'always' ? 'ALWAYS' : 'BY DEFAULT'} ${identitySetActions(c.column)}`,
  ],
  DropIdentity: (c) => [
    `ALTER TABLE ${quoteQualified(c.table.schema, c.table.name)} ALTER COLUMN ${quoteIdent(c.column.name)} DROP IDENTITY`,
  ],
  CreateIndex: (c) => [indexDefinition(quoteQualified(c.table.schema, c.table.name), c.index)],
  DropIndex: (c) => [`DROP INDEX ${quoteQualified(c.table.schema, c.index.name ?? '')}`],
  SetComment: (c) => [
    `COMMENT ON ${commentTarget(c.target)} IS ${c.comment === undefined ? 'NULL' : quoteLiteral(c.comment)}`,
  ],
};

/** No cast joins two user types (one enum to another): the value goes through its text form. */
export function castVia(from: Column, to: Column): string {
  return from.type.schema !== undefined && to.type.schema !== undefined
    ? `::text${from.type.array ? '[]' : ''}`
    : '';
}

export function renderPostgres(change: Change): string[] {
  const fn = RENDER[change.kind] as (c: Change) => string[];
  return fn(change);
}
