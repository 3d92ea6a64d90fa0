// No plan may lose data silently, fail on apply, or never converge: the properties the corpus cannot
// state as a before/after pair, on a real PostgreSQL (a sequence's type, a role with its own default schema
// planned through a dev database).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { startPostgres, type PostgresServer } from '../../env/postgres.ts';
import { postgresDialect as dialect } from '../../../src/engine/pg/pg-dialect.ts';
import { applyPlan, plan } from '../../../src/engine/schema-engine.ts';

const files = (sql: string) => [{ path: 'desired.sql', sql }];

describe('schema engine safety (postgres)', () => {
  let server: PostgresServer;
  let n = 0;
  const admin = async (text: string) => {
    const a = new pg.Client({ connectionString: server.adminUrl });
    await a.connect();
    try {
      return (await a.query(text)).rows as Record<string, unknown>[];
    } finally {
      await a.end();
    }
  };
  const fresh = async () => {
    const db = `safety_${n++}`;
    await admin(`CREATE DATABASE ${db}`);
    return server.adminUrl.replace(/\/postgres$/, `/${db}`);
  };
  const sql = async (url: string, text: string) => {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      return (await c.query(text)).rows as Record<string, unknown>[];
    } finally {
      await c.end();
    }
  };
  /** A login role whose search_path is `app`, owning schema `app` in the database at `url`. */
  const appRole = async (url: string, role: string) => {
    await admin(`CREATE ROLE ${role} LOGIN SUPERUSER PASSWORD 'pw_${role}'`);
    await admin(`ALTER ROLE ${role} SET search_path TO app`);
    await sql(url, `CREATE SCHEMA app AUTHORIZATION ${role}`);
    const u = new URL(url);
    u.username = role;
    u.password = `pw_${role}`;
    return u.toString();
  };
  before(async () => {
    server = await startPostgres();
  });
  after(async () => {
    await server?.stop();
  });

  test('serial to bigserial retypes the sequence: values past 2^31 are generated after the plan', async () => {
    const url = await fresh();
    await sql(url, "CREATE TABLE ev (id serial PRIMARY KEY, v text); INSERT INTO ev (v) VALUES ('a')");
    const desired = 'CREATE TABLE ev (id bigserial PRIMARY KEY, v text);';
    const p = await plan(url, dialect, { files: files(desired) });
    assert.ok(
      p.plan?.statements.some((s) => s.sql === 'ALTER SEQUENCE "public"."ev_id_seq" AS bigint'),
      p.plan?.statements.map((s) => s.sql).join('\n'),
    );
    const a = await applyPlan(url, Buffer.from(p.bytes ?? ''));
    assert.equal(a.outcome, 'applied', JSON.stringify(a.failure));
    const [seq] = await sql(
      url,
      "SELECT data_type FROM information_schema.sequences WHERE sequence_name = 'ev_id_seq'",
    );
    assert.equal(seq?.['data_type'], 'bigint');
    await sql(url, "SELECT setval('ev_id_seq', 2147483647); INSERT INTO ev (v) VALUES ('past the limit')");
    const [last] = await sql(url, 'SELECT max(id)::text AS id FROM ev');
    assert.equal(last?.['id'], '2147483648');
    const again = await plan(url, dialect, { files: files(desired) });
    assert.equal(again.outcome, 'no_changes', again.changes.map((c) => c.kind).join(', '));
  });

  test('a role with its own default schema plans the same through a dev database as from the SQL', async () => {
    const url = await fresh();
    const devUrl = await fresh();
    const target = await appRole(url, 'safety_target');
    const dev = await appRole(devUrl, 'safety_dev');
    await sql(
      target,
      `CREATE TYPE mood AS ENUM ('ok', 'sad');
       CREATE TABLE items (id int PRIMARY KEY, m mood DEFAULT 'ok', flags bit(8) DEFAULT b'00011111');
       INSERT INTO items (id) VALUES (1), (2)`,
    );
    const desired = `CREATE TYPE mood AS ENUM ('ok', 'sad');
      CREATE TABLE items (id int PRIMARY KEY, m mood DEFAULT 'ok', flags bit(8) DEFAULT b'00011111', note text);`;
    for (const source of [{ files: files(desired) }, { files: files(desired), devUrl: dev }]) {
      const p = await plan(target, dialect, source);
      assert.deepEqual(
        p.changes.map((c) => c.kind),
        ['AddColumn'],
        `${source.devUrl ? 'dev database' : 'parsed SQL'}: ${p.plan?.statements.map((s) => s.sql).join('\n')}`,
      );
      assert.equal(p.plan?.statements[0]?.sql, 'ALTER TABLE "app"."items" ADD COLUMN "note" text');
    }
    const p = await plan(target, dialect, { files: files(desired), devUrl: dev });
    const a = await applyPlan(target, Buffer.from(p.bytes ?? ''));
    assert.equal(a.outcome, 'applied', JSON.stringify(a.failure));
    // The default still fits its column: an insert that uses it works.
    await sql(target, 'INSERT INTO items (id) VALUES (3)');
    const rows = await sql(target, 'SELECT count(*)::int AS n, min(flags::text) AS f FROM app.items');
    assert.deepEqual(rows, [{ n: 3, f: '00011111' }]);
    for (const source of [{ files: files(desired) }, { files: files(desired), devUrl: dev }]) {
      const again = await plan(target, dialect, source);
      assert.equal(again.outcome, 'no_changes', again.plan?.statements.map((s) => s.sql).join('\n'));
    }
  });
});
