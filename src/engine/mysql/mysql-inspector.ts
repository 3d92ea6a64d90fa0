/**
 * Reads the connected database from information_schema in a fixed number of queries (independent of the
 * number of tables), into the raw shapes of mysql-normalize.ts, which makes the model.
 */
import type { DatabaseServer, InspectOptions, RowRequest } from '../dialect.ts';
import type { RowSet, RowValues, SchemaModel, Table, Unmanaged } from '../model.ts';
import type { DropTarget } from '../plan-header.ts';
import type { Session } from '../session.ts';
import { mysqlObject, normaliseBody, type RawObject, type RawParameter } from './mysql-objects.ts';
import { DesiredStateError } from '../pg/pg-desired.ts';
import {
  columnsOfTables,
  normaliseTable,
  normaliseView,
  quoteIdent,
  quoteLiteral,
  type RawCheck,
  type RawColumn,
  type RawForeignKey,
  type RawIndex,
  type RawTable,
  type ServerFacts,
} from './mysql-normalize.ts';

type Row = Record<string, unknown>;

const str = (v: unknown): string | undefined => (v === null || v === undefined ? undefined : String(v));
const s = (v: unknown): string => str(v) ?? '';

/** facts, collations, tables, columns, indexes, foreign keys, checks, views, triggers, routines, parameters, events. */
export const CATALOG_QUERY_COUNT = 12;

/**
 * MariaDB answers VERSION() with its name in it (`10.11.6-MariaDB-0+deb12u1`); MySQL with the release alone
 * (`8.4.3`, `8.0.39-log`). Both are the mysql dialect; the product and release are what a status records.
 */
export function mysqlServerOf(versionText: string): DatabaseServer {
  return {
    product: /mariadb/i.test(versionText) ? 'MariaDB' : 'MySQL',
    version: /^\d+(?:\.\d+){0,2}/.exec(versionText.trim())?.[0] ?? 'unknown',
  };
}

export async function readServerFacts(session: Session): Promise<ServerFacts> {
  const [facts] = (
    await session.query(
      `SELECT DATABASE() AS db, VERSION() AS version, @@collation_database AS coll,
              @@default_storage_engine AS engine`,
    )
  ).rows;
  const collations = (
    await session.query(
      'SELECT COLLATION_NAME AS c, CHARACTER_SET_NAME AS cs, IS_DEFAULT AS d FROM information_schema.COLLATIONS',
    )
  ).rows;
  const version = s(facts?.['version']);
  const charsetDefault: Record<string, string> = {};
  const collationCharset: Record<string, string> = {};
  for (const r of collations) {
    collationCharset[s(r['c']).toLowerCase()] = s(r['cs']).toLowerCase();
    if (s(r['d']).toLowerCase() === 'yes') charsetDefault[s(r['cs']).toLowerCase()] = s(r['c']).toLowerCase();
  }
  return {
    database: s(facts?.['db']),
    version,
    mariadb: mysqlServerOf(version).product === 'MariaDB',
    defaultCollation: s(facts?.['coll']).toLowerCase(),
    defaultEngine: s(facts?.['engine']),
    charsetDefault,
    collationCharset,
  };
}

