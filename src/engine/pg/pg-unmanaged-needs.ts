/**
 * A managed object may need an object Ptah does not manage: an index (on a table or a materialized view)
 * or an exclusion constraint its access method and the operator classes its keys name, an exclusion
 * constraint its operators, a column its type (a range or base type, or one an extension brings), a column,
 * an index key or an exclusion element the collation it names when the desired state does not declare it,
 * a text search configuration its parser and dictionaries, a default, generated column, check constraint,
 * index expression or view the functions it calls. Where the target database lacks it and the plan does not
 * create it, the CREATE fails on apply; the plan is refused when it is made instead, naming the object, what
 * it needs and the fix. The plan's snapshot answers in one catalog query, made only when a change has such
 * a need.
 */
import type { Change, ChangeKind, TableRef } from '../changes.ts';
import type {
  Column,
  Constraint,
  DefinedObject,
  ExclusionConstraint,
  Expr,
  Index,
  IndexKey,
  SchemaModel,
} from '../model.ts';
import { objectKey } from '../model.ts';
import { listItems, nameList, quoteIdent } from './pg-normalize.ts';
import { parseSync } from './pg-parser.ts';
import type { Session } from '../session.ts';

type NeedKind =
  | 'access method'
  | 'operator class'
  | 'operator'
  | 'type'
  | 'collation'
  | 'text search dictionary'
  | 'text search parser'
  | 'function';

interface Need {
  readonly kind: NeedKind;
  /** Where PostgreSQL looks for it: one schema when qualified, pg_catalog then the default schema when not. */
  readonly schemas: readonly string[];
  readonly name: string;
  /** An operator class belongs to an access method. */
  readonly method?: string;
  /** The managed object that needs it, as a message names it. */
  readonly by: string;
  readonly category?:
    'indexes_added' | 'tables_added' | 'columns_added' | 'columns_modified' | 'constraints_added';
}

/** Built-in access methods: asked about like any other only when an index names another. */
const BUILT_IN_METHODS = new Set(['btree', 'hash', 'gist', 'gin', 'spgist', 'brin']);

/** `"s"."n"` or `"n"`, as the model holds an operator class. */
function sqlNameParts(sql: string): string[] {
  return [...sql.matchAll(/"((?:[^"]|"")*)"/g)].map((m) => (m[1] ?? '').replace(/""/g, '"'));
}

function tableLabel(t: TableRef): string {
  return `${t.schema}.${t.name}`;
}

/**
 * Where PostgreSQL looks for a name given as its parts: in its schema when qualified, else pg_catalog then
 * the default schema.
 */
function lookedUp(parts: readonly string[], ds: string): { schemas: string[]; name: string } {
  return {
    schemas: parts.length >= 2 ? [parts[parts.length - 2] ?? ''] : ['pg_catalog', ds],
    name: parts[parts.length - 1] ?? '',
  };
}

/**
 * The collation a column or an index key names (`"C"`, `"s"."c"`, as the model holds it): in its schema when
 * qualified, else pg_catalog then the default schema, as PostgreSQL looks.
 */
function collationNeed(
  collation: string | undefined,
  ds: string,
  by: string,
  category: Need['category'],
): Need[] {
  if (collation === undefined) return [];
  const parts = sqlNameParts(collation);
  const { schemas, name } = lookedUp(parts, ds);
  if (schemas[0] === 'pg_catalog' && parts.length >= 2) return [];
  return [{ kind: 'collation', schemas, name, by, ...(category !== undefined ? { category } : {}) }];
}

function columnNeeds(
  table: TableRef,
  columns: readonly Column[],
  category: Need['category'],
  ds: string,
): Need[] {
  return columns.flatMap((c) => {
    const by = `column ${tableLabel(table)}.${c.name}`;
    return [
      ...(c.type.schema === undefined || c.type.schema === 'pg_catalog'
        ? []
        : [
            {
              kind: 'type' as const,
              schemas: [c.type.schema],
              name: c.type.name,
              by,
              ...(category !== undefined ? { category } : {}),
            },
          ]),
      ...collationNeed(c.collation, ds, by, category),
      ...functionNeeds([c.default, c.generated], by, category),
    ];
  });
}

