/**
 * The one PostgreSQL normaliser. Desired SQL and the catalog's own deparsed text (pg_get_expr,
 * pg_get_indexdef, pg_get_constraintdef, pg_get_viewdef, format_type) are parsed by the same real
 * PostgreSQL grammar and reduced here to canonical forms, so equal meaning gives equal keys.
 */
import { deparseSync } from 'pgsql-deparser';
import type { Expr, TypeRef } from '../model.ts';
import { DEFAULT_SCHEMA } from '../model.ts';

/** A node of libpg-query's JSON AST: `{ NodeType: { ...fields } }` or a bare field record. */
export type AstNode = Record<string, unknown>;

export function isRecord(x: unknown): x is AstNode {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

/** The items of a parse tree's list, `{List: {items}}` or a bare array; undefined for anything else. */
export function listItems(node: unknown): unknown[] | undefined {
  const items = isRecord(node) && isRecord(node['List']) ? node['List']['items'] : node;
  return Array.isArray(items) ? items : undefined;
}

/**
 * The `sval`s of a parse tree's name list, `[{String: {sval}}, ...]` or `{List: {items}}`; undefined when
 * any item is not a name (unlike `names`, which reads such an item as '').
 */
export function nameList(node: unknown): string[] | undefined {
  const out = listItems(node)?.map((i) =>
    isRecord(i) && isRecord(i['String']) ? i['String']['sval'] : undefined,
  );
  return out?.every((x): x is string => typeof x === 'string') === true ? out : undefined;
}

/** `{String: {sval}}` list → strings. */
export function names(list: unknown): string[] {
  if (!Array.isArray(list)) return [];
  return list.map((n) => {
    if (isRecord(n) && isRecord(n['String'])) return String(n['String']['sval'] ?? '');
    return '';
  });
}

/** The value of an A_Const as text, or null for NULL. */
export function constText(c: AstNode): string | null {
  if (c['isnull'] === true) return null;
  if (isRecord(c['ival'])) return String(c['ival']['ival'] ?? 0);
  if (isRecord(c['fval'])) return String(c['fval']['fval'] ?? '0');
  if (isRecord(c['sval'])) return String(c['sval']['sval'] ?? '');
  if (isRecord(c['boolval'])) return c['boolval']['boolval'] === true ? 'true' : 'false';
  if (isRecord(c['bsval'])) return String(c['bsval']['bsval'] ?? '');
  return null;
}

const DROPPED_FIELDS = new Set(['location', 'stmt_location', 'stmt_len']);

/** Built-in type names as format_type prints them, keyed by the parser's internal names. */
const BUILTIN_TYPES: Readonly<Record<string, string>> = {
  int2: 'smallint',
  int4: 'integer',
  int8: 'bigint',
  float4: 'real',
  float8: 'double precision',
  bool: 'boolean',
  varchar: 'character varying',
  bpchar: 'character',
  timestamp: 'timestamp without time zone',
  timestamptz: 'timestamp with time zone',
  time: 'time without time zone',
  timetz: 'time with time zone',
  varbit: 'bit varying',
  numeric: 'numeric',
  decimal: 'numeric',
  interval: 'interval',
  bit: 'bit',
  // Names a user may write that the grammar does not rewrite, in their format_type spelling.
  int: 'integer',
  integer: 'integer',
  smallint: 'smallint',
  bigint: 'bigint',
  real: 'real',
  boolean: 'boolean',
  text: 'text',
  bytea: 'bytea',
  date: 'date',
  uuid: 'uuid',
  json: 'json',
  jsonb: 'jsonb',
  xml: 'xml',
  inet: 'inet',
  cidr: 'cidr',
  macaddr: 'macaddr',
  macaddr8: 'macaddr8',
  money: 'money',
  tsvector: 'tsvector',
  tsquery: 'tsquery',
  oid: 'oid',
  point: 'point',
  line: 'line',
  lseg: 'lseg',
  box: 'box',
  path: 'path',
  polygon: 'polygon',
  circle: 'circle',
  int4range: 'int4range',
  int8range: 'int8range',
  numrange: 'numrange',
  tsrange: 'tsrange',
  tstzrange: 'tstzrange',
  daterange: 'daterange',
  regclass: 'regclass',
  name: 'name',
  // Only the quoted "char" reaches here (unquoted char is pg_catalog.bpchar): the one-byte internal type,
  // which format_type prints quoted. Rendered as `character` it became character(1).
  char: '"char"',
  character: 'character',
  'character varying': 'character varying',
  'double precision': 'double precision',
  // pg_catalog's other types: PostgreSQL resolves an unqualified name in pg_catalog first, so these are
  // never a user schema's (a dbmirror table's tid column, a replication slot's pg_lsn).
  tid: 'tid',
  xid: 'xid',
  xid8: 'xid8',
  cid: 'cid',
  pg_lsn: 'pg_lsn',
  pg_snapshot: 'pg_snapshot',
  txid_snapshot: 'txid_snapshot',
  int2vector: 'int2vector',
  oidvector: 'oidvector',
  regproc: 'regproc',
  regprocedure: 'regprocedure',
  regoper: 'regoper',
  regoperator: 'regoperator',
  regtype: 'regtype',
  regrole: 'regrole',
  regnamespace: 'regnamespace',
  regconfig: 'regconfig',
  regdictionary: 'regdictionary',
  regcollation: 'regcollation',
  refcursor: 'refcursor',
  jsonpath: 'jsonpath',
  aclitem: 'aclitem',
  int4multirange: 'int4multirange',
  int8multirange: 'int8multirange',
  nummultirange: 'nummultirange',
  tsmultirange: 'tsmultirange',
  tstzmultirange: 'tstzmultirange',
  datemultirange: 'datemultirange',
};

export const SERIAL_TYPES: Readonly<Record<string, string>> = {
  smallserial: 'smallint',
  serial2: 'smallint',
  serial: 'integer',
  serial4: 'integer',
  bigserial: 'bigint',
  serial8: 'bigint',
};

function typmodText(mods: unknown): string[] {
  if (!Array.isArray(mods)) return [];
  return mods.map((m) => {
    if (isRecord(m) && isRecord(m['A_Const'])) return constText(m['A_Const']) ?? '';
    if (isRecord(m) && isRecord(m['ColumnRef'])) return names(m['ColumnRef']['fields']).join('.');
    return '';
  });
}

/**
 * A parser TypeName → canonical TypeRef (format_type spelling for built-ins, schema-qualified otherwise: an
 * unqualified user type lives in `defaultSchema`).
 */
export function typeRefFromAst(typeName: AstNode, defaultSchema: string): { type: TypeRef; serial: boolean } {
  const parts = names(typeName['names']);
  const array = Array.isArray(typeName['arrayBounds']) && typeName['arrayBounds'].length > 0;
  let mods = typmodText(typeName['typmods']);
  let schema: string | undefined;
  let name: string;
  if (parts.length === 2 && parts[0] === 'pg_catalog') {
    name = parts[1] ?? '';
  } else if (parts.length >= 2) {
    schema = parts[parts.length - 2];
    name = parts[parts.length - 1] ?? '';
  } else {
    name = parts[0] ?? '';
  }
  let serial = false;
  if (schema === undefined) {
    const serialBase = SERIAL_TYPES[name];
    if (serialBase !== undefined) {
      serial = true;
      name = serialBase;
    }
    const builtin = BUILTIN_TYPES[name];
    if (builtin !== undefined) name = builtin;
    else schema = defaultSchema;
  }
  if (schema === undefined && name === 'numeric' && mods.length === 1) mods = [mods[0] ?? '', '0'];
  const interval = schema === undefined && name === 'interval' ? intervalMods(mods) : undefined;
  return {
    type: {
      ...(schema === undefined ? {} : { schema }),
      name,
      mods: interval ?? (mods.length > 0 ? `(${mods.join(',')})` : ''),
      array,
    },
    serial,
  };
}

/**
 * The parser gives an interval's fields as a bit mask and its precision after it (`interval day to
 * second(3)` is (7176, 3), `interval(3)` (32767, 3)); written as numbers, `interval(7176,3)` does not parse
 * and `interval(4)` means a precision, not YEAR. Spelled as PostgreSQL's format_type spells them.
 */
function intervalMods(mods: readonly string[]): string | undefined {
  const [mask, precision] = mods;
  if (mask === undefined) return undefined;
  const fields = mask === INTERVAL_FULL_RANGE ? '' : INTERVAL_FIELDS[mask];
  if (fields === undefined) return undefined;
  return `${fields === '' ? '' : ` ${fields}`}${precision === undefined ? '' : `(${precision})`}`;
}

const INTERVAL_FULL_RANGE = '32767';
/** INTERVAL_MASK's combinations (src/include/utils/timestamp.h: MONTH 2, YEAR 4, DAY 8, HOUR 1024, ...). */
const INTERVAL_FIELDS: Readonly<Record<string, string>> = {
  '4': 'year',
  '2': 'month',
  '8': 'day',
  '1024': 'hour',
  '2048': 'minute',
  '4096': 'second',
  '6': 'year to month',
  '1032': 'day to hour',
  '3080': 'day to minute',
  '7176': 'day to second',
  '3072': 'hour to minute',
  '7168': 'hour to second',
  '6144': 'minute to second',
};

/**
 * A name without the qualifier PostgreSQL would resolve anyway: pg_catalog, or the default schema the
 * unqualified names of the desired state live in. pg_dump qualifies everything (`public.f()`), the catalog's
 * deparsers only what is outside the search path, so both spellings must meet.
 */
function unqualified(parts: string[], ds: string): string[] {
  return parts.length === 2 && (parts[0] === 'pg_catalog' || parts[0] === ds) ? parts.slice(1) : parts;
}

/**
 * A collation's or operator class's name as the SQL that names it: quoted, and qualified only when
 * PostgreSQL would not find it anyway (pg_catalog's `"C"`, the default schema's own), so `COLLATE "C"`,
 * `COLLATE pg_catalog."C"` and the catalog's spelling meet, and `COLLATE s.c` keeps its schema.
 */
export function resolvedNameSql(parts: string[], ds: string): string {
  return unqualified(parts, ds).map(quoteIdent).join('.');
}

/** The regclass literal of nextval('public.s'): parsed as PostgreSQL reads it, then unqualified the same way. */
function regclassLiteral(arg: unknown, ds: string): unknown {
  if (!isRecord(arg) || !isRecord(arg['A_Const']) || typeof arg['A_Const']['v'] !== 'string') return arg;
  const raw = arg['A_Const']['v'];
  const parts = (raw.match(/"(?:[^"]|"")*"|[^.]+/g) ?? []).map((p) =>
    p.startsWith('"') ? p.slice(1, -1).replace(/""/g, '"') : p.toLowerCase(),
  );
  const plain = unqualified(parts, ds).map((p) =>
    /^[a-z_][a-z0-9_$]*$/.test(p) ? p : `"${p.replace(/"/g, '""')}"`,
  );
  return { A_Const: { v: plain.join('.') } };
}

