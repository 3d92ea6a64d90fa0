/**
 * MySQL's type-change rules (its own type names; UNSIGNED and ZEROFILL follow the length in `mods`): which
 * changes keep every value, which rewrite the column without loss, and which may lose or refuse data.
 */
import type { TypeChangeRisk } from '../classify.ts';
import type { TypeRef } from '../model.ts';

const MYSQL_INT_RANK: Readonly<Record<string, number>> = {
  tinyint: 1,
  smallint: 2,
  mediumint: 3,
  int: 4,
  bigint: 5,
};
const MYSQL_TEXT_RANK: Readonly<Record<string, number>> = {
  tinytext: 255,
  text: 65535,
  mediumtext: 16777215,
  longtext: 4294967295,
};

/** How a change between two MySQL types affects stored data; undefined for types these rules do not know. */
export function mysqlTypeRisk(a: TypeRef, b: TypeRef): TypeChangeRisk | undefined {
  const unsigned = (t: TypeRef) => t.mods.includes('unsigned');
  const len = (t: TypeRef) => Number(/^\((\d+)/.exec(t.mods)?.[1] ?? 0);
  const ra = MYSQL_INT_RANK[a.name];
  const rb = MYSQL_INT_RANK[b.name];
  if (ra !== undefined && rb !== undefined) {
    if (unsigned(a) !== unsigned(b)) return 'narrow';
    return rb > ra ? 'rewrite' : rb === ra ? 'widen' : 'narrow';
  }
  const width = (t: TypeRef) =>
    t.name === 'varchar' || t.name === 'char' ? len(t) : MYSQL_TEXT_RANK[t.name];
  const wa = width(a);
  const wb = width(b);
  if (wa !== undefined && wb !== undefined) {
    if (wb < wa) return 'narrow';
    return a.name === b.name && a.name === 'varchar' ? 'widen' : 'rewrite';
  }
  // Every FLOAT value is a DOUBLE value; the column is rebuilt to the wider type.
  if (a.name === 'float' && b.name === 'double' && unsigned(a) === unsigned(b)) return 'rewrite';
  if ((a.name === 'enum' || a.name === 'set') && a.name === b.name) {
    // Appending values keeps every stored value (and its index); anything else may not.
    return b.mods.startsWith(a.mods.slice(0, -1)) ? 'widen' : 'narrow';
  }
  if (a.name === 'decimal' && b.name === 'decimal' && unsigned(a) === unsigned(b)) {
    const [ap = 0, as = 0] = a.mods.slice(1, a.mods.indexOf(')')).split(',').map(Number);
    const [bp = 0, bs = 0] = b.mods.slice(1, b.mods.indexOf(')')).split(',').map(Number);
    return bs >= as && bp - bs >= ap - as ? 'rewrite' : 'narrow';
  }
  return undefined;
}
