/**
 * PostgreSQL's defined objects (functions, procedures, triggers, domains, policies, row-level security),
 * read from their CREATE statements into the model: the desired files and the catalog's own DDL
 * (pg_get_functiondef, pg_get_triggerdef, ...) go through this one normaliser, so a database and its
 * dump compare equal. Each object carries the statements that create, replace and drop it.
 */
import type { DefinedObject, Index, ObjectStage } from '../model.ts';
import { indexKey, objectKey, typeKey } from '../model.ts';
import {
  type AstNode,
  canonicalKey,
  constText,
  deparseNode,
  exprFromAst,
  isRecord,
  names,
  quoteIdent,
  quoteQualified,
  renderType,
  resolvedNameSql,
  typeRefFromAst,
} from './pg-normalize.ts';
import { CollationDeclarationError, collationObject } from './pg-collations.ts';
import { CompositeTypeDeclarationError, compositeTypeObject } from './pg-composite-types.ts';
import {
  TextSearchDeclarationError,
  type TextSearchConfigDraft,
  alterTextSearchConfig,
  textSearchConfigDraft,
  textSearchConfigObject,
} from './pg-text-search.ts';

/** A problem in one statement; the loader turns it into its own error with the statement's position. */
export class ObjectDeclarationError extends Error {
  override readonly name = 'ObjectDeclarationError';
}

const qualify = (parts: string[], ds: string) => ({
  schema: parts.length >= 2 ? (parts[parts.length - 2] ?? ds) : ds,
  name: parts[parts.length - 1] ?? '',
});

const relOf = (rv: unknown, ds: string) => {
  const r = (isRecord(rv) && isRecord(rv['RangeVar']) ? rv['RangeVar'] : rv) as AstNode;
  return { schema: String(r['schemaname'] ?? ds), name: String(r['relname'] ?? '') };
};

/**
 * A type whose check or default calls a declared function or procedure (`CREATE DOMAIN email AS text CHECK
 * (is_email(VALUE))`) is created with the routines, after the one it calls, and dropped with them, before
 * it; so is every type over such a type. The stage orders first and `uses` only within a stage: left with
 * the types, the domain was created before its function and the apply failed.
 */
function afterTheirRoutines(objects: DefinedObject[]): DefinedObject[] {
  const routines = new Set(
    objects.filter((o) => o.objectType === 'function' || o.objectType === 'procedure').map((o) => o.ref),
  );
  for (let moved = routines.size > 0; moved;) {
    moved = false;
    objects.forEach((o, i) => {
      if (o.stage !== 'types' || !o.uses.some((u) => routines.has(u))) return;
      objects[i] = { ...o, stage: 'routines' };
      routines.add(o.ref);
      moved = true;
    });
  }
  return objects;
}

/** A function name without the qualifier PostgreSQL resolves anyway (the default schema, pg_catalog). */
function bareFunction(parts: string[], ds: string): string[] {
  return parts.length === 2 && (parts[0] === ds || parts[0] === 'pg_catalog') ? parts.slice(1) : parts;
}

/** Every function a canonical key calls, as refs (`objectKey(schema, name)`). */
export function calledRefs(key: string, ds: string): string[] {
  const out = new Set<string>();
  for (const m of key.matchAll(/"funcname":(\[[^\]]*\])/g)) {
    const parts = JSON.parse(m[1] ?? '[]') as string[];
    const q = qualify(parts, ds);
    if (parts.length === 2 && parts[0] === 'pg_catalog') continue;
    out.add(objectKey(q.schema, q.name));
  }
  return [...out];
}

/** Pseudo-types a signature may use; never qualified into a user schema (built-in types: BUILTIN_TYPES). */
const PSEUDO_TYPES = new Set([
  'trigger',
  'event_trigger',
  'void',
  'record',
  'internal',
  'cstring',
  'language_handler',
  'fdw_handler',
  'table_am_handler',
  'index_am_handler',
  'tsm_handler',
  'anyelement',
  'anyarray',
  'anynonarray',
  'anyenum',
  'anyrange',
  'anymultirange',
  'anycompatible',
  'anycompatiblearray',
  'anycompatiblenonarray',
  'anycompatiblerange',
  'anycompatiblemultirange',
]);

interface SigType {
  /** Compared. */
  readonly key: string;
  /** Shown in the object's name (`f(integer, text)`). */
  readonly label: string;
  /** As DROP and COMMENT ON spell it: unqualified when written so, resolved by the search path. */
  readonly sql: string;
  /** The user type it names, if any. */
  readonly ref?: string;
}

function sigType(tn: AstNode, ds: string, what: string): SigType {
  if (tn['pct_type'] === true)
    throw new ObjectDeclarationError(`${what}: a %TYPE argument is not supported; write the type`);
  const parts = names(tn['names']);
  const arr = Array.isArray(tn['arrayBounds']) && tn['arrayBounds'].length > 0 ? '[]' : '';
  if (parts.length === 1 && PSEUDO_TYPES.has(parts[0] ?? '')) {
    const label = `${parts[0] ?? ''}${arr}`;
    return { key: JSON.stringify([null, label]), label, sql: label };
  }
  const { type } = typeRefFromAst(tn, ds);
  const label = renderType(type);
  const written = parts.length === 1 && type.schema !== undefined;
  return {
    key: typeKey(type),
    label,
    sql: written ? `${quoteIdent(type.name)}${type.mods}${arr}` : label,
    ...(type.schema !== undefined ? { ref: objectKey(type.schema, type.name) } : {}),
  };
}

const MODES: Readonly<Record<string, string>> = {
  FUNC_PARAM_DEFAULT: 'in',
  FUNC_PARAM_IN: 'in',
  FUNC_PARAM_OUT: 'out',
  FUNC_PARAM_INOUT: 'inout',
  FUNC_PARAM_VARIADIC: 'variadic',
  FUNC_PARAM_TABLE: 'table',
};

