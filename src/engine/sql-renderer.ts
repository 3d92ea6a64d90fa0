/**
 * The shared SQL renderer: statements whose grammar is common to the dialects, written against small hooks
 * (quoting, type spelling, a column's definition). A dialect spreads this table into its own and adds or
 * overrides the kinds whose grammar differs; its table is a `Record` over every change kind, so a new kind
 * does not compile until every dialect renders it.
 */
import type { Change, ChangeKind } from './changes.ts';
import type { Column, Constraint, FkAction, RowValues, Table, TypeRef } from './model.ts';

export type RendererTable = { [K in ChangeKind]: (c: Extract<Change, { kind: K }>) => string[] };

export interface RenderHooks {
  quoteIdent(name: string): string;
  quoteLiteral(value: string): string;
  renderType(type: TypeRef): string;
  /** A column as written in CREATE TABLE and ADD COLUMN. */
  columnDefinition(column: Column): string;
  /** A table's name as statements spell it; by default schema-qualified. */
  qualify?(schema: string, name: string): string;
  /** Words between CREATE and TABLE, each followed by a space (PostgreSQL: `UNLOGGED `). */
  tablePrefix?(table: Table): string;
  /** Text after CREATE TABLE's closing parenthesis (MySQL: ENGINE, collation, COMMENT). */
  tableSuffix?(table: Table): string;
}

/** Kinds rendered the same way in every dialect (until a dialect overrides one). */
export type SharedKinds =
  | 'CreateTable'
  | 'DropTable'
  | 'RenameTable'
  | 'RenameColumn'
  | 'AlterTableOptions'
  | 'AddColumn'
  | 'DropColumn'
  | 'SetDefault'
  | 'DropDefault'
  | 'AddConstraint'
  | 'DropConstraint'
  | 'CreateView'
  | 'DropView'
  | 'InsertRow'
  | 'UpdateRow'
  | 'DeleteRow'
  | 'CreateObject'
  | 'ReplaceObject'
  | 'DropObject'
  | 'CommentObject'
  | 'Unsupported';

