/**
 * Renders typed changes as MySQL/MariaDB statements: the shared renderer with MySQL's hooks (backquoted
 * names, unqualified tables: a plan applies to the database its URL names), plus MySQL's own grammar. A
 * column change restates the whole column (`MODIFY COLUMN`), the only way MySQL alters most attributes.
 * Every identifier is quoted. Kinds MySQL has no object for (schemas, sequences, enum types, extensions)
 * never reach here from a MySQL model; they render nothing.
 */
import type { Change, CommentTarget } from '../changes.ts';
import type { Column, Constraint, Index, Table, TableOptions, View } from '../model.ts';
import { type RendererTable, sharedRenderer } from '../sql-renderer.ts';
import { quoteIdent, quoteLiteral, renderType } from './mysql-normalize.ts';

const table = (_schema: string, name: string) => quoteIdent(name);

/**
 * Dropping a secondary index touches no row and lets writes continue on both servers, whatever else the
 * table holds, so the statement asks for it: a server that would lock refuses instead. A rebuild is not
 * asked for: MariaDB refuses LOCK=NONE for rebuilding a table that has a FULLTEXT index (errno 1846).
 */
const ONLINE_DROP = ', ALGORITHM=INPLACE, LOCK=NONE';

export function columnDefinition(c: Column): string {
  let sql = `${quoteIdent(c.name)} ${renderType(c.type)}`;
  if (c.collation !== undefined) sql += ` COLLATE ${c.collation}`;
  if (c.generated !== undefined) {
    sql += ` GENERATED ALWAYS AS (${c.generated.text}) ${c.generatedStorage === 'virtual' ? 'VIRTUAL' : 'STORED'}`;
    // A generated column takes no NOT NULL in MariaDB; MySQL accepts it. Nullability follows the expression.
  } else {
    sql += c.notNull ? ' NOT NULL' : ' NULL';
    if (c.default !== undefined) sql += ` DEFAULT ${defaultSql(c.default.text)}`;
    if (c.onUpdate !== undefined) sql += ` ON UPDATE ${c.onUpdate.text}`;
    if (c.identity !== undefined) sql += ' AUTO_INCREMENT';
  }
  if (c.invisible) sql += ' INVISIBLE';
  if (c.comment !== undefined) sql += ` COMMENT ${quoteLiteral(c.comment)}`;
  return sql;
}

/** A literal or CURRENT_TIMESTAMP stands as written; any other expression default needs parentheses. */
function defaultSql(text: string): string {
  const t = text.trim();
  if (
    /^(null|true|false|[-+]?[\d.]+(e[-+]?\d+)?|'(?:[^']|'')*'|"(?:[^"]|"")*"|_\w+'.*'|[bx]'[^']*'|0x[0-9a-f]+)$/is.test(
      t,
    )
  )
    return t;
  if (/^(current_timestamp|now|localtime|localtimestamp)(\(\d*\))?$/i.test(t)) return t;
  if (/^\(.*\)$/s.test(t)) return t;
  return `(${t})`;
}

export function tableSuffix(t: Table): string {
  return options(t.options ?? {}, false);
}

function options(o: TableOptions, alter: boolean): string {
  const parts: string[] = [];
  if (o['engine'] !== undefined) parts.push(`ENGINE=${o['engine']}`);
  if (o['collation'] !== undefined)
    parts.push(
      `${alter ? 'CONVERT TO CHARACTER SET ' + charsetOf(o['collation']) + ' COLLATE ' : 'COLLATE='}${o['collation']}`,
    );
  if (o['row_format'] !== undefined) parts.push(`ROW_FORMAT=${o['row_format'].toUpperCase()}`);
  return parts.length === 0 ? '' : (alter ? '' : ' ') + parts.join(alter ? ', ' : ' ');
}

/** A collation's name begins with its character set's (utf8mb4_general_ci → utf8mb4). */
function charsetOf(collation: string): string {
  return collation.split('_')[0] ?? collation;
}

function keyPart(k: Index['keys'][number]): string {
  if (k.expression !== undefined) return `(${k.expression.text})${k.descending ? ' DESC' : ''}`;
  return `${quoteIdent(k.column ?? '')}${k.length !== undefined ? `(${k.length})` : ''}${k.descending ? ' DESC' : ''}`;
}

const INDEX_KIND: Readonly<Record<string, string>> = { fulltext: 'FULLTEXT ', spatial: 'SPATIAL ' };

function createIndex(t: string, i: Index): string {
  const kind = i.unique ? 'UNIQUE ' : (INDEX_KIND[i.method] ?? '');
  const using = i.method === 'hash' ? ' USING HASH' : '';
  const comment = i.comment !== undefined ? ` COMMENT ${quoteLiteral(i.comment)}` : '';
  // A B-tree index builds online (concurrent DML allowed); FULLTEXT and SPATIAL need a shared lock.
  const online = kind === '' || kind === 'UNIQUE ' ? ' ALGORITHM=INPLACE LOCK=NONE' : '';
  // MariaDB names the option IGNORED (it reads INVISIBLE as nothing it knows).
  const invisible = i.invisible ? ` ${i.invisibleAs ?? 'INVISIBLE'}` : '';
  return `CREATE ${kind}INDEX ${quoteIdent(i.name ?? '')} ON ${t} (${i.keys.map(keyPart).join(', ')})${using}${comment}${invisible}${online}`;
}

