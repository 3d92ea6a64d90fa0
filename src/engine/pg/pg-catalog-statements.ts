/**
 * The catalog's DDL as parsed statements, without parsing the same text thousands of times. A live
 * database's tables repeat their column definitions (`bigint NOT NULL`, `text DEFAULT ''::text`) and
 * constraint bodies (`PRIMARY KEY (id)`, `CHECK ((amount >= (0)::numeric))`) from table to table: each
 * distinct body is parsed once, all of them in one batch, and each table is handed to the builder as its
 * header and those shared pieces, each named as the table names it: the builder normalises each distinct
 * piece once (DesiredStateBuilder.addCatalogPieces) through the steps CREATE TABLE takes, so the live model
 * is the one the whole text would give (positions aside: the catalog's text has no annotations, the only
 * thing positions are read for).
 *
 * Indexes repeat the same way (`... USING btree (code)` on every table): pg_get_indexdef's text past the
 * index's and its table's names is parsed once per distinct text, and each index's statement is that one
 * with its own names put in. A foreign key's body differs from table to table only by the table it
 * references (`FOREIGN KEY (parent_id) REFERENCES t41(id)`): it is parsed once per distinct text with that
 * name replaced, and each gets its own referenced table back.
 *
 * Everything else (views, functions, a table with storage parameters or partitions, an index whose text does
 * not start as expected) is parsed as text, in one batch too.
 */
import {
  type IndexOfPieces,
  type ParsedStatement,
  type TableOfPieces,
  parseStatements,
} from './pg-desired.ts';
import { quoteIdent } from './pg-normalize.ts';
import { withRelationNames } from './pg-template-names.ts';
import type { AstNode } from './pg-normalize.ts';

/** A plain table's CREATE TABLE, as the names and element bodies it is written from. */
export interface CatalogTable {
  readonly schema: string;
  readonly name: string;
  /** Columns: name and the text after it. */
  readonly columns: readonly { readonly name: string; readonly body: string }[];
  /** Table constraints: name and the text after `CONSTRAINT "name"`. */
  readonly constraints: readonly CatalogConstraint[];
}

export interface CatalogConstraint {
  readonly name: string;
  readonly body: string;
  /** A foreign key's referenced table, as the catalog row names it. */
  readonly references?: { readonly schema: string; readonly table: string };
}

/** A foreign key's body with the referenced table's name replaced by a fixed one, qualified or not as written. */
interface ForeignKeyTemplate {
  readonly body: string;
  readonly qualified: boolean;
}

/** A table's index, as pg_get_indexdef writes it. */
export interface CatalogIndex {
  readonly schema: string;
  readonly table: string;
  readonly name: string;
  readonly def: string;
}

export type CatalogItem = string | CatalogTable | CatalogIndex;

const isIndex = (item: CatalogItem): item is CatalogIndex => typeof item !== 'string' && 'def' in item;

/** What PostgreSQL's quote_identifier may write for a name: bare, or quoted. */
const spellings = (name: string) => [name, quoteIdent(name)];

/**
 * The foreign key's body with `REFERENCES <its table>(` written `REFERENCES s.r(` (or `REFERENCES r(` when
 * the catalog left the name unqualified), or undefined unless exactly one such text is in the body: then it
 * is the one the catalog wrote for the referenced table (a quoted column name holding the same text would
 * make two), and the rest of the body is the key's own.
 */
function foreignKeyTemplate(c: CatalogConstraint): ForeignKeyTemplate | undefined {
  if (c.references === undefined) return undefined;
  const { schema, table } = c.references;
  const { body } = c;
  // Each spelling starts right after a `REFERENCES `: with one such word in the body, at most one spelling
  // is found, there, and it is found by comparing in place rather than by searching the body for each.
  const word = body.indexOf(REFERENCES);
  if (word < 0 || body.includes(REFERENCES, word + 1)) return foreignKeyTemplateSearched(c);
  const at = word + REFERENCES.length;
  // As the search counts them: each distinct spelling found is one, and only one may be.
  const found = new Map<string, ForeignKeyTemplate>();
  for (const t of spellings(table)) {
    if (body.startsWith(t, at) && body.charCodeAt(at + t.length) === OPEN)
      found.set(t, { body: `${body.slice(0, at)}r${body.slice(at + t.length)}`, qualified: false });
    for (const sch of spellings(schema)) {
      const dot = at + sch.length;
      if (
        body.startsWith(sch, at) &&
        body.charCodeAt(dot) === DOT &&
        body.startsWith(t, dot + 1) &&
        body.charCodeAt(dot + 1 + t.length) === OPEN
      )
        found.set(`${sch}.${t}`, {
          body: `${body.slice(0, at)}s.r${body.slice(dot + 1 + t.length)}`,
          qualified: true,
        });
    }
  }
  return found.size === 1 ? [...found.values()][0] : undefined;
}

