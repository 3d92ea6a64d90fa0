/**
 * The bodies of a text's plain CREATE TABLE statements, found without parsing, so the parser reads each
 * distinct column or constraint text once. A schema repeats its column definitions from table to table
 * (`id bigint NOT NULL`, `created_at timestamp(6) without time zone NOT NULL`); parsing each table whole
 * parsed and turned into JSON the same text thousands of times, the largest part of a no-op plan's time
 * (`npm run bench -- engine`, issue 9). The catalog side does the same with its own texts
 * (pg-catalog-statements.ts).
 *
 * A body is taken apart only where the reading here is sure to be the parser's: a statement that starts a
 * line-ended chunk as `CREATE [UNLOGGED] TABLE [IF NOT EXISTS] name (`, whose body is ASCII with no comment,
 * dollar quote or backslash, and which ends at `);`. Its body is then blanked (every character but a newline
 * becomes a space, so every byte offset and line stays where it was) and split at its top-level commas.
 * Anything else is left to the parser as written; and a split the parser does not confirm (each element
 * must parse as one table element) is never used: the caller parses the text as written.
 */
import { statementEndAfter } from './pg-statement-ends.ts';
import { type IndexTemplate, indexTemplate } from './pg-index-templates.ts';
import { IDENT } from './pg-template-names.ts';

/** A text with some CREATE TABLE bodies and CREATE INDEX statements blanked, and what was taken. */
export interface TableBodiesApart {
  /** The text with each taken body and index statement blanked: same length, same lines, same byte offsets. */
  readonly text: string;
  /** In text order: the UTF-8 byte offset of each taken body's `(`, and its elements' texts in order. */
  readonly bodies: readonly { readonly byteOffset: number; readonly elements: readonly string[] }[];
  /**
   * In text order: each taken index statement's template (pg-index-templates.ts), and where the parser would
   * place it: from just after the previous statement's `;` (its stmt_location) to its own `;` (UTF-8
   * bytes). Its `;` stays in the text, so the statements after it keep their places.
   */
  readonly indexes: readonly {
    readonly from: number;
    readonly end: number;
    readonly template: IndexTemplate;
  }[];
}

const TABLE_HEAD = new RegExp(
  String.raw`CREATE\s+(?:UNLOGGED\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?${IDENT}(?:\s*\.\s*${IDENT})?\s*\(`,
  'iy',
);
/** Space, tab, newline, carriage return, form feed or vertical tab: what PostgreSQL's scanner skips. */
const isSpace = (unit: number) => unit === 0x20 || (unit >= 0x09 && unit <= 0x0d);

/** Past whitespace and line comments at `from`: where a chunk's statement starts. */
function pastBlankLines(text: string, from: number): number {
  let at = from;
  for (;;) {
    while (at < text.length && isSpace(text.charCodeAt(at))) at++;
    if (!text.startsWith('--', at)) return at;
    const nl = text.indexOf('\n', at);
    if (nl < 0) return text.length;
    at = nl + 1;
  }
}

/** Past spaces and tabs at `from`. */
function pastSpaces(text: string, from: number): number {
  let at = from;
  while (text.charCodeAt(at) === 0x20 || text.charCodeAt(at) === 0x09) at++;
  return at;
}

const SEMICOLON = 0x3b;
const NEWLINE = 0x0a;
const QUOTE = 0x27;
const DOUBLE_QUOTE = 0x22;
const OPEN = 0x28;
const CLOSE = 0x29;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;
const DASH = 0x2d;
const SLASH = 0x2f;
const STAR = 0x2a;
/** `$` (a dollar quote or a parameter), `\\` (an escape), `;`: a body holding one is left to the parser. */
const refused = (unit: number) => unit === 0x24 || unit === 0x5c || unit === SEMICOLON || unit >= 0x80;

/**
 * The body opening at `open` (its `(`) up to its matching `)` before `limit`, split at its top-level commas
 * (outside parentheses and brackets: `DEFAULT ARRAY[1, 2]`); undefined when the body is not one this reading is sure of (see the module's comment).
 */
