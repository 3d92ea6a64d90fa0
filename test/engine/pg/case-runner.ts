/**
 * Runs one schema change case (data from test/cases/pg/*.yaml) on a real PostgreSQL database:
 * current re-plans to nothing; current→desired plans the expected change kinds; apply; re-plan is empty;
 * a non-destructive plan loses no row that was in the current tables.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { parse as parseYaml } from 'yaml';
import { loadDesiredSql } from '../../../src/engine/pg/pg-desired.ts';
import { postgresDialect } from '../../../src/engine/pg/pg-dialect.ts';
import { applyPlan, plan } from '../../../src/engine/schema-engine.ts';
import { topologicalTables } from '../../../src/engine/diff.ts';
import type { Column, SchemaModel } from '../../../src/engine/model.ts';
import { quoteIdent, quoteLiteral, quoteQualified } from '../../../src/engine/pg/pg-normalize.ts';

export interface SchemaCase {
  readonly name: string;
  readonly current: string;
  readonly desired: string;
  /** Change kinds the plan must contain, exactly (as a set). */
  readonly kinds?: readonly string[];
  readonly destructive?: boolean;
  /** The plan is refused with a reason containing this text. */
  readonly error?: string;
  /** SQL that fills the current tables; by default one generated row per table. */
  readonly seed?: string;
  readonly exclude?: readonly string[];
  /** --protected-table names; with `error`, `kinds` are the refused plan's change kinds. */
  readonly protectedTables?: readonly string[];
  /** The part of `current` the engine manages, when `current` also creates unmanaged objects. */
  readonly currentManaged?: string;
  /** Set to false when going back from desired to current is not meant to work (default: it is). */
  readonly reverse?: boolean;
  /**
   * Plan and apply as a role whose search_path is this schema (created first), so unqualified names in
   * current and desired mean that schema, not public.
   */
  readonly defaultSchema?: string;
  /** Counts the plan header must show (a subset of its fields). */
  readonly header?: Readonly<Record<string, number>>;
  /**
   * Also plan through a scratch database (`--dev-url`): the same change kinds before apply, and nothing
   * to do after it, so PostgreSQL's own spelling of the desired state agrees with the parsed one.
   */
  readonly devUrl?: boolean;
  /**
   * Through a scratch database (`--dev-url`) the desired state is rejected with a message containing this
   * text (the case needs `devUrl`); nothing is applied.
   */
  readonly devError?: string;
  readonly file: string;
}

const CASE_KEYS = new Set([
  'name',
  'current',
  'currentManaged',
  'desired',
  'kinds',
  'destructive',
  'error',
  'seed',
  'exclude',
  'protectedTables',
  'reverse',
  'defaultSchema',
  'header',
  'devUrl',
  'devError',
]);

export function loadCases(dir: string): SchemaCase[] {
  const out: SchemaCase[] = [];
  for (const f of readdirSync(dir)
    .filter((x) => x.endsWith('.yaml'))
    .sort()) {
    const list = parseYaml(readFileSync(join(dir, f), 'utf8')) as Omit<SchemaCase, 'file'>[];
    for (const c of list) {
      // A misspelt key would silently assert nothing: every key must be known, and every case must say
      // either the kinds it expects or the error.
      for (const k of Object.keys(c))
        if (!CASE_KEYS.has(k)) throw new Error(`${f}: case "${c.name}": unknown key ${k}`);
      if (c.kinds === undefined && c.error === undefined && c.devError === undefined)
        throw new Error(`${f}: case "${c.name}" needs kinds, error or devError`);
      if (c.devError !== undefined && c.devUrl !== true)
        throw new Error(`${f}: case "${c.name}": devError needs devUrl: true`);
      out.push({ ...c, current: c.current ?? '', desired: c.desired ?? '', file: f });
    }
  }
  return out;
}

