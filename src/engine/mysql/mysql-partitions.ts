/**
 * What the MySQL engine refuses by name rather than reads and drops. MySQL partitioning is not managed: a desired `PARTITION BY` is refused naming the
 * table, and a plan that would change a live partitioned table is refused (its partitions stay as they
 * are; keep the table in a migration and exclude it), instead of reading the partitioning and dropping it.
 */
import { type Change, changedTable } from '../changes.ts';
import type { Session } from '../session.ts';
import { tokenize } from './mysql-spelling.ts';

/** Whether a CREATE TABLE statement has a `PARTITION BY` after its definitions. */
export function declaresPartitions(createTable: string): boolean {
  let depth = 0;
  let closed = false;
  let previous = '';
  for (const t of tokenize(createTable)) {
    if (t.kind === 'space' || t.kind === 'comment') continue;
    if (t.text === '(') depth++;
    else if (t.text === ')' && --depth === 0) closed = true;
    const word = t.kind === 'word' ? t.text.toUpperCase() : '';
    if (closed && depth === 0 && previous === 'PARTITION' && word === 'BY') return true;
    previous = word;
  }
  return false;
}

export const PARTITIONS_FIX =
  'partitioning is not managed by the schema engine on MySQL; create and change the partitioned table in a migration and exclude it from the schema (--exclude), or declare it without PARTITION BY';

/** Refusals for the changes that touch a live partitioned table; no query when nothing changes. */
export async function partitionRefusals(session: Session, changes: readonly Change[]): Promise<Change[]> {
  const touched = new Set(changes.flatMap((c) => changedTable(c)?.name ?? []));
  if (touched.size === 0) return [];
  const { rows } = await session.query(
    `SELECT DISTINCT TABLE_NAME AS t FROM information_schema.PARTITIONS
     WHERE TABLE_SCHEMA = DATABASE() AND PARTITION_NAME IS NOT NULL`,
  );
  return rows
    .map((r) => String(r['t']))
    .filter((t) => touched.has(t))
    .sort()
    .map((t) => ({
      kind: 'Unsupported' as const,
      object: `table ${t}`,
      reason: `table ${t} is partitioned and the plan would change it: ${PARTITIONS_FIX}`,
    }));
}

/** Whether a statement says NOT ENFORCED outside strings and comments (MySQL 8's unenforced CHECK). */
export function declaresNotEnforced(sql: string): boolean {
  let previous = '';
  for (const t of tokenize(sql)) {
    if (t.kind === 'space' || t.kind === 'comment') continue;
    const word = t.kind === 'word' ? t.text.toUpperCase() : '';
    if (previous === 'NOT' && word === 'ENFORCED') return true;
    previous = word;
  }
  return false;
}