const REFERENCES = 'REFERENCES ';
const OPEN = 0x28;
const DOT = 0x2e;

/** foreignKeyTemplate for a body with more than one `REFERENCES `: every spelling searched for. */
function foreignKeyTemplateSearched(c: CatalogConstraint): ForeignKeyTemplate | undefined {
  if (c.references === undefined) return undefined;
  const { schema, table } = c.references;
  const found: { at: number; text: string; qualified: boolean }[] = [];
  const candidates = new Map<string, boolean>();
  for (const t of spellings(table)) {
    candidates.set(`REFERENCES ${t}(`, false);
    for (const sch of spellings(schema)) candidates.set(`REFERENCES ${sch}.${t}(`, true);
  }
  for (const [text, qualified] of candidates)
    for (let at = c.body.indexOf(text); at >= 0; at = c.body.indexOf(text, at + 1))
      found.push({ at, text, qualified });
  const only = found.length === 1 ? found[0] : undefined;
  if (only === undefined) return undefined;
  const name = only.qualified ? 's.r' : 'r';
  return {
    body: `${c.body.slice(0, only.at)}REFERENCES ${name}(${c.body.slice(only.at + only.text.length)}`,
    qualified: only.qualified,
  };
}

/**
 * The index's statement with the names replaced by fixed ones (`CREATE UNIQUE INDEX i ON s.t USING ...`),
 * or undefined when its text does not start with the names as the catalog row gives them. A spelling that
 * matches is what the catalog wrote for these very names, so the text after them is the index's own.
 */
function indexTemplate(i: CatalogIndex): string | undefined {
  for (const head of ['CREATE INDEX ', 'CREATE UNIQUE INDEX ']) {
    if (!i.def.startsWith(head)) continue;
    for (const name of spellings(i.name))
      for (const only of ['', 'ONLY '])
        for (const schema of spellings(i.schema))
          for (const table of spellings(i.table)) {
            const prefix = `${head}${name} ON ${only}${schema}.${table} USING `;
            if (i.def.startsWith(prefix))
              return `${head}i ON ${only}s.t USING ${i.def.slice(prefix.length)};`;
          }
  }
  return undefined;
}

/** The text the table's statement is: what the whole-text path parses, and the one the pieces stand for. */
export function tableText(t: CatalogTable): string {
  const elements = [
    ...t.columns.map((c) => `${quoteIdent(c.name)} ${c.body}`),
    ...t.constraints.map((c) => `CONSTRAINT ${quoteIdent(c.name)} ${c.body}`),
  ];
  return `CREATE TABLE ${quoteIdent(t.schema)}.${quoteIdent(t.name)} (${elements.join(', ')});`;
}

const textOf = (item: CatalogItem) =>
  typeof item === 'string' ? item : isIndex(item) ? `${item.def};` : tableText(item);

/** Every item's statements by parsing the whole text: the reference the pieces must equal. */
export function parseWhole(items: readonly CatalogItem[]): ParsedStatement[] {
  return parseStatements(items.map(textOf).join('\n'), 'catalog');
}

const record = (x: unknown): AstNode => x as AstNode;

/**
 * The referenced table's RangeVar of a foreign key parsed from its template, with the table's own names put
 * back: the one parsing the catalog's text gives. A template that did not parse as the referenced name
 * where it was put throws (the caller then parses the whole text).
 */
function referenced(con: AstNode, fk: ForeignKeyTemplate, c: CatalogConstraint): AstNode {
  const { schema, table } = c.references ?? { schema: '', table: '' };
  // The parser writes a constraint's referenced table as a bare RangeVar (no `RangeVar` key around it).
  const rv = withRelationNames(con['pktable'], 'r', fk.qualified ? { schema, table } : { table });
  if (rv === undefined) throw new Error('a catalog foreign key did not parse as its template');
  return rv;
}

/** A statement of the catalog's text, or a table or index as its once-parsed pieces. */
export type CatalogStatement = ParsedStatement | TableOfPieces | IndexOfPieces;

/**
 * The items' statements in order, each plain table and index as its once-parsed pieces (loaded with
 * DesiredStateBuilder.addCatalogPieces). Throws whatever the parser throws; the caller falls back to
 * `parseWhole` for the exact message.
 */
