// The acceptance suite of the migrations engine, run once per real database engine. One server per test
// file (the caller starts it), one database per test.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Dialect } from '../../../src/engine/database-url.ts';
import { openMigrationAdapter } from '../../../src/engine/migrations/dialects/open-adapter.ts';
import { loadMigrationDirectory } from '../../../src/engine/migrations/migration-directory.ts';
import { migrateUp, type UpResult } from '../../../src/engine/migrations/migrate-up.ts';
import { parseRevisionTableName } from '../../../src/engine/migrations/revision.ts';
import type { MigrationStatus } from '../../../src/engine/migrations/migration-status.ts';
import {
  migrationDir,
  ptah,
  PTAH_BIN,
  removeMigrationDirs,
  revisions,
  rows,
  tables,
  writeDir,
} from './helpers.ts';

export interface TestServer {
  createDatabase(name: string): Promise<string>;
  stop(): Promise<void>;
}

/** SQL that differs between the engines, keyed by dialect so a forgotten one fails to compile. */
const SQL: Record<Dialect, { sleep: (s: number) => string; missingTable: string; duplicateTable: string }> = {
  postgres: { sleep: (s) => `SELECT pg_sleep(${s})`, missingTable: '42P01', duplicateTable: '42P07' },
  mysql: { sleep: (s) => `SELECT SLEEP(${s})`, missingTable: '42S02', duplicateTable: '42S01' },
};

