/**
 * `-- ptah:renamed-from <old>` annotations in desired MySQL SQL, with the rules of the PostgreSQL loader: a
 * table's annotation stands before its CREATE TABLE (or on that line, before the first definition); a
 * column's stands on the column's line (after the semicolon too), or on a line of its own before it. The
 * grammar drops comments, so they are read from the statement's tokens.
 */
import { DesiredStateError } from '../pg/pg-desired.ts';
import { type Token, tokenize } from './mysql-spelling.ts';

const ANNOTATION = /^(?:--|#)[ \t]*ptah:renamed-from[ \t]+(`(?:[^`]|``)+`|[^\s,;()]+)/;

/** An annotation found around a statement: its line, and where it stands among the statement's tokens. */
interface Found {
  readonly old: string;
  readonly line: number;
  /** Character offset in the statement's code text; -1 before it, Infinity after its semicolon. */
  readonly at: number;
}

/** A definition of a CREATE TABLE or a clause of an ALTER TABLE: where it starts, and its column if any. */
export interface Element {
  readonly at: number;
  readonly line: number;
  readonly column?: string;
}

export interface RenameAnnotations {
  readonly table?: string;
  /** New column name → old column name. */
  readonly columns: ReadonlyMap<string, string>;
}

/** The statement as parseDesired sees it, with the comments that stand around it. */
export interface AnnotatedText {
  /** The code text (leading comments taken off) and the line its first character is on. */
  readonly code: string;
  readonly line: number;
  /** The column (in characters) of the code's first character on its line. */
  readonly column: number;
  /** Leading comments that are the statement's own (not trailing the previous statement's line). */
  readonly leading: readonly { readonly text: string; readonly line: number }[];
  /** Comments after the statement's semicolon on its last line. */
  readonly trailing: readonly string[];
}

function identifier(raw: string, where: string): string {
  if (raw.startsWith('`')) return raw.slice(1, -1).replace(/``/g, '`');
  // A MySQL schema is the database: a rename keeps its table there.
  if (raw.includes('.'))
    throw new DesiredStateError(
      `${where}: ptah:renamed-from ${raw} names a schema; a rename keeps the table in its database, so name the old object alone`,
    );
  return raw;
}

function found(text: AnnotatedText, where: string): Found[] {
  const out: Found[] = [];
  const match = (comment: string) => ANNOTATION.exec(comment.trim())?.[1];
  for (const l of text.leading) {
    const m = match(l.text);
    if (m !== undefined) out.push({ old: identifier(m, where), line: l.line, at: -1 });
  }
  let offset = 0;
  let line = text.line;
  for (const t of tokenize(text.code)) {
    if (t.kind === 'comment') {
      const m = match(t.text);
      if (m !== undefined) out.push({ old: identifier(m, where), line, at: offset });
    }
    offset += t.text.length;
    line += t.text.split('\n').length - 1;
  }
  const last = line;
  for (const c of text.trailing) {
    const m = match(c);
    if (m !== undefined) out.push({ old: identifier(m, where), line: last, at: Infinity });
  }
  return out;
}

/** Whether any comment around the statement is an annotation: the cheap test before reading them. */
export function hasAnnotation(text: AnnotatedText): boolean {
  return (
    text.code.includes('ptah:renamed-from') ||
    text.leading.some((l) => l.text.includes('ptah:renamed-from')) ||
    text.trailing.some((c) => c.includes('ptah:renamed-from'))
  );
}

/**
 * The annotations of one statement matched to its elements. `tableAnnotations`: CREATE TABLE (an
 * annotation before the first element, on a line of no element, names the table's old name); ALTER TABLE
 * has none, every annotation is a column's.
 */
export function renameAnnotations(
  text: AnnotatedText,
  elements: readonly Element[],
  where: string,
  tableAnnotations: boolean,
): RenameAnnotations {
  let table: string | undefined;
  const columns = new Map<string, string>();
  const first = elements[0]?.at ?? Infinity;
  for (const f of found(text, where)) {
    const onElementLine = elements.some((e) => e.line === f.line);
    if (tableAnnotations && f.at < first && !onElementLine) {
      if (table !== undefined)
        throw new DesiredStateError(`${where}: two ptah:renamed-from annotations for the table; keep one`);
      table = f.old;
      continue;
    }
    // The element starting on the annotation's line before it, else the first one after it.
    const before = elements.filter((e) => e.at < f.at && e.line === f.line);
    const target = before[before.length - 1] ?? elements.find((e) => e.at > f.at);
    if (target?.column === undefined)
      throw new DesiredStateError(
        tableAnnotations
          ? `${where}: the annotation ptah:renamed-from ${f.old} stands by no column; put it on the renamed column's line`
          : `${where}: the annotation ptah:renamed-from ${f.old} stands by no added column; a table's rename is annotated at its CREATE TABLE, a column's on its ADD COLUMN line`,
      );
    if (columns.has(target.column))
      throw new DesiredStateError(
        `${where}: column ${target.column} has two ptah:renamed-from annotations; keep one`,
      );
    columns.set(target.column, f.old);
  }
  return { ...(table !== undefined ? { table } : {}), columns };
}

/**
 * The elements of a statement: a CREATE TABLE's definitions (inside its first parenthesis, `body` =
 * 'parenthesis') or an ALTER TABLE's clauses (from the character offset `body`), split at their commas,
 * each named by `columnOf` from its first three words.
 */
export function elementsOf(
  code: string,
  line: number,
  columnOf: (words: readonly Token[]) => string | undefined,
  body: number | 'parenthesis',
): Element[] {
  const out: Element[] = [];
  let offset = 0;
  let ln = line;
  let depth = 0;
  let started = false;
  let start: { at: number; line: number } | undefined;
  let words: Token[] = [];
  const flush = () => {
    if (start !== undefined) {
      const column = columnOf(words);
      out.push({ ...start, ...(column !== undefined ? { column } : {}) });
    }
    start = undefined;
    words = [];
  };
  for (const t of tokenize(code)) {
    const here = offset;
    offset += t.text.length;
    const lineHere = ln;
    ln += t.text.split('\n').length - 1;
    if (t.kind === 'space' || t.kind === 'comment') continue;
    if (!started) {
      if (body === 'parenthesis' ? t.text === '(' : here >= body) started = true;
      if (body === 'parenthesis') continue;
    }
    if (!started) continue;
    if (t.text === '(') depth++;
    else if (t.text === ')') {
      if (body === 'parenthesis' && depth === 0) break;
      depth--;
    }
    if (depth === 0 && t.text === ',') {
      flush();
      continue;
    }
    if (start === undefined) start = { at: here, line: lineHere };
    if (words.length < 3) words.push(t);
  }
  flush();
  return out;
}
