/**
 * Loads desired MySQL SQL (hand-written files or `mysqldump --no-data` output) with a real MySQL grammar
 * (node-sql-parser, MariaDB flavour) into the raw shapes of mysql-normalize.ts. The model is finished
 * against the server (`resolveDesired`): the database name and the server's default engine and collations
 * are facts of the server, not of the file. What the grammar cannot read is refused by file and line with
 * the fix: simplify the statement, or load the file through a scratch database with --dev-url.
 */
import nodeSqlParser from 'node-sql-parser';
import { splitStatements, StatementSplitError } from '../migrations/statement-splitter.ts';
import {
  emptyModel,
  type RowSet,
  type RowValues,
  type SchemaModel,
  type Table,
  type View,
} from '../model.ts';
import { DesiredStateError } from '../pg/pg-desired.ts';
import {
  BINARY_COLLATION,
  type ColumnsOf,
  columnsOfTables,
  exprText,
  normaliseTable,
  normaliseView,
  quoteIdent,
  type RawCheck,
  type RawColumn,
  type RawForeignKey,
  type RawIndex,
  type RawTable,
  type RawView,
  type ServerFacts,
} from './mysql-normalize.ts';
import {
  createdKind,
  inDatabase,
  mysqlObject,
  ObjectStatementError,
  objectId,
  normalisedObjectName,
  parseObjectStatement,
  type RawObject,
} from './mysql-objects.ts';
import { withDelimiters } from './mysql-delimiters.ts';
import { declaresNotEnforced, declaresPartitions, PARTITIONS_FIX } from './mysql-partitions.ts';
import { type AnnotatedText, elementsOf, hasAnnotation, renameAnnotations } from './mysql-annotations.ts';
import {
  type Respelled,
  respellCreateIndex,
  respellCreateTable,
  respellInsert,
  type Token,
  tokenize,
  writtenOffset,
} from './mysql-spelling.ts';

const parser = new nodeSqlParser.Parser();
const OPTIONS = { database: 'MariaDB' } as const;

/** The desired state before the server's facts are known: raw tables and views, and declared rows. */
export interface PendingModel {
  readonly tables: RawTable[];
  readonly views: RawView[];
  readonly rows: RowSet[];
  /** Triggers, procedures and functions, finished with the server's type spelling. */
  readonly objects: RawObject[];
}

type Node = Record<string, unknown>;
const isNode = (x: unknown): x is Node => typeof x === 'object' && x !== null && !Array.isArray(x);
const list = (x: unknown): Node[] => (Array.isArray(x) ? x.filter(isNode) : []);

/** `/*!40101 SET … *\/` runs on MySQL: its text is SQL. Other comments go; lines stay where they were. */
function unwrapVersionComments(sql: string): string {
  // Same length, so lines and columns of what follows stay where they were written.
  return sql.replace(
    /(\/\*!(?:\d{5,6})?)([\s\S]*?)\*\//g,
    (_m, open: string, body: string) => `${' '.repeat(open.length)}${body}  `,
  );
}

/**
 * `VARCHAR(n) BINARY` is MySQL's shorthand for the character set's `_bin` collation; the grammar lacks it,
 * so it is read as a collation the normaliser resolves once the column's character set is known.
 */
function binaryAttribute(sql: string): string {
  return sql.replace(
    /\b((?:var)?char\s*\(\s*\d+\s*\)|(?:tiny|medium|long)?text)\s+binary\b/gi,
    `$1 COLLATE ${BINARY_COLLATION}`,
  );
}

