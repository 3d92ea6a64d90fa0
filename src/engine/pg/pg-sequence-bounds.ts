/**
 * PostgreSQL refuses new MINVALUE/MAXVALUE bounds that leave a sequence's current value outside them
 * ("RESTART value cannot be less than MINVALUE"), so a plan changing an identity column's or a sequence's
 * bounds past its current value would fail on apply. It is refused when it is made instead, with the value
 * and the fix. One read of the sequence per such change, in a savepoint of the plan's snapshot.
 */
import type { Change } from '../changes.ts';
import { objectKey } from '../model.ts';
import { DatabaseError, type Session } from '../session.ts';
import { fullIdentityOptions } from './pg-identity.ts';
import { quoteLiteral, quoteQualified } from './pg-normalize.ts';

interface BoundsCheck {
  readonly object: string;
  /** SQL giving the sequence's current value as `v`. */
  readonly valueSql: string;
  readonly min: bigint;
  readonly max: bigint;
  readonly fix: string;
}

export async function refuseSequenceBoundsPastValue(
  session: Session,
  changes: readonly Change[],
): Promise<Change[]> {
  const created = new Set(
    changes.flatMap((c) =>
      c.kind === 'CreateSequence' ? [objectKey(c.sequence.schema, c.sequence.name)] : [],
    ),
  );
  const checks: BoundsCheck[] = [];
  for (const c of changes) {
    if (c.kind === 'SetIdentity') {
      const o = fullIdentityOptions(c.column.type, c.column.identityOptions);
      const table = quoteQualified(c.table.schema, c.table.name);
      const column = `column ${c.table.schema}.${c.table.name}.${c.column.name}`;
      checks.push({
        object: column,
        valueSql: `pg_get_serial_sequence(${quoteLiteral(table)}, ${quoteLiteral(c.column.name)})`,
        min: BigInt(o.minvalue),
        max: BigInt(o.maxvalue),
        fix: `restart it first in a migration (ALTER TABLE ${table} ALTER COLUMN ${c.column.name} RESTART WITH a value inside them)`,
      });
    }
    if (c.kind === 'AlterSequence' && !created.has(objectKey(c.sequence.schema, c.sequence.name))) {
      const seq = quoteQualified(c.sequence.schema, c.sequence.name);
      checks.push({
        object: `sequence ${c.sequence.schema}.${c.sequence.name}`,
        valueSql: `${quoteLiteral(seq)}`,
        min: BigInt(c.sequence.min),
        max: BigInt(c.sequence.max),
        fix: `restart it first in a migration (ALTER SEQUENCE ${seq} RESTART WITH a value inside them)`,
      });
    }
  }
  const out: Change[] = [];
  for (const k of checks) {
    const value = await currentValue(session, k.valueSql);
    if (value === undefined || (value >= k.min && value <= k.max)) continue;
    out.push({
      kind: 'Unsupported',
      object: k.object,
      reason: `${k.object}: its sequence's current value ${value} lies outside the new bounds ${k.min}..${k.max}, which PostgreSQL refuses; ${k.fix}, or keep the bounds`,
      category: 'columns_modified',
    });
  }
  return out;
}

/** The sequence's last value; undefined when it cannot be read yet (renamed or created by this plan). */
async function currentValue(session: Session, nameSql: string): Promise<bigint | undefined> {
  await session.query('SAVEPOINT ptah_sequence_check');
  try {
    const name = (await session.query(`SELECT ${nameSql}::text AS n`)).rows[0]?.['n'];
    if (name === null || name === undefined) {
      await session.query('RELEASE SAVEPOINT ptah_sequence_check');
      return undefined;
    }
    // The name comes from the catalog (regclass text), already quoted as SQL needs it.
    const r = await session.query(`SELECT last_value::text AS v FROM ${String(name)}`);
    await session.query('RELEASE SAVEPOINT ptah_sequence_check');
    const v = r.rows[0]?.['v'];
    return v === null || v === undefined ? undefined : BigInt(String(v));
  } catch (error) {
    await session.query('ROLLBACK TO SAVEPOINT ptah_sequence_check');
    if (error instanceof DatabaseError) return undefined;
    throw error;
  }
}
