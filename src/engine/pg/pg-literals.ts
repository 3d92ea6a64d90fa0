/**
 * Date, time and money literals as PostgreSQL stores them. A check `at > '2020-01-01'` on a timestamptz
 * column is stored `(at > '2020-01-01 00:00:00+00'::timestamp with time zone)`, and `DEFAULT '1 week'` on an interval
 * column as `'7 days'::interval`: the text differs, the value does not, and no rule written here could say
 * which spellings meet (the server's time zone and DateStyle decide). So both sides ask the server they are
 * compared on: each such literal is cast to the type it is read as (its own cast, or the column it is
 * compared with or is the default of) and printed back, in one query per model, and the expression's key
 * is computed again with those values. The text (what statements say) stays as written.
 */
import { parseSync } from './pg-parser.ts';
import type { Column, Constraint, Expr, SchemaModel, Table, TypeRef } from '../model.ts';
import { DatabaseError, type Session } from '../session.ts';
import {
  type AstNode,
  exprFromAst,
  isRecord,
  names,
  quoteLiteral,
  renderType,
  typeRefFromAst,
} from './pg-normalize.ts';

/**
 * The types whose literals PostgreSQL prints in its own spelling (DateStyle, IntervalStyle, TimeZone), and
 * money, which it also rounds to its locale's digits (`'1.999'::money` is stored `'$2.00'`).
 */
const SERVER_SPELLED = new Set([
  'date',
  'timestamp without time zone',
  'timestamp with time zone',
  'time without time zone',
  'time with time zone',
  'interval',
  'money',
]);

const isServerSpelled = (t: TypeRef | undefined): t is TypeRef =>
  t !== undefined && t.schema === undefined && !t.array && SERVER_SPELLED.has(t.name);

/** A string literal, bare or cast: its text and the type its cast names. */
function literalOf(node: unknown, ds: string): { text: string; cast?: TypeRef } | undefined {
  if (!isRecord(node)) return undefined;
  if (isRecord(node['TypeCast'])) {
    const inner = literalOf(node['TypeCast']['arg'], ds);
    if (inner === undefined) return undefined;
    return { text: inner.text, cast: typeRefFromAst(node['TypeCast']['typeName'] as AstNode, ds).type };
  }
  const c = isRecord(node['A_Const']) ? node['A_Const'] : undefined;
  if (c === undefined || !isRecord(c['sval'])) return undefined;
  return { text: String(c['sval']['sval'] ?? '') };
}

/** The column a ColumnRef names (`at` or `t.at`), if it is one of the table's. */
function columnOf(node: unknown, columns: ReadonlyMap<string, Column>): Column | undefined {
  if (!isRecord(node) || !isRecord(node['ColumnRef'])) return undefined;
  const f = names(node['ColumnRef']['fields']);
  return columns.get(f[f.length - 1] ?? '');
}

interface Ask {
  readonly type: string;
  readonly text: string;
}
const askKey = (a: Ask) => JSON.stringify([a.type, a.text]);

/**
 * Walks an expression, calling `found` for each date, time or money literal with the type it is read as; `replace`
 * (when given) gives the literal's new text, and the walk returns the rewritten tree.
 */
function walk(
  node: unknown,
  columns: ReadonlyMap<string, Column>,
  ds: string,
  visit: (lit: AstNode, ask: Ask) => unknown,
  context?: TypeRef,
): unknown {
  if (Array.isArray(node)) return node.map((x) => walk(x, columns, ds, visit, context));
  if (!isRecord(node)) return node;
  const lit = literalOf(node, ds);
  if (lit !== undefined) {
    const type = lit.cast ?? context;
    return isServerSpelled(type) ? visit(node, { type: renderType(type), text: lit.text }) : node;
  }
  if (isRecord(node['A_Expr'])) {
    const e = node['A_Expr'];
    // A literal compared with a column (either side; an IN list, ANY array or BETWEEN bounds too) is read
    // as the column's type.
    const l = columnOf(e['lexpr'], columns)?.type;
    const r = columnOf(e['rexpr'], columns)?.type;
    return {
      A_Expr: {
        ...e,
        lexpr: walk(e['lexpr'], columns, ds, visit, r),
        rexpr: walk(e['rexpr'], columns, ds, visit, l),
      },
    };
  }
  const out: AstNode = {};
  for (const [k, v] of Object.entries(node)) {
    // Only an IN list or an ARRAY[...] keeps the comparison's type for its elements.
    const keep = k === 'List' || k === 'items' || k === 'A_ArrayExpr' || k === 'elements';
    out[k] = walk(v, columns, ds, visit, keep ? context : undefined);
  }
  return out;
}