/**
 * The functions an expression calls, from its comparison key: each `FuncCall`'s name, which the key holds
 * lower-cased and without a pg_catalog or default-schema qualifier (canon in pg-normalize.ts). An unqualified
 * one is looked for in every schema of the role's search path (the schema `''`), pg_catalog and the default
 * schema among them: more than the apply's narrowed path, so the check never refuses a call that could
 * resolve. Only the name is checked, its schema's and its own without regard to case (the key lost it): a
 * call whose arguments no function of that name takes still fails on apply, but nothing that exists is ever
 * refused.
 */
function functionNeeds(exprs: readonly (Expr | undefined)[], by: string, category: Need['category']): Need[] {
  const out: Need[] = [];
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) {
      for (const x of node) visit(x);
      return;
    }
    if (typeof node !== 'object' || node === null) return;
    const call = (node as { FuncCall?: { funcname?: unknown } }).FuncCall;
    const name = call?.funcname;
    if (Array.isArray(name) && name.length > 0 && name.every((x) => typeof x === 'string')) {
      const parts = name as string[];
      out.push({
        kind: 'function',
        schemas: [parts.length >= 2 ? (parts[parts.length - 2] ?? '') : ''],
        name: parts[parts.length - 1] ?? '',
        by,
        ...(category !== undefined ? { category } : {}),
      });
    }
    for (const v of Object.values(node)) visit(v);
  };
  for (const e of exprs) if (e !== undefined) visit(JSON.parse(e.key));
  return out;
}

/** An index key or an exclusion element: its operator class and collation as the SQL names them. */
type KeyNames = Pick<IndexKey, 'opclass' | 'collation'>;

/**
 * What an index or an exclusion constraint needs to be built: its access method (unless built in), and each
 * key's operator class (of that method) and collation, where the key names one.
 */
function methodAndKeyNeeds(
  method: string,
  keys: readonly KeyNames[],
  by: string,
  category: Need['category'],
  ds: string,
): Need[] {
  const cat = category !== undefined ? { category } : {};
  const out: Need[] = [];
  if (!BUILT_IN_METHODS.has(method))
    out.push({ kind: 'access method', schemas: [''], name: method, by, ...cat });
  for (const k of keys) {
    out.push(...collationNeed(k.collation, ds, by, category));
    if (k.opclass === undefined) continue;
    out.push({ kind: 'operator class', ...lookedUp(sqlNameParts(k.opclass), ds), method, by, ...cat });
  }
  return out;
}

/** The parts of an index that say what building it needs, and what a message names it by. */
type IndexNeeding = Pick<Index, 'name' | 'method'> & {
  readonly keys: readonly (KeyNames & Pick<IndexKey, 'column' | 'expression'>)[];
};

function indexNeeds(
  index: IndexNeeding & { readonly where?: Expr },
  on: TableRef,
  category: Need['category'],
  ds: string,
): Need[] {
  const by = `index ${index.name ?? `(${index.keys.map((k) => k.column ?? k.expression?.text ?? '').join(', ')})`} on ${tableLabel(on)}`;
  return [
    ...methodAndKeyNeeds(index.method, index.keys, by, category, ds),
    ...functionNeeds([...index.keys.map((k) => k.expression), index.where], by, category),
  ];
}

/**
 * A materialized view's index, which the model holds as a defined object (created by CreateObject): its
 * method and keys read back from its comparison key, `indexKey(index)` (model.ts), which is
 * `[unique, method, [[column, expression key, opclass, collation, ...], ...], ...]`. A key of another shape
 * throws: the check must not go quiet because that encoding changed.
 */
