/**
 * `-- ptah:renamed-from <old>` annotations in desired SQL. The grammar drops comments, so they are found in
 * the statement's own text by the parser's byte offsets. A table's annotation stands before its CREATE
 * TABLE (or on that line, before the first column); a column's stands on the column's line, or on a line of
 * its own before the column.
 */
import { DesiredStateError } from './pg-desired.ts';

const ANNOTATION = /--[ \t]*ptah:renamed-from[ \t]+("(?:[^"]|"")+"|[^\s,;()]+)/g;

export interface StatementText {
  /** The whole source as UTF-8: libpg-query's locations are byte offsets. */
  readonly bytes: Buffer;
  /** Byte offsets of the statement: from the end of the previous one (comments included) to its end. */
  readonly start: number;
  readonly end: number;
  /** Where `bytes` starts in the whole text that was parsed (a long text is parsed in pieces). */
  readonly offset: number;
}

export interface TableElement {
  /** Byte offset where the element starts. */
  readonly location: number;
  /** The column's name; undefined for a table constraint. */
  readonly column?: string;
}

export interface RenameAnnotations {
  readonly table?: string;
  /** New column name → old column name. */
  readonly columns: ReadonlyMap<string, string>;
}

/** An unquoted identifier folds to lower case, as PostgreSQL reads it. */
function identifier(raw: string): string {
  return raw.startsWith('"') ? raw.slice(1, -1).replace(/""/g, '"') : raw.toLowerCase();
}

function lineOf(bytes: Buffer, at: number): number {
  let n = 0;
  for (let i = bytes.indexOf(10); i >= 0 && i < at; i = bytes.indexOf(10, i + 1)) n++;
  return n;
}

export function renameAnnotations(
  text: StatementText,
  elements: readonly TableElement[],
  where: string,
  /** Where annotations stop being the table's: by default the first element (ALTER TABLE: its name). */
  bodyAt?: number,
): RenameAnnotations {
  const source = text.bytes.subarray(text.start, text.end).toString('utf8');
  if (!source.includes('ptah:renamed-from')) return { columns: new Map() };
  // A comment after the previous statement's `;` on the same line belongs to that statement, not this one.
  const prevLineEnd = text.bytes.lastIndexOf(10, text.start);
  const sharesLine = text.bytes
    .subarray(prevLineEnd + 1, text.start)
    .toString('utf8')
    .trim();
  const firstLine = source.indexOf('\n');
  const skip = sharesLine !== '' && firstLine >= 0 ? Buffer.byteLength(source.slice(0, firstLine)) : 0;
  const bodyStart = bodyAt ?? elements[0]?.location ?? text.end;
  let table: string | undefined;
  const columns = new Map<string, string>();
  for (const m of source.matchAll(ANNOTATION)) {
    const at = text.start + Buffer.byteLength(source.slice(0, m.index));
    if (at < text.start + skip) continue;
    const raw = m[1] ?? '';
    // An unquoted dot can only mean a qualified name: a rename keeps its schema (moving is not declared).
    if (!raw.startsWith('"') && raw.includes('.'))
      throw new DesiredStateError(
        `${where}: ptah:renamed-from ${raw} names a schema; a rename keeps the object in its schema, so name the old object alone (move a table between schemas in a migration: ALTER TABLE ... SET SCHEMA)`,
      );
    const old = identifier(raw);
    const line = lineOf(text.bytes, at);
    if (at < bodyStart && !elements.some((e) => lineOf(text.bytes, e.location) === line)) {
      if (table !== undefined)
        throw new DesiredStateError(`${where}: two ptah:renamed-from annotations for the table; keep one`);
      table = old;
      continue;
    }
    // The element starting on the annotation's line before it, else the first one after it.
    const before = elements.filter((e) => e.location < at && lineOf(text.bytes, e.location) === line);
    const target = before[before.length - 1] ?? elements.find((e) => e.location > at);
    if (target?.column === undefined)
      throw new DesiredStateError(
        `${where}: the annotation ptah:renamed-from ${old} stands by no column; put it on the renamed column's line`,
      );
    if (columns.has(target.column))
      throw new DesiredStateError(
        `${where}: column ${target.column} has two ptah:renamed-from annotations; keep one`,
      );
    columns.set(target.column, old);
  }
  return { ...(table !== undefined ? { table } : {}), columns };
}
