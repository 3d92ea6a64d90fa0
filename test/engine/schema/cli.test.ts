// `ptah schema` as the operator's runner and a person use it: real processes, a real PostgreSQL, the URL
// in PTAH_DB_URL, JSON on stdout, documented exit codes, and no credential anywhere in the output.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createHash } from 'node:crypto';
import pg from 'pg';
import { startPostgres, type PostgresServer } from '../../env/postgres.ts';

const BIN = join(import.meta.dirname, '../../../bin/ptah.mjs');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function ptah(args: string[], env: Record<string, string | undefined> = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, 'schema', ...args], {
      env: { ...process.env, PTAH_DB_URL: undefined, PTAH_DEV_DB_URL: undefined, ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('ptah schema CLI (postgres)', () => {
  let server: PostgresServer;
  let dir: string;
  let url: string;
  let password: string;
  const desired = () => join(dir, 'desired');
  before(async () => {
    server = await startPostgres();
    url = await server.createDatabase('cli_app');
    password = decodeURIComponent(new URL(url).password);
    dir = mkdtempSync(join(tmpdir(), 'ptah-cli-'));
    const { mkdirSync } = await import('node:fs');
    mkdirSync(desired());
    writeFileSync(
      join(desired(), '01-tables.sql'),
      'CREATE TABLE "Item" (id int PRIMARY KEY, name text NOT NULL);\n',
    );
    writeFileSync(join(desired(), '02-rows.sql'), 'INSERT INTO "Item" VALUES (1, \'one\');\n');
  });
  after(async () => {
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const noSecret = (r: Run) => {
    assert.ok(!r.stdout.includes(password) && !r.stderr.includes(password), 'the password never appears');
  };

  test('plan, dry run, apply, re-plan and drift through the CLI', async () => {
    const env = { PTAH_DB_URL: url };
    const out = join(dir, 'plan.json');
    const p = await ptah(['plan', '--desired', desired(), '--out', out, '--json'], env);
    noSecret(p);
    assert.equal(p.code, 3, p.stderr);
    const report = JSON.parse(p.stdout) as Record<string, unknown>;
    assert.equal(report['planOutcome'], 'Changes');
    const bytes = readFileSync(out);
    assert.equal(report['digest'], `sha256:${createHash('sha256').update(bytes).digest('hex')}`);

    const again = await ptah(
      ['plan', '--file', desired(), '--output', join(dir, 'plan2.json'), '--format', 'json'],
      env,
    );
    assert.deepEqual(readFileSync(join(dir, 'plan2.json')), bytes, 'two plans are byte-identical');
    // The spellings Atlas users type: --from for the database, --to for the desired state.
    const atlas = await ptah(['plan', '--from', url, '--to', desired(), '--out', join(dir, 'plan3.json')]);
    noSecret(atlas);
    assert.equal(atlas.code, 3, atlas.stderr);
    assert.deepEqual(readFileSync(join(dir, 'plan3.json')), bytes, '--from/--to plan the same bytes');
    assert.match(atlas.stdout, /not managed: ownership \(ALTER \.\.\. OWNER TO\) and privileges/);

    const dry = await ptah(['apply', '--plan', out, '--dry-run', '--json']);
    assert.equal(dry.code, 0, dry.stderr);
    const dr = JSON.parse(dry.stdout) as { outcome: string; digest: string; statements: { sql: string }[] };
    assert.equal(dr.outcome, 'validated');
    assert.equal(dr.digest, report['digest']);
    assert.deepEqual(
      dr.statements.map((s) => s.sql),
      (report['statements'] as { sql: string }[]).map((s) => s.sql),
    );

    const before = await ptah(['drift', '--desired', desired(), '--json'], env);
    assert.equal(before.code, 3);
    const drift = JSON.parse(before.stdout) as Record<string, unknown>;
    assert.equal(drift['total'], 2);
    assert.deepEqual(drift['categories'], { data_rows_inserted: 1, tables_added: 1 });
    assert.equal(drift['highest_severity'], 'info');

    const applied = await ptah(['apply', '--plan', out, '--auto-approve', '--json'], env);
    noSecret(applied);
    assert.equal(applied.code, 0, applied.stdout + applied.stderr);
    const a = JSON.parse(applied.stdout) as Record<string, unknown>;
    assert.equal(a['outcome'], 'applied');
    assert.equal(a['digest'], report['digest']);

    const c = new pg.Client({ connectionString: url });
    await c.connect();
    assert.deepEqual((await c.query('SELECT id, name FROM "Item"')).rows, [{ id: 1, name: 'one' }]);
    await c.end();

    const stale = await ptah(['apply', '--plan', out, '--json'], env);
    assert.equal(stale.code, 4);
    assert.equal((JSON.parse(stale.stdout) as Record<string, unknown>)['outcome'], 'stale');

    const none = await ptah(['plan', '--desired', desired(), '--json'], env);
    assert.equal(none.code, 0);
    assert.equal((JSON.parse(none.stdout) as Record<string, unknown>)['planOutcome'], 'NoChanges');
    const clean = await ptah(['observe', '--desired', desired()], env);
    assert.equal(clean.code, 0);
    assert.match(clean.stdout, /^no drift/);
    assert.equal(again.code, 3);
  });

  test('a protected table refuses with exit code 4 and writes no plan', async () => {
    const out = join(dir, 'refused.json');
    const file = join(dir, 'protected.sql');
    writeFileSync(file, 'CREATE TABLE "Item" (id int PRIMARY KEY, name text NOT NULL, extra int);');
    // PostgreSQL folding: the quoted name keeps its case and protects "Item".
    const r = await ptah(['plan', '--desired', file, '--protected-table', '"Item"', '--out', out], {
      PTAH_DB_URL: url,
    });
    assert.equal(r.code, 4);
    assert.match(r.stdout, /plan refused: table public\.Item is protected/);
    assert.throws(() => readFileSync(out));
    // Unquoted, Item folds to item: another table, so "Item" is not protected and the plan is written.
    const folded = await ptah(['plan', '--desired', file, '--protected-table', 'Item', '--out', out], {
      PTAH_DB_URL: url,
    });
    assert.equal(folded.code, 3, folded.stderr);
    rmSync(out);
    const invalid = await ptah(['plan', '--desired', file, '--protected-table', 'a.b.c', '--out', out], {
      PTAH_DB_URL: url,
    });
    assert.notEqual(invalid.code, 0);
    assert.match(invalid.stderr, /protected table name "a\.b\.c" is invalid/);
  });

  test('a URL whose query redirects the connection is refused by name before connecting', async () => {
    for (const param of ['host=127.0.0.2', 'port=1', 'user=postgres', 'options=-csearch_path%3Dx']) {
      const r = await ptah(['inspect', '--json'], { PTAH_DB_URL: `${url}?${param}` });
      noSecret(r);
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, new RegExp(`query parameter "${param.split('=')[0]}" would redirect`));
    }
  });

  test('inspect prints the model, managed objects such as functions, and unmanaged objects', async () => {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    await c.query('CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$');
    await c.query('CREATE TEXT SEARCH DICTIONARY simple2 (TEMPLATE = simple)');
    await c.end();
    const r = await ptah(['inspect', '--url', url, '--format', 'text']);
    noSecret(r);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /table public\.Item \(2 columns/);
    assert.match(r.stdout, /\nobjects: 1\n/);
    assert.match(r.stdout, /\nfunction public\.f\(\)\n/);
    assert.match(r.stdout, /unmanaged text search dictionary public\.simple2 \(left alone\)/);
    const j = await ptah(['inspect', '--json'], { PTAH_DB_URL: url });
    const doc = JSON.parse(j.stdout) as { round_trips: number; counts: { tables: number; objects: number } };
    assert.equal(doc.counts.tables, 1);
    assert.equal(doc.counts.objects, 1);
    assert.equal(doc.round_trips, 14, 'the catalog queries (12) plus BEGIN and COMMIT');
  });

  test('errors name the problem and the fix, never the password', async () => {
    const badPassword = url.replace(encodeURIComponent(password), 'wrong-secret-pw');
    const r = await ptah(['inspect', '--json'], { PTAH_DB_URL: badPassword });
    assert.equal(r.code, 1);
    assert.ok(!r.stdout.includes('wrong-secret-pw') && !r.stderr.includes('wrong-secret-pw'));
    assert.match(r.stderr, /password authentication failed.*check the URL/);
    const noUrl = await ptah(['plan', '--desired', desired()]);
    assert.equal(noUrl.code, 1);
    assert.match(noUrl.stderr, /pass --url or set PTAH_DB_URL/);
    const badSql = join(dir, 'bad.sql');
    writeFileSync(badSql, 'CREATE TABLE ok (id int PRIMARY KEY);\n  DROP TABLE legacy;\n');
    const unsupported = await ptah(['plan', '--desired', badSql], { PTAH_DB_URL: url });
    assert.equal(unsupported.code, 1);
    assert.match(unsupported.stderr, /bad\.sql:2:3: DROP is not a declaration.*remove it/);
    const usage = await ptah(['plan', '--bogus']);
    assert.equal(usage.code, 2);
    const help = await ptah(['--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /exit codes:/);
    const missing = await ptah(['apply']);
    assert.equal(missing.code, 2);
  });
  test('a text search dictionary is listed as unmanaged by plan and inspect, never dropped, and the rest of the file is planned', async () => {
    const db = await server.createDatabase('cli_dictionary');
    const c = new pg.Client({ connectionString: db });
    await c.connect();
    await c.query(`CREATE TEXT SEARCH DICTIONARY simple2 (TEMPLATE = simple);
      CREATE TEXT SEARCH DICTIONARY live_only (TEMPLATE = simple)`);
    await c.end();
    const file = join(dir, 'dictionary.sql');
    writeFileSync(
      file,
      `CREATE TEXT SEARCH DICTIONARY simple2 (TEMPLATE = simple, STOPWORDS = english);
ALTER TEXT SEARCH DICTIONARY simple2 OWNER TO CURRENT_USER;
COMMENT ON TEXT SEARCH DICTIONARY simple2 IS 'words';
CREATE TABLE doc (id int PRIMARY KEY, body text);\n`,
    );
    const env = { PTAH_DB_URL: db };
    const text = await ptah(['plan', '--desired', file], env);
    assert.equal(text.code, 3, text.stderr);
    assert.match(text.stdout, /CREATE TABLE "public"\."doc"/);
    assert.match(text.stdout, /\n-- unmanaged text search dictionary public\.simple2 \(left alone\)\n/);
    assert.match(text.stdout, /\n-- unmanaged text search dictionary public\.live_only \(left alone\)\n/);
    assert.doesNotMatch(text.stdout, /DICTIONARY "public"/, 'no statement creates, alters or drops one');
    const out = join(dir, 'dictionary-plan.json');
    const json = await ptah(['plan', '--desired', file, '--out', out, '--json'], env);
    const doc = JSON.parse(json.stdout) as {
      unmanaged: { kind: string; schema: string; name: string }[];
      unmanaged_count: number;
      statements: { sql: string }[];
    };
    assert.deepEqual(
      doc.unmanaged.filter((u) => u.kind === 'text search dictionary'),
      [
        { kind: 'text search dictionary', schema: 'public', name: 'live_only' },
        { kind: 'text search dictionary', schema: 'public', name: 'simple2' },
      ],
    );
    assert.equal(doc.unmanaged_count, doc.unmanaged.length);
    assert.deepEqual(
      doc.statements.map((s) => s.sql.split('\n')[0]),
      ['CREATE TABLE "public"."doc" ('],
    );
    assert.equal((await ptah(['apply', '--plan', out, '--auto-approve', '--json'], env)).code, 0);
    const none = await ptah(['plan', '--desired', file], env);
    assert.equal(none.code, 0, none.stderr);
    assert.match(none.stdout, /^no changes/);
    assert.match(none.stdout, /\nunmanaged text search dictionary public\.live_only \(left alone\)\n/);
    const inspected = await ptah(['inspect', '--format', 'text'], env);
    assert.match(inspected.stdout, /unmanaged text search dictionary public\.simple2 \(left alone\)/);
    assert.match(inspected.stdout, /unmanaged text search dictionary public\.live_only \(left alone\)/);
  });

  test('the plan header counts drops and rewrites, loud in text and in --json and kept in the plan file', async () => {
    const db = await server.createDatabase('cli_header');
    const c = new pg.Client({ connectionString: db });
    await c.connect();
    await c.query(`CREATE TABLE gone (id int PRIMARY KEY); INSERT INTO gone VALUES (1), (2);
      CREATE TABLE kept (id int PRIMARY KEY, note text, n int); INSERT INTO kept VALUES (1, 'x', 1), (2, NULL, 2)`);
    await c.end();
    const file = join(dir, 'header.sql');
    writeFileSync(file, 'CREATE TABLE kept (id int PRIMARY KEY, n bigint, remark text);\n');
    const env = { PTAH_DB_URL: db };
    const text = await ptah(['plan', '--desired', file], env);
    assert.equal(text.code, 3, text.stderr);
    const lines = text.stdout.split('\n');
    assert.equal(lines[0], '!!! DROPS 1 table (2 rows), 1 column (1 non-NULL value), 0 schemas !!!');
    assert.equal(lines[1], '!!! REWRITES 1 table (exclusive lock while rewriting) !!!');
    assert.match(
      text.stdout,
      /drops a column and its data \(1 non-NULL value\); if remark is this column renamed, declare it with -- ptah:renamed-from note/,
    );
    const out = join(dir, 'header-plan.json');
    const json = await ptah(['plan', '--desired', file, '--out', out, '--json'], env);
    const header = {
      dropped_tables: 1,
      dropped_table_rows: 2,
      dropped_columns: 1,
      dropped_column_values: 1,
      dropped_schemas: 0,
      rewritten_tables: 1,
    };
    assert.deepEqual((JSON.parse(json.stdout) as { header: unknown }).header, header);
    const dry = await ptah(['apply', '--plan', out, '--dry-run', '--json']);
    assert.deepEqual((JSON.parse(dry.stdout) as { header: unknown }).header, header);
  });

  test('apply on a terminal shows the plan and asks: only yes applies', async () => {
    const db = await server.createDatabase('cli_tty');
    const env = { PTAH_DB_URL: db };
    const file = join(dir, 'tty.sql');
    writeFileSync(file, 'CREATE TABLE asked (id int PRIMARY KEY);\n');
    const out = join(dir, 'tty.plan');
    assert.equal((await ptah(['plan', '--desired', file, '--out', out], env)).code, 3);
    // script(1) gives the CLI a pseudo-terminal as its stdin; what is written to script's stdin is typed.
    const onTerminal = (answer: string) =>
      new Promise<Run>((resolve, reject) => {
        const cmd = [process.execPath, BIN, 'schema', 'apply', '--plan', out].map((a) => `'${a}'`).join(' ');
        const child = spawn('script', ['-qec', cmd, '/dev/null'], {
          env: { ...process.env, PTAH_DEV_DB_URL: undefined, ...env },
        });
        let stdout = '';
        child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
        child.on('error', reject);
        child.on('close', (code) => resolve({ code, stdout, stderr: '' }));
        child.stdin.end(`${answer}\n`);
      });
    const exists = async () => {
      const c = new pg.Client({ connectionString: db });
      await c.connect();
      const r = await c.query("SELECT to_regclass('public.asked') IS NOT NULL AS e");
      await c.end();
      return r.rows[0]?.e === true;
    };
    const no = await onTerminal('y');
    noSecret(no);
    assert.match(no.stdout, /CREATE TABLE "public"\."asked"/);
    assert.match(no.stdout, /Apply 1 statement\(s\)\? Only 'yes' applies/);
    assert.match(no.stdout, /not applied/);
    assert.equal(no.code, 4);
    assert.equal(await exists(), false, 'nothing was applied');
    const yes = await onTerminal('yes');
    assert.equal(yes.code, 0, yes.stdout);
    assert.match(yes.stdout, /outcome: applied/);
    assert.equal(await exists(), true);
  });
});
