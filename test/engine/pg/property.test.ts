// Property-style checks on random schema pairs from a small grammar (tables, columns of many types with
// defaults, NOT NULL, unique and check constraints, indexes, views), on a real PostgreSQL. Seeded and
// bounded, so a run is the same every time and stays fast.
//  1. current → desired: plan, apply, plan again gives nothing, and pg_dump of the result equals pg_dump of
//     the desired SQL run directly (column order aside: ALTER TABLE can only append).
//  2. With a row in every table, a plan that drops a table or a column holding data is destructive and its
//     header counts the drop.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import pg from 'pg';
import { startPostgres, type PostgresServer } from '../../env/postgres.ts';
import { postgresDialect as dialect } from '../../../src/engine/pg/pg-dialect.ts';
import { applyPlan, plan } from '../../../src/engine/schema-engine.ts';

const PG_BIN = process.env['PTAH_PG_BIN'] ?? '/usr/lib/postgresql/15/bin';
const SEED = 19;
const RUNS = 12;

interface ColumnType {
  readonly sql: string;
  readonly literal: string;
}

const t = (sql: string, literal: string): ColumnType => ({ sql, literal });
/**
 * Each column name has a family of types a column can move between with a cast; a change across families
 * (bigint to integer[]) has no cast at all and is outside this grammar (see the notes).
 */
const FAMILIES: Readonly<Record<string, readonly ColumnType[]>> = {
  a: [t('integer', '7'), t('bigint', '9000000000'), t('smallint', '3'), t('numeric(10,2)', '12.50')],
  b: [t('text', "'hello'"), t('varchar(20)', "'abc'")],
  c: [t('date', "'2024-02-29'"), t('timestamptz', "'2024-01-01 10:00:00+00'")],
  d: [t('boolean', 'true')],
  e: [t('jsonb', `'{"a": 1}'`)],
  f: [t('integer[]', "'{1,2}'")],
  g: [t('uuid', "'00000000-0000-0000-0000-000000000001'")],
  h: [t('bit(4)', "B'0101'")],
};

interface ColumnSpec {
  readonly name: string;
  readonly type: ColumnType;
  readonly notNull: boolean;
  readonly withDefault: boolean;
  readonly unique: boolean;
  readonly check: boolean;
  readonly indexed: boolean;
}

interface TableSpec {
  readonly name: string;
  readonly columns: readonly ColumnSpec[];
  readonly view: boolean;
}

const column = (name: string) =>
  fc.record({
    name: fc.constant(name),
    type: fc.constantFrom(...(FAMILIES[name] ?? [])),
    notNull: fc.boolean(),
    withDefault: fc.boolean(),
    unique: fc.boolean(),
    check: fc.boolean(),
    indexed: fc.boolean(),
  });

const table = (name: string) =>
  fc.record({
    name: fc.constant(name),
    columns: fc
      .subarray(Object.keys(FAMILIES), { minLength: 1, maxLength: 4 })
      .chain((names) => fc.tuple(...names.map(column))),
    view: fc.boolean(),
  });

const schema = fc
  .subarray(['t0', 't1', 't2'], { minLength: 1 })
  .chain((names) => fc.tuple(...names.map(table)));

function ddl(tables: readonly TableSpec[]): string {
  const out: string[] = [];
  for (const t of tables) {
    const cols = t.columns.map((c) => {
      let s = `${c.name} ${c.type.sql}`;
      if (c.withDefault) s += ` DEFAULT ${c.type.literal}`;
      if (c.notNull) s += ' NOT NULL';
      if (c.unique && c.type.sql !== 'jsonb') s += ' UNIQUE';
      if (c.check) s += ` CHECK (${c.name} IS DISTINCT FROM NULL OR id > 0)`;
      return s;
    });
    out.push(`CREATE TABLE ${t.name} (id integer PRIMARY KEY, ${cols.join(', ')});`);
    for (const c of t.columns)
      if (c.indexed && c.type.sql !== 'jsonb')
        out.push(`CREATE INDEX ${t.name}_${c.name}_ix ON ${t.name} (${c.name});`);
    if (t.view)
      out.push(
        `CREATE VIEW ${t.name}_v AS SELECT id, ${t.columns[0]?.name ?? 'id'} FROM ${t.name} WHERE id > 0;`,
      );
  }
  return out.join('\n');
}