const sval = (arg: unknown) =>
  isRecord(arg) && isRecord(arg['String']) ? String(arg['String']['sval'] ?? '') : '';
const bool = (arg: unknown) =>
  isRecord(arg) && isRecord(arg['Boolean']) && arg['Boolean']['boolval'] === true;
const num = (arg: unknown) => {
  if (isRecord(arg) && isRecord(arg['Integer'])) return Number(arg['Integer']['ival'] ?? 0);
  if (isRecord(arg) && isRecord(arg['Float'])) return Number(arg['Float']['fval'] ?? 0);
  return Number.NaN;
};

/** The function's identity and the parts of its definition CREATE OR REPLACE cannot change. */
interface Signature {
  readonly schema: string;
  readonly name: string;
  readonly procedure: boolean;
  /** Input argument types (what identifies the function among its overloads). */
  readonly args: readonly SigType[];
}

function signatureOf(n: AstNode, ds: string, what: string): Signature {
  const q = qualify(names(n['funcname']), ds);
  const params = ((n['parameters'] as AstNode[] | undefined) ?? []).map(
    (p) => p['FunctionParameter'] as AstNode,
  );
  const args = params
    .filter((p) => ['in', 'inout', 'variadic'].includes(MODES[String(p['mode'])] ?? 'in'))
    .map((p) => sigType(p['argType'] as AstNode, ds, what));
  return { schema: q.schema, name: q.name, procedure: n['is_procedure'] === true, args };
}

/** The schema and model name (`f(integer, text)`) of the function or procedure CREATE FUNCTION declares. */
export function functionObjectName(n: AstNode, ds: string): { schema: string; name: string } {
  const sig = signatureOf(n, ds, 'function');
  return { schema: sig.schema, name: `${sig.name}(${sig.args.map((a) => a.label).join(', ')})` };
}

/** `COMMENT ON FUNCTION f(integer)` and `ALTER FUNCTION ...` name a function by its input types only. */
function signatureOfReference(
  owa: AstNode,
  ds: string,
  what: string,
): { schema: string; name: string; args: string } {
  const q = qualify(names(owa['objname']), ds);
  const fargs = (owa['objfuncargs'] as AstNode[] | undefined)?.map((p) => p['FunctionParameter'] as AstNode);
  const types =
    fargs !== undefined
      ? fargs
          .filter((p) => ['in', 'inout', 'variadic'].includes(MODES[String(p['mode'])] ?? 'in'))
          .map((p) => p['argType'] as AstNode)
      : ((owa['objargs'] as AstNode[] | undefined) ?? []).map((t) => (t['TypeName'] ?? t) as AstNode);
  return { ...q, args: types.map((t) => sigType(t, ds, what).label).join(', ') };
}

/** A function's definition, normalised: PostgreSQL's defaults filled in, spellings made one. */
function functionKey(
  n: AstNode,
  ds: string,
  what: string,
): { key: string; replaceKey: string; language: string } {
  const params = ((n['parameters'] as AstNode[] | undefined) ?? []).map(
    (p) => p['FunctionParameter'] as AstNode,
  );
  const ps = params.map((p) => ({
    mode: MODES[String(p['mode'])] ?? 'in',
    name: p['name'] === undefined ? null : String(p['name']),
    type: sigType(p['argType'] as AstNode, ds, what).key,
    default: p['defexpr'] === undefined ? null : exprFromAst(p['defexpr'], ds).key,
  }));
  const procedure = n['is_procedure'] === true;
  let returns: { type: string; setof: boolean } | null = null;
  if (isRecord(n['returnType'])) {
    const rt = n['returnType'];
    returns = { type: sigType(rt, ds, what).key, setof: rt['setof'] === true };
  } else if (!procedure) {
    // No RETURNS: the OUT arguments say it (one: its type; more: record).
    const outs = ps.filter((p) => p.mode === 'out' || p.mode === 'inout');
    returns = {
      type: outs.length === 1 ? (outs[0]?.type ?? '') : JSON.stringify([null, 'record']),
      setof: false,
    };
  }
  const o: Record<string, unknown> = {};
  const set: unknown[] = [];
  for (const el of (n['options'] as AstNode[] | undefined) ?? []) {
    const d = el['DefElem'] as AstNode;
    const arg = d['arg'];
    const name = String(d['defname']);
    switch (name) {
      case 'language':
      case 'volatility':
      case 'parallel':
        o[name] = sval(arg).toLowerCase();
        break;
      case 'strict':
      case 'security':
      case 'leakproof':
      case 'window':
        o[name] = bool(arg);
        break;
      case 'cost':
      case 'rows':
        o[name] = num(arg);
        break;
      case 'as':
        o['body'] = isRecord(arg) && isRecord(arg['List']) ? names(arg['List']['items']) : [sval(arg)];
        break;
      case 'set': {
        const v = (arg as AstNode)['VariableSetStmt'] as AstNode;
        if (v['kind'] === 'VAR_SET_CURRENT')
          throw new ObjectDeclarationError(
            `${what}: SET ${String(v['name'])} FROM CURRENT is stored as the value at creation time; write that value`,
          );
        set.push([
          String(v['name']).toLowerCase(),
          ((v['args'] as unknown[] | undefined) ?? []).map((a) =>
            isRecord(a) && isRecord(a['A_Const']) ? constText(a['A_Const']) : canonicalKey(a, ds),
          ),
        ]);
        break;
      }
      case 'support':
        o[name] = bareFunction(
          isRecord(arg) && isRecord(arg['List']) ? names(arg['List']['items']) : [sval(arg)],
          ds,
        );
        break;
      default:
        o[name] = canonicalKey(arg, ds);
    }
  }
  const language = String(o['language'] ?? (n['sql_body'] !== undefined ? 'sql' : ''));
  if (language === '') throw new ObjectDeclarationError(`${what}: LANGUAGE is missing; add it`);
  const setof = returns?.setof === true;
  const key = JSON.stringify({
    procedure,
    params: ps,
    returns,
    language,
    volatility: o['volatility'] ?? 'volatile',
    strict: o['strict'] ?? false,
    security: o['security'] ?? false,
    leakproof: o['leakproof'] ?? false,
    window: o['window'] ?? false,
    parallel: o['parallel'] ?? 'unsafe',
    cost: o['cost'] ?? (language === 'c' || language === 'internal' ? 1 : 100),
    rows: o['rows'] ?? (setof ? 1000 : 0),
    support: o['support'] ?? null,
    set,
    body: o['body'] ?? null,
    sqlBody: n['sql_body'] === undefined ? null : canonicalKey(n['sql_body'], ds),
    other: Object.fromEntries(
      Object.entries(o).filter(
        ([k]) =>
          ![
            'language',
            'volatility',
            'parallel',
            'strict',
            'security',
            'leakproof',
            'window',
            'cost',
            'rows',
            'body',
            'support',
          ].includes(k),
      ),
    ),
  });
  // CREATE OR REPLACE keeps the kind, the return type, the input names and types, and every default.
  const replaceKey = JSON.stringify({
    procedure,
    returns,
    params: ps.map((p) => [p.mode, p.mode === 'out' ? null : p.name, p.type, p.default !== null]),
  });
  return { key, replaceKey, language };
}