/** Text search functions whose first argument, when they have two or more, is a configuration. */
const TEXT_SEARCH_CONFIG_FIRST = new Set([
  'to_tsvector',
  'to_tsquery',
  'plainto_tsquery',
  'phraseto_tsquery',
  'websearch_to_tsquery',
]);

/** Strips positions and rewrites equivalent spellings into one. The result is only ever compared. */
function canon(node: unknown, ds: string): unknown {
  if (Array.isArray(node)) return node.map((x) => canon(x, ds));
  if (!isRecord(node)) return node;
  if (isRecord(node['TypeCast'])) {
    // The catalog adds casts to constants and columns (`(0)::numeric`, `(name)::text`); the meaning a
    // declaration compares on is the same without them. A typed literal whose stored spelling differs
    // (`boolean 'yes'` is stored `true`, `'1.00'::money` is `'$1.00'::money`) compares by its value.
    const arg = node['TypeCast']['arg'];
    const type = names((node['TypeCast']['typeName'] as AstNode | undefined)?.['names']).pop();
    const text = isRecord(arg) && isRecord(arg['A_Const']) ? constText(arg['A_Const']) : null;
    if (text !== null && type === 'bool') {
      const b = BOOLEAN_SPELLINGS[text.trim().toLowerCase()];
      if (b !== undefined) return { A_Const: { boolval: b } };
    }
    if (text !== null && type === 'money') {
      const n = Number(text.replace(/[^0-9.-]/g, ''));
      if (Number.isFinite(n)) return { A_Const: { v: String(n) } };
    }
    // The catalog prints a text search configuration or dictionary bare where the path finds it.
    if (text !== null && (type === 'regconfig' || type === 'regdictionary'))
      return regclassLiteral(canon(arg, ds), ds);
    return canon(arg, ds);
  }
  if (isRecord(node['A_Const'])) {
    const c = node['A_Const'];
    if (c['isnull'] === true) return { A_Const: { isnull: true } };
    if (isRecord(c['boolval'])) return { A_Const: { boolval: c['boolval']['boolval'] === true } };
    // A bit-string literal (b'0101', x'5') is stored as the text of its bits ('0101'::bit).
    if (isRecord(c['bsval'])) return { A_Const: { v: bitsOf(String(c['bsval']['bsval'] ?? '')) } };
    return { A_Const: { v: constText(c) } };
  }
  if (isRecord(node['A_Expr'])) {
    const e = node['A_Expr'];
    const kind = e['kind'];
    const op = names(e['name'])[0] ?? '';
    const rexpr = e['rexpr'];
    const list = Array.isArray(rexpr)
      ? rexpr
      : isRecord(rexpr) && isRecord(rexpr['List'])
        ? (rexpr['List']['items'] as unknown[])
        : undefined;
    // A row compared with a row is stored as its columns compared one by one.
    const rowArgs = (x: unknown) =>
      isRecord(x) && isRecord(x['RowExpr'])
        ? ((x['RowExpr']['args'] as unknown[] | undefined) ?? [])
        : undefined;
    const rowCompare = (l: unknown[], r: unknown[], o: string): unknown =>
      l.length === 1
        ? { A_Expr: { kind: 'AEXPR_OP', name: [{ String: { sval: o } }], lexpr: l[0], rexpr: r[0] } }
        : {
            BoolExpr: {
              boolop: o === '=' ? 'AND_EXPR' : 'OR_EXPR',
              args: l.map((x, i) => ({
                A_Expr: { kind: 'AEXPR_OP', name: [{ String: { sval: o } }], lexpr: x, rexpr: r[i] },
              })),
            },
          };
    const lrow = rowArgs(e['lexpr']);
    if (kind === 'AEXPR_OP' && (op === '=' || op === '<>') && lrow && rowArgs(rexpr)?.length === lrow.length)
      return canon(rowCompare(lrow, rowArgs(rexpr) ?? [], op), ds);
    if (kind === 'AEXPR_IN' && list && lrow && list.every((x) => rowArgs(x)?.length === lrow.length)) {
      const each = list.map((x) => rowCompare(lrow, rowArgs(x) ?? [], op));
      return canon(
        each.length === 1
          ? each[0]
          : { BoolExpr: { boolop: op === '=' ? 'OR_EXPR' : 'AND_EXPR', args: each } },
        ds,
      );
    }
    // `x IS [NOT] DISTINCT FROM NULL` is stored as `x IS [NOT] NULL`.
    const isNull = (x: unknown) => isRecord(x) && isRecord(x['A_Const']) && x['A_Const']['isnull'] === true;
    if ((kind === 'AEXPR_DISTINCT' || kind === 'AEXPR_NOT_DISTINCT') && isNull(rexpr))
      return canon(
        {
          NullTest: { arg: e['lexpr'], nulltesttype: kind === 'AEXPR_DISTINCT' ? 'IS_NOT_NULL' : 'IS_NULL' },
        },
        ds,
      );
    // `x IN ('a')` is stored as `x = 'a'` (and NOT IN as <>).
    if (kind === 'AEXPR_IN' && list?.length === 1)
      return canon({ A_Expr: { kind: 'AEXPR_OP', name: e['name'], lexpr: e['lexpr'], rexpr: list[0] } }, ds);
    if (kind === 'AEXPR_IN' && list) {
      return canon(
        {
          A_Expr: {
            kind: op === '=' ? 'AEXPR_OP_ANY' : 'AEXPR_OP_ALL',
            name: e['name'],
            lexpr: e['lexpr'],
            rexpr: { A_ArrayExpr: { elements: list } },
          },
        },
        ds,
      );
    }
    if ((kind === 'AEXPR_BETWEEN' || kind === 'AEXPR_NOT_BETWEEN') && list) {
      const [lo, hi] = list;
      const not = kind === 'AEXPR_NOT_BETWEEN';
      const cmp = (o: string, r: unknown) => ({
        A_Expr: { kind: 'AEXPR_OP', name: [{ String: { sval: o } }], lexpr: e['lexpr'], rexpr: r },
      });
      return canon(
        {
          BoolExpr: {
            boolop: not ? 'OR_EXPR' : 'AND_EXPR',
            args: [cmp(not ? '<' : '>=', lo), cmp(not ? '>' : '<=', hi)],
          },
        },
        ds,
      );
    }
    const opName = names(e['name']);
    if (opName.length === 2 && unqualified(opName, ds).length === 1) {
      // OPERATOR(public.~) as pg_dump writes an operator from an extension in the default schema.
      return canon({ A_Expr: { ...e, name: [{ String: { sval: opName[1] } }] } }, ds);
    }
    if (kind === 'AEXPR_LIKE' || kind === 'AEXPR_ILIKE') {
      return canon({ A_Expr: { ...e, kind: 'AEXPR_OP' } }, ds);
    }
  }
  if (isRecord(node['BoolExpr'])) {
    // Flatten nested AND/OR so parenthesisation does not matter.
    const b = node['BoolExpr'];
    const op = b['boolop'];
    const args: unknown[] = [];
    for (const a of (b['args'] as unknown[]) ?? []) {
      const ca = canon(a, ds);
      if (op !== 'NOT_EXPR' && isRecord(ca) && isRecord(ca['BoolExpr']) && ca['BoolExpr']['boolop'] === op) {
        args.push(...(ca['BoolExpr']['args'] as unknown[]));
      } else args.push(ca);
    }
    return { BoolExpr: { boolop: op, args } };
  }
  if (isRecord(node['FuncCall'])) {
    const f = node['FuncCall'];
    const fn = names(f['funcname']);
    const bare = unqualified(fn, ds);
    const out: AstNode = {};
    for (const [k, v] of Object.entries(f)) {
      if (k === 'funcname' || k === 'funcformat' || DROPPED_FIELDS.has(k)) continue;
      out[k] = canon(v, ds);
    }
    out['funcname'] = bare.map((s) => s.toLowerCase());
    const name = bare.length === 1 ? bare[0] : undefined;
    let args = Array.isArray(out['args']) ? (out['args'] as unknown[]) : [];
    // The catalog prints a call to a variadic function with its variadic arguments gathered, as
    // `f(a, VARIADIC ARRAY[b, c])`: the same call as `f(a, b, c)`. An empty or computed array stays.
    const gathered = out['func_variadic'] === true ? args[args.length - 1] : undefined;
    const elements =
      isRecord(gathered) && isRecord(gathered['A_ArrayExpr'])
        ? gathered['A_ArrayExpr']['elements']
        : undefined;
    if (Array.isArray(elements) && elements.length > 0) {
      args = [...args.slice(0, -1), ...(elements as unknown[])];
      out['args'] = args;
      delete out['func_variadic'];
    }
    if ((name === 'nextval' || name === 'currval' || name === 'setval') && args.length > 0) {
      const [first, ...rest] = args;
      out['args'] = [regclassLiteral(first, ds), ...rest];
    }
    // With two arguments or more the first is the configuration (a regconfig): named as the catalog names it.
    if (name !== undefined && TEXT_SEARCH_CONFIG_FIRST.has(name) && args.length >= 2) {
      const [first, ...rest] = args;
      out['args'] = [regclassLiteral(first, ds), ...rest];
    }
    return { FuncCall: out };
  }
  const out: AstNode = {};
  for (const key of Object.keys(node).sort()) {
    if (DROPPED_FIELDS.has(key)) continue;
    out[key] = canon(node[key], ds);
  }
  // `(a, b)` and `ROW(a, b)` are one row constructor; the catalog prints the second.
  const row = out['RowExpr'];
  if (isRecord(row)) delete row['row_format'];
  // The catalog prints a CASE without ELSE with the ELSE NULL it means (`ELSE NULL::text`).
  const caseOf = out['CaseExpr'];
  if (isRecord(caseOf) && isRecord(caseOf['defresult'])) {
    const otherwise = caseOf['defresult']['A_Const'];
    if (isRecord(otherwise) && otherwise['isnull'] === true) {
      const { defresult: _null, ...rest } = caseOf;
      return { CaseExpr: rest };
    }
  }
  return out;
}

