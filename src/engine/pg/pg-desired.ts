/**
 * Desired state for PostgreSQL: DDL (and INSERTs for reference rows) parsed by the real PostgreSQL grammar
 * (libpg-query) into the schema model. The inspector feeds the catalog's own deparsed DDL through this same
 * loader, so both sides share one normaliser.
 */
import { setImmediate as setImmediatePromise } from 'node:timers/promises';
import { ensureParser, parseSync } from './pg-parser.ts';
import { tableBodiesApart } from './pg-table-bodies.ts';
import { type ConstraintTemplate, constraintTemplate, withNames } from './pg-constraint-templates.ts';
import { withIndexNames } from './pg-index-templates.ts';
import { DesiredStateError } from '../desired-state-error.ts';
import {
  DEFAULT_STATISTICS,
  noSettings,
  type TableSettings,
  tableSettingObjects,
} from './pg-table-settings.ts';
import type {
  Column,
  Constraint,
  Expr,
  PartitionOf,
  EnumType,
  Extension,
  FkAction,
  Index,
  IndexKey,
  RowSet,
  RowValues,
  SchemaModel,
  SchemaNamespace,
  Sequence,
  Table,
  Unmanaged,
  View,
} from '../model.ts';
import { DEFAULT_SCHEMA, PERSISTENCE_OPTION, objectKey } from '../model.ts';
import { type StatementText, renameAnnotations } from './pg-annotations.ts';
import { ObjectDeclarationError, PgObjects, isPlainAggregate } from './pg-objects.ts';
import { partitionKey, partitionOf } from './pg-partitions.ts';
import { statementEndAfter } from './pg-statement-ends.ts';
import { identityDeclaration } from './pg-identity.ts';
import {
  alterStorageParameters,
  asTableOptions,
  refuseUnmanagedColumnClauses,
  refuseUnmanagedConstraintClauses,
  refuseUnmanagedForeignKeyClauses,
  refuseUnmanagedIndexClauses,
  refuseUnmanagedTableClauses,
  refuseUnmanagedViewClauses,
  storageParameters,
} from './pg-storage.ts';
import {
  type AstNode,
  canonicalKey,
  constText,
  deparseNode,
  exprFromAst,
  isRecord,
  listItems,
  names,
  quoteIdent,
  resolvedNameSql,
  typeRefFromAst,
} from './pg-normalize.ts';

export { DesiredStateError };

/**
 * An index key's COLLATE naming its column's own collation is no choice at all: PostgreSQL stores the key's
 * collation as the column's, and pg_get_indexdef prints COLLATE only where they differ. Left in, the
 * desired key would never equal the live one, and the index would be dropped and created on every plan.
 */
function withoutColumnsOwnCollation(index: Index, columns: readonly Column[]): Index {
  const own = (k: IndexKey) =>
    k.collation !== undefined &&
    k.column !== undefined &&
    columns.find((c) => c.name === k.column)?.collation === k.collation;
  if (!index.keys.some(own)) return index;
  return {
    ...index,
    keys: index.keys.map((k) => {
      if (!own(k)) return k;
      const { collation: _own, ...rest } = k;
      return rest;
    }),
  };
}

export interface ParsedStatement {
  readonly node: AstNode;
  readonly type: string;
  readonly line: number;
  readonly column: number;
  readonly source: string;
  /** The statement's text, for the annotations the grammar drops with the comments. */
  readonly text: StatementText;
  /**
   * A plain CREATE TABLE's elements when its body was parsed apart (pg-table-bodies.ts); its node then has
   * none. Each element node is shared by every table whose body has the same element text.
   */
  readonly elements?: readonly AstNode[];
}

/**
 * A plain table read from the catalog as once-parsed elements (pg-catalog-statements.ts): the header is its
 * `CREATE TABLE s.t ()` with no elements; each column and constraint is a node shared by every table whose
 * catalog text has the same body (parsed as `c <body>` and `CONSTRAINT c <body>`), with the element's own
 * name beside it. A foreign key's node is its own (its referenced table put back in).
 */
export interface TableOfPieces {
  readonly kind: 'table of pieces';
  readonly header: ParsedStatement;
  readonly columns: readonly { readonly name: string; readonly def: AstNode }[];
  readonly constraints: readonly { readonly name: string; readonly constraint: AstNode }[];
}

/** A table's index from the catalog: its statement, and the node every index of the same text shares. */
export interface IndexOfPieces {
  readonly kind: 'index of pieces';
  readonly statement: ParsedStatement;
  /** The index statement parsed with fixed names (`CREATE INDEX i ON s.t ...`). */
  readonly shared: AstNode;
}

/**
 * Line and column (both from 1) of positions in one text. Columns count characters, not bytes, so a file
 * with non-ASCII text points where an editor does. The parser reports statement positions in UTF-8 bytes,
 * JavaScript indexes UTF-16 units; both are converted in one pass over the text, not one per statement.
 */
class Positions {
  private readonly lineStarts: number[] = [0];
  private readonly bytes: Buffer;
  private lastByte = 0;
  private lastChar = 0;
  constructor(text: string) {
    for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) this.lineStarts.push(i + 1);
    this.bytes = Buffer.from(text, 'utf8');
  }
  /** Byte offsets must be asked in increasing order (statements come in file order). */
  charOfByte(byteOffset: number): number {
    if (byteOffset < this.lastByte) {
      this.lastByte = 0;
      this.lastChar = 0;
    }
    this.lastChar += this.bytes.subarray(this.lastByte, byteOffset).toString('utf8').length;
    this.lastByte = byteOffset;
    return this.lastChar;
  }
  at(index: number): { line: number; column: number } {
    let lo = 0;
    let hi = this.lineStarts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if ((this.lineStarts[mid] ?? 0) <= index) lo = mid;
      else hi = mid - 1;
    }
    return { line: lo + 1, column: index - (this.lineStarts[lo] ?? 0) + 1 };
  }
}

/**
 * psql meta-commands (`\restrict`, `\connect`, `\unrestrict` in pg_dump output) configure the client, not
 * the schema: blanked, keeping every position.
 */
function blankMetaCommands(sql: string): string {
  return sql.replace(/^\\[a-z].*$/gm, (m) => ' '.repeat(m.length));
}

export function parseStatements(rawSql: string, source: string): ParsedStatement[] {
  const sql = blankMetaCommands(rawSql);
  if (sql.trim() === '') return [];
  const positions = new Positions(sql);
  const pieces = piecesOf(sql);
  if (pieces.length > 1) {
    try {
      return pieces.flatMap((p, i) => {
        const tree = parseTree(p.text);
        if (i < pieces.length - 1 && !endsAtItsCut(tree, p.text)) throw new Error('not a statement end');
        return statementsOf(tree, p.text, p.byteOffset, sql, positions, source);
      });
    } catch {
      // The error's position and message are the whole text's (and a cut that was not a statement end,
      // which only a whole parse can tell, is one): parsed again whole below.
    }
  }
  let tree: ParseTree;
  try {
    tree = parseTree(sql);
  } catch (error) {
    const e = error as Error & { sqlDetails?: { cursorPosition?: number } };
    const pos = e.sqlDetails?.cursorPosition;
    const p = pos === undefined ? undefined : positions.at(pos);
    const at = p === undefined ? '' : `:${p.line}:${p.column}`;
    throw new DesiredStateError(
      `${source}${at}: SQL syntax error: ${e.message}; fix the statement and plan again`,
    );
  }
  return statementsOf(tree, sql, 0, sql, positions, source);
}

/**
 * The statements of a text as parseStatements gives them, handed to `visit` a piece at a time, so a caller
 * can use each piece's statements before the next piece is parsed (the trees of a long file are then not
 * all held at once). When a cut turns out not to be a statement end, the rest comes from the whole text,
 * past the statements already handed out, which the whole text's must end exactly as they did. False when
 * the text does not parse, or does not end those statements there: parseStatements then says why.
 *
 * Between pieces it gives the event loop a turn: a plan loads the desired state while the catalog queries
 * run, and each answer is read (and the next query sent) between two pieces rather than after the file.
 */
async function forEachParsedPiece(
  rawSql: string,
  source: string,
  visit: (statements: readonly ParsedStatement[]) => void,
): Promise<boolean> {
  const sql = blankMetaCommands(rawSql);
  if (sql.trim() === '') return true;
  const positions = new Positions(sql);
  const pieces = piecesOf(sql);
  const elements = new Map<string, AstNode>();
  let handed = 0;
  let handedEnd = 0;
  for (const [i, p] of pieces.entries()) {
    const isLast = i === pieces.length - 1;
    let statements = withElementsApart(p, isLast, sql, positions, source, elements);
    if (statements === undefined)
      try {
        const tree = parseTree(p.text);
        if (isLast || endsAtItsCut(tree, p.text))
          statements = statementsOf(tree, p.text, p.byteOffset, sql, positions, source);
      } catch {
        // Parsed below as the whole text, which gives the error's position and message.
      }
    if (statements === undefined) break;
    visit(statements);
    handed += statements.length;
    const last = statements[statements.length - 1];
    if (last !== undefined) handedEnd = last.text.offset + last.text.end;
    if (i === pieces.length - 1) return true;
    await setImmediatePromise();
  }
  let all: ParsedStatement[];
  try {
    all = statementsOf(parseTree(sql), sql, 0, sql, positions, source);
  } catch {
    return false;
  }
  const last = all[handed - 1];
  if (handed > 0 && (last === undefined || last.text.end !== handedEnd)) return false;
  visit(all.slice(handed));
  return true;
}

interface ParseTree {
  readonly stmts?: readonly { stmt: AstNode; stmt_location?: number; stmt_len?: number }[];
}

/**
 * A piece's statements with its plain tables' bodies and index statements parsed apart (pg-table-bodies.ts):
 * each element text, constraint template and index template not yet in `parsed` is parsed once, all of
 * them in one batch, and each table and index gets the shared nodes with its own names. Undefined when the
 * piece has neither, or when anything is not as the reading expected (an element that is not one table
 * element, a template that does not read its fixed names, a body that does not land in its CREATE TABLE):
 * the caller then parses the piece as written, which also reports any syntax error as it always has.
 */
function withElementsApart(
  piece: { text: string; byteOffset: number },
  isLast: boolean,
  whole: string,
  positions: Positions,
  source: string,
  parsed: Map<string, AstNode>,
): ParsedStatement[] | undefined {
  const apart = tableBodiesApart(piece.text);
  if (apart === undefined) return undefined;
  try {
    // A constraint is parsed as its template, once per shape (pg-constraint-templates.ts).
    const templates = new Map<string, ConstraintTemplate | undefined>();
    for (const b of apart.bodies)
      for (const e of b.elements) if (!templates.has(e)) templates.set(e, constraintTemplate(e));
    const keyOf = (e: string) => templates.get(e)?.text ?? e;
    const fresh = [...new Set([...templates.keys()].map(keyOf))].filter((k) => !parsed.has(k));
    // Index templates share the map: each starts `CREATE`, which no element text can.
    const freshIndexes = [...new Set(apart.indexes.map((i) => i.template.text))].filter(
      (k) => !parsed.has(k),
    );
    if (fresh.length + freshIndexes.length > 0) {
      const stmts =
        parseTree([...fresh.map((e) => `CREATE TABLE x (${e});`), ...freshIndexes].join('\n')).stmts ?? [];
      if (stmts.length !== fresh.length + freshIndexes.length) return undefined;
      const nodes = stmts.map((s, i) => {
        if (i >= fresh.length) return isRecord(s.stmt['IndexStmt']) ? s.stmt['IndexStmt'] : undefined;
        const create = s.stmt['CreateStmt'];
        const elts = isRecord(create) ? create['tableElts'] : undefined;
        return Array.isArray(elts) && elts.length === 1 && isRecord(elts[0]) ? elts[0] : undefined;
      });
      if (nodes.some((n) => n === undefined)) return undefined;
      [...fresh, ...freshIndexes].forEach((e, i) => parsed.set(e, nodes[i] as AstNode));
    }
    // Each taken index statement goes back among the others where the parser would have placed it.
    const indexStatements: { stmt: AstNode; stmt_location: number; stmt_len: number }[] = [];
    for (const i of apart.indexes) {
      const node = withIndexNames(parsed.get(i.template.text) as AstNode, i.template);
      if (node === undefined) return undefined;
      indexStatements.push({ stmt: { IndexStmt: node }, stmt_location: i.from, stmt_len: i.end - i.from });
    }
    const parsedText = parseTree(apart.text);
    const tree: ParseTree =
      indexStatements.length === 0
        ? parsedText
        : {
            stmts: [...(parsedText.stmts ?? []), ...indexStatements].sort(
              (a, b) => (a.stmt_location ?? 0) - (b.stmt_location ?? 0),
            ),
          };
    if (!isLast && !endsAtItsCut(tree, apart.text)) return undefined;
    const out: ParsedStatement[] = [];
    let taken = 0;
    for (const s of statementsOf(tree, apart.text, piece.byteOffset, whole, positions, source)) {
      const body = apart.bodies[taken];
      if (s.type !== 'CreateStmt' || body === undefined || body.byteOffset >= s.text.end) {
        out.push(s);
        continue;
      }
      if (body.byteOffset < s.text.start || s.node['tableElts'] !== undefined) return undefined;
      const elements: AstNode[] = [];
      for (const e of body.elements) {
        const node = parsed.get(keyOf(e)) as AstNode;
        const template = templates.get(e);
        const named = template === undefined ? node : withNames(node, template);
        if (named === undefined) return undefined;
        elements.push(named);
      }
      out.push({ ...s, elements });
      taken++;
    }
    return taken === apart.bodies.length ? out : undefined;
  } catch {
    return undefined;
  }
}