function rows(tables: readonly TableSpec[]): string {
  return tables
    .map(
      (t) =>
        `INSERT INTO ${t.name} (id, ${t.columns.map((c) => c.name).join(', ')}) VALUES (1, ${t.columns.map((c) => c.type.literal).join(', ')});`,
    )
    .join('\n');
}

/** pg_dump of the schema, each CREATE TABLE's column lines sorted (the engine appends new columns). */
function dump(url: string): string {
  const text = execFileSync(
    join(PG_BIN, 'pg_dump'),
    ['--schema-only', '--no-owner', '--no-privileges', url],
    {
      encoding: 'utf8',
    },
  );
  return text
    .replace(/^\\(restrict|unrestrict) .*$/gm, '')
    .replace(
      /(CREATE TABLE [^\n]+ \(\n)([\s\S]*?)(\n\);)/g,
      (_m, head: string, body: string, tail: string) => {
        const lines = body.split('\n').map((l) => l.replace(/,$/, ''));
        return head + lines.sort().join(',\n') + tail;
      },
    );
}

describe('random schema pairs (postgres)', () => {
  let server: PostgresServer;
  let n = 0;
  const fresh = async (sql = '') => {
    const db = `prop_${n++}`;
    const a = new pg.Client({ connectionString: server.adminUrl });
    await a.connect();
    await a.query(`CREATE DATABASE ${db}`);
    await a.end();
    const url = server.adminUrl.replace(/\/postgres$/, `/${db}`);
    if (sql !== '') {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      await c.query(sql);
      await c.end();
    }
    return url;
  };
  before(async () => {
    server = await startPostgres();
  });
  after(async () => {
    await server?.stop();
  });

  test('plan → apply → plan gives nothing, and the result dumps like the desired state run directly', async () => {
    await fc.assert(
      fc.asyncProperty(schema, schema, async (current, desired) => {
        const url = await fresh(ddl(current));
        const source = { files: [{ path: 'desired.sql', sql: ddl(desired) }] };
        const p = await plan(url, dialect, source);
        assert.notEqual(p.outcome, 'refused', p.refusal?.reason);
        const a = await applyPlan(url, Buffer.from(p.bytes ?? ''));
        assert.equal(
          a.outcome,
          'applied',
          `${JSON.stringify(a.failure)}\n${ddl(current)}\n--\n${ddl(desired)}`,
        );
        const again = await plan(url, dialect, source);
        assert.deepEqual(
          again.plan?.statements.map((s) => s.sql),
          [],
          ddl(desired),
        );
        const direct = await fresh(ddl(desired));
        assert.equal(dump(url), dump(direct), `${ddl(current)}\n--\n${ddl(desired)}`);
      }),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    );
  });

  test('every plan that drops a table or a column holding rows is destructive and counts the drop', async () => {
    await fc.assert(
      fc.asyncProperty(schema, schema, async (current, desired) => {
        const url = await fresh(`${ddl(current)}\n${rows(current)}`);
        const p = await plan(url, dialect, { files: [{ path: 'desired.sql', sql: ddl(desired) }] });
        const kept = new Map(desired.map((t) => [t.name, new Set(t.columns.map((c) => c.name))]));
        const droppedTables = current.filter((t) => !kept.has(t.name)).length;
        const droppedColumns = current
          .filter((t) => kept.has(t.name))
          .reduce((k, t) => k + t.columns.filter((c) => !kept.get(t.name)?.has(c.name)).length, 0);
        assert.equal(p.header.dropped_tables, droppedTables);
        assert.equal(p.header.dropped_table_rows, droppedTables);
        assert.equal(p.header.dropped_columns, droppedColumns);
        assert.equal(p.header.dropped_column_values, droppedColumns, 'every seeded value is non-NULL');
        if (droppedTables + droppedColumns > 0) {
          assert.equal(p.plan?.destructive ?? true, true, 'a plan losing data is destructive');
          for (const c of p.changes)
            if (c.kind === 'DropTable' || c.kind === 'DropColumn')
              assert.equal(c.classification.destructive, true);
        }
      }),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    );
  });
});
