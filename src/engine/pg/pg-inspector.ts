/**
 * Reads a live PostgreSQL database into the schema model in a fixed number of catalog queries (one per
 * kind of object, for all tables at once). The catalog's own deparsed DDL is fed through the desired-state
 * loader, so the live and desired models share one normaliser.
 */
import type { RowSet, RowValues, SchemaModel, Table, Unmanaged } from '../model.ts';
import { DEFAULT_SCHEMA } from '../model.ts';
import type { InspectOptions, RowRequest, Session } from '../dialect.ts';
import type { DropTarget } from '../plan-header.ts';
import { DesiredStateBuilder, DesiredStateError, parseStatements } from './pg-desired.ts';
import { ensureParser } from './pg-parser.ts';
import {
  type CatalogItem,
  type CatalogStatement,
  parseByPieces,
  parseWhole,
} from './pg-catalog-statements.ts';
import { nameList, quoteIdent, quoteLiteral, quoteQualified, renderType } from './pg-normalize.ts';
import { PLAIN_AGGREGATE, Q_OBJECTS, UNMANAGED_LABEL } from './pg-objects-catalog.ts';
import { functionObjectName } from './pg-objects.ts';
import { withCatalogBoundValues } from './pg-partitions.ts';
import { normaliseTemporalLiterals } from './pg-literals.ts';
import { catalogParameters, withClause } from './pg-storage.ts';

// left() rather than LIKE 'pg\\_%': the escape in that pattern depends on standard_conforming_strings, and a
// database that turns it off would have every schema whose name starts with "pg" silently skipped.
const USER_SCHEMA = `n.nspname NOT IN ('pg_catalog', 'information_schema') AND left(n.nspname, 3) <> 'pg_'`;
const NOT_EXTENSION_MEMBER = (cls: string, oid: string) =>
  `NOT EXISTS (SELECT 1 FROM pg_depend dx WHERE dx.classid = '${cls}'::regclass AND dx.objid = ${oid} AND dx.deptype = 'e')`;

const Q_SCHEMAS = `SELECT n.nspname AS name, obj_description(n.oid, 'pg_namespace') AS comment
FROM pg_namespace n WHERE ${USER_SCHEMA} AND ${NOT_EXTENSION_MEMBER('pg_namespace', 'n.oid')} ORDER BY 1`;

const Q_EXTENSIONS = `SELECT e.extname AS name, n.nspname AS schema, e.extversion AS version
FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname <> 'plpgsql' ORDER BY 1`;

const Q_ENUMS = `SELECT n.nspname AS schema, t.typname AS name, obj_description(t.oid, 'pg_type') AS comment,
  array_to_json(array_agg(e.enumlabel ORDER BY e.enumsortorder))::text AS labels
FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace JOIN pg_enum e ON e.enumtypid = t.oid
WHERE ${USER_SCHEMA} AND ${NOT_EXTENSION_MEMBER('pg_type', 't.oid')}
GROUP BY n.nspname, t.typname, t.oid ORDER BY 1, 2`;

const Q_SEQUENCES = `SELECT n.nspname AS schema, c.relname AS name, format_type(s.seqtypid, NULL) AS data_type,
  s.seqstart AS start, s.seqincrement AS increment, s.seqmin AS min, s.seqmax AS max, s.seqcache AS cache,
  s.seqcycle AS cycle, obj_description(c.oid, 'pg_class') AS comment,
  o.owner_schema, o.owner_table, o.owner_column
FROM pg_sequence s JOIN pg_class c ON c.oid = s.seqrelid JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN LATERAL (SELECT tn.nspname AS owner_schema, tc.relname AS owner_table, a.attname AS owner_column
     FROM pg_depend d
     JOIN pg_class tc ON tc.oid = d.refobjid JOIN pg_namespace tn ON tn.oid = tc.relnamespace
     JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
   WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.refclassid = 'pg_class'::regclass
     AND d.deptype = 'a' LIMIT 1) o ON true
WHERE ${USER_SCHEMA} AND ${NOT_EXTENSION_MEMBER('pg_class', 'c.oid')}
  AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'i')
ORDER BY 1, 2`;

const Q_RELATIONS = `SELECT c.oid::text AS oid, n.nspname AS schema, c.relname AS name, c.relkind AS relkind,
  c.relispartition AS is_partition, obj_description(c.oid, 'pg_class') AS comment,
  EXISTS (SELECT 1 FROM pg_inherits ih WHERE ih.inhrelid = c.oid) AS is_child,
  CASE WHEN c.relkind IN ('v', 'm') THEN pg_get_viewdef(c.oid) END AS view_def,
  CASE WHEN c.relkind = 'p' THEN pg_get_partkeydef(c.oid) END AS part_key,
  CASE WHEN c.relispartition THEN pg_get_expr(c.relpartbound, c.oid) END AS part_bound,
  (SELECT quote_ident(pn.nspname) || '.' || quote_ident(pc.relname) FROM pg_inherits pi
     JOIN pg_class pc ON pc.oid = pi.inhparent JOIN pg_namespace pn ON pn.oid = pc.relnamespace
   WHERE c.relispartition AND pi.inhrelid = c.oid) AS part_parent,
  array_to_json(c.reloptions)::text AS options, c.relpersistence AS persistence,
  (SELECT array_to_json(tc.reloptions)::text FROM pg_class tc WHERE tc.oid = c.reltoastrelid) AS toast_options
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND ${USER_SCHEMA} AND ${NOT_EXTENSION_MEMBER('pg_class', 'c.oid')}
ORDER BY 2, 3`;