const parseTree = (sql: string): ParseTree => parseSync(sql) as ParseTree;

/**
 * A long text is parsed in pieces of about this many characters: the parser's WebAssembly memory grows to
 * hold the largest text it is given (and its JSON tree) and never shrinks, and one tree of a whole 2,000-table
 * file is tens of megabytes held at once; pieces keep both small.
 */
const PIECE_CHARS = 64 * 1024;

/**
 * The text cut after a `;` that ends a line outside any literal, quoted name, comment or dollar-quoted body
 * (statementEndAfter; the newline starts the next piece). The cut is still checked by the parse: inside a
 * statement (a BEGIN ATOMIC body, a rule's action list) it leaves the statement unfinished and the piece does
 * not parse, or its last statement does not end at the cut (endsAtItsCut). In every such case the text is
 * parsed whole instead; so a piece that is used ends where a statement of the whole text ends, and its
 * statements are the whole text's.
 */
function piecesOf(sql: string): { text: string; byteOffset: number }[] {
  if (sql.length <= PIECE_CHARS) return [{ text: sql, byteOffset: 0 }];
  const out: { text: string; byteOffset: number }[] = [];
  let from = 0;
  let byteOffset = 0;
  while (from < sql.length) {
    const cut = statementEndAfter(sql, from, from + PIECE_CHARS);
    // The newline starts the next piece, as it starts the next statement's text in the whole text.
    const to = cut < 0 || sql.length - (cut + 1) < PIECE_CHARS / 4 ? sql.length : cut + 1;
    const text = sql.slice(from, to);
    if (text.trim() !== '') out.push({ text, byteOffset });
    byteOffset += Buffer.byteLength(text);
    from = to;
  }
  return out;
}

/**
 * Whether the piece's last statement ends at the `;` the piece was cut after: the parser's own word that the
 * cut is a statement end (a `;` in a line comment, say, ends no statement).
 */
function endsAtItsCut(tree: ParseTree, text: string): boolean {
  const last = tree.stmts?.[tree.stmts.length - 1];
  const len = last?.stmt_len ?? 0;
  return len > 0 && (last?.stmt_location ?? 0) + len === Buffer.byteLength(text) - 1;
}

/**
 * The statements of one parsed text. `text` starts `byteOffset` bytes into `whole`, whose positions give
 * each statement's line and column; the statement's own text (for annotations) is the piece's.
 */
function statementsOf(
  tree: ParseTree,
  text: string,
  byteOffset: number,
  whole: string,
  positions: Positions,
  source: string,
): ParsedStatement[] {
  const bytes = Buffer.from(text, 'utf8');
  return (tree.stmts ?? []).map((s) => {
    const type = Object.keys(s.stmt)[0] ?? '';
    const from = s.stmt_location ?? 0;
    const start = statementStart(whole, positions.charOfByte(byteOffset + from));
    const { line, column } = positions.at(start);
    // A length of 0 (or none) means the statement runs to the end of the text.
    const end = s.stmt_len === undefined || s.stmt_len === 0 ? bytes.length : from + s.stmt_len;
    return {
      node: s.stmt[type] as AstNode,
      type,
      line,
      column,
      source,
      text: { bytes, start: from, end, offset: byteOffset },
    };
  });
}

/** A statement's location includes the whitespace and comments before it; its position is the first real one. */
function statementStart(sql: string, from: number): number {
  let i = from;
  for (;;) {
    while (i < sql.length && /\s/.test(sql[i] ?? '')) i++;
    if (sql.startsWith('--', i)) {
      const nl = sql.indexOf('\n', i);
      i = nl < 0 ? sql.length : nl + 1;
    } else if (sql.startsWith('/*', i)) {
      const end = sql.indexOf('*/', i + 2);
      i = end < 0 ? sql.length : end + 2;
    } else return i;
  }
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] extends readonly (infer U)[] ? U[] : T[K] };

interface TableDraft {
  schema: string;
  name: string;
  renamedFrom?: string;
  columns: Mutable<Column>[];
  constraints: Constraint[];
  indexes: Index[];
  /** Storage parameters (`WITH (...)`), sorted `name=value` texts. */
  storage: string[];
  /** CREATE UNLOGGED TABLE. */
  unlogged: boolean;
  comment?: string;
  partitionBy?: Expr;
  partitionOf?: PartitionOf;
  /** CLUSTER ON and column statistics targets, from ALTER TABLE. */
  settings: TableSettings;
}

interface ViewDraft {
  schema: string;
  name: string;
  query: AstNode;
  comment?: string;
}

/** A relation's name; an unqualified one lives in the default schema (the role's current_schema()). */
function rel(rv: unknown, defaultSchema: string): { schema: string; name: string } {
  const r = (isRecord(rv) && isRecord(rv['RangeVar']) ? rv['RangeVar'] : rv) as AstNode;
  return { schema: String(r['schemaname'] ?? defaultSchema), name: String(r['relname'] ?? '') };
}

const FK_ACTIONS: Readonly<Record<string, FkAction>> = {
  a: 'no action',
  r: 'restrict',
  c: 'cascade',
  n: 'set null',
  d: 'set default',
};

function defElemValue(arg: unknown): string {
  if (!isRecord(arg)) return '';
  if (isRecord(arg['Integer'])) return String(arg['Integer']['ival'] ?? 0);
  if (isRecord(arg['Float'])) return String(arg['Float']['fval'] ?? '0');
  if (isRecord(arg['String'])) return String(arg['String']['sval'] ?? '');
  if (isRecord(arg['Boolean'])) return arg['Boolean']['boolval'] === true ? 'true' : 'false';
  // Only a sequence's AS type comes here, and that is always built in: no schema to resolve.
  if (isRecord(arg['TypeName'])) return typeRefFromAst(arg['TypeName'], DEFAULT_SCHEMA).type.name;
  if (isRecord(arg['List'])) return names(arg['List']['items']).join('.');
  return '';
}

const SEQ_LIMITS: Readonly<Record<string, [string, string]>> = {
  smallint: ['-32768', '32767'],
  integer: ['-2147483648', '2147483647'],
  bigint: ['-9223372036854775808', '9223372036854775807'],
};

/** Builds a model from SQL, statement by statement. */
export class DesiredStateBuilder {
  private readonly schemas = new Map<string, SchemaNamespace>();
  private readonly extensions = new Map<string, Extension>();
  private readonly enums = new Map<string, EnumType>();
  private readonly sequences = new Map<string, Mutable<Sequence>>();
  private readonly tables = new Map<string, TableDraft>();
  private readonly views = new Map<string, ViewDraft>();
  private readonly rows = new Map<
    string,
    { schema: string; table: string; columns: string[]; rows: RowValues[]; where: string }
  >();
  private readonly unmanaged: Unmanaged[] = [];
  /** Relations declared but not managed (partitioned, partitions, inheritance children, ...): by key. */
  private readonly unmanagedRelations = new Set<string>();
  /** Named indexes on those relations, so a comment on one is recognised as part of it. */
  private readonly indexesOfUnmanaged = new Set<string>();
  /** Every problem found so far: a run reports them all, not the first. */
  private readonly problems: string[] = [];

  /** Functions, triggers, domains, policies, row-level security. */
  private readonly objects: PgObjects;

  /** What each once-parsed catalog piece normalises to, under its piece's fixed name (addCatalogPieces). */
  private readonly pieceConstraints = new WeakMap<AstNode, Constraint>();
  private readonly pieceIndexes = new WeakMap<AstNode, Index>();
  /** What each column node shared by several tables normalises to (sharedColumn). */
  private readonly sharedColumns = new WeakMap<
    AstNode,
    { readonly column: Mutable<Column>; readonly constraints: readonly Constraint[] }
  >();

  /** @param defaultSchema where unqualified names live: the connecting role's current_schema(). */
  constructor(private readonly defaultSchema: string) {
    this.objects = new PgObjects(defaultSchema);
  }

  /** Runs a step of the object loader, giving its problem this statement's position. */
  private objectStep(s: ParsedStatement, step: () => void): void {
    try {
      step();
    } catch (error) {
      if (error instanceof ObjectDeclarationError)
        throw new DesiredStateError(`${this.where(s)}: ${error.message}`);
      throw error;
    }
  }

  /** Adds one file. A problem in a statement is recorded and the next statement is read. */
  addSql(sql: string, source: string): void {
    this.addFiles([{ path: source, sql }]);
  }

  /**
   * The desired files, declarations in any order: every object is declared first (schemas, types,
   * sequences, tables, functions, views), then what names one (constraints added by ALTER TABLE, indexes,
   * triggers, policies, rows), then comments; within each, in file order. Every problem is collected.
   */
  addFiles(files: readonly { path: string; sql: string }[]): void {
    const all: ParsedStatement[] = [];
    for (const f of files) {
      try {
        all.push(...parseStatements(f.sql, f.path).flatMap(schemaElements));
      } catch (error) {
        if (!(error instanceof DesiredStateError)) throw error;
        this.problems.push(error.message);
      }
    }
    for (const s of inLoadOrder(all)) this.addCollectingProblems(s);
  }

  /**
   * addFiles, with each declaration (load stage 0) loaded as soon as its piece of text is parsed: the
   * trees of a long file's CREATE TABLE statements are then never all held at once. What names other
   * objects and the comments wait for every file, as in addFiles, so the load order and the order of the
   * problems are the same. False when a file does not parse: this builder is then partly loaded, and the
   * caller loads the files into a fresh one with addFiles, which reports the syntax error as it always has.
   */
  async addFilesAsParsed(files: readonly { path: string; sql: string }[]): Promise<boolean> {
    const later: ParsedStatement[] = [];
    for (const f of files) {
      const parsed = await forEachParsedPiece(f.sql, f.path, (statements) => {
        for (const s of statements.flatMap(schemaElements)) {
          if (loadStage(s) === 0) this.addCollectingProblems(s);
          else later.push(s);
        }
      });
      if (!parsed) return false;
    }
    for (const s of inLoadOrder(later)) this.addCollectingProblems(s);
    return true;
  }

  /** addStatement, its problem recorded and the next statement read. */
  private addCollectingProblems(s: ParsedStatement): void {
    try {
      this.addStatement(s);
    } catch (error) {
      if (!(error instanceof DesiredStateError)) throw error;
      this.problems.push(error.message);
    }
  }

  addUnmanaged(u: Unmanaged): void {
    if (
      !this.unmanaged.some((x) => x.objectKind === u.objectKind && x.schema === u.schema && x.name === u.name)
    )
      this.unmanaged.push(u);
  }

  private declareUnmanaged(objectKind: string, schema: string, name: string): void {
    this.addUnmanaged({ kind: 'Unmanaged', objectKind, schema, name });
  }

  /** A relation the engine leaves alone: statements about it are part of it, and it is never dropped. */
  private unmanagedRelation(objectKind: string, schema: string, name: string): void {
    const key = objectKey(schema, name);
    this.tables.delete(key);
    this.unmanagedRelations.add(key);
    this.declareUnmanaged(objectKind, schema, name);
  }

  private isUnmanagedRelation(r: { schema: string; name: string }): boolean {
    return this.unmanagedRelations.has(objectKey(r.schema, r.name));
  }

  private where(s: ParsedStatement): string {
    return `${s.source}:${s.line}:${s.column}`;
  }

  private table(schema: string, name: string, s: ParsedStatement): TableDraft {
    const t = this.tables.get(objectKey(schema, name));
    if (!t)
      throw new DesiredStateError(
        `${this.where(s)}: table ${schema}.${name} is not declared before it is used; declare it first`,
      );
    return t;
  }