// Session settings and a dump's data-loading brackets (`ALTER TABLE t DISABLE KEYS` around its INSERTs).
const IGNORED =
  /^(?:(?:set|lock\s+tables|unlock\s+tables|use|start\s+transaction|commit|begin|delimiter)\b|alter\s+table\s+(?:`(?:[^`]|``)*`|[\w$.]+)\s+(?:disable|enable)\s+keys\s*$)/i;

export function parseDesired(files: readonly { path: string; sql: string }[]): PendingModel {
  const tables = new Map<string, RawTable>();
  const views = new Map<string, RawView>();
  const rows = new Map<string, { columns?: string[]; values: (string | null)[][]; where: string }>();
  const objects = new Map<string, { object: RawObject; where: string }>();
  // Each statement is read on its own, so one run reports every problem of the files.
  const problems: string[] = [];
  const statement = (path: string, st: { sql: string; line: number }, around: AnnotatedText): void => {
    const where = `${path}:${st.line}:${around.column}`;
    const text = around.code;
    if (text === '' || IGNORED.test(text)) return;
    const drop = /^drop\s+(table|view)\s+(?:if\s+exists\s+)?(.+)$/is.exec(text);
    if (drop) {
      for (const n of (drop[2] ?? '').split(',').map(unquoteName)) {
        tables.delete(n);
        views.delete(n);
        rows.delete(n);
      }
      return;
    }
    if (
      /^create\s+(?:or\s+replace\s+)?(?:algorithm\s*=\s*\w+\s+)?(?:definer\s*=\s*\S+\s+)?(?:sql\s+security\s+\w+\s+)?view\b/i.test(
        text,
      )
    ) {
      const v = parseView(text, where);
      views.set(v.name, v);
      tables.delete(v.name);
      return;
    }
    // Only a CREATE can declare one; the rest (tables, rows, ALTERs) is not tokenized again to find out.
    const created = /^create\b/i.test(text) ? createdKind(text) : undefined;
    if (created === 'EVENT')
      throw new DesiredStateError(
        `${where}: events are not managed by the schema engine (they run on a schedule, not on a schema); keep them in a migration`,
      );
    if (created === undefined && /^create\s+(?:or\s+replace\s+)?definer\b/i.test(text))
      throw new DesiredStateError(
        `${where}: CREATE DEFINER=… is read for views, triggers, procedures and functions only; declare one of those`,
      );
    if (created !== undefined) {
      let o: RawObject;
      try {
        o = parseObjectStatement(text);
      } catch (error) {
        if (!(error instanceof ObjectStatementError)) throw error;
        throw new DesiredStateError(`${where}: CREATE ${created}: ${error.message}`);
      }
      const id = objectId(o);
      if (objects.has(id)) throw new DesiredStateError(`${where}: ${o.kind} ${o.name} is declared twice`);
      objects.set(id, { object: o, where });
      return;
    }
    const dropObject = /^drop\s+(trigger|procedure|function)\s+(?:if\s+exists\s+)?(.+)$/is.exec(text);
    if (dropObject) {
      const kind = (dropObject[1] ?? '').toLowerCase();
      objects.delete(JSON.stringify([kind, normalisedObjectName(kind, unquoteName(dropObject[2] ?? ''))]));
      return;
    }
    if (/^alter\s+table\b/i.test(text)) {
      alterTable(text, where, around);
      return;
    }
    if (/^create\s+(?:temporary\s+)?table\b/i.test(text) && declaresPartitions(text))
      throw new DesiredStateError(`${where}: CREATE TABLE … PARTITION BY: ${PARTITIONS_FIX}`);
    if (/^(?:create|alter)\s+(?:temporary\s+)?table\b/i.test(text) && declaresNotEnforced(text))
      throw new DesiredStateError(
        `${where}: CHECK … NOT ENFORCED is not managed by the schema engine (MariaDB has no such state, and a check the server does not enforce is a comment); declare the check enforced, or leave it out`,
      );
    let r: Respelled;
    if (/^create\s+(?:temporary\s+)?table\b/i.test(text)) r = respellCreateTable(text);
    else if (/^create\s+(?:unique\s+|fulltext\s+|spatial\s+)?index\b/i.test(text)) {
      const known = new Set([...tables.values()].flatMap((t) => t.columns.map((c) => c.name.toLowerCase())));
      r = respellCreateIndex(text, known);
    } else if (/^(?:insert|replace)\b/i.test(text)) r = respellInsert(text);
    else r = { sql: text, invisibleColumns: new Set(), tokens: tokenize(text) };
    const invisibleColumns = r.invisibleColumns;
    const ast = astOf(r, around, path);
    if (ast['type'] === 'create' && ast['keyword'] === 'table') {
      const t = annotatedTable(tableFrom(ast, where, invisibleColumns), around, where);
      // A dump drops a table before creating it; two CREATEs with no DROP between are a mistake.
      if (tables.has(t.name) || views.has(t.name))
        throw new DesiredStateError(`${where}: table ${t.name} is declared twice`);
      tables.set(t.name, t);
      views.delete(t.name);
    } else if (ast['type'] === 'create' && ast['keyword'] === 'index') {
      const name = tableName(ast['table']);
      const t = tables.get(name);
      if (!t)
        throw new DesiredStateError(`${where}: CREATE INDEX on ${name}, which no earlier statement creates`);
      tables.set(name, { ...t, indexes: [...t.indexes, standaloneIndex(ast)] });
    } else if (ast['type'] === 'insert' || ast['type'] === 'replace') {
      const name = tableName(ast['table']);
      const set = rows.get(name) ?? { values: [], where };
      const columns = Array.isArray(ast['columns']) ? (ast['columns'] as unknown[]).map(String) : undefined;
      if (set.columns !== undefined && JSON.stringify(set.columns) !== JSON.stringify(columns))
        throw new DesiredStateError(
          `${where}: INSERT INTO ${name} names other columns than an earlier INSERT`,
        );
      const values = list((ast['values'] as Node | undefined)?.['values']).map((tuple) =>
        list(tuple['value']).map((v) => literal(v, where)),
      );
      rows.set(name, {
        ...(columns !== undefined ? { columns } : {}),
        values: [...set.values, ...values],
        where: set.where,
      });
    } else {
      throw new DesiredStateError(
        `${where}: ${String(ast['type']).toUpperCase()} is not part of a desired state; declare tables, views, indexes and rows`,
      );
    }
  };
  /**
   * `ALTER TABLE t ADD …, MODIFY …` as a dump or a phpMyAdmin export writes keys and AUTO_INCREMENT after
   * its CREATE TABLEs: each clause is read as the definition it would be inside CREATE TABLE t (…) and
   * merged into the declared table. A clause that changes what was declared otherwise (DROP, RENAME,
   * CHANGE to another name) belongs in the CREATE TABLE itself.
   */
  const alterTable = (text: string, where: string, around: AnnotatedText): void => {
    const { table: name, clauses, bodyAt } = alterClauses(text);
    const t = tables.get(name);
    if (!t) throw new DesiredStateError(`${where}: ALTER TABLE ${name}, which no earlier statement creates`);
    let next: RawTable = t;
    for (const clause of clauses) next = applyClause(next, clause, where);
    if (hasAnnotation(around)) {
      const elements = elementsOf(around.code, around.line, addedColumn, bodyAt);
      const renames = renameAnnotations(around, elements, where, false);
      next = {
        ...next,
        columns: next.columns.map((c) => {
          const old = renames.columns.get(c.name);
          return old === undefined ? c : { ...c, renamedFrom: old };
        }),
      };
    }
    tables.set(name, next);
  };
  for (const f of files) {
    let statements;
    let text: string;
    try {
      text = withDelimiters(binaryAttribute(unwrapVersionComments(f.sql)));
      statements = splitStatements(text, 'mysql');
    } catch (error) {
      if (error instanceof StatementSplitError) throw new DesiredStateError(`${f.path}: ${error.message}`);
      throw error;
    }
    const lines = text.split('\n');
    // Where the previous statement ended: a comment on that line trails it, a statement there follows it.
    let cursor = { line: 0, index: 0 };
    for (const [i, st] of statements.entries()) {
      const read = annotatedText(st, lines, cursor, statements[i + 1]?.line);
      const around = read.text;
      cursor = read.cursor;
      try {
        statement(f.path, st, around);
      } catch (error) {
        if (!(error instanceof DesiredStateError)) throw error;
        problems.push(error.message);
      }
    }
  }
  const rowSets: RowSet[] = [];
  for (const [name, r] of [...rows].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
    try {
      rowSets.push(rowSetOf(name, r));
    } catch (error) {
      if (!(error instanceof DesiredStateError)) throw error;
      problems.push(error.message);
    }
  }
  for (const { object: o, where } of objects.values()) {
    if (o.kind === 'trigger' && !tables.has(o.table))
      problems.push(`${where}: trigger ${o.name} is on ${o.table}, which no statement creates as a table`);
  }
  if (problems.length === 1) throw new DesiredStateError(problems[0] ?? '');
  if (problems.length > 1)
    throw new DesiredStateError(
      `${problems.length} problems in the desired state:\n  ${problems.join('\n  ')}`,
    );
  return {
    tables: [...tables.values()],
    views: [...views.values()],
    rows: rowSets,
    objects: [...objects.values()].map((o) => o.object),
  };

  function rowSetOf(
    name: string,
    r: { columns?: string[]; values: (string | null)[][]; where: string },
  ): RowSet {
    const t = tables.get(name);
    if (!t)
      throw new DesiredStateError(`${r.where}: rows are declared for ${name}, which no statement creates`);
    const columns = r.columns ?? t.columns.map((c) => c.name);
    // The primary key, else a unique key over NOT NULL columns (whole columns, no prefix): it keys one row.
    const notNull = (c: string) => t.columns.some((x) => x.name === c && !x.nullable);
    const keyOf = (i: RawIndex) =>
      i.parts.every((p) => p.column !== undefined && p.length === undefined && notNull(p.column))
        ? i.parts.map((p) => p.column ?? '')
        : undefined;
    const pk =
      t.indexes.find((i) => i.primary)?.parts.map((p) => p.column ?? '') ??
      t.indexes
        .filter((i) => i.unique)
        .map(keyOf)
        .find((k) => k !== undefined);
    if (!pk || pk.length === 0)
      throw new DesiredStateError(
        `rows are declared for ${name}, which has no primary key (nor a unique key on NOT NULL columns); declare one`,
      );
    const missing = pk.find((k) => !columns.includes(k));
    if (missing !== undefined)
      throw new DesiredStateError(`${r.where}: INSERT INTO ${name} must list the key column ${missing}`);
    const seen = new Set<string>();
    const values = r.values.map((vals) => {
      const o: Record<string, string | null> = {};
      columns.forEach((c, i) => (o[c] = vals[i] ?? null));
      const key = JSON.stringify(pk.map((k) => o[k] ?? null));
      if (seen.has(key))
        throw new DesiredStateError(
          `${r.where}: the row of ${name} with key ${pk.map((k) => `${k} = ${o[k] ?? 'NULL'}`).join(', ')} is declared twice`,
        );
      seen.add(key);
      return o as RowValues;
    });
    return { kind: 'RowSet', schema: '', table: name, key: pk, columns, rows: values };
  }
}

/** `ALTER TABLE name clause, clause …` split at its top-level commas; clause texts keep their spelling. */
function alterClauses(text: string): { table: string; clauses: string[]; bodyAt: number } {
  const tokens = tokenize(text);
  const sigs = tokens.map((t, i) => ({ t, i })).filter((x) => x.t.kind !== 'space' && x.t.kind !== 'comment');
  // ALTER [ONLINE|IGNORE] TABLE name
  let k = sigs.findIndex((x) => x.t.text.toUpperCase() === 'TABLE') + 1;
  let nameText = sigs[k]?.t.text ?? '';
  if (sigs[k + 1]?.t.text === '.') {
    k += 2;
    nameText = sigs[k]?.t.text ?? '';
  }
  const bodyStart = (sigs[k + 1]?.i ?? tokens.length) as number;
  const bodyAt = tokens.slice(0, bodyStart).reduce((n, t) => n + t.text.length, 0);
  const clauses: string[] = [];
  let depth = 0;
  let current = '';
  for (const t of tokens.slice(bodyStart)) {
    if (t.text === '(') depth++;
    else if (t.text === ')') depth--;
    if (depth === 0 && t.text === ',') {
      clauses.push(current.trim());
      current = '';
    } else current += t.text;
  }
  if (current.trim() !== '') clauses.push(current.trim());
  return { table: unquoteName(nameText), clauses, bodyAt };
}

const KEY_CLAUSE = /^(?:constraint|primary|unique|key|index|fulltext|spatial|foreign|check)\b/i;

/** One ALTER TABLE clause applied to a declared table, read through the CREATE TABLE grammar. */
function applyClause(t: RawTable, clause: string, where: string): RawTable {
  const bare = clause.replace(/^(add|modify|change)\s+(?:column\s+)?(?:if\s+(?:not\s+)?exists\s+)?/i, '$1 ');
  const verb = (/^\w+/.exec(bare)?.[0] ?? '').toLowerCase();
  const rest = bare.slice(verb.length).trim();
  // How the server runs the statement, and the table's row counter: neither is part of the schema.
  if (/^(?:algorithm|lock)\s*=?\s*\w+$/i.test(clause) || /^auto_increment\s*=?\s*\d+$/i.test(clause))
    return t;
  const read = (definitions: string, options = ''): RawTable =>
    readCreateTable(`CREATE TABLE ${quoteIdent(t.name)} (${definitions})${options}`, where);
  if (verb === 'add') {
    // ADD (a int, b int) adds several columns.
    const inner = /^\(([\s\S]*)\)$/.exec(rest)?.[1];
    const added = read(inner ?? rest);
    if (!KEY_CLAUSE.test(rest))
      for (const c of added.columns)
        if (t.columns.some((x) => x.name.toLowerCase() === c.name.toLowerCase()))
          throw new DesiredStateError(`${where}: column ${c.name} of ${t.name} is declared twice`);
    if (added.indexes.some((i) => i.primary) && t.indexes.some((i) => i.primary))
      throw new DesiredStateError(`${where}: ${t.name} is given a second primary key`);
    return {
      ...t,
      columns: KEY_CLAUSE.test(rest) ? t.columns : [...t.columns, ...added.columns],
      indexes: [...t.indexes, ...added.indexes],
      foreignKeys: [...t.foreignKeys, ...added.foreignKeys],
      checks: [...t.checks, ...added.checks],
    };
  }
  if (verb === 'modify' || verb === 'change') {
    let definition = rest;
    if (verb === 'change') {
      const tk = tokenize(rest).filter((x) => x.kind !== 'space' && x.kind !== 'comment');
      const from = unquoteName(tk[0]?.text ?? '');
      const to = unquoteName(tk[1]?.text ?? '');
      if (from.toLowerCase() !== to.toLowerCase())
        throw new DesiredStateError(
          `${where}: ALTER TABLE ${t.name} CHANGE ${from} ${to}: declare the column as ${to} in its CREATE TABLE (a rename is annotated there with -- ptah:renamed-from ${from})`,
        );
      definition = rest.slice(rest.indexOf(tk[0]?.text ?? '') + (tk[0]?.text.length ?? 0)).trim();
    }
    const read1 = read(definition);
    const c = read1.columns[0];
    const at =
      c === undefined ? -1 : t.columns.findIndex((x) => x.name.toLowerCase() === c.name.toLowerCase());
    if (c === undefined || at < 0)
      throw new DesiredStateError(
        `${where}: ALTER TABLE ${t.name} MODIFY ${c?.name ?? definition.slice(0, 40)}: no such column is declared`,
      );
    const columns = [...t.columns];
    columns[at] = c;
    return {
      ...t,
      columns,
      indexes: [...t.indexes, ...read1.indexes],
      foreignKeys: [...t.foreignKeys, ...read1.foreignKeys],
      checks: [...t.checks, ...read1.checks],
    };
  }
  if (/^(?:engine|(?:default\s+)?(?:charset|character\s+set|collate)|row_format|comment)\b/i.test(clause)) {
    const o = read('`ptah_option` int', ` ${clause}`);
    return {
      ...t,
      ...(o.engine !== undefined ? { engine: o.engine } : {}),
      ...(o.charset !== undefined ? { charset: o.charset } : {}),
      ...(o.collation !== undefined ? { collation: o.collation } : {}),
      ...(o.rowFormat !== undefined ? { rowFormat: o.rowFormat } : {}),
      ...(o.comment !== undefined ? { comment: o.comment } : {}),
    };
  }
  throw new DesiredStateError(
    `${where}: ALTER TABLE ${t.name} ${clause.split(/\s+/).slice(0, 3).join(' ')} …: a desired state declares tables as they should be; write the change into the CREATE TABLE (ADD, MODIFY and table options are read here)`,
  );
}

/** A CREATE TABLE statement read as parseDesired reads one. */
function readCreateTable(text: string, where: string): RawTable {
  const r = respellCreateTable(text);
  let ast: Node;
  try {
    const parsed = parser.astify(r.sql, OPTIONS) as unknown;
    ast = (Array.isArray(parsed) ? parsed[0] : parsed) as Node;
  } catch (error) {
    throw new DesiredStateError(
      `${where}: the MySQL grammar cannot read this statement (${firstLine((error as Error).message)}); simplify it, or pass --dev-url to load the files through a scratch database`,
    );
  }
  return tableFrom(ast, where, r.invisibleColumns);
}

/**
 * Parses a respelled statement; a grammar error names the file, line and column (in characters) where the
 * statement as written has the token the grammar stopped at.
 */
function astOf(r: Respelled, around: AnnotatedText, path: string): Node {
  try {
    const parsed = parser.astify(r.sql, OPTIONS) as unknown;
    return (Array.isArray(parsed) ? parsed[0] : parsed) as Node;
  } catch (error) {
    const at = (error as { location?: { start?: { offset?: unknown } } }).location?.start?.offset;
    let where = `${path}:${around.line}:${around.column}`;
    if (typeof at === 'number') {
      const before = around.code.slice(0, writtenOffset(r, at));
      const lines = before.split('\n');
      const last = [...(lines[lines.length - 1] ?? '')].length;
      where =
        lines.length === 1
          ? `${path}:${around.line}:${around.column + last}`
          : `${path}:${around.line + lines.length - 1}:${last + 1}`;
    }
    throw new DesiredStateError(
      `${where}: the MySQL grammar cannot read this statement (${firstLine((error as Error).message)}); simplify it, or pass --dev-url to load the files through a scratch database`,
    );
  }
}

/**
 * A statement with the comments around it: its own leading ones (a comment on the line where the previous
 * statement ended trails that one), and those after its semicolon on its last line.
 */
function annotatedText(
  st: { sql: string; line: number },
  lines: readonly string[],
  cursor: { line: number; index: number },
  nextLine: number | undefined,
): { text: AnnotatedText; cursor: { line: number; index: number } } {
  const previousEnd = cursor.line;
  const code = withoutLeadingComments(st.sql);
  const lead = st.sql.slice(0, st.sql.length - code.length);
  let line = st.line - (lead.match(/\n/g)?.length ?? 0);
  const leading: { text: string; line: number }[] = [];
  for (const t of tokenize(lead)) {
    if (t.kind === 'comment' && line !== previousEnd) leading.push({ text: t.text, line });
    line += t.text.split('\n').length - 1;
  }
  const end = st.line + (code.match(/\n/g)?.length ?? 0);
  const trailing: string[] = [];
  if (nextLine === undefined || nextLine > end) {
    const tokens = tokenize(lines[end - 1] ?? '');
    const semi = tokens.map((t) => t.text).lastIndexOf(';');
    if (semi >= 0) for (const t of tokens.slice(semi + 1)) if (t.kind === 'comment') trailing.push(t.text);
  }
  // The statement's first line stands on the file's line after whatever ended there before it.
  const lineText = lines[st.line - 1] ?? '';
  const codeLines = code.split('\n');
  const firstCodeLine = codeLines[0] ?? '';
  const p = Math.max(0, lineText.indexOf(firstCodeLine, cursor.line === st.line ? cursor.index : 0));
  const column = [...lineText.slice(0, p)].length + 1;
  const endCursor =
    codeLines.length === 1
      ? { line: st.line, index: p + firstCodeLine.length }
      : { line: end, index: (codeLines[codeLines.length - 1] ?? '').length };
  return { text: { code, line: st.line, column, leading, trailing }, cursor: endCursor };
}

const KEY_WORD = /^(?:constraint|primary|unique|key|index|fulltext|spatial|foreign|check|period)$/i;

const unquoteToken = (t: Token | undefined): string | undefined =>
  t === undefined ? undefined : t.kind === 'quoted' ? t.text.slice(1, -1).replace(/``/g, '`') : t.text;