function matviewIndex(o: DefinedObject): IndexNeeding {
  const key: unknown = JSON.parse(o.key);
  const method = Array.isArray(key) ? key[1] : undefined;
  const keys = Array.isArray(key) ? key[2] : undefined;
  const opt = (x: unknown) => (x === null ? undefined : typeof x === 'string' ? x : false);
  const parsed = Array.isArray(keys)
    ? keys.map((k: unknown) =>
        Array.isArray(k) ? { column: opt(k[0]), opclass: opt(k[2]), collation: opt(k[3]) } : undefined,
      )
    : undefined;
  if (
    typeof method !== 'string' ||
    parsed === undefined ||
    parsed.some((k) => k === undefined || k.column === false || k.opclass === false || k.collation === false)
  )
    throw new Error(
      `index ${o.schema}.${o.name}: its key is not an index key as model.ts's indexKey writes it`,
    );
  return {
    name: o.name,
    method,
    keys: parsed.map((k) => ({
      ...(typeof k?.column === 'string' ? { column: k.column } : {}),
      ...(typeof k?.opclass === 'string' ? { opclass: k.opclass } : {}),
      ...(typeof k?.collation === 'string' ? { collation: k.collation } : {}),
    })),
  };
}

/**
 * An exclusion constraint, `EXCLUDE USING gist (room WITH =, during WITH &&)`: its access method, each
 * element's operator class and collation where it names one, and each element's operator. The model keeps
 * the clause only as rendered text and its canonical key, the constraint's parse tree as JSON
 * (`exclusionDefinition` in pg-desired.ts): the elements are read from the rendered clause, parsed again,
 * which names everything as written and as the apply runs it. A clause of another shape throws rather than
 * checking nothing.
 *
 * The operator: PostgreSQL resolves it by name and by the element's type, within the operator families of
 * the element's operator class. What is checked is only that an operator of that name exists where the name
 * is looked for: in its schema when qualified (`OPERATOR(s.&&)`), else in pg_catalog or the default schema.
 * Not checked: that it takes the element's type, that it is commutative and belongs to the operator class's
 * family (the CREATE still fails on apply when not), other schemas of the role's search_path, and the default
 * operator class an element without one needs (`room WITH =` on an integer column under gist needs
 * btree_gist's): that needs the element's type resolved as PostgreSQL does.
 */
function exclusionNeeds(
  constraint: ExclusionConstraint,
  on: TableRef,
  category: Need['category'],
  ds: string,
): Need[] {
  const shapeError = () =>
    new Error(
      `exclusion constraint ${constraint.name ?? ''} on ${tableLabel(on)}: its rendered clause is not an exclusion constraint`,
    );
  const t = writtenExclusion(constraint.definition.text);
  if (t === undefined) throw shapeError();
  const elements = t.exclusions.map((x: unknown) => {
    const pair = listItems(x);
    const elem = pair?.[0] as { IndexElem?: Record<string, unknown> } | undefined;
    const e = elem?.IndexElem;
    const operator = nameList(pair?.[1]);
    if (e === undefined || operator === undefined) throw shapeError();
    const opclass = e['opclass'] === undefined ? undefined : nameList(e['opclass']);
    const collation = e['collation'] === undefined ? undefined : nameList(e['collation']);
    if (
      (e['opclass'] !== undefined && opclass === undefined) ||
      (e['collation'] !== undefined && collation === undefined)
    )
      throw shapeError();
    return {
      label: typeof e['name'] === 'string' ? e['name'] : 'expression',
      operator,
      ...(opclass !== undefined ? { opclass: opclass.map(quoteIdent).join('.') } : {}),
      ...(collation !== undefined ? { collation: collation.map(quoteIdent).join('.') } : {}),
    };
  });
  const by = `exclusion constraint ${constraint.name ?? `(${elements.map((e) => `${e.label} WITH ${e.operator.join('.')}`).join(', ')})`} on ${tableLabel(on)}`;
  const cat = category !== undefined ? { category } : {};
  return [
    ...methodAndKeyNeeds(t.access_method, elements, by, category, ds),
    ...elements.map((e): Need => ({ kind: 'operator', ...lookedUp(e.operator, ds), by, ...cat })),
  ];
}

/**
 * The exclusion clause as rendered, parsed: what the apply will run, every qualifier as written. (The key
 * drops pg_catalog's and the default schema's operator qualifiers, unqualifiedOperators in pg-desired.ts,
 * and `OPERATOR(public.&&)` needs `&&` in public even where pg_catalog's would do for the bare name.)
 * Undefined when the text is not an exclusion clause.
 */
