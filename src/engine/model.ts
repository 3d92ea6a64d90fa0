/**
 * The engine-neutral schema model. The live database and the desired SQL both end here, through the same
 * normaliser, so two models differ only when their content does. Nodes are plain frozen records with a
 * string `kind`; the diff compares them and never touches a database.
 */

/** An expression kept twice: as SQL to render, and as a canonical key to compare. */
export interface Expr {
  readonly text: string;
  readonly key: string;
}

/** A column type. `key` compares; `sql` renders. Built-in types have no schema. */
export interface TypeRef {
  readonly schema?: string;
  readonly name: string;
  /** Modifiers as written after the name, e.g. `(10,2)`; empty when none. */
  readonly mods: string;
  readonly array: boolean;
}

export interface Column {
  readonly kind: 'Column';
  readonly name: string;
  readonly type: TypeRef;
  readonly notNull: boolean;
  readonly default?: Expr;
  readonly identity?: 'always' | 'by default';
  /** A stored generated column's expression. */
  readonly generated?: Expr;
  /** serial/bigserial/smallserial: an owned sequence feeds the default. */
  readonly serial?: boolean;
  /** The sequence behind a serial column, when known (read from a database): retyped with the column. */
  readonly serialSequence?: { readonly schema: string; readonly name: string };
  /** As the dialect's SQL names it (PostgreSQL: `"C"`, `"s"."c"`; MySQL: the collation's name). */
  readonly collation?: string;
  readonly comment?: string;
  /** MySQL: `ON UPDATE` expression (e.g. CURRENT_TIMESTAMP); compared with the type. */
  readonly onUpdate?: Expr;
  /** MySQL 8: an INVISIBLE column; MariaDB's spelling is the same. */
  readonly invisible?: boolean;
  /** MySQL: a generated column's storage; absent means STORED (the only kind PostgreSQL has). */
  readonly generatedStorage?: 'virtual' | 'stored';
  /** Declared with `-- ptah:renamed-from <old>`: a live column of that name is this one, renamed. */
  readonly renamedFrom?: string;
  /** PostgreSQL: an identity column's sequence options that differ from PostgreSQL's choice for its type. */
  readonly identityOptions?: Readonly<Partial<Record<IdentityOption, string>>>;
  /** PostgreSQL: the identity sequence's name; in a desired state only when declared (SEQUENCE NAME). */
  readonly identitySequence?: { readonly schema: string; readonly name: string };
}

export type IdentityOption = 'increment' | 'minvalue' | 'maxvalue' | 'start' | 'cache' | 'cycle';

export type FkAction = 'no action' | 'restrict' | 'cascade' | 'set null' | 'set default';

export interface PrimaryKey {
  readonly kind: 'PrimaryKey';
  readonly name?: string;
  /** PostgreSQL: COMMENT ON CONSTRAINT (not compared with the definition). */
  readonly comment?: string;
  readonly columns: readonly string[];
  /** PostgreSQL: the constraint index's storage parameters, as sorted `name=value` texts. */
  readonly storage?: readonly string[];
}

export interface UniqueConstraint {
  readonly kind: 'Unique';
  readonly name?: string;
  /** PostgreSQL: COMMENT ON CONSTRAINT (not compared with the definition). */
  readonly comment?: string;
  readonly columns: readonly string[];
  readonly nullsNotDistinct: boolean;
  readonly deferrable: boolean;
  readonly initiallyDeferred: boolean;
  /** PostgreSQL: the constraint index's storage parameters, as sorted `name=value` texts. */
  readonly storage?: readonly string[];
}

export interface CheckConstraint {
  readonly kind: 'Check';
  readonly name?: string;
  /** PostgreSQL: COMMENT ON CONSTRAINT (not compared with the definition). */
  readonly comment?: string;
  readonly expression: Expr;
  /**
   * Added without checking existing rows (PostgreSQL's NOT VALID). Rendered; not part of the key: a live
   * NOT VALID one declared valid is validated, a live valid one declared NOT VALID is left (it holds more).
   */
  readonly notValid?: boolean;
  /** PostgreSQL: NO INHERIT, the check holds on this table only, not on its children. */
  readonly noInherit?: boolean;
}

/** PostgreSQL: `EXCLUDE USING gist (room WITH =, during WITH &&) WHERE (...) DEFERRABLE`. */
export interface ExclusionConstraint {
  readonly kind: 'Exclusion';
  readonly name?: string;
  /** PostgreSQL: COMMENT ON CONSTRAINT (not compared with the definition). */
  readonly comment?: string;
  /** The whole clause after the name, as rendered; `key` compares it. */
  readonly definition: Expr;
}