function sampleValue(c: Column, model: SchemaModel): string | undefined {
  if (c.type.array) return "'{}'";
  if (c.type.schema !== undefined) {
    const e = model.enums.find((x) => x.schema === c.type.schema && x.name === c.type.name);
    return e ? quoteLiteral(e.values[0] ?? '') : undefined;
  }
  const n = c.type.name;
  if (/int|numeric|real|double|money/.test(n)) return '1';
  if (/char|text|name/.test(n)) return "'a'";
  if (n === 'boolean') return 'true';
  if (n === 'date') return "'2020-01-01'";
  if (n.startsWith('timestamp')) return "'2020-01-01 00:00:00'";
  if (n.startsWith('time')) return "'01:00:00'";
  if (n === 'interval') return "'1 day'";
  if (n === 'uuid') return "'00000000-0000-0000-0000-000000000001'";
  if (n === 'json' || n === 'jsonb') return "'{}'";
  if (n === 'bytea') return "'\\x00'";
  if (n === 'inet' || n === 'cidr') return "'127.0.0.1'";
  if (n.startsWith('bit')) return "B'1'";
  return undefined;
}

/** One plausible row per table, parents first; a table whose row is rejected is left empty. */
async function seedRows(client: pg.Client, model: SchemaModel): Promise<void> {
  for (const t of topologicalTables(model.tables)) {
    const cols: string[] = [];
    const vals: string[] = [];
    for (const c of t.columns) {
      if (c.identity === 'always' || c.generated !== undefined || c.serial) continue;
      if (c.default !== undefined && !c.notNull) continue;
      const v = sampleValue(c, model);
      if (v === undefined) continue;
      cols.push(quoteIdent(c.name));
      vals.push(v);
    }
    await client.query('SAVEPOINT seed');
    try {
      await client.query(
        cols.length === 0
          ? `INSERT INTO ${quoteQualified(t.schema, t.name)} DEFAULT VALUES`
          : `INSERT INTO ${quoteQualified(t.schema, t.name)} (${cols.join(', ')}) VALUES (${vals.join(', ')})`,
      );
      await client.query('RELEASE SAVEPOINT seed');
    } catch {
      await client.query('ROLLBACK TO SAVEPOINT seed');
    }
  }
}

async function rowCounts(client: pg.Client, model: SchemaModel): Promise<Map<string, number>> {
  const m = new Map<string, number>();
  for (const t of model.tables) {
    const r = await client.query(`SELECT count(*)::int AS n FROM ${quoteQualified(t.schema, t.name)}`);
    m.set(`${t.schema}.${t.name}`, Number(r.rows[0]?.n));
  }
  return m;
}

/**
 * A superuser role whose search_path is `schema`, in the case's own database; returns its URL and a
 * function that removes it again.
 */
async function roleWithDefaultSchema(
  adminUrl: string,
  schema: string,
): Promise<{ url: string; drop: () => Promise<void> }> {
  const u = new URL(adminUrl);
  const role = `case_role_${u.pathname.slice(1)}`;
  const password = `pw_${role}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE ROLE ${quoteIdent(role)} LOGIN SUPERUSER PASSWORD ${quoteLiteral(password)}`);
  await admin.query(`ALTER ROLE ${quoteIdent(role)} SET search_path TO ${quoteIdent(schema)}`);
  await admin.query(`CREATE SCHEMA ${quoteIdent(schema)} AUTHORIZATION ${quoteIdent(role)}`);
  await admin.end();
  u.username = role;
  u.password = password;
  return {
    url: u.toString(),
    drop: async () => {
      const a = new pg.Client({ connectionString: adminUrl });
      await a.connect();
      await a.query(`DROP OWNED BY ${quoteIdent(role)} CASCADE`);
      await a.query(`DROP ROLE ${quoteIdent(role)}`);
      await a.end();
    },
  };
}