const Q_COLUMNS = `SELECT a.attrelid::text AS oid, a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type,
  a.attnotnull AS not_null, pg_get_expr(d.adbin, d.adrelid) AS default_expr, a.attidentity AS identity,
  a.attgenerated AS generated, col_description(a.attrelid, a.attnum) AS comment,
  CASE WHEN a.attcollation <> t.typcollation THEN
    CASE WHEN cn.nspname = 'pg_catalog' THEN quote_ident(co.collname) ELSE quote_ident(cn.nspname) || '.' || quote_ident(co.collname) END
  END AS collation,
  idseq.seq_schema, idseq.seq_name, idseq.seqstart AS seq_start, idseq.seqincrement AS seq_increment,
  idseq.seqmin AS seq_min, idseq.seqmax AS seq_max, idseq.seqcache AS seq_cache, idseq.seqcycle AS seq_cycle
FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_type t ON t.oid = a.atttypid
LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
LEFT JOIN LATERAL (SELECT sn.nspname AS seq_schema, sc.relname AS seq_name, s.*
    FROM pg_depend dp JOIN pg_sequence s ON s.seqrelid = dp.objid
    JOIN pg_class sc ON sc.oid = s.seqrelid JOIN pg_namespace sn ON sn.oid = sc.relnamespace
  WHERE a.attidentity <> '' AND dp.classid = 'pg_class'::regclass AND dp.refclassid = 'pg_class'::regclass
    AND dp.refobjid = a.attrelid AND dp.refobjsubid = a.attnum AND dp.deptype = 'i' LIMIT 1) idseq ON true
LEFT JOIN pg_collation co ON co.oid = a.attcollation LEFT JOIN pg_namespace cn ON cn.oid = co.collnamespace
WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition AND a.attnum > 0 AND NOT a.attisdropped AND ${USER_SCHEMA}
ORDER BY a.attrelid, a.attnum`;

const Q_CONSTRAINTS = `SELECT co.conrelid::text AS oid, co.conname AS name, co.contype AS type,
  pg_get_constraintdef(co.oid) AS def, obj_description(co.oid, 'pg_constraint') AS comment,
  (SELECT array_to_json(ci.reloptions)::text FROM pg_class ci WHERE ci.oid = co.conindid AND co.contype IN ('p', 'u')) AS index_options,
  rn.nspname AS ref_schema, rc.relname AS ref_table
FROM pg_constraint co JOIN pg_class c ON c.oid = co.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_class rc ON rc.oid = co.confrelid LEFT JOIN pg_namespace rn ON rn.oid = rc.relnamespace
WHERE c.relkind IN ('r', 'p') AND co.contype IN ('p', 'u', 'c', 'f', 'x') AND ${USER_SCHEMA}
  -- A partition's copies of its parent's keys, foreign keys and checks are the parent's.
  AND co.conparentid = 0 AND co.conislocal
ORDER BY co.conrelid, co.conname`;

const Q_INDEXES = `SELECT i.indrelid::text AS oid, ci.relname AS name, pg_get_indexdef(i.indexrelid) AS def,
  obj_description(ci.oid, 'pg_class') AS comment
FROM pg_index i JOIN pg_class ci ON ci.oid = i.indexrelid JOIN pg_class c ON c.oid = i.indrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p', 'm') AND ${USER_SCHEMA}
  AND NOT EXISTS (SELECT 1 FROM pg_constraint co WHERE co.conindid = i.indexrelid AND co.conrelid = i.indrelid AND co.contype IN ('p', 'u', 'x'))
  -- A partition's index attached to its parent's is the parent's.
  AND NOT EXISTS (SELECT 1 FROM pg_inherits ii WHERE ii.inhrelid = i.indexrelid)
ORDER BY i.indrelid, ci.relname`;