function bodyAt(
  text: string,
  open: number,
  limit: number,
): { close: number; elements: string[] } | undefined {
  const elements: string[] = [];
  let depth = 0;
  let start = open + 1;
  for (let i = open + 1; i < limit; i++) {
    const unit = text.charCodeAt(i);
    if (unit === QUOTE || unit === DOUBLE_QUOTE) {
      // A doubled quote is part of the text: the loop takes the second one as opening again.
      const end = text.indexOf(unit === QUOTE ? "'" : '"', i + 1);
      if (end < 0 || end >= limit) return undefined;
      for (let j = i + 1; j < end; j++) if (refused(text.charCodeAt(j))) return undefined;
      i = end;
    } else if (unit === OPEN || unit === OPEN_BRACKET) depth++;
    else if (unit === CLOSE_BRACKET) {
      if (--depth < 0) return undefined;
    } else if (unit === CLOSE) {
      if (depth === 0) {
        const last = text.slice(start, i).trim();
        if (last === '') return undefined;
        elements.push(last);
        return { close: i, elements };
      }
      depth--;
    } else if (unit === COMMA && depth === 0) {
      const element = text.slice(start, i).trim();
      if (element === '') return undefined;
      elements.push(element);
      start = i + 1;
    } else if (
      refused(unit) ||
      (unit === DASH && text.charCodeAt(i + 1) === DASH) ||
      (unit === SLASH && text.charCodeAt(i + 1) === STAR)
    )
      return undefined;
  }
  return undefined;
}

/**
 * The text with its plain CREATE TABLE bodies taken apart, or undefined when it has none (or carries a
 * `ptah:` annotation: annotations are read from the text around a table's elements, so such a text is
 * parsed as written).
 */
export function tableBodiesApart(text: string): TableBodiesApart | undefined {
  if (text.includes('ptah:')) return undefined;
  const bodies: { byteOffset: number; elements: string[] }[] = [];
  const indexes: { from: number; end: number; template: IndexTemplate }[] = [];
  // Ranges [from, to) blanked, in text order.
  const blanks: { from: number; to: number }[] = [];
  let byteOffset = 0;
  let counted = 0;
  const bytesTo = (at: number) => {
    byteOffset += Buffer.byteLength(text.slice(counted, at));
    counted = at;
    return byteOffset;
  };
  for (let from = 0; from < text.length;) {
    const start = pastBlankLines(text, from);
    TABLE_HEAD.lastIndex = start;
    if (TABLE_HEAD.test(text)) {
      // A table read here ends at `);` and a newline; its body is not scanned again for its end.
      const open = TABLE_HEAD.lastIndex - 1;
      const body = bodyAt(text, open, text.length);
      const end = body === undefined ? -1 : pastSpaces(text, body.close + 1);
      if (body !== undefined && text.charCodeAt(end) === SEMICOLON && text.charCodeAt(end + 1) === NEWLINE) {
        bodies.push({ byteOffset: bytesTo(open), elements: body.elements });
        blanks.push({ from: open + 1, to: body.close });
        from = end + 1;
        continue;
      }
    }
    const end = statementEndAfter(text, from, from);
    if (end < 0) break;
    INDEX_HEAD.lastIndex = start;
    const template = INDEX_HEAD.test(text) ? indexTemplate(text.slice(start, end)) : undefined;
    if (template !== undefined) {
      const fromByte = bytesTo(from);
      indexes.push({ from: fromByte, end: bytesTo(end), template });
      blanks.push({ from: start, to: end });
    }
    from = end + 1;
  }
  if (bodies.length === 0 && indexes.length === 0) return undefined;
  const parts: string[] = [];
  let at = 0;
  for (const blank of blanks) {
    parts.push(text.slice(at, blank.from));
    for (const line of text.slice(blank.from, blank.to).split('\n'))
      parts.push(' '.repeat(line.length), '\n');
    parts.pop();
    at = blank.to;
  }
  parts.push(text.slice(at));
  return { text: parts.join(''), bodies, indexes };
}

/** A statement that may be an index statement: the template's reading decides. */
const INDEX_HEAD = /CREATE\s+(?:UNIQUE\s+)?INDEX\s/iy;