type TriggerState = 'origin' | 'disabled' | 'always' | 'replica';

const TRIGGER_STATE_SQL: Readonly<Record<TriggerState, string | undefined>> = {
  origin: undefined,
  disabled: 'DISABLE TRIGGER',
  always: 'ENABLE ALWAYS TRIGGER',
  replica: 'ENABLE REPLICA TRIGGER',
};

interface FunctionDraft {
  readonly type: 'function';
  readonly node: AstNode;
  readonly sig: Signature;
  readonly what: string;
  comment?: string;
}
interface TriggerDraft {
  readonly type: 'trigger';
  readonly node: AstNode;
  readonly schema: string;
  readonly table: string;
  readonly name: string;
  state: TriggerState;
  comment?: string;
}
interface DomainDraft {
  readonly type: 'domain';
  readonly node: AstNode;
  readonly schema: string;
  readonly name: string;
  /** Constraints added NOT VALID afterwards (ALTER DOMAIN ... ADD CONSTRAINT ... NOT VALID). */
  readonly later: AstNode[];
  readonly what: string;
  comment?: string;
}
interface PolicyDraft {
  readonly type: 'policy';
  readonly node: AstNode;
  readonly schema: string;
  readonly table: string;
  readonly name: string;
  comment?: string;
}
interface RowSecurityDraft {
  readonly type: 'row security';
  readonly schema: string;
  readonly table: string;
  enabled: boolean;
  forced: boolean;
}
interface AggregateDraft {
  readonly type: 'aggregate';
  readonly node: AstNode;
  readonly schema: string;
  readonly name: string;
  readonly args: readonly SigType[];
  readonly what: string;
  comment?: string;
}
interface CollationDraft {
  readonly type: 'collation';
  readonly node: AstNode;
  readonly schema: string;
  readonly name: string;
  readonly what: string;
  comment?: string;
}
interface CompositeTypeDraft {
  readonly type: 'composite type';
  readonly node: AstNode;
  readonly schema: string;
  readonly name: string;
  readonly what: string;
  comment?: string;
}
interface MatviewDraft {
  readonly type: 'materialized view';
  readonly node: AstNode;
  readonly schema: string;
  readonly name: string;
  comment?: string;
}
interface MatviewIndexDraft {
  readonly type: 'index';
  readonly node: AstNode;
  readonly schema: string;
  readonly table: string;
  readonly name: string;
  readonly key: string;
  comment?: string;
}
type Draft =
  | FunctionDraft
  | TriggerDraft
  | DomainDraft
  | PolicyDraft
  | RowSecurityDraft
  | AggregateDraft
  | CollationDraft
  | CompositeTypeDraft
  | TextSearchConfigDraft
  | MatviewDraft
  | MatviewIndexDraft;

/** Every relation a query reads, as refs. */
function readRefs(node: unknown, ds: string, out: Set<string>): Set<string> {
  if (Array.isArray(node)) for (const x of node) readRefs(x, ds, out);
  else if (isRecord(node)) {
    if (isRecord(node['RangeVar']))
      out.add(objectKey(String(node['RangeVar']['schemaname'] ?? ds), String(node['RangeVar']['relname'])));
    for (const v of Object.values(node)) readRefs(v, ds, out);
  }
  return out;
}

/** Aggregate options naming a function, and the defaults PostgreSQL fills in. */
const AGGREGATE_FUNCTIONS = new Set(['sfunc', 'finalfunc', 'combinefunc', 'serialfunc', 'deserialfunc']);
const AGGREGATE_DEFAULTS: Readonly<Record<string, string>> = {
  parallel: 'unsafe',
  finalfunc_modify: 'read_only',
  sspace: '0',
};
/** What an aggregate the model manages may say: plain ones (no moving-aggregate or sort-operator parts). */
const AGGREGATE_OPTIONS = new Set([
  ...AGGREGATE_FUNCTIONS,
  'stype',
  'initcond',
  'finalfunc_extra',
  ...Object.keys(AGGREGATE_DEFAULTS),
]);

/** Whether CREATE AGGREGATE declares a plain aggregate (else it stays unmanaged, as in the catalog). */
export function isPlainAggregate(n: AstNode): boolean {
  const args = (n['args'] as AstNode[] | undefined) ?? [];
  const direct =
    isRecord(args[1]) && isRecord(args[1]['Integer']) ? Number(args[1]['Integer']['ival'] ?? 0) : -1;
  const defs = ((n['definition'] as AstNode[] | undefined) ?? []).map((d) =>
    String((d['DefElem'] as AstNode)['defname']).toLowerCase(),
  );
  return n['oldstyle'] !== true && direct === -1 && defs.every((d) => AGGREGATE_OPTIONS.has(d));
}