/** Objects the model does not manage, so they are reported and never dropped. */
const Q_UNMANAGED = `SELECT 'aggregate' AS kind,
  n.nspname AS schema, p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')' AS name
  FROM pg_proc p JOIN pg_aggregate a ON a.aggfnoid = p.oid JOIN pg_namespace n ON n.oid = p.pronamespace
  WHERE NOT (${PLAIN_AGGREGATE}) AND ${USER_SCHEMA} AND ${NOT_EXTENSION_MEMBER('pg_proc', 'p.oid')}
UNION ALL SELECT 'rule', n.nspname, c.relname || '.' || r.rulename FROM pg_rewrite r JOIN pg_class c ON c.oid = r.ev_class
  JOIN pg_namespace n ON n.oid = c.relnamespace WHERE r.rulename <> '_RETURN' AND ${USER_SCHEMA}
UNION ALL SELECT 'operator', n.nspname, o.oprname FROM pg_operator o JOIN pg_namespace n ON n.oid = o.oprnamespace
  WHERE ${USER_SCHEMA} AND ${NOT_EXTENSION_MEMBER('pg_operator', 'o.oid')}
UNION ALL SELECT 'text search dictionary', n.nspname, t.dictname FROM pg_ts_dict t JOIN pg_namespace n ON n.oid = t.dictnamespace
  WHERE ${USER_SCHEMA} AND ${NOT_EXTENSION_MEMBER('pg_ts_dict', 't.oid')}
UNION ALL SELECT 'event trigger', '', evtname FROM pg_event_trigger
  WHERE ${NOT_EXTENSION_MEMBER('pg_event_trigger', 'oid')}
UNION ALL SELECT 'publication', '', pubname FROM pg_publication
UNION ALL SELECT 'foreign server', '', srvname FROM pg_foreign_server
  WHERE ${NOT_EXTENSION_MEMBER('pg_foreign_server', 'oid')}
UNION ALL SELECT 'type', n.nspname, t.typname FROM pg_type t
  JOIN pg_namespace n ON n.oid = t.typnamespace
  WHERE t.typtype IN ('r', 'm')
    AND ${USER_SCHEMA} AND ${NOT_EXTENSION_MEMBER('pg_type', 't.oid')}
ORDER BY 1, 2, 3`;

/**
 * The role's default schema, and its search_path narrowed to that one schema for the inspection: the
 * catalog's deparsers (format_type, pg_get_expr, pg_get_viewdef, ...) then leave a name unqualified exactly
 * when it lives there, which is what the loader reads an unqualified name as. The subquery is evaluated
 * before set_config runs, so the old values are read first.
 */
const Q_NARROW_SEARCH_PATH = `SELECT o.schema, o.path, set_config('search_path', quote_ident(o.schema), true) AS narrowed,
  (SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
   WHERE c.relkind IN ('r', 'p', 'v', 'm') AND ${USER_SCHEMA}) AS relations
FROM (SELECT coalesce(current_schema(), '${DEFAULT_SCHEMA}') AS schema, current_setting('search_path') AS path OFFSET 0) o`;

const Q_RESTORE_SEARCH_PATH = `SELECT set_config('search_path', $1, true) AS restored`;

/** The catalog queries an inspection runs, whatever the number of tables. */
export const CATALOG_QUERY_COUNT = 12;

const RELKIND_UNMANAGED: Readonly<Record<string, string>> = {
  f: 'foreign table',
};

type Row = Record<string, unknown>;
const str = (v: unknown): string => (v === null || v === undefined ? '' : String(v));

/** Reads the whole database (all user schemas) into a model. Runs inside the caller's transaction. */
export async function inspectPostgres(session: Session, options: InspectOptions = {}): Promise<SchemaModel> {
  // The parser's WebAssembly compiles while the catalog answers.
  const parser = ensureParser();
  try {
    const { defaultSchema, rows } = await readCatalog(session, options);
    await parser;
    // Asked of the server only when a check or default holds a date or time literal.
    return await normaliseTemporalLiterals(session, modelFromCatalog(defaultSchema, rows));
  } finally {
    // A failed query must not leave the parser's load as an unhandled rejection.
    await parser.catch(() => undefined);
  }
}

/**
 * Connections beside the session that read the catalog in its snapshot, as `pg_dump --jobs` does: the
 * three large queries (columns, constraints, indexes) then run at once, on as many server processes.
 */
export const CATALOG_READERS = 2;

/**
 * Relations (tables, views, materialized views) from which readers are opened. Below it the catalog
 * answers in tens of milliseconds, less than two more connections cost (authentication, a new server
 * process whose catalog caches start cold): the schema-change corpus, hundreds of small plans, took 60 %
 * longer when every plan opened them.
 */
export const CATALOG_READERS_FROM = 1_000;

/** NULL where a snapshot cannot be exported (a standby): the session then reads the whole catalog alone. */
const Q_EXPORT_SNAPSHOT = `SELECT CASE WHEN pg_is_in_recovery() THEN NULL ELSE pg_export_snapshot() END AS snapshot`;

/**
 * The catalog rows of a whole database, and the role's default schema. With `openReader`, and once the
 * database holds CATALOG_READERS_FROM relations, up to CATALOG_READERS more connections take queries from
 * the same list in the session's exported snapshot,
 * under the same narrowed search_path; one that cannot connect or import the snapshot (a connection limit,
 * a pooler) is closed and the others read without it, so the rows are the same either way.
 */