export interface ForeignKey {
  readonly kind: 'ForeignKey';
  readonly name?: string;
  /** PostgreSQL: COMMENT ON CONSTRAINT (not compared with the definition). */
  readonly comment?: string;
  readonly columns: readonly string[];
  readonly refSchema: string;
  readonly refTable: string;
  readonly refColumns: readonly string[];
  readonly onUpdate: FkAction;
  readonly onDelete: FkAction;
  readonly matchFull: boolean;
  readonly deferrable: boolean;
  readonly initiallyDeferred: boolean;
  /**
   * Added without checking existing rows (PostgreSQL's NOT VALID). Rendered; not part of the key: a live
   * NOT VALID one declared valid is validated, a live valid one declared NOT VALID is left (it holds more).
   */
  readonly notValid?: boolean;
}

export type Constraint = PrimaryKey | UniqueConstraint | CheckConstraint | ForeignKey | ExclusionConstraint;

export interface IndexKey {
  /** A plain column, or else an expression. */
  readonly column?: string;
  readonly expression?: Expr;
  /** As the SQL names it: `"text_pattern_ops"`, `"public"."gin_trgm_ops"`. */
  readonly opclass?: string;
  readonly descending: boolean;
  /** Only when it differs from the default for the direction. */
  readonly nulls?: 'first' | 'last';
  readonly collation?: string;
  /** MySQL: a prefix length in characters (or bytes for binary columns). */
  readonly length?: number;
}

export interface Index {
  readonly kind: 'Index';
  readonly name?: string;
  readonly unique: boolean;
  readonly method: string;
  readonly keys: readonly IndexKey[];
  readonly include: readonly string[];
  readonly where?: Expr;
  readonly nullsNotDistinct: boolean;
  /** PostgreSQL storage parameters (`WITH (fillfactor = 70)`) as sorted `name=value` texts. */
  readonly storage?: readonly string[];
  readonly comment?: string;
  /** MySQL 8 / MariaDB 10.6+: the optimiser ignores the index (IGNORED in MariaDB, INVISIBLE in MySQL). */
  readonly invisible?: boolean;
  /** How the server spells an invisible index (MariaDB: IGNORED); rendered, never compared. */
  readonly invisibleAs?: 'IGNORED' | 'INVISIBLE';
}

/**
 * Storage options a dialect keeps per table (MySQL: engine, collation, row format; PostgreSQL: storage
 * parameters, `toast.` ones prefixed), compared as a whole; the dialect renders a change of them.
 */
export type TableOptions = Readonly<Record<string, string>>;

/**
 * PostgreSQL: the table option saying a table is not written to the WAL (`CREATE UNLOGGED TABLE`), with
 * the value `unlogged`; a logged table has none. Not a storage parameter: no `WITH (...)` holds it.
 */
export const PERSISTENCE_OPTION = 'persistence';

export interface Table {
  readonly kind: 'Table';
  readonly schema: string;
  readonly name: string;
  readonly columns: readonly Column[];
  readonly constraints: readonly Constraint[];
  readonly indexes: readonly Index[];
  readonly comment?: string;
  readonly options?: TableOptions;
  /** Declared with `-- ptah:renamed-from <old>`: a live table of that name (same schema) is this one. */
  readonly renamedFrom?: string;
  /** A partitioned table's key (`RANGE (payment_date)`); compared, a change is refused. */
  readonly partitionBy?: Expr;
  /** A partition: its parent (same columns, so the model lists none for it) and its bound (rendered). */
  readonly partitionOf?: PartitionOf;
}

export interface PartitionOf {
  readonly schema: string;
  readonly table: string;
  /** As written after the parent (`FOR VALUES IN ('a')`, `DEFAULT`), for the statements. */
  readonly bound: string;
  /** The bound without its values: strategy, how many datums each side (`range 1`), hash modulus, DEFAULT. */
  readonly shape: string;
  /** Each value as written (SQL), lower datums then upper ones for a range; MINVALUE and MAXVALUE as such. */
  readonly datums: readonly string[];
  /**
   * The values as the key's type prints them on the server the plan is made against (the catalog's
   * constants; the desired literals cast there), so `'2024-01-01'` and `'2024-01-01 00:00:00+00'` compare
   * equal. Absent when the server was not asked (the key is an expression, or its type does not exist
   * yet): the bound is then not compared.
   */
  readonly values?: readonly string[];
}

export interface EnumType {
  readonly kind: 'Enum';
  readonly schema: string;
  readonly name: string;
  readonly values: readonly string[];
  readonly comment?: string;
}

export interface Sequence {
  readonly kind: 'Sequence';
  readonly schema: string;
  readonly name: string;
  readonly dataType: string;
  readonly start: string;
  readonly increment: string;
  readonly min: string;
  readonly max: string;
  readonly cache: string;
  readonly cycle: boolean;
  /** The column that owns the sequence, if any. Kept as parts: a quoted name may itself contain a dot. */
  readonly ownedBy?: SequenceOwner;
  readonly comment?: string;
}

