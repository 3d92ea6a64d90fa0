/**
 * A view's SELECT as the server would store it. MariaDB and MySQL keep a view rewritten: every column
 * qualified by its table (or alias), `*` expanded into the columns, joins parenthesised, `INNER`/`CROSS`
 * JOIN and a comma as `join`, `USING (c)` as `on(l.c = r.c)`, `count(*)` as `count(0)`, ORDER BY an alias
 * as ORDER BY its expression. This module applies
 * the same rewrites to a parse tree (from either side), so a hand-written view and the server's text of it
 * compare equal. Columns are looked up in the tables the view reads; a name no table (or more than one)
 * has is left as written.
 */

type Node = Record<string, unknown>;
const isNode = (x: unknown): x is Node => typeof x === 'object' && x !== null && !Array.isArray(x);

/** Lower-cased table name → its column names in order. */
export type ColumnsOf = ReadonlyMap<string, readonly string[]>;

const name = (x: unknown): string | undefined =>
  typeof x === 'string' ? x : isNode(x) && typeof x['value'] === 'string' ? x['value'] : undefined;

interface Source {
  /** How a column of it is qualified: its alias, else its name. */
  readonly qualifier: string;
  readonly columns: readonly string[];
}

const JOINS: Readonly<Record<string, string>> = {
  JOIN: 'INNER JOIN',
  'INNER JOIN': 'INNER JOIN',
  'CROSS JOIN': 'INNER JOIN',
  'LEFT JOIN': 'LEFT JOIN',
  'LEFT OUTER JOIN': 'LEFT JOIN',
  'RIGHT JOIN': 'RIGHT JOIN',
  'RIGHT OUTER JOIN': 'RIGHT JOIN',
};

/** `from (a join b on …)` parses as one parenthesised group: its members are the FROM list. */
function flatFrom(from: unknown): Node[] {
  if (Array.isArray(from)) return from.flatMap((f) => flatFrom(f));
  if (!isNode(from)) return [];
  if (Array.isArray(from['expr']) && from['table'] === undefined)
    return [...flatFrom(from['expr']), ...flatFrom(from['joins'])];
  return [from];
}

function columnRef(table: string, column: string): Node {
  return { type: 'column_ref', table, column };
}