function aggregateArgs(n: AstNode, ds: string, what: string): SigType[] {
  const first = ((n['args'] as AstNode[] | undefined) ?? [])[0];
  const items =
    isRecord(first) && isRecord(first['List']) ? ((first['List']['items'] as AstNode[]) ?? []) : [];
  return items.map((p) => sigType((p['FunctionParameter'] as AstNode)['argType'] as AstNode, ds, what));
}

const functionId = (schema: string, name: string, args: string) =>
  JSON.stringify(['f', schema, `${name}(${args})`]);
const onTableId = (type: string, schema: string, table: string, name: string) =>
  JSON.stringify([type, schema, table, name]);

/** Runs a text search step, its problem as the loader's own. */
function textSearch<T>(step: () => T): T {
  try {
    return step();
  } catch (error) {
    if (error instanceof TextSearchDeclarationError) throw new ObjectDeclarationError(error.message);
    throw error;
  }
}

/** The defined objects of one desired state (or of the catalog), as they are declared. */
export class PgObjects {
  private readonly drafts = new Map<string, Draft>();

  constructor(private readonly ds: string) {}

  addFunction(n: AstNode, what: string): void {
    const sig = signatureOf(n, this.ds, what);
    functionKey(n, this.ds, what); // reports a problem where the statement is
    const id = functionId(sig.schema, sig.name, sig.args.map((a) => a.label).join(', '));
    if (this.drafts.has(id) && n['replace'] !== true)
      throw new ObjectDeclarationError(`${what} is declared twice; keep one declaration`);
    this.drafts.set(id, { type: 'function', node: n, sig, what });
  }

  addAggregate(n: AstNode, what: string): void {
    const q = qualify(names(n['defnames']), this.ds);
    const args = aggregateArgs(n, this.ds, what);
    const id = JSON.stringify(['a', q.schema, `${q.name}(${args.map((a) => a.label).join(', ')})`]);
    if (this.drafts.has(id))
      throw new ObjectDeclarationError(`${what} is declared twice; keep one declaration`);
    this.drafts.set(id, { type: 'aggregate', node: n, ...q, args, what });
  }

  addCollation(n: AstNode, what: string): void {
    const q = qualify(names(n['defnames']), this.ds);
    const id = JSON.stringify(['collation', q.schema, q.name]);
    if (this.drafts.has(id))
      throw new ObjectDeclarationError(`${what} is declared twice; keep one declaration`);
    this.drafts.set(id, { type: 'collation', node: n, ...q, what });
  }

  addCompositeType(n: AstNode, what: string): void {
    const q = relOf(n['typevar'], this.ds);
    const id = JSON.stringify(['composite type', q.schema, q.name]);
    if (this.drafts.has(id))
      throw new ObjectDeclarationError(`${what} is declared twice; keep one declaration`);
    this.drafts.set(id, { type: 'composite type', node: n, ...q, what });
  }

  addTextSearchConfig(n: AstNode, what: string): void {
    const q = qualify(names(n['defnames']), this.ds);
    const id = JSON.stringify(['text search configuration', q.schema, q.name]);
    if (this.drafts.has(id))
      throw new ObjectDeclarationError(`${what} is declared twice; keep one declaration`);
    this.drafts.set(
      id,
      textSearch(() => textSearchConfigDraft(n, q.schema, q.name, what, this.ds)),
    );
  }

  /** ALTER TEXT SEARCH CONFIGURATION … ADD/ALTER/DROP MAPPING: folded into the configuration. */
  alterTextSearchConfig(n: AstNode): void {
    const q = qualify(names(n['cfgname']), this.ds);
    const d = this.drafts.get(JSON.stringify(['text search configuration', q.schema, q.name]));
    if (d?.type !== 'text search configuration')
      throw new ObjectDeclarationError(
        `text search configuration ${q.schema}.${q.name} is altered before it is declared; declare it first (CREATE TEXT SEARCH CONFIGURATION)`,
      );
    textSearch(() => alterTextSearchConfig(d, n, this.ds));
  }

  addMatview(n: AstNode, what: string): void {
    const into = n['into'] as AstNode;
    const q = relOf(into['rel'], this.ds);
    const id = JSON.stringify(['materialized view', q.schema, q.name]);
    if (this.drafts.has(id))
      throw new ObjectDeclarationError(
        `${what} ${q.schema}.${q.name} is declared twice; keep one declaration`,
      );
    this.drafts.set(id, { type: 'materialized view', node: n, ...q });
  }

  isMatview(schema: string, name: string): boolean {
    return this.drafts.has(JSON.stringify(['materialized view', schema, name]));
  }

  /** An index on a materialized view: `index` is its model form (compared by the model's index key). */
  addMatviewIndex(schema: string, table: string, n: AstNode, index: Index): void {
    if (index.name === undefined)
      throw new ObjectDeclarationError(
        `an index on materialized view ${schema}.${table} needs a name; name it`,
      );
    this.drafts.set(JSON.stringify(['index', schema, index.name]), {
      type: 'index',
      node: n,
      schema,
      table,
      name: index.name,
      key: indexKey(index),
    });
  }

  commentMatviewIndex(schema: string, name: string, text: string | undefined): boolean {
    const d = this.drafts.get(JSON.stringify(['index', schema, name]));
    if (d?.type !== 'index') return false;
    if (text === undefined) delete d.comment;
    else d.comment = text;
    return true;
  }

