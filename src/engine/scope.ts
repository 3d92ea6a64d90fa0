/**
 * Scope controls. `--exclude PATTERN` removes matching objects from both models before the diff, so they
 * are neither changed nor reported. `--protected-table NAME` refuses any plan that would change the table.
 */
import type { DefinedObject, SchemaModel } from './model.ts';
import { objectKey } from './model.ts';
import { parseTableName, tableNameCovers } from '../protocol/table-name.ts';

/** A glob over `schema.name` or `name`: `*` any run of characters, `?` one character. */
export function compilePattern(pattern: string): RegExp {
  return new RegExp(
    '^' +
      pattern
        .replace(/[.+^${}()|[\]\\]/g, '\\$&')
        .replace(/\*/g, '.*')
        .replace(/\?/g, '.') +
      '$',
  );
}

export function excludeObjects(model: SchemaModel, patterns: readonly string[]): SchemaModel {
  if (patterns.length === 0) return model;
  const tests = patterns.map(compilePattern);
  const out = (schema: string, name: string) =>
    tests.some((t) => t.test(`${schema}.${name}`) || t.test(name));
  // Columns are only excluded by a qualified pattern (`table.column` or `schema.table.column`).
  const outColumn = (schema: string, table: string, column: string) =>
    tests.some((t) => t.test(`${schema}.${table}.${column}`) || t.test(`${table}.${column}`));
  const tables = model.tables.filter((t) => !out(t.schema, t.name));
  // A function matches by its bare name too (`util.norm`, not only `util.norm(text)`); what sits on an
  // excluded table goes with it.
  const objectOut = (o: DefinedObject) =>
    out(o.schema, o.name) ||
    out(o.schema, o.name.replace(/\(.*$/, '')) ||
    (o.table !== undefined && out(o.schema, o.table));
  const objects = model.objects ?? [];
  const kept = new Set(tables.map((t) => objectKey(t.schema, t.name)));
  return {
    defaultSchema: model.defaultSchema,
    schemas: model.schemas.filter((s) => !tests.some((t) => t.test(s.name))),
    extensions: model.extensions.filter((e) => !out(e.schema ?? '', e.name)),
    enums: model.enums.filter((e) => !out(e.schema, e.name)),
    sequences: model.sequences.filter((s) => !out(s.schema, s.name)),
    // A foreign key into an excluded table stays: the table is left alone, not removed.
    tables: tables.map((t) => ({
      ...t,
      columns: t.columns.filter((c) => !outColumn(t.schema, t.name, c.name)),
    })),
    views: model.views.filter((v) => !out(v.schema, v.name)),
    ...(model.objects !== undefined ? { objects: objects.filter((o) => !objectOut(o)) } : {}),
    rows: model.rows.filter((r) => kept.has(objectKey(r.schema, r.table))),
    // Excluded objects still exist: recorded as unmanaged, so their schema is never dropped under them.
    unmanaged: [
      ...model.unmanaged.filter((u) => !out(u.schema, u.name)),
      ...[...model.tables, ...model.views, ...model.enums, ...model.sequences]
        .filter((o) => out(o.schema, o.name))
        .map((o) => ({ kind: 'Unmanaged' as const, objectKind: 'excluded', schema: o.schema, name: o.name })),
      ...objects
        .filter(objectOut)
        .map((o) => ({ kind: 'Unmanaged' as const, objectKind: 'excluded', schema: o.schema, name: o.name })),
    ],
  };
}

/**
 * Which protected name, as the user spelt it, covers a table. Names follow PostgreSQL folding (the rule the
 * policy fingerprint uses too): `Orders` protects `orders`, `"Orders"` protects `Orders`. A name that does
 * not parse is refused here, before anything connects, rather than protecting nothing.
 */
export function protectedMatcher(
  names: readonly string[],
  /** The dialect's names match whatever their case (MySQL): so must protected ones. */
  ignoreCase = false,
): (schema: string, table: string) => string | undefined {
  const parsed = names.map((text) => ({ text, name: parseTableName(text) }));
  if (!ignoreCase) return (schema, table) => parsed.find((p) => tableNameCovers(p.name, schema, table))?.text;
  const lower = parsed.map((p) => ({
    text: p.text,
    name: {
      table: p.name.table.toLowerCase(),
      ...(p.name.schema !== undefined ? { schema: p.name.schema.toLowerCase() } : {}),
    },
  }));
  return (schema, table) =>
    lower.find((p) => tableNameCovers(p.name, schema.toLowerCase(), table.toLowerCase()))?.text;
}