function dropConstraint(t: string, c: Constraint): string {
  if (c.kind === 'PrimaryKey') return `ALTER TABLE ${t} DROP PRIMARY KEY`;
  if (c.kind === 'ForeignKey') return `ALTER TABLE ${t} DROP FOREIGN KEY ${quoteIdent(c.name ?? '')}`;
  if (c.kind === 'Unique') return `ALTER TABLE ${t} DROP INDEX ${quoteIdent(c.name ?? '')}`;
  return `ALTER TABLE ${t} DROP CONSTRAINT ${quoteIdent(c.name ?? '')}`;
}

function createView(v: View): string {
  const o = v.options ?? {};
  const check =
    o['check_option'] !== undefined ? ` WITH ${o['check_option'].toUpperCase()} CHECK OPTION` : '';
  return `CREATE ALGORITHM=${(o['algorithm'] ?? 'undefined').toUpperCase()} SQL SECURITY ${(o['security'] ?? 'definer').toUpperCase()} VIEW ${quoteIdent(v.name)} AS ${v.definition.text}${check}`;
}

function modify(t: { schema: string; name: string }, c: Column): string[] {
  return [`ALTER TABLE ${table(t.schema, t.name)} MODIFY COLUMN ${columnDefinition(c)}`];
}

function setComment(c: Extract<Change, { kind: 'SetComment' }>): string[] {
  const t: CommentTarget = c.target;
  if (t.objectType === 'TABLE')
    return [`ALTER TABLE ${table(t.schema, t.name)} COMMENT = ${quoteLiteral(c.comment ?? '')}`];
  if (t.objectType === 'COLUMN' && c.column !== undefined) return modify(t, c.column);
  // Index comments are part of CREATE INDEX; views, types and schemas have none in MySQL.
  return [];
}

const NONE = () => [];

const RENDER: RendererTable = {
  ...sharedRenderer({ quoteIdent, quoteLiteral, renderType, columnDefinition, qualify: table, tableSuffix }),
  AlterTableOptions: (c) => {
    const changed: Record<string, string> = {};
    for (const [k, v] of Object.entries(c.options)) if (c.from[k] !== v) changed[k] = v;
    if (c.from['row_format'] !== undefined && c.options['row_format'] === undefined)
      changed['row_format'] = 'default';
    const sql = options(changed, true);
    return sql === '' ? [] : [`ALTER TABLE ${table(c.table.schema, c.table.name)} ${sql}`];
  },
  CreateSchema: NONE,
  DropSchema: NONE,
  CreateExtension: NONE,
  UpdateExtension: NONE,
  DropExtension: NONE,
  CreateEnum: NONE,
  AddEnumValue: NONE,
  // MySQL has no NOT VALID constraints: its loader never declares one.
  ValidateConstraint: NONE,
  DropEnum: NONE,
  CreateSequence: NONE,
  AlterSequence: NONE,
  DropSequence: NONE,
  AlterColumnType: (c) => modify(c.table, c.column),
  SetNotNull: (c) => modify(c.table, c.column),
  DropNotNull: (c) => modify(c.table, c.column),
  SetDefault: (c) => modify(c.table, c.column),
  AddIdentity: (c) => modify(c.table, c.column),
  SetIdentity: (c) => modify(c.table, c.column),
  DropIdentity: (c) => {
    const { identity: _identity, ...plain } = c.column;
    return modify(c.table, plain);
  },
  DropConstraint: (c) => [dropConstraint(table(c.table.schema, c.table.name), c.constraint)],
  CreateIndex: (c) => [createIndex(table(c.table.schema, c.table.name), c.index)],
  DropIndex: (c) => [
    `ALTER TABLE ${table(c.table.schema, c.table.name)} DROP INDEX ${quoteIdent(c.index.name ?? '')}${ONLINE_DROP}`,
  ],
  CreateView: (c) => [createView(c.view)],
  DropView: (c) => [`DROP VIEW ${quoteIdent(c.view.name)}`],
  SetComment: setComment,
};

function renderOne(change: Change): string[] {
  const fn = RENDER[change.kind] as (c: Change) => string[];
  return fn(change);
}

/**
 * Renders a change of a plan. An AUTO_INCREMENT column must be a key at every moment (errno 1075), so a
 * plan that adds or drops such a column, or its AUTO_INCREMENT, together with a key over it changes both in
 * one ALTER TABLE: every change of the group renders that same statement, which the plan runs once.
 */
