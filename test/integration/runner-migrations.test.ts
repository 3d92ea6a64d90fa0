// ptah-runner's two migration operations driving the real `ptah migrations` against a real PostgreSQL and a
// real MariaDB (one environment: both servers, started once): every history verdict from a prepared
// database, an approved sequence applied, a sequence that no longer matches refused before any statement
// (the servers' statement logs show none), a `none`-mode file failing after its first statement (Partial,
// with position and SQLSTATE/errno), and a run killed mid-statement or whose connection is ended reported
// uncertain.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { startPostgres, type PostgresServer } from '../env/postgres.ts';
import { startMariadb, type MariadbServer } from '../env/mariadb.ts';
import { hashMigrationDirectory } from '../../src/engine/migrations/migration-directory.ts';
import { runRunner } from '../../src/runner/main.ts';
import { acceptFrame, decodeFrame } from '../../src/protocol/frame.ts';
import type { MigrationHistoryOutputs, RunnerOperation, RunnerResult } from '../../src/protocol/result.ts';
import { targetReport } from '../../src/runner/target-identity.ts';
import { freePort } from '../env/ports.ts';

let postgres: PostgresServer;
let mariadb: MariadbServer;
let root: string;

before(async () => {
  [postgres, mariadb] = await Promise.all([startPostgres(), startMariadb()]);
  root = mkdtempSync(join(tmpdir(), 'ptah-runner-mig-'));
});
after(async () => {
  await Promise.all([postgres?.stop(), mariadb?.stop()]);
  if (root !== undefined) rmSync(root, { recursive: true, force: true });
});

interface Outcome {
  exitCode: number;
  stderr: string;
  stdout: string;
  termination: string;
  result: RunnerResult;
}

let opCounter = 0;

async function runner(
  operation: RunnerOperation,
  env: Record<string, string>,
  signal?: AbortSignal,
): Promise<Outcome> {
  let stdout = '';
  let stderr = '';
  const operationId = `sha256:${createHash('sha256').update(`op-${++opCounter}-${Date.now()}`).digest('hex')}`;
  const termination = join(root, `${opCounter}.termination`);
  const exitCode = await runRunner(
    ['run', '--operation', operation],
    {
      PATH: process.env['PATH'],
      HOME: process.env['HOME'],
      PTAH_OPERATION_ID: operationId,
      PTAH_RUNNER_PROTOCOL_VERSION: '1',
      PTAH_WORK_DIR: root,
      PTAH_TERMINATION_MESSAGE_PATH: termination,
      ...env,
    },
    {
      writeStdout: (t) => (stdout += t),
      writeStderr: (t) => (stderr += t),
      ...(signal !== undefined ? { signal } : {}),
    },
  );
  const accepted = acceptFrame(decodeFrame(stdout), { operation, operationId });
  assert.ok(accepted.accepted, `${operation}: ${stderr}`);
  return {
    exitCode,
    stdout,
    stderr,
    termination: readFileSync(termination, 'utf8'),
    result: accepted.result,
  };
}

type Files = Record<string, string>;