  addTrigger(n: AstNode, what: string): void {
    const t = relOf(n['relation'], this.ds);
    const name = String(n['trigname']);
    const id = onTableId('trigger', t.schema, t.name, name);
    if (this.drafts.has(id))
      throw new ObjectDeclarationError(`${what} is declared twice; keep one declaration`);
    this.drafts.set(id, { type: 'trigger', node: n, schema: t.schema, table: t.name, name, state: 'origin' });
  }

  addDomain(n: AstNode, what: string): void {
    const q = qualify(names(n['domainname']), this.ds);
    const id = JSON.stringify(['domain', q.schema, q.name]);
    if (this.drafts.has(id))
      throw new ObjectDeclarationError(`${what} is declared twice; keep one declaration`);
    this.drafts.set(id, { type: 'domain', node: n, ...q, later: [], what });
  }

  addPolicy(n: AstNode, what: string): void {
    const t = relOf(n['table'], this.ds);
    const name = String(n['policy_name']);
    const id = onTableId('policy', t.schema, t.name, name);
    if (this.drafts.has(id))
      throw new ObjectDeclarationError(`${what} is declared twice; keep one declaration`);
    this.drafts.set(id, { type: 'policy', node: n, schema: t.schema, table: t.name, name });
  }

  /** ALTER DOMAIN: pg_dump adds a NOT VALID constraint this way; anything else belongs in CREATE DOMAIN. */
  alterDomain(n: AstNode, what: string): void {
    const q = qualify(names(n['typeName']), this.ds);
    const d = this.drafts.get(JSON.stringify(['domain', q.schema, q.name]));
    if (d?.type !== 'domain')
      throw new ObjectDeclarationError(
        `${what}: domain ${q.schema}.${q.name} is not declared before it is altered`,
      );
    const c = isRecord(n['def']) ? (n['def']['Constraint'] as AstNode | undefined) : undefined;
    if (n['subtype'] !== 'C' || c?.['contype'] !== 'CONSTR_CHECK')
      throw new ObjectDeclarationError(
        `${what}: only ALTER DOMAIN ... ADD CONSTRAINT ... CHECK is read; write the final shape in CREATE DOMAIN`,
      );
    if (c['skip_validation'] === true) d.later.push(c);
    else
      d.node['constraints'] = [
        ...((d.node['constraints'] as AstNode[] | undefined) ?? []),
        { Constraint: c },
      ];
  }

  rowSecurity(schema: string, table: string, subtype: string): void {
    const id = JSON.stringify(['row security', schema, table]);
    const d = this.drafts.get(id);
    const rs: RowSecurityDraft =
      d?.type === 'row security' ? d : { type: 'row security', schema, table, enabled: false, forced: false };
    if (subtype === 'AT_EnableRowSecurity') rs.enabled = true;
    if (subtype === 'AT_DisableRowSecurity') rs.enabled = false;
    if (subtype === 'AT_ForceRowSecurity') rs.forced = true;
    if (subtype === 'AT_NoForceRowSecurity') rs.forced = false;
    this.drafts.set(id, rs);
  }

  /** ALTER TABLE ... ENABLE/DISABLE TRIGGER name: false when the trigger is not declared here. */
  triggerState(schema: string, table: string, trigger: string, subtype: string): boolean {
    const d = this.drafts.get(onTableId('trigger', schema, table, trigger));
    if (d?.type !== 'trigger') return false;
    const states: Readonly<Record<string, TriggerState>> = {
      AT_EnableTrig: 'origin',
      AT_DisableTrig: 'disabled',
      AT_EnableAlwaysTrig: 'always',
      AT_EnableReplicaTrig: 'replica',
    };
    const s = states[subtype];
    if (s === undefined) return false;
    d.state = s;
    return true;
  }

  /** COMMENT ON a managed object: true when handled. */
  comment(objtype: string, obj: AstNode, text: string | undefined, what: string): boolean {
    const setOn = (d: Draft | undefined, label: string) => {
      if (d === undefined || d.type === 'row security')
        throw new ObjectDeclarationError(
          `${what}: COMMENT ON ${label}: it is not declared before its comment`,
        );
      if (text === undefined) delete d.comment;
      else d.comment = text;
      return true;
    };
    const list = isRecord(obj['List']) ? names(obj['List']['items']) : [];
    switch (objtype) {
      case 'OBJECT_FUNCTION':
      case 'OBJECT_PROCEDURE':
      case 'OBJECT_ROUTINE': {
        const owa = obj['ObjectWithArgs'] as AstNode;
        const r = signatureOfReference(owa, this.ds, what);
        return setOn(
          this.drafts.get(functionId(r.schema, r.name, r.args)),
          `FUNCTION ${r.schema}.${r.name}(${r.args})`,
        );
      }
      case 'OBJECT_COLLATION': {
        const q = qualify(list, this.ds);
        return setOn(
          this.drafts.get(JSON.stringify(['collation', q.schema, q.name])),
          `COLLATION ${q.schema}.${q.name}`,
        );
      }
      case 'OBJECT_TSCONFIGURATION': {
        const q = qualify(list, this.ds);
        return setOn(
          this.drafts.get(JSON.stringify(['text search configuration', q.schema, q.name])),
          `TEXT SEARCH CONFIGURATION ${q.schema}.${q.name}`,
        );
      }
      case 'OBJECT_AGGREGATE': {
        const r = signatureOfReference(obj['ObjectWithArgs'] as AstNode, this.ds, what);
        const d = this.drafts.get(JSON.stringify(['a', r.schema, `${r.name}(${r.args})`]));
        if (d === undefined) return false; // an aggregate the model does not manage
        return setOn(d, `AGGREGATE ${r.schema}.${r.name}(${r.args})`);
      }
      case 'OBJECT_TRIGGER':
      case 'OBJECT_POLICY': {
        const t = qualify(list.slice(0, -1), this.ds);
        const name = list[list.length - 1] ?? '';
        const type = objtype === 'OBJECT_TRIGGER' ? 'trigger' : 'policy';
        return setOn(
          this.drafts.get(onTableId(type, t.schema, t.name, name)),
          `${type.toUpperCase()} ${name} ON ${t.schema}.${t.name}`,
        );
      }
      case 'OBJECT_MATVIEW': {
        const q = qualify(list, this.ds);
        const d = this.drafts.get(JSON.stringify(['materialized view', q.schema, q.name]));
        if (d === undefined) return false;
        return setOn(d, `MATERIALIZED VIEW ${q.schema}.${q.name}`);
      }
      case 'OBJECT_DOMAIN': {
        const q = qualify(names((obj['TypeName'] as AstNode | undefined)?.['names']), this.ds);
        return setOn(
          this.drafts.get(JSON.stringify(['domain', q.schema, q.name])),
          `DOMAIN ${q.schema}.${q.name}`,
        );
      }
      case 'OBJECT_TYPE': {
        // COMMENT ON TYPE names an enum, a domain or an unmanaged type too: only a composite type is here.
        const q = qualify(names((obj['TypeName'] as AstNode | undefined)?.['names']), this.ds);
        const d = this.drafts.get(JSON.stringify(['composite type', q.schema, q.name]));
        if (d === undefined) return false;
        return setOn(d, `TYPE ${q.schema}.${q.name}`);
      }
      default:
        return false;
    }
  }

