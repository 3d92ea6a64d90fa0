/**
 * The one MySQL normaliser: the inspector (information_schema text) and the desired-SQL loader (parsed
 * CREATE statements) both describe tables in the raw shapes below, and only this module turns them into
 * the engine's model. Server facts (the database's default collation and engine, each character set's
 * default collation) fill what a statement leaves to the server, so the two sides meet in one normal form.
 */
import nodeSqlParser from 'node-sql-parser';
import type { Column, Constraint, Expr, FkAction, Index, IndexKey, Table, TypeRef, View } from '../model.ts';
import { respellViewSelect, tokenize } from './mysql-spelling.ts';
import { type ColumnsOf, serverSpelling } from './mysql-view-select.ts';

export type { ColumnsOf };

/** The columns of each table, for spelling views that read them as the server does. */
export function columnsOfTables(tables: readonly Table[]): ColumnsOf {
  return new Map(tables.map((t) => [t.name.toLowerCase(), t.columns.map((c) => c.name)]));
}

const parser = new nodeSqlParser.Parser();
const PARSE_OPTIONS = { database: 'MariaDB' } as const;

export function quoteIdent(name: string): string {
  return '`' + name.replace(/`/g, '``') + '`';
}

/** A string literal valid with and without NO_BACKSLASH_ESCAPES is impossible; this is the default mode. */
export function quoteLiteral(value: string): string {
  return "'" + value.replace(/\\/g, '\\\\').replace(/'/g, "''") + "'";
}

/** What the server decides when a statement does not say. Read once per inspection. */
export interface ServerFacts {
  readonly database: string;
  readonly version: string;
  readonly mariadb: boolean;
  readonly defaultCollation: string;
  readonly defaultEngine: string;
  /** Character set → its default collation. */
  readonly charsetDefault: Readonly<Record<string, string>>;
  /** Collation → its character set. */
  readonly collationCharset: Readonly<Record<string, string>>;
}

export interface RawColumn {
  readonly name: string;
  /** As information_schema.COLUMNS.COLUMN_TYPE spells it: `int(10) unsigned`, `enum('a','b')`. */
  readonly columnType: string;
  readonly nullable: boolean;
  /** SQL text of the default (a quoted literal, a number, NULL or an expression); undefined when none. */
  readonly default?: string;
  readonly onUpdate?: string;
  readonly autoIncrement: boolean;
  readonly charset?: string;
  readonly collation?: string;
  readonly generated?: { readonly expression: string; readonly storage: 'virtual' | 'stored' };
  readonly invisible: boolean;
  readonly comment?: string;
  /** A declared rename (`-- ptah:renamed-from`). */
  readonly renamedFrom?: string;
}

export interface RawIndexPart {
  readonly column?: string;
  readonly expression?: string;
  readonly length?: number;
  readonly descending: boolean;
}

export interface RawIndex {
  readonly name?: string;
  readonly primary: boolean;
  readonly unique: boolean;
  /** btree, hash, fulltext or spatial. */
  readonly method: string;
  readonly parts: readonly RawIndexPart[];
  readonly comment?: string;
  readonly invisible: boolean;
}

export interface RawForeignKey {
  readonly name?: string;
  readonly columns: readonly string[];
  readonly refTable: string;
  readonly refColumns: readonly string[];
  readonly onUpdate: string;
  readonly onDelete: string;
}

export interface RawCheck {
  readonly name?: string;
  readonly expression: string;
  /** MariaDB: a check written on a column is named after it. */
  readonly column?: string;
}

export interface RawTable {
  readonly name: string;
  readonly engine?: string;
  readonly charset?: string;
  readonly collation?: string;
  readonly rowFormat?: string;
  readonly comment?: string;
  readonly columns: readonly RawColumn[];
  readonly indexes: readonly RawIndex[];
  readonly foreignKeys: readonly RawForeignKey[];
  readonly checks: readonly RawCheck[];
  readonly renamedFrom?: string;
}

export interface RawView {
  readonly name: string;
  readonly select: string;
  readonly algorithm?: string;
  readonly security?: string;
  readonly checkOption?: string;
}

// ---------------------------------------------------------------------------------------------- types

const INTEGER_TYPES = new Set(['tinyint', 'smallint', 'mediumint', 'int', 'bigint']);
const TYPE_ALIASES: Readonly<Record<string, string>> = {
  integer: 'int',
  int4: 'int',
  int8: 'bigint',
  int2: 'smallint',
  int1: 'tinyint',
  int3: 'mediumint',
  middleint: 'mediumint',
  dec: 'decimal',
  numeric: 'decimal',
  fixed: 'decimal',
  real: 'double',
  'double precision': 'double',
  float8: 'double',
  float4: 'float',
  character: 'char',
  'character varying': 'varchar',
  'long varchar': 'mediumtext',
  long: 'mediumtext',
};
/** Types whose omitted length the server fills in. */
const DEFAULT_MODS: Readonly<Record<string, string>> = {
  decimal: '(10,0)',
  char: '(1)',
  binary: '(1)',
  bit: '(1)',
};

/** Splits a column type into its base name and what follows, canonical in case and spacing. */
export function normaliseType(columnType: string, mariadb: boolean): TypeRef {
  const text = columnType.trim();
  const m = /^([A-Za-z][A-Za-z ]*?)\s*(\(.*\))?((?:\s+(?:unsigned|signed|zerofill))*)\s*$/is.exec(text);
  if (!m) return { name: text.toLowerCase(), mods: '', array: false };
  let name = (m[1] ?? '').toLowerCase().replace(/\s+/g, ' ');
  let args = m[2] ?? '';
  const flags = (m[3] ?? '').toLowerCase().split(/\s+/).filter(Boolean);
  if (name === 'bool' || name === 'boolean') return { name: 'tinyint', mods: '(1)', array: false };
  name = TYPE_ALIASES[name] ?? name;
  if (name === 'json' && mariadb) name = 'longtext';
  if (name === 'enum' || name === 'set') {
    return { name, mods: `(${parseValueList(args).map(quoteLiteral).join(',')})`, array: false };
  }
  args = args.replace(/\s+/g, '');
  const zerofill = flags.includes('zerofill');
  const unsigned = flags.includes('unsigned') || zerofill;
  // Display widths mean nothing for integers (MySQL 8 drops them); tinyint(1) stays: it spells a boolean.
  if (INTEGER_TYPES.has(name) && !(name === 'tinyint' && args === '(1)')) args = '';
  if (name === 'float' && /^\(\d+\)$/.test(args)) {
    // FLOAT(p): the precision picks FLOAT or DOUBLE and is then forgotten.
    const p = Number(args.slice(1, -1));
    if (p > 24) name = 'double';
    args = '';
  }
  if (args === '' && DEFAULT_MODS[name] !== undefined) args = DEFAULT_MODS[name] ?? '';
  if (name === 'decimal' && /^\(\d+\)$/.test(args)) args = `(${args.slice(1, -1)},0)`;
  if ((name === 'datetime' || name === 'timestamp' || name === 'time') && args === '(0)') args = '';
  if (name === 'year' && args === '(4)') args = '';
  const suffix = `${unsigned ? ' unsigned' : ''}${zerofill ? ' zerofill' : ''}`;
  return { name, mods: args + suffix, array: false };
}

/** `('a','b''c')` → ['a', "b'c"]; accepts both ' and " quotes and backslash escapes. */
export function parseValueList(args: string): string[] {
  const out: string[] = [];
  const s = args.trim().replace(/^\(/, '').replace(/\)$/, '');
  let i = 0;
  while (i < s.length) {
    const q = s[i];
    if (q !== "'" && q !== '"') {
      i++;
      continue;
    }
    let v = '';
    i++;
    while (i < s.length) {
      const ch = s[i] as string;
      if (ch === '\\' && i + 1 < s.length) {
        const n = s[i + 1] as string;
        v += n === 'n' ? '\n' : n === 't' ? '\t' : n === '0' ? '\0' : n;
        i += 2;
      } else if (ch === q && s[i + 1] === q) {
        v += q;
        i += 2;
      } else if (ch === q) {
        i++;
        break;
      } else {
        v += ch;
        i++;
      }
    }
    out.push(v);
  }
  return out;
}

const TEXT_TYPES = new Set(['char', 'varchar', 'tinytext', 'text', 'mediumtext', 'longtext', 'enum', 'set']);

export function renderType(t: TypeRef): string {
  return `${t.name}${t.mods}`;
}

// ---------------------------------------------------------------------------------------- expressions

type Ast = unknown;

function parseExpression(text: string): Ast | undefined {
  try {
    const ast = parser.astify(`SELECT ${text}`, PARSE_OPTIONS) as unknown;
    const stmt = (Array.isArray(ast) ? ast[0] : ast) as { columns?: { expr?: Ast }[] } | undefined;
    const cols = stmt?.columns;
    return cols && cols.length === 1 ? cols[0]?.expr : undefined;
  } catch {
    return undefined;
  }
}

const FUNCTION_SYNONYMS: Readonly<Record<string, string>> = {
  now: 'current_timestamp',
  localtime: 'current_timestamp',
  localtimestamp: 'current_timestamp',
  current_timestamp: 'current_timestamp',
  curdate: 'current_date',
  current_date: 'current_date',
  curtime: 'current_time',
  current_time: 'current_time',
  // MariaDB stores LENGTH as OCTET_LENGTH, UCASE/LCASE as written; MySQL keeps LENGTH.
  length: 'octet_length',
  octet_length: 'octet_length',
  upper: 'ucase',
  ucase: 'ucase',
  lower: 'lcase',
  lcase: 'lcase',
  substring: 'substr',
  substr: 'substr',
};

interface CanonOptions {
  /** The database whose name qualifiers mean "here" and are dropped. */
  readonly schema?: string;
  /** Drop every table qualifier of a column (defaults, checks and generated columns see one table). */
  readonly dropTableQualifiers: boolean;
}

/**
 * A parse tree reduced to what it means: no null or empty fields, no parentheses flags (the tree holds the
 * precedence), identifiers lower-cased (MySQL compares column names case-insensitively), one spelling per
 * function and string quote, no qualifier naming the database itself.
 */
function canon(node: unknown, o: CanonOptions, fromTables: readonly string[]): unknown {
  if (Array.isArray(node)) return node.map((x) => canon(x, o, fromTables));
  if (node === null || typeof node !== 'object') return node;
  const n = node as Record<string, unknown>;
  // A quoted name is the name.
  if (n['type'] === 'backticks_quote_string' && typeof n['value'] === 'string')
    return canon(n['value'], o, fromTables);
  if (n['type'] === 'column_ref') {
    for (const k of ['db', 'table'] as const) {
      const q = n[k] as { type?: unknown; value?: unknown } | null | undefined;
      if (q && typeof q === 'object' && typeof q.value === 'string') n[k] = q.value;
    }
  }
  const out: Record<string, unknown> = {};
  const type = n['type'];
  for (const [k, v] of Object.entries(n)) {
    // tableList and columnList: the grammar's notes on what a subquery reads, in its own spelling.
    if (
      v === null ||
      v === undefined ||
      ['parentheses', 'loc', 'collate', 'tableList', 'columnList'].includes(k)
    )
      continue;
    if (k === 'db' && typeof v === 'string' && o.schema !== undefined && v === o.schema) continue;
    if (Array.isArray(v) && v.length === 0 && k !== 'value') continue;
    out[k] = canon(v, o, fromTables);
  }
  if (type === 'single_quote_string' || type === 'double_quote_string' || type === 'string')
    out['type'] = 'string';
  if (type === 'column_ref') {
    const col = out['column'];
    if (typeof col === 'string') out['column'] = col.toLowerCase();
    else if (
      col &&
      typeof col === 'object' &&
      typeof (col as { expr?: { value?: unknown } }).expr?.value === 'string'
    )
      out['column'] = String((col as { expr: { value: string } }).expr.value).toLowerCase();
    const t = out['table'];
    if (o.dropTableQualifiers || (typeof t === 'string' && fromTables.length === 1 && fromTables[0] === t))
      delete out['table'];
  }
  if (type === 'function') {
    const name = functionName(n['name']);
    if (name !== undefined) out['name'] = FUNCTION_SYNONYMS[name] ?? name;
    // CURRENT_TIMESTAMP and CURRENT_TIMESTAMP() are one function.
    if (out['args'] === undefined) out['args'] = { type: 'expr_list', value: [] };
    delete out['over'];
  }
  if (type === 'number' && typeof n['value'] === 'number') out['value'] = String(n['value']);
  // `x IN (v)` is `x = v`, as the server stores it.
  if (type === 'binary_expr' && String(n['operator']).toUpperCase() === 'IN') {
    const right = out['right'] as { type?: unknown; value?: unknown } | undefined;
    if (right?.type === 'expr_list' && Array.isArray(right.value) && right.value.length === 1)
      return { ...out, operator: '=', right: right.value[0] };
  }
  // ASC is the default direction; SEPARATOR and other keywords in any case.
  if (out['type'] === 'ASC' && out['expr'] !== undefined) delete out['type'];
  if (typeof out['keyword'] === 'string') out['keyword'] = out['keyword'].toLowerCase();
  return out;
}

function functionName(name: unknown): string | undefined {
  if (typeof name === 'string') return name.toLowerCase();
  const parts = (name as { name?: { value?: unknown }[] } | undefined)?.name;
  if (!Array.isArray(parts)) return undefined;
  return parts
    .map((p) => String(p.value ?? ''))
    .join('.')
    .toLowerCase();
}

/** Falls back to the text without quotes and spacing when the grammar cannot read it. */
function textKey(text: string): string {
  return JSON.stringify(['text', text.replace(/[`\s]/g, '').toLowerCase()]);
}

/** Parsing is the engine's main cost; a schema repeats its defaults and checks, so keys are kept. */
const EXPRESSION_KEYS = new Map<string, string>();
const EXPRESSION_KEYS_MAX = 50_000;

export function expressionKey(text: string, schema?: string): string {
  const id = JSON.stringify([text, schema ?? null]);
  const known = EXPRESSION_KEYS.get(id);
  if (known !== undefined) return known;
  const ast = parseExpression(text);
  const key =
    ast === undefined ? textKey(text) : JSON.stringify(canon(ast, { schema, dropTableQualifiers: true }, []));
  if (EXPRESSION_KEYS.size >= EXPRESSION_KEYS_MAX) EXPRESSION_KEYS.clear();
  EXPRESSION_KEYS.set(id, key);
  return key;
}

export function expr(text: string, schema?: string): Expr {
  return { text, key: expressionKey(text, schema) };
}

/** The text of a parsed expression, for rendering what the desired SQL wrote. */
export function exprText(ast: unknown): string {
  try {
    return parser.exprToSQL(ast as never, PARSE_OPTIONS);
  } catch {
    return '';
  }
}

/** Names after FROM and JOIN (a database qualifier skipped): what a view reads, when the grammar cannot say. */
function readsByText(select: string): { relname: string }[] {
  const names = new Set<string>();
  const s = tokenize(select).filter((t) => t.kind !== 'space' && t.kind !== 'comment');
  const ident = (t: { kind: string; text: string } | undefined) =>
    t?.kind === 'quoted' ? t.text.slice(1, -1).replace(/``/g, '`') : t?.kind === 'word' ? t.text : undefined;
  for (let k = 0; k < s.length; k++) {
    const w = s[k];
    if (w?.kind !== 'word' || !/^(from|join)$/i.test(w.text)) continue;
    let at = k + 1;
    while (s[at]?.text === '(') at++;
    let name = ident(s[at]);
    if (name !== undefined && s[at + 1]?.text === '.') name = ident(s[at + 2]) ?? name;
    // `from (select …)` reads what the subquery reads, found at its own FROM.
    if (name !== undefined && !(s[at]?.kind === 'word' && /^(select|with)$/i.test(name))) names.add(name);
  }
  return [...names].sort().map((relname) => ({ relname }));
}

/**
 * A view's SELECT, canonical: qualifiers naming the database dropped, a single table's qualifier dropped,
 * `col AS col` reduced to `col`. The key also lists every table read as `"relname":"t"`, the convention
 * the diff uses to recreate views whose tables change.
 */
export function viewKey(
  select: string,
  schema: string,
  options: Readonly<Record<string, string>>,
  columnsOf: ColumnsOf = new Map(),
): string {
  let ast: unknown;
  try {
    ast = parser.astify(respellViewSelect(select), PARSE_OPTIONS);
  } catch {
    return JSON.stringify({ reads: readsByText(select), options, text: textKey(select) });
  }
  // Both sides are spelled as the server stores a view: qualified, `*` expanded, joins in one form.
  serverSpelling(ast, columnsOf);
  const reads = new Set<string>(readsByText(select).map((r) => r.relname));
  const collect = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(collect);
    if (node === null || typeof node !== 'object') return;
    const n = node as Record<string, unknown>;
    if (Array.isArray(n['from']))
      for (const f of n['from'] as { table?: unknown }[]) if (typeof f.table === 'string') reads.add(f.table);
    Object.values(n).forEach(collect);
  };
  collect(ast);
  const stmt = (Array.isArray(ast) ? ast[0] : ast) as Record<string, unknown>;
  const from = Array.isArray(stmt['from'])
    ? (stmt['from'] as { table?: unknown; as?: unknown }[]).flatMap((f) =>
        typeof f.table === 'string' ? [typeof f.as === 'string' ? f.as : f.table] : [],
      )
    : [];
  const columns = Array.isArray(stmt['columns'])
    ? (stmt['columns'] as { expr?: { type?: string; column?: unknown }; as?: unknown }[]).map((c) => {
        const col = typeof c.expr?.column === 'string' ? c.expr.column : undefined;
        return c.expr?.type === 'column_ref' && typeof c.as === 'string' && col !== undefined && c.as === col
          ? { ...c, as: null }
          : c;
      })
    : stmt['columns'];
  const tree = canon({ ...stmt, columns }, { schema, dropTableQualifiers: false }, from);
  return JSON.stringify({
    reads: [...reads].sort().map((r) => ({ relname: r })),
    options,
    tree,
  });
}

// ---------------------------------------------------------------------------------------- defaults

const NUMERIC = /^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i;

/**
 * A default, keyed as the server stores it: a literal by its value (numbers canonical for numeric
 * columns), an expression by its parse tree. `NULL` on a nullable column is no default at all.
 */
export function defaultExpr(text: string | undefined, type: TypeRef, schema?: string): Expr | undefined {
  if (text === undefined) return undefined;
  const t = text.trim();
  if (/^null$/i.test(t)) return undefined;
  const literal = literalValue(t);
  if (literal !== undefined) {
    let v = literal;
    const numericType =
      INTEGER_TYPES.has(type.name) || ['decimal', 'float', 'double', 'bit'].includes(type.name);
    if (numericType && NUMERIC.test(v)) v = canonicalNumber(v, type);
    if (/^(true|false)$/i.test(t)) v = /^true$/i.test(t) ? '1' : '0';
    return { text: t, key: JSON.stringify(['literal', v]) };
  }
  return { text: t, key: expressionKey(t, schema) };
}

function literalValue(t: string): string | undefined {
  if (NUMERIC.test(t)) return t;
  if (/^(true|false)$/i.test(t)) return t;
  if (/^'(?:[^'\\]|''|\\.)*'$/s.test(t) || /^"(?:[^"\\]|""|\\.)*"$/s.test(t))
    return parseValueList(t)[0] ?? '';
  // _utf8mb4'x' and N'x' introducers spell a string too.
  const intro = /^(?:_[a-z0-9]+|n)('.*')$/is.exec(t);
  if (intro) return parseValueList(intro[1] ?? "''")[0] ?? '';
  return undefined;
}

function canonicalNumber(v: string, type: TypeRef): string {
  if (type.name === 'decimal') {
    const scale = Number(/\(\d+,(\d+)\)/.exec(type.mods)?.[1] ?? 0);
    const n = Number(v);
    return Number.isFinite(n) ? n.toFixed(scale) : v;
  }
  const n = Number(v);
  return Number.isFinite(n) ? String(n) : v;
}

// ----------------------------------------------------------------------------------------- the model

const FK_ACTIONS: Readonly<Record<string, FkAction>> = {
  'no action': 'no action',
  restrict: 'restrict',
  cascade: 'cascade',
  'set null': 'set null',
  'set default': 'set default',
};

function fkAction(a: string): FkAction {
  // MySQL treats NO ACTION as RESTRICT and reports what was written; both mean "refuse".
  const v = FK_ACTIONS[a.trim().toLowerCase()] ?? 'restrict';
  return v === 'no action' ? 'restrict' : v;
}

/** The desired-SQL loader's spelling of the BINARY attribute: the character set's `_bin` collation. */
export const BINARY_COLLATION = 'ptah_charset_bin';

/** `utf8` is `utf8mb3` on MariaDB 10.6+ and MySQL 8, in character set and collation names alike. */
function charsetName(name: string, f: ServerFacts): string {
  const n = name.toLowerCase();
  return n === 'utf8' && f.charsetDefault['utf8'] === undefined ? 'utf8mb3' : n;
}

function collationName(name: string, f: ServerFacts): string {
  const n = name.toLowerCase();
  return n.startsWith('utf8_') && f.collationCharset[n] === undefined ? `utf8mb3_${n.slice(5)}` : n;
}

function collationOf(
  charset: string | undefined,
  collation: string | undefined,
  f: ServerFacts,
  fallback: string,
): string {
  if (collation !== undefined && collation.toLowerCase() === BINARY_COLLATION) {
    const cs =
      charset !== undefined
        ? charsetName(charset, f)
        : (f.collationCharset[fallback] ?? fallback.split('_')[0] ?? '');
    return `${cs}_bin`;
  }
  if (collation !== undefined) return collationName(collation, f);
  if (charset !== undefined) {
    const cs = charsetName(charset, f);
    return f.charsetDefault[cs] ?? `${cs}_general_ci`;
  }
  return fallback;
}

/**
 * MariaDB gives a NOT NULL column with ON UPDATE and no DEFAULT the zero date as its default: the server's
 * doing, not a declaration, so it is read as no default (and a plan without one recreates it the same way).
 */
function zeroDefaultOfOnUpdate(c: RawColumn, f: ServerFacts): boolean {
  return (
    f.mariadb &&
    c.onUpdate !== undefined &&
    !c.nullable &&
    /^'0000-00-00(?: 00:00:00(?:\.0+)?)?'$/.test(c.default?.trim() ?? '')
  );
}

/** A table in the normal form both sides share. */
export function normaliseTable(raw: RawTable, f: ServerFacts): Table {
  const schema = f.database;
  const tableCollation = collationOf(raw.charset, raw.collation, f, f.defaultCollation);
  const options: Record<string, string> = {
    engine: (raw.engine ?? f.defaultEngine).toLowerCase(),
    collation: tableCollation,
  };
  if (raw.rowFormat !== undefined && raw.rowFormat.toLowerCase() !== 'default')
    options['row_format'] = raw.rowFormat.toLowerCase();
  const checks: Constraint[] = [];
  const columns: Column[] = raw.columns.map((c) => {
    let type = normaliseType(c.columnType, f.mariadb);
    const isJson = /^json\b/i.test(c.columnType.trim());
    let collation: string | undefined;
    if (TEXT_TYPES.has(type.name)) {
      const coll =
        isJson && f.mariadb ? 'utf8mb4_bin' : collationOf(c.charset, c.collation, f, tableCollation);
      collation = coll === tableCollation ? undefined : coll;
    }
    if (isJson && f.mariadb) {
      // MariaDB's JSON is LONGTEXT with a json_valid check named after the column.
      type = { name: 'longtext', mods: '', array: false };
      checks.push({ kind: 'Check', name: c.name, expression: expr(`json_valid(${quoteIdent(c.name)})`) });
    }
    const col: Column = {
      kind: 'Column',
      name: c.name,
      type,
      // A column in the primary key is NOT NULL whether or not it says so.
      notNull: !c.nullable || raw.indexes.some((i) => i.primary && i.parts.some((p) => p.column === c.name)),
      ...(c.generated === undefined &&
      !zeroDefaultOfOnUpdate(c, f) &&
      defaultExpr(c.default, type, schema) !== undefined
        ? { default: defaultExpr(c.default, type, schema) as Expr }
        : {}),
      ...(c.autoIncrement ? { identity: 'by default' as const } : {}),
      ...(c.generated !== undefined
        ? {
            generated: {
              text: c.generated.expression,
              key: JSON.stringify([expressionKey(c.generated.expression, schema), c.generated.storage]),
            },
            generatedStorage: c.generated.storage,
          }
        : {}),
      ...(collation !== undefined ? { collation } : {}),
      ...(c.comment !== undefined && c.comment !== '' ? { comment: c.comment } : {}),
      ...(c.onUpdate !== undefined ? { onUpdate: expr(c.onUpdate, schema) } : {}),
      ...(c.renamedFrom !== undefined ? { renamedFrom: c.renamedFrom } : {}),
      ...(c.invisible ? { invisible: true } : {}),
    };
    return col;
  });
  const constraints: Constraint[] = [];
  const pk = raw.indexes.find((i) => i.primary);
  if (pk) constraints.push({ kind: 'PrimaryKey', columns: pk.parts.map((p) => p.column ?? '') });
  for (const fk of raw.foreignKeys) {
    constraints.push({
      kind: 'ForeignKey',
      ...(fk.name !== undefined ? { name: fk.name } : {}),
      columns: fk.columns,
      refSchema: schema,
      refTable: fk.refTable,
      refColumns: fk.refColumns,
      onUpdate: fkAction(fk.onUpdate),
      onDelete: fkAction(fk.onDelete),
      matchFull: false,
      deferrable: false,
      initiallyDeferred: false,
    });
  }
  const checkNames = new Set(checks.map((c) => c.name));
  for (const ck of raw.checks) {
    if (ck.name !== undefined && checkNames.has(ck.name)) continue;
    // MariaDB names an unnamed column check after its column; MySQL numbers it (t_chk_1).
    const name = ck.name ?? (f.mariadb ? ck.column : undefined);
    checks.push({
      kind: 'Check',
      ...(name !== undefined ? { name } : {}),
      expression: expr(ck.expression, schema),
    });
  }
  constraints.push(...checks);
  const indexes = withForeignKeyIndexes(nameIndexes(raw.indexes.filter((i) => !i.primary)), raw);
  return {
    kind: 'Table',
    schema,
    name: raw.name,
    columns,
    constraints,
    indexes: indexes.map((i) => normaliseIndex(i, f)),
    ...(raw.comment !== undefined && raw.comment !== '' ? { comment: raw.comment } : {}),
    ...(raw.renamedFrom !== undefined ? { renamedFrom: raw.renamedFrom } : {}),
    options,
  };
}

/**
 * A foreign key needs an index whose leading columns are its own; where none exists MySQL creates one named
 * after the key. Adding it here, on both sides, keeps a desired state that leaves it out from planning a
 * drop of the index the server made.
 */
function withForeignKeyIndexes(indexes: RawIndex[], raw: RawTable): RawIndex[] {
  const out = [...indexes];
  const leads = (i: RawIndex, cols: readonly string[]) =>
    cols.every(
      (c, n) => i.parts[n]?.column?.toLowerCase() === c.toLowerCase() && i.parts[n]?.length === undefined,
    );
  for (const fk of raw.foreignKeys) {
    if (out.some((i) => leads(i, fk.columns)) || raw.indexes.some((i) => i.primary && leads(i, fk.columns)))
      continue;
    const name = fk.name ?? fk.columns[0] ?? 'fk';
    out.push({
      name,
      primary: false,
      unique: false,
      method: 'btree',
      parts: fk.columns.map((column) => ({ column, descending: false })),
      invisible: false,
    });
  }
  return out;
}

/** MySQL names an unnamed index after its first column (`c`, then `c_2`, `c_3`). */
function nameIndexes(list: readonly RawIndex[]): RawIndex[] {
  const taken = new Set(list.flatMap((i) => (i.name !== undefined ? [i.name.toLowerCase()] : [])));
  return list.map((i) => {
    if (i.name !== undefined) return i;
    const base = i.parts[0]?.column ?? 'functional_index';
    let name = base;
    for (let n = 2; taken.has(name.toLowerCase()); n++) name = `${base}_${n}`;
    taken.add(name.toLowerCase());
    return { ...i, name };
  });
}

function normaliseIndex(i: RawIndex, f: ServerFacts): Index {
  const schema = f.database;
  const keys: IndexKey[] = i.parts.map((p) => ({
    ...(p.column !== undefined ? { column: p.column } : {}),
    ...(p.expression !== undefined ? { expression: expr(p.expression, schema) } : {}),
    // FULLTEXT and SPATIAL keys have no direction.
    descending: i.method === 'btree' && p.descending,
    // MariaDB reports a SPATIAL key's internal length (32): not something a statement says.
    ...(p.length !== undefined && i.method !== 'spatial' ? { length: p.length } : {}),
  }));
  return {
    kind: 'Index',
    ...(i.name !== undefined ? { name: i.name } : {}),
    unique: i.unique,
    method: i.method,
    keys,
    include: [],
    nullsNotDistinct: false,
    ...(i.comment !== undefined && i.comment !== '' ? { comment: i.comment } : {}),
    ...(i.invisible ? { invisible: true, invisibleAs: f.mariadb ? 'IGNORED' : 'INVISIBLE' } : {}),
  };
}

/** `columnsOf`: the columns of the tables the view may read, for spelling it as the server does. */
export function normaliseView(raw: RawView, f: ServerFacts, columnsOf: ColumnsOf = new Map()): View {
  const options: Record<string, string> = {
    algorithm: (raw.algorithm ?? 'undefined').toLowerCase(),
    security: (raw.security ?? 'definer').toLowerCase(),
  };
  const check = (raw.checkOption ?? 'none').toLowerCase();
  if (check !== 'none') options['check_option'] = check === 'local' ? 'local' : 'cascaded';
  // The server qualifies every name with the database: the text says it without, so it applies anywhere
  // and compares equal to a desired text that never named the database.
  const select = raw.select.split(`${quoteIdent(f.database)}.`).join('');
  return {
    kind: 'View',
    schema: f.database,
    name: raw.name,
    definition: { text: select, key: viewKey(select, f.database, options, columnsOf) },
    options,
  };
}