const BOOLEAN_SPELLINGS: Readonly<Record<string, boolean>> = {
  t: true,
  true: true,
  y: true,
  yes: true,
  on: true,
  '1': true,
  f: false,
  false: false,
  n: false,
  no: false,
  off: false,
  '0': false,
};

/** `b0101` → `0101`, `x5` → `0101`: a bit-string literal as the bits it holds. */
function bitsOf(raw: string): string {
  if (raw.startsWith('x') || raw.startsWith('X'))
    return [...raw.slice(1)].map((h) => parseInt(h, 16).toString(2).padStart(4, '0')).join('');
  return raw.replace(/^[bB]/, '');
}

/**
 * The catalog prints a bit-string default as `'0101'::"bit"`, and `bit` alone means bit(1): rendered as is,
 * every insert using the default fails. Back to a bit literal, whose length is its own.
 */
function bitLiterals(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(bitLiterals);
  if (!isRecord(node)) return node;
  const cast = node['TypeCast'];
  if (isRecord(cast)) {
    const tn = cast['typeName'] as AstNode | undefined;
    const type = names(tn?.['names']).pop();
    const arg = cast['arg'];
    const text = isRecord(arg) && isRecord(arg['A_Const']) ? arg['A_Const']['sval'] : undefined;
    if ((type === 'bit' || type === 'varbit') && tn?.['typmods'] === undefined && isRecord(text))
      return { A_Const: { bsval: { bsval: `b${String(text['sval'] ?? '')}` } } };
  }
  const out: AstNode = {};
  for (const [k, v] of Object.entries(node)) out[k] = bitLiterals(v);
  return out;
}