  /** Whether a type of this name is a declared domain (COMMENT ON TYPE may name one). */
  isDomain(schema: string, name: string): boolean {
    return this.drafts.has(JSON.stringify(['domain', schema, name]));
  }

  /**
   * The objects. `relations` are the refs of the declared tables and views: a routine whose signature names
   * one of their row types is created after them.
   */
  build(
    relations: ReadonlySet<string>,
    views: ReadonlySet<string>,
    queryKey: (query: AstNode) => string,
  ): DefinedObject[] {
    return afterTheirRoutines(
      [...this.drafts.values()].map((d) => this.object(d, relations, views, queryKey)),
    );
  }

  private object(
    d: Draft,
    relations: ReadonlySet<string>,
    views: ReadonlySet<string>,
    queryKey: (query: AstNode) => string,
  ): DefinedObject {
    const ds = this.ds;
    switch (d.type) {
      case 'materialized view': {
        const query = d.node['query'] as AstNode;
        const q = quoteQualified(d.schema, d.name);
        const into = d.node['into'] as AstNode;
        const self = objectKey(d.schema, d.name);
        const reads = readRefs(query, ds, new Set());
        reads.delete(self);
        return {
          kind: 'Defined',
          objectType: 'materialized view',
          schema: d.schema,
          name: d.name,
          ref: self,
          // Whether it is populated is data (pg_dump writes WITH NO DATA and refreshes later): not compared.
          key: queryKey(query),
          create: [
            deparseNode({
              CreateTableAsStmt: {
                ...d.node,
                into: {
                  ...into,
                  rel: { schemaname: d.schema, relname: d.name, inh: true, relpersistence: 'p' },
                },
              },
            }),
          ],
          drop: [`DROP MATERIALIZED VIEW ${q}`],
          uses: [...reads, ...calledRefs(canonicalKey(query, ds), ds)],
          stage: 'matviews',
          ...(d.comment !== undefined ? { comment: d.comment } : {}),
          commentOn: `MATERIALIZED VIEW ${q}`,
        };
      }
      case 'index': {
        const q = quoteQualified(d.schema, d.name);
        return {
          kind: 'Defined',
          objectType: 'index',
          schema: d.schema,
          name: d.name,
          ref: JSON.stringify(['index', d.schema, d.name]),
          table: d.table,
          key: d.key,
          create: [
            deparseNode({
              IndexStmt: {
                ...d.node,
                relation: { schemaname: d.schema, relname: d.table, inh: true, relpersistence: 'p' },
              },
            }),
          ],
          drop: [`DROP INDEX ${q}`],
          uses: [objectKey(d.schema, d.table)],
          stage: 'after-views',
          ...(d.comment !== undefined ? { comment: d.comment } : {}),
          commentOn: `INDEX ${q}`,
        };
      }
      case 'function': {
        const { sig, node } = d;
        const { key, replaceKey } = functionKey(node, ds, d.what);
        const kind = sig.procedure ? 'PROCEDURE' : 'FUNCTION';
        const target = `${kind} ${quoteQualified(sig.schema, sig.name)}(${sig.args.map((a) => a.sql).join(', ')})`;
        const params = ((node['parameters'] as AstNode[] | undefined) ?? []).map(
          (p) => p['FunctionParameter'] as AstNode,
        );
        const typeRefs = [
          ...params.map((p) => sigType(p['argType'] as AstNode, ds, d.what).ref),
          isRecord(node['returnType']) ? sigType(node['returnType'], ds, d.what).ref : undefined,
        ].filter((r): r is string => r !== undefined);
        const bodyRefs =
          node['sql_body'] === undefined ? [] : calledRefs(canonicalKey(node['sql_body'], ds), ds);
        const self = objectKey(sig.schema, sig.name);
        const stage: ObjectStage = typeRefs.some((r) => views.has(r))
          ? 'after-views'
          : typeRefs.some((r) => relations.has(r)) || node['sql_body'] !== undefined
            ? 'after-tables'
            : 'routines';
        const named = {
          ...node,
          funcname: [{ String: { sval: sig.schema } }, { String: { sval: sig.name } }],
        };
        const render = (replace: boolean) => `${deparseNode({ CreateFunctionStmt: { ...named, replace } })}`;
        // A function's body is checked when it is created (a SQL body against the tables, a PL/pgSQL one's
        // declared variable types); pg_dump turns that off too, since what it names may come later.
        const prelude = node['sql_body'] === undefined ? ['SET LOCAL check_function_bodies = off'] : [];
        return {
          kind: 'Defined',
          objectType: sig.procedure ? 'procedure' : 'function',
          schema: sig.schema,
          name: `${sig.name}(${sig.args.map((a) => a.label).join(', ')})`,
          ref: self,
          key,
          create: [...prelude, render(false)],
          drop: [`DROP ${target}`],
          replaceKey,
          replace: [...prelude, render(true)],
          uses: [...new Set([...typeRefs, ...bodyRefs])].filter((r) => r !== self),
          stage,
          ...(d.comment !== undefined ? { comment: d.comment } : {}),
          commentOn: target,
        };
      }
      case 'trigger': {
        const n = d.node;
        const fn = bareFunction(names(n['funcname']), ds);
        const fq = qualify(fn, ds);
        const { relation: _r, replace: _p, funcname: _f, ...rest } = n;
        const constrrel = n['constrrel'] === undefined ? undefined : relOf(n['constrrel'], ds);
        const key = JSON.stringify([
          canonicalKey({ ...rest, constrrel: constrrel ?? null, funcname: fn }, ds),
          d.state,
        ]);
        const table = quoteQualified(d.schema, d.table);
        const create = deparseNode({
          CreateTrigStmt: {
            ...n,
            replace: false,
            relation: { schemaname: d.schema, relname: d.table, inh: true, relpersistence: 'p' },
          },
        });
        const state = TRIGGER_STATE_SQL[d.state];
        const when = n['whenClause'] === undefined ? [] : calledRefs(canonicalKey(n['whenClause'], ds), ds);
        return {
          kind: 'Defined',
          objectType: 'trigger',
          schema: d.schema,
          name: `${d.table}.${d.name}`,
          ref: JSON.stringify(['trigger', d.schema, d.table, d.name]),
          table: d.table,
          key,
          create: [
            create,
            ...(state === undefined ? [] : [`ALTER TABLE ${table} ${state} ${quoteIdent(d.name)}`]),
          ],
          drop: [`DROP TRIGGER ${quoteIdent(d.name)} ON ${table}`],
          uses: [objectKey(fq.schema, fq.name), ...when],
          stage: 'after-views',
          ...(d.comment !== undefined ? { comment: d.comment } : {}),
          commentOn: `TRIGGER ${quoteIdent(d.name)} ON ${table}`,
        };
      }
      case 'domain':
        return this.domain(d);
      case 'aggregate':
        return this.aggregate(d);
      case 'composite type':
        try {
          return compositeTypeObject(d.node, d.schema, d.name, d.comment, d.what, ds);
        } catch (error) {
          if (error instanceof CompositeTypeDeclarationError) throw new ObjectDeclarationError(error.message);
          throw error;
        }
      case 'text search configuration':
        return textSearchConfigObject(d, ds);
      case 'collation':
        try {
          return collationObject(d.node, d.schema, d.name, d.comment, d.what, ds);
        } catch (error) {
          if (error instanceof CollationDeclarationError) throw new ObjectDeclarationError(error.message);
          throw error;
        }
      case 'policy': {
        const n = d.node;
        const roles = (
          (n['roles'] as AstNode[] | undefined) ?? [{ RoleSpec: { roletype: 'ROLESPEC_PUBLIC' } }]
        )
          .map((r) => {
            const spec = r['RoleSpec'] as AstNode;
            return spec['roletype'] === 'ROLESPEC_CSTRING'
              ? `role:${String(spec['rolename'])}`
              : String(spec['roletype']);
          })
          .sort();
        const qual = n['qual'] === undefined ? null : canonicalKey(n['qual'], ds);
        const check = n['with_check'] === undefined ? null : canonicalKey(n['with_check'], ds);
        const key = JSON.stringify([
          n['permissive'] === true,
          String(n['cmd_name'] ?? 'all'),
          roles,
          qual,
          check,
        ]);
        const table = quoteQualified(d.schema, d.table);
        return {
          kind: 'Defined',
          objectType: 'policy',
          schema: d.schema,
          name: `${d.table}.${d.name}`,
          ref: JSON.stringify(['policy', d.schema, d.table, d.name]),
          table: d.table,
          key,
          create: [
            deparseNode({
              CreatePolicyStmt: {
                ...n,
                table: { schemaname: d.schema, relname: d.table, inh: true, relpersistence: 'p' },
              },
            }),
          ],
          drop: [`DROP POLICY ${quoteIdent(d.name)} ON ${table}`],
          uses: [...calledRefs(`${qual ?? ''}${check ?? ''}`, ds)],
          stage: 'after-views',
          ...(d.comment !== undefined ? { comment: d.comment } : {}),
          commentOn: `POLICY ${quoteIdent(d.name)} ON ${table}`,
        };
      }
      case 'row security': {
        const table = quoteQualified(d.schema, d.table);
        const set = (enabled: boolean, forced: boolean) => [
          `ALTER TABLE ${table} ${enabled ? 'ENABLE' : 'DISABLE'} ROW LEVEL SECURITY`,
          `ALTER TABLE ${table} ${forced ? 'FORCE' : 'NO FORCE'} ROW LEVEL SECURITY`,
        ];
        return {
          kind: 'Defined',
          objectType: 'row security',
          schema: d.schema,
          name: d.table,
          ref: JSON.stringify(['row security', d.schema, d.table]),
          table: d.table,
          key: JSON.stringify([d.enabled, d.forced]),
          create: set(d.enabled, d.forced).filter((_, i) => (i === 0 ? d.enabled : d.forced)),
          drop: set(false, false).filter((_, i) => (i === 0 ? d.enabled : d.forced)),
          replaceKey: 'row security',
          replace: set(d.enabled, d.forced),
          uses: [],
          stage: 'after-views',
        };
      }
    }
  }