/** A CREATE TABLE definition's column: its first word, unless that begins a key. */
const definedColumn = (words: readonly Token[]): string | undefined =>
  words[0] === undefined || (words[0].kind === 'word' && KEY_WORD.test(words[0].text))
    ? undefined
    : unquoteToken(words[0]);

/** The column an ALTER TABLE clause adds: ADD [COLUMN] name …. */
const addedColumn = (words: readonly Token[]): string | undefined => {
  if (words[0]?.text.toUpperCase() !== 'ADD') return undefined;
  const name = words[1]?.text.toUpperCase() === 'COLUMN' ? words[2] : words[1];
  if (name === undefined || name.text === '(' || (name.kind === 'word' && KEY_WORD.test(name.text)))
    return undefined;
  return unquoteToken(name);
};

function annotatedTable(t: RawTable, around: AnnotatedText, where: string): RawTable {
  if (!hasAnnotation(around)) return t;
  const renames = renameAnnotations(
    around,
    elementsOf(around.code, around.line, definedColumn, 'parenthesis'),
    where,
    true,
  );
  return {
    ...t,
    ...(renames.table !== undefined ? { renamedFrom: renames.table } : {}),
    columns: t.columns.map((c) => {
      const old = renames.columns.get(c.name);
      return old === undefined ? c : { ...c, renamedFrom: old };
    }),
  };
}

