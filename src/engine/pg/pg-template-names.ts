/**
 * Names taken out of a statement's text so it is parsed once per shape (pg-constraint-templates.ts,
 * pg-index-templates.ts), and put back into the parse: what both kinds of template read and write alike.
 */
import { keywordKindOf } from '@pgsql/quotes';
import { type AstNode, isRecord } from './pg-normalize.ts';

/** A plain or quoted identifier, as PostgreSQL's scanner reads one (ASCII only: the texts read here are). */
export const IDENT = String.raw`(?:[A-Za-z_][A-Za-z0-9_$]*|"(?:[^"]|"")+")`;

/** PostgreSQL's NAMEDATALEN - 1. */
const NAME_BYTES = 63;

/**
 * The name the parser reads from a plain or quoted identifier, or undefined where that is not sure: a
 * plain word that is a keyword of any kind (a reserved one is a syntax error to report, not a name), or a
 * name longer than PostgreSQL keeps (it is cut, with a notice).
 */
export function nameOf(ident: string): string | undefined {
  const name = ident.startsWith('"')
    ? ident.slice(1, -1).replace(/""/g, '"')
    : keywordKindOf(ident) === 'NO_KEYWORD'
      ? ident.toLowerCase()
      : undefined;
  return name !== undefined && name.length <= NAME_BYTES ? name : undefined;
}

/**
 * A parsed RangeVar written `placeholder` or `s.placeholder` in the template, with the relation's own names
 * put back; undefined when the parse did not read the fixed name where it was put.
 */
export function withRelationNames(
  rv: unknown,
  placeholder: string,
  names: { readonly schema?: string; readonly table: string },
): AstNode | undefined {
  if (
    !isRecord(rv) ||
    rv['relname'] !== placeholder ||
    rv['schemaname'] !== (names.schema === undefined ? undefined : 's')
  )
    return undefined;
  return { ...rv, relname: names.table, ...(names.schema === undefined ? {} : { schemaname: names.schema }) };
}