export async function readCatalog(
  session: Session,
  options: InspectOptions = {},
): Promise<{ defaultSchema: string; rows: CatalogRows }> {
  const { openReader } = options;
  const narrowed = (await session.query(Q_NARROW_SEARCH_PATH)).rows[0] ?? {};
  const large = Number(narrowed['relations'] ?? 0) >= (options.readersFrom ?? CATALOG_READERS_FROM);
  const snapshot =
    openReader !== undefined && large
      ? (await session.query(Q_EXPORT_SNAPSHOT)).rows[0]?.['snapshot']
      : undefined;
  const opening =
    openReader === undefined || typeof snapshot !== 'string'
      ? []
      : Array.from({ length: CATALOG_READERS }, () => openReader().catch(() => undefined));
  const defaultSchema = str(narrowed['schema']);
  options.defaultSchemaRead?.(defaultSchema);

  const queue = (Object.keys(CATALOG_QUERIES) as (keyof CatalogRows)[]).sort(
    (a, b) => CATALOG_QUERY_WEIGHT[b] - CATALOG_QUERY_WEIGHT[a],
  );
  const rows: Partial<CatalogRows> = {};
  const drain = async (on: Session) => {
    try {
      for (let kind = queue.shift(); kind !== undefined; kind = queue.shift())
        rows[kind] = (await on.query(CATALOG_QUERIES[kind])).rows;
    } catch (error) {
      // No connection takes another query once one has failed.
      queue.length = 0;
      throw error;
    }
  };
  // A reader that connects once every query is taken is closed unused; none is waited for to connect.
  const readers: Promise<void>[] = [];
  for (const reader of opening)
    void reader.then(async (r) => {
      if (r === undefined) return;
      // `opening` is empty unless the snapshot was exported.
      const ready = queue.length > 0 && (await inSnapshot(r, snapshot as string, defaultSchema));
      if (!ready || queue.length === 0) return r.close();
      readers.push(drain(r).finally(() => r.close()));
    });
  const own = await Promise.allSettled([drain(session)]);
  // The session's own queries are done, so every query is taken: what the readers run is in `readers` now.
  const failed = [...own, ...(await Promise.allSettled(readers))].find(
    (d): d is PromiseRejectedResult => d.status === 'rejected',
  );
  if (failed !== undefined) throw failed.reason;
  // The plan's statements run in this same transaction when applying: they see the role's own path. (A
  // failed query aborts the transaction, whose rollback undoes the narrowing, so no finally is needed.)
  await session.query(Q_RESTORE_SEARCH_PATH, [str(narrowed['path'])]);
  return { defaultSchema, rows: rows as CatalogRows };
}

/** Whether the reader now reads in the session's snapshot and search_path (one round trip). */
async function inSnapshot(reader: Session, snapshot: string, defaultSchema: string): Promise<boolean> {
  try {
    await reader.query(
      `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET TRANSACTION SNAPSHOT ${quoteLiteral(snapshot)}; ` +
        `SELECT set_config('search_path', quote_ident(${quoteLiteral(defaultSchema)}), true)`,
    );
    return true;
  } catch {
    return false;
  }
}

/** Which queries to start first: the ones the server takes longest over, so none is left for last alone. */
const CATALOG_QUERY_WEIGHT: Readonly<Record<keyof CatalogRows, number>> = {
  columns: 10,
  indexes: 9,
  constraints: 8,
  relations: 7,
  objects: 6,
  unmanaged: 5,
  sequences: 4,
  enums: 3,
  extensions: 2,
  schemas: 1,
};

/** The catalog queries of an inspection, by the kind of rows each returns, in the order they run. */
const CATALOG_QUERIES: Readonly<Record<keyof CatalogRows, string>> = {
  schemas: Q_SCHEMAS,
  extensions: Q_EXTENSIONS,
  enums: Q_ENUMS,
  sequences: Q_SEQUENCES,
  relations: Q_RELATIONS,
  columns: Q_COLUMNS,
  constraints: Q_CONSTRAINTS,
  indexes: Q_INDEXES,
  unmanaged: Q_UNMANAGED,
  objects: Q_OBJECTS,
};

/**
 * Every statement an inspection sends, as text for psql (the benchmark's catalog floor runs them alone):
 * the search-path narrowing, the catalog queries, and the restore.
 */
export function catalogQueryScript(): string[] {
  return [
    Q_NARROW_SEARCH_PATH,
    ...Object.values(CATALOG_QUERIES),
    Q_RESTORE_SEARCH_PATH.replace('$1', `current_setting('search_path')`),
  ];
}

export interface CatalogRows {
  schemas: Row[];
  extensions: Row[];
  enums: Row[];
  sequences: Row[];
  relations: Row[];
  columns: Row[];
  constraints: Row[];
  indexes: Row[];
  unmanaged: Row[];
  /** Functions, triggers, domains, policies, row-level security: as DDL (see Q_OBJECTS). */
  objects: Row[];
}

