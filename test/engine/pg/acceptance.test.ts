// Acceptance properties of the schema engine on a real PostgreSQL: sample schemas converge from empty,
// plans are byte-identical, protected tables refuse, exclusions are invisible, stale plans are refused,
// and a failing statement reports its position and SQLSTATE and leaves the database as it was.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { startPostgres, type PostgresServer } from '../../env/postgres.ts';
import { postgresDialect as dialect } from '../../../src/engine/pg/pg-dialect.ts';
import { applyPlan, drift, inspect, plan } from '../../../src/engine/schema-engine.ts';

const PG_BIN = process.env['PTAH_PG_BIN'] ?? '/usr/lib/postgresql/15/bin';
const SAMPLES = ['dvd-rental.sql', 'music-store.sql', 'northwind-orders.sql'];
const sample = (f: string) => readFileSync(join(import.meta.dirname, '../../fixtures/schemas', f), 'utf8');
const files = (sql: string) => ({ files: [{ path: 'desired.sql', sql }] });

describe('schema engine acceptance (postgres)', () => {
  let server: PostgresServer;
  let n = 0;
  const fresh = async () => {
    const db = `acc_${n++}`;
    const a = new pg.Client({ connectionString: server.adminUrl });
    await a.connect();
    await a.query(`CREATE DATABASE ${db}`);
    await a.end();
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
  before(async () => {
    server = await startPostgres();
  });
  after(async () => {
    await server?.stop();
  });

  for (const f of SAMPLES) {
    test(`sample ${f} converges from an empty database`, async () => {
      const url = await fresh();
      const first = await plan(url, dialect, files(sample(f)));
      assert.equal(first.outcome, 'changes');
      const applied = await applyPlan(url, Buffer.from(first.bytes ?? ''));
      assert.equal(applied.outcome, 'applied', JSON.stringify(applied.failure));
      assert.equal(applied.digest, first.digest);
      const again = await plan(url, dialect, files(sample(f)));
      assert.equal(again.outcome, 'no_changes', again.changes.map((c) => c.kind).join(', '));
      const d = await drift(url, dialect, files(sample(f)));
      assert.equal(d.drifted, false);
      assert.equal(d.total, 0);
      // pg_dump's spelling of the same schema (qualified names, ALTER TABLE ONLY, owned sequences, casts)
      // is the same desired state.
      const dump = execFileSync(
        join(PG_BIN, 'pg_dump'),
        ['--schema-only', '--no-owner', '--no-privileges', url],
        {
          encoding: 'utf8',
        },
      );
      const fromDump = await plan(url, dialect, { files: [{ path: 'dump.sql', sql: dump }] });
      assert.equal(fromDump.outcome, 'no_changes', fromDump.changes.map((c) => c.kind).join(', '));
    });
  }

  test('a sample normalised through a dev database converges too', async () => {
    const url = await fresh();
    const dev = await fresh();
    const source = { ...files(sample('music-store.sql')), devUrl: dev };
    const first = await plan(url, dialect, source);
    assert.equal((await applyPlan(url, Buffer.from(first.bytes ?? ''))).outcome, 'applied');
    assert.equal((await plan(url, dialect, source)).outcome, 'no_changes');
    // The dev database is left empty: the desired SQL ran in a rolled-back transaction.
    assert.equal((await inspect(dev, dialect)).model.tables.length, 0);
  });

  test('two plans of the same inputs are byte-identical', async () => {
    const url = await fresh();
    await sql(url, 'CREATE TABLE legacy (id int PRIMARY KEY, v text); CREATE TABLE "Other" (x int)');
    const a = await plan(url, dialect, files(sample('dvd-rental.sql')));
    const b = await plan(url, dialect, files(sample('dvd-rental.sql')));
    assert.ok((a.bytes ?? '').length > 1000);
    assert.equal(a.bytes, b.bytes);
    assert.equal(
      a.digest,
      `sha256:${createHash('sha256')
        .update(a.bytes ?? '')
        .digest('hex')}`,
    );
    const doc = JSON.parse(a.bytes ?? '{}') as Record<string, unknown>;
    assert.deepEqual(Object.keys(doc).sort(), [
      'destructive',
      'dialect',
      'format_version',
      'from_fingerprint',
      'header',
      'managed_rows',
      'rows_fingerprint',
      'statements',
      'to_fingerprint',
    ]);
    assert.equal(doc['destructive'], true, 'dropping legacy and Other is destructive');
    assert.deepEqual(doc['header'], {
      dropped_tables: 2,
      dropped_table_rows: 0,
      dropped_columns: 0,
      dropped_column_values: 0,
      dropped_schemas: 0,
      rewritten_tables: 0,
    });
    assert.deepEqual(doc['managed_rows'], [
      { columns: ['category_id', 'name'], key: ['category_id'], schema: 'public', table: 'category' },
      { columns: ['language_id', 'name'], key: ['language_id'], schema: 'public', table: 'language' },
    ]);
    assert.match(String(doc['rows_fingerprint']), /^sha256:[0-9a-f]{64}$/);
    assert.ok(!JSON.stringify(doc['managed_rows']).includes('English'));
  });

  test('a protected table in the way refuses the plan with no SQL', async () => {
    const url = await fresh();
    await sql(url, 'CREATE TABLE accounts (id int PRIMARY KEY); CREATE TABLE other (id int PRIMARY KEY)');
    const desired =
      'CREATE TABLE accounts (id int PRIMARY KEY, balance int); CREATE TABLE other (id int PRIMARY KEY, x int);';
    const r = await plan(url, dialect, files(desired), { protectedTables: ['accounts'] });
    assert.equal(r.outcome, 'refused');
    assert.equal(r.bytes, undefined);
    assert.equal(r.plan, undefined);
    assert.match(r.refusal?.reason ?? '', /public\.accounts is protected/);
    // A protected table that is already converged refuses nothing.
    const ok = await plan(
      url,
      dialect,
      files('CREATE TABLE accounts (id int PRIMARY KEY); CREATE TABLE other (id int PRIMARY KEY, x int);'),
      { protectedTables: ['public.accounts'] },
    );
    assert.equal(ok.outcome, 'changes');
  });

  test('an excluded object is neither changed nor reported as drift', async () => {
    const url = await fresh();
    await sql(
      url,
      `CREATE TABLE app (id int PRIMARY KEY); CREATE TABLE audit_log (id int PRIMARY KEY, legacy text);
      INSERT INTO audit_log VALUES (1, 'kept')`,
    );
    const desired = 'CREATE TABLE app (id int PRIMARY KEY, name text);';
    const r = await plan(url, dialect, files(desired), { exclude: ['audit_*'] });
    assert.deepEqual(
      r.changes.map((c) => c.kind),
      ['AddColumn'],
    );
    assert.equal((await applyPlan(url, Buffer.from(r.bytes ?? ''))).outcome, 'applied');
    assert.deepEqual(await sql(url, 'SELECT legacy FROM audit_log'), [{ legacy: 'kept' }]);
    const d = await drift(url, dialect, files(desired), { exclude: ['audit_*'] });
    assert.equal(d.drifted, false);
    const unscoped = await drift(url, dialect, files(desired));
    assert.equal(unscoped.categories.tables_removed, 1);
  });

  test('a stale plan is refused and nothing runs', async () => {
    const url = await fresh();
    await sql(url, 'CREATE TABLE t (id int PRIMARY KEY)');
    const r = await plan(url, dialect, files('CREATE TABLE t (id int PRIMARY KEY, a text);'));
    await sql(url, 'ALTER TABLE t ADD COLUMN sneaky int');
    const applied = await applyPlan(url, Buffer.from(r.bytes ?? ''));
    assert.equal(applied.outcome, 'stale');
    assert.notEqual(applied.actualFingerprint, applied.expectedFingerprint);
    const cols = await sql(
      url,
      "SELECT column_name FROM information_schema.columns WHERE table_name = 't' ORDER BY 1",
    );
    assert.deepEqual(
      cols.map((c) => c['column_name']),
      ['id', 'sneaky'],
    );
  });

  test('two concurrent applies of one plan: one applies, the other is stale', async () => {
    const url = await fresh();
    await sql(url, 'CREATE TABLE t (id int PRIMARY KEY)');
    const r = await plan(
      url,
      dialect,
      files('CREATE TABLE t (id int PRIMARY KEY, a text); CREATE INDEX t_a ON t (a);'),
    );
    const bytes = Buffer.from(r.bytes ?? '');
    const outcomes = await Promise.all([applyPlan(url, bytes), applyPlan(url, bytes)]);
    assert.deepEqual(outcomes.map((o) => o.outcome).sort(), ['applied', 'stale']);
  });

  test('a changed reference row makes a plan stale', async () => {
    const url = await fresh();
    const desired = "CREATE TABLE k (id int PRIMARY KEY, v text); INSERT INTO k VALUES (1, 'a');";
    await sql(url, 'CREATE TABLE k (id int PRIMARY KEY, v text)');
    const r = await plan(url, dialect, files(desired));
    await sql(url, "INSERT INTO k VALUES (1, 'b')");
    assert.equal((await applyPlan(url, Buffer.from(r.bytes ?? ''))).outcome, 'stale');
  });

  test('a failing statement reports position and SQLSTATE and leaves the database as it was', async () => {
    const url = await fresh();
    await sql(
      url,
      "CREATE TABLE t (id int PRIMARY KEY, email text); INSERT INTO t VALUES (1, 'x'), (2, 'x')",
    );
    const r = await plan(
      url,
      dialect,
      files('CREATE TABLE t (id int PRIMARY KEY, email text UNIQUE, added int); CREATE TABLE z (id int);'),
    );
    const statements = r.plan?.statements ?? [];
    const failing = statements.findIndex((s) => s.sql.includes('UNIQUE')) + 1;
    assert.ok(failing > 1, 'statements before the failing one would have changed the database');
    const applied = await applyPlan(url, Buffer.from(r.bytes ?? ''));
    assert.equal(applied.outcome, 'failed');
    assert.equal(applied.failure?.position, failing);
    assert.equal(applied.failure?.sqlstate, '23505');
    const tables = await sql(
      url,
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1",
    );
    assert.deepEqual(
      tables.map((x) => x['table_name']),
      ['t'],
    );
    const cols = await sql(
      url,
      "SELECT column_name FROM information_schema.columns WHERE table_name = 't' ORDER BY 1",
    );
    assert.deepEqual(
      cols.map((c) => c['column_name']),
      ['email', 'id'],
    );
  });

  test('apply waits at most the lock timeout for a lock, then fails with nothing changed', async () => {
    const url = await fresh();
    await sql(url, 'CREATE TABLE busy (id int PRIMARY KEY)');
    const r = await plan(url, dialect, files('CREATE TABLE busy (id int PRIMARY KEY, x int);'));
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE busy IN ACCESS EXCLUSIVE MODE');
      const started = Date.now();
      const applied = await applyPlan(url, Buffer.from(r.bytes ?? ''), { lockTimeoutMs: 300 });
      assert.equal(applied.outcome, 'failed');
      assert.equal(applied.failure?.sqlstate, '55P03');
      assert.ok(Date.now() - started < 10_000);
    } finally {
      await holder.query('ROLLBACK');
      await holder.end();
    }
    const cols = await sql(
      url,
      "SELECT column_name FROM information_schema.columns WHERE table_name = 'busy'",
    );
    assert.deepEqual(
      cols.map((c) => c['column_name']),
      ['id'],
    );
  });

  test('drift and plan only read: every statement they run is a read', async () => {
    const url = await fresh();
    const db = new URL(url).pathname.slice(1);
    await sql(url, 'CREATE TABLE t (id int PRIMARY KEY)');
    const mark = server.statements().length;
    await drift(url, dialect, files(sample('northwind-orders.sql')));
    await plan(url, dialect, files(sample('northwind-orders.sql')));
    const ran = server
      .statements()
      .slice(mark)
      .filter((s) => s.database === db);
    assert.ok(ran.length > 0);
    for (const s of ran)
      assert.match(s.sql, /^(BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY|COMMIT|SELECT\b|SHOW\b)/, s.sql);
  });

  test('dry run validates the exact bytes without a database', async () => {
    const url = await fresh();
    const r = await plan(url, dialect, files('CREATE TABLE a (id int PRIMARY KEY);'));
    const bytes = Buffer.from(r.bytes ?? '');
    const v = await applyPlan(undefined, bytes, { dryRun: true });
    assert.equal(v.outcome, 'validated');
    assert.equal(v.digest, r.digest);
    assert.deepEqual(v.statements, r.plan?.statements);
    await assert.rejects(
      applyPlan(undefined, Buffer.from('{"format_version":2}'), { dryRun: true }),
      /format_version/,
    );
  });

  test('the inspector runs a fixed number of catalog queries whatever the table count', async () => {
    const small = await fresh();
    const big = await fresh();
    await sql(small, 'CREATE TABLE t0 (id int PRIMARY KEY)');
    await sql(
      big,
      Array.from(
        { length: 60 },
        (_, i) => `CREATE TABLE t${i} (id int PRIMARY KEY, v text UNIQUE, p int REFERENCES t0)`,
      )
        .join(';')
        .replace('REFERENCES t0', ''),
    );
    // On one connection, as a dev database is read: the catalog queries, the search path's narrowing and
    // restore, and the transaction's BEGIN and COMMIT.
    const alone = async (url: string) => {
      const session = await dialect.connect(url);
      try {
        await session.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
        const model = await dialect.inspect(session);
        await session.query('COMMIT');
        return { model, roundTrips: session.roundTrips };
      } finally {
        await session.close();
      }
    };
    const a = await alone(small);
    const b = await alone(big);
    assert.equal(b.model.tables.length, 60);
    assert.equal(a.roundTrips, b.roundTrips);
    assert.equal(a.roundTrips, dialect.catalogQueryCount + 2, 'catalog queries plus BEGIN and COMMIT');
    // A command on a database this small opens no reader: the same queries on its one connection.
    for (const url of [small, big]) assert.equal((await inspect(url, dialect)).roundTrips, a.roundTrips);
  });

  test('the catalog is read on readers in the session snapshot, or alone where a reader cannot connect', async () => {
    const url = await fresh();
    const db = new URL(url).pathname.slice(1);
    const tables = Array.from(
      { length: 300 },
      (_, i) =>
        `CREATE TABLE t${i} (id bigint PRIMARY KEY, code text NOT NULL UNIQUE, parent bigint REFERENCES t${i}, at timestamptz DEFAULT now());` +
        `CREATE INDEX t${i}_at ON t${i} (at DESC)`,
    ).join(';');
    await sql(url, tables);
    // Read as a command reads it, readers opened from 300 relations rather than the default 1,000.
    const read = async (target: string, readersFrom?: number) => {
      const session = await dialect.connect(target);
      const readers: { roundTrips: number }[] = [];
      try {
        await session.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
        const model = await dialect.inspect(session, {
          openReader: async () => {
            const reader = await dialect.connect(target);
            readers.push(reader);
            return reader;
          },
          ...(readersFrom !== undefined ? { readersFrom } : {}),
        });
        await session.query('COMMIT');
        return { model, readerRoundTrips: readers.reduce((n, r) => n + r.roundTrips, 0) };
      } finally {
        await session.close();
      }
    };
    const before = server.statements().length;
    const below = await read(url);
    assert.equal(below.readerRoundTrips, 0, 'under the default threshold no reader is opened');
    const withReaders = await read(url, 300);
    assert.ok(withReaders.readerRoundTrips > 0, 'readers took queries');
    const imported = server
      .statements()
      .slice(before)
      .filter((st) => st.database === db && st.sql.includes('SET TRANSACTION SNAPSHOT'));
    assert.ok(imported.length >= 1, 'a reader imported the snapshot');
    assert.deepEqual(withReaders.model, below.model);

    // A role allowed one connection: every reader is refused, and the model is the same one.
    const role = `${db}_one`;
    await sql(
      url,
      `CREATE ROLE ${role} LOGIN PASSWORD 'one-connection' CONNECTION LIMIT 1; GRANT ALL ON SCHEMA public TO ${role}`,
    );
    const tablesOf = (await sql(url, `SELECT tablename FROM pg_tables WHERE schemaname = 'public'`)).map(
      (r) => r['tablename'],
    );
    await sql(url, tablesOf.map((t) => `ALTER TABLE public.${String(t)} OWNER TO ${role}`).join(';'));
    const limited = new URL(url);
    limited.username = role;
    limited.password = 'one-connection';
    const alone = await read(limited.toString(), 300);
    assert.equal(alone.readerRoundTrips, 0);
    assert.deepEqual(alone.model, below.model);
    // And a command as that role plans the same plan.
    const desired = files(`${tables};`);
    const [asOwner, asLimited] = [
      await plan(url, dialect, desired),
      await plan(limited.toString(), dialect, desired),
    ];
    assert.equal(asLimited.outcome, 'no_changes');
    assert.equal(asLimited.bytes, asOwner.bytes);
  });

  test('a schema whose name starts with "pg" is inspected even with standard_conforming_strings off', async () => {
    const url = await fresh();
    const db = new URL(url).pathname.slice(1);
    await sql(url, `ALTER DATABASE ${db} SET standard_conforming_strings = off`);
    await sql(url, 'CREATE SCHEMA pgapp; CREATE TABLE pgapp.accounts (id int PRIMARY KEY)');
    const seen = await inspect(url, dialect);
    assert.deepEqual(
      seen.model.tables.map((t) => `${t.schema}.${t.name}`),
      ['pgapp.accounts'],
    );
  });

  test('a plan loads its desired state while the catalog answers, under the schema the inspection read', async () => {
    const url = await fresh();
    const db = new URL(url).pathname.slice(1);
    await sql(url, `CREATE SCHEMA app; ALTER DATABASE ${db} SET search_path = app`);
    await sql(url, 'CREATE TABLE app.t (id int PRIMARY KEY)');
    const events: string[] = [];
    let inspectionFailed = (): void => undefined;
    const failed = new Promise<void>((resolve) => (inspectionFailed = resolve));
    const spying = (failInspection: boolean): typeof dialect => ({
      ...dialect,
      inspect: async (session, options) => {
        const model = await dialect.inspect(session, {
          ...options,
          defaultSchemaRead: (schema) => {
            events.push(`default schema ${schema}`);
            options?.defaultSchemaRead?.(schema);
          },
        });
        events.push('inspected');
        if (failInspection) {
          inspectionFailed();
          throw new Error('the inspection failed');
        }
        return model;
      },
      loadDesired: async (desired, schema) => {
        events.push(`loading under ${schema}`);
        const model = await dialect.loadDesired(desired, schema);
        // Outlasts the failed inspection by far: the plan must still wait for it.
        if (failInspection) await failed.then(() => setTimeout(300));
        events.push('loaded');
        return model;
      },
    });
    const planned = await plan(url, spying(false), files('CREATE TABLE t (id int PRIMARY KEY);'));
    assert.equal(planned.outcome, 'no_changes', 'the unqualified t is app.t, as the role reads it');
    assert.deepEqual(events.slice(0, 2), ['default schema app', 'loading under app']);
    assert.ok(events.indexOf('loading under app') < events.indexOf('inspected'), events.join(', '));
    // The inspection's own error is the plan's, given only once the load it started has settled.
    events.length = 0;
    await assert.rejects(
      plan(url, spying(true), files('CREATE TABLE t (id int PRIMARY KEY);')),
      /the inspection failed/,
    );
    assert.ok(events.includes('loaded'), events.join(', '));
  });
});