  addStatement(s: ParsedStatement): void {
    const n = s.node;
    switch (s.type) {
      case 'CreateSchemaStmt': {
        const name = String(n['schemaname']);
        this.schemas.set(name, { kind: 'Schema', name });
        return;
      }
      case 'CreateExtensionStmt': {
        const name = String(n['extname']);
        if (name === 'plpgsql') return; // built into every database; the inspector never lists it
        let schema: string | undefined;
        let version: string | undefined;
        for (const o of (n['options'] as unknown[]) ?? []) {
          const d = (o as AstNode)['DefElem'] as AstNode;
          if (d['defname'] === 'schema') schema = defElemValue(d['arg']);
          if (d['defname'] === 'new_version') version = defElemValue(d['arg']);
        }
        this.extensions.set(name, {
          kind: 'Extension',
          name,
          ...(schema ? { schema } : {}),
          ...(version ? { version } : {}),
        });
        return;
      }
      case 'CreateEnumStmt': {
        const parts = names(n['typeName']);
        const name = parts[parts.length - 1] ?? '';
        const schema =
          parts.length > 1 ? (parts[parts.length - 2] ?? this.defaultSchema) : this.defaultSchema;
        this.enums.set(objectKey(schema, name), { kind: 'Enum', schema, name, values: names(n['vals']) });
        return;
      }
      case 'CreateSeqStmt':
      case 'AlterSeqStmt': {
        const { schema, name } = rel(n['sequence'], this.defaultSchema);
        const key = objectKey(schema, name);
        let seq = this.sequences.get(key);
        if (!seq) {
          if (s.type === 'AlterSeqStmt')
            throw new DesiredStateError(
              `${this.where(s)}: sequence ${schema}.${name} is altered before it is created`,
            );
          seq = {
            kind: 'Sequence',
            schema,
            name,
            dataType: 'bigint',
            start: '',
            increment: '1',
            min: '',
            max: '',
            cache: '1',
            cycle: false,
          };
          this.sequences.set(key, seq);
        }
        for (const o of (n['options'] as unknown[]) ?? []) {
          const d = (o as AstNode)['DefElem'] as AstNode;
          const v = defElemValue(d['arg']);
          switch (d['defname']) {
            case 'as':
              seq.dataType = v;
              break;
            case 'increment':
              seq.increment = v;
              break;
            case 'start':
              seq.start = v;
              break;
            case 'minvalue':
              seq.min = v;
              break;
            case 'maxvalue':
              seq.max = v;
              break;
            case 'cache':
              seq.cache = v;
              break;
            case 'cycle':
              seq.cycle = v !== 'false';
              break;
            case 'owned_by': {
              // Taken from the name list, never from `v`: a quoted part may itself contain a dot.
              const arg = d['arg'];
              const p = isRecord(arg) && isRecord(arg['List']) ? names(arg['List']['items']) : [];
              const [schema, table, column] = p.length === 2 ? [this.defaultSchema, ...p] : p;
              if (p.length === 1 && p[0] === 'none') delete seq.ownedBy;
              else if ((p.length === 2 || p.length === 3) && schema && table && column)
                seq.ownedBy = { schema, table, column };
              else
                throw new DesiredStateError(
                  `${this.where(s)}: sequence ${seq.schema}.${seq.name}: OWNED BY takes NONE or [schema.]table.column`,
                );
              break;
            }
            default:
              break;
          }
        }
        return;
      }
      case 'CreateStmt':
        this.createTable(s);
        return;
      case 'IndexStmt': {
        const { schema, name } = rel(n['relation'], this.defaultSchema);
        if (this.isUnmanagedRelation({ schema, name })) {
          if (n['idxname'] !== undefined)
            this.indexesOfUnmanaged.add(objectKey(schema, String(n['idxname'])));
          return;
        }
        const where = `${this.where(s)}: index ${String(n['idxname'] ?? '')} on ${schema}.${name}`;
        refuseUnmanagedIndexClauses(n, where);
        if (this.objects.isMatview(schema, name)) {
          const index = this.index(n, where);
          this.objectStep(s, () => this.objects.addMatviewIndex(schema, name, n, index));
          return;
        }
        this.table(schema, name, s).indexes.push(this.index(n, where));
        return;
      }
      case 'CreateTableAsStmt':
        if (n['objtype'] === 'OBJECT_MATVIEW') {
          this.objectStep(s, () => this.objects.addMatview(n, 'materialized view'));
          return;
        }
        this.unmanagedStatement(s);
        return;
      case 'AlterTableStmt':
        this.alterTable(s);
        return;
      case 'ViewStmt': {
        const { schema, name } = rel(n['view'], this.defaultSchema);
        if (n['aliases'] !== undefined)
          throw new DesiredStateError(
            `${this.where(s)}: view ${schema}.${name}: a column list after the view name is not supported; alias the columns in the SELECT instead`,
          );
        refuseUnmanagedViewClauses(n, `${this.where(s)}: view ${schema}.${name}`);
        this.views.set(objectKey(schema, name), { schema, name, query: n['query'] as AstNode });
        return;
      }
      case 'CommentStmt':
        this.comment(s);
        return;
      case 'CreateFunctionStmt': {
        const q = qualified(names(n['funcname']), this.defaultSchema);
        const kind = n['is_procedure'] === true ? 'procedure' : 'function';
        this.objectStep(s, () => this.objects.addFunction(n, `${kind} ${q.schema}.${q.name}`));
        return;
      }
      case 'CreateTrigStmt': {
        const t = rel(n['relation'], this.defaultSchema);
        if (this.isUnmanagedRelation(t))
          this.declareUnmanaged('trigger', t.schema, `${t.name}.${String(n['trigname'])}`);
        else
          this.objectStep(s, () =>
            this.objects.addTrigger(n, `trigger ${String(n['trigname'])} on ${t.schema}.${t.name}`),
          );
        return;
      }
      case 'CreatePolicyStmt': {
        const t = rel(n['table'], this.defaultSchema);
        if (this.isUnmanagedRelation(t))
          this.declareUnmanaged('policy', t.schema, `${t.name}.${String(n['policy_name'])}`);
        else
          this.objectStep(s, () =>
            this.objects.addPolicy(n, `policy ${String(n['policy_name'])} on ${t.schema}.${t.name}`),
          );
        return;
      }
      case 'CreateDomainStmt': {
        const q = qualified(names(n['domainname']), this.defaultSchema);
        this.objectStep(s, () => this.objects.addDomain(n, `domain ${q.schema}.${q.name}`));
        return;
      }
      case 'CompositeTypeStmt': {
        const q = rel(n['typevar'], this.defaultSchema);
        this.objectStep(s, () => this.objects.addCompositeType(n, `type ${q.schema}.${q.name}`));
        return;
      }
      case 'AlterDomainStmt':
        this.objectStep(s, () => this.objects.alterDomain(n, 'ALTER DOMAIN'));
        return;
      case 'DefineStmt':
        if (n['kind'] === 'OBJECT_AGGREGATE' && isPlainAggregate(n)) {
          const q = qualified(names(n['defnames']), this.defaultSchema);
          this.objectStep(s, () => this.objects.addAggregate(n, `aggregate ${q.schema}.${q.name}`));
          return;
        }
        if (n['kind'] === 'OBJECT_TSCONFIGURATION') {
          const q = qualified(names(n['defnames']), this.defaultSchema);
          this.objectStep(s, () =>
            this.objects.addTextSearchConfig(n, `text search configuration ${q.schema}.${q.name}`),
          );
          return;
        }
        if (n['kind'] === 'OBJECT_COLLATION') {
          const q = qualified(names(n['defnames']), this.defaultSchema);
          this.objectStep(s, () => this.objects.addCollation(n, `collation ${q.schema}.${q.name}`));
          return;
        }
        this.unmanagedStatement(s);
        return;
      case 'AlterTSConfigurationStmt':
        this.objectStep(s, () => this.objects.alterTextSearchConfig(n));
        return;
      case 'AlterFunctionStmt':
      case 'AlterPolicyStmt':
        throw new DesiredStateError(
          `${this.where(s)}: ${statementLabel(s)} is not read in a desired state; write the final shape in the CREATE statement`,
        );
      case 'InsertStmt':
        this.insert(s);
        return;
      default:
        this.unmanagedStatement(s);
    }
  }

  /** A statement of a kind the model does not manage: listed as unmanaged, skipped, or refused. */
  private unmanagedStatement(s: ParsedStatement): void {
    const unmanaged = unmanagedDeclaration(s, this.defaultSchema);
    if (unmanaged === 'ignore') return;
    if (unmanaged !== undefined) {
      this.declareUnmanaged(unmanaged.kind, unmanaged.schema, unmanaged.name);
      if (unmanaged.relation) this.unmanagedRelation(unmanaged.kind, unmanaged.schema, unmanaged.name);
      return;
    }
    if (isSessionStatement(s)) return;
    throw new DesiredStateError(
      `${this.where(s)}: ${statementLabel(s)} is not a declaration: a desired state declares objects, and a statement that acts (DROP, UPDATE, DELETE, TRUNCATE, DO, COPY, a SELECT other than set_config) is refused; remove it (run it as a migration)`,
    );
  }

  /**
   * A catalog table or index as once-parsed pieces: each distinct piece goes through the very steps of
   * CREATE TABLE or CREATE INDEX (addColumn, constraint, index) once, and each table, column, constraint
   * and index takes a copy under its own name. The model is the one the whole text gives (the inspector's
   * tests compare the two); a piece those steps would not read alone (a column that adds a constraint)
   * throws, and the inspector then parses the whole text.
   */
  addCatalogPieces(p: TableOfPieces | IndexOfPieces): void {
    if (p.kind === 'index of pieces') {
      const n = p.statement.node;
      const { schema, name } = rel(n['relation'], this.defaultSchema);
      if (this.isUnmanagedRelation({ schema, name }) || this.objects.isMatview(schema, name)) {
        this.addStatement(p.statement);
        return;
      }
      let index = this.pieceIndexes.get(p.shared);
      if (index === undefined) {
        const where = `${this.where(p.statement)}: index ${String(n['idxname'] ?? '')} on ${schema}.${name}`;
        refuseUnmanagedIndexClauses(p.shared, where);
        index = this.index(p.shared, where);
        this.pieceIndexes.set(p.shared, index);
      }
      this.table(schema, name, p.statement).indexes.push({ ...index, name: String(n['idxname']) });
      return;
    }
    this.createTable(p.header);
    const { schema, name } = rel(p.header.node['relation'], this.defaultSchema);
    const t = this.tables.get(objectKey(schema, name));
    if (t === undefined) return;
    const what = `${this.where(p.header)}: table ${schema}.${name}`;
    for (const c of p.columns) {
      const { column, constraints } = this.sharedColumn(t, c.def, what);
      if (constraints.length > 0) throw new Error('a catalog column piece is not one column alone');
      if (t.columns.some((x) => x.name === c.name))
        throw new DesiredStateError(`${what}: column ${c.name} is declared twice`);
      t.columns.push({ ...column, name: c.name });
    }
    for (const c of p.constraints) {
      let constraint = this.pieceConstraints.get(c.constraint);
      if (constraint === undefined) {
        constraint = this.constraint(c.constraint, undefined, what);
        this.pieceConstraints.set(c.constraint, constraint);
      }
      t.constraints.push({ ...constraint, name: c.name });
    }
  }

  private createTable(s: ParsedStatement): void {
    const n = s.node;
    const { schema, name } = rel(n['relation'], this.defaultSchema);
    const what = `${this.where(s)}: table ${schema}.${name}`;
    const unmanagedKind =
      n['inhRelations'] !== undefined && n['partbound'] === undefined
        ? 'inheritance child'
        : n['ofTypename'] !== undefined
          ? 'typed table'
          : undefined;
    if (unmanagedKind !== undefined) {
      // Left alone whole, in the database and here alike: never created, altered or dropped by a plan.
      this.unmanagedRelation(unmanagedKind, schema, name);
      return;
    }
    refuseUnmanagedTableClauses(n, what);
    const t: TableDraft = {
      schema,
      name,
      columns: [],
      constraints: [],
      indexes: [],
      storage: storageParameters(n['options'], true, what),
      unlogged: isRecord(n['relation']) && n['relation']['relpersistence'] === 'u',
      settings: noSettings(),
    };
    if (isRecord(n['partspec'])) t.partitionBy = partitionKey(n['partspec'], this.defaultSchema);
    if (isRecord(n['partbound'])) {
      const parent = rel(((n['inhRelations'] as unknown[] | undefined) ?? [])[0], this.defaultSchema);
      t.partitionOf = partitionOf(parent.schema, parent.name, n['partbound']);
      if (
        (s.elements ?? (n['tableElts'] as AstNode[] | undefined) ?? []).some((el) =>
          isRecord(el['ColumnDef']),
        )
      )
        throw new DesiredStateError(
          `${what}: column options in PARTITION OF are not supported; a partition has its parent's columns`,
        );
    }
    if (this.tables.has(objectKey(schema, name)))
      throw new DesiredStateError(`${what} is declared twice; keep one declaration`);
    this.tables.set(objectKey(schema, name), t);
    const elements = s.elements ?? (n['tableElts'] as AstNode[] | undefined) ?? [];
    for (const el of elements) {
      if (this.isUnmanagedRelation(t)) return;
      if (isRecord(el['ColumnDef']))
        if (s.elements !== undefined) this.addSharedColumn(t, el['ColumnDef'], what);
        else this.addColumn(t, el['ColumnDef'], what);
      else if (isRecord(el['Constraint'])) this.addTableConstraint(t, el['Constraint'], what);
      else throw new DesiredStateError(`${what}: ${Object.keys(el)[0]} in a table body is not supported`);
    }
    const renames = renameAnnotations(
      s.text,
      elements.map((el) => {
        const body = (el['ColumnDef'] ?? el['Constraint']) as AstNode;
        return {
          location: Number(body['location'] ?? 0),
          ...(isRecord(el['ColumnDef']) ? { column: String(el['ColumnDef']['colname']) } : {}),
        };
      }),
      what,
    );
    if (renames.table !== undefined) t.renamedFrom = renames.table;
    for (const c of t.columns) {
      const old = renames.columns.get(c.name);
      if (old !== undefined) c.renamedFrom = old;
    }
  }

  private addColumn(t: TableDraft, def: AstNode, what: string): void {
    const colName = String(def['colname']);
    refuseUnmanagedColumnClauses(def, `${what}: column ${colName}`);
    const { type, serial } = typeRefFromAst(def['typeName'] as AstNode, this.defaultSchema);
    const col: Mutable<Column> = { kind: 'Column', name: colName, type, notNull: serial };
    if (serial) col.serial = true;
    if (isRecord(def['collClause'])) {
      col.collation = resolvedNameSql(names(def['collClause']['collname']), this.defaultSchema);
    }
    let last: Constraint | undefined;
    for (const cn of (def['constraints'] as AstNode[]) ?? []) {
      const c = cn['Constraint'] as AstNode;
      switch (c['contype']) {
        case 'CONSTR_NOTNULL':
          col.notNull = true;
          break;
        case 'CONSTR_NULL':
          col.notNull = false;
          break;
        case 'CONSTR_DEFAULT':
          col.default = exprFromAst(c['raw_expr'], this.defaultSchema);
          break;
        case 'CONSTR_IDENTITY':
          Object.assign(
            col,
            identityDeclaration(c['options'], col.type, this.defaultSchema, `${what}: column ${colName}`),
          );
          col.identity = c['generated_when'] === 'a' ? 'always' : 'by default';
          col.notNull = true;
          break;
        case 'CONSTR_GENERATED':
          col.generated = exprFromAst(c['raw_expr'], this.defaultSchema);
          break;
        case 'CONSTR_ATTR_DEFERRABLE':
        case 'CONSTR_ATTR_NOT_DEFERRABLE':
        case 'CONSTR_ATTR_DEFERRED':
        case 'CONSTR_ATTR_IMMEDIATE': {
          if (!last || (last.kind !== 'ForeignKey' && last.kind !== 'Unique'))
            throw new DesiredStateError(
              `${what}: column ${colName}: a deferrability clause must follow UNIQUE or REFERENCES`,
            );
          const ct = c['contype'];
          const upd =
            ct === 'CONSTR_ATTR_DEFERRABLE'
              ? { deferrable: true }
              : ct === 'CONSTR_ATTR_NOT_DEFERRABLE'
                ? { deferrable: false }
                : ct === 'CONSTR_ATTR_DEFERRED'
                  ? { initiallyDeferred: true }
                  : { initiallyDeferred: false };
          const idx = t.constraints.indexOf(last);
          last = { ...last, ...upd } as Constraint;
          t.constraints[idx] = last;
          break;
        }
        default: {
          last = this.constraint(c, [colName], what);
          t.constraints.push(last);
        }
      }
    }
    if (t.columns.some((x) => x.name === colName))
      throw new DesiredStateError(`${what}: column ${colName} is declared twice`);
    t.columns.push(col);
  }