export async function runCase(c: SchemaCase, adminUrl: string): Promise<void> {
  const role =
    c.defaultSchema === undefined ? undefined : await roleWithDefaultSchema(adminUrl, c.defaultSchema);
  const dev = c.devUrl === true ? await scratchDatabase(adminUrl, c) : undefined;
  try {
    await runCaseAs(c, role?.url ?? adminUrl, dev?.url);
  } finally {
    await role?.drop();
    await dev?.drop();
  }
}

/** An empty database beside the case's own, for --dev-url; the role's default schema exists in it. */
async function scratchDatabase(
  adminUrl: string,
  c: SchemaCase,
): Promise<{ url: string; drop: () => Promise<void> }> {
  const u = new URL(adminUrl);
  const name = `${u.pathname.slice(1)}_dev`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${quoteIdent(name)}`);
  await admin.end();
  u.pathname = `/${name}`;
  const schema = c.defaultSchema;
  if (schema !== undefined && !new RegExp(`CREATE SCHEMA\\s+"?${schema}\\b`, 'i').test(c.desired)) {
    const dev = new pg.Client({ connectionString: u.toString() });
    await dev.connect();
    await dev.query(`CREATE SCHEMA ${quoteIdent(schema)}`);
    await dev.end();
  }
  return {
    url: u.toString(),
    drop: async () => {
      const a = new pg.Client({ connectionString: adminUrl });
      await a.connect();
      await a.query(`DROP DATABASE ${quoteIdent(name)}`);
      await a.end();
    },
  };
}