export interface SequenceOwner {
  readonly schema: string;
  readonly table: string;
  readonly column: string;
}

export interface View {
  readonly kind: 'View';
  readonly schema: string;
  readonly name: string;
  readonly definition: Expr;
  readonly comment?: string;
  /** MySQL: algorithm, security, check option; the dialect folds them into the definition's key. */
  readonly options?: TableOptions;
}

export interface Extension {
  readonly kind: 'Extension';
  readonly name: string;
  readonly schema?: string;
  readonly version?: string;
}

export interface SchemaNamespace {
  readonly kind: 'Schema';
  readonly name: string;
  readonly comment?: string;
}

/** One declared row: values as text (null for SQL NULL), keyed by the table's primary key. */
export type RowValues = Readonly<Record<string, string | null>>;

/** Reference rows a desired state declares for one table. */
export interface RowSet {
  readonly kind: 'RowSet';
  readonly schema: string;
  readonly table: string;
  readonly key: readonly string[];
  readonly columns: readonly string[];
  readonly rows: readonly RowValues[];
}

/** The kinds of objects a dialect declares in one statement each and compares whole. */
export type DefinedObjectType =
  | 'function'
  | 'procedure'
  | 'aggregate'
  | 'collation'
  | 'text search configuration'
  | 'composite type'
  | 'trigger'
  | 'domain'
  | 'policy'
  | 'row security'
  | 'materialized view'
  | 'index'
  | 'cluster'
  | 'column statistics';

/**
 * When an object is created relative to the tables and views (dropped in the reverse order): `types` with
 * the enums, before every table (domains); `routines` before the tables, whose defaults may call them;
 * `after-tables` once the tables exist (a routine over a table's row type); `matviews` before the views;
 * `after-views` last (triggers, policies, row-level security, a materialized view's indexes).
 */
export type ObjectStage = 'types' | 'routines' | 'after-tables' | 'matviews' | 'after-views';

/**
 * An object a dialect declares in one statement and compares as a whole (PostgreSQL's functions,
 * procedures, triggers, domains, policies, row-level security, materialized views). The dialect's loader
 * writes the statements that create, replace and drop it, so the core orders and classifies them without
 * knowing their grammar. A dialect without such objects never has any (the list is optional).
 */
export interface DefinedObject {
  readonly kind: 'Defined';
  readonly objectType: DefinedObjectType;
  readonly schema: string;
  /** Unique among the objects of its type in its schema: `f(integer, text)`, `orders.audit`. */
  readonly name: string;
  /** What other objects name it by, `objectKey(schema, bare name)`; overloaded functions share one. */
  readonly ref: string;
  /** The table or view it sits on (same schema): triggers, policies, row-level security, indexes. */
  readonly table?: string;
  /** The definition's comparison key. */
  readonly key: string;
  readonly create: readonly string[];
  readonly drop: readonly string[];
  /** When live and desired have the same `replaceKey`, `replace` changes the live object in place. */
  readonly replaceKey?: string;
  readonly replace?: readonly string[];
  /** The refs it needs (types, functions, tables, views): created after them, dropped before them. */
  readonly uses: readonly string[];
  readonly stage: ObjectStage;
  readonly comment?: string;
  /** COMMENT ON's target as the dialect spells it (`FUNCTION "s"."f"(integer)`). */
  readonly commentOn?: string;
  /**
   * Live only: the unmanaged objects that use it (an operator, a cast, ...). It is never dropped under
   * them, and a change that needs it dropped is refused naming them.
   */
  readonly heldBy?: readonly string[];
  /**
   * It stays valid while its table's columns are dropped or retyped (a MySQL trigger), so it is not dropped
   * and created around such a change: with no transactional DDL, that would leave writes without it.
   */
  readonly survivesColumnChanges?: boolean;
  /**
   * A collation: how a column's or an index key's `collation` names it; a text search configuration: how
   * a constant naming it reads in an expression's key (the dialect's spellings). A change that would drop
   * it under them is refused naming them.
   */
  readonly namedAs?: readonly string[];
}

/** Something the database holds that the model does not manage: reported, never dropped. */
export interface Unmanaged {
  readonly kind: 'Unmanaged';
  readonly objectKind: string;
  readonly schema: string;
  readonly name: string;
}

export interface SchemaModel {
  /**
   * Where an unqualified name lives: the connecting role's current_schema(). Never dropped, like public,
   * because the desired state names it without declaring it.
   */
  readonly defaultSchema: string;
  readonly schemas: readonly SchemaNamespace[];
  readonly extensions: readonly Extension[];
  readonly enums: readonly EnumType[];
  readonly sequences: readonly Sequence[];
  readonly tables: readonly Table[];
  readonly views: readonly View[];
  readonly rows: readonly RowSet[];
  readonly unmanaged: readonly Unmanaged[];
  /** Functions, triggers, domains, ... (PostgreSQL); absent in a dialect that has none. */
  readonly objects?: readonly DefinedObject[];
}