/** Rewrites one SELECT (and, through `walk`, the SELECTs nested in it) in place. */
function rewriteSelect(stmt: Node, columnsOf: ColumnsOf): void {
  if (stmt['from'] === undefined || stmt['from'] === null) return;
  const from = flatFrom(stmt['from']);
  const sources: Source[] = [];
  from.forEach((f, i) => {
    const table = name(f['table']);
    const alias = name(f['as']);
    if (table !== undefined)
      sources.push({
        qualifier: alias ?? table,
        columns: columnsOf.get(table.toLowerCase()) ?? [],
      });
    if (i === 0) return;
    const join = typeof f['join'] === 'string' ? f['join'].toUpperCase() : 'JOIN';
    f['join'] = JOINS[join] ?? join;
    const using = Array.isArray(f['using']) ? (f['using'] as unknown[]) : [];
    if (using.length > 0 && table !== undefined) {
      // USING (c): the left side is the nearest table before this one that has c.
      const right = alias ?? table;
      const left = (c: string) =>
        sources
          .slice(0, -1)
          .reverse()
          .find((s) => s.columns.some((x) => x.toLowerCase() === c.toLowerCase()))?.qualifier ??
        sources[sources.length - 2]?.qualifier ??
        right;
      const equalities = using.map((u) => {
        const c = name(u) ?? '';
        return {
          type: 'binary_expr',
          operator: '=',
          left: columnRef(left(c), c),
          right: columnRef(right, c),
        };
      });
      f['on'] = equalities.reduce((a, b) => ({ type: 'binary_expr', operator: 'AND', left: a, right: b }));
      delete f['using'];
    }
  });
  stmt['from'] = from;
  if (sources.length === 0) return;
  // With one table read, its qualifier says nothing (the server writes it, a person rarely does).
  const only = sources.length === 1 ? sources[0]?.qualifier : undefined;
  // `*` and `t.*`: the columns, in table order.
  if (Array.isArray(stmt['columns'])) {
    stmt['columns'] = (stmt['columns'] as Node[]).flatMap((c) => {
      const e = isNode(c['expr']) ? c['expr'] : undefined;
      if (e?.['type'] !== 'column_ref' || e['column'] !== '*') return [c];
      const t = name(e['table']);
      const chosen = t === undefined ? sources : sources.filter((s) => s.qualifier === t);
      if (chosen.some((s) => s.columns.length === 0)) return [c];
      return chosen.flatMap((s) => s.columns.map((col) => ({ expr: columnRef(s.qualifier, col), as: null })));
    });
  }
  const owner = (column: string): string | undefined => {
    const has = sources.filter((s) => s.columns.some((x) => x.toLowerCase() === column.toLowerCase()));
    return has.length === 1 ? has[0]?.qualifier : undefined;
  };
  const qualify = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(qualify);
    if (!isNode(node)) return;
    // A nested SELECT qualifies against its own FROM.
    if (node['type'] === 'select' || (node['ast'] !== undefined && isNode(node['ast']))) return;
    if (node['type'] === 'column_ref' && (node['table'] === null || node['table'] === undefined)) {
      const column = name(node['column']);
      const q = column !== undefined && column !== '*' ? owner(column) : undefined;
      if (q !== undefined) node['table'] = q;
      return;
    }
    Object.values(node).forEach(qualify);
  };
  for (const k of ['columns', 'where', 'groupby', 'having', 'orderby']) qualify(stmt[k]);
  for (const f of from) qualify(f['on']);
  if (only !== undefined) {
    const strip = (node: unknown): void => {
      if (Array.isArray(node)) return node.forEach(strip);
      if (!isNode(node)) return;
      if (node['type'] === 'select' || (node['ast'] !== undefined && isNode(node['ast']))) return;
      if (node['type'] === 'column_ref' && name(node['table']) === only && !node['db']) {
        delete node['table'];
        return;
      }
      Object.values(node).forEach(strip);
    };
    for (const k of ['columns', 'where', 'groupby', 'having', 'orderby']) strip(stmt[k]);
  }
  // `col AS col`: the server names every output column; the name a column has anyway says nothing.
  if (Array.isArray(stmt['columns']))
    for (const c of stmt['columns'] as Node[]) {
      const e = isNode(c['expr']) ? c['expr'] : undefined;
      const col = e?.['type'] === 'column_ref' ? name(e['column']) : undefined;
      if (col !== undefined && name(c['as'])?.toLowerCase() === col.toLowerCase()) c['as'] = null;
    }
  // ORDER BY an output column's alias: the server writes the aliased expression.
  const aliased = new Map<string, unknown>();
  if (Array.isArray(stmt['columns']))
    for (const c of stmt['columns'] as Node[]) {
      const as = name(c['as']);
      if (as !== undefined && isNode(c['expr'])) aliased.set(as.toLowerCase(), c['expr']);
    }
  if (Array.isArray(stmt['orderby']))
    for (const o of stmt['orderby'] as Node[]) {
      const e = isNode(o['expr']) ? o['expr'] : undefined;
      const column = e?.['type'] === 'column_ref' && !e['table'] ? name(e['column']) : undefined;
      const target = column !== undefined ? aliased.get(column.toLowerCase()) : undefined;
      if (target !== undefined) o['expr'] = structuredClone(target);
    }
}

/** Every SELECT in the tree, outermost first, rewritten; `count(*)` spelled `count(0)`. */
export function serverSpelling(tree: unknown, columnsOf: ColumnsOf): void {
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(walk);
    if (!isNode(node)) return;
    if (node['type'] === 'select') rewriteSelect(node, columnsOf);
    if (
      node['type'] === 'aggr_func' &&
      String(node['name']).toUpperCase() === 'COUNT' &&
      isNode(node['args']) &&
      isNode(node['args']['expr']) &&
      node['args']['expr']['type'] === 'star'
    )
      node['args'] = { ...node['args'], expr: { type: 'number', value: 0 } };
    Object.values(node).forEach(walk);
  };
  walk(tree);
}