  /**
   * A column node shared by several tables (a catalog piece, or ParsedStatement.elements), normalised once
   * with the constraints it declares, on a scratch table: neither depends on the table. A column that fails
   * is not remembered, so each table reports its own problem.
   */
  private sharedColumn(
    t: TableDraft,
    def: AstNode,
    what: string,
  ): { readonly column: Mutable<Column>; readonly constraints: readonly Constraint[] } {
    let shared = this.sharedColumns.get(def);
    if (shared === undefined) {
      const scratch: TableDraft = { ...t, columns: [], constraints: [], indexes: [] };
      this.addColumn(scratch, def, what);
      const column = scratch.columns[0];
      if (scratch.columns.length !== 1 || column === undefined)
        throw new Error('a shared column piece is not one column');
      shared = { column, constraints: scratch.constraints };
      this.sharedColumns.set(def, shared);
    }
    return shared;
  }

  /** addColumn for a column node shared by several desired tables: each table takes copies. */
  private addSharedColumn(t: TableDraft, def: AstNode, what: string): void {
    const { column, constraints } = this.sharedColumn(t, def, what);
    if (t.columns.some((x) => x.name === column.name))
      throw new DesiredStateError(`${what}: column ${column.name} is declared twice`);
    for (const c of constraints) t.constraints.push({ ...c });
    t.columns.push({ ...column });
  }

  private addTableConstraint(t: TableDraft, c: AstNode, what: string): void {
    t.constraints.push(this.constraint(c, undefined, what));
  }

  private constraint(c: AstNode, columnLevel: string[] | undefined, what: string): Constraint {
    const name = c['conname'] === undefined ? undefined : String(c['conname']);
    const named = name === undefined ? {} : { name };
    const deferrable = c['deferrable'] === true;
    const initiallyDeferred = c['initdeferred'] === true;
    const withParams = () => {
      refuseUnmanagedConstraintClauses(c, what);
      const storage = storageParameters(c['options'], false, what);
      return storage.length === 0 ? {} : { storage };
    };
    switch (c['contype']) {
      case 'CONSTR_PRIMARY':
        if (c['including'] !== undefined || c['indexname'] !== undefined)
          throw new DesiredStateError(`${what}: PRIMARY KEY with INCLUDE or USING INDEX is not supported`);
        return {
          kind: 'PrimaryKey',
          ...named,
          columns: columnLevel ?? names(c['keys']),
          ...withParams(),
        };
      case 'CONSTR_UNIQUE':
        if (c['including'] !== undefined || c['indexname'] !== undefined)
          throw new DesiredStateError(
            `${what}: UNIQUE with INCLUDE or USING INDEX is not supported; use a unique index`,
          );
        return {
          kind: 'Unique',
          ...named,
          columns: columnLevel ?? names(c['keys']),
          nullsNotDistinct: c['nulls_not_distinct'] === true,
          deferrable,
          initiallyDeferred,
          ...withParams(),
        };
      case 'CONSTR_CHECK':
        return {
          kind: 'Check',
          ...named,
          expression: exprFromAst(c['raw_expr'], this.defaultSchema),
          ...(c['skip_validation'] === true ? { notValid: true } : {}),
          ...(c['is_no_inherit'] === true ? { noInherit: true } : {}),
        };
      case 'CONSTR_EXCLUSION':
        return { kind: 'Exclusion', ...named, definition: exclusionDefinition(c, this.defaultSchema, what) };
      case 'CONSTR_FOREIGN': {
        refuseUnmanagedForeignKeyClauses(c, what);
        const ref = rel(c['pktable'], this.defaultSchema);
        return {
          kind: 'ForeignKey',
          ...named,
          columns: columnLevel ?? names(c['fk_attrs']),
          refSchema: ref.schema,
          refTable: ref.name,
          refColumns: names(c['pk_attrs']),
          onUpdate: FK_ACTIONS[String(c['fk_upd_action'] ?? 'a')] ?? 'no action',
          onDelete: FK_ACTIONS[String(c['fk_del_action'] ?? 'a')] ?? 'no action',
          matchFull: c['fk_matchtype'] === 'f',
          deferrable,
          initiallyDeferred,
          ...(c['skip_validation'] === true ? { notValid: true } : {}),
        };
      }
      default:
        throw new DesiredStateError(
          `${what}: ${String(c['contype']).replace('CONSTR_', '')} constraints are not supported; remove it or manage it with a migration`,
        );
    }
  }

  private index(n: AstNode, what: string): Index {
    const keys: IndexKey[] = ((n['indexParams'] as AstNode[]) ?? []).map((p) => {
      const e = p['IndexElem'] as AstNode;
      const opclass = names(e['opclass']);
      const coll = names(e['collation']);
      const descending = e['ordering'] === 'SORTBY_DESC';
      const nullsRaw = e['nulls_ordering'];
      // NULLS LAST is the default ascending, NULLS FIRST descending: only the other one is recorded.
      let nulls: 'first' | 'last' | undefined;
      if (nullsRaw === 'SORTBY_NULLS_FIRST' && !descending) nulls = 'first';
      if (nullsRaw === 'SORTBY_NULLS_LAST' && descending) nulls = 'last';
      const base =
        e['name'] !== undefined
          ? { column: String(e['name']) }
          : { expression: exprFromAst(e['expr'], this.defaultSchema) };
      return {
        ...base,
        ...(opclass.length > 0 ? { opclass: resolvedNameSql(opclass, this.defaultSchema) } : {}),
        ...(coll.length > 0 ? { collation: resolvedNameSql(coll, this.defaultSchema) } : {}),
        descending,
        ...(nulls ? { nulls } : {}),
      };
    });
    const include = ((n['indexIncludingParams'] as AstNode[]) ?? []).map((p) =>
      String((p['IndexElem'] as AstNode)['name']),
    );
    return {
      kind: 'Index',
      ...(n['idxname'] !== undefined ? { name: String(n['idxname']) } : {}),
      unique: n['unique'] === true,
      method: String(n['accessMethod'] ?? 'btree'),
      keys,
      include,
      ...(n['whereClause'] !== undefined ? { where: exprFromAst(n['whereClause'], this.defaultSchema) } : {}),
      nullsNotDistinct: n['nulls_not_distinct'] === true,
      ...indexStorage(n['options'], what),
    };
  }

  private alterTable(s: ParsedStatement): void {
    const n = s.node;
    const cmds = ((n['cmds'] as AstNode[]) ?? []).map((c) => c['AlterTableCmd'] as AstNode);
    const only = (...subtypes: string[]) => cmds.every((c) => subtypes.includes(String(c['subtype'])));
    // Ownership is not managed; pg_dump spells a sequence's or view's owner as ALTER TABLE ... OWNER TO.
    if (only('AT_ChangeOwner')) return;
    if (n['objtype'] !== 'OBJECT_TABLE') {
      // pg_dump attaches each partition's index to its parent's index: the partition's index is then the
      // parent's, made by PostgreSQL for every partition, not one of the partition's own.
      if (n['objtype'] === 'OBJECT_INDEX' && only('AT_AttachPartition')) {
        for (const cmd of cmds) {
          const child = rel(((cmd['def'] as AstNode)['PartitionCmd'] as AstNode)['name'], this.defaultSchema);
          this.inheritedIndex(child.schema, child.name);
        }
        return;
      }
      // Matview and foreign table options: parts of objects that are not managed.
      if (['OBJECT_INDEX', 'OBJECT_MATVIEW', 'OBJECT_FOREIGN_TABLE'].includes(String(n['objtype']))) return;
      if (n['objtype'] === 'OBJECT_SEQUENCE' || n['objtype'] === 'OBJECT_VIEW') {
        throw new DesiredStateError(
          `${this.where(s)}: ALTER ${String(n['objtype']).replace('OBJECT_', '')} ${cmds.map((c) => String(c['subtype']).replace('AT_', '')).join(', ')} is not supported; write the final shape in its CREATE statement`,
        );
      }
      throw new DesiredStateError(
        `${this.where(s)}: ALTER ${String(n['objtype']).replace('OBJECT_', '')} is not supported`,
      );
    }
    const { schema, name } = rel(n['relation'], this.defaultSchema);
    for (const cmd of cmds) {
      if (cmd['subtype'] !== 'AT_AttachPartition') continue;
      // pg_dump creates a partition as a plain table and attaches it afterwards.
      const partition = (cmd['def'] as AstNode)['PartitionCmd'] as AstNode;
      const child = rel(partition['name'], this.defaultSchema);
      if (this.isUnmanagedRelation({ schema, name }) || this.isUnmanagedRelation(child)) {
        this.unmanagedRelation('partition', child.schema, child.name);
        continue;
      }
      this.table(child.schema, child.name, s).partitionOf = partitionOf(
        schema,
        name,
        partition['bound'] as AstNode,
      );
    }
    if (only('AT_AttachPartition')) return;
    if (this.isUnmanagedRelation({ schema, name })) return;
    const t = this.table(schema, name, s);
    const what = `${this.where(s)}: table ${schema}.${name}`;
    for (const cmd of cmds) {
      if (this.isUnmanagedRelation(t)) return;
      const col = () => {
        const c = t.columns.find((x) => x.name === cmd['name']);
        if (!c) throw new DesiredStateError(`${what}: column ${String(cmd['name'])} does not exist`);
        return c;
      };
      switch (cmd['subtype']) {
        case 'AT_AddConstraint':
          this.addTableConstraint(t, (cmd['def'] as AstNode)['Constraint'] as AstNode, what);
          break;
        case 'AT_AddColumn':
          this.addColumn(t, (cmd['def'] as AstNode)['ColumnDef'] as AstNode, what);
          break;
        case 'AT_ColumnDefault': {
          const c = col();
          if (cmd['def'] === undefined) delete c.default;
          else c.default = exprFromAst(cmd['def'], this.defaultSchema);
          break;
        }
        case 'AT_SetNotNull':
          col().notNull = true;
          break;
        case 'AT_DropNotNull':
          col().notNull = false;
          break;
        case 'AT_AddIdentity': {
          const c = col();
          const def = (cmd['def'] as AstNode)['Constraint'] as AstNode;
          Object.assign(
            c,
            identityDeclaration(def['options'], c.type, this.defaultSchema, `${what}: column ${c.name}`),
          );
          c.identity = def['generated_when'] === 'a' ? 'always' : 'by default';
          c.notNull = true;
          break;
        }
        case 'AT_ClusterOn':
        case 'AT_DropCluster':
        case 'AT_SetStatistics':
          this.tableSetting(t, cmd, what);
          break;
        case 'AT_SetRelOptions':
        case 'AT_ResetRelOptions':
          t.storage = alterStorageParameters(
            t.storage,
            cmd['def'],
            cmd['subtype'] === 'AT_ResetRelOptions',
            what,
          );
          break;
        case 'AT_ChangeOwner':
        case 'AT_ReplicaIdentity':
          break;
        case 'AT_EnableRowSecurity':
        case 'AT_DisableRowSecurity':
        case 'AT_ForceRowSecurity':
        case 'AT_NoForceRowSecurity':
          this.objects.rowSecurity(schema, name, String(cmd['subtype']));
          break;
        case 'AT_EnableTrig':
        case 'AT_EnableAlwaysTrig':
        case 'AT_EnableReplicaTrig':
        case 'AT_DisableTrig':
          if (!this.objects.triggerState(schema, name, String(cmd['name'] ?? ''), String(cmd['subtype'])))
            throw new DesiredStateError(
              `${what}: trigger ${String(cmd['name'] ?? '')} is not declared before it is enabled or disabled`,
            );
          break;
        case 'AT_EnableTrigAll':
        case 'AT_DisableTrigAll':
        case 'AT_EnableTrigUser':
        case 'AT_DisableTrigUser':
          this.declareUnmanaged('trigger', schema, `${name}.${String(cmd['name'] ?? '*')}`);
          break;
        case 'AT_AddInherit':
          this.unmanagedRelation('inheritance child', schema, name);
          break;
        default:
          throw new DesiredStateError(
            `${what}: ALTER TABLE ${String(cmd['subtype']).replace('AT_', '')} is not supported in a desired state; write the final shape in CREATE TABLE`,
          );
      }
    }
    this.annotateAddedColumns(t, cmds, s, what);
  }

