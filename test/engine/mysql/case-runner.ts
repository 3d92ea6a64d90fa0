/**
 * Runs one schema change case (data from test/cases/mysql/*.yaml) on a real MariaDB database, the same
 * shape as the PostgreSQL runner: current re-plans to nothing; current→desired plans the expected change
 * kinds; apply; re-plan is empty; a non-destructive plan loses no row of the current tables; and back again.
 */
import assert from 'node:assert/strict';
import mysql from 'mysql2/promise';
import { mysqlDialect } from '../../../src/engine/mysql/mysql-dialect.ts';
import { quoteIdent } from '../../../src/engine/mysql/mysql-normalize.ts';
import { applyPlan, inspect, plan } from '../../../src/engine/schema-engine.ts';
import { topologicalTables } from '../../../src/engine/diff.ts';
import type { Column, SchemaModel } from '../../../src/engine/model.ts';
import { parseValueList } from '../../../src/engine/mysql/mysql-normalize.ts';
import type { SchemaCase } from '../pg/case-runner.ts';

export { loadCases } from '../pg/case-runner.ts';

function sampleValue(c: Column, json: boolean): string | undefined {
  const n = c.type.name;
  if (n === 'enum' || n === 'set') return `'${(parseValueList(c.type.mods)[0] ?? '').replace(/'/g, "''")}'`;
  if (/int|decimal|float|double|bit|year/.test(n)) return '1';
  if (/char|text|binary|blob/.test(n)) return json ? "'{}'" : "'a'";
  if (n === 'date') return "'2020-01-01'";
  if (n === 'datetime' || n === 'timestamp') return "'2020-01-01 00:00:00'";
  if (n === 'time') return "'01:00:00'";
  if (n === 'json') return "'{}'";
  return undefined;
}

/** One plausible row per table, parents first; a table whose row is rejected is left empty. */
async function seedRows(conn: mysql.Connection, model: SchemaModel): Promise<void> {
  for (const t of topologicalTables(model.tables)) {
    const cols: string[] = [];
    const vals: string[] = [];
    const json = new Set(
      t.constraints.flatMap((k) =>
        k.kind === 'Check' && /json_valid/i.test(k.expression.text) ? [k.name ?? ''] : [],
      ),
    );
    for (const c of t.columns) {
      if (c.generated !== undefined || c.identity !== undefined) continue;
      const v = sampleValue(c, json.has(c.name));
      if (v === undefined) continue;
      cols.push(quoteIdent(c.name));
      vals.push(v);
    }
    await conn
      .query(`INSERT INTO ${quoteIdent(t.name)} (${cols.join(', ')}) VALUES (${vals.join(', ')})`)
      .catch(() => undefined);
  }
}

async function rowCounts(conn: mysql.Connection, model: SchemaModel): Promise<Map<string, number>> {
  const m = new Map<string, number>();
  for (const t of model.tables) {
    const [rows] = await conn.query(`SELECT COUNT(*) AS n FROM ${quoteIdent(t.name)}`);
    m.set(t.name, Number((rows as { n: number }[])[0]?.n));
  }
  return m;
}

const esc = (s: string) => new RegExp(s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));