/** The expression's own tree, parsed back from its text. */
function treeOf(e: Expr): unknown {
  try {
    const tree = parseSync(`SELECT ${e.text}`) as {
      stmts?: { stmt: { SelectStmt?: { targetList?: { ResTarget: { val: unknown } }[] } } }[];
    };
    const targets = tree.stmts?.[0]?.stmt.SelectStmt?.targetList;
    return targets?.length === 1 ? targets[0]?.ResTarget.val : undefined;
  } catch {
    return undefined;
  }
}

interface Site {
  readonly tree: unknown;
  readonly columns: ReadonlyMap<string, Column>;
  readonly context?: TypeRef;
}

/** The table's literal sites, or undefined when it has none (most tables: nothing is made for them). */
function sitesOf(t: Table): { column: Map<string, Site>; check: Map<Constraint, Site> } | undefined {
  let sites: { column: Map<string, Site>; check: Map<Constraint, Site> } | undefined;
  let columns: Map<string, Column> | undefined;
  const found = () => {
    columns ??= new Map(t.columns.map((c) => [c.name, c]));
    sites ??= { column: new Map(), check: new Map() };
    return { columns, sites };
  };
  for (const c of t.columns) {
    if (c.default === undefined || !(c.default.text.includes("'") && isServerSpelled(c.type))) continue;
    const tree = treeOf(c.default);
    if (tree === undefined) continue;
    const at = found();
    at.sites.column.set(c.name, { tree, columns: at.columns, context: c.type });
  }
  for (const c of t.constraints) {
    if (c.kind !== 'Check' || !c.expression.text.includes("'")) continue;
    const tree = treeOf(c.expression);
    if (tree === undefined) continue;
    const at = found();
    at.sites.check.set(c, { tree, columns: at.columns });
  }
  return sites;
}

/** SQLSTATEs of a literal the server cannot read as its type (or a type it does not know). */
const CANNOT_ASK = new Set(['22007', '22008', '22009', '22P02', '42704', '42846', '22015']);

async function askServer(session: Session, asks: readonly Ask[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const run = async (list: readonly Ask[]): Promise<boolean> => {
    await session.query('SAVEPOINT ptah_literals');
    try {
      const cols = list.map((a, i) => `(${quoteLiteral(a.text)}::${a.type})::text AS v${i}`);
      const row = (await session.query(`SELECT ${cols.join(', ')}`)).rows[0] ?? {};
      list.forEach((a, i) => out.set(askKey(a), String(row[`v${i}`])));
      await session.query('RELEASE SAVEPOINT ptah_literals');
      return true;
    } catch (error) {
      await session.query('ROLLBACK TO SAVEPOINT ptah_literals');
      if (error instanceof DatabaseError && CANNOT_ASK.has(error.sqlstate ?? '')) return false;
      throw error;
    }
  };
  // One query; when a literal is refused (apply would refuse it too), each alone, leaving that one as is.
  if (!(await run(asks))) for (const a of asks) await run([a]);
  return out;
}

/** The model with every date, time or money literal of a check or default keyed by the value the server stores. */
export async function normaliseTemporalLiterals(session: Session, model: SchemaModel): Promise<SchemaModel> {
  const ds = model.defaultSchema;
  const sites = new Map<Table, NonNullable<ReturnType<typeof sitesOf>>>();
  for (const t of model.tables) {
    const found = sitesOf(t);
    if (found !== undefined) sites.set(t, found);
  }
  const asks = new Map<string, Ask>();
  const collect = (s: Site) => {
    walk(
      s.tree,
      s.columns,
      ds,
      (n, a) => {
        asks.set(askKey(a), a);
        return n;
      },
      s.context,
    );
  };
  for (const { column, check } of sites.values())
    for (const s of [...column.values(), ...check.values()]) collect(s);
  if (asks.size === 0) return model;
  const values = await askServer(session, [...asks.values()]);
  const rekey = (e: Expr, s: Site): Expr => {
    let changed = false;
    const tree = walk(
      s.tree,
      s.columns,
      ds,
      (n, a) => {
        const v = values.get(askKey(a));
        // A literal already in the stored spelling still loses its cast: the key would otherwise read a
        // cast money literal by its number and a bare one by its text.
        if (v === undefined || (v === a.text && !isRecord(n['TypeCast']))) return n;
        changed = true;
        return { A_Const: { sval: { sval: v } } };
      },
      s.context,
    );
    return changed ? { text: e.text, key: exprFromAst(tree, ds).key } : e;
  };
  return {
    ...model,
    tables: model.tables.map((t) => {
      const s = sites.get(t);
      if (s === undefined) return t;
      return {
        ...t,
        columns: t.columns.map((c) => {
          const site = s.column.get(c.name);
          return site === undefined || c.default === undefined
            ? c
            : { ...c, default: rekey(c.default, site) };
        }),
        constraints: t.constraints.map((c) => {
          const site = s.check.get(c);
          return site === undefined || c.kind !== 'Check'
            ? c
            : { ...c, expression: rekey(c.expression, site) };
        }),
      };
    }),
  };
}