  private aggregate(d: AggregateDraft): DefinedObject {
    const ds = this.ds;
    const uses = new Set<string>(d.args.flatMap((a) => (a.ref === undefined ? [] : [a.ref])));
    const opts: [string, unknown][] = [];
    for (const el of (d.node['definition'] as AstNode[] | undefined) ?? []) {
      const e = el['DefElem'] as AstNode;
      const name = String(e['defname']).toLowerCase();
      const arg = e['arg'];
      const tn = isRecord(arg) && isRecord(arg['TypeName']) ? arg['TypeName'] : undefined;
      let value: unknown;
      if (AGGREGATE_FUNCTIONS.has(name)) {
        const fn = bareFunction(names(tn?.['names']), ds);
        const q = qualify(fn, ds);
        uses.add(objectKey(q.schema, q.name));
        value = fn;
      } else if (name === 'stype' && tn !== undefined) {
        const t = sigType(tn, ds, d.what);
        if (t.ref !== undefined) uses.add(t.ref);
        value = t.key;
      } else if (tn !== undefined) value = (names(tn['names'])[0] ?? '').toLowerCase();
      else if (arg === undefined) value = 'true';
      else value = isRecord(arg) && isRecord(arg['String']) ? sval(arg) : String(num(arg));
      if (AGGREGATE_DEFAULTS[name] === value) continue;
      opts.push([name, value]);
    }
    opts.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    const target = `AGGREGATE ${quoteQualified(d.schema, d.name)}(${d.args.map((a) => a.sql).join(', ')})`;
    const self = objectKey(d.schema, d.name);
    uses.delete(self);
    return {
      kind: 'Defined',
      objectType: 'aggregate',
      schema: d.schema,
      name: `${d.name}(${d.args.map((a) => a.label).join(', ')})`,
      ref: self,
      key: JSON.stringify([d.args.map((a) => a.key), opts]),
      create: [
        deparseNode({
          DefineStmt: { ...d.node, defnames: [{ String: { sval: d.schema } }, { String: { sval: d.name } }] },
        }),
      ],
      drop: [`DROP ${target}`],
      uses: [...uses],
      stage: 'routines',
      ...(d.comment !== undefined ? { comment: d.comment } : {}),
      commentOn: target,
    };
  }