function groupBy(rows: Row[]): Map<string, Row[]> {
  const m = new Map<string, Row[]>();
  for (const r of rows) {
    const k = str(r['oid']);
    let list = m.get(k);
    if (!list) m.set(k, (list = []));
    list.push(r);
  }
  return m;
}

/**
 * How the catalog's DDL becomes statements: from once-parsed pieces, falling back to the whole text when a
 * piece does not parse as expected (the default); `whole`, the reference the pieces must equal; `pieces
 * only`, no fallback, so a test sees the pieces path taken.
 */
export type CatalogParse = 'pieces' | 'whole' | 'pieces only';

/** Turns catalog rows into DDL text and loads it with the desired-state builder. */
export function modelFromCatalog(
  defaultSchema: string,
  c: CatalogRows,
  statements: CatalogParse = 'pieces',
): SchemaModel {
  const out: CatalogItem[] = [];
  const comments: string[] = [];
  const comment = (what: string, text: unknown) => {
    if (text !== null && text !== undefined)
      comments.push(`COMMENT ON ${what} IS ${quoteLiteral(String(text))};`);
  };
  for (const s of c.schemas) {
    const name = str(s['name']);
    if (name !== DEFAULT_SCHEMA) out.push(`CREATE SCHEMA ${quoteIdent(name)};`);
    comment(`SCHEMA ${quoteIdent(name)}`, s['comment']);
  }
  for (const e of c.extensions) {
    out.push(
      `CREATE EXTENSION ${quoteIdent(str(e['name']))} SCHEMA ${quoteIdent(str(e['schema']))} VERSION ${quoteLiteral(str(e['version']))};`,
    );
  }
  for (const e of c.enums) {
    const labels = JSON.parse(str(e['labels'])) as string[];
    const q = quoteQualified(str(e['schema']), str(e['name']));
    out.push(`CREATE TYPE ${q} AS ENUM (${labels.map(quoteLiteral).join(', ')});`);
    comment(`TYPE ${q}`, e['comment']);
  }
  const cols = groupBy(c.columns);
  const cons = groupBy(c.constraints);
  const idx = groupBy(c.indexes);
  const unmanaged: Unmanaged[] = c.unmanaged.map((u) => ({
    kind: 'Unmanaged',
    objectKind: str(u['kind']),
    schema: str(u['schema']),
    name: str(u['name']),
  }));
  const views: string[] = [];
  // After every table: a partition names its parent, which may come later by name.
  const partitions: string[] = [];
  for (const r of c.relations) {
    const schema = str(r['schema']);
    const name = str(r['name']);
    const q = quoteQualified(schema, name);
    const relkind = str(r['relkind']);
    const oid = str(r['oid']);
    const partition = r['is_partition'] === 't';
    if (RELKIND_UNMANAGED[relkind] !== undefined || (r['is_child'] === 't' && !partition)) {
      // An inheritance child is left alone whole: as a plain table it would be planned as DROP TABLE.
      unmanaged.push({
        kind: 'Unmanaged',
        objectKind: RELKIND_UNMANAGED[relkind] ?? 'inheritance child',
        schema,
        name,
      });
      continue;
    }
    if (relkind === 'm') {
      // Populated or not is data: read as declared WITH NO DATA, not compared.
      views.push(
        `CREATE MATERIALIZED VIEW ${q} AS ${str(r['view_def']).trim().replace(/;$/, '')} WITH NO DATA;`,
      );
      comment(`MATERIALIZED VIEW ${q}`, r['comment']);
      for (const i of idx.get(oid) ?? []) {
        views.push(`${str(i['def'])};`);
        comment(`INDEX ${quoteQualified(schema, str(i['name']))}`, i['comment']);
      }
      continue;
    }
    if (relkind === 'v') {
      views.push(`CREATE VIEW ${q} AS ${str(r['view_def']).trim().replace(/;$/, '')};`);
      comment(`VIEW ${q}`, r['comment']);
      continue;
    }
    const columns: { name: string; body: string }[] = [];
    for (const col of cols.get(oid) ?? []) {
      const cq = quoteIdent(str(col['name']));
      let def = str(col['type']);
      if (col['collation'] !== null) def += ` COLLATE ${str(col['collation'])}`;
      const identity = str(col['identity']);
      const generated = str(col['generated']);
      if (identity === 'a' || identity === 'd')
        def += ` GENERATED ${identity === 'a' ? 'ALWAYS' : 'BY DEFAULT'} AS IDENTITY${identitySequenceOptions(col)}`;
      else if (generated === 's') def += ` GENERATED ALWAYS AS (${str(col['default_expr'])}) STORED`;
      else if (col['default_expr'] !== null) def += ` DEFAULT ${str(col['default_expr'])}`;
      if (col['not_null'] === 't') def += ' NOT NULL';
      columns.push({ name: str(col['name']), body: def });
      comment(`COLUMN ${q}.${cq}`, col['comment']);
    }
    const constraints = (cons.get(oid) ?? []).map((con) => ({
      name: str(con['name']),
      body: withIndexParameters(str(con['def']), catalogParameters(con['index_options'])),
      ...(con['ref_table'] === null
        ? {}
        : { references: { schema: str(con['ref_schema']), table: str(con['ref_table']) } }),
    }));
    for (const con of cons.get(oid) ?? [])
      comment(`CONSTRAINT ${quoteIdent(str(con['name']))} ON ${q}`, con['comment']);
    // Written out only for a table read as text: a plain table is handed on as its pieces.
    const elements = () => [
      ...columns.map((x) => `${quoteIdent(x.name)} ${x.body}`),
      ...constraints.map((x) => `CONSTRAINT ${quoteIdent(x.name)} ${x.body}`),
    ];
    const partitionBy = r['part_key'] === null ? '' : ` PARTITION BY ${str(r['part_key'])}`;
    const storage = withClause([
      ...catalogParameters(r['options']),
      ...catalogParameters(r['toast_options'], 'toast.'),
    ]);
    const unlogged = r['persistence'] === 'u' ? 'UNLOGGED ' : '';
    if (partition) {
      // Its columns are its parent's (the columns query leaves them out); its own constraints are listed.
      const own = columns.length + constraints.length > 0 ? ` (${elements().join(', ')})` : '';
      partitions.push(
        `CREATE ${unlogged}TABLE ${q} PARTITION OF ${str(r['part_parent'])}${own} ${str(r['part_bound'])}${partitionBy}${storage};`,
      );
    } else if (partitionBy === '' && storage === '' && unlogged === '')
      out.push({ schema, name, columns, constraints });
    else out.push(`CREATE ${unlogged}TABLE ${q} (${elements().join(', ')})${partitionBy}${storage};`);
    comment(`TABLE ${q}`, r['comment']);
    for (const i of idx.get(oid) ?? []) {
      if (partition) partitions.push(`${str(i['def'])};`);
      else out.push({ schema, table: name, name: str(i['name']), def: str(i['def']) });
      comment(`INDEX ${quoteQualified(schema, str(i['name']))}`, i['comment']);
    }
  }
  for (const s of c.sequences) {
    const q = quoteQualified(str(s['schema']), str(s['name']));
    out.push(
      `CREATE SEQUENCE ${q} AS ${str(s['data_type'])} INCREMENT BY ${str(s['increment'])} MINVALUE ${str(s['min'])} MAXVALUE ${str(s['max'])} START WITH ${str(s['start'])} CACHE ${str(s['cache'])} ${s['cycle'] === 't' ? '' : 'NO '}CYCLE;`,
    );
    // The owner comes as three columns, not one dotted string: a quoted name may itself contain a dot.
    if (s['owner_column'] !== null) {
      const owner = quoteQualified(str(s['owner_schema']), str(s['owner_table']));
      out.push(`ALTER SEQUENCE ${q} OWNED BY ${owner}.${quoteIdent(str(s['owner_column']))};`);
    }
    comment(`SEQUENCE ${q}`, s['comment']);
  }
  // Triggers, policies and row-level security of a relation left alone are part of it: unmanaged too.
  const leftAlone = new Set(unmanaged.map((u) => JSON.stringify([u.schema, u.name])));
  const objects: string[] = [];
  const held: Row[] = [];
  for (const o of c.objects) {
    const kind = str(o['kind']);
    const tbl = o['tbl'] === null ? undefined : str(o['tbl']);
    if (tbl !== undefined && leftAlone.has(JSON.stringify([str(o['schema']), tbl]))) {
      const name = kind === 'row security' ? tbl : `${tbl}.${str(o['name'])}`;
      unmanaged.push({
        kind: 'Unmanaged',
        objectKind: UNMANAGED_LABEL[kind] ?? kind,
        schema: str(o['schema']),
        name,
      });
      continue;
    }
    objects.push(str(o['def']));
    if (o['comment_sql'] !== null) comments.push(str(o['comment_sql']));
    if (o['held_by'] !== null && o['held_by'] !== undefined) held.push(o);
  }
  const items = [...out, ...partitions, ...views, ...objects, ...comments];
  const load = (statements: readonly CatalogStatement[]) => {
    const b = new DesiredStateBuilder(defaultSchema);
    for (const stmt of statements) {
      try {
        if ('kind' in stmt) b.addCatalogPieces(stmt);
        else b.addStatement(stmt);
      } catch (error) {
        if (error instanceof DesiredStateError)
          throw new DesiredStateError(`reading the live database: ${error.message}`);
        throw error;
      }
    }
    for (const u of unmanaged) b.addUnmanaged(u);
    return b.build();
  };
  let model: SchemaModel;
  try {
    model = load(statements === 'whole' ? parseWhole(items) : parseByPieces(items));
  } catch (error) {
    if (statements === 'pieces only') throw error;
    // Whatever went wrong is reported as the whole text gives it: same statement positions, same message.
    model = load(parseWhole(items));
  }
  return withCatalogBoundValues(withHolders(model, held));
}

