/**
 * How a protected table is named: the one rule shared by the policy fingerprint (src/api) and the engine's
 * refusal (src/engine), so the table a policy protects is the table the engine refuses to change, and two
 * policies share a fingerprint only when they protect the same tables.
 *
 * PostgreSQL folding: an unquoted part folds to lower case (`Orders` is the table `orders`), a double-quoted
 * part keeps its case and may hold any character, with `""` for a quote (`"Orders"` is the table `Orders`).
 * A name is `table` (that table in every schema) or `schema.table`.
 */

export interface ProtectedTableName {
  /** Undefined: the table of that name in every schema. */
  readonly schema?: string;
  readonly table: string;
}

export class TableNameError extends Error {
  override readonly name = 'TableNameError';
}

const UNQUOTED = /^[A-Za-z_][A-Za-z0-9_$]*/;
/** A PostgreSQL identifier is at most 63 bytes; longer names are truncated by the server, never matched. */
const MAX_IDENTIFIER_BYTES = 63;

/** The CRD pattern for a protected table name: the same grammar as parseTableName, checked by the API server. */
export const TABLE_NAME_PATTERN =
  '^([A-Za-z_][A-Za-z0-9_$]*|"([^"]|"")+")(\\.([A-Za-z_][A-Za-z0-9_$]*|"([^"]|"")+"))?$';

export function parseTableName(text: string): ProtectedTableName {
  const parts: string[] = [];
  let rest = text;
  for (;;) {
    const [part, after] = readPart(rest, text);
    parts.push(part);
    if (after === '') break;
    if (!after.startsWith('.')) throw invalid(text, 'expected "." between schema and table');
    rest = after.slice(1);
  }
  if (parts.length > 2) throw invalid(text, 'a name is table or schema.table, not more parts');
  for (const p of parts) {
    if (Buffer.byteLength(p, 'utf8') > MAX_IDENTIFIER_BYTES)
      throw invalid(text, `"${p}" is longer than PostgreSQL's ${MAX_IDENTIFIER_BYTES}-byte identifier limit`);
  }
  return parts.length === 2 ? { schema: parts[0]!, table: parts[1]! } : { table: parts[0]! };
}

function readPart(rest: string, whole: string): [string, string] {
  if (rest.startsWith('"')) {
    let out = '';
    let i = 1;
    for (;;) {
      const q = rest.indexOf('"', i);
      if (q < 0) throw invalid(whole, 'a quoted part has no closing "');
      out += rest.slice(i, q);
      if (rest[q + 1] === '"') {
        out += '"';
        i = q + 2;
        continue;
      }
      if (out === '') throw invalid(whole, 'a quoted part is empty');
      return [out, rest.slice(q + 1)];
    }
  }
  const m = UNQUOTED.exec(rest);
  if (m === null)
    throw invalid(whole, 'write a part as a plain identifier (letters, digits, _, $) or in double quotes');
  return [m[0].toLowerCase(), rest.slice(m[0].length)];
}

function invalid(text: string, why: string): TableNameError {
  return new TableNameError(`protected table name ${JSON.stringify(text)} is invalid: ${why}`);
}

function quote(part: string): string {
  return `"${part.replaceAll('"', '""')}"`;
}

/** The canonical spelling: every part quoted. Equal exactly when the names denote the same tables. */
export function canonicalTableName(text: string): string {
  const n = parseTableName(text);
  return n.schema === undefined ? quote(n.table) : `${quote(n.schema)}.${quote(n.table)}`;
}

/** Whether a name covers the table `schema.table` as the catalog spells it (no folding on that side). */
export function tableNameCovers(name: ProtectedTableName, schema: string, table: string): boolean {
  return name.table === table && (name.schema === undefined || name.schema === schema);
}