async function runCaseAs(c: SchemaCase, url: string, devUrl: string | undefined): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const defaultSchema = c.defaultSchema ?? 'public';
  try {
    const managedCurrent = c.currentManaged ?? c.current;
    const currentModel = await loadDesiredSql([{ path: 'current', sql: managedCurrent }], defaultSchema);
    if (c.current.trim() !== '') await client.query(c.current);
    if (c.seed !== undefined) await client.query(c.seed);
    else {
      await client.query('BEGIN');
      await seedRows(client, currentModel);
      await client.query('COMMIT');
    }
    const scope = { exclude: c.exclude ?? [], protectedTables: c.protectedTables ?? [] };
    const d = postgresDialect;
    const again = await plan(url, d, { files: [{ path: 'current.sql', sql: managedCurrent }] }, scope);
    assert.deepEqual(
      again.plan?.statements.map((s) => s.sql) ?? [],
      [],
      `current should re-plan to nothing, got kinds ${again.changes.map((x) => x.kind).join(', ')}`,
    );
    if (c.devError !== undefined && devUrl !== undefined) {
      await assert.rejects(
        plan(url, d, { files: [{ path: 'desired.sql', sql: c.desired }], devUrl }, scope),
        (error: Error) => {
          assert.ok(
            error.message.includes(c.devError ?? ''),
            `through --dev-url: expected "${c.devError}" in: ${error.message}`,
          );
          return true;
        },
      );
      return;
    }
    if (c.error !== undefined) {
      // Either the desired state is rejected with an error, or the plan is refused: both name the reason.
      let p;
      try {
        p = await plan(url, d, { files: [{ path: 'desired.sql', sql: c.desired }] }, scope);
      } catch (error) {
        assert.match((error as Error).message, new RegExp(c.error.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
        return;
      }
      assert.equal(p.outcome, 'refused');
      assert.match(p.refusal?.reason ?? '', new RegExp(c.error.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
      assert.equal(p.bytes, undefined, 'a refused plan has no SQL');
      if (c.kinds !== undefined) {
        assert.deepEqual(
          [...new Set(p.changes.map((x) => x.kind))].sort(),
          [...new Set(c.kinds)].sort(),
          'the refused change kinds',
        );
      }
      return;
    }
    const p = await plan(url, d, { files: [{ path: 'desired.sql', sql: c.desired }] }, scope);
    assert.notEqual(p.outcome, 'refused', p.refusal?.reason);
    if (c.kinds !== undefined) {
      assert.deepEqual(
        [...new Set(p.changes.map((x) => x.kind))].sort(),
        [...new Set(c.kinds)].sort(),
        'change kinds',
      );
    }
    if (c.destructive !== undefined) assert.equal(p.plan?.destructive, c.destructive, 'destructive flag');
    if (c.header !== undefined) {
      const h = p.plan?.header as Readonly<Record<string, number>> | undefined;
      for (const [k, v] of Object.entries(c.header)) assert.equal(h?.[k], v, `plan header ${k}`);
    }
    if (devUrl !== undefined && c.kinds !== undefined) {
      const viaDev = await plan(url, d, { files: [{ path: 'desired.sql', sql: c.desired }], devUrl }, scope);
      assert.deepEqual(
        [...new Set(viaDev.changes.map((x) => x.kind))].sort(),
        [...new Set(c.kinds)].sort(),
        'change kinds through --dev-url',
      );
    }
    const before = await rowCounts(client, currentModel);
    const a = await applyPlan(url, Buffer.from(p.bytes ?? ''));
    assert.equal(
      a.outcome,
      'applied',
      `apply: ${JSON.stringify(a.failure)}\n${p.plan?.statements.map((s) => s.sql).join(';\n')}`,
    );
    const after = await plan(url, d, { files: [{ path: 'desired.sql', sql: c.desired }] }, scope);
    assert.deepEqual(
      after.plan?.statements.map((s) => s.sql) ?? [],
      [],
      `desired should re-plan to nothing after apply, got kinds ${after.changes.map((x) => x.kind).join(', ')}`,
    );
    if (devUrl !== undefined) {
      const viaDev = await plan(url, d, { files: [{ path: 'desired.sql', sql: c.desired }], devUrl }, scope);
      assert.deepEqual(
        viaDev.plan?.statements.map((s) => s.sql) ?? [],
        [],
        `through --dev-url, desired should re-plan to nothing after apply, got kinds ${viaDev.changes.map((x) => x.kind).join(', ')}`,
      );
    }
    await checkRowsKept(client, c, p.plan?.destructive, before, defaultSchema);
    if (c.reverse !== false) {
      // And back again: desired → current must converge too, unless the engine refuses it on purpose.
      const back = await plan(url, d, { files: [{ path: 'current.sql', sql: managedCurrent }] }, scope);
      if (back.outcome !== 'refused') {
        const b = await applyPlan(url, Buffer.from(back.bytes ?? ''));
        assert.equal(
          b.outcome,
          'applied',
          `apply back: ${JSON.stringify(b.failure)}\n${back.plan?.statements.map((s) => s.sql).join(';\n')}`,
        );
        const done = await plan(url, d, { files: [{ path: 'current.sql', sql: managedCurrent }] }, scope);
        assert.deepEqual(
          done.plan?.statements.map((s) => s.sql) ?? [],
          [],
          `current should re-plan to nothing after going back, got kinds ${done.changes.map((x) => x.kind).join(', ')}`,
        );
      }
    }
  } finally {
    await client.end();
  }
}

async function checkRowsKept(
  client: pg.Client,
  c: SchemaCase,
  destructive: boolean | undefined,
  before: Map<string, number>,
  defaultSchema: string,
): Promise<void> {
  {
    if (destructive === false) {
      const desiredModel = await loadDesiredSql([{ path: 'desired', sql: c.desired }], defaultSchema);
      const managed = new Set(desiredModel.rows.map((r) => `${r.schema}.${r.table}`));
      for (const [table, n] of before) {
        // A table renamed by annotation is counted under its new name.
        const target = desiredModel.tables.find(
          (t) => `${t.schema}.${t.name}` === table || `${t.schema}.${t.renamedFrom ?? ''}` === table,
        );
        if (managed.has(table) || target === undefined) continue;
        const r = await client.query(
          `SELECT count(*)::int AS n FROM ${quoteQualified(target.schema, target.name)}`,
        );
        assert.equal(Number(r.rows[0]?.n), n, `rows of ${table} after a non-destructive plan`);
      }
    }
  }
}
