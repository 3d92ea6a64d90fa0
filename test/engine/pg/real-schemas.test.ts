// Real public schemas nobody here wrote (test/fixtures/real-schemas/<name>/schema.sql, each with a SOURCE.md)
// on a real PostgreSQL: (a) a database loaded from the file plans to nothing against it; (b) from an empty
// database, plan, apply and re-plan gives nothing; (c) the two databases' pg_dump --schema-only are the same
// object by object; (d) the loaded database's own pg_dump, plain and with the recommended flags, used as
// the desired state plans to nothing; (e) through --dev-url (the file run in a scratch database, statement
// by statement in the loader's order) from empty, plan, apply and re-plan gives nothing, offline too, and the
// loaded database plans to nothing. A point a schema does not meet yet is a todo naming the gap, so it shows in every run and turns
// into a failure of the todo when fixed, never into silence.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { startPostgres, type PostgresServer } from '../../env/postgres.ts';
import { postgresDialect as dialect } from '../../../src/engine/pg/pg-dialect.ts';
import { applyPlan, plan, type PlanResult } from '../../../src/engine/schema-engine.ts';

const PG_BIN = process.env['PTAH_PG_BIN'] ?? '/usr/lib/postgresql/15/bin';
const DIR = join(import.meta.dirname, '../../fixtures/real-schemas');
const NAMES = readdirSync(DIR).sort();

type Point = 'a' | 'b' | 'c' | 'd' | 'e';

/** What each schema needs that the engine does not manage yet; every entry is a known gap. */
const GAPS: Readonly<Record<string, Partial<Record<Point, string>>>> = {};

/** Roles a schema grants to: cluster objects, created before it is loaded. */
const ROLES: Readonly<Record<string, readonly string[]>> = {
  'graphile-starter': ['graphile_starter', 'graphile_starter_visitor'],
};

const files = (path: string, sql: string) => ({ files: [{ path, sql }] });
const statements = (p: PlanResult) => (p.plan?.statements ?? []).map((s) => s.sql);

function pgDump(url: string, flags: readonly string[] = []): string {
  return execFileSync(join(PG_BIN, 'pg_dump'), ['--schema-only', ...flags, url], {
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
}

/**
 * pg_dump's table of contents: one entry per object (`-- Name: x; Type: T; Schema: s; Owner: o`), each with
 * its SQL. Sorted, so two databases compare object by object whatever order their catalogs list them in.
 * An entry with no SQL says only who owns the object: pg_dump lists schema public when its owner is not
 * the default (pagila runs ALTER SCHEMA public OWNER TO postgres), and with --no-owner nothing else is
 * left of it. Ownership is not managed (issue 8 point 2: accepted and left alone), so such an entry is
 * not an object that differs.
 */
function objectsOf(dump: string): string[] {
  const header = /^--\n-- Name: (.*); Type: (.*); Schema: (.*); Owner: .*\n--\n/gm;
  const heads = [...dump.matchAll(header)];
  const hasSql = (body: string) => body.split('\n').some((l) => l.trim() !== '' && !l.startsWith('--'));
  return heads
    .flatMap((h, i) => {
      const start = (h.index ?? 0) + h[0].length;
      const end = heads[i + 1]?.index ?? dump.length;
      const body = dump
        .slice(start, end)
        .split('\n')
        .filter((l) => !l.startsWith('\\'))
        .join('\n')
        .trim();
      return hasSql(body) ? [`${h[2]} ${h[3]}.${h[1]}\n${body}`] : [];
    })
    .sort();
}

describe('real public schemas converge (postgres)', () => {
  let server: PostgresServer;
  let admin: pg.Client;
  let n = 0;
  const fresh = async () => {
    const db = `real_${n++}`;
    await admin.query(`CREATE DATABASE ${db}`);
    return server.adminUrl.replace(/\/postgres$/, `/${db}`);
  };
  before(async () => {
    server = await startPostgres();
    admin = new pg.Client({ connectionString: server.adminUrl });
    await admin.connect();
    for (const r of new Set(Object.values(ROLES).flat())) await admin.query(`CREATE ROLE "${r}"`);
  });
  after(async () => {
    await admin?.end();
    await server?.stop();
  });

  for (const name of NAMES) {
    const path = `${name}/schema.sql`;
    const sql = readFileSync(join(DIR, path), 'utf8');
    const gaps = GAPS[name] ?? {};
    const point = (p: Point, title: string, body: () => Promise<void>) =>
      test(`${name}: (${p}) ${title}`, gaps[p] === undefined ? {} : { todo: gaps[p] }, body);

    describe(name, () => {
      let loaded = '';
      let applied: string | undefined;
      before(async () => {
        assert.ok(readFileSync(join(DIR, name, 'SOURCE.md'), 'utf8').includes('Commit:'), 'SOURCE.md');
        loaded = await fresh();
        execFileSync(
          join(PG_BIN, 'psql'),
          ['-q', '-X', '-v', 'ON_ERROR_STOP=1', '-f', join(DIR, path), loaded],
          {
            stdio: ['ignore', 'ignore', 'pipe'],
          },
        );
      });

      point('a', 'a database loaded from the file plans to nothing', async () => {
        const p = await plan(loaded, dialect, files(path, sql));
        assert.deepEqual(statements(p), []);
        assert.equal(p.outcome, 'no_changes');
      });

      point('b', 'from empty: plan, apply, re-plan gives nothing', async () => {
        const empty = await fresh();
        const first = await plan(empty, dialect, files(path, sql));
        assert.equal(first.outcome, 'changes');
        const a = await applyPlan(empty, Buffer.from(first.bytes ?? ''));
        assert.equal(a.outcome, 'applied', JSON.stringify(a.failure));
        assert.deepEqual(statements(await plan(empty, dialect, files(path, sql))), []);
        applied = empty;
      });

      point('c', "the two databases' pg_dump --schema-only are the same object by object", async () => {
        assert.ok(applied !== undefined, 'needs (b)');
        const flags = ['--no-owner', '--no-privileges'];
        assert.deepEqual(objectsOf(pgDump(applied, flags)), objectsOf(pgDump(loaded, flags)));
      });

      point(
        'd',
        "the database's own pg_dump, plain and --no-owner --no-privileges, plans to nothing",
        async () => {
          for (const flags of [[], ['--no-owner', '--no-privileges']]) {
            const p = await plan(loaded, dialect, files('dump.sql', pgDump(loaded, flags)));
            assert.deepEqual(statements(p), [], `pg_dump ${flags.join(' ')}`);
          }
        },
      );

      point('e', 'through --dev-url: from empty plan, apply, re-plan gives nothing; loaded too', async () => {
        const empty = await fresh();
        const viaDev = { ...files(path, sql), devUrl: await fresh() };
        const first = await plan(empty, dialect, viaDev);
        assert.equal(first.outcome, 'changes');
        const a = await applyPlan(empty, Buffer.from(first.bytes ?? ''));
        assert.equal(a.outcome, 'applied', JSON.stringify(a.failure));
        assert.deepEqual(statements(await plan(empty, dialect, viaDev)), [], 'through --dev-url');
        assert.deepEqual(statements(await plan(empty, dialect, files(path, sql))), [], 'offline');
        assert.deepEqual(statements(await plan(loaded, dialect, viaDev)), [], 'the loaded database');
      });
    });
  }
});
