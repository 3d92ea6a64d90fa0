// The inspector parses the catalog's DDL from once-parsed pieces (pg-catalog-statements.ts): column and
// constraint bodies, index texts past their names, foreign keys past the table they reference. On a real
// PostgreSQL, for the real public schemas and for names chosen to trip the templates, the live model from
// the pieces must be exactly the one parsing the whole text gives, and the pieces path must be the one
// taken (no silent fallback to the whole text).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { startPostgres, type PostgresServer } from '../../env/postgres.ts';
import { postgresDialect as dialect } from '../../../src/engine/pg/pg-dialect.ts';
import { ensureParser } from '../../../src/engine/pg/pg-parser.ts';
import { modelFromCatalog, readCatalog } from '../../../src/engine/pg/pg-inspector.ts';

const PG_BIN = process.env['PTAH_PG_BIN'] ?? '/usr/lib/postgresql/15/bin';
const DIR = join(import.meta.dirname, '../../fixtures/real-schemas');

/** Foreign keys whose referenced names a template could mistake: quoted, dotted, keywords, another schema. */
const TRICKY = `
CREATE SCHEMA "Other Schema";
CREATE SCHEMA app;
CREATE TABLE "Weird ""Name"" (x)" (id int PRIMARY KEY);
CREATE TABLE "select" (id int PRIMARY KEY, "REFERENCES select(" int UNIQUE);
CREATE TABLE "a.b" (id int PRIMARY KEY);
CREATE TABLE "Other Schema".target (id int PRIMARY KEY, k int, UNIQUE (id, k));
CREATE TABLE app.t (id int PRIMARY KEY);
CREATE TABLE refs (
  id int PRIMARY KEY,
  w int REFERENCES "Weird ""Name"" (x)" (id) ON DELETE CASCADE,
  s int REFERENCES "select" (id) MATCH FULL DEFERRABLE INITIALLY DEFERRED,
  "REFERENCES select(" int REFERENCES "select" ("REFERENCES select(") ON UPDATE SET NULL,
  ab int REFERENCES "a.b" (id),
  o int, ok int,
  a int REFERENCES app.t (id) ON DELETE SET NULL,
  self int REFERENCES refs (id),
  FOREIGN KEY (o, ok) REFERENCES "Other Schema".target (id, k) ON DELETE SET NULL
);
ALTER TABLE refs ADD CONSTRAINT late FOREIGN KEY (ab) REFERENCES "a.b" (id) NOT VALID;
CREATE TABLE app.back (id int PRIMARY KEY, r int REFERENCES public.refs (id), t int REFERENCES app.t (id));
`;

describe('catalog DDL from once-parsed pieces (postgres)', () => {
  let server: PostgresServer;
  let admin: pg.Client;
  before(async () => {
    server = await startPostgres();
    admin = new pg.Client({ connectionString: server.adminUrl });
    await admin.connect();
    await ensureParser();
  });
  after(async () => {
    await admin?.end();
    await server?.stop();
  });

  const loaded = async (db: string, args: readonly string[]) => {
    await admin.query(`CREATE DATABASE ${db}`);
    const url = server.adminUrl.replace(/\/postgres$/, `/${db}`);
    execFileSync(join(PG_BIN, 'psql'), ['-q', '-X', '-v', 'ON_ERROR_STOP=1', ...args, url], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    return url;
  };

  const same = async (url: string) => {
    const session = await dialect.connect(url);
    try {
      const { defaultSchema, rows } = await readCatalog(session);
      const pieces = modelFromCatalog(defaultSchema, rows, 'pieces only');
      assert.deepEqual(pieces, modelFromCatalog(defaultSchema, rows, 'whole'));
      return pieces;
    } finally {
      await session.close();
    }
  };

  test('foreign keys to names a template could mistake', async () => {
    const model = await same(await loaded('tricky', ['-c', TRICKY]));
    const refs = model.tables.find((t) => t.name === 'refs');
    const targets = (refs?.constraints ?? []).flatMap((c) =>
      c.kind === 'ForeignKey' ? [`${c.refSchema}.${c.refTable}`] : [],
    );
    assert.deepEqual(
      [...targets].sort(),
      ['Other Schema.target', 'app.t', 'public.Weird "Name" (x)', 'public.a.b', 'public.a.b', 'public.refs']
        .concat(['public.select', 'public.select'])
        .sort(),
    );
  });

  for (const name of readdirSync(DIR).sort())
    test(`real schema ${name}`, async () => {
      // Roles some schemas grant to are cluster objects; a second create is harmless to ignore.
      for (const role of ['graphile_starter', 'graphile_starter_visitor'])
        await admin.query(`CREATE ROLE ${role}`).catch(() => undefined);
      const model = await same(
        await loaded(`real_${name.replace(/[^a-z0-9]/g, '_')}`, ['-f', join(DIR, name, 'schema.sql')]),
      );
      assert.ok(model.tables.length > 0);
    });
});