/** A migration directory as the check-snapshot init container leaves it: the files and their ptah.sum. */
function directory(name: string, files: Files): string {
  const dir = join(root, name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  for (const [file, sql] of Object.entries(files)) writeFileSync(join(dir, file), sql);
  hashMigrationDirectory(dir);
  return dir;
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

interface Engine {
  readonly name: 'postgres' | 'mysql';
  server(): PostgresServer | MariadbServer;
  /** A statement that fails at run time on a missing table, with the codes each server answers. */
  readonly missingTable: { sqlstate: string; errno?: number };
  /** A statement that holds its connection for that many seconds (each test its own, to find it again). */
  sleep(seconds: number): string;
}

const ENGINES: readonly Engine[] = [
  {
    name: 'postgres',
    server: () => postgres,
    missingTable: { sqlstate: '42P01' },
    sleep: (seconds) => `SELECT pg_sleep(${seconds})`,
  },
  {
    name: 'mysql',
    server: () => mariadb,
    missingTable: { sqlstate: '42S02', errno: 1146 },
    sleep: (seconds) => `DO SLEEP(${seconds})`,
  },
];

for (const engine of ENGINES) {
  describe(`runner migrations on ${engine.name === 'postgres' ? 'PostgreSQL' : 'MariaDB'}`, () => {
    let n = 0;
    /** A fresh database per test: every test prepares the history it needs. */
    async function database(): Promise<{ url: string; name: string; identity: string }> {
      const name = `mig_${engine.name === 'postgres' ? 'pg' : 'my'}_${++n}`;
      const url = await engine.server().createDatabase(name);
      return { url, name, identity: targetReport(url).identityDigest };
    }
    /**
     * How often the server's statement log holds a text. The raw log, not statements(): a statement that
     * follows a file's directive comment starts on the log line after the comment.
     */
    const logged = (text: string): number =>
      readFileSync(engine.server().logFile, 'utf8').split(text).length - 1;
    /** Ends, as the server's administrator, every session running a statement that contains `text`. */
    async function endSessionsRunning(text: string): Promise<number> {
      if (engine.name === 'postgres') {
        const c = new pg.Client({ connectionString: engine.server().adminUrl });
        await c.connect();
        try {
          const r = await c.query(
            'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND strpos(query, $1) > 0',
            [text],
          );
          return r.rowCount ?? 0;
        } finally {
          await c.end();
        }
      }
      const c = await mysql.createConnection(engine.server().adminUrl);
      try {
        const [rows] = await c.query(
          'SELECT id FROM information_schema.processlist WHERE id <> CONNECTION_ID() AND INSTR(info, ?) > 0',
          [text],
        );
        for (const { id } of rows as { id: number }[]) await c.query(`KILL CONNECTION ${Number(id)}`);
        return (rows as unknown[]).length;
      } finally {
        await c.end();
      }
    }
    async function waitForStatement(text: string): Promise<void> {
      const deadline = Date.now() + 30_000;
      while (logged(text) === 0) {
        assert.ok(Date.now() < deadline, `${text} never started`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    async function revisionTableExists(url: string): Promise<boolean> {
      const sql =
        "SELECT count(*) AS n FROM information_schema.tables WHERE table_name = 'ptah_schema_revisions'";
      if (engine.name === 'postgres') {
        const c = new pg.Client({ connectionString: url });
        await c.connect();
        try {
          return Number((await c.query(`${sql} AND table_schema = 'public'`)).rows[0].n) > 0;
        } finally {
          await c.end();
        }
      }
      const c = await mysql.createConnection(url);
      try {
        const [rows] = await c.query(`${sql} AND table_schema = DATABASE()`);
        return Number((rows as { n: number }[])[0]!.n) > 0;
      } finally {
        await c.end();
      }
    }

    async function history(url: string, dir: string): Promise<MigrationHistoryOutputs> {
      const r = await runner('migration-history', {
        PTAH_DB_URL: url,
        PTAH_EXPECTED_DATABASE_ENGINE: engine.name,
        PTAH_MIGRATIONS_DIR: dir,
      });
      assert.equal(r.exitCode, 0, r.stderr);
      assert.equal(r.result.outcome, 'succeeded');
      assert.ok(r.result.outputs.history, 'history outputs');
      return r.result.outputs.history;
    }

    async function apply(
      db: { url: string; identity: string },
      dir: string,
      sequence: readonly { version: string; checksum: string }[],
      extra: Record<string, string> = {},
      signal?: AbortSignal,
    ): Promise<Outcome> {
      return runner(
        'migration-apply',
        {
          PTAH_DB_URL: db.url,
          PTAH_EXPECTED_DATABASE_ENGINE: engine.name,
          PTAH_MIGRATIONS_DIR: dir,
          PTAH_EXPECTED_TARGET_IDENTITY: db.identity,
          PTAH_EXPECTED_SEQUENCE: JSON.stringify(sequence),
          PTAH_EXECUTION_NOT_AFTER: new Date(Date.now() + 120_000).toISOString(),
          PTAH_LOCK_TIMEOUT: '10s',
          ...extra,
        },
        signal,
      );
    }
    const sequenceOf = (h: MigrationHistoryOutputs) =>
      h.pending.map((p) => ({ version: p.version, checksum: p.checksum }));

    it('reads pending from an empty history, applies the approved sequence, then reads up_to_date', async () => {
      const db = await database();
      const tag = `ok${engine.name}`;
      const files: Files = {
        '0001_create_orders.sql': `CREATE TABLE ${tag}_orders (id int PRIMARY KEY);\n`,
        '0002_add_note.sql': `-- ptah:txmode file\nALTER TABLE ${tag}_orders ADD COLUMN note varchar(40);\n`,
      };
      const dir = directory(`${db.name}-ok`, files);

      const before = await history(db.url, dir);
      assert.equal(before.verdict, 'pending');
      assert.equal(before.currentVersion, '0');
      assert.equal(before.appliedCount, 0);
      assert.equal(before.historyFingerprint, `sha256:${sha256('[]')}`);
      assert.deepEqual(before.pending, [
        {
          version: '1',
          versionKey: '0001',
          description: 'create orders',
          checksum: sha256(files['0001_create_orders.sql']!),
          checkpoint: false,
          transactionMode: 'unset',
        },
        {
          version: '2',
          versionKey: '0002',
          description: 'add note',
          checksum: sha256(files['0002_add_note.sql']!),
          checkpoint: false,
          transactionMode: 'file',
        },
      ]);
      assert.equal(logged(`${tag}_orders`), 0, 'reading the history ran no migration');
      assert.equal(await revisionTableExists(db.url), false, 'reading the history created nothing');

      const applied = await apply(db, dir, sequenceOf(before), {
        PTAH_EXPECTED_HISTORY_FINGERPRINT: before.historyFingerprint,
      });
      assert.equal(applied.exitCode, 0, applied.stderr);
      assert.equal(applied.result.outcome, 'succeeded');
      assert.deepEqual(applied.result.outputs.migrationApply, {
        runOutcome: 'applied',
        mutationStarted: true,
        appliedVersions: ['1', '2'],
      });
      assert.equal(logged(`CREATE TABLE ${tag}_orders`), 1);
      assert.equal(logged(`ALTER TABLE ${tag}_orders`), 1);

      const after = await history(db.url, dir);
      assert.equal(after.verdict, 'up_to_date');
      assert.equal(after.currentVersion, '2');
      assert.equal(after.appliedCount, 2);
      assert.deepEqual(after.pending, []);
      assert.notEqual(after.historyFingerprint, before.historyFingerprint);

      const password = new URL(db.url).password;
      for (const o of [applied]) {
        for (const text of [o.stdout, o.stderr, o.termination]) assert.ok(!text.includes(password));
        assert.ok(!o.stdout.includes('CREATE TABLE'), 'no SQL in the frame');
      }
    });

    it("takes Ptah's own selection: a checkpoint bootstrap is not a count", async () => {
      const db = await database();
      const dir = directory(`${db.name}-cp`, {
        '1_a.sql': 'CREATE TABLE cp_a (id int);\n',
        '2_squash.sql': '-- ptah:checkpoint\nCREATE TABLE cp_a (id int);\nCREATE TABLE cp_b (id int);\n',
        '3_c.sql': 'CREATE TABLE cp_c (id int);\n',
      });
      const h = await history(db.url, dir);
      assert.equal(h.verdict, 'pending');
      assert.equal(h.checkpointVersion, '2');
      assert.deepEqual(
        h.pending.map((p) => [p.version, p.checkpoint]),
        [
          ['2', true],
          ['3', false],
        ],
      );
    });

    it('reads modified, out_of_order and ahead, naming the versions', async () => {
      const db = await database();
      const base = { '1_a.sql': 'CREATE TABLE hv_a (id int);\n', '3_c.sql': 'CREATE TABLE hv_c (id int);\n' };
      const dir = directory(`${db.name}-v`, base);
      const first = await history(db.url, dir);
      const ran = await apply(db, dir, sequenceOf(first));
      assert.equal(ran.exitCode, 0, ran.stderr);

      const outOfOrder = await history(
        db.url,
        directory(`${db.name}-v`, { ...base, '2_b.sql': 'CREATE TABLE hv_b (id int);\n' }),
      );
      assert.equal(outOfOrder.verdict, 'out_of_order');
      assert.deepEqual(outOfOrder.outOfOrderVersions, ['2']);
      assert.deepEqual(outOfOrder.pending, []);

      const modified = await history(
        db.url,
        directory(`${db.name}-v`, { ...base, '1_a.sql': 'CREATE TABLE hv_a (id bigint);\n' }),
      );
      assert.equal(modified.verdict, 'modified');
      assert.deepEqual(modified.modifiedVersions, ['1']);

      const aheadDir = directory(`${db.name}-v`, base);
      unlinkSync(join(aheadDir, '3_c.sql'));
      hashMigrationDirectory(aheadDir);
      const ahead = await history(db.url, aheadDir);
      assert.equal(ahead.verdict, 'ahead');
      assert.deepEqual(ahead.aheadVersions, ['3']);
      assert.equal(ahead.currentVersion, '3');
    });

    it('refuses a sequence that no longer matches before any statement runs', async () => {
      const db = await database();
      const files: Files = {
        '1_a.sql': 'CREATE TABLE sm_a (id int);\n',
        '2_b.sql': 'CREATE TABLE sm_b (id int);\n',
      };
      const dir = directory(`${db.name}-sm`, files);
      const approved = await history(db.url, dir);
      // After the approval file 2 changed: Ptah's own selection under the lock no longer is the approved one.
      const changed = directory(`${db.name}-sm`, { ...files, '2_b.sql': 'CREATE TABLE sm_b (id bigint);\n' });
      const r = await apply(db, changed, sequenceOf(approved));
      assert.equal(r.exitCode, 1, r.stderr);
      assert.equal(r.result.outcome, 'failed');
      assert.equal(r.result.error?.code, 'sequence_mismatch');
      assert.deepEqual(r.result.outputs.migrationApply, {
        runOutcome: 'failed',
        mutationStarted: false,
        appliedVersions: [],
        reason: 'sequence_mismatch',
        mismatch: { position: 1, expectedVersion: '2', actualVersion: '2' },
      });
      assert.equal(logged('sm_a') + logged('sm_b'), 0, 'no migration statement ran');
      assert.equal(await revisionTableExists(db.url), false, 'not even the revision table was created');
      assert.equal((await history(db.url, dir)).verdict, 'pending');
    });

    it('a refused password and a closed port reach the frame as classified causes, codes only', async () => {
      const db = await database();
      const dir = directory(`${db.name}-cause`, { '1_a.sql': 'CREATE TABLE cause_a (id int);\n' });
      const wrong = new URL(db.url);
      wrong.password = 'not-the-password';
      const read = await runner('migration-history', {
        PTAH_DB_URL: wrong.toString(),
        PTAH_EXPECTED_DATABASE_ENGINE: engine.name,
        PTAH_MIGRATIONS_DIR: dir,
      });
      assert.equal(read.result.outcome, 'failed');
      assert.equal(read.result.error?.code, 'history_read_failed');
      assert.deepEqual(
        read.result.cause,
        engine.name === 'postgres'
          ? { kind: 'database', sqlstate: '28P01' }
          : { kind: 'database', sqlstate: '28000', errno: 1045 },
      );
      assert.ok(!read.stdout.includes('not-the-password'), 'no password in the frame');

      // Nothing listens on the port: ptah connects before any lock or statement, so nothing ran.
      const closed = new URL(db.url);
      closed.port = String(await freePort());
      const run = await apply(
        { url: closed.toString(), identity: targetReport(closed.toString()).identityDigest },
        dir,
        sequenceOf(await history(db.url, dir)),
      );
      assert.equal(run.result.outcome, 'failed', JSON.stringify(run.result.error));
      assert.deepEqual(run.result.outputs.migrationApply, {
        runOutcome: 'failed',
        mutationStarted: false,
        appliedVersions: [],
        reason: 'connection_failed',
      });
      assert.deepEqual(run.result.cause, { kind: 'connection', failure: 'refused' });
      assert.equal(logged('cause_a'), 0, 'no migration statement ran');
    });

    it('refuses a history restored backwards under the lock (history fingerprint) and another target', async () => {
      const db = await database();
      const dir = directory(`${db.name}-hf`, { '1_a.sql': 'CREATE TABLE hf_a (id int);\n' });
      const read = await history(db.url, dir);
      const wrong = `sha256:${'0'.repeat(64)}`;
      const r = await apply(db, dir, sequenceOf(read), { PTAH_EXPECTED_HISTORY_FINGERPRINT: wrong });
      assert.equal(r.result.error?.code, 'history_mismatch', r.stderr);
      assert.equal(r.result.outputs.migrationApply?.mutationStarted, false);

      const other = await apply({ url: db.url, identity: `sha256:${'1'.repeat(64)}` }, dir, sequenceOf(read));
      assert.equal(other.exitCode, 2);
      assert.equal(other.result.outcome, 'refused');
      assert.equal(other.result.error?.code, 'target_identity_mismatch');
      assert.equal(other.result.childExitCode, -1, 'ptah never started');
      assert.equal(logged('hf_a'), 0);
    });

    it('a none-mode file failing after its first statement is Partial with position and codes, then dirty', async () => {
      const db = await database();
      const files: Files = {
        '1_ok.sql': 'CREATE TABLE pa_one (id int);\n',
        '2_half.sql':
          '-- ptah:txmode none\nCREATE TABLE pa_two (id int);\nINSERT INTO pa_missing VALUES (1);\nCREATE TABLE pa_three (id int);\n',
      };
      const dir = directory(`${db.name}-pa`, files);
      const read = await history(db.url, dir);
      const r = await apply(db, dir, sequenceOf(read));
      assert.equal(r.exitCode, 5, r.stderr);
      assert.equal(r.result.outcome, 'uncertain');
      assert.equal(r.result.error?.code, 'outcome_partial');
      assert.deepEqual(r.result.outputs.migrationApply, {
        runOutcome: 'partial',
        mutationStarted: true,
        appliedVersions: ['1'],
        reason: 'statement_failed',
        stoppedAt: {
          version: '2',
          position: 2,
          statementsApplied: 1,
          sqlstate: engine.missingTable.sqlstate,
          ...(engine.missingTable.errno !== undefined ? { errno: engine.missingTable.errno } : {}),
        },
      });
      assert.equal(logged('CREATE TABLE pa_two'), 1);
      assert.equal(logged('pa_three'), 0, 'nothing after the failing statement ran');
      for (const text of [r.stdout, r.termination]) assert.ok(!text.includes('pa_missing'), 'no SQL text');
      assert.match(r.termination, /"runOutcome":"partial"/);
      assert.match(r.termination, /"stoppedAt":\{"version":"2","position":2/);

      const dirty = await history(db.url, dir);
      assert.equal(dirty.verdict, 'dirty');
      assert.deepEqual(dirty.dirtyVersions, ['2']);
      assert.equal(dirty.currentVersion, '2');
    });

    it('a run killed mid-statement is uncertain, never narrowed', async () => {
      const db = await database();
      const dir = directory(`${db.name}-kill`, {
        '1_slow.sql': `-- ptah:txmode none\nCREATE TABLE kill_marker (id int);\n${engine.sleep(61)};\n`,
      });
      const read = await history(db.url, dir);
      const stop = new AbortController();
      const running = apply(
        db,
        dir,
        sequenceOf(read),
        { PTAH_TERMINATION_GRACE_PERIOD_SECONDS: '3' },
        stop.signal,
      );
      // The Pod is asked to stop while the long statement runs: ptah gets SIGTERM, finishes nothing in
      // 2 s, and is killed.
      await waitForStatement(engine.sleep(61));
      stop.abort();
      const r = await running;
      assert.equal(r.exitCode, 5, r.stderr);
      assert.equal(r.result.outcome, 'uncertain');
      assert.equal(r.result.error?.code, 'outcome_unknown');
      assert.equal(r.result.childExitCode, -1, 'ptah was killed');
      assert.deepEqual(r.result.outputs.migrationApply, {
        runOutcome: 'unknown',
        mutationStarted: true,
        appliedVersions: [],
      });
      assert.match(r.termination, /"outcome":"uncertain"/);
      assert.match(
        r.termination,
        /"migration":\{"runOutcome":"unknown","mutationStarted":true,"appliedCount":0\}/,
      );
      // The server still runs the orphaned statement; end it so the next reading is not racing it.
      await endSessionsRunning(engine.sleep(61));
      assert.equal((await history(db.url, dir)).verdict, 'dirty', 'the history shows the run did not finish');
    });

    it('a Pod asked to stop finishes the running file and stops before the next: failed, interrupted', async () => {
      const db = await database();
      const dir = directory(`${db.name}-term`, {
        '1_slowish.sql': `CREATE TABLE term_one (id int);\n${engine.sleep(4)};\n`,
        '2_next.sql': 'CREATE TABLE term_two (id int);\n',
      });
      const read = await history(db.url, dir);
      const stop = new AbortController();
      const running = apply(db, dir, sequenceOf(read), {}, stop.signal);
      await waitForStatement(engine.sleep(4));
      stop.abort();
      const r = await running;
      assert.equal(r.exitCode, 1, r.stderr);
      assert.equal(r.result.outcome, 'failed');
      assert.equal(r.result.error?.code, 'interrupted');
      assert.deepEqual(r.result.outputs.migrationApply, {
        runOutcome: 'failed',
        mutationStarted: true,
        appliedVersions: ['1'],
        reason: 'interrupted',
        stoppedAt: { version: '2' },
      });
      assert.equal(logged('term_two'), 0, 'the next file never started');
      const after = await history(db.url, dir);
      assert.equal(after.verdict, 'pending');
      assert.deepEqual(
        after.pending.map((p) => p.version),
        ['2'],
      );
    });

    it('a connection lost mid-statement is reported unknown by ptah and framed uncertain', async () => {
      const db = await database();
      const dir = directory(`${db.name}-lost`, {
        '1_ok.sql': 'CREATE TABLE lost_one (id int);\n',
        '2_slow.sql': `-- ptah:txmode none\nCREATE TABLE lost_two (id int);\n${engine.sleep(62)};\n`,
      });
      const read = await history(db.url, dir);
      const running = apply(db, dir, sequenceOf(read));
      await waitForStatement(engine.sleep(62));
      assert.ok((await endSessionsRunning(engine.sleep(62))) > 0, 'the session was ended');
      const r = await running;
      assert.equal(r.exitCode, 5, r.stderr);
      assert.equal(r.result.outcome, 'uncertain');
      assert.equal(r.result.error?.code, 'outcome_unknown');
      const run = r.result.outputs.migrationApply!;
      assert.equal(run.runOutcome, 'unknown');
      assert.equal(run.reason, 'connection_lost');
      assert.deepEqual(run.appliedVersions, ['1']);
      assert.equal(run.stoppedAt?.version, '2');
      assert.equal(run.stoppedAt?.position, 2);
      assert.equal(run.stoppedAt?.statementsApplied, undefined, 'how far it got is not known');
    });
  });
}