/** A statement's text starts after the comments that precede it. */
function withoutLeadingComments(sql: string): string {
  let t = sql.trim();
  for (;;) {
    const m = /^(?:--[^\n]*(?:\n|$)|#[^\n]*(?:\n|$)|\/\*[\s\S]*?\*\/)\s*/.exec(t);
    if (!m) return t;
    t = t.slice(m[0].length);
  }
}

function firstLine(s: string): string {
  const l = s.split('\n')[0] ?? s;
  return l.length > 160 ? l.slice(0, 160) + '…' : l;
}

function unquoteName(n: string): string {
  const t = n.trim();
  const last = t.match(/(`(?:[^`]|``)*`|[^.`\s]+)\s*$/)?.[1] ?? t;
  return last.startsWith('`') ? last.slice(1, -1).replace(/``/g, '`') : last;
}

function tableName(x: unknown): string {
  const t = Array.isArray(x) ? x[0] : x;
  return isNode(t) ? String(t['table'] ?? '') : '';
}

function stringValue(v: unknown): string | undefined {
  if (!isNode(v)) return typeof v === 'string' ? v : undefined;
  const inner = v['value'];
  if (isNode(inner)) return stringValue(inner);
  return typeof inner === 'string' || typeof inner === 'number' ? String(inner) : undefined;
}