export async function runCase(c: SchemaCase, url: string): Promise<void> {
  const u = new URL(url);
  const conn = await mysql.createConnection({
    host: u.hostname,
    port: Number(u.port),
    user: decodeURIComponent(u.username),
    password: decodeURIComponent(u.password),
    database: u.pathname.slice(1),
    multipleStatements: true,
  });
  const d = mysqlDialect;
  const files = (name: string, sql: string) => ({ files: [{ path: `${name}.sql`, sql }] });
  try {
    const managedCurrent = c.currentManaged ?? c.current;
    if (c.current.trim() !== '') await conn.query(c.current);
    const currentModel = (await inspect(url, d)).model;
    if (c.seed !== undefined) {
      if (c.seed.trim() !== '') await conn.query(c.seed);
    } else await seedRows(conn, currentModel);
    const scope = { exclude: c.exclude ?? [], protectedTables: c.protectedTables ?? [] };
    const again = await plan(url, d, files('current', managedCurrent), scope);
    assert.deepEqual(
      again.plan?.statements.map((s) => s.sql) ?? [],
      [],
      `current should re-plan to nothing, got ${JSON.stringify(again.changes.map((x) => x.kind))}: ${again.plan?.statements.map((s) => s.sql).join(';\n')}`,
    );
    if (c.error !== undefined) {
      let p;
      try {
        p = await plan(url, d, files('desired', c.desired), scope);
      } catch (error) {
        assert.match((error as Error).message, esc(c.error));
        return;
      }
      assert.equal(p.outcome, 'refused');
      assert.match(p.refusal?.reason ?? '', esc(c.error));
      assert.equal(p.bytes, undefined, 'a refused plan has no SQL');
      if (c.kinds !== undefined)
        assert.deepEqual(
          [...new Set(p.changes.map((x) => x.kind))].sort(),
          [...new Set(c.kinds)].sort(),
          'the refused change kinds',
        );
      return;
    }
    const p = await plan(url, d, files('desired', c.desired), scope);
    assert.notEqual(p.outcome, 'refused', p.refusal?.reason);
    if (c.kinds !== undefined) {
      assert.deepEqual(
        [...new Set(p.changes.map((x) => x.kind))].sort(),
        [...new Set(c.kinds)].sort(),
        `change kinds: ${p.plan?.statements.map((s) => s.sql).join(';\n')}`,
      );
    }
    if (c.destructive !== undefined) assert.equal(p.plan?.destructive, c.destructive, 'destructive flag');
    if (c.header !== undefined) {
      const h = p.plan?.header as Readonly<Record<string, number>> | undefined;
      for (const [k, v] of Object.entries(c.header)) assert.equal(h?.[k], v, `plan header ${k}`);
    }
    assert.ok(
      p.plan?.statements.every((s) => s.transactional === false),
      'every MySQL statement is marked as committing on its own',
    );
    const before = await rowCounts(conn, currentModel);
    const a = await applyPlan(url, Buffer.from(p.bytes ?? ''));
    assert.equal(
      a.outcome,
      'applied',
      `apply: ${JSON.stringify(a.failure)}\n${p.plan?.statements.map((s) => s.sql).join(';\n')}`,
    );
    const after = await plan(url, d, files('desired', c.desired), scope);
    assert.deepEqual(
      after.plan?.statements.map((s) => s.sql) ?? [],
      [],
      `desired should re-plan to nothing after apply, got ${JSON.stringify(after.changes.map((x) => x.kind))}`,
    );
    if (p.plan?.destructive === false) {
      const desiredModel = (await inspect(url, d)).model;
      const managed = new Set(p.plan.managed_rows.map((r) => r.table));
      for (const [table, n] of before) {
        if (managed.has(table) || !desiredModel.tables.some((t) => t.name === table)) continue;
        const [rows] = await conn.query(`SELECT COUNT(*) AS n FROM ${quoteIdent(table)}`);
        assert.equal(
          Number((rows as { n: number }[])[0]?.n),
          n,
          `rows of ${table} after a non-destructive plan`,
        );
      }
    }
    if (c.reverse !== false) {
      const back = await plan(url, d, files('current', managedCurrent), scope);
      if (back.outcome !== 'refused') {
        const b = await applyPlan(url, Buffer.from(back.bytes ?? ''));
        assert.equal(
          b.outcome,
          'applied',
          `apply back: ${JSON.stringify(b.failure)}\n${back.plan?.statements.map((s) => s.sql).join(';\n')}`,
        );
        const done = await plan(url, d, files('current', managedCurrent), scope);
        assert.deepEqual(
          done.plan?.statements.map((s) => s.sql) ?? [],
          [],
          `current should re-plan to nothing after going back, got ${JSON.stringify(done.changes.map((x) => x.kind))}`,
        );
      }
    }
  } finally {
    await conn.end();
  }
}