export async function inspectMysql(session: Session, options: InspectOptions = {}): Promise<SchemaModel> {
  const f = await readServerFacts(session);
  options.defaultSchemaRead?.(f.database);
  const q = async (sql: string) => (await session.query(sql, [f.database])).rows;
  const tables = await q(
    `SELECT TABLE_NAME AS name, TABLE_TYPE AS type, ENGINE AS engine, TABLE_COLLATION AS coll,
            CREATE_OPTIONS AS opts, TABLE_COMMENT AS comment
     FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? ORDER BY TABLE_NAME`,
  );
  const columns = await q(
    `SELECT TABLE_NAME AS t, COLUMN_NAME AS name, COLUMN_TYPE AS type, IS_NULLABLE AS nullable,
            COLUMN_DEFAULT AS dflt, EXTRA AS extra, CHARACTER_SET_NAME AS cs, COLLATION_NAME AS coll,
            GENERATION_EXPRESSION AS gen, COLUMN_COMMENT AS comment
     FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? ORDER BY TABLE_NAME, ORDINAL_POSITION`,
  );
  // MariaDB 10.6+ says IGNORED; MySQL 8 says IS_VISIBLE and keeps functional key parts in EXPRESSION.
  const visibility = f.mariadb ? "IGNORED = 'YES'" : "IS_VISIBLE = 'NO'";
  const expression = f.mariadb ? 'NULL' : 'EXPRESSION';
  const stats = await q(
    `SELECT TABLE_NAME AS t, INDEX_NAME AS name, NON_UNIQUE AS non_unique, COLUMN_NAME AS col,
            SUB_PART AS sub_part, COLLATION AS dir, INDEX_TYPE AS type, INDEX_COMMENT AS comment,
            ${visibility} AS invisible, ${expression} AS expr
     FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = ? ORDER BY TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX`,
  );
  const fks = await q(
    `SELECT k.TABLE_NAME AS t, k.CONSTRAINT_NAME AS name, k.COLUMN_NAME AS col,
            k.REFERENCED_TABLE_NAME AS ref_t, k.REFERENCED_COLUMN_NAME AS ref_col,
            r.UPDATE_RULE AS upd, r.DELETE_RULE AS del
     FROM information_schema.KEY_COLUMN_USAGE k
     JOIN information_schema.REFERENTIAL_CONSTRAINTS r
       ON r.CONSTRAINT_SCHEMA = k.CONSTRAINT_SCHEMA AND r.CONSTRAINT_NAME = k.CONSTRAINT_NAME
      AND r.TABLE_NAME = k.TABLE_NAME
     WHERE k.TABLE_SCHEMA = ? AND k.REFERENCED_TABLE_NAME IS NOT NULL
     ORDER BY k.TABLE_NAME, k.CONSTRAINT_NAME, k.ORDINAL_POSITION`,
  );
  // MariaDB names checks per table (two tables may both have ck_amount) and says which table; MySQL 8
  // names them per database, and its CHECK_CONSTRAINTS has no TABLE_NAME.
  const sameTable = f.mariadb ? 'AND cc.TABLE_NAME = tc.TABLE_NAME' : '';
  const checks = await q(
    `SELECT tc.TABLE_NAME AS t, cc.CONSTRAINT_NAME AS name, cc.CHECK_CLAUSE AS clause
     FROM information_schema.TABLE_CONSTRAINTS tc
     JOIN information_schema.CHECK_CONSTRAINTS cc
       ON cc.CONSTRAINT_SCHEMA = tc.CONSTRAINT_SCHEMA AND cc.CONSTRAINT_NAME = tc.CONSTRAINT_NAME
      ${sameTable}
     WHERE tc.TABLE_SCHEMA = ? AND tc.CONSTRAINT_TYPE = 'CHECK'
     ORDER BY tc.TABLE_NAME, cc.CONSTRAINT_NAME`,
  );
  const views = await q(
    `SELECT TABLE_NAME AS name, VIEW_DEFINITION AS def, CHECK_OPTION AS chk, SECURITY_TYPE AS sec,
            ${f.mariadb ? 'ALGORITHM' : 'NULL'} AS alg
     FROM information_schema.VIEWS WHERE TABLE_SCHEMA = ? ORDER BY TABLE_NAME`,
  );
  const triggers = await q(
    `SELECT TRIGGER_NAME AS name, ACTION_TIMING AS timing, EVENT_MANIPULATION AS event,
            EVENT_OBJECT_TABLE AS t, ACTION_STATEMENT AS body
     FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ? ORDER BY TRIGGER_NAME`,
  );
  const routines = await q(
    `SELECT ROUTINE_TYPE AS type, ROUTINE_NAME AS name, DTD_IDENTIFIER AS returns, IS_DETERMINISTIC AS det,
            SQL_DATA_ACCESS AS access, SECURITY_TYPE AS sec, ROUTINE_COMMENT AS comment,
            ROUTINE_DEFINITION AS body
     FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = ? ORDER BY ROUTINE_TYPE, ROUTINE_NAME`,
  );
  const parameters = await q(
    `SELECT ROUTINE_TYPE AS type, SPECIFIC_NAME AS routine, PARAMETER_MODE AS mode, PARAMETER_NAME AS name,
            DTD_IDENTIFIER AS dtd
     FROM information_schema.PARAMETERS WHERE SPECIFIC_SCHEMA = ? AND ORDINAL_POSITION > 0
     ORDER BY ROUTINE_TYPE, SPECIFIC_NAME, ORDINAL_POSITION`,
  );
  const events = await q(
    'SELECT EVENT_NAME AS name FROM information_schema.EVENTS WHERE EVENT_SCHEMA = ? ORDER BY EVENT_NAME',
  );
  const raws = liveObjects(triggers, routines, parameters);

  const byTable = <T>(rows: Row[], map: (r: Row) => T) => {
    const m = new Map<string, T[]>();
    for (const r of rows) {
      const t = s(r['t']);
      const list = m.get(t) ?? [];
      list.push(map(r));
      m.set(t, list);
    }
    return m;
  };
  const colsOf = byTable(columns, (r) => rawColumn(r, f.mariadb));
  const idxOf = groupIndexes(stats);
  const fkOf = groupForeignKeys(fks);
  const ckOf = byTable(checks, (r): RawCheck => ({ name: s(r['name']), expression: s(r['clause']) }));

  const out: Table[] = [];
  for (const t of tables) {
    if (s(t['type']) !== 'BASE TABLE') continue;
    const name = s(t['name']);
    const coll = str(t['coll']);
    const raw: RawTable = {
      name,
      ...(str(t['engine']) !== undefined ? { engine: s(t['engine']) } : {}),
      ...(coll !== undefined ? { collation: coll } : {}),
      ...rowFormatOf(s(t['opts'])),
      ...(s(t['comment']) !== '' ? { comment: s(t['comment']) } : {}),
      columns: colsOf.get(name) ?? [],
      indexes: idxOf.get(name) ?? [],
      foreignKeys: fkOf.get(name) ?? [],
      checks: ckOf.get(name) ?? [],
    };
    out.push(normaliseTable(raw, f));
  }
  const readable = columnsOfTables(out);
  const unmanaged: Unmanaged[] = [
    ...events.map((r) => ({ kind: 'event', name: s(r['name']) })),
    ...raws.unreadable,
  ].map((u) => ({ kind: 'Unmanaged', objectKind: u.kind, schema: f.database, name: u.name }));
  return {
    defaultSchema: f.database,
    schemas: [],
    extensions: [],
    enums: [],
    sequences: [],
    tables: out,
    views: views.map((v) =>
      normaliseView(
        {
          name: s(v['name']),
          select: s(v['def']),
          ...(str(v['alg']) !== undefined ? { algorithm: s(v['alg']) } : {}),
          security: s(v['sec']),
          checkOption: s(v['chk']),
        },
        f,
        readable,
      ),
    ),
    rows: [],
    objects: raws.objects.map((o) => mysqlObject(o, f.database, f.mariadb)),
    unmanaged,
  };
}