export function defineMigrationSuite(dialect: Dialect, start: () => Promise<TestServer>): void {
  describe(`migrations on ${dialect === 'postgres' ? 'PostgreSQL' : 'MariaDB'}`, () => {
    let server: TestServer;
    let n = 0;
    const newDb = () => server.createDatabase(`m_${process.pid}_${++n}`);
    before(async () => {
      server = await start();
    });
    after(async () => {
      await server?.stop();
      removeMigrationDirs();
    });

    const status = async (dir: string, url: string) => {
      const r = await ptah(['migrations', 'status', '--json', '--dir', dir], { PTAH_DB_URL: url });
      assert.equal(r.stderr, '');
      return { code: r.code, status: JSON.parse(r.stdout) as MigrationStatus };
    };
    const up = async (dir: string, url: string, extra: string[] = []) => {
      const r = await ptah(['migrations', 'up', '--json', '--dir', dir, '--lock-timeout', '10s', ...extra], {
        PTAH_DB_URL: url,
      });
      return { code: r.code, result: JSON.parse(r.stdout) as UpResult, stderr: r.stderr };
    };

    test('pending lists versions in order; up applies them; status is then up_to_date', async () => {
      const url = await newDb();
      const dir = migrationDir({
        '10_orders.sql': 'CREATE TABLE orders (id int PRIMARY KEY);',
        '9_customers.sql':
          "-- customers first\nCREATE TABLE customers (id int, note varchar(20) DEFAULT 'a;b');",
        '11_items.sql':
          'CREATE TABLE items (id int);\nINSERT INTO items VALUES (1);\nINSERT INTO items VALUES (2);',
      });
      const before = await status(dir, url);
      assert.equal(before.code, 3);
      assert.equal(before.status.verdict, 'pending');
      assert.deepEqual(
        before.status.pending.map((p) => p.version),
        ['9', '10', '11'],
      );
      assert.equal(before.status.currentVersion, null);
      assert.deepEqual(await tables(dialect, url), [], 'status creates nothing');

      const run = await up(dir, url);
      assert.equal(run.code, 0, run.stderr);
      assert.equal(run.result.outcome, 'applied');
      assert.deepEqual(run.result.applied, ['9', '10', '11']);
      assert.deepEqual(await tables(dialect, url), ['customers', 'items', 'orders', 'ptah_schema_revisions']);
      assert.equal((await rows(dialect, url, 'SELECT count(*) AS c FROM items'))[0]?.['c']?.toString(), '2');

      const afterUp = await status(dir, url);
      assert.equal(afterUp.code, 0);
      assert.equal(afterUp.status.verdict, 'up_to_date');
      assert.equal(afterUp.status.currentVersion, '11');
      assert.equal(afterUp.status.appliedCount, 3);
      assert.notEqual(afterUp.status.fingerprint, before.status.fingerprint);
      const again = await up(dir, url);
      assert.equal(again.result.outcome, 'up_to_date');
    });

    test('a checkpoint bootstraps an empty database and later files apply on top', async () => {
      const url = await newDb();
      const dir = migrationDir({
        '1_a.sql': 'CREATE TABLE a (id int);',
        '2_b.sql': 'CREATE TABLE b (id int);',
        '3_snapshot.sql': '-- ptah:checkpoint\nCREATE TABLE a (id int);\nCREATE TABLE b (id int);',
        '4_c.sql': 'CREATE TABLE c (id int);',
      });
      const s = (await status(dir, url)).status;
      assert.equal(s.verdict, 'pending');
      assert.equal(s.checkpointVersion, '3');
      assert.deepEqual(
        s.pending.map((p) => p.version),
        ['3', '4'],
      );
      assert.deepEqual((await up(dir, url)).result.applied, ['3', '4']);
      writeDir(dir, { '5_d.sql': 'CREATE TABLE d (id int);' });
      const later = await up(dir, url);
      assert.deepEqual(later.result.applied, ['5']);
      assert.deepEqual(await tables(dialect, url), ['a', 'b', 'c', 'd', 'ptah_schema_revisions']);
      const final = (await status(dir, url)).status;
      assert.equal(final.verdict, 'up_to_date');
      assert.equal(final.checkpointVersion, '3');
      assert.deepEqual(
        (await revisions(dialect, url)).map((r) => [r.version, r.checkpoint]),
        [
          ['3', true],
          ['4', false],
          ['5', false],
        ],
      );
    });

    test('modified: an applied file that changed is reported and up refuses', async () => {
      const url = await newDb();
      const dir = migrationDir({
        '1_a.sql': 'CREATE TABLE a (id int);',
        '2_b.sql': 'CREATE TABLE b (id int);',
      });
      await up(dir, url);
      writeDir(dir, { '1_a.sql': 'CREATE TABLE a (id bigint);', '3_c.sql': 'CREATE TABLE c (id int);' });
      const s = await status(dir, url);
      assert.equal(s.status.verdict, 'modified');
      assert.deepEqual(s.status.modifiedVersions, ['1']);
      assert.equal(s.code, 4);
      const tampered = await ptah(['migrations', 'up', '--json', '--dir', dir], { PTAH_DB_URL: url });
      writeFileSync(join(dir, '3_c.sql'), 'CREATE TABLE c (id bigint);');
      const unhashed = await ptah(['migrations', 'up', '--json', '--dir', dir], { PTAH_DB_URL: url });
      assert.equal(unhashed.code, 1);
      assert.equal(JSON.parse(unhashed.stdout).reason, 'invalid_directory');
      assert.match(unhashed.stderr, /3_c\.sql does not match its checksum in ptah\.sum/);
      writeDir(dir, { '3_c.sql': 'CREATE TABLE c (id int);' });
      assert.equal(JSON.parse(tampered.stdout).reason, 'history_modified');
      const run = await up(dir, url);
      assert.equal(run.result.outcome, 'failed');
      assert.equal(run.result.reason, 'history_modified');
      assert.equal(run.code, 4);
      assert.ok(!(await tables(dialect, url)).includes('c'));
    });

    test('out_of_order: a new version below the newest applied one', async () => {
      const url = await newDb();
      const dir = migrationDir({
        '1_a.sql': 'CREATE TABLE a (id int);',
        '3_c.sql': 'CREATE TABLE c (id int);',
      });
      await up(dir, url);
      writeDir(dir, { '2_b.sql': 'CREATE TABLE b (id int);', '4_d.sql': 'CREATE TABLE d (id int);' });
      const s = await status(dir, url);
      assert.equal(s.status.verdict, 'out_of_order');
      assert.deepEqual(s.status.outOfOrderVersions, ['2']);
      assert.deepEqual(
        s.status.pending.map((p) => p.version),
        ['4'],
      );
    });

    test('ahead: the database has a version the directory lacks', async () => {
      const url = await newDb();
      const dir = migrationDir({
        '1_a.sql': 'CREATE TABLE a (id int);',
        '2_b.sql': 'CREATE TABLE b (id int);',
      });
      await up(dir, url);
      writeDir(dir, { '2_b.sql': null });
      const s = await status(dir, url);
      assert.equal(s.status.verdict, 'ahead');
      assert.deepEqual(s.status.aheadVersions, ['2']);
      assert.equal(s.code, 4);
    });

    test('--expect-sequence that differs refuses before changing anything', async () => {
      const url = await newDb();
      const dir = migrationDir({
        '1_a.sql': 'CREATE TABLE a (id int);',
        '2_b.sql': 'CREATE TABLE b (id int);',
      });
      const pending = (await status(dir, url)).status.pending;
      // Not a .sql file: the directory loader ignores it.
      const expectFile = join(dir, 'expect.json');
      // The approved sequence had only version 1: the directory grew since.
      writeFileSync(
        expectFile,
        JSON.stringify([{ version: pending[0]?.version, checksum: pending[0]?.checksum }]),
      );
      const run = await up(dir, url, ['--expect-sequence', expectFile]);
      assert.equal(run.code, 4);
      assert.equal(run.result.outcome, 'failed');
      assert.equal(run.result.reason, 'sequence_mismatch');
      assert.equal(run.result.mismatch?.position, 1);
      assert.deepEqual(run.result.applied, []);
      assert.deepEqual(await tables(dialect, url), [], 'no tables, not even the revision table');

      writeFileSync(
        expectFile,
        JSON.stringify(pending.map((p) => ({ version: p.version, checksum: p.checksum }))),
      );
      const stale = await up(dir, url, [
        '--expect-sequence',
        expectFile,
        '--expect-history-fingerprint',
        'ab'.repeat(32),
      ]);
      assert.equal(stale.result.reason, 'history_mismatch');
      assert.equal(stale.code, 4);
      assert.deepEqual(await tables(dialect, url), [], 'a stale history fingerprint changes nothing either');
      const fingerprint = (await status(dir, url)).status.fingerprint;
      const ok = await up(dir, url, [
        '--expect-sequence',
        expectFile,
        '--expect-history-fingerprint',
        fingerprint,
      ]);
      assert.equal(ok.result.outcome, 'applied');
      assert.deepEqual(ok.result.applied, ['1', '2']);
    });

    test('a failure in a "none" file after a statement ran is partial, dirty, and blocks later runs', async () => {
      const url = await newDb();
      const dir = migrationDir({
        '1_a.sql': 'CREATE TABLE a (id int);',
        '2_b.sql':
          '-- ptah:txmode none\nCREATE TABLE b (id int);\nINSERT INTO b VALUES (1);\nINSERT INTO missing VALUES (1);\nCREATE TABLE never (id int);',
        '3_c.sql': 'CREATE TABLE c (id int);',
      });
      const run = await up(dir, url);
      assert.equal(run.code, 5);
      assert.equal(run.result.outcome, 'partial');
      assert.deepEqual(run.result.applied, ['1']);
      assert.equal(run.result.stoppedAt, '2');
      assert.deepEqual(run.result.failure, {
        version: '2',
        statementIndex: 3,
        line: 4,
        sqlstate: SQL[dialect].missingTable,
        errno: dialect === 'mysql' ? 1146 : null,
      });
      assert.ok(
        !JSON.stringify(run.result).includes('missing'),
        'no SQL text or server message in the result',
      );
      assert.deepEqual(await tables(dialect, url), ['a', 'b', 'ptah_schema_revisions']);
      assert.deepEqual(await revisions(dialect, url), [
        { version: '1', checkpoint: false, dirty: false, statementsDone: null },
        { version: '2', checkpoint: false, dirty: true, statementsDone: 2 },
      ]);
      const s = await status(dir, url);
      assert.equal(s.status.verdict, 'dirty');
      assert.deepEqual(s.status.dirtyVersions, ['2']);
      const blocked = await up(dir, url);
      assert.equal(blocked.result.reason, 'history_dirty');

      // A person undoes the partial change, then repair forgets the dirty row and the version runs again.
      await rows(dialect, url, 'DROP TABLE b');
      writeDir(dir, {
        '2_b.sql': '-- ptah:txmode none\nCREATE TABLE b (id int);\nINSERT INTO b VALUES (1);',
      });
      const repaired = await ptah(['migrations', 'repair', '--yes', '--json', '--dir', dir], {
        PTAH_DB_URL: url,
      });
      assert.equal(repaired.code, 0, repaired.stderr);
      assert.deepEqual(JSON.parse(repaired.stdout), { ok: true, changed: ['2'] });
      assert.match(repaired.stderr, /WARNING/);
      assert.deepEqual((await up(dir, url)).result.applied, ['2', '3']);
      assert.equal((await status(dir, url)).status.verdict, 'up_to_date');
    });

    test('a failing statement in a "file" file: PostgreSQL rolls the file back, MariaDB DDL is partial', async () => {
      const url = await newDb();
      const dir = migrationDir({
        '1_a.sql': 'CREATE TABLE a (id int);',
        '2_b.sql': 'CREATE TABLE b (id int);\nCREATE TABLE b (id int);',
        '3_c.sql': 'CREATE TABLE c (id int);',
      });
      const run = await up(dir, url);
      assert.deepEqual(run.result.applied, ['1']);
      assert.equal(run.result.stoppedAt, '2');
      assert.deepEqual(run.result.failure, {
        version: '2',
        statementIndex: 2,
        line: 2,
        sqlstate: SQL[dialect].duplicateTable,
        errno: dialect === 'mysql' ? 1050 : null,
      });
      const expected: Record<
        Dialect,
        { outcome: string; code: number; tables: string[]; revisions: unknown[] }
      > = {
        postgres: {
          outcome: 'failed',
          code: 1,
          tables: ['a', 'ptah_schema_revisions'],
          revisions: [{ version: '1', checkpoint: false, dirty: false, statementsDone: null }],
        },
        mysql: {
          outcome: 'partial',
          code: 5,
          tables: ['a', 'b', 'ptah_schema_revisions'],
          revisions: [
            { version: '1', checkpoint: false, dirty: false, statementsDone: null },
            { version: '2', checkpoint: false, dirty: true, statementsDone: 1 },
          ],
        },
      };
      assert.equal(run.result.outcome, expected[dialect].outcome);
      assert.equal(run.code, expected[dialect].code);
      assert.deepEqual(await tables(dialect, url), expected[dialect].tables);
      assert.deepEqual(await revisions(dialect, url), expected[dialect].revisions);
      assert.equal((await status(dir, url)).status.verdict, dialect === 'postgres' ? 'pending' : 'dirty');
    });

    test('an explicit "file" directive: DML rolls back on both engines; MariaDB DDL commits, so partial', async () => {
      const url = await newDb();
      const dir = migrationDir({
        '1_a.sql': 'CREATE TABLE a (id int);',
        '2_fill.sql':
          '-- ptah:txmode file\nINSERT INTO a VALUES (1);\nINSERT INTO a VALUES (2);\nINSERT INTO missing VALUES (3);',
      });
      const run = await up(dir, url);
      assert.equal(run.result.failure?.statementIndex, 3);
      assert.equal(run.result.outcome, 'failed');
      assert.equal(String((await rows(dialect, url, 'SELECT count(*) AS c FROM a'))[0]?.['c']), '0');
      assert.equal((await status(dir, url)).status.verdict, 'pending', 'history clean');

      writeDir(dir, {
        '2_fill.sql':
          '-- ptah:txmode file\nINSERT INTO a VALUES (1);\nCREATE TABLE b (id int);\nINSERT INTO missing VALUES (3);',
      });
      const ddl = await up(dir, url);
      const expected: Record<Dialect, { outcome: string; rows: string; verdict: string }> = {
        postgres: { outcome: 'failed', rows: '0', verdict: 'pending' },
        // CREATE TABLE committed the INSERT before it and itself: both stay.
        mysql: { outcome: 'partial', rows: '1', verdict: 'dirty' },
      };
      assert.equal(ddl.result.outcome, expected[dialect].outcome);
      assert.equal(
        String((await rows(dialect, url, 'SELECT count(*) AS c FROM a'))[0]?.['c']),
        expected[dialect].rows,
      );
      assert.equal((await status(dir, url)).status.verdict, expected[dialect].verdict);

      // A DDL statement that fails still committed the INSERT before it on MariaDB (implicit commit first).
      const url2 = await newDb();
      writeDir(dir, {
        '2_fill.sql': '-- ptah:txmode file\nINSERT INTO a VALUES (1);\nCREATE TABLE a (id int);',
      });
      const failedDdl = await up(dir, url2);
      assert.equal(failedDdl.result.outcome, expected[dialect].outcome);
      assert.equal(
        String((await rows(dialect, url2, 'SELECT count(*) AS c FROM a'))[0]?.['c']),
        expected[dialect].rows,
      );
    });

    test('a failure at the first statement changed nothing: failed, history clean, in any mode', async () => {
      const url = await newDb();
      const dir = migrationDir({
        '1_a.sql': 'CREATE TABLE a (id int);',
        '2_b.sql': 'INSERT INTO missing VALUES (1);\nCREATE TABLE b (id int);',
      });
      const run = await up(dir, url, ['--tx-mode', 'none']);
      assert.equal(run.result.outcome, 'failed');
      assert.equal(run.result.failure?.statementIndex, 1);
      assert.deepEqual(
        (await revisions(dialect, url)).map((r) => [r.version, r.dirty]),
        [['1', false]],
      );
      assert.equal((await status(dir, url)).status.verdict, 'pending');
    });

    test('a connection lost during a statement gives outcome unknown', async () => {
      const url = await newDb();
      const dir = migrationDir({
        '1_a.sql': 'CREATE TABLE a (id int);',
        '2_slow.sql': `-- ptah:txmode none\nCREATE TABLE b (id int);\n${SQL[dialect].sleep(20)};`,
      });
      const files = loadMigrationDirectory(dir);
      const db = await openMigrationAdapter(url, parseRevisionTableName(undefined));
      try {
        const running = migrateUp(db, { files, lockTimeoutMs: 5000 });
        const find: Record<Dialect, string> = {
          postgres:
            "SELECT pid AS id FROM pg_stat_activity WHERE application_name = 'ptah-migrations' AND query LIKE 'SELECT pg_sleep%'",
          mysql: "SELECT id FROM information_schema.processlist WHERE info LIKE 'SELECT SLEEP%'",
        };
        let killed = false;
        for (let i = 0; i < 100 && !killed; i++) {
          const [victim] = await rows(dialect, url, find[dialect]);
          if (victim) {
            await rows(
              dialect,
              url,
              dialect === 'postgres'
                ? `SELECT pg_terminate_backend(${Number(victim['id'])})`
                : `KILL CONNECTION ${Number(victim['id'])}`,
            );
            killed = true;
          } else await new Promise((r) => setTimeout(r, 100));
        }
        assert.ok(killed, 'the sleeping statement was found');
        const r = await running;
        assert.equal(r.outcome, 'unknown');
        assert.equal(r.reason, 'connection_lost');
        assert.equal(r.stoppedAt, '2');
        assert.deepEqual(r.applied, ['1']);
        assert.equal(r.failure?.statementIndex, 2);
      } finally {
        await db.close();
      }
      // The run wrote its dirty row before the statements: the history says so.
      assert.equal((await status(dir, url)).status.verdict, 'dirty');
    });

    test('baseline records an existing schema after checking it against a shadow database', async () => {
      const url = await newDb();
      const shadow = await newDb();
      const dir = migrationDir({
        '1_a.sql': 'CREATE TABLE a (id int, name varchar(10));',
        '2_b.sql': 'CREATE TABLE b (id int);',
        '3_c.sql': 'CREATE TABLE c (id int);',
      });
      await rows(dialect, url, 'CREATE TABLE a (id int)');
      const env = { PTAH_DB_URL: url, PTAH_SHADOW_DB_URL: shadow };
      const refused = await ptah(['migrations', 'baseline', '--version', '2', '--dir', dir], env);
      assert.equal(refused.code, 4);
      assert.match(refused.stderr, /missing in target: a\.name/);
      assert.match(refused.stderr, /missing in target: b\.id/);
      assert.deepEqual(await tables(dialect, url), ['a'], 'nothing recorded in the target');

      const fixedShadow = await newDb();
      await rows(dialect, url, 'ALTER TABLE a ADD COLUMN name varchar(10)');
      await rows(dialect, url, 'CREATE TABLE b (id int)');
      const ok = await ptah(['migrations', 'baseline', '--version', '2', '--dir', dir, '--json'], {
        ...env,
        PTAH_SHADOW_DB_URL: fixedShadow,
      });
      assert.equal(ok.code, 0, ok.stderr);
      assert.deepEqual(JSON.parse(ok.stdout), { ok: true, changed: ['2'] });
      assert.deepEqual(await revisions(dialect, url), [
        { version: '2', checkpoint: true, dirty: false, statementsDone: null },
      ]);
      const s = (await status(dir, url)).status;
      assert.equal(s.verdict, 'pending');
      assert.deepEqual(
        s.pending.map((p) => p.version),
        ['3'],
      );
      assert.deepEqual((await up(dir, url)).result.applied, ['3']);
      for (const out of [refused.stdout, refused.stderr, ok.stdout, ok.stderr]) {
        assert.ok(!out.includes(new URL(url).password) && !out.includes(new URL(shadow).password));
      }
    });

    test('set marks a version applied or pending only with --yes and a loud warning', async () => {
      const url = await newDb();
      const dir = migrationDir({
        '1_a.sql': 'CREATE TABLE a (id int);',
        '2_b.sql': 'CREATE TABLE b (id int);',
      });
      await up(dir, url);
      writeDir(dir, { '3_c.sql': 'CREATE TABLE c (id int);' });
      const env = { PTAH_DB_URL: url };
      const unconfirmed = await ptah(['migrations', 'set', '3', '--applied', '--dir', dir], env);
      assert.equal(unconfirmed.code, 4);
      assert.match(unconfirmed.stderr, /WARNING/);
      assert.deepEqual(
        (await revisions(dialect, url)).map((r) => r.version),
        ['1', '2'],
      );
      const set = await ptah(['migrations', 'set', '3', '--applied', '--yes', '--dir', dir], env);
      assert.equal(set.code, 0, set.stderr);
      assert.match(set.stderr, /WARNING.*APPLIED/);
      assert.equal((await status(dir, url)).status.verdict, 'up_to_date');
      assert.ok(!(await tables(dialect, url)).includes('c'), 'set runs no SQL');
      const unset = await ptah(['migrations', 'set', '3', '--pending', '--yes', '--dir', dir], env);
      assert.equal(unset.code, 0, unset.stderr);
      assert.deepEqual(
        (await status(dir, url)).status.pending.map((p) => p.version),
        ['3'],
      );
    });

    test('--revisions-table names the history; a refused login prints no credential', async () => {
      const url = await newDb();
      const dir = migrationDir({ '1_a.sql': 'CREATE TABLE a (id int);' });
      // PostgreSQL: a schema of its own, created by the engine; MySQL: the database itself, named.
      const history: Record<Dialect, string> = {
        postgres: 'ops.deploy_history',
        mysql: `${new URL(url).pathname.slice(1)}.deploy_history`,
      };
      const run = await up(dir, url, ['--revisions-table', history[dialect]]);
      assert.equal(run.result.outcome, 'applied');
      assert.deepEqual(await tables(dialect, url), dialect === 'postgres' ? ['a'] : ['a', 'deploy_history']);
      const recorded = await rows(dialect, url, `SELECT count(*) AS c FROM ${history[dialect]}`);
      assert.equal(String(recorded[0]?.['c']), '1');
      const s = await ptah(
        ['migrations', 'status', '--json', '--dir', dir, '--revisions-table', history[dialect]],
        {
          PTAH_DB_URL: url,
        },
      );
      assert.equal(JSON.parse(s.stdout).verdict, 'up_to_date');

      const wrong = new URL(url);
      wrong.password = 'Wr0ngSecretValue';
      const refused = await ptah(['migrations', 'up', '--json', '--dir', dir], { PTAH_DB_URL: wrong.href });
      assert.equal(refused.code, 1);
      assert.equal(JSON.parse(refused.stdout).reason, 'connection_failed');
      const st = await ptah(['migrations', 'status', '--dir', dir], { PTAH_DB_URL: wrong.href });
      assert.equal(st.code, 1);
      assert.match(st.stderr, /cannot connect/);
      for (const text of [refused.stdout, refused.stderr, st.stdout, st.stderr]) {
        assert.ok(!text.includes('Wr0ngSecretValue'));
        assert.ok(!text.includes(new URL(url).password));
      }
    });

    test('routine bodies with inner semicolons run as one statement (no DELIMITER)', async () => {
      const url = await newDb();
      const routine: Record<Dialect, string> = {
        postgres: [
          'CREATE TABLE t (v int);',
          'CREATE PROCEDURE fill(n int) LANGUAGE sql',
          'BEGIN ATOMIC',
          '  INSERT INTO t VALUES (n);',
          '  INSERT INTO t VALUES (CASE WHEN n > 0 THEN n + 1 ELSE 0 END);',
          'END;',
          'CALL fill(1);',
        ].join('\n'),
        mysql: [
          'CREATE TABLE t (v int);',
          'CREATE PROCEDURE fill(n INT)',
          'BEGIN',
          '  DECLARE i INT DEFAULT 0;',
          '  WHILE i < 2 DO',
          '    INSERT INTO t VALUES (IF(n > 0, n + i, 0));',
          '    SET i = i + 1;',
          '  END WHILE;',
          'END;',
          'CREATE TRIGGER t_default BEFORE INSERT ON t FOR EACH ROW BEGIN IF NEW.v IS NULL THEN SET NEW.v = 0; END IF; END;',
          'CALL fill(1);',
        ].join('\n'),
      };
      const dir = migrationDir({ '1_routine.sql': routine[dialect] });
      const run = await up(dir, url);
      assert.equal(run.result.outcome, 'applied', JSON.stringify(run.result));
      const values = await rows(dialect, url, 'SELECT v FROM t ORDER BY v');
      assert.deepEqual(
        values.map((r) => Number(r['v'])),
        [1, 2],
      );
    });

    test('SIGTERM stops up between files and still prints the result', async () => {
      const url = await newDb();
      const dir = migrationDir({
        '1_slow.sql': `CREATE TABLE slow (id int);\n${SQL[dialect].sleep(1.5)};`,
        '2_next.sql': 'CREATE TABLE next_one (id int);',
      });
      const child = spawn(
        process.execPath,
        [PTAH_BIN, 'migrations', 'up', '--json', '--dir', dir, '--lock-timeout', '5s'],
        { env: { ...process.env, PTAH_DB_URL: url }, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let stdout = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      // Wait until the slow statement is running, then ask the run to stop.
      const find: Record<Dialect, string> = {
        postgres:
          "SELECT 1 AS x FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep%' AND pid <> pg_backend_pid()",
        mysql: "SELECT 1 AS x FROM information_schema.processlist WHERE info LIKE 'SELECT SLEEP%'",
      };
      for (let i = 0; i < 100 && (await rows(dialect, url, find[dialect])).length === 0; i++) {
        await new Promise((r) => setTimeout(r, 100));
      }
      child.kill('SIGTERM');
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
      const result = JSON.parse(stdout) as UpResult;
      assert.equal(code, 1);
      assert.equal(result.outcome, 'failed');
      assert.equal(result.reason, 'interrupted');
      assert.deepEqual(result.applied, ['1']);
      assert.equal(result.stoppedAt, '2');
      assert.deepEqual(await tables(dialect, url), ['ptah_schema_revisions', 'slow']);
      assert.equal((await status(dir, url)).status.verdict, 'pending');
    });

    test('two concurrent up runs never interleave: the second waits, a third times out', async () => {
      const url = await newDb();
      const dir = migrationDir({
        '1_slow.sql': `CREATE TABLE slow (id int);\n${SQL[dialect].sleep(1.5)};`,
        '2_next.sql': 'CREATE TABLE next_one (id int);',
      });
      const files = loadMigrationDirectory(dir);
      const open = () => openMigrationAdapter(url, parseRevisionTableName(undefined));
      const [a, b, c] = await Promise.all([open(), open(), open()]);
      const log: string[] = [];
      const timed = async (name: string, p: Promise<UpResult>) => {
        const r = await p;
        log.push(`${name} ${r.outcome}`);
        return r;
      };
      try {
        const first = timed(
          'first',
          migrateUp(a, {
            files,
            lockTimeoutMs: 10_000,
            onProgress: (e) => log.push(`first ${e.phase} ${e.version}`),
          }),
        );
        await new Promise((r) => setTimeout(r, 300));
        const second = timed(
          'second',
          migrateUp(b, {
            files,
            lockTimeoutMs: 10_000,
            onProgress: (e) => log.push(`second ${e.phase} ${e.version}`),
          }),
        );
        const third = timed('third', migrateUp(c, { files, lockTimeoutMs: 200 }));
        const [r1, r2, r3] = await Promise.all([first, second, third]);
        assert.equal(r1.outcome, 'applied');
        assert.deepEqual(r1.applied, ['1', '2']);
        assert.equal(r2.outcome, 'up_to_date', 'the second run saw the first one finished');
        assert.ok(r2.lockWaitMs >= 900, `second waited ${r2.lockWaitMs} ms`);
        assert.equal(r3.outcome, 'failed');
        assert.equal(r3.reason, 'lock_timeout');
        assert.ok(r3.lockWaitMs < 1500);
        assert.deepEqual(log, [
          'first start 1',
          'third failed',
          'first done 1',
          'first start 2',
          'first done 2',
          'first applied',
          'second up_to_date',
        ]);
        assert.deepEqual(
          (await revisions(dialect, url)).map((r) => r.version),
          ['1', '2'],
        );
      } finally {
        await Promise.all([a.close(), b.close(), c.close()]);
      }
    });
  });
}
