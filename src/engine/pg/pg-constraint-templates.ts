/**
 * A table constraint's text with its own names taken out. Element texts are parsed once per distinct text
 * (pg-table-bodies.ts), but a constraint's text names the constraint (`CONSTRAINT t41_pkey PRIMARY KEY
 * (id)`) and a foreign key's names the table it references (`REFERENCES t40 (id)`), so no two tables shared
 * one and each was parsed on its own: most of what parsing a schema's table bodies still cost. With both
 * names replaced by fixed ones (`CONSTRAINT c ... REFERENCES r (id)`), the text is parsed once per shape,
 * and each table gets the parse with its own names put back (withNames). The catalog side does the same
 * with the catalog's own texts (pg-catalog-statements.ts).
 *
 * A name is taken out only where the parser is sure to read it as that name: a plain word that is no
 * keyword of any kind (a reserved one would be a syntax error to report, not a name), or a quoted name; at
 * most 63 characters (a longer one is cut, with a notice). The text is ASCII (pg-table-bodies.ts refuses
 * anything else), so characters are bytes.
 */
import { type AstNode, isRecord } from './pg-normalize.ts';
import { IDENT, nameOf, withRelationNames } from './pg-template-names.ts';

export interface ConstraintTemplate {
  /** `CONSTRAINT c <body>`, a foreign key's referenced table written `r` or `s.r`. */
  readonly text: string;
  /** The constraint's name as the parser reads it. */
  readonly name: string;
  /** The referenced table's names as the parser reads them, when they were taken out. */
  readonly references?: { readonly schema?: string; readonly table: string };
}

const NAMED = new RegExp(String.raw`CONSTRAINT\s+(${IDENT})\s+`, 'iy');
const REFERENCES_WORD = /\bREFERENCES\b/gi;
const REFERENCED = new RegExp(String.raw`REFERENCES\s+(${IDENT})(?:\s*\.\s*(${IDENT}))?\s*\(`, 'iy');

/** The element's template, or undefined unless it is a named constraint whose name can be taken out. */
export function constraintTemplate(element: string): ConstraintTemplate | undefined {
  NAMED.lastIndex = 0;
  const named = NAMED.exec(element);
  const name = named?.[1] === undefined ? undefined : nameOf(named[1]);
  if (named === null || name === undefined) return undefined;
  const body = element.slice(NAMED.lastIndex);
  // One REFERENCES only: more (a quoted name or a literal holding the word) and the one that is the
  // clause is not known without parsing, so the body is kept as written.
  const words = [...body.matchAll(REFERENCES_WORD)];
  const at = words.length === 1 ? (words[0]?.index ?? -1) : -1;
  REFERENCED.lastIndex = at;
  const referenced = at < 0 ? null : REFERENCED.exec(body);
  const first = referenced?.[1] === undefined ? undefined : nameOf(referenced[1]);
  const second = referenced?.[2] === undefined ? undefined : nameOf(referenced[2]);
  if (referenced === null || first === undefined || (referenced[2] !== undefined && second === undefined))
    return { text: `CONSTRAINT c ${body}`, name };
  const qualified = second !== undefined;
  return {
    text: `CONSTRAINT c ${body.slice(0, at)}REFERENCES ${qualified ? 's.r' : 'r'} (${body.slice(REFERENCED.lastIndex)}`,
    name,
    references: qualified ? { schema: first, table: second } : { table: first },
  };
}

/**
 * The template's parsed element (`{ Constraint: ... }`) with the constraint's own names put back; undefined
 * when the parse did not read the fixed names where they were put (the caller then parses the text as
 * written).
 */
export function withNames(parsed: AstNode, template: ConstraintTemplate): AstNode | undefined {
  const con = parsed['Constraint'];
  if (!isRecord(con) || con['conname'] !== 'c') return undefined;
  const refs = template.references;
  if (refs === undefined) return { Constraint: { ...con, conname: template.name } };
  const pktable = withRelationNames(con['pktable'], 'r', refs);
  return pktable === undefined ? undefined : { Constraint: { ...con, conname: template.name, pktable } };
}
