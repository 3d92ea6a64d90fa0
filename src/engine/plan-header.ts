/**
 * The plan header: what a reviewer must see before approving. Counts of dropped tables, columns and
 * schemas and of rewritten tables, and how many rows the drops take with them, counted in the same
 * snapshot the plan was computed in. A drop next to a create of the same kind on the same table or schema
 * says how to declare it as a rename instead.
 */
import type { ClassifiedChange } from './changes.ts';
import { typeChangeRisk } from './classify.ts';
import { objectKey } from './model.ts';

export interface PlanHeader {
  readonly dropped_tables: number;
  readonly dropped_columns: number;
  readonly dropped_schemas: number;
  readonly rewritten_tables: number;
  /** Rows held by the dropped tables. */
  readonly dropped_table_rows: number;
  /** Non-NULL values held by the dropped columns (of tables that stay). */
  readonly dropped_column_values: number;
}

/** What to count before a drop: a table's rows, or a column's non-NULL values. */
export interface DropTarget {
  readonly schema: string;
  readonly table: string;
  readonly column?: string;
}

/** The drops whose data a count can measure, in plan order. A derived (generated) column holds no data. */
export function dropTargets(changes: readonly ClassifiedChange[]): DropTarget[] {
  // Counted before the plan runs: a table this plan renames still has its live name.
  const liveName = new Map<string, string>();
  for (const c of changes)
    if (c.kind === 'RenameTable') liveName.set(objectKey(c.table.schema, c.to), c.table.name);
  return changes.flatMap((c): DropTarget[] => {
    if (c.kind === 'DropTable') return [{ schema: c.table.schema, table: c.table.name }];
    if (c.kind === 'DropColumn' && c.column.generated === undefined) {
      const table = liveName.get(objectKey(c.table.schema, c.table.name)) ?? c.table.name;
      return [{ schema: c.table.schema, table, column: c.column.name }];
    }
    return [];
  });
}

/** Whether a change rewrites its whole table (every row is written again under an exclusive lock). */
function rewrites(c: ClassifiedChange): boolean {
  // The dialect said how its server runs the change.
  if (c.classification.rebuildsTable !== undefined) return c.classification.rebuildsTable;
  if (c.kind === 'AlterColumnType') return typeChangeRisk(c.from, c.column) !== 'widen';
  if (c.kind === 'AddColumn')
    return c.column.generated !== undefined || c.column.identity !== undefined || c.column.serial === true;
  return false;
}

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

/**
 * The header, and the changes with each drop's reason naming the data it takes (`counts` in the order of
 * dropTargets) and, when the same plan creates a like object beside it, the rename annotation to use.
 */
export function headerOf(
  changes: readonly ClassifiedChange[],
  counts: readonly number[],
): { header: PlanHeader; changes: ClassifiedChange[] } {
  const created = new Set<string>();
  const added = new Map<string, string[]>();
  for (const c of changes) {
    if (c.kind === 'CreateTable') created.add(c.table.schema);
    if (c.kind === 'AddColumn') {
      const k = objectKey(c.table.schema, c.table.name);
      added.set(k, [...(added.get(k) ?? []), c.column.name]);
    }
  }
  const rewritten = new Set<string>();
  let tables = 0;
  let columns = 0;
  let schemas = 0;
  let tableRows = 0;
  let columnValues = 0;
  let i = 0;
  const out = changes.map((c): ClassifiedChange => {
    if (rewrites(c) && 'table' in c) rewritten.add(objectKey(c.table.schema, c.table.name));
    if (c.kind === 'DropSchema') schemas++;
    if (c.kind === 'DropTable') {
      const n = counts[i++] ?? 0;
      tables++;
      tableRows += n;
      const hint = created.has(c.table.schema)
        ? `; if a new table of this plan is this one renamed, declare it with -- ptah:renamed-from ${c.table.name}`
        : '';
      return {
        ...c,
        classification: {
          ...c.classification,
          reason: `${c.classification.reason} (${plural(n, 'row', 'rows')})${hint}`,
        },
      };
    }
    if (c.kind === 'DropColumn') {
      columns++;
      if (c.column.generated !== undefined) return c;
      const n = counts[i++] ?? 0;
      columnValues += n;
      const others = added.get(objectKey(c.table.schema, c.table.name)) ?? [];
      const hint =
        others.length > 0
          ? `; if ${others.join(' or ')} is this column renamed, declare it with -- ptah:renamed-from ${c.column.name}`
          : '';
      return {
        ...c,
        classification: {
          ...c.classification,
          reason: `${c.classification.reason} (${plural(n, 'non-NULL value', 'non-NULL values')})${hint}`,
        },
      };
    }
    return c;
  });
  return {
    header: {
      dropped_tables: tables,
      dropped_columns: columns,
      dropped_schemas: schemas,
      rewritten_tables: rewritten.size,
      dropped_table_rows: tableRows,
      dropped_column_values: columnValues,
    },
    changes: out,
  };
}

/** The header as the first lines of the human output: loud when anything is dropped or rewritten. */
export function headerText(h: PlanHeader): string[] {
  const drops = h.dropped_tables + h.dropped_columns + h.dropped_schemas;
  if (drops === 0 && h.rewritten_tables === 0) return ['drops nothing, rewrites no table'];
  const lines: string[] = [];
  if (drops > 0)
    lines.push(
      `!!! DROPS ${plural(h.dropped_tables, 'table', 'tables')} (${plural(h.dropped_table_rows, 'row', 'rows')}), ` +
        `${plural(h.dropped_columns, 'column', 'columns')} (${plural(h.dropped_column_values, 'non-NULL value', 'non-NULL values')}), ` +
        `${plural(h.dropped_schemas, 'schema', 'schemas')} !!!`,
    );
  if (h.rewritten_tables > 0)
    lines.push(
      `!!! REWRITES ${plural(h.rewritten_tables, 'table', 'tables')} (exclusive lock while rewriting) !!!`,
    );
  return lines;
}