export function parseByPieces(catalogItems: readonly CatalogItem[]): CatalogStatement[] {
  const templates = new Map<CatalogIndex, string>();
  // An index whose text does not start as expected is parsed as its text.
  const items = catalogItems.map((item) => {
    if (!isIndex(item)) return item;
    const template = indexTemplate(item);
    if (template === undefined) return textOf(item);
    templates.set(item, template);
    return item;
  });
  const texts: string[] = [];
  // Each kind of piece keyed by its own text: a key written afresh for every lookup was hashed afresh too.
  const columns = new Map<string, AstNode | undefined>();
  const constraints = new Map<string, AstNode | undefined>();
  const indexes = new Map<string, ParsedStatement | undefined>();
  const foreignKeys = new Map<CatalogConstraint, ForeignKeyTemplate>();
  const constraintBodies = new Map<CatalogConstraint, string>();
  for (const item of items) {
    if (typeof item === 'string') {
      texts.push(item);
      continue;
    }
    if (isIndex(item)) {
      indexes.set(templates.get(item) ?? '', undefined);
      continue;
    }
    for (const c of item.columns) columns.set(c.body, undefined);
    for (const c of item.constraints) {
      const template = foreignKeyTemplate(c);
      if (template !== undefined) foreignKeys.set(c, template);
      const body = template?.body ?? c.body;
      constraintBodies.set(c, body);
      constraints.set(body, undefined);
    }
  }
  // One statement per piece, so the nth parsed statement is the nth piece; the first is the header.
  const columnKeys = [...columns.keys()];
  const constraintKeys = [...constraints.keys()];
  const indexKeys = [...indexes.keys()];
  const parsedPieces = parseStatements(
    [
      'CREATE TABLE "s"."t" ();',
      ...columnKeys.map((body) => `CREATE TABLE x (c ${body});`),
      ...constraintKeys.map((body) => `CREATE TABLE x (CONSTRAINT c ${body});`),
      ...indexKeys,
    ].join('\n'),
    'catalog',
  );
  if (parsedPieces.length !== 1 + columnKeys.length + constraintKeys.length + indexKeys.length)
    throw new Error('catalog pieces did not parse one by one');
  const header = parsedPieces[0] as ParsedStatement;
  const relation = record(record(header.node['relation'])['RangeVar']);
  let next = 1;
  const element = (kind: 'ColumnDef' | 'Constraint') => {
    const elts = (parsedPieces[next++] as ParsedStatement).node['tableElts'] as AstNode[] | undefined;
    if (elts?.length !== 1 || elts[0]?.[kind] === undefined)
      throw new Error('a catalog piece is not one table element');
    return record(elts[0][kind]);
  };
  for (const body of columnKeys) columns.set(body, element('ColumnDef'));
  for (const body of constraintKeys) constraints.set(body, element('Constraint'));
  for (const template of indexKeys) {
    const parsed = parsedPieces[next++] as ParsedStatement;
    if (parsed.type !== 'IndexStmt') throw new Error('a catalog index is not one index');
    indexes.set(template, parsed);
  }

  // The other statements, in one batch; each belongs to the text item its end falls in.
  const starts: number[] = [];
  let at = 0;
  for (const t of texts) {
    starts.push(at);
    at += Buffer.byteLength(t) + 1;
  }
  const parsedTexts = parseStatements(texts.join('\n'), 'catalog');
  const byText: ParsedStatement[][] = texts.map(() => []);
  let item = 0;
  for (const s of parsedTexts) {
    while (item + 1 < starts.length && (starts[item + 1] ?? 0) < s.text.offset + s.text.end) item++;
    byText[item]?.push(s);
  }

  const out: CatalogStatement[] = [];
  let textIndex = 0;
  for (const it of items) {
    if (typeof it === 'string') {
      out.push(...(byText[textIndex++] ?? []));
      continue;
    }
    if (isIndex(it)) {
      const parsed = indexes.get(templates.get(it) ?? '') as ParsedStatement;
      const rv = record(record(parsed.node['relation'])['RangeVar']);
      const node: AstNode = {
        ...parsed.node,
        idxname: it.name,
        relation: { RangeVar: { ...rv, schemaname: it.schema, relname: it.table } },
      };
      out.push({ kind: 'index of pieces', statement: { ...parsed, node }, shared: parsed.node });
      continue;
    }
    out.push({
      kind: 'table of pieces',
      header: {
        ...header,
        node: {
          ...header.node,
          relation: { RangeVar: { ...relation, schemaname: it.schema, relname: it.name } },
        },
      },
      columns: it.columns.map((c) => ({ name: c.name, def: columns.get(c.body) as AstNode })),
      constraints: it.constraints.map((c) => {
        const con = constraints.get(constraintBodies.get(c) ?? '') as AstNode;
        const fk = foreignKeys.get(c);
        return {
          name: c.name,
          constraint: fk === undefined ? con : { ...con, pktable: referenced(con, fk, c) },
        };
      }),
    });
  }
  return out;
}
