/**
 * A column's type changes with `ALTER COLUMN ... TYPE t USING col::t`, which needs a cast from the old type
 * to the new one (any context: USING makes it explicit). Where PostgreSQL has none (integer to uuid,
 * boolean to date, an enum to integer), the plan would fail on apply; it is refused when it is made instead,
 * naming the column and both types. The server answers: one cast of NULL per type change, in a savepoint of
 * the plan's read-only snapshot, so nothing is written and a refused cast does not end the transaction.
 */
import type { Change } from '../changes.ts';
import { DatabaseError, type Session } from '../session.ts';
import { type TypeRef, objectKey, sameType } from '../model.ts';
import { quoteLiteral, renderType } from './pg-normalize.ts';
import { castVia } from './pg-renderer.ts';

/** cannot_coerce: no cast between the two types. */
const CANNOT_COERCE = '42846';
/** undefined_object, invalid_schema_name. */
const NOT_YET_CREATED = new Set(['42704', '3F000']);

export async function refuseTypeChangesWithoutCast(
  session: Session,
  changes: readonly Change[],
): Promise<Change[]> {
  // An enum this plan creates does not exist yet: only text (or another enum, through text) reaches it.
  const created = new Set(
    changes.flatMap((c) => (c.kind === 'CreateEnum' ? [objectKey(c.type.schema, c.type.name)] : [])),
  );
  const out: Change[] = [];
  for (const c of changes) {
    if (c.kind !== 'AlterColumnType' || sameType(c.from.type, c.column.type)) continue;
    const from = renderType(c.from.type);
    const to = renderType(c.column.type);
    const via = castVia(c.from, c.column);
    const target = c.column.type;
    const casts =
      target.schema !== undefined && created.has(objectKey(target.schema, target.name))
        ? via !== '' || (await isStringType(session, from))
        : await castExists(session, `NULL::${from}${via}::${to}`);
    if (casts) continue;
    const obj = `column ${c.table.schema}.${c.table.name}.${c.column.name}`;
    out.push({
      kind: 'Unsupported',
      object: obj,
      reason: `${obj} changes type from ${label(c.from.type)} to ${label(c.column.type)}, and PostgreSQL has no cast between them (the ALTER COLUMN ... TYPE would fail on apply); add a column of the new type and fill it in a migration, or keep the old type`,
      category: 'columns_modified',
    });
  }
  return out;
}

/** A type as a person reads it in a message: unquoted, qualified only when it is not built in. */
function label(t: TypeRef): string {
  return `${t.schema !== undefined ? `${t.schema}.` : ''}${t.name}${t.mods}${t.array ? '[]' : ''}`;
}

async function castExists(session: Session, expression: string): Promise<boolean> {
  await session.query('SAVEPOINT ptah_cast_check');
  try {
    await session.query(`SELECT ${expression} AS v`);
    await session.query('RELEASE SAVEPOINT ptah_cast_check');
    return true;
  } catch (error) {
    await session.query('ROLLBACK TO SAVEPOINT ptah_cast_check');
    if (error instanceof DatabaseError && error.sqlstate === CANNOT_COERCE) return false;
    // A type (or its schema) this plan creates (a domain, ...) cannot be asked about yet: apply decides.
    if (error instanceof DatabaseError && NOT_YET_CREATED.has(error.sqlstate ?? '')) return true;
    throw error;
  }
}

/** A string type converts to any type through its text form (an explicit cast). */
async function isStringType(session: Session, type: string): Promise<boolean> {
  const r = await session.query(
    `SELECT t.typcategory = 'S' AS string FROM pg_type t WHERE t.oid = to_regtype(${quoteLiteral(type)})`,
  );
  return r.rows[0]?.['string'] === true || r.rows[0]?.['string'] === 't';
}