/** A literal as the row's text value; strings arrive with SQL escaping still in them. */
function literal(v: Node, where: string): string | null {
  const type = String(v['type']);
  if (type === 'null') return null;
  if (type === 'number') return String(v['value']);
  if (type === 'bool') return v['value'] ? '1' : '0';
  if (type === 'single_quote_string' || type === 'double_quote_string' || type === 'string')
    return unescape(String(v['value']));
  if (type === 'unary_expr' && v['operator'] === '-' && isNode(v['expr']))
    return `-${literal(v['expr'], where)}`;
  throw new DesiredStateError(
    `${where}: a declared row holds an expression (${exprText(v)}); write literal values`,
  );
}

function unescape(s: string): string {
  return s
    .replace(/''/g, "'")
    .replace(/\\(.)/g, (_m, c: string) => (c === 'n' ? '\n' : c === 't' ? '\t' : c === '0' ? '\0' : c));
}

function typeText(def: Node): string {
  const dt = String(def['dataType'] ?? '').toLowerCase();
  let args = '';
  if (dt === 'enum' || dt === 'set') {
    const values = list((def['expr'] as Node | undefined)?.['value']).map(
      (v) => `'${unescape(String(v['value'])).replace(/'/g, "''")}'`,
    );
    args = `(${values.join(',')})`;
  } else if (def['length'] !== undefined && def['length'] !== null) {
    args = `(${String(def['length'])}${def['scale'] !== undefined && def['scale'] !== null ? `,${String(def['scale'])}` : ''})`;
  }
  const suffix = Array.isArray(def['suffix'])
    ? (def['suffix'] as unknown[]).map((x) => String(x).toLowerCase())
    : [];
  return `${dt}${args}${suffix.length > 0 ? ' ' + suffix.join(' ') : ''}`;
}