/** The schema a database always has; the default schema when a role's search_path names no other. */
export const DEFAULT_SCHEMA = 'public';

export function emptyModel(defaultSchema: string = DEFAULT_SCHEMA): SchemaModel {
  return {
    defaultSchema,
    schemas: [],
    extensions: [],
    enums: [],
    sequences: [],
    tables: [],
    views: [],
    rows: [],
    unmanaged: [],
  };
}

/**
 * The map key of a schema-qualified object. Identifiers may hold any character, dots included, so joining
 * with a separator is ambiguous ("a.b"."c" and "a"."b.c" would meet); a JSON array keeps the parts apart.
 */
export function objectKey(schema: string, name: string): string {
  // As JSON.stringify writes it, without the array: most names have nothing it would escape.
  return writtenAsIs(schema) && writtenAsIs(name)
    ? `["${schema}","${name}"]`
    : JSON.stringify([schema, name]);
}

/** Whether JSON.stringify writes the text as itself: no quote, backslash, control character or surrogate. */
function writtenAsIs(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0x20 || unit === 0x22 || unit === 0x5c || (unit >= 0xd800 && unit <= 0xdfff)) return false;
  }
  return true;
}

/** A type's comparison key; structural like every key here, so no name's characters can fake a boundary. */
export function typeKey(t: TypeRef): string {
  return JSON.stringify([t.schema ?? null, t.name, t.mods, t.array]);
}

/** `typeKey(a) === typeKey(b)`, without writing either. */
export function sameType(a: TypeRef, b: TypeRef): boolean {
  return (
    (a.schema ?? null) === (b.schema ?? null) && a.name === b.name && a.mods === b.mods && a.array === b.array
  );
}

/** A constraint's definition without its name: what matching by content compares. */
export function constraintKey(c: Constraint): string {
  return JSON.stringify(constraintParts(c));
}

/** `constraintKey(a) === constraintKey(b)`, without writing either (a no-op plan compares every one). */
export function sameConstraint(a: Constraint, b: Constraint): boolean {
  return a.kind === b.kind && sameJson(constraintParts(a), constraintParts(b));
}

function constraintParts(c: Constraint): unknown[] {
  switch (c.kind) {
    case 'PrimaryKey':
      return ['pk', c.columns, ...storageKey(c.storage)];
    case 'Unique':
      return [
        'uq',
        c.columns,
        c.nullsNotDistinct,
        c.deferrable,
        c.initiallyDeferred,
        ...storageKey(c.storage),
      ];
    case 'Check':
      return ['ck', c.expression.key, ...(c.noInherit === true ? ['no inherit'] : [])];
    case 'Exclusion':
      return ['ex', c.definition.key];
    case 'ForeignKey':
      return [
        'fk',
        c.columns,
        c.refSchema,
        c.refTable,
        c.refColumns,
        c.onUpdate,
        c.onDelete,
        c.matchFull,
        c.deferrable,
        c.initiallyDeferred,
      ];
  }
}

/**
 * `JSON.stringify(a) === JSON.stringify(b)` for what keys are made of (primitives and arrays of them),
 * compared in place: an array's undefined, and a number JSON cannot write, are written as null.
 */
function sameJson(a: unknown, b: unknown): boolean {
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameJson(a[i] as unknown, b[i] as unknown)) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  if (typeof a === 'object' && a !== null) return JSON.stringify(a) === JSON.stringify(b);
  return asJsonScalar(a) === asJsonScalar(b);
}

const asJsonScalar = (v: unknown) =>
  v === undefined || (typeof v === 'number' && !Number.isFinite(v)) ? null : v;

/** Storage parameters join a constraint's key only when there are some, so other keys keep their shape. */
function storageKey(storage: readonly string[] | undefined): (readonly string[])[] {
  return storage === undefined || storage.length === 0 ? [] : [storage];
}

export function indexKey(i: Index): string {
  return JSON.stringify(indexParts(i));
}

/** `indexKey(a) === indexKey(b)`, without writing either. */
export function sameIndex(a: Index, b: Index): boolean {
  return sameJson(indexParts(a), indexParts(b));
}

function indexParts(i: Index): unknown[] {
  const keys = i.keys.map((k) => [
    k.column ?? null,
    k.expression?.key ?? null,
    k.opclass ?? null,
    k.collation ?? null,
    k.descending,
    k.nulls ?? null,
    k.length ?? null,
  ]);
  return [
    i.unique,
    i.method,
    keys,
    i.include,
    i.where?.key ?? null,
    i.nullsNotDistinct,
    i.invisible ?? false,
    i.storage ?? [],
  ];
}