  /** `ALTER TABLE ... ADD COLUMN new ... -- ptah:renamed-from old`: the same annotation as in CREATE TABLE. */
  private annotateAddedColumns(t: TableDraft, cmds: AstNode[], s: ParsedStatement, what: string): void {
    const added = cmds.flatMap((c) => {
      const def = c['subtype'] === 'AT_AddColumn' && isRecord(c['def']) ? c['def']['ColumnDef'] : undefined;
      return isRecord(def)
        ? [{ location: Number(def['location'] ?? 0), column: String(def['colname']) }]
        : [];
    });
    if (added.length === 0 && !s.text.bytes.subarray(s.text.start, s.text.end).includes('ptah:renamed-from'))
      return;
    // `ALTER TABLE t ADD COLUMN b int; -- ptah:renamed-from a`: the rest of the statement's last line is its.
    const lineEnd = s.text.bytes.indexOf(10, s.text.end);
    const text = { ...s.text, end: lineEnd < 0 ? s.text.bytes.length : lineEnd };
    const relation = s.node['relation'];
    const at = isRecord(relation) ? Number(relation['location'] ?? 0) : undefined;
    const renames = renameAnnotations(added.length === 0 ? s.text : text, added, what, at);
    if (renames.table !== undefined)
      throw new DesiredStateError(
        `${what}: the annotation ptah:renamed-from ${renames.table} stands by no added column; a table's rename is annotated at its CREATE TABLE, a column's on its ADD COLUMN line`,
      );
    for (const [column, old] of renames.columns) {
      const c = t.columns.find((x) => x.name === column);
      if (c !== undefined) c.renamedFrom = old;
    }
  }

  /** A partition's index (or key) attached to its parent's: PostgreSQL's, dropped from the partition. */
  private inheritedIndex(schema: string, name: string): void {
    if (this.indexesOfUnmanaged.has(objectKey(schema, name))) return;
    // The index is a partition's, and pg_dump attaches each partition before its indexes: the partitions are
    // searched first, every table only when none holds it. Searching every table for each of a partitioned
    // schema's attached indexes was quadratic (45 ms of the 2,000-table mixed no-op plan).
    let found = false;
    for (const t of this.tables.values())
      if (t.partitionOf !== undefined && t.schema === schema) found = withoutIndex(t, name) || found;
    if (found) return;
    for (const t of this.tables.values()) if (t.schema === schema) withoutIndex(t, name);
  }

  private comment(s: ParsedStatement): void {
    const n = s.node;
    const text = n['comment'] === undefined ? undefined : String(n['comment']);
    const objtype = String(n['objtype']);
    const obj = n['object'] as AstNode;
    const list = isRecord(obj['List']) ? names(obj['List']['items']) : [];
    const qual = (parts: string[]) =>
      parts.length >= 2
        ? { schema: parts[parts.length - 2] ?? '', name: parts[parts.length - 1] ?? '' }
        : { schema: this.defaultSchema, name: parts[0] ?? '' };
    const set = <T extends { comment?: string }>(target: T | undefined, label: string) => {
      if (!target)
        throw new DesiredStateError(`${this.where(s)}: COMMENT ON ${label}: the object is not declared`);
      if (text === undefined) delete target.comment;
      else target.comment = text;
    };
    const onTable = objtype === 'OBJECT_TRIGGER' || objtype === 'OBJECT_POLICY';
    if (onTable && this.isUnmanagedRelation(qual(list.slice(0, -1)))) return; // part of an unmanaged table
    let handled = false;
    this.objectStep(s, () => {
      handled = this.objects.comment(objtype, obj, text, `COMMENT ON ${objtype.replace('OBJECT_', '')}`);
    });
    if (handled) return;
    if (COMMENT_ON_UNMANAGED.has(objtype)) return; // part of an object that is not managed
    switch (objtype) {
      case 'OBJECT_EXTENSION':
        return; // an extension's comment is the extension's own (pg_dump repeats it)
      case 'OBJECT_TABCONSTRAINT': {
        const q = qual(list.slice(0, -1));
        const name = list[list.length - 1] ?? '';
        if (this.isUnmanagedRelation(q)) return;
        const t = this.tables.get(objectKey(q.schema, q.name));
        const i = t?.constraints.findIndex((c) => c.name === name) ?? -1;
        const c = t?.constraints[i];
        if (t === undefined || c === undefined) {
          // A constraint the model does not hold (a domain's, a partition's inherited copy): its comment too.
          this.declareUnmanaged('constraint comment', q.schema, `${q.name}.${name}`);
          return;
        }
        const { comment: _old, ...rest } = c;
        t.constraints[i] = text === undefined ? rest : { ...rest, comment: text };
        return;
      }
      case 'OBJECT_TABLE': {
        const q = qual(list);
        if (this.isUnmanagedRelation(q)) return;
        set(this.tables.get(objectKey(q.schema, q.name)), `TABLE ${q.name}`);
        return;
      }
      case 'OBJECT_VIEW': {
        const q = qual(list);
        set(this.views.get(objectKey(q.schema, q.name)), `VIEW ${q.name}`);
        return;
      }
      case 'OBJECT_COLUMN': {
        const column = list[list.length - 1] ?? '';
        const q = qual(list.slice(0, -1));
        if (this.isUnmanagedRelation(q)) return;
        if (this.objects.isMatview(q.schema, q.name))
          throw new DesiredStateError(
            `${this.where(s)}: COMMENT ON COLUMN ${q.name}.${column}: comments on a materialized view's columns are not managed; remove it or set it in a migration`,
          );
        const t = this.tables.get(objectKey(q.schema, q.name));
        set(
          t?.columns.find((c) => c.name === column),
          `COLUMN ${q.name}.${column}`,
        );
        return;
      }
      case 'OBJECT_SEQUENCE': {
        const q = qual(list);
        set(this.sequences.get(objectKey(q.schema, q.name)), `SEQUENCE ${q.name}`);
        return;
      }
      case 'OBJECT_SCHEMA': {
        const nm = isRecord(obj['String']) ? String(obj['String']['sval']) : '';
        // public exists in every database, so a comment on it needs no CREATE SCHEMA (pg_dump writes none).
        const sc = this.schemas.get(nm) ?? (nm === DEFAULT_SCHEMA ? { kind: 'Schema', name: nm } : undefined);
        if (!sc)
          throw new DesiredStateError(
            `${this.where(s)}: COMMENT ON SCHEMA ${nm}: the schema is not declared`,
          );
        this.schemas.set(nm, text === undefined ? { kind: 'Schema', name: nm } : { ...sc, comment: text });
        return;
      }
      case 'OBJECT_TYPE': {
        const parts = isRecord(obj['TypeName']) ? names(obj['TypeName']['names']) : [];
        const q = qual(parts);
        const e = this.enums.get(objectKey(q.schema, q.name));
        if (!e && this.objects.isDomain(q.schema, q.name)) {
          this.objectStep(s, () => this.objects.comment('OBJECT_DOMAIN', obj, text, 'COMMENT ON TYPE'));
          return;
        }
        if (!e && this.unmanaged.some((u) => u.schema === q.schema && u.name === q.name)) return;
        if (!e)
          throw new DesiredStateError(
            `${this.where(s)}: COMMENT ON TYPE ${q.name}: the type is not declared`,
          );
        const { comment: _old, ...rest } = e;
        this.enums.set(objectKey(q.schema, q.name), text === undefined ? rest : { ...rest, comment: text });
        return;
      }
      case 'OBJECT_INDEX': {
        const q = qual(list);
        if (this.indexesOfUnmanaged.has(objectKey(q.schema, q.name))) return;
        if (this.objects.commentMatviewIndex(q.schema, q.name, text)) return;
        for (const t of this.tables.values()) {
          if (t.schema !== q.schema) continue;
          const i = t.indexes.findIndex((x) => x.name === q.name);
          if (i >= 0) {
            const { comment: _old, ...rest } = t.indexes[i] as Index;
            t.indexes[i] = text === undefined ? rest : { ...rest, comment: text };
            return;
          }
        }
        throw new DesiredStateError(
          `${this.where(s)}: COMMENT ON INDEX ${q.name}: the index is not declared with a name`,
        );
      }
      default:
        throw new DesiredStateError(
          `${this.where(s)}: COMMENT ON ${objtype.replace('OBJECT_', '')} is not supported`,
        );
    }
  }

  /** CLUSTER ON, SET WITHOUT CLUSTER, ALTER COLUMN ... SET STATISTICS: see pg-table-settings.ts. */
  private tableSetting(t: TableDraft, cmd: AstNode, what: string): void {
    if (t.partitionOf !== undefined)
      throw new DesiredStateError(
        `${what}: CLUSTER ON and SET STATISTICS on a partition are not managed; set them on it in a migration`,
      );
    if (cmd['subtype'] === 'AT_ClusterOn') t.settings.clusterOn = String(cmd['name']);
    else if (cmd['subtype'] === 'AT_DropCluster') delete t.settings.clusterOn;
    else {
      const column = String(cmd['name'] ?? '');
      if (!t.columns.some((c) => c.name === column))
        throw new DesiredStateError(
          `${what}: SET STATISTICS names column ${column || `number ${String(cmd['num'])}`}, which the table does not declare`,
        );
      const def = cmd['def'];
      const target = isRecord(def) && isRecord(def['Integer']) ? Number(def['Integer']['ival'] ?? 0) : 0;
      if (target === DEFAULT_STATISTICS) t.settings.statistics.delete(column);
      else t.settings.statistics.set(column, target);
    }
  }

  private insert(s: ParsedStatement): void {
    const n = s.node;
    const { schema, name } = rel(n['relation'], this.defaultSchema);
    const t = this.table(schema, name, s);
    const what = `${this.where(s)}: rows for ${schema}.${name}`;
    const cols = ((n['cols'] as AstNode[]) ?? []).map((c) => String((c['ResTarget'] as AstNode)['name']));
    const columns = cols.length > 0 ? cols : t.columns.map((c) => c.name);
    const select = isRecord(n['selectStmt']) ? (n['selectStmt']['SelectStmt'] as AstNode) : undefined;
    const lists = (select?.['valuesLists'] as AstNode[] | undefined) ?? [];
    if (lists.length === 0)
      throw new DesiredStateError(`${what}: only INSERT ... VALUES declares reference rows`);
    const key = objectKey(schema, name);
    let set = this.rows.get(key);
    if (!set) {
      set = { schema, table: name, columns, rows: [], where: what };
      this.rows.set(key, set);
    } else if (set.columns.join('\u0000') !== columns.join('\u0000')) {
      throw new DesiredStateError(
        `${what}: every INSERT for one table must list the same columns (${set.columns.join(', ')})`,
      );
    }
    for (const l of lists) {
      const items = ((l['List'] as AstNode)['items'] as unknown[]) ?? [];
      if (items.length !== columns.length)
        throw new DesiredStateError(
          `${what}: a VALUES row has ${items.length} values for ${columns.length} columns`,
        );
      const row: Record<string, string | null> = {};
      items.forEach((it, i) => {
        row[columns[i] ?? ''] = literal(it, `${what}, column ${columns[i] ?? ''}`);
      });
      set.rows.push(row);
    }
  }

  /** The model, or every problem found in one error (one per line). */
  build(): SchemaModel {
    let model: SchemaModel | undefined;
    try {
      model = this.buildModel();
    } catch (error) {
      if (!(error instanceof DesiredStateError)) throw error;
      this.problems.push(error.message);
    }
    if (this.problems.length === 1) throw new DesiredStateError(this.problems[0] ?? '');
    if (this.problems.length > 1 || model === undefined)
      throw new DesiredStateError(
        `${this.problems.length} problems in the desired state:\n${this.problems.map((p) => `  ${p}`).join('\n')}`,
      );
    return model;
  }

