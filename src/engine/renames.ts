/**
 * Declared renames (`-- ptah:renamed-from <old>`): a desired table or column that does not exist live while
 * its old name does is the old one, renamed. The live model is rewritten as though the renames had run, so
 * the rest of the diff sees one object whose rows are kept, not a drop and a create. An annotation whose old
 * name is gone (the rename has run) or whose new name already exists live changes nothing.
 */
import type { Change } from './changes.ts';
import type { Column, Constraint, Index, SchemaModel, Sequence, Table } from './model.ts';
import { objectKey } from './model.ts';

interface Renamed {
  readonly live: SchemaModel;
  readonly changes: Change[];
}

export function applyRenames(from: SchemaModel, to: SchemaModel): Renamed {
  // Only a table that declares a rename (its own or a column's) can give one; the rest are not sorted.
  const declaring = to.tables.filter(
    (t) => t.renamedFrom !== undefined || t.columns.some((c) => c.renamedFrom !== undefined),
  );
  if (declaring.length === 0) return { live: from, changes: [] };
  const changes: Change[] = [];
  const liveTables = new Map(from.tables.map((t) => [objectKey(t.schema, t.name), t]));
  const desiredTables = new Map(to.tables.map((t) => [objectKey(t.schema, t.name), t]));
  // Live key → new table name.
  const tableRenames = new Map<string, string>();
  // Live table key (before renaming) → old column → new column.
  const columnRenames = new Map<string, Map<string, string>>();
  for (const t of declaring.sort((a, b) =>
    objectKey(a.schema, a.name).localeCompare(objectKey(b.schema, b.name)),
  )) {
    let liveKey = objectKey(t.schema, t.name);
    if (!liveTables.has(liveKey) && t.renamedFrom !== undefined) {
      const oldKey = objectKey(t.schema, t.renamedFrom);
      if (liveTables.has(oldKey) && !desiredTables.has(oldKey) && !tableRenames.has(oldKey)) {
        if (to.rows.some((r) => r.schema === t.schema && r.table === t.name)) {
          changes.push({
            kind: 'Unsupported',
            object: `table ${t.schema}.${t.name}`,
            reason: `table ${t.schema}.${t.renamedFrom} is renamed to ${t.name} and declares reference rows in the same plan; apply the rename first, then declare the rows`,
          });
        }
        tableRenames.set(oldKey, t.name);
        changes.push({ kind: 'RenameTable', table: { schema: t.schema, name: t.renamedFrom }, to: t.name });
        liveKey = oldKey;
      }
    }
    const live = liveTables.get(liveKey);
    if (!live) continue;
    const liveCols = new Set(live.columns.map((c) => c.name));
    const desiredCols = new Set(t.columns.map((c) => c.name));
    for (const c of t.columns) {
      const old = c.renamedFrom;
      if (old === undefined || liveCols.has(c.name) || !liveCols.has(old) || desiredCols.has(old)) continue;
      const m = columnRenames.get(liveKey) ?? new Map<string, string>();
      if ([...m.values()].includes(c.name)) continue;
      m.set(old, c.name);
      columnRenames.set(liveKey, m);
      changes.push({
        kind: 'RenameColumn',
        table: { schema: t.schema, name: t.name },
        from: old,
        to: c.name,
      });
    }
  }
  if (changes.length === 0) return { live: from, changes };
  const tableName = (schema: string, name: string) => tableRenames.get(objectKey(schema, name)) ?? name;
  const columnName = (schema: string, table: string, column: string) =>
    columnRenames.get(objectKey(schema, table))?.get(column) ?? column;
  const renameTable = (t: Table): Table => {
    const col = (c: string) => columnName(t.schema, t.name, c);
    return {
      ...t,
      name: tableName(t.schema, t.name),
      columns: t.columns.map((c): Column => ({ ...c, name: col(c.name) })),
      constraints: t.constraints.map((c): Constraint => {
        if (c.kind === 'Check' || c.kind === 'Exclusion') return c;
        if (c.kind !== 'ForeignKey') return { ...c, columns: c.columns.map(col) };
        return {
          ...c,
          columns: c.columns.map(col),
          refTable: tableName(c.refSchema, c.refTable),
          refColumns: c.refColumns.map((x) => columnName(c.refSchema, c.refTable, x)),
        };
      }),
      indexes: t.indexes.map((i): Index => ({
        ...i,
        keys: i.keys.map((k) => (k.column === undefined ? k : { ...k, column: col(k.column) })),
        include: i.include.map(col),
      })),
    };
  };
  const renameSequence = (s: Sequence): Sequence =>
    s.ownedBy === undefined
      ? s
      : {
          ...s,
          ownedBy: {
            schema: s.ownedBy.schema,
            table: tableName(s.ownedBy.schema, s.ownedBy.table),
            column: columnName(s.ownedBy.schema, s.ownedBy.table, s.ownedBy.column),
          },
        };
  return {
    live: { ...from, tables: from.tables.map(renameTable), sequences: from.sequences.map(renameSequence) },
    changes,
  };
}
