// Public MySQL schemas nobody here wrote (test/fixtures/real-schemas-mysql/<name>/, each with a SOURCE
// note), on a real MariaDB, with the four checks of the PostgreSQL real-schema acceptance: from empty,
// idempotent on the file, dump-equivalent (the server's own mysqldump --no-data of it plans to nothing),
// and a database loaded from that dump plans to nothing against the dump and against the file.
// Every schema goes through the grammar alone (views over joins included: the normaliser spells a view as
// the server stores it); the two with views also through --dev-url.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import mysql from 'mysql2/promise';
import { startMariadb, type MariadbServer } from '../../env/mariadb.ts';
import { mysqlDialect as dialect } from '../../../src/engine/mysql/mysql-dialect.ts';
import { applyPlan, plan, type DesiredSource } from '../../../src/engine/schema-engine.ts';

const SCHEMAS: readonly { name: string; devUrl: boolean }[] = [
  { name: 'roundcube', devUrl: false },
  { name: 'employees', devUrl: false },
  { name: 'sakila', devUrl: false },
  { name: 'kanboard', devUrl: false },
  // The views' schemas through a scratch database as well: both routes reach the same state.
  { name: 'employees', devUrl: true },
  { name: 'sakila', devUrl: true },
];
const fixture = (name: string) =>
  readFileSync(join(import.meta.dirname, '../../fixtures/real-schemas-mysql', name, 'schema.sql'), 'utf8');

describe('public MySQL schemas on MariaDB', () => {
  let server: MariadbServer;
  let n = 0;
  // Views carry DEFINER: root loads them, in a database of its own.
  const fresh = async () => {
    const db = `real_${n++}`;
    const c = await mysql.createConnection(server.adminUrl);
    await c.query(`CREATE DATABASE ${db}`);
    await c.end();
    const u = new URL(server.adminUrl);
    u.pathname = `/${db}`;
    return u.href;
  };
  const dump = (url: string): string => {
    const u = new URL(url);
    return execFileSync(
      '/usr/bin/mariadb-dump',
      [
        '--no-data',
        // Triggers are dumped by default; routines only when asked.
        '--routines',
        '--skip-comments',
        '-h',
        u.hostname,
        '-P',
        u.port,
        '-u',
        decodeURIComponent(u.username),
        u.pathname.slice(1),
      ],
      { env: { ...process.env, MYSQL_PWD: decodeURIComponent(u.password) }, maxBuffer: 16 << 20 },
    ).toString();
  };
  const load = (url: string, sql: string): void => {
    const u = new URL(url);
    execFileSync(
      '/usr/bin/mariadb',
      ['-h', u.hostname, '-P', u.port, '-u', decodeURIComponent(u.username), u.pathname.slice(1)],
      { input: sql, env: { ...process.env, MYSQL_PWD: decodeURIComponent(u.password) } },
    );
  };
  before(async () => {
    server = await startMariadb();
  });
  after(async () => {
    await server?.stop();
  });

  for (const s of SCHEMAS) {
    const route = s.devUrl ? ' (--dev-url)' : '';
    test(`${s.name}${route}: from empty, idempotent, dump-equivalent, own dump plans to nothing`, async () => {
      const source = async (path: string, sql: string): Promise<DesiredSource> => ({
        files: [{ path, sql }],
        ...(s.devUrl ? { devUrl: await fresh() } : {}),
      });
      const sql = fixture(s.name);
      const url = await fresh();
      const first = await plan(url, dialect, await source('schema.sql', sql));
      assert.equal(first.outcome, 'changes', first.refusal?.reason);
      const applied = await applyPlan(url, Buffer.from(first.bytes ?? ''));
      assert.equal(applied.outcome, 'applied', JSON.stringify(applied.failure));
      const noChange = async (target: string, path: string, text: string, what: string) => {
        const p = await plan(target, dialect, await source(path, text));
        assert.equal(p.outcome, 'no_changes', `${what}: ${p.plan?.statements.map((x) => x.sql).join(';\n')}`);
      };
      await noChange(url, 'schema.sql', sql, 'the file again');
      const dumped = dump(url);
      await noChange(url, 'dump.sql', dumped, 'its own dump');
      const fromDump = await fresh();
      // Loaded as a person would: the mariadb client reads the dump's DELIMITER blocks.
      load(fromDump, dumped);
      await noChange(fromDump, 'dump.sql', dumped, 'the dump against a database loaded from it');
      // A dump has no data: the file's declared rows are the only difference it may plan.
      const back = await plan(fromDump, dialect, await source('schema.sql', sql));
      assert.deepEqual(
        back.changes.filter((c) => c.kind !== 'InsertRow').map((c) => c.kind),
        [],
        `the file against a database loaded from its dump: ${back.plan?.statements.map((x) => x.sql).join(';\n')}`,
      );
    });
  }
});
