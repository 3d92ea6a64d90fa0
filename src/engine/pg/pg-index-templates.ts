/**
 * A CREATE INDEX statement with its own names taken out. A schema's index statements differ from table to
 * table mostly by the index's and the table's names (`CREATE INDEX t41_created_idx ON t41 (created_at
 * DESC)`, pg_dump's `CREATE INDEX ix ON public.t USING btree (user_id)`); with both replaced by fixed ones
 * (`CREATE INDEX i ON t ...`) the statement is parsed once per shape, and each gets the parse with its own
 * names put back (withIndexNames). The catalog side does the same with pg_get_indexdef's texts
 * (pg-catalog-statements.ts).
 *
 * Taken only where the reading is sure to be the parser's: the statement is ASCII with no comment, dollar
 * quote, backslash or other `;`, and its names are plain words that are no keyword, or quoted names, of at
 * most 63 characters (pg-template-names.ts reads them).
 */
import { type AstNode, isRecord } from './pg-normalize.ts';
import { IDENT, nameOf, withRelationNames } from './pg-template-names.ts';

export interface IndexTemplate {
  /** `CREATE [UNIQUE] INDEX i ON [ONLY] [s.]t ...;` */
  readonly text: string;
  /** The index's name as the parser reads it. */
  readonly name: string;
  /** The table's names as the parser reads them. */
  readonly schema?: string;
  readonly table: string;
}

const HEAD = new RegExp(
  String.raw`CREATE\s+(UNIQUE\s+)?INDEX\s+(${IDENT})\s+ON\s+(ONLY\s+)?(${IDENT})(?:\s*\.\s*(${IDENT}))?(?=[\s(])`,
  'iy',
);
/** Non-ASCII, `$`, `\`, `;`, or a comment's start: a statement holding one is parsed as written. */
const UNSURE = /[^\x20-\x7e\t\r\n]|[$\\;]|--|\/\*/;

/** The index statement `sql` (without its `;`) as a template, or undefined unless its names can be taken out. */
export function indexTemplate(sql: string): IndexTemplate | undefined {
  if (UNSURE.test(sql)) return undefined;
  HEAD.lastIndex = 0;
  const head = HEAD.exec(sql);
  if (head === null) return undefined;
  const [, unique, index, only, first, second] = head;
  const name = index === undefined ? undefined : nameOf(index);
  const firstName = first === undefined ? undefined : nameOf(first);
  const secondName = second === undefined ? undefined : nameOf(second);
  if (name === undefined || firstName === undefined || (second !== undefined && secondName === undefined))
    return undefined;
  const table = second === undefined ? 't' : 's.t';
  return {
    text: `CREATE ${unique === undefined ? '' : 'UNIQUE '}INDEX i ON ${only === undefined ? '' : 'ONLY '}${table}${sql.slice(HEAD.lastIndex)};`,
    name,
    ...(secondName === undefined ? { table: firstName } : { schema: firstName, table: secondName }),
  };
}

/**
 * The template's parsed IndexStmt with the statement's own names put back; undefined when the parse did
 * not read the fixed names where they were put.
 */
export function withIndexNames(parsed: AstNode, template: IndexTemplate): AstNode | undefined {
  const wrapped = isRecord(parsed['relation']) && isRecord(parsed['relation']['RangeVar']);
  const rv = wrapped ? (parsed['relation'] as AstNode)['RangeVar'] : parsed['relation'];
  const relation = parsed['idxname'] === 'i' ? withRelationNames(rv, 't', template) : undefined;
  if (relation === undefined) return undefined;
  return { ...parsed, idxname: template.name, relation: wrapped ? { RangeVar: relation } : relation };
}