  private buildModel(): SchemaModel {
    const tables: Table[] = [];
    const tableMap = new Map<string, TableDraft>();
    for (const t of this.tables.values()) tableMap.set(objectKey(t.schema, t.name), t);
    for (const seq of this.sequences.values()) {
      const [lo, hi] = SEQ_LIMITS[seq.dataType] ?? SEQ_LIMITS['bigint'] ?? ['', ''];
      const asc = !seq.increment.startsWith('-');
      if (seq.min === '') seq.min = asc ? '1' : lo;
      if (seq.max === '') seq.max = asc ? hi : '-1';
      if (seq.start === '') seq.start = asc ? seq.min : seq.max;
    }
    // Serial columns: an owned sequence feeding the column's default is the same thing as `serial` only when
    // it is exactly the sequence `serial` makes: the column's type and every option at its default. A bigint
    // sequence behind an integer column (pg_dump before PostgreSQL 10 wrote no AS) stays a sequence.
    const sequences = new Map(this.sequences);
    for (const [key, seq] of this.sequences) {
      const owner = seq.ownedBy;
      if (!owner) continue;
      const t = tableMap.get(objectKey(owner.schema, owner.table));
      if (t?.schema !== owner.schema || t.name !== owner.table) continue;
      const col = t.columns.find((c) => c.name === owner.column);
      if (!col || !col.default || col.identity) continue;
      const target = nextvalTarget(col.default.key);
      if (target === undefined) continue;
      const [targetSchema, targetName] = target.length === 1 ? [this.defaultSchema, ...target] : target;
      if (
        target.length > 2 ||
        targetSchema !== seq.schema ||
        targetName !== seq.name ||
        !['smallint', 'integer', 'bigint'].includes(col.type.name) ||
        col.type.schema !== undefined ||
        !isSerialSequence(seq, col.type.name)
      )
        continue;
      col.serial = true;
      col.serialSequence = { schema: seq.schema, name: seq.name };
      delete col.default;
      sequences.delete(key);
    }
    for (const t of this.tables.values()) {
      const pk = t.constraints.find((c) => c.kind === 'PrimaryKey');
      for (const c of t.columns) {
        if (pk?.columns.includes(c.name)) c.notNull = true;
        if (c.serial) c.notNull = true;
      }
      const constraints = t.constraints.map((c) => {
        if (c.kind !== 'ForeignKey' || c.refColumns.length > 0) return c;
        const target = tableMap.get(objectKey(c.refSchema, c.refTable));
        const refPk = target?.constraints.find((x) => x.kind === 'PrimaryKey');
        if (!refPk)
          throw new DesiredStateError(
            `table ${t.schema}.${t.name}: foreign key to ${c.refSchema}.${c.refTable} names no columns and that table has no primary key; list the referenced columns`,
          );
        return { ...c, refColumns: refPk.columns };
      });
      for (const c of t.columns)
        if (c.renamedFrom !== undefined && t.columns.some((x) => x.name === c.renamedFrom))
          throw new DesiredStateError(
            `table ${t.schema}.${t.name}: column ${c.name} is renamed from ${c.renamedFrom}, which is declared too; remove the annotation or the old column`,
          );
      if (t.renamedFrom !== undefined && tableMap.has(objectKey(t.schema, t.renamedFrom)))
        throw new DesiredStateError(
          `table ${t.schema}.${t.name} is renamed from ${t.renamedFrom}, which is declared too; remove the annotation or the old table`,
        );
      tables.push({
        kind: 'Table',
        schema: t.schema,
        name: t.name,
        ...(t.renamedFrom !== undefined ? { renamedFrom: t.renamedFrom } : {}),
        ...(t.partitionBy !== undefined ? { partitionBy: t.partitionBy } : {}),
        ...(t.partitionOf !== undefined ? { partitionOf: t.partitionOf } : {}),
        // A partition's columns are its parent's (pg_dump repeats them): compared on the parent only.
        columns: t.partitionOf !== undefined ? [] : t.columns.map((c) => Object.freeze({ ...c })),
        constraints,
        indexes: t.indexes.map((i) => withoutColumnsOwnCollation(i, t.columns)),
        ...(t.storage.length > 0 || t.unlogged
          ? {
              options: {
                ...asTableOptions(t.storage),
                ...(t.unlogged ? { [PERSISTENCE_OPTION]: 'unlogged' } : {}),
              },
            }
          : {}),
        ...(t.comment !== undefined ? { comment: t.comment } : {}),
      });
    }
    const views: View[] = [...this.views.values()].map((v) => ({
      kind: 'View',
      schema: v.schema,
      name: v.name,
      definition: {
        text: deparseNode({ SelectStmt: (v.query['SelectStmt'] as AstNode) ?? v.query }),
        key: viewKey(v.query, tableMap, this.defaultSchema),
      },
      ...(v.comment !== undefined ? { comment: v.comment } : {}),
    }));
    const rows: RowSet[] = [];
    for (const r of this.rows.values()) {
      const t = tableMap.get(objectKey(r.schema, r.table));
      const pk = t === undefined ? undefined : rowKey(t);
      if (!t || !pk)
        throw new DesiredStateError(
          `${r.where}: the table has no primary key (nor a unique constraint or index on NOT NULL columns); reference rows are keyed by it, so declare one`,
        );
      for (const k of pk.columns)
        if (!r.columns.includes(k))
          throw new DesiredStateError(`${r.where}: the INSERT must list the key column ${k}`);
      for (const c of r.columns)
        if (!t.columns.some((x) => x.name === c))
          throw new DesiredStateError(`${r.where}: column ${c} is not declared in the table`);
      const seen = new Set<string>();
      for (const row of r.rows) {
        const id = JSON.stringify(pk.columns.map((k) => row[k] ?? null));
        if (seen.has(id)) throw new DesiredStateError(`${r.where}: key ${id} is declared twice`);
        seen.add(id);
      }
      rows.push({
        kind: 'RowSet',
        schema: r.schema,
        table: r.table,
        key: pk.columns,
        columns: r.columns,
        rows: r.rows,
      });
    }
    return {
      defaultSchema: this.defaultSchema,
      schemas: [...this.schemas.values()],
      extensions: [...this.extensions.values()],
      enums: [...this.enums.values()],
      sequences: [...sequences.values()].map((s) => ({ ...s })),
      tables,
      views,
      rows,
      unmanaged: this.unmanaged,
      objects: [
        ...this.objects.build(
          new Set([...tableMap.values()].map((t) => objectKey(t.schema, t.name))),
          new Set([...this.views.values()].map((v) => objectKey(v.schema, v.name))),
          (query) => viewKey(query, tableMap, this.defaultSchema),
        ),
        ...tables.flatMap((t) => {
          const settings = this.tables.get(objectKey(t.schema, t.name))?.settings ?? noSettings();
          try {
            return tableSettingObjects(t, settings, `table ${t.schema}.${t.name}`);
          } catch (error) {
            throw new DesiredStateError(error instanceof Error ? error.message : String(error));
          }
        }),
      ],
    };
  }
}

/** A declaration of a kind the engine does not manage: listed as unmanaged, never planned. */
interface UnmanagedDeclaration {
  readonly kind: string;
  readonly schema: string;
  readonly name: string;
  /** A relation: statements about it later in the file are part of it. */
  readonly relation?: boolean;
}

const qualified = (parts: string[], defaultSchema: string): { schema: string; name: string } => ({
  schema: parts.length >= 2 ? (parts[parts.length - 2] ?? defaultSchema) : defaultSchema,
  name: parts[parts.length - 1] ?? '',
});

/** DefineStmt kinds (CREATE AGGREGATE, OPERATOR, TEXT SEARCH ..., COLLATION, TYPE) by their label. */
const DEFINE_KINDS: Readonly<Record<string, string>> = {
  OBJECT_AGGREGATE: 'aggregate',
  OBJECT_OPERATOR: 'operator',
  OBJECT_TYPE: 'type',
  OBJECT_TSCONFIGURATION: 'text search configuration',
  OBJECT_TSDICTIONARY: 'text search dictionary',
  OBJECT_TSPARSER: 'text search parser',
  OBJECT_TSTEMPLATE: 'text search template',
  OBJECT_COLLATION: 'collation',
};

/** Statements that only adjust objects that are not managed, or ownership and privileges: accepted. */
const ACCEPTED_UNMANAGED = new Set([
  'AlterTSDictionaryStmt',
  'AlterExtensionStmt',
  'AlterExtensionContentsStmt',
  'AlterEventTrigStmt',
  'AlterPublicationStmt',
  'AlterForeignServerStmt',
  'AlterFdwStmt',
  'AlterOperatorStmt',
  'AlterOpFamilyStmt',
  'AlterStatsStmt',
  'AlterUserMappingStmt',
]);

/** Ownership and privileges are not managed by default: accepted, and listed once each. */
const OWNERSHIP_AND_PRIVILEGES: Readonly<Record<string, string>> = {
  AlterOwnerStmt: 'ownership',
  GrantStmt: 'privileges',
  GrantRoleStmt: 'privileges',
  AlterDefaultPrivilegesStmt: 'privileges',
  SecLabelStmt: 'security labels',
  CreateRoleStmt: 'roles',
  AlterRoleStmt: 'roles',
  AlterRoleSetStmt: 'roles',
};

/** COMMENT ON a kind that is not managed is part of that object. */
const COMMENT_ON_UNMANAGED = new Set([
  'OBJECT_FUNCTION',
  'OBJECT_PROCEDURE',
  'OBJECT_ROUTINE',
  'OBJECT_AGGREGATE',
  'OBJECT_TRIGGER',
  'OBJECT_DOMAIN',
  'OBJECT_DOMCONSTRAINT',
  'OBJECT_POLICY',
  'OBJECT_MATVIEW',
  'OBJECT_FOREIGN_TABLE',
  'OBJECT_RULE',
  'OBJECT_EVENT_TRIGGER',
  'OBJECT_PUBLICATION',
  'OBJECT_SUBSCRIPTION',
  'OBJECT_FOREIGN_SERVER',
  'OBJECT_FDW',
  'OBJECT_TSDICTIONARY',
  'OBJECT_TSPARSER',
  'OBJECT_TSTEMPLATE',
  'OBJECT_OPERATOR',
  'OBJECT_OPCLASS',
  'OBJECT_OPFAMILY',
  'OBJECT_CONVERSION',
  'OBJECT_LANGUAGE',
  'OBJECT_CAST',
  'OBJECT_STATISTIC_EXT',
  'OBJECT_TRANSFORM',
  'OBJECT_ACCESS_METHOD',
  'OBJECT_LARGEOBJECT',
  'OBJECT_ROLE',
  'OBJECT_DATABASE',
  'OBJECT_TABLESPACE',
]);

/**
 * What a statement declares when it is of a kind the engine does not manage; `'ignore'` when it is
 * accepted and adds nothing to report; undefined when it is not a declaration of such a kind.
 */
function unmanagedDeclaration(
  s: ParsedStatement,
  defaultSchema: string,
): UnmanagedDeclaration | 'ignore' | undefined {
  const n = s.node;
  const onTable = (relation: unknown, name: string) => {
    const r = rel(relation, defaultSchema);
    return { schema: r.schema, name: `${r.name}.${name}` };
  };
  const ownership = OWNERSHIP_AND_PRIVILEGES[s.type];
  if (ownership !== undefined) return { kind: ownership, schema: '', name: 'not managed' };
  if (ACCEPTED_UNMANAGED.has(s.type)) return 'ignore';
  switch (s.type) {
    case 'CompositeTypeStmt':
      return { kind: 'type', ...rel(n['typevar'], defaultSchema) };
    case 'CreateRangeStmt':
      return { kind: 'type', ...qualified(names(n['typeName']), defaultSchema) };
    case 'DefineStmt':
      return {
        kind: DEFINE_KINDS[String(n['kind'])] ?? 'object',
        ...qualified(names(n['defnames']), defaultSchema),
      };
    case 'RuleStmt':
      return { kind: 'rule', ...onTable(n['relation'], String(n['rulename'])) };
    case 'CreateEventTrigStmt':
      return { kind: 'event trigger', schema: '', name: String(n['trigname']) };
    case 'CreatePublicationStmt':
      return { kind: 'publication', schema: '', name: String(n['pubname']) };
    case 'CreateSubscriptionStmt':
      return { kind: 'subscription', schema: '', name: String(n['subname']) };
    case 'CreateForeignServerStmt':
      return { kind: 'foreign server', schema: '', name: String(n['servername']) };
    case 'CreateFdwStmt':
      return { kind: 'foreign-data wrapper', schema: '', name: String(n['fdwname']) };
    case 'CreateUserMappingStmt':
      return { kind: 'user mapping', schema: '', name: String(n['servername']) };
    case 'CreateForeignTableStmt':
      return {
        kind: 'foreign table',
        ...rel((n['base'] as AstNode)['relation'], defaultSchema),
        relation: true,
      };
    case 'CreateTableAsStmt': {
      if (n['objtype'] !== 'OBJECT_MATVIEW') return undefined;
      return {
        kind: 'materialized view',
        ...rel(
          (n['into'] as AstNode)['IntoClause']
            ? ((n['into'] as AstNode)['IntoClause'] as AstNode)['rel']
            : (n['into'] as AstNode)['rel'],
          defaultSchema,
        ),
        relation: true,
      };
    }
    case 'CreateStatsStmt':
      return { kind: 'statistics', ...qualified(names(n['defnames']), defaultSchema) };
    case 'CreateCastStmt':
      return { kind: 'cast', schema: '', name: 'cast' };
    case 'CreateConversionStmt':
      return { kind: 'conversion', ...qualified(names(n['conversion_name']), defaultSchema) };
    case 'CreateOpClassStmt':
      return { kind: 'operator class', ...qualified(names(n['opclassname']), defaultSchema) };
    case 'CreateOpFamilyStmt':
      return { kind: 'operator family', ...qualified(names(n['opfamilyname']), defaultSchema) };
    case 'CreateTransformStmt':
      return { kind: 'transform', schema: '', name: 'transform' };
    case 'CreateAmStmt':
      return { kind: 'access method', schema: '', name: String(n['amname']) };
    case 'CreatePLangStmt':
      // plpgsql is built in (pg_dump of old servers and some authors still write CREATE LANGUAGE plpgsql).
      return n['plname'] === 'plpgsql'
        ? 'ignore'
        : { kind: 'language', schema: '', name: String(n['plname']) };
    default:
      return undefined;
  }
}

/** Statements that change neither schema nor data: session settings, transaction wrappers, maintenance. */
const SESSION_STATEMENTS = new Set([
  'VariableSetStmt',
  'VariableShowStmt',
  'TransactionStmt',
  'VacuumStmt', // VACUUM and ANALYZE, as sample database scripts end
  'CheckPointStmt',
]);

/**
 * The one rule for statements that declare nothing: a statement that changes neither schema nor data
 * (SET, RESET, SHOW, BEGIN/COMMIT, VACUUM, ANALYZE, CHECKPOINT, SELECT set_config(...) as pg_dump writes it,
 * psql meta-commands) is skipped; any other is refused (see statementLabel's caller).
 */
function isSessionStatement(s: ParsedStatement): boolean {
  if (SESSION_STATEMENTS.has(s.type)) return true;
  if (s.type !== 'SelectStmt') return false;
  const n = s.node;
  const targets = (n['targetList'] as AstNode[] | undefined) ?? [];
  const clauses = ['fromClause', 'whereClause', 'valuesLists', 'withClause', 'larg'];
  if (targets.length === 0 || clauses.some((c) => n[c] !== undefined)) return false;
  return targets.every((t) => {
    const val = (t['ResTarget'] as AstNode)['val'];
    if (!isRecord(val) || !isRecord(val['FuncCall'])) return false;
    const fn = names(val['FuncCall']['funcname']);
    return fn[fn.length - 1] === 'set_config' && (fn.length === 1 || fn[0] === 'pg_catalog');
  });
}