  private domain(d: DomainDraft): DefinedObject {
    const ds = this.ds;
    const n = d.node;
    const base = typeRefFromAst(n['typeName'] as AstNode, ds).type;
    const coll = isRecord(n['collClause']) ? names(n['collClause']['collname']) : [];
    let notNull = false;
    let def: string | null = null;
    const checks: AstNode[] = [];
    // PostgreSQL names an unnamed check <domain>_check, then <domain>_check1, ...: named here the same way,
    // so the declaration and the catalog meet.
    const taken = new Set<string>();
    const all = [
      ...((n['constraints'] as AstNode[] | undefined) ?? []).map((c) => c['Constraint'] as AstNode),
    ];
    for (const c of [...all, ...d.later]) if (c['conname'] !== undefined) taken.add(String(c['conname']));
    const nameOf = (c: AstNode) => {
      if (c['conname'] !== undefined) return String(c['conname']);
      let i = 0;
      let nm = `${d.name}_check`;
      while (taken.has(nm)) nm = `${d.name}_check${++i}`;
      taken.add(nm);
      return nm;
    };
    const kept: AstNode[] = [];
    for (const c of all) {
      switch (c['contype']) {
        case 'CONSTR_NOTNULL':
          notNull = true;
          kept.push({ Constraint: c });
          break;
        case 'CONSTR_NULL':
          notNull = false;
          break;
        case 'CONSTR_DEFAULT':
          def = exprFromAst(c['raw_expr'], ds).key;
          kept.push({ Constraint: c });
          break;
        case 'CONSTR_CHECK': {
          const named = { ...c, conname: nameOf(c) };
          checks.push(named);
          kept.push({ Constraint: named });
          break;
        }
        default:
          throw new ObjectDeclarationError(
            `${d.what}: ${String(c['contype']).replace('CONSTR_', '')} on a domain is not supported`,
          );
      }
    }
    const later: AstNode[] = d.later.map((c) => ({ ...c, conname: nameOf(c) }));
    const checkKey = (c: AstNode) => [String(c['conname']), exprFromAst(c['raw_expr'], ds).key];
    const key = JSON.stringify({
      base: typeKey(base),
      collation: coll.length === 0 ? null : resolvedNameSql(coll, ds),
      default: def,
      notNull,
      checks: [...checks, ...later].map(checkKey).sort((a, b) => ((a[0] ?? '') < (b[0] ?? '') ? -1 : 1)),
    });
    const q = quoteQualified(d.schema, d.name);
    return {
      kind: 'Defined',
      objectType: 'domain',
      schema: d.schema,
      name: d.name,
      ref: objectKey(d.schema, d.name),
      key,
      create: [
        deparseNode({
          CreateDomainStmt: {
            ...n,
            domainname: [{ String: { sval: d.schema } }, { String: { sval: d.name } }],
            constraints: kept,
          },
        }),
        ...later.map(
          (c) =>
            `ALTER DOMAIN ${q} ADD CONSTRAINT ${quoteIdent(String(c['conname']))} CHECK (${exprFromAst(c['raw_expr'], ds).text}) NOT VALID`,
        ),
      ],
      drop: [`DROP DOMAIN ${q}`],
      uses: [
        ...(base.schema !== undefined ? [objectKey(base.schema, base.name)] : []),
        // A collation of the model's own: created before the domain that sorts with it.
        ...(coll.length > 0 ? [objectKey(qualify(coll, ds).schema, qualify(coll, ds).name)] : []),
        ...calledRefs([def ?? '', ...checks.map((c) => exprFromAst(c['raw_expr'], ds).key)].join(' '), ds),
      ],
      stage: 'types',
      ...(d.comment !== undefined ? { comment: d.comment } : {}),
      commentOn: `DOMAIN ${q}`,
    };
  }
}