function writtenExclusion(text: string): { access_method: string; exclusions: unknown[] } | undefined {
  const tree = parseSync(`ALTER TABLE t ADD ${text}`) as {
    stmts?: { stmt?: { AlterTableStmt?: { cmds?: unknown[] } } }[];
  };
  const cmds = tree.stmts?.[0]?.stmt?.AlterTableStmt?.cmds;
  const cmd =
    cmds?.length === 1 ? (cmds[0] as { AlterTableCmd?: { def?: unknown } }).AlterTableCmd : undefined;
  const c = (cmd?.def as { Constraint?: { access_method?: unknown; exclusions?: unknown } } | undefined)
    ?.Constraint;
  if (!Array.isArray(c?.exclusions)) return undefined;
  // A clause without USING is a btree's.
  const method = typeof c.access_method === 'string' ? c.access_method : 'btree';
  return { access_method: method, exclusions: c.exclusions as unknown[] };
}

function constraintsNeeds(
  table: TableRef,
  constraints: readonly Constraint[],
  category: Need['category'],
  ds: string,
): Need[] {
  return constraints.flatMap((c) =>
    c.kind === 'Exclusion'
      ? exclusionNeeds(c, table, category, ds)
      : c.kind === 'Check'
        ? functionNeeds(
            [c.expression],
            `check constraint ${c.name ?? c.expression.text} on ${tableLabel(table)}`,
            category,
          )
        : [],
  );
}

function objectNeeds(c: ChangeOf<'CreateObject' | 'ReplaceObject'>, ds: string): Need[] {
  const o = c.object;
  // A materialized view's index, checked as an index on a table is. Its drift category is none (that of
  // its CreateObject), as for every defined object.
  if (o.objectType === 'index' && o.table !== undefined)
    return indexNeeds(matviewIndex(o), { schema: o.schema, name: o.table }, undefined, ds);
  if (o.objectType === 'domain')
    return collationNeed(domainCollation(o), ds, `domain ${o.schema}.${o.name}`, undefined);
  if (o.objectType !== 'text search configuration') return [];
  // Its uses are its parser and dictionaries outside pg_catalog, each objectKey(schema, name).
  const parsed = o.uses.map((u) => JSON.parse(u) as [string, string]);
  const by = `text search configuration ${o.schema}.${o.name}`;
  return parsed.flatMap(([schema, name]) => [
    { kind: 'text search dictionary' as const, schemas: [schema], name, by },
  ]);
}

/**
 * The collation a domain names, from its key (the domain object in pg-objects.ts writes it as SQL, as a
 * column's). A key of another shape throws rather than checking nothing.
 */
function domainCollation(o: DefinedObject): string | undefined {
  const key: unknown = JSON.parse(o.key);
  const collation =
    typeof key === 'object' && key !== null ? (key as { collation?: unknown }).collation : undefined;
  if (collation === null) return undefined;
  if (typeof collation !== 'string')
    throw new Error(`domain ${o.schema}.${o.name}: its key is not the one pg-objects.ts writes for a domain`);
  return collation;
}

type ChangeOf<K extends ChangeKind> = Extract<Change, { kind: K }>;
const none = (): Need[] => [];

/**
 * What each kind of change needs, one entry per kind: a new kind fails to compile until it is said here
 * whether it can need an unmanaged object. Only a change that creates something can; a drop, rename,
 * comment or row change needs nothing new.
 */