function columnFrom(
  d: Node,
  invisibleColumns: ReadonlySet<string>,
): {
  column: RawColumn;
  extras: Partial<RawTable> & { pk?: boolean; unique?: boolean };
} {
  const name = String((d['column'] as Node)['column']);
  const def = d['definition'] as Node;
  const dv = isNode(d['default_val']) ? (d['default_val'] as Node)['value'] : undefined;
  let onUpdate: string | undefined;
  let dflt: string | undefined;
  if (isNode(dv)) {
    const over = dv['over'];
    if (isNode(over) && over['type'] === 'on update') {
      const precision = list((over['expr'] as Node | undefined)?.['value'])[0]?.['value'];
      onUpdate =
        String(over['keyword'] ?? 'CURRENT_TIMESTAMP') +
        (precision !== undefined ? `(${String(precision)})` : over['parentheses'] ? '()' : '');
      dflt = exprText({ ...dv, over: null });
    } else dflt = defaultText(dv);
  }
  // ON UPDATE with no DEFAULT before it reads as a reference to no table: it is the column's ON UPDATE.
  const ref = d['reference_definition'];
  if (isNode(ref) && ref['table'] === undefined) {
    const action = list(ref['on_action']).find((a) => a['type'] === 'on update');
    if (action !== undefined) onUpdate = onUpdateText(action['value']);
  }
  const gen = isNode(d['generated']) ? (d['generated'] as Node) : undefined;
  const charset = stringValue((d['character_set'] as Node | undefined)?.['value']);
  const collate = (d['collate'] as Node | undefined)?.['collate'];
  const comment = stringValue((d['comment'] as Node | undefined)?.['value']);
  const nullable = (d['nullable'] as Node | undefined)?.['type'];
  return {
    column: {
      name,
      columnType: typeText(def),
      nullable: nullable !== 'not null' && d['primary_key'] === undefined,
      ...(dflt !== undefined ? { default: dflt } : {}),
      ...(onUpdate !== undefined ? { onUpdate } : {}),
      autoIncrement: d['auto_increment'] !== undefined && d['auto_increment'] !== null,
      ...(charset !== undefined ? { charset } : {}),
      ...(isNode(collate) ? { collation: String(collate['name']) } : {}),
      ...(gen !== undefined
        ? {
            generated: {
              expression: exprText(gen['expr']),
              storage:
                String(gen['storage_type'] ?? 'virtual').toLowerCase() === 'virtual' ? 'virtual' : 'stored',
            },
          }
        : {}),
      invisible: invisibleColumns.has(name.toLowerCase()),
      ...(comment !== undefined ? { comment: unescape(comment) } : {}),
    },
    extras: {
      ...(d['primary_key'] ? { pk: true } : {}),
      ...(d['unique'] ? { unique: true } : {}),
    },
  };
}

/** `CURRENT_TIMESTAMP`, `CURRENT_TIMESTAMP()` or `CURRENT_TIMESTAMP(3)` as the grammar read it. */
function onUpdateText(v: unknown): string {
  if (!isNode(v)) return 'CURRENT_TIMESTAMP';
  if (v['type'] === 'origin') return String(v['value']).toUpperCase();
  const precision = list((v['args'] as Node | undefined)?.['value'])[0]?.['value'];
  return `CURRENT_TIMESTAMP(${precision !== undefined ? String(precision) : ''})`;
}