export function sharedRenderer(h: RenderHooks): Pick<RendererTable, SharedKinds> {
  const q = (schema: string, name: string) =>
    h.qualify ? h.qualify(schema, name) : `${h.quoteIdent(schema)}.${h.quoteIdent(name)}`;
  const cols = (list: readonly string[]) => list.map((c) => h.quoteIdent(c)).join(', ');
  const action = (a: FkAction) => a.toUpperCase();
  const value = (v: string | null | undefined) =>
    v === null || v === undefined ? 'NULL' : h.quoteLiteral(v);
  const whereKey = (key: readonly string[], row: RowValues) =>
    key.map((k) => `${h.quoteIdent(k)} = ${value(row[k])}`).join(' AND ');
  // PostgreSQL's constraint index storage parameters; MySQL never has any.
  const withParams = (storage: readonly string[] | undefined) =>
    storage === undefined || storage.length === 0
      ? ''
      : ` WITH (${storage.map((p) => `${h.quoteIdent(p.slice(0, p.indexOf('=')))} = ${h.quoteLiteral(p.slice(p.indexOf('=') + 1))}`).join(', ')})`;
  const constraint = (c: Constraint): string => {
    const named = c.name === undefined ? '' : `CONSTRAINT ${h.quoteIdent(c.name)} `;
    const defer = (d: boolean, i: boolean) => (d ? ` DEFERRABLE${i ? ' INITIALLY DEFERRED' : ''}` : '');
    switch (c.kind) {
      case 'PrimaryKey':
        return `${named}PRIMARY KEY (${cols(c.columns)})${withParams(c.storage)}`;
      case 'Unique':
        return `${named}UNIQUE${c.nullsNotDistinct ? ' NULLS NOT DISTINCT' : ''} (${cols(c.columns)})${withParams(c.storage)}${defer(c.deferrable, c.initiallyDeferred)}`;
      case 'Check':
        return `${named}CHECK (${c.expression.text})${c.noInherit === true ? ' NO INHERIT' : ''}`;
      case 'Exclusion':
        return `${named}${c.definition.text}`;
      case 'ForeignKey':
        return (
          `${named}FOREIGN KEY (${cols(c.columns)}) REFERENCES ${q(c.refSchema, c.refTable)} (${cols(c.refColumns)})` +
          `${c.matchFull ? ' MATCH FULL' : ''} ON UPDATE ${action(c.onUpdate)} ON DELETE ${action(c.onDelete)}${defer(c.deferrable, c.initiallyDeferred)}`
        );
    }
  };
  const alterColumn = (t: { schema: string; name: string }, column: string, rest: string) =>
    `ALTER TABLE ${q(t.schema, t.name)} ALTER COLUMN ${h.quoteIdent(column)} ${rest}`;
  return {
    CreateTable: (c) => {
      const parts = [
        ...c.table.columns.map((x) => h.columnDefinition(x)),
        ...c.table.constraints.map(constraint),
      ];
      return [
        `CREATE ${h.tablePrefix?.(c.table) ?? ''}TABLE ${q(c.table.schema, c.table.name)} (\n  ${parts.join(',\n  ')}\n)${h.tableSuffix?.(c.table) ?? ''}`,
      ];
    },
    DropTable: (c) => [`DROP TABLE ${q(c.table.schema, c.table.name)}`],
    // A rename keeps the table in its schema: the new name is a bare identifier.
    RenameTable: (c) => [`ALTER TABLE ${q(c.table.schema, c.table.name)} RENAME TO ${h.quoteIdent(c.to)}`],
    RenameColumn: (c) => [
      `ALTER TABLE ${q(c.table.schema, c.table.name)} RENAME COLUMN ${h.quoteIdent(c.from)} TO ${h.quoteIdent(c.to)}`,
    ],
    AlterTableOptions: (c) => {
      const set = Object.keys(c.options)
        .sort()
        .map((k) => `${k.toUpperCase()} = ${h.quoteLiteral(c.options[k] ?? '')}`);
      return set.length === 0 ? [] : [`ALTER TABLE ${q(c.table.schema, c.table.name)} ${set.join(' ')}`];
    },
    AddColumn: (c) => [
      `ALTER TABLE ${q(c.table.schema, c.table.name)} ADD COLUMN ${h.columnDefinition(c.column)}`,
    ],
    DropColumn: (c) => [
      `ALTER TABLE ${q(c.table.schema, c.table.name)} DROP COLUMN ${h.quoteIdent(c.column.name)}`,
    ],
    SetDefault: (c) => [
      alterColumn(c.table, c.column.name, `SET DEFAULT ${c.column.default?.text ?? 'NULL'}`),
    ],
    DropDefault: (c) => [alterColumn(c.table, c.column.name, 'DROP DEFAULT')],
    AddConstraint: (c) => {
      const k = c.constraint;
      // Only a constraint added to an existing table can skip checking its rows.
      const notValid = (k.kind === 'ForeignKey' || k.kind === 'Check') && k.notValid === true;
      return [
        `ALTER TABLE ${q(c.table.schema, c.table.name)} ADD ${constraint(k)}${notValid ? ' NOT VALID' : ''}`,
      ];
    },
    DropConstraint: (c) => [
      `ALTER TABLE ${q(c.table.schema, c.table.name)} DROP CONSTRAINT ${h.quoteIdent(c.constraint.name ?? '')}`,
    ],
    CreateView: (c) => [`CREATE VIEW ${q(c.view.schema, c.view.name)} AS ${c.view.definition.text}`],
    DropView: (c) => [`DROP VIEW ${q(c.view.schema, c.view.name)}`],
    InsertRow: (c) => {
      const names = Object.keys(c.row);
      return [
        `INSERT INTO ${q(c.table.schema, c.table.name)} (${cols(names)})${c.overridingSystemValue ? ' OVERRIDING SYSTEM VALUE' : ''} VALUES (${names.map((n) => value(c.row[n])).join(', ')})`,
      ];
    },
    UpdateRow: (c) => [
      `UPDATE ${q(c.table.schema, c.table.name)} SET ${c.set.map((s) => `${h.quoteIdent(s)} = ${value(c.row[s])}`).join(', ')} WHERE ${whereKey(c.key, c.row)}`,
    ],
    DeleteRow: (c) => [`DELETE FROM ${q(c.table.schema, c.table.name)} WHERE ${whereKey(c.key, c.row)}`],
    // A defined object carries its own statements, written by the dialect that loaded it.
    CreateObject: (c) => [
      ...c.object.create,
      ...(c.object.comment !== undefined && c.object.commentOn !== undefined
        ? [`COMMENT ON ${c.object.commentOn} IS ${h.quoteLiteral(c.object.comment)}`]
        : []),
    ],
    ReplaceObject: (c) => [...(c.object.replace ?? c.object.create)],
    DropObject: (c) => [...c.object.drop],
    CommentObject: (c) =>
      c.object.commentOn === undefined
        ? []
        : [
            `COMMENT ON ${c.object.commentOn} IS ${c.comment === undefined ? 'NULL' : h.quoteLiteral(c.comment)}`,
          ],
    Unsupported: () => [],
  };
}
