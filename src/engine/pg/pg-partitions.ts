/**
 * Declarative partitioning: a partitioned table's key (`PARTITION BY RANGE (payment_date)`) and a
 * partition's bound (`FOR VALUES FROM (...) TO (...)`), spelt from the parser's nodes (the deparser has no
 * spelling for them). The key is compared; a bound is rendered and not compared, because the catalog
 * prints timestamp bounds in the server's time zone (`'2022-04-01 01:00:00+01'` is
 * `'2022-04-01 00:00:00+00'`), so their text says nothing about whether they differ.
 */
import type { Expr } from '../model.ts';
import { type AstNode, canonicalKey, deparseNode, isRecord, names, quoteIdent } from './pg-normalize.ts';

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