/**
 * The catalog's triggers and routines in the raw shape a desired file is read into. A routine whose body the
 * account may not read (MySQL shows it to its definer or to SHOW_ROUTINE only) cannot be compared: it is
 * listed unmanaged, never dropped or replaced.
 */
function liveObjects(
  triggers: Row[],
  routines: Row[],
  parameters: Row[],
): { objects: RawObject[]; unreadable: { kind: string; name: string }[] } {
  const objects: RawObject[] = triggers.map((r) => ({
    kind: 'trigger',
    name: s(r['name']),
    timing: s(r['timing']).toUpperCase(),
    event: s(r['event']).toUpperCase(),
    table: s(r['t']),
    body: normaliseBody(s(r['body'])),
  }));
  const unreadable: { kind: string; name: string }[] = [];
  // Read once in ORDINAL_POSITION order, grouped by routine: a routine's parameters keep that order.
  const paramsOf = new Map<string, RawParameter[]>();
  for (const p of parameters) {
    const key = JSON.stringify([s(p['type']).toLowerCase(), s(p['routine'])]);
    const list = paramsOf.get(key) ?? [];
    list.push({
      mode: (s(p['mode']).toUpperCase() || 'IN') as RawParameter['mode'],
      name: s(p['name']),
      type: s(p['dtd']),
    });
    paramsOf.set(key, list);
  }
  for (const r of routines) {
    const kind = s(r['type']).toLowerCase() === 'function' ? 'function' : 'procedure';
    const body = str(r['body']);
    if (body === undefined) {
      unreadable.push({ kind, name: s(r['name']) });
      continue;
    }
    objects.push({
      kind,
      name: s(r['name']),
      parameters: paramsOf.get(JSON.stringify([kind, s(r['name'])])) ?? [],
      ...(kind === 'function' ? { returns: s(r['returns']) } : {}),
      deterministic: s(r['det']).toUpperCase() === 'YES',
      dataAccess: s(r['access']).toUpperCase(),
      security: s(r['sec']).toUpperCase(),
      comment: s(r['comment']),
      body: normaliseBody(body),
    });
  }
  return { objects, unreadable };
}