export function renderMysql(change: Change, plan: readonly Change[] = []): string[] {
  const group = autoIncrementGroups(plan).get(change);
  if (group !== undefined) return [group];
  return renderOne(change);
}

const groupsOf = new WeakMap<readonly Change[], Map<Change, string>>();

function autoIncrementGroups(plan: readonly Change[]): Map<Change, string> {
  const known = groupsOf.get(plan);
  if (known !== undefined) return known;
  const out = new Map<Change, string>();
  groupsOf.set(plan, out);
  const byTable = new Map<string, Change[]>();
  for (const c of plan) {
    if (c.kind === 'CreateTable') {
      createTableGroup(c, plan, out);
      continue;
    }
    if (!('table' in c) || c.kind === 'DropTable') continue;
    const k = JSON.stringify([c.table.schema, c.table.name]);
    byTable.set(k, [...(byTable.get(k) ?? []), c]);
  }
  for (const changes of byTable.values()) {
    const auto = new Set(changes.flatMap(autoColumnOf));
    if (auto.size === 0) continue;
    const members = changes.filter((c) => keyColumns(c).some((n) => auto.has(n)) || changedColumn(c, auto));
    if (!members.some((c) => keyColumns(c).length > 0)) continue;
    const first = members[0];
    if (first === undefined || !('table' in first)) continue;
    const t = table(first.table.schema, first.table.name);
    const clauses = [...new Set(members.flatMap((c) => clausesOf(c, t)))];
    const sql = `ALTER TABLE ${t} ${clauses.join(', ')}`;
    for (const c of members) out.set(c, sql);
  }
  return out;
}

/** A new table whose AUTO_INCREMENT column only an index keys is created with its indexes inside. */
function createTableGroup(
  c: Extract<Change, { kind: 'CreateTable' }>,
  plan: readonly Change[],
  out: Map<Change, string>,
): void {
  const auto = new Set(c.table.columns.flatMap((x) => (x.identity !== undefined ? [x.name] : [])));
  if (auto.size === 0) return;
  const indexes = plan.filter(
    (x): x is Extract<Change, { kind: 'CreateIndex' }> =>
      x.kind === 'CreateIndex' &&
      x.table.schema === c.table.schema &&
      x.table.name === c.table.name &&
      keyColumns(x).some((n) => auto.has(n)),
  );
  if (indexes.length === 0) return;
  const sql = renderOne(c)[0] ?? '';
  const close = sql.lastIndexOf('\n)');
  const defs = indexes.map((x) => `,\n  ${indexDefinition(x.index)}`).join('');
  const joined = `${sql.slice(0, close)}${defs}${sql.slice(close)}`;
  for (const x of [c, ...indexes]) out.set(x, joined);
}

function indexDefinition(i: Index): string {
  const kind = i.unique ? 'UNIQUE ' : (INDEX_KIND[i.method] ?? '');
  const comment = i.comment !== undefined ? ` COMMENT ${quoteLiteral(i.comment)}` : '';
  const invisible = i.invisible ? ` ${i.invisibleAs ?? 'INVISIBLE'}` : '';
  return `${kind}INDEX ${quoteIdent(i.name ?? '')} (${i.keys.map(keyPart).join(', ')})${comment}${invisible}`;
}

/** The AUTO_INCREMENT column a change adds, drops or changes, on either side of it. */
function autoColumnOf(c: Change): string[] {
  if (c.kind === 'DropIdentity') return [c.column.name];
  if (c.kind === 'AlterColumnType' && c.from.identity !== undefined) return [c.column.name];
  if ('column' in c && c.column !== undefined && c.column.identity !== undefined) return [c.column.name];
  return [];
}

function changedColumn(c: Change, names: ReadonlySet<string>): boolean {
  return c.kind !== 'SetComment' && 'column' in c && c.column !== undefined && names.has(c.column.name);
}

/** The columns of a key a change adds or drops (a key is what an AUTO_INCREMENT column needs). */
function keyColumns(c: Change): string[] {
  if (c.kind === 'CreateIndex' || c.kind === 'DropIndex')
    return c.index.keys.flatMap((k) => (k.column !== undefined ? [k.column] : []));
  if (
    (c.kind === 'AddConstraint' || c.kind === 'DropConstraint') &&
    (c.constraint.kind === 'PrimaryKey' || c.constraint.kind === 'Unique')
  )
    return [...c.constraint.columns];
  return [];
}

/** A change as clauses of `ALTER TABLE t …`; no ALGORITHM/LOCK: adding an AUTO_INCREMENT copies the table. */
function clausesOf(c: Change, t: string): string[] {
  if (c.kind === 'CreateIndex') return [`ADD ${indexDefinition(c.index)}`];
  if (c.kind === 'DropIndex') return [`DROP INDEX ${quoteIdent(c.index.name ?? '')}`];
  const prefix = `ALTER TABLE ${t} `;
  return renderOne(c).map((sql) => (sql.startsWith(prefix) ? sql.slice(prefix.length) : sql));
}