function statementLabel(s: ParsedStatement): string {
  const words = s.type
    .replace(/Stmt$/, '')
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .toUpperCase();
  return words;
}

/** Drops the index, or the primary-key or unique constraint, named `name` from the table; whether it held one. */
function withoutIndex(t: TableDraft, name: string): boolean {
  const i = t.indexes.findIndex((x) => x.name === name);
  if (i >= 0) t.indexes.splice(i, 1);
  const c = t.constraints.findIndex(
    (x) => x.name === name && (x.kind === 'PrimaryKey' || x.kind === 'Unique'),
  );
  if (c >= 0) t.constraints.splice(c, 1);
  return i >= 0 || c >= 0;
}

/**
 * An exclusion constraint's clause, rendered and keyed. The deparser drops WITH (...) and DEFERRABLE from
 * it, so those are spelt here; its index storage parameters are refused (not held), as a tablespace is.
 */
function exclusionDefinition(c: AstNode, ds: string, what: string): Expr {
  refuseUnmanagedConstraintClauses(c, what);
  if (storageParameters(c['options'], false, what).length > 0)
    throw new DesiredStateError(
      `${what}: WITH (...) on an exclusion constraint is not supported; remove it, or manage the constraint with a migration`,
    );
  if (c['including'] !== undefined)
    throw new DesiredStateError(`${what}: INCLUDE on an exclusion constraint is not supported; remove it`);
  const {
    conname: _n,
    location: _l,
    options: _o,
    where_clause: where,
    deferrable: _d,
    initdeferred: _i,
    initially_valid: _v,
    ...body
  } = c;
  const method = String(c['access_method'] ?? 'btree');
  const deferrable = c['deferrable'] === true;
  const deferred = c['initdeferred'] === true;
  const text =
    exclusionHead(body, method) +
    (where === undefined ? '' : ` WHERE (${deparseNode(where)})`) +
    (deferrable ? ` DEFERRABLE${deferred ? ' INITIALLY DEFERRED' : ''}` : '');
  const key = canonicalKey(
    {
      ...body,
      exclusions: unqualifiedOperators(body['exclusions'], ds),
      access_method: method,
      where: where ?? null,
      deferrable,
      deferred,
    },
    ds,
  );
  return { text, key };
}

/**
 * The exclusion elements with an operator qualified by pg_catalog or by the default schema written bare, as
 * pg_get_constraintdef prints an operator the inspection's search path finds (pg_catalog, then the default
 * schema): `OPERATOR(pg_catalog.&&)` and `&&`, or pg_dump's `OPERATOR(public.=)` on a citext column and
 * `=`, are one constraint, and comparing them as written re-planned it forever. Another schema's qualifier
 * stays, as the catalog prints it. The needs check reads the operators from the rendered text, which keeps
 * every qualifier, to look for each where the apply will.
 */
function unqualifiedOperators(exclusions: unknown, ds: string): unknown {
  if (!Array.isArray(exclusions)) return exclusions;
  return exclusions.map((x: unknown) => {
    const items = listItems(x);
    const operator = listItems(items?.[1]);
    if (items === undefined || operator?.length !== 2) return x;
    const schema = names(operator)[0];
    if (schema !== 'pg_catalog' && schema !== ds) return x;
    return { List: { items: [items[0], { List: { items: operator.slice(1) } }] } };
  });
}

/**
 * `EXCLUDE USING method (element WITH operator, ...)`. The deparser writes a qualified operator,
 * `OPERATOR(s.=)`, as `WITH s`, which does not parse: with one, the elements are written here.
 */
function exclusionHead(body: AstNode, method: string): string {
  const elements = (Array.isArray(body['exclusions']) ? body['exclusions'] : []).map((x: unknown) => {
    const items = listItems(x);
    return items === undefined ? undefined : { element: items[0], operator: names(listItems(items[1])) };
  });
  if (elements.every((e) => e !== undefined && e.operator.length <= 1))
    return deparseNode({ Constraint: { ...body, access_method: method } });
  const written = elements.map((e) => {
    if (e === undefined) throw new Error('an exclusion element is not an element and an operator');
    const op = e.operator[e.operator.length - 1] ?? '';
    const schemas = e.operator.slice(0, -1).map(quoteIdent);
    return `${deparseNode(e.element)} WITH ${schemas.length === 0 ? op : `OPERATOR(${[...schemas, op].join('.')})`}`;
  });
  return `EXCLUDE USING ${method} (${written.join(', ')})`;
}

/**
 * The columns reference rows are keyed by: the primary key, or else the first (by name) unique constraint
 * or plain unique index whose columns are all NOT NULL, which identifies a row just as well (Rails'
 * schema_migrations has only a unique index on version).
 */
function rowKey(t: TableDraft): { columns: readonly string[] } | undefined {
  const pk = t.constraints.find((c) => c.kind === 'PrimaryKey');
  if (pk) return pk;
  const notNull = (cols: readonly string[]) =>
    cols.length > 0 && cols.every((c) => t.columns.some((x) => x.name === c && (x.notNull || x.serial)));
  const candidates: { name: string; columns: readonly string[] }[] = [];
  for (const c of t.constraints)
    if (c.kind === 'Unique' && !c.deferrable && notNull(c.columns))
      candidates.push({ name: c.name ?? '', columns: c.columns });
  for (const i of t.indexes) {
    const columns = i.keys.map((k) => k.column);
    if (!i.unique || i.where !== undefined || columns.some((c) => c === undefined)) continue;
    const cols = columns as string[];
    if (notNull(cols)) candidates.push({ name: i.name ?? '', columns: cols });
  }
  return candidates.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))[0];
}

/** Whether a sequence has exactly the type and options `serial` gives one for a column of `type`. */
function isSerialSequence(seq: Sequence, type: string): boolean {
  const max = SEQ_LIMITS[type]?.[1];
  return (
    seq.dataType === type &&
    seq.start === '1' &&
    seq.increment === '1' &&
    seq.min === '1' &&
    seq.max === max &&
    seq.cache === '1' &&
    !seq.cycle
  );
}

function literal(node: unknown, what: string): string | null {
  if (isRecord(node)) {
    if (isRecord(node['A_Const'])) return constText(node['A_Const']);
    if (isRecord(node['TypeCast'])) return literal(node['TypeCast']['arg'], what);
  }
  throw new DesiredStateError(
    `${what}: reference rows must hold literal values (numbers, strings, true/false, NULL)`,
  );
}

/** An index's `WITH (name = value, ...)`, as sorted `name=value` texts; absent when none. */
function indexStorage(options: unknown, what: string): { storage?: string[] } {
  const list = storageParameters(options, false, what);
  return list.length === 0 ? {} : { storage: list };
}

/** The name parts of the sequence a `nextval('...')` default reads, or undefined for any other default. */
function nextvalTarget(key: string): string[] | undefined {
  const m =
    /^\{"FuncCall":\{"args":\[\{"A_Const":\{"v":"((?:[^"\\]|\\.)*)"\}\}\],"funcname":\["nextval"\]\}\}$/.exec(
      key,
    );
  if (!m) return undefined;
  const raw = JSON.parse(`"${m[1] ?? ''}"`) as string;
  // The argument is a regclass literal: an optionally quoted, optionally qualified name.
  const parts = raw.match(/"(?:[^"]|"")*"|[^.]+/g) ?? [];
  return parts.map((p) => (p.startsWith('"') ? p.slice(1, -1).replace(/""/g, '"') : p.toLowerCase()));
}

/**
 * A view's comparison key. The catalog prints every column qualified and expands `*`, so for a query over
 * a single table both are undone here; joins keep their qualifiers (declare them qualified).
 */
function viewKey(query: AstNode, tables: ReadonlyMap<string, TableDraft>, defaultSchema: string): string {
  const sel = (isRecord(query['SelectStmt']) ? query['SelectStmt'] : query) as AstNode;
  const from = (sel['fromClause'] as AstNode[] | undefined) ?? [];
  const single =
    from.length === 1 && isRecord(from[0]?.['RangeVar']) ? (from[0]['RangeVar'] as AstNode) : undefined;
  const subquery =
    from.length === 1 && isRecord(from[0]?.['RangeSubselect'])
      ? (from[0]['RangeSubselect'] as AstNode)
      : undefined;
  const relname = single ? String(single['relname']) : undefined;
  const aliasOf = (n: AstNode | undefined) =>
    n !== undefined && isRecord(n['alias']) ? String(n['alias']['aliasname']) : undefined;
  const alias = aliasOf(single ?? subquery);
  // A CTE of the query hides a table of its name.
  const cte = single !== undefined && single['schemaname'] === undefined ? cteNamed(sel, relname) : undefined;
  const table =
    single && cte === undefined
      ? tables.get(objectKey(String(single['schemaname'] ?? defaultSchema), relname ?? ''))
      : undefined;
  // What `*` stands for, as the catalog prints it: the table's columns, a CTE's or a subquery's output.
  const starColumns =
    table?.columns.map((c) => c.name) ??
    (cte !== undefined ? outputNames(cte['ctequery'], cte['aliascolnames']) : undefined) ??
    (subquery !== undefined
      ? outputNames(
          subquery['subquery'],
          isRecord(subquery['alias']) ? subquery['alias']['colnames'] : undefined,
        )
      : undefined);
  const strip = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(strip);
    if (!isRecord(node)) return node;
    if (isRecord(node['ColumnRef']) && (single || alias !== undefined)) {
      const f = node['ColumnRef']['fields'] as AstNode[];
      const first = names(f.slice(0, 1))[0];
      if (f.length === 2 && (first === relname || first === alias)) return { ColumnRef: { fields: [f[1]] } };
    }
    if (isRecord(node['RangeVar'])) {
      const r = node['RangeVar'];
      const out: AstNode = { relname: r['relname'] };
      if (r['schemaname'] !== undefined && r['schemaname'] !== defaultSchema)
        out['schemaname'] = r['schemaname'];
      if (isRecord(r['alias']) && r['alias']['aliasname'] !== r['relname'] && single === undefined)
        out['alias'] = r['alias'];
      return { RangeVar: out };
    }
    const out: AstNode = {};
    for (const [k, v] of Object.entries(node)) out[k] = strip(v);
    return out;
  };
  let targets = (sel['targetList'] as AstNode[] | undefined) ?? [];
  if (starColumns !== undefined) {
    targets = targets.flatMap((t) => {
      const val = (t['ResTarget'] as AstNode)['val'] as AstNode;
      const f = isRecord(val['ColumnRef']) ? (val['ColumnRef']['fields'] as AstNode[]) : [];
      if (f.length > 0 && isRecord(f[f.length - 1]?.['A_Star'])) {
        return starColumns.map((name) => ({
          ResTarget: { val: { ColumnRef: { fields: [{ String: { sval: name } }] } } },
        }));
      }
      return [t];
    });
  }
  targets = targets.map((t) => {
    const r = t['ResTarget'] as AstNode;
    const val = strip(r['val']) as AstNode;
    const nm = r['name'] !== undefined && r['name'] !== figuredName(val).name ? { name: r['name'] } : {};
    return { ResTarget: { ...nm, val } };
  });
  const copy: AstNode = { ...sel, targetList: targets, ...byExpression(sel, starColumns) };
  return canonicalKey(strip(unnameLaterArms(unqualifyScopes(copy))), defaultSchema);
}

/**
 * GROUP BY and ORDER BY entries that name an output column (`GROUP BY event_year`), written as its
 * expression, as the catalog prints them. GROUP BY reads a name as an input column first, so only a name
 * the input lacks (`inputs`, when known) is an output's; ORDER BY reads output names first.
 */
function byExpression(sel: AstNode, inputs: readonly string[] | undefined): AstNode {
  if (sel['op'] !== undefined && sel['op'] !== 'SETOP_NONE') return {};
  const outputs = new Map<string, unknown>();
  for (const t of (sel['targetList'] as unknown[] | undefined) ?? []) {
    const r = isRecord(t) && isRecord(t['ResTarget']) ? t['ResTarget'] : undefined;
    if (typeof r?.['name'] === 'string') outputs.set(r['name'], r['val']);
  }
  if (outputs.size === 0) return {};
  const resolve = (node: unknown, inputFirst: boolean): unknown => {
    const f = isRecord(node) && isRecord(node['ColumnRef']) ? names(node['ColumnRef']['fields']) : [];
    const name = f.length === 1 ? f[0] : undefined;
    if (name === undefined || (inputFirst && (inputs === undefined || inputs.includes(name)))) return node;
    return outputs.get(name) ?? node;
  };
  const out: AstNode = {};
  if (Array.isArray(sel['groupClause'])) out['groupClause'] = sel['groupClause'].map((g) => resolve(g, true));
  if (Array.isArray(sel['sortClause']))
    out['sortClause'] = sel['sortClause'].map((x: unknown) =>
      isRecord(x) && isRecord(x['SortBy'])
        ? { SortBy: { ...x['SortBy'], node: resolve(x['SortBy']['node'], false) } }
        : x,
    );
  return out;
}

/** The CTE of this name in the query's WITH, if any. */
function cteNamed(sel: AstNode, name: string | undefined): AstNode | undefined {
  const ctes = isRecord(sel['withClause']) ? sel['withClause']['ctes'] : undefined;
  if (name === undefined || !Array.isArray(ctes)) return undefined;
  for (const c of ctes as unknown[]) {
    const body = isRecord(c) && isRecord(c['CommonTableExpr']) ? c['CommonTableExpr'] : undefined;
    if (body !== undefined && body['ctename'] === name) return body;
  }
  return undefined;
}