function rowFormatOf(createOptions: string): { rowFormat?: string } {
  // Only an explicit ROW_FORMAT appears in CREATE_OPTIONS; the reported ROW_FORMAT is always filled in.
  const m = /row_format=(\w+)/i.exec(createOptions);
  return m ? { rowFormat: m[1] ?? '' } : {};
}

function rawColumn(r: Row, mariadb: boolean): RawColumn {
  const extra = s(r['extra']).toLowerCase();
  const gen = str(r['gen']);
  const generated = /\b(virtual|stored|persistent) generated\b/.exec(extra);
  const onUpdate = /on update ([a-z_]+(?:\(\d*\))?)/.exec(extra);
  let dflt = str(r['dflt']);
  // MySQL 8 reports a literal default unquoted and marks expressions DEFAULT_GENERATED; MariaDB quotes.
  if (dflt !== undefined && !mariadb && !extra.includes('default_generated'))
    dflt = `'${dflt.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;
  return {
    name: s(r['name']),
    columnType: s(r['type']),
    nullable: s(r['nullable']) === 'YES',
    ...(dflt !== undefined && generated === null ? { default: dflt } : {}),
    ...(onUpdate ? { onUpdate: onUpdate[1] ?? '' } : {}),
    autoIncrement: extra.includes('auto_increment'),
    ...(str(r['cs']) !== undefined ? { charset: s(r['cs']) } : {}),
    ...(str(r['coll']) !== undefined ? { collation: s(r['coll']) } : {}),
    ...(generated !== null && gen !== undefined
      ? { generated: { expression: gen, storage: generated[1] === 'virtual' ? 'virtual' : 'stored' } }
      : {}),
    invisible: /\binvisible\b/.test(extra),
    ...(s(r['comment']) !== '' ? { comment: s(r['comment']) } : {}),
  };
}

function groupIndexes(rows: Row[]): Map<string, RawIndex[]> {
  const m = new Map<string, Map<string, RawIndex>>();
  for (const r of rows) {
    const t = s(r['t']);
    const name = s(r['name']);
    const perTable = m.get(t) ?? new Map<string, RawIndex>();
    m.set(t, perTable);
    const type = s(r['type']).toLowerCase();
    const existing = perTable.get(name) ?? {
      name,
      primary: name === 'PRIMARY',
      unique: s(r['non_unique']) === '0',
      method: type === '' ? 'btree' : type,
      parts: [],
      ...(s(r['comment']) !== '' ? { comment: s(r['comment']) } : {}),
      invisible: s(r['invisible']) === '1',
    };
    const sub = str(r['sub_part']);
    const expression = str(r['expr']);
    perTable.set(name, {
      ...existing,
      parts: [
        ...existing.parts,
        {
          ...(expression !== undefined ? { expression } : { column: s(r['col']) }),
          ...(sub !== undefined ? { length: Number(sub) } : {}),
          descending: s(r['dir']) === 'D',
        },
      ],
    });
  }
  return new Map([...m].map(([t, idx]) => [t, [...idx.values()]]));
}

function groupForeignKeys(rows: Row[]): Map<string, RawForeignKey[]> {
  const m = new Map<string, Map<string, RawForeignKey>>();
  for (const r of rows) {
    const t = s(r['t']);
    const name = s(r['name']);
    const perTable = m.get(t) ?? new Map<string, RawForeignKey>();
    m.set(t, perTable);
    const fk = perTable.get(name) ?? {
      name,
      columns: [],
      refTable: s(r['ref_t']),
      refColumns: [],
      onUpdate: s(r['upd']),
      onDelete: s(r['del']),
    };
    perTable.set(name, {
      ...fk,
      columns: [...fk.columns, s(r['col'])],
      refColumns: [...fk.refColumns, s(r['ref_col'])],
    });
  }
  return new Map([...m].map(([t, fks]) => [t, [...fks.values()]]));
}

/** Reads declared row sets, one query per managed table; values come back as text. */
/** Rows of each target table (non-NULL values of a target column), all in one query; none when no target. */
export async function countData(session: Session, targets: readonly DropTarget[]): Promise<number[]> {
  if (targets.length === 0) return [];
  // The schema is the connected database, so a table is named alone, as the renderer names it.
  const list = targets.map(
    (t, i) =>
      `(SELECT COUNT(${t.column === undefined ? '*' : quoteIdent(t.column)}) FROM ${quoteIdent(t.table)}) AS n${i}`,
  );
  const row = (await session.query(`SELECT ${list.join(', ')}`)).rows[0] ?? {};
  return targets.map((_, i) => Number(row[`n${i}`] ?? 0));
}

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
    const list = columns.map((c) => quoteIdent(c)).join(', ');
    const order = r.key.map((k) => quoteIdent(k)).join(', ');
    const res = await session.query(`SELECT ${list} FROM ${quoteIdent(r.table)} ORDER BY ${order}`);
    out.push({
      kind: 'RowSet',
      schema: r.schema,
      table: r.table,
      key: r.key,
      columns,
      rows: res.rows.map((row) => {
        const v: Record<string, string | null> = {};
        for (const c of columns) v[c] = row[c] === null || row[c] === undefined ? null : String(row[c]);
        return v as RowValues;
      }),
    });
  }
  return out;
}

/**
 * Declared values are spelled as the server stores them: each is cast through its column's type by a
 * SELECT over a derived table of the values (one query a table), so `1.5` in a DECIMAL(10,2) is `1.50`.
 */
export async function normaliseRowValues(session: Session, table: Table, rows: RowSet): Promise<RowSet> {
  if (rows.rows.length === 0) return rows;
  // CAST turns a non-number into 0 with a warning: a declared value that is no number is refused here.
  for (const c of rows.columns) {
    const col = table.columns.find((x) => x.name === c);
    if (col === undefined || !/int|decimal|float|double/.test(col.type.name)) continue;
    const bad = rows.rows.find((r) => {
      const v = r[c];
      return v !== null && v !== undefined && !/^\s*[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?\s*$/i.test(v);
    })?.[c];
    if (bad !== undefined && bad !== null)
      throw new DesiredStateError(
        `rows declared for ${table.name}: ${quoteLiteral(bad)} does not fit column ${c} (${col.type.name}${col.type.mods})`,
      );
  }
  const castable = rows.columns.filter((c) => {
    const col = table.columns.find((x) => x.name === c);
    return col !== undefined && /int|decimal|float|double|date|time|year/.test(col.type.name);
  });
  if (castable.length === 0) return rows;
  const cast = (name: string): string => {
    const col = table.columns.find((x) => x.name === name);
    const t = col?.type.name ?? '';
    if (/int/.test(t)) return col?.type.mods.includes('unsigned') ? 'UNSIGNED' : 'SIGNED';
    if (t === 'decimal') return `DECIMAL${col?.type.mods.replace(/\s.*$/, '') ?? ''}`;
    if (t === 'float' || t === 'double') return 'DOUBLE';
    if (t === 'date') return 'DATE';
    if (t === 'time') return `TIME${col?.type.mods ?? ''}`;
    if (t === 'datetime' || t === 'timestamp') return `DATETIME${col?.type.mods ?? ''}`;
    return 'CHAR';
  };
  const params: (string | null)[] = [];
  const selects = rows.rows.map(
    (row) =>
      `SELECT ${castable
        .map((c, i) => {
          params.push(row[c] ?? null);
          return `CAST(CAST(? AS CHAR) AS ${cast(c)}) AS c${i}`;
        })
        .join(', ')}`,
  );
  const res = await session.query(selects.join(' UNION ALL '), params);
  const normalised = rows.rows.map((row, ri) => {
    const r = res.rows[ri] ?? {};
    const out: Record<string, string | null> = { ...row };
    castable.forEach((c, i) => {
      if (row[c] === null || row[c] === undefined) return;
      const v = r[`c${i}`];
      out[c] = v === null || v === undefined ? (row[c] ?? null) : String(v);
    });
    return out;
  });
  return { ...rows, rows: normalised };
}