/** A default's SQL text; string literals keep their quotes so the normaliser reads them as literals. */
function defaultText(v: Node): string {
  const type = String(v['type']);
  if (type === 'single_quote_string' || type === 'double_quote_string')
    return `'${unescape(String(v['value'])).replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;
  if (type === 'number') return String(v['value']);
  if (type === 'null') return 'NULL';
  if (type === 'bool') return v['value'] ? 'TRUE' : 'FALSE';
  return exprText(v);
}

function indexParts(defs: unknown): RawIndex['parts'] {
  return list(defs).map((p) => {
    const order = String(p['order_by'] ?? '').toLowerCase() === 'desc';
    if (p['type'] === 'column_ref') {
      const suffix = typeof p['suffix'] === 'string' ? /\((\d+)\)/.exec(p['suffix'])?.[1] : undefined;
      return {
        column: String(p['column']),
        ...(suffix !== undefined ? { length: Number(suffix) } : {}),
        descending: order,
      };
    }
    // `col(10)` reads as a call of a function named col: a prefix length.
    const fname = (p['name'] as { name?: { value?: unknown }[] } | undefined)?.name;
    const args = list((p['args'] as Node | undefined)?.['value']);
    if (
      p['type'] === 'function' &&
      fname?.length === 1 &&
      args.length === 1 &&
      args[0]?.['type'] === 'number'
    )
      return { column: String(fname[0]?.value ?? ''), length: Number(args[0]?.['value']), descending: order };
    return { expression: exprText(p['expr'] ?? p), descending: order };
  });
}

function indexOptions(o: unknown): { comment?: string; invisible: boolean; method?: string } {
  let comment: string | undefined;
  let invisible = false;
  let method: string | undefined;
  for (const x of list(o)) {
    if (x['type'] === 'comment') comment = stringValue(x['value']);
    if (String(x['type']).toLowerCase() === 'invisible' || x['value'] === 'invisible') invisible = true;
    if (x['keyword'] === 'using') method = String(x['type']).toLowerCase();
  }
  return {
    ...(comment !== undefined ? { comment: unescape(comment) } : {}),
    invisible,
    ...(method ? { method } : {}),
  };
}

function standaloneIndex(ast: Node): RawIndex {
  const kind = String(ast['index_type'] ?? '').toLowerCase();
  const opts = indexOptions(ast['index_options']);
  return {
    name: String(ast['index']),
    primary: false,
    unique: kind === 'unique',
    method: kind === 'fulltext' || kind === 'spatial' ? kind : (opts.method ?? 'btree'),
    parts: indexParts(ast['index_columns']),
    ...(opts.comment !== undefined ? { comment: opts.comment } : {}),
    invisible: opts.invisible,
  };
}

function fkAction(actions: unknown, which: string): string {
  const a = list(actions).find((x) => x['type'] === which);
  return a ? String((a['value'] as Node | undefined)?.['value'] ?? 'restrict') : 'restrict';
}

function tableFrom(ast: Node, where: string, invisibleColumns: ReadonlySet<string>): RawTable {
  const name = tableName(ast['table']);
  if (ast['query_expr'] || ast['like'])
    throw new DesiredStateError(`${where}: CREATE TABLE ${name} … AS/LIKE: declare its columns`);
  const columns: RawColumn[] = [];
  const indexes: RawIndex[] = [];
  const foreignKeys: RawForeignKey[] = [];
  const checks: RawCheck[] = [];
  for (const d of list(ast['create_definitions'])) {
    if (d['resource'] === 'column') {
      const { column, extras } = columnFrom(d, invisibleColumns);
      if (columns.some((c) => c.name.toLowerCase() === column.name.toLowerCase()))
        throw new DesiredStateError(`${where}: column ${column.name} of ${name} is declared twice`);
      columns.push(column);
      if (extras.pk)
        indexes.push({
          name: 'PRIMARY',
          primary: true,
          unique: true,
          method: 'btree',
          parts: [{ column: column.name, descending: false }],
          invisible: false,
        });
      if (extras.unique)
        indexes.push({
          primary: false,
          unique: true,
          method: 'btree',
          parts: [{ column: column.name, descending: false }],
          invisible: false,
        });
      const check = d['check'];
      if (isNode(check)) {
        const e = Array.isArray(check['definition']) ? (check['definition'] as unknown[])[0] : undefined;
        const named = typeof check['constraint'] === 'string' ? check['constraint'] : undefined;
        checks.push({
          ...(named !== undefined ? { name: named } : {}),
          expression: exprText(e),
          column: column.name,
        });
      }
      const ref = d['reference_definition'];
      if (isNode(ref) && ref['table'] !== undefined) {
        foreignKeys.push({
          columns: [column.name],
          refTable: tableName(ref['table']),
          refColumns: list(ref['definition']).map((x) => String(x['column'])),
          onUpdate: fkAction(ref['on_action'], 'on update'),
          onDelete: fkAction(ref['on_action'], 'on delete'),
        });
      }
      continue;
    }
    const ctype = String(d['constraint_type'] ?? '').toLowerCase();
    const named = typeof d['constraint'] === 'string' ? (d['constraint'] as string) : undefined;
    if (ctype === 'primary key') {
      indexes.push({
        name: 'PRIMARY',
        primary: true,
        unique: true,
        method: 'btree',
        parts: indexParts(d['definition']),
        invisible: false,
      });
    } else if (ctype.startsWith('unique')) {
      const opts = indexOptions(d['index_options']);
      const iname = typeof d['index'] === 'string' ? (d['index'] as string) : named;
      indexes.push({
        ...(iname !== undefined ? { name: iname } : {}),
        primary: false,
        unique: true,
        method: 'btree',
        parts: indexParts(d['definition']),
        ...(opts.comment !== undefined ? { comment: opts.comment } : {}),
        invisible: opts.invisible,
      });
    } else if (ctype === 'foreign key') {
      const ref = d['reference_definition'] as Node;
      const iname = typeof d['index'] === 'string' ? (d['index'] as string) : undefined;
      foreignKeys.push({
        ...((named ?? iname) !== undefined ? { name: (named ?? iname) as string } : {}),
        columns: list(d['definition']).map((x) => String(x['column'])),
        refTable: tableName(ref['table']),
        refColumns: list(ref['definition']).map((x) => String(x['column'])),
        onUpdate: fkAction(ref['on_action'], 'on update'),
        onDelete: fkAction(ref['on_action'], 'on delete'),
      });
    } else if (ctype === 'check') {
      const e = Array.isArray(d['definition']) ? (d['definition'] as unknown[])[0] : d['definition'];
      checks.push({ ...(named !== undefined ? { name: named } : {}), expression: exprText(e) });
    } else if (d['resource'] === 'index') {
      const kw = String(d['keyword'] ?? '').toLowerCase();
      const opts = indexOptions(d['index_options']);
      const method = kw.startsWith('fulltext')
        ? 'fulltext'
        : kw.startsWith('spatial')
          ? 'spatial'
          : (opts.method ?? 'btree');
      const iname = typeof d['index'] === 'string' ? (d['index'] as string) : undefined;
      indexes.push({
        ...(iname !== undefined ? { name: iname } : {}),
        primary: false,
        unique: false,
        method,
        parts: indexParts(d['definition']),
        ...(opts.comment !== undefined ? { comment: opts.comment } : {}),
        invisible: opts.invisible,
      });
    } else {
      throw new DesiredStateError(
        `${where}: CREATE TABLE ${name}: a ${ctype || String(d['resource'])} definition is not supported`,
      );
    }
  }
  const opt: Record<string, string> = {};
  for (const o of list(ast['table_options'])) {
    const k = String(o['keyword'])
      .toLowerCase()
      .replace(/^default\s+/, '');
    const v = stringValue(o['value']) ?? String(o['value']);
    opt[k] = k === 'comment' ? unescape(v.replace(/^'(.*)'$/s, '$1')) : v;
  }
  const charset = opt['charset'] ?? opt['character set'];
  return {
    name,
    ...(opt['engine'] !== undefined ? { engine: opt['engine'] } : {}),
    ...(charset !== undefined ? { charset } : {}),
    ...(opt['collate'] !== undefined ? { collation: opt['collate'] } : {}),
    ...(opt['row_format'] !== undefined ? { rowFormat: opt['row_format'] } : {}),
    ...(opt['comment'] !== undefined ? { comment: opt['comment'] } : {}),
    columns,
    indexes,
    foreignKeys,
    checks,
  };
}

function parseView(text: string, where: string): RawView {
  const m =
    /^create\s+(?:or\s+replace\s+)?(?:algorithm\s*=\s*(\w+)\s+)?(?:definer\s*=\s*(?:`[^`]*`|'[^']*'|[^\s@]+)(?:@(?:`[^`]*`|'[^']*'|\S+))?\s+)?(?:sql\s+security\s+(\w+)\s+)?view\s+((?:`(?:[^`]|``)*`|[\w$]+)(?:\s*\.\s*(?:`(?:[^`]|``)*`|[\w$]+))?)\s*(?:\([^)]*\)\s*)?as\s+([\s\S]+)$/i.exec(
      text,
    );
  if (!m)
    throw new DesiredStateError(
      `${where}: cannot read this CREATE VIEW; write CREATE [ALGORITHM=…] [SQL SECURITY …] VIEW name AS SELECT …`,
    );
  let select = (m[4] ?? '').trim();
  let checkOption: string | undefined;
  const check = /\s+with\s+(?:(cascaded|local)\s+)?check\s+option\s*$/i.exec(select);
  if (check) {
    checkOption = (check[1] ?? 'cascaded').toLowerCase();
    select = select.slice(0, check.index).trim();
  }
  return {
    name: unquoteName(m[3] ?? ''),
    select,
    ...(m[1] !== undefined ? { algorithm: m[1] } : {}),
    ...(m[2] !== undefined ? { security: m[2] } : {}),
    ...(checkOption !== undefined ? { checkOption } : {}),
  };
}

