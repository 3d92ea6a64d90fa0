/**
 * Two per-table settings pg_dump writes as ALTER TABLE after the table, managed as defined objects that sit
 * on their table: the index a table is clustered on (`ALTER TABLE t CLUSTER ON i`, pg_index.indisclustered)
 * and a column's statistics target (`ALTER TABLE t ALTER COLUMN c SET STATISTICS n`, attstattarget).
 * Neither touches rows. They are set after the views and taken back first, so the index or column they
 * name exists while they are set or reset; a table whose column is dropped or retyped has them set again
 * around that change (the core rebuilds what sits on such a table), and a clustered index that changes
 * changes the setting's key, so it is set again on the new index.
 */
import type { DefinedObject, Index, Table } from '../model.ts';
import { indexKey } from '../model.ts';
import { quoteIdent, quoteQualified } from './pg-normalize.ts';

/** What a table declares of the two settings; the loader fills it from ALTER TABLE. */
export interface TableSettings {
  clusterOn?: string;
  /** Column → statistics target, only the ones that differ from the default (-1). */
  readonly statistics: Map<string, number>;
}

export const noSettings = (): TableSettings => ({ statistics: new Map() });

/** PostgreSQL's default statistics target: the column has none of its own. */
export const DEFAULT_STATISTICS = -1;

/** The defined objects of one table's settings; `what` names the table in an error. */
export function tableSettingObjects(t: Table, settings: TableSettings, what: string): DefinedObject[] {
  const table = quoteQualified(t.schema, t.name);
  const out: DefinedObject[] = [];
  if (settings.clusterOn !== undefined) {
    const name = settings.clusterOn;
    const index: Index | undefined = t.indexes.find((i) => i.name === name);
    // An unnamed key's index has the name PostgreSQL gives it: t_pkey, t_a_b_key.
    const constraint = t.constraints.flatMap((c) =>
      (c.kind === 'PrimaryKey' || c.kind === 'Unique') &&
      (c.name ?? (c.kind === 'PrimaryKey' ? `${t.name}_pkey` : `${t.name}_${c.columns.join('_')}_key`)) ===
        name
        ? [c]
        : [],
    )[0];
    if (index === undefined && constraint === undefined)
      throw new Error(`${what}: CLUSTER ON ${name}: no index or key of the table has that name`);
    out.push({
      kind: 'Defined',
      objectType: 'cluster',
      schema: t.schema,
      name: `${t.name}.${name}`,
      ref: JSON.stringify(['cluster', t.schema, t.name]),
      table: t.name,
      key: JSON.stringify([
        name,
        index !== undefined ? indexKey(index) : [constraint?.kind, constraint?.columns],
      ]),
      create: [`ALTER TABLE ${table} CLUSTER ON ${quoteIdent(name)}`],
      drop: [`ALTER TABLE ${table} SET WITHOUT CLUSTER`],
      uses: [],
      stage: 'after-views',
    });
  }
  for (const [column, target] of [...settings.statistics].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
    if (!t.columns.some((c) => c.name === column))
      throw new Error(`${what}: SET STATISTICS on column ${column}, which the table does not declare`);
    const set = (n: number) =>
      `ALTER TABLE ${table} ALTER COLUMN ${quoteIdent(column)} SET STATISTICS ${String(n)}`;
    out.push({
      kind: 'Defined',
      objectType: 'column statistics',
      schema: t.schema,
      name: `${t.name}.${column}`,
      ref: JSON.stringify(['column statistics', t.schema, t.name, column]),
      table: t.name,
      key: String(target),
      create: [set(target)],
      drop: [set(DEFAULT_STATISTICS)],
      replaceKey: 'statistics target',
      replace: [set(target)],
      uses: [],
      stage: 'after-views',
    });
  }
  return out;
}
