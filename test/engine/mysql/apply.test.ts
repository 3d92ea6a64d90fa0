// Apply on MariaDB, where DDL commits as it runs: a failure part-way is reported as partial with the
// failing statement's position, errno and SQLSTATE and how many ran, never as a rollback; the CLI says so
// with exit code 5 (the runner reads it as an unknown outcome); a first-statement failure changed nothing
// (exit 1); the GET_LOCK schema lock serialises applies; --dev-url loads through an empty scratch database.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import mysql from 'mysql2/promise';
import { startMariadb, type MariadbServer } from '../../env/mariadb.ts';
import { mysqlDialect } from '../../../src/engine/mysql/mysql-dialect.ts';
import { applyPlan, inspect, plan } from '../../../src/engine/schema-engine.ts';

const BIN = join(import.meta.dirname, '../../../bin/ptah.mjs');

function ptah(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, 'schema', ...args], { env: { ...process.env, ...env } });
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout }));
  });
}

async function connect(url: string): Promise<mysql.Connection> {
  const u = new URL(url);
  return mysql.createConnection({
    host: u.hostname,
    port: Number(u.port),
    user: decodeURIComponent(u.username),
    password: decodeURIComponent(u.password),
    database: u.pathname.slice(1),
    multipleStatements: true,
  });
}

const files = (sql: string) => ({ files: [{ path: 'desired.sql', sql }] });

describe('apply on MariaDB (non-transactional DDL)', () => {
  let server: MariadbServer;
  let dir: string;
  before(async () => {
    server = await startMariadb();
    dir = mkdtempSync(join(tmpdir(), 'ptah-mysql-apply-'));
  });
  after(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('drift names the server: MariaDB, the mysql engine, and its release', async () => {
    const url = await server.createDatabase('server_named');
    const desiredFile = join(dir, 'server-named.sql');
    writeFileSync(desiredFile, 'CREATE TABLE t (id int PRIMARY KEY);');
    const r = await ptah(['drift', '--desired', desiredFile, '--json'], { PTAH_DB_URL: url });
    assert.equal(r.code, 3, r.stdout);
    const out = JSON.parse(r.stdout) as { dialect: string; server: { product: string; version: string } };
    assert.equal(out.dialect, 'mysql');
    assert.equal(out.server.product, 'MariaDB');
    assert.match(out.server.version, /^10\.11\.\d+$/);
  });

  test('a failure after the first statement is partial: position, errno, SQLSTATE, exit 5', async () => {
    const url = await server.createDatabase('partial');
    const conn = await connect(url);
    await conn.query('CREATE TABLE t (id int PRIMARY KEY, v int)');
    const desired = `CREATE TABLE t (id int PRIMARY KEY, v int, UNIQUE KEY uq_v (v));
      CREATE TABLE t2 (id int PRIMARY KEY);`;
    const p = await plan(url, mysqlDialect, files(desired));
    assert.deepEqual(
      p.plan?.statements.map((s) => [s.sql.split(' ').slice(0, 3).join(' '), s.transactional]),
      [
        ['CREATE TABLE `t2`', false],
        ['CREATE UNIQUE INDEX', false],
      ],
    );
    // Rows are not part of the fingerprint: duplicates make the second statement fail.
    await conn.query('INSERT INTO t VALUES (1, 5), (2, 5)');
    const planFile = join(dir, 'partial.json');
    writeFileSync(planFile, p.bytes ?? '');
    const r = await ptah(['apply', '--plan', planFile, '--json'], { PTAH_DB_URL: url });
    assert.equal(r.code, 5, r.stdout);
    const out = JSON.parse(r.stdout) as {
      outcome: string;
      failure: { position: number; errno: number; sqlstate: string; applied: number };
    };
    assert.equal(out.outcome, 'partial');
    assert.equal(out.failure.position, 2);
    assert.equal(out.failure.errno, 1062);
    assert.equal(out.failure.sqlstate, '23000');
    assert.equal(out.failure.applied, 1);
    // The first statement stayed: t2 exists, and nothing claims it was rolled back.
    const live = await inspect(url, mysqlDialect);
    assert.ok(live.model.tables.some((t) => t.name === 't2'));
    await conn.end();
  });

  test('a failing first statement changed nothing: failed, exit 1', async () => {
    const url = await server.createDatabase('first');
    const conn = await connect(url);
    await conn.query('CREATE TABLE t (id int PRIMARY KEY, v int)');
    const p = await plan(
      url,
      mysqlDialect,
      files('CREATE TABLE t (id int PRIMARY KEY, v int, UNIQUE KEY uq_v (v));'),
    );
    await conn.query('INSERT INTO t VALUES (1, 5), (2, 5)');
    const planFile = join(dir, 'first.json');
    writeFileSync(planFile, p.bytes ?? '');
    const r = await ptah(['apply', '--plan', planFile, '--json'], { PTAH_DB_URL: url });
    assert.equal(r.code, 1, r.stdout);
    const out = JSON.parse(r.stdout) as { outcome: string; failure: { position: number; applied: number } };
    assert.equal(out.outcome, 'failed');
    assert.equal(out.failure.position, 1);
    assert.equal(out.failure.applied, 0);
    await conn.end();
  });

  test('a held schema lock refuses the apply before any statement', async () => {
    const url = await server.createDatabase('locked');
    const holder = await connect(url);
    await holder.query("SELECT GET_LOCK(CONCAT('ptah.schema.apply:', DATABASE()), 0)");
    const p = await plan(url, mysqlDialect, files('CREATE TABLE t (id int PRIMARY KEY);'));
    await assert.rejects(
      applyPlan(url, Buffer.from(p.bytes ?? ''), { lockTimeoutMs: 0 }),
      /holds the schema lock/,
    );
    assert.equal((await inspect(url, mysqlDialect)).model.tables.length, 0);
    await holder.query("SELECT RELEASE_LOCK(CONCAT('ptah.schema.apply:', DATABASE()))");
    const a = await applyPlan(url, Buffer.from(p.bytes ?? ''), { lockTimeoutMs: 1000 });
    assert.equal(a.outcome, 'applied');
    await holder.end();
  });

  test('--dev-url loads the desired SQL into an empty scratch database and empties it again', async () => {
    const url = await server.createDatabase('target');
    const dev = await server.createDatabase('scratch');
    const desired = `CREATE TABLE p (id int PRIMARY KEY);
      CREATE TABLE c (id int PRIMARY KEY, p_id int, CONSTRAINT fk FOREIGN KEY (p_id) REFERENCES p (id));
      CREATE VIEW cv AS SELECT id FROM c;`;
    const p = await plan(url, mysqlDialect, { ...files(desired), devUrl: dev });
    assert.equal(p.outcome, 'changes');
    assert.ok(!p.bytes?.includes('scratch'), 'no statement names the scratch database');
    assert.equal((await inspect(dev, mysqlDialect)).model.tables.length, 0, 'scratch emptied');
    const a = await applyPlan(url, Buffer.from(p.bytes ?? ''));
    assert.equal(a.outcome, 'applied', JSON.stringify(a.failure));
    const again = await plan(url, mysqlDialect, files(desired));
    assert.equal(again.outcome, 'no_changes', again.plan?.statements.map((s) => s.sql).join('\n'));
    // A scratch database that is not empty is refused by name.
    const c = await connect(dev);
    await c.query('CREATE TABLE leftover (id int)');
    await assert.rejects(
      plan(url, mysqlDialect, { ...files(desired), devUrl: dev }),
      /dev database is not empty/,
    );
    await c.end();
  });
});