/**
 * The desired model as the dialect's loadDesired returns it: tables and views are normalised only once the
 * server's facts are known, so until then they travel as raw shapes under `pending`.
 */
export const PENDING = Symbol('mysql pending desired state');

export type DesiredModel = SchemaModel & { readonly [PENDING]?: PendingModel };

export async function loadDesiredMysql(
  files: readonly { path: string; sql: string }[],
): Promise<DesiredModel> {
  const pending = parseDesired(files);
  return { ...emptyModel(), rows: pending.rows, [PENDING]: pending };
}

/** Finishes the desired model with the server's facts; a model inspected from a dev database is renamed. */
export function resolveWith(desired: DesiredModel, f: ServerFacts): SchemaModel {
  const pending = desired[PENDING];
  const tables: Table[] = pending
    ? pending.tables.map((t) => normaliseTable(t, f))
    : desired.tables.map((t) => rename(t, f.database));
  const readable = columnsOfTables(tables);
  const views: View[] = pending
    ? pending.views.map((v) => normaliseView(v, f, readable))
    : desired.views.map((v) => renameView(v, f, readable));
  return {
    ...emptyModel(f.database),
    tables,
    views,
    rows: desired.rows.map((r) => ({ ...r, schema: f.database })),
    objects: pending
      ? pending.objects.map((o) => mysqlObject(o, f.database, f.mariadb))
      : (desired.objects ?? []).map((o) => inDatabase(o, f.database)),
    unmanaged: desired.unmanaged,
  };
}

/** A view inspected in a scratch database names it in its text: the qualifier goes, the key is rebuilt. */
function renameView(v: View, f: ServerFacts, readable: ColumnsOf): View {
  const from = v.schema;
  const select = v.definition.text.split(`${quoteIdent(from)}.`).join('');
  return normaliseView(
    {
      name: v.name,
      select,
      ...(v.options?.['algorithm'] !== undefined ? { algorithm: v.options['algorithm'] } : {}),
      ...(v.options?.['security'] !== undefined ? { security: v.options['security'] } : {}),
      ...(v.options?.['check_option'] !== undefined ? { checkOption: v.options['check_option'] } : {}),
    },
    f,
    readable,
  );
}

function rename(t: Table, schema: string): Table {
  return {
    ...t,
    schema,
    constraints: t.constraints.map((c) => (c.kind === 'ForeignKey' ? { ...c, refSchema: schema } : c)),
  };
}
