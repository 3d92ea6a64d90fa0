/**
 * Declarative partitioning: a partitioned table's key (`PARTITION BY RANGE (payment_date)`) and a
 * partition's bound (`FOR VALUES FROM (...) TO (...)`), spelt from the parser's nodes (the deparser has no
 * spelling for them). The key is compared. A bound's text says little (the catalog prints a timestamp bound
 * in the server's time zone, `'2022-04-01 01:00:00+01'` for `'2022-04-01'`), so its values are compared as
 * the server prints them: the catalog's constants as they come, the desired literals cast to the key's
 * type on the same server (resolvePartitionBounds).
 */
import type { Expr, PartitionOf, SchemaModel, Table } from '../model.ts';
import { objectKey } from '../model.ts';
import { DatabaseError, type Session } from '../session.ts';
import {
  type AstNode,
  canonicalKey,
  deparseNode,
  isRecord,
  names,
  quoteIdent,
  renderType,
} from './pg-normalize.ts';

const STRATEGY: Readonly<Record<string, string>> = {
  PARTITION_STRATEGY_RANGE: 'RANGE',
  PARTITION_STRATEGY_LIST: 'LIST',
  PARTITION_STRATEGY_HASH: 'HASH',
};

/** `RANGE (a, (lower(b)) COLLATE "C" text_ops)`, and its comparison key. */
export function partitionKey(spec: AstNode, defaultSchema: string): Expr {
  const params = ((spec['partParams'] as AstNode[] | undefined) ?? []).map((p) => {
    const e = p['PartitionElem'] as AstNode;
    let s = e['name'] !== undefined ? quoteIdent(String(e['name'])) : `(${deparseNode(e['expr'])})`;
    const coll = names(e['collation']);
    if (coll.length > 0) s += ` COLLATE ${coll.map(quoteIdent).join('.')}`;
    const opclass = names(e['opclass']);
    if (opclass.length > 0) s += ` ${opclass.map(quoteIdent).join('.')}`;
    return s;
  });
  const strategy = STRATEGY[String(spec['strategy'])] ?? String(spec['strategy']);
  const { location: _l, ...rest } = spec;
  return { text: `${strategy} (${params.join(', ')})`, key: canonicalKey(rest, defaultSchema) };
}

const datum = (d: unknown): string => {
  if (isRecord(d) && isRecord(d['ColumnRef'])) {
    const f = names(d['ColumnRef']['fields']);
    if (f.length === 1 && (f[0] === 'minvalue' || f[0] === 'maxvalue')) return (f[0] ?? '').toUpperCase();
  }
  return deparseNode(d);
};

/** `FOR VALUES FROM (...) TO (...)`, `FOR VALUES IN (...)`, `FOR VALUES WITH (MODULUS m, REMAINDER r)`, `DEFAULT`. */
export function partitionBound(b: AstNode): string {
  if (b['is_default'] === true) return 'DEFAULT';
  const list = (k: string) => ((b[k] as unknown[] | undefined) ?? []).map(datum).join(', ');
  switch (b['strategy']) {
    case 'r':
      return `FOR VALUES FROM (${list('lowerdatums')}) TO (${list('upperdatums')})`;
    case 'l':
      return `FOR VALUES IN (${list('listdatums')})`;
    default:
      return `FOR VALUES WITH (MODULUS ${Number(b['modulus'] ?? 0)}, REMAINDER ${Number(b['remainder'] ?? 0)})`;
  }
}

/** A bound as the model holds it: its text, its shape and its datums (see PartitionOf). */
export function partitionOf(schema: string, table: string, b: AstNode): PartitionOf {
  const datums = (k: string) => ((b[k] as unknown[] | undefined) ?? []).map(datum);
  const bound = partitionBound(b);
  if (b['is_default'] === true) return { schema, table, bound, shape: 'DEFAULT', datums: [] };
  if (b['strategy'] === 'r') {
    const lower = datums('lowerdatums');
    return {
      schema,
      table,
      bound,
      shape: `range ${lower.length}`,
      datums: [...lower, ...datums('upperdatums')],
    };
  }
  if (b['strategy'] === 'l') return { schema, table, bound, shape: 'list', datums: datums('listdatums') };
  return { schema, table, bound, shape: bound, datums: [] };
}