const NEEDS: { readonly [K in ChangeKind]: (c: ChangeOf<K>, ds: string) => Need[] } = {
  CreateIndex: (c, ds) => indexNeeds(c.index, c.table, 'indexes_added', ds),
  CreateTable: (c, ds) => [
    ...columnNeeds(c.table, c.table.columns, 'tables_added', ds),
    ...constraintsNeeds(c.table, c.table.constraints, 'tables_added', ds),
  ],
  AddColumn: (c, ds) => columnNeeds(c.table, [c.column], 'columns_added', ds),
  AlterColumnType: (c, ds) => columnNeeds(c.table, [c.column], 'columns_modified', ds),
  CreateObject: objectNeeds,
  ReplaceObject: objectNeeds,
  CreateSchema: none,
  DropSchema: none,
  CreateExtension: none,
  DropExtension: none,
  UpdateExtension: none,
  CreateEnum: none,
  DropEnum: none,
  AddEnumValue: none,
  CreateSequence: none,
  DropSequence: none,
  AlterSequence: none,
  DropTable: none,
  RenameTable: none,
  AlterTableOptions: none,
  DropColumn: none,
  RenameColumn: none,
  SetNotNull: none,
  DropNotNull: none,
  SetDefault: (c) =>
    functionNeeds([c.column.default], `column ${tableLabel(c.table)}.${c.column.name}`, 'columns_modified'),
  DropDefault: none,
  AddIdentity: none,
  SetIdentity: none,
  DropIdentity: none,
  AddConstraint: (c, ds) => constraintsNeeds(c.table, [c.constraint], 'constraints_added', ds),
  DropConstraint: none,
  ValidateConstraint: none,
  DropIndex: none,
  CreateView: (c) => functionNeeds([c.view.definition], `view ${c.view.schema}.${c.view.name}`, undefined),
  DropView: none,
  DropObject: none,
  SetComment: none,
  CommentObject: none,
  InsertRow: none,
  UpdateRow: none,
  DeleteRow: none,
  Unsupported: none,
};

function needsOf<K extends ChangeKind>(c: ChangeOf<K>, ds: string): Need[] {
  return (NEEDS[c.kind] as (c: ChangeOf<K>, ds: string) => Need[])(c, ds);
}

/** What the target holds, as `kind schema name [method]` keys, for the names asked about. */
async function present(session: Session, names: readonly string[]): Promise<Set<string>> {
  const rows = (
    await session.query(
      `SELECT 'access method' AS kind, '' AS schema, a.amname AS name, '' AS method
         FROM pg_am a WHERE a.amname = ANY($1)
       UNION ALL
       SELECT 'operator class', n.nspname, c.opcname, a.amname
         FROM pg_opclass c JOIN pg_am a ON a.oid = c.opcmethod JOIN pg_namespace n ON n.oid = c.opcnamespace
        WHERE c.opcname = ANY($1)
       UNION ALL
       SELECT 'operator', n.nspname, o.oprname, ''
         FROM pg_operator o JOIN pg_namespace n ON n.oid = o.oprnamespace WHERE o.oprname = ANY($1)
       UNION ALL
       SELECT 'type', n.nspname, t.typname, ''
         FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace WHERE t.typname = ANY($1)
       UNION ALL
       SELECT 'collation', n.nspname, c.collname, ''
         FROM pg_collation c JOIN pg_namespace n ON n.oid = c.collnamespace WHERE c.collname = ANY($1)
       UNION ALL
       SELECT 'text search dictionary', n.nspname, d.dictname, ''
         FROM pg_ts_dict d JOIN pg_namespace n ON n.oid = d.dictnamespace WHERE d.dictname = ANY($1)
       UNION ALL
       SELECT 'text search parser', n.nspname, p.prsname, ''
         FROM pg_ts_parser p JOIN pg_namespace n ON n.oid = p.prsnamespace WHERE p.prsname = ANY($1)
       UNION ALL
       SELECT 'function', lower(n.nspname), lower(p.proname), (n.nspname = ANY(current_schemas(true)))::text
         FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE lower(p.proname) = ANY($1)`,
      [[...names]],
    )
  ).rows;
  return new Set(
    rows.flatMap((r) => {
      const [kind, schema, name] = [String(r['kind']), String(r['schema']), String(r['name'])];
      // A function is found by its schema, and (as the schema '') when that schema is on the search path.
      if (kind === 'function')
        return r['method'] === 'true'
          ? [keyOf(kind, schema, name), keyOf(kind, '', name)]
          : [keyOf(kind, schema, name)];
      return [keyOf(kind as NeedKind, schema, name, String(r['method']))];
    }),
  );
}