/** Marks each function an unmanaged object uses with those users (see DefinedObject.heldBy). */
function withHolders(model: SchemaModel, held: readonly Row[]): SchemaModel {
  if (held.length === 0) return model;
  const holders = new Map<string, string[]>();
  for (const o of held) {
    const stmt = parseStatements(str(o['def']), 'catalog')[0];
    if (stmt?.type !== 'CreateFunctionStmt') continue;
    const f = functionObjectName(stmt.node, model.defaultSchema);
    holders.set(JSON.stringify([f.schema, f.name]), str(o['held_by']).split(', '));
  }
  return {
    ...model,
    objects: (model.objects ?? []).map((x) => {
      const by =
        x.objectType === 'function' || x.objectType === 'procedure'
          ? holders.get(JSON.stringify([x.schema, x.name]))
          : undefined;
      return by === undefined ? x : { ...x, heldBy: by };
    }),
  };
}

/** The identity sequence as `GENERATED ... AS IDENTITY` spells it: name and every option. */
function identitySequenceOptions(col: Row): string {
  if (col['seq_name'] === null || col['seq_name'] === undefined) return '';
  const name = quoteQualified(str(col['seq_schema']), str(col['seq_name']));
  return ` (SEQUENCE NAME ${name} INCREMENT BY ${str(col['seq_increment'])} MINVALUE ${str(col['seq_min'])} MAXVALUE ${str(col['seq_max'])} START WITH ${str(col['seq_start'])} CACHE ${str(col['seq_cache'])} ${col['seq_cycle'] === 't' ? '' : 'NO '}CYCLE)`;
}