/** The value a datum the catalog printed stands for: its constant's text (the type's output). */
function catalogValue(sql: string): string {
  if (sql === 'MINVALUE' || sql === 'MAXVALUE') return sql;
  const m = /^'((?:[^']|'')*)'$/.exec(sql);
  return m === null ? sql : (m[1] ?? '').replaceAll("''", "'");
}

/** The live side: each partition's values are the catalog's constants as printed. */
export function withCatalogBoundValues(model: SchemaModel): SchemaModel {
  if (!model.tables.some((t) => t.partitionOf !== undefined)) return model;
  return {
    ...model,
    tables: model.tables.map((t) =>
      t.partitionOf === undefined
        ? t
        : { ...t, partitionOf: { ...t.partitionOf, values: t.partitionOf.datums.map(catalogValue) } },
    ),
  };
}

/** The type of each element of a partitioned table's key, when every element is a column. */
function keyTypes(parent: Table): string[] | undefined {
  const m = /^(?:RANGE|LIST|HASH) \((.*)\)$/.exec(parent.partitionBy?.text ?? '');
  if (m === null) return undefined;
  const types: string[] = [];
  for (const el of (m[1] ?? '').split(', ')) {
    const name = /^(?:"((?:[^"]|"")*)"|([a-z_][a-z0-9_$]*))(?: |$)/.exec(el);
    const col = parent.columns.find((c) => c.name === (name?.[1]?.replaceAll('""', '"') ?? name?.[2]));
    if (col === undefined) return undefined;
    types.push(renderType(col.type));
  }
  return types;
}

/** undefined_object, invalid_schema_name, invalid_text_representation, datetime and numeric errors, ... */
const CANNOT_ASK = new Set(['42704', '3F000', '22P02', '22007', '22008', '22003', '42883', '42846']);

/**
 * The desired side: each partition's values cast to its parent's key types on the server, in one query
 * (in a savepoint, so a value that does not fit, or a type this plan creates, leaves that bound
 * uncompared instead of failing the plan).
 */
export async function resolvePartitionBounds(session: Session, desired: SchemaModel): Promise<SchemaModel> {
  const tables = new Map(desired.tables.map((t) => [objectKey(t.schema, t.name), t]));
  const asks: { table: Table; exprs: string[] }[] = [];
  for (const t of desired.tables) {
    const p = t.partitionOf;
    if (p === undefined || p.datums.length === 0) continue;
    const parent = tables.get(objectKey(p.schema, p.table));
    const types = parent === undefined ? undefined : keyTypes(parent);
    if (types === undefined) continue;
    const lower = p.shape.startsWith('range ') ? Number(p.shape.slice(6)) : 0;
    const typeOf = (i: number) => (p.shape === 'list' ? types[0] : types[i < lower ? i : i - lower]);
    const exprs = p.datums.map((d, i) =>
      d === 'MINVALUE' || d === 'MAXVALUE' ? `'${d}'::text` : `((${d})::${typeOf(i) ?? 'text'})::text`,
    );
    asks.push({ table: t, exprs });
  }
  if (asks.length === 0) return desired;
  const values = new Map<Table, string[]>();
  const ask = async (list: typeof asks): Promise<boolean> => {
    await session.query('SAVEPOINT ptah_partition_bounds');
    try {
      // Values come back as text, one column each (the session reads every type as text).
      const cols = list.flatMap((a, i) => a.exprs.map((e, j) => `${e} AS b${i}_${j}`));
      const row = (await session.query(`SELECT ${cols.join(', ')}`)).rows[0] ?? {};
      list.forEach((a, i) =>
        values.set(
          a.table,
          a.exprs.map((_, j) => String(row[`b${i}_${j}`])),
        ),
      );
      await session.query('RELEASE SAVEPOINT ptah_partition_bounds');
      return true;
    } catch (error) {
      await session.query('ROLLBACK TO SAVEPOINT ptah_partition_bounds');
      if (error instanceof DatabaseError && CANNOT_ASK.has(error.sqlstate ?? '')) return false;
      throw error;
    }
  };
  if (!(await ask(asks))) for (const a of asks) await ask([a]);
  return {
    ...desired,
    tables: desired.tables.map((t) => {
      const v = values.get(t);
      return v === undefined || t.partitionOf === undefined
        ? t
        : { ...t, partitionOf: { ...t.partitionOf, values: v } };
    }),
  };
}