const keyOf = (kind: NeedKind, schema: string, name: string, method = '') =>
  JSON.stringify([kind, schema, name, method]);

export async function refuseUnmanagedNeedsMissing(
  session: Session,
  changes: readonly Change[],
  desired: SchemaModel,
): Promise<Change[]> {
  const ds = desired.defaultSchema;
  const needs = changes.flatMap((c) => needsOf(c, ds));
  if (needs.length === 0) return [];
  // What this plan creates before what needs it: types (enums, domains, composite types, a table's or a
  // view's row type).
  const created = new Set<string>();
  // Functions by lower-cased schema and name, and (as schema '') in any schema: a function need has lost its
  // case.
  const createdFunctions = new Set<string>();
  for (const c of changes) {
    if (c.kind === 'CreateEnum') created.add(objectKey(c.type.schema, c.type.name));
    if (c.kind === 'CreateObject') created.add(c.object.ref);
    if (c.kind === 'CreateTable') created.add(objectKey(c.table.schema, c.table.name));
    if (c.kind === 'CreateView') created.add(objectKey(c.view.schema, c.view.name));
    if (c.kind === 'CreateObject' && ['function', 'procedure', 'aggregate'].includes(c.object.objectType)) {
      const [schema = '', name = ''] = JSON.parse(c.object.ref) as string[];
      createdFunctions.add(objectKey(schema.toLowerCase(), name.toLowerCase()));
      createdFunctions.add(objectKey('', name.toLowerCase()));
    }
  }
  const open = needs.filter((n) =>
    n.kind === 'function'
      ? !n.schemas.some((s) => createdFunctions.has(objectKey(s, n.name)))
      : !n.schemas.some((s) => created.has(objectKey(s, n.name))),
  );
  if (open.length === 0) return [];
  const held = await present(session, [...new Set(open.map((n) => n.name))]);
  const has = (n: Need, kind: NeedKind) =>
    n.schemas.some((s) => held.has(keyOf(kind, s, n.name, kind === 'operator class' ? n.method : '')));
  const extensionsCreated = changes.some((c) => c.kind === 'CreateExtension');
  const declared = (n: Need, kind: NeedKind) =>
    desired.unmanaged.some((u) => u.objectKind === kind && u.name === n.name && n.schemas.includes(u.schema));
  const out: Change[] = [];
  const seen = new Set<string>();
  for (const n of open) {
    // A configuration's uses are its dictionaries and its parser, not told apart: either kind satisfies one.
    const kinds: NeedKind[] =
      n.kind === 'text search dictionary' ? ['text search dictionary', 'text search parser'] : [n.kind];
    if (kinds.some((k) => has(n, k))) continue;
    const declaredAs = kinds.find((k) => declared(n, k));
    // An extension this plan creates may bring it (its contents are not known before it exists).
    if (declaredAs === undefined && extensionsCreated) continue;
    const kind = declaredAs ?? (kinds.length > 1 ? 'text search dictionary or parser' : n.kind);
    // Unqualified, it would be looked for last in the default schema: named there.
    const schema = n.schemas[n.schemas.length - 1] ?? '';
    const what = `${kind} ${schema === '' ? n.name : `${schema}.${n.name}`}`;
    const message = `${n.by} needs ${what}, which the target database does not have and this plan does not create`;
    if (seen.has(message)) continue;
    seen.add(message);
    out.push({
      kind: 'Unsupported',
      object: n.by,
      reason:
        declaredAs !== undefined
          ? `${message}: the desired state declares it, but Ptah leaves ${/^[aeiou]/.test(kind) ? 'an' : 'a'} ${kind} alone (never creates it); create it first (a migration, or by hand), then plan again`
          : n.kind === 'function'
            ? `${message}: nothing in the desired state declares it, and none of that name is on the role's search path; declare it (CREATE FUNCTION ...) or the extension that brings it, or qualify the call with its schema, then plan again`
            : `${message}: nothing in the desired state declares it; declare the extension that brings it (CREATE EXTENSION ...), or create it first (a migration), then plan again`,
      ...(n.category !== undefined ? { category: n.category } : {}),
    });
  }
  return out;
}