/**
 * A query's output column names (its leftmost arm's, for a set operation), renamed by a column alias list
 * where one is given; undefined when they cannot be told from the text alone (an entry is itself a `*`).
 */
function outputNames(query: unknown, renamed: unknown): string[] | undefined {
  let sel = isRecord(query) && isRecord(query['SelectStmt']) ? query['SelectStmt'] : undefined;
  while (sel !== undefined && sel['op'] !== undefined && sel['op'] !== 'SETOP_NONE')
    sel = isRecord(sel['larg']) ? sel['larg'] : undefined;
  const targets = sel?.['targetList'];
  if (!Array.isArray(targets)) return undefined;
  const out: string[] = [];
  for (const t of targets as unknown[]) {
    const r = isRecord(t) && isRecord(t['ResTarget']) ? t['ResTarget'] : undefined;
    const val = r?.['val'];
    const f = isRecord(val) && isRecord(val['ColumnRef']) ? (val['ColumnRef']['fields'] as unknown[]) : [];
    if (
      r === undefined ||
      (f.length > 0 && isRecord(f[f.length - 1]) && 'A_Star' in (f[f.length - 1] as AstNode))
    )
      return undefined;
    out.push(typeof r['name'] === 'string' ? r['name'] : figuredName(val).name);
  }
  const aliases = Array.isArray(renamed) ? names(renamed) : [];
  return out.map((n, i) => aliases[i] ?? n);
}

/**
 * The output name PostgreSQL gives a select-list entry written without AS (FigureColname in its parser), and
 * how sure it is (2 a name from the expression, 1 a type's or `case`, 0 none). The catalog prints a view's
 * entries that are not plain columns with an AS, `1 AS "?column?"` or `'x'::text AS text`; a name equal to
 * this one says nothing the bare entry did not. A kind not listed here gets `?column?`; where PostgreSQL
 * figures a name for one (the XML functions), the AS the catalog prints stays and the view compares as
 * written.
 */
function figuredName(node: unknown): FiguredName {
  if (!isRecord(node)) return UNNAMED;
  const [kind, body] = Object.entries(node)[0] ?? [];
  const figure = kind === undefined ? undefined : FIGURED_NAMES[kind];
  return figure !== undefined && isRecord(body) ? figure(body) : UNNAMED;
}

interface FiguredName {
  readonly name: string;
  readonly strength: number;
}
const UNNAMED: FiguredName = { name: '?column?', strength: 0 };
const named = (name: string | undefined): FiguredName =>
  name === undefined ? UNNAMED : { name, strength: 2 };
function lastString(list: unknown): string | undefined {
  const parts = Array.isArray(list) ? list : [];
  const end: unknown = parts[parts.length - 1];
  return isRecord(end) && isRecord(end['String']) ? String(end['String']['sval']) : undefined;
}
const FIGURED_NAMES: Readonly<Record<string, (body: AstNode) => FiguredName>> = {
  ColumnRef: (b) => named(lastString(b['fields'])),
  A_Indirection: (b) => {
    const field = lastString(b['indirection']);
    return field !== undefined ? named(field) : figuredName(b['arg']);
  },
  FuncCall: (b) => named(lastString(b['funcname'])),
  A_Expr: (b) => (b['kind'] === 'AEXPR_NULLIF' ? named('nullif') : UNNAMED),
  TypeCast: (b) => {
    const inner = figuredName(b['arg']);
    if (inner.strength > 1) return inner;
    const type = isRecord(b['typeName']) ? lastString(b['typeName']['names']) : undefined;
    return type === undefined ? inner : { name: type, strength: 1 };
  },
  CollateClause: (b) => figuredName(b['arg']),
  CaseExpr: (b) => {
    const inner = figuredName(b['defresult']);
    return inner.strength > 1 ? inner : { name: 'case', strength: 1 };
  },
  A_ArrayExpr: () => named('array'),
  RowExpr: () => named('row'),
  CoalesceExpr: () => named('coalesce'),
  MinMaxExpr: (b) => named(b['op'] === 'IS_GREATEST' ? 'greatest' : 'least'),
  // SVFOP_CURRENT_TIMESTAMP_N (with a precision) is current_timestamp too.
  SQLValueFunction: (b) =>
    named(
      String(b['op'])
        .replace(/^SVFOP_/, '')
        .replace(/_N$/, '')
        .toLowerCase(),
    ),
  SubLink: (b) =>
    b['subLinkType'] === 'EXISTS_SUBLINK'
      ? named('exists')
      : b['subLinkType'] === 'ARRAY_SUBLINK'
        ? named('array')
        : UNNAMED,
};

/**
 * A set operation takes its column names from its leftmost arm, so a name in any other arm is noise, and
 * PostgreSQL adds one: `NULL::integer` in a later arm comes back from the catalog as `NULL::integer AS int4`.
 * Every arm but the leftmost loses its output names, at every depth (a UNION inside a FROM subquery too).
 */
function unnameLaterArms(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(unnameLaterArms);
  if (!isRecord(node)) return node;
  const out: AstNode = {};
  for (const [k, v] of Object.entries(node)) out[k] = unnameLaterArms(v);
  if (out['op'] !== undefined && out['op'] !== 'SETOP_NONE' && isRecord(out['rarg']))
    out['rarg'] = unnamedArm(out['rarg']);
  return out;
}

function unnamedArm(sel: AstNode): AstNode {
  if (sel['op'] !== undefined && sel['op'] !== 'SETOP_NONE') {
    const arms: AstNode = { ...sel };
    if (isRecord(sel['larg'])) arms['larg'] = unnamedArm(sel['larg']);
    if (isRecord(sel['rarg'])) arms['rarg'] = unnamedArm(sel['rarg']);
    return arms;
  }
  const targets = sel['targetList'] as AstNode[] | undefined;
  if (targets === undefined) return sel;
  return {
    ...sel,
    targetList: targets.map((t) => {
      if (!isRecord(t['ResTarget'])) return t;
      const { name: _name, ...rest } = t['ResTarget'];
      return { ResTarget: rest };
    }),
  };
}

/**
 * The catalog qualifies every column in every SELECT of a view (each arm of a UNION, each CTE), so in any
 * SELECT over a single relation a column qualified by that relation's name or alias loses the qualifier.
 */
function unqualifyScopes(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(unqualifyScopes);
  if (!isRecord(node)) return node;
  const out: AstNode = {};
  for (const [k, v] of Object.entries(node)) {
    const inner = unqualifyScopes(v);
    // A set operation's arms are bare SELECT bodies; elsewhere a SELECT is wrapped as {SelectStmt: ...}.
    out[k] =
      (k === 'larg' || k === 'rarg' || k === 'SelectStmt') && isRecord(inner) ? unqualifyIn(inner) : inner;
  }
  return out;
}

function unqualifyIn(sel: AstNode): AstNode {
  const from = (sel['fromClause'] as AstNode[] | undefined) ?? [];
  const single =
    from.length === 1 && isRecord(from[0]?.['RangeVar']) ? (from[0]['RangeVar'] as AstNode) : undefined;
  if (!single) return sel;
  const qualifiers = new Set([String(single['relname'])]);
  if (isRecord(single['alias'])) qualifiers.add(String(single['alias']['aliasname']));
  const strip = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(strip);
    if (!isRecord(node)) return node;
    if (isRecord(node['ColumnRef'])) {
      const f = node['ColumnRef']['fields'] as AstNode[];
      const first = names(f.slice(0, 1))[0];
      if (f.length === 2 && first !== undefined && qualifiers.has(first))
        return { ColumnRef: { fields: [f[1]] } };
    }
    const out: AstNode = {};
    for (const [k, v] of Object.entries(node)) out[k] = strip(v);
    return out;
  };
  return strip(sel) as AstNode;
}

/** Statements that declare an object others may name: loaded before the statements naming them. */
const DECLARATIONS = new Set([
  'CreateSchemaStmt',
  'CreateExtensionStmt',
  'CreateEnumStmt',
  'CompositeTypeStmt',
  'CreateRangeStmt',
  'CreateDomainStmt',
  'CreateSeqStmt',
  'CreateStmt',
  'CreateFunctionStmt',
  'ViewStmt',
  'CreateTableAsStmt',
]);

/** Where a statement comes in the load order: declarations, then what names them, then comments. */
function loadStage(s: ParsedStatement): number {
  return DECLARATIONS.has(s.type) ? 0 : s.type === 'CommentStmt' ? 2 : 1;
}

/**
 * The one load order, offline and in a dev database alike: by stage, and within a stage in file order
 * (files in the order given), so a statement may name what is declared further down.
 */
function inLoadOrder(all: readonly ParsedStatement[]): ParsedStatement[] {
  return all
    .map((s, i) => ({ s, i }))
    .sort((a, b) => loadStage(a.s) - loadStage(b.s) || a.i - b.i)
    .map((x) => x.s);
}

/** One statement of the desired files as a dev database runs it. */
export interface DevStatement {
  /** The statement's own text, comments before it included, without its `;`. */
  readonly sql: string;
  /** `file:line:column` of its first word. */
  readonly where: string;
  /** Its first line, for a message: `CREATE VIEW big_orders AS SELECT …`. */
  readonly label: string;
}

/** Ownership, privileges and security labels: not managed, and naming roles or label providers a dev database may lack. */
function changesOnlyAccess(s: ParsedStatement): boolean {
  if (s.type === 'AlterTableStmt')
    return ((s.node['cmds'] as AstNode[] | undefined) ?? []).every(
      (c) => (c['AlterTableCmd'] as AstNode)['subtype'] === 'AT_ChangeOwner',
    );
  return ['ownership', 'privileges', 'security labels'].includes(OWNERSHIP_AND_PRIVILEGES[s.type] ?? '');
}

/**
 * The desired files as a dev database runs them: in the load order, without what the loader skips (SET,
 * BEGIN/COMMIT, set_config: a COMMIT would end the dev transaction) and without ownership and privileges.
 * A CREATE SCHEMA with elements stays one statement, as the server runs it. Syntax errors throw as the
 * loader reports them.
 */
export async function devStatements(
  files: readonly { path: string; sql: string }[],
): Promise<DevStatement[]> {
  await ensureParser();
  const all = files.flatMap((f) => parseStatements(f.sql, f.path));
  return inLoadOrder(all)
    .filter((s) => !isSessionStatement(s) && !changesOnlyAccess(s))
    .map((s) => {
      const sql = s.text.bytes.subarray(s.text.start, s.text.end).toString('utf8');
      const first = sql.slice(statementStart(sql, 0)).split('\n')[0] ?? '';
      return {
        sql,
        where: `${s.source}:${s.line}:${s.column}`,
        label: first.length > 100 ? `${first.slice(0, 100)}…` : first,
      };
    });
}

/**
 * `CREATE SCHEMA s CREATE TABLE t ... CREATE VIEW v ...`: the schema, then each element as a statement of
 * its own at the same position. PostgreSQL puts s first on the search path while it runs them, so an
 * unqualified relation an element creates or names (not a CTE's name) is s's.
 */
function schemaElements(s: ParsedStatement): ParsedStatement[] {
  const elements =
    s.type === 'CreateSchemaStmt' ? (s.node['schemaElts'] as AstNode[] | undefined) : undefined;
  if (elements === undefined || elements.length === 0) return [s];
  const schema = String(s.node['schemaname']);
  const { schemaElts: _e, ...schemaNode } = s.node;
  const out: ParsedStatement[] = [{ ...s, node: schemaNode }];
  for (const el of elements) {
    const type = Object.keys(el)[0] ?? '';
    const ctes = new Set<string>();
    const collect = (x: unknown): void => {
      if (Array.isArray(x)) x.forEach(collect);
      else if (isRecord(x)) {
        if (isRecord(x['CommonTableExpr'])) ctes.add(String(x['CommonTableExpr']['ctename']));
        Object.values(x).forEach(collect);
      }
    };
    collect(el);
    const qualify = (x: unknown): unknown => {
      if (Array.isArray(x)) return x.map(qualify);
      if (!isRecord(x)) return x;
      const out: AstNode = {};
      for (const [k, v] of Object.entries(x)) out[k] = qualify(v);
      if (isRecord(x['RangeVar'])) {
        const rv = out['RangeVar'] as AstNode;
        if (rv['schemaname'] === undefined && !ctes.has(String(rv['relname'])))
          out['RangeVar'] = { ...rv, schemaname: schema };
      }
      // An element's own relation (CREATE TABLE t, CREATE VIEW v, CREATE INDEX ... ON t) and a foreign
      // key's table are bare RangeVars.
      for (const k of ['relation', 'view', 'sequence', 'pktable']) {
        const rv = out[k];
        if (isRecord(rv) && rv['relname'] !== undefined && rv['schemaname'] === undefined)
          out[k] = { ...rv, schemaname: schema };
      }
      return out;
    };
    out.push({ ...s, type, node: (qualify(el) as AstNode)[type] as AstNode });
  }
  return out;
}

/** @param defaultSchema where unqualified names live: the connecting role's current_schema(). */
export async function loadDesiredSql(
  files: readonly { path: string; sql: string }[],
  defaultSchema: string,
): Promise<SchemaModel> {
  await ensureParser();
  const asParsed = new DesiredStateBuilder(defaultSchema);
  if (await asParsed.addFilesAsParsed(files)) return asParsed.build();
  // A file that does not parse: loaded again whole, its statements left out and its syntax error reported.
  const b = new DesiredStateBuilder(defaultSchema);
  b.addFiles(files);
  return b.build();
}