/**
 * pg_get_constraintdef leaves out the constraint index's storage parameters: they go after the column
 * list, before any DEFERRABLE (`PRIMARY KEY (id) WITH (fillfactor = '70')`).
 */
function withIndexParameters(def: string, params: readonly string[]): string {
  if (params.length === 0) return def;
  const head = /^(?:PRIMARY KEY|UNIQUE(?: NULLS NOT DISTINCT)?) \((?:[^()"]|"(?:[^"]|"")*")*\)/.exec(def);
  if (!head) throw new DesiredStateError(`reading the live database: unexpected constraint ${def}`);
  return `${head[0]}${withClause(params)}${def.slice(head[0].length)}`;
}

/** Rows of each target table (non-NULL values of a target column), all in one query; none when no target. */
export async function countData(session: Session, targets: readonly DropTarget[]): Promise<number[]> {
  if (targets.length === 0) return [];
  const list = targets.map(
    (t, i) =>
      `(SELECT count(${t.column === undefined ? '*' : quoteIdent(t.column)}) FROM ${quoteQualified(t.schema, t.table)}) AS n${i}`,
  );
  const row = (await session.query(`SELECT ${list.join(', ')}`)).rows[0] ?? {};
  return targets.map((_, i) => Number(row[`n${i}`] ?? 0));
}

/**
 * The catalog prints an index key's or an exclusion element's operator class only when it is not the
 * default for the key's type, so a declared default one (`(name text_ops)`, `EXCLUDE USING gist (during
 * range_ops WITH &&)`) is dropped from the desired model: one query, and only when some key names an
 * operator class.
 */
export async function resolveDefaultOpclasses(session: Session, desired: SchemaModel): Promise<SchemaModel> {
  const named = desired.tables.some(
    (t) =>
      t.indexes.some((i) => i.keys.some((k) => k.opclass !== undefined)) ||
      t.constraints.some((c) => c.kind === 'Exclusion' && exclusionNamesOpclass(c.definition.key)),
  );
  if (!named) return desired;
  const rows = (
    await session.query(
      `SELECT am.amname AS method, n.nspname AS schema, c.opcname AS name
       FROM pg_opclass c JOIN pg_am am ON am.oid = c.opcmethod JOIN pg_namespace n ON n.oid = c.opcnamespace
       WHERE c.opcdefault`,
    )
  ).rows;
  // A key's operator class is held as the SQL naming it (resolvedNameSql): bare when PostgreSQL finds it
  // anyway, else qualified; either spelling of a default one is the default.
  const defaults = new Set(
    rows.flatMap((r) => [
      JSON.stringify([str(r['method']), quoteIdent(str(r['name']))]),
      JSON.stringify([str(r['method']), quoteQualified(str(r['schema']), str(r['name']))]),
    ]),
  );
  const tables = desired.tables.map((t) => ({
    ...t,
    indexes: t.indexes.map((i) => ({
      ...i,
      keys: i.keys.map((k) => {
        if (k.opclass === undefined || !defaults.has(JSON.stringify([i.method, k.opclass]))) return k;
        const { opclass: _default, ...rest } = k;
        return rest;
      }),
    })),
    constraints: t.constraints.map((c) => {
      if (c.kind !== 'Exclusion') return c;
      const key = withoutDefaultExclusionOpclasses(c.definition.key, (method, opclass) =>
        defaults.has(JSON.stringify([method, opclass])),
      );
      return key === c.definition.key ? c : { ...c, definition: { ...c.definition, key } };
    }),
  }));
  return { ...desired, tables };
}

/** An exclusion constraint's comparison key: its canonical parse tree (exclusionDefinition, pg-desired.ts). */
interface ExclusionTree {
  access_method?: unknown;
  exclusions?: { List?: { items?: [{ IndexElem?: { opclass?: unknown } }, unknown] } }[];
}

function exclusionNamesOpclass(key: string): boolean {
  const tree = JSON.parse(key) as ExclusionTree;
  return (tree.exclusions ?? []).some((x) => x.List?.items?.[0]?.IndexElem?.opclass !== undefined);
}

/**
 * The key with each element's default operator class dropped, or the very key when none is. The key is
 * already canonical, so removing a member of it gives what canonicalising the clause without that operator
 * class gives. The rendered text keeps what was written: the same constraint either way.
 */
function withoutDefaultExclusionOpclasses(
  key: string,
  isDefault: (method: string, opclass: string) => boolean,
): string {
  const tree = JSON.parse(key) as ExclusionTree;
  const method = typeof tree.access_method === 'string' ? tree.access_method : 'btree';
  let dropped = false;
  for (const x of tree.exclusions ?? []) {
    const elem = x.List?.items?.[0]?.IndexElem;
    // As the model holds an index key's operator class: `"name"` or `"schema"."name"`.
    const opclass = nameList(elem?.opclass)?.map(quoteIdent).join('.');
    if (elem !== undefined && opclass !== undefined && isDefault(method, opclass)) {
      delete elem.opclass;
      dropped = true;
    }
  }
  return dropped ? JSON.stringify(tree) : key;
}

/** Reads declared row sets, one query per managed table; values come back as text. */
export async function readRows(
  session: Session,
  live: SchemaModel,
  requests: readonly RowRequest[],
): Promise<RowSet[]> {
  const out: RowSet[] = [];
  for (const r of requests) {
    const t = live.tables.find((x) => x.schema === r.schema && x.name === r.table);
    if (!t) continue;
    const columns = r.columns.filter((c) => t.columns.some((x) => x.name === c));
    if (!r.key.every((k) => columns.includes(k))) continue;
    const list = columns.map((c) => `${quoteIdent(c)}::text AS ${quoteIdent(c)}`).join(', ');
    const order = r.key.map((k) => quoteIdent(k)).join(', ');
    const res = await session.query(
      `SELECT ${list} FROM ${quoteQualified(r.schema, r.table)} ORDER BY ${order}`,
    );
    out.push({
      kind: 'RowSet',
      schema: r.schema,
      table: r.table,
      key: r.key,
      columns,
      rows: res.rows.map(toRowValues),
    });
  }
  return out;
}

function toRowValues(r: Row): RowValues {
  const v: Record<string, string | null> = {};
  for (const [k, x] of Object.entries(r)) v[k] = x === null || x === undefined ? null : String(x);
  return v;
}

/**
 * Desired row values are literals as written (`1.5`, `'t'`); the database spells them canonically when
 * cast through the live column type, so the comparison is the database's, not a guess. One query a table.
 */
export async function normaliseRowValues(session: Session, table: Table, rows: RowSet): Promise<RowSet> {
  if (rows.rows.length === 0) return rows;
  // Built-in types only: an enum or domain spells its values as declared, and a value added by this very
  // plan would not cast yet.
  const castable = rows.columns.filter((c) =>
    table.columns.some((x) => x.name === c && x.type.schema === undefined),
  );
  if (castable.length === 0) return rows;
  const params: (string | null)[] = [];
  const values = rows.rows.map(
    (row) =>
      `(${castable
        .map((c) => {
          params.push(row[c] ?? null);
          return `$${params.length}::text`;
        })
        .join(', ')})`,
  );
  const alias = castable.map((_, i) => `c${i}`).join(', ');
  const select = castable.map((c, i) => {
    const col = table.columns.find((x) => x.name === c);
    return col ? `(v.c${i})::${renderType(col.type)}::text` : `v.c${i}`;
  });
  let res;
  try {
    res = await session.query(
      `SELECT ${select.map((s, i) => `${s} AS c${i}`).join(', ')} FROM (VALUES ${values.join(', ')}) AS v(${alias})`,
      params,
    );
  } catch (error) {
    throw new DesiredStateError(
      `reference rows for ${rows.schema}.${rows.table}: a value does not fit its column's type (${(error as Error).message}); fix the INSERT`,
    );
  }
  const normalised = rows.rows.map((row, ri) => {
    const r = res.rows[ri] ?? {};
    const out: Record<string, string | null> = { ...row };
    castable.forEach((c, i) => {
      const v = r[`c${i}`];
      out[c] = v === null || v === undefined ? null : String(v);
    });
    return out;
  });
  return { ...rows, rows: normalised };
}