export function canonicalKey(node: unknown, defaultSchema: string = DEFAULT_SCHEMA): string {
  return JSON.stringify(canon(node, defaultSchema));
}

export function deparseNode(node: unknown): string {
  return deparseSync(node as never, { pretty: false } as never).trim();
}

/**
 * Canonical forms already computed, by default schema and the node's exact text without positions: the same
 * expression (`now()`, `''::text`, a CHECK repeated on every table) is deparsed and canonicalised once. The
 * result depends on nothing else, so a hit is exactly what computing it again would give. Bounded, so a
 * long-lived process does not keep every expression it ever saw.
 */
const EXPR_MEMO_LIMIT = 50_000;
const exprMemo = new Map<string, Expr>();
const byNode = new WeakMap<object, { defaultSchema: string; expr: Expr }>();
const withoutPositions = (k: string, v: unknown) => (DROPPED_FIELDS.has(k) ? undefined : v);

export function exprFromAst(node: unknown, defaultSchema: string = DEFAULT_SCHEMA): Expr {
  // The catalog's repeated fragments share one parsed node: found without serialising it.
  const same = typeof node === 'object' && node !== null ? byNode.get(node) : undefined;
  if (same !== undefined && same.defaultSchema === defaultSchema) return same.expr;
  const memoKey = `${defaultSchema}\u0000${JSON.stringify(node, withoutPositions)}`;
  let expr = exprMemo.get(memoKey);
  if (expr === undefined) {
    const fixed = bitLiterals(node);
    expr = { text: deparseNode(fixed), key: canonicalKey(fixed, defaultSchema) };
    if (exprMemo.size >= EXPR_MEMO_LIMIT) exprMemo.clear();
    exprMemo.set(memoKey, expr);
  }
  if (typeof node === 'object' && node !== null) byNode.set(node, { defaultSchema, expr });
  return expr;
}

/** Every identifier is quoted: `"..."` with inner quotes doubled. */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

export function quoteQualified(schema: string, name: string): string {
  return `${quoteIdent(schema)}.${quoteIdent(name)}`;
}

export function quoteLiteral(value: string): string {
  // A database or role may still set standard_conforming_strings off, and then a backslash in a plain
  // literal escapes the closing quote: a value (declared, or read from a live row) could end the literal
  // and run as SQL. An E'' literal reads the same under either setting, so a value with a backslash gets
  // one, as PostgreSQL's own quote_literal() does.
  const quoted = value.replace(/'/g, "''");
  return value.includes('\\') ? `E'${quoted.replace(/\\/g, '\\\\')}'` : `'${quoted}'`;
}

/** The SQL spelling of a type, quoting user-defined names. */
export function renderType(t: TypeRef): string {
  const arr = t.array ? '[]' : '';
  if (t.schema !== undefined) return `${quoteQualified(t.schema, t.name)}${t.mods}${arr}`;
  const zone = /^(timestamp|time) (with(?:out)? time zone)$/.exec(t.name);
  if (zone && t.mods !== '') return `${zone[1]}${t.mods} ${zone[2]}${arr}`;
  return `${t.name}${t.mods}${arr}`;
}
