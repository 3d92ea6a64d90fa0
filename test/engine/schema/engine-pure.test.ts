// The layers that never touch a database: normaliser, desired-state loader, diff order, classification,
// plan-file bytes and scope patterns.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { canonicalDigest, canonicalJson, digestOf } from '../../../src/engine/canonical-json.ts';
import { classify, typeChangeRisk } from '../../../src/engine/classify.ts';
import { diffModels } from '../../../src/engine/diff.ts';
import type { Column, SchemaModel } from '../../../src/engine/model.ts';
import { devStatements, loadDesiredSql } from '../../../src/engine/pg/pg-desired.ts';
import { renderPostgres } from '../../../src/engine/pg/pg-renderer.ts';
import { PlanFileError, readPlan, serialisePlan } from '../../../src/engine/plan-file.ts';
import { excludeObjects } from '../../../src/engine/scope.ts';

const load = (sql: string) => loadDesiredSql([{ path: 'test.sql', sql }], 'public');
const plan = (from: SchemaModel, to: SchemaModel) =>
  diffModels({ from, to, liveRows: [] }).flatMap(renderPostgres);

describe('normaliser', () => {
  test('the catalog spelling and the declared spelling compare equal', async () => {
    const declared =
      await load(`CREATE TABLE t (id int PRIMARY KEY, s varchar(5) DEFAULT 'x' CHECK (s IN ('x', 'y')),
      n numeric(6,2) CHECK (n BETWEEN 0 AND 10), at timestamp(3));`);
    const catalog =
      await load(`CREATE TABLE public.t (id integer NOT NULL, s character varying(5) DEFAULT 'x'::character varying,
      n numeric(6,2), at timestamp(3) without time zone, CONSTRAINT t_pkey PRIMARY KEY (id),
      CONSTRAINT t_s_check CHECK (((s)::text = ANY ((ARRAY['x'::character varying, 'y'::character varying])::text[]))),
      CONSTRAINT t_n_check CHECK (((n >= (0)::numeric) AND (n <= (10)::numeric))));`);
    assert.deepEqual(plan(catalog, declared), []);
  });

  test('different expressions do not compare equal', async () => {
    const a = await load('CREATE TABLE t (id int PRIMARY KEY, n int CHECK (n > 0));');
    const b = await load('CREATE TABLE t (id int PRIMARY KEY, n int CHECK (n >= 0));');
    assert.equal(plan(a, b).length, 2);
  });
});

describe('diff', () => {
  test('the order of declarations does not change the plan', async () => {
    const empty = await load('');
    const x = await load(
      'CREATE TABLE b (id int PRIMARY KEY, a_id int REFERENCES a); CREATE TABLE a (id int PRIMARY KEY); CREATE INDEX ON b (a_id);',
    );
    const y = await load(
      'CREATE TABLE a (id int PRIMARY KEY); CREATE TABLE b (id int PRIMARY KEY, a_id int REFERENCES a); CREATE INDEX ON b (a_id);',
    );
    const px = plan(empty, x);
    assert.deepEqual(px, plan(empty, y));
    assert.match(px[0] ?? '', /^CREATE TABLE "public"\."a"/, 'referenced table first');
    assert.match(px.at(-1) ?? '', /FOREIGN KEY/, 'foreign keys after every table');
  });

  test('every identifier is quoted with inner quotes doubled', async () => {
    const out = plan(await load(''), await load('CREATE TABLE "a""b" ("Select" int PRIMARY KEY);'));
    assert.equal(
      out[0],
      'CREATE TABLE "public"."a""b" (\n  "Select" integer NOT NULL,\n  PRIMARY KEY ("Select")\n)',
    );
  });

  test('keys that compare content keep names with dots and commas apart', async () => {
    const schemas = 'CREATE SCHEMA "a.b"; CREATE SCHEMA a;';
    const targets = `${schemas} CREATE TABLE "a.b".c (id int PRIMARY KEY); CREATE TABLE a."b.c" (id int PRIMARY KEY);
      CREATE TYPE "a.b".e AS ENUM ('x'); CREATE TYPE a."b.e" AS ENUM ('x');`;
    const fkTo = await load(`${targets} CREATE TABLE t (id int PRIMARY KEY, r int REFERENCES "a.b".c (id));`);
    const fkOther = await load(
      `${targets} CREATE TABLE t (id int PRIMARY KEY, r int REFERENCES a."b.c" (id));`,
    );
    assert.ok(plan(fkTo, fkOther).some((s) => s.includes('REFERENCES "a"."b.c"')));
    const typed = await load(`${targets} CREATE TABLE t (id int PRIMARY KEY, v "a.b".e);`);
    const retyped = await load(`${targets} CREATE TABLE t (id int PRIMARY KEY, v a."b.e");`);
    assert.ok(plan(typed, retyped).some((s) => s.includes('TYPE "a"."b.e"')));
    const oneColumn = await load('CREATE TABLE t ("a,b" int, a int, b int, PRIMARY KEY ("a,b"));');
    const twoColumns = await load('CREATE TABLE t ("a,b" int, a int, b int, PRIMARY KEY (a, b));');
    assert.ok(plan(oneColumn, twoColumns).some((s) => s.includes('PRIMARY KEY ("a", "b")')));
  });
});

describe('literals', () => {
  test('a value with a backslash is an E-literal, so standard_conforming_strings=off cannot end it early', async () => {
    const table = 'CREATE TABLE t (id int PRIMARY KEY, v text);';
    const out = plan(
      await load(table),
      await load(String.raw`${table} INSERT INTO t VALUES (1, '\''; DROP TABLE t; --'), (2, 'it''s');`),
    );
    assert.deepEqual(out, [
      String.raw`INSERT INTO "public"."t" ("id", "v") VALUES ('1', E'\\''; DROP TABLE t; --')`,
      `INSERT INTO "public"."t" ("id", "v") VALUES ('2', 'it''s')`,
    ]);
  });
});

describe('classification', () => {
  const col = (name: string, mods = ''): Column => ({
    kind: 'Column',
    name: 'c',
    type: { name, mods, array: false },
    notNull: false,
  });
  test('type changes', () => {
    assert.equal(typeChangeRisk(col('character varying', '(10)'), col('character varying', '(20)')), 'widen');
    assert.equal(
      typeChangeRisk(col('character varying', '(20)'), col('character varying', '(10)')),
      'narrow',
    );
    assert.equal(typeChangeRisk(col('integer'), col('bigint')), 'rewrite');
    assert.equal(typeChangeRisk(col('numeric', '(8,2)'), col('numeric', '(10,2)')), 'widen');
    assert.equal(typeChangeRisk(col('text'), col('integer')), 'narrow');
  });
  test('drops are destructive, additions are not', () => {
    const t = { schema: 'public', name: 't' };
    assert.equal(classify({ kind: 'DropColumn', table: t, column: col('text') }).destructive, true);
    assert.equal(
      classify({ kind: 'AddColumn', table: t, column: col('text'), tableIsNew: false }).severity,
      'safe',
    );
    assert.equal(
      classify({ kind: 'AddColumn', table: t, column: { ...col('text'), notNull: true }, tableIsNew: false })
        .severity,
      'warning',
    );
  });
});

describe('plan file', () => {
  const doc = {
    format_version: 1,
    dialect: 'postgres',
    from_fingerprint: 'sha256:a',
    to_fingerprint: 'sha256:b',
    destructive: false,
    statements: [{ sql: 'SELECT 1', severity: 'safe' as const, reason: 'r' }],
    managed_rows: [],
    rows_fingerprint: 'sha256:c',
  };
  test('bytes are canonical and round-trip', () => {
    const bytes = serialisePlan(doc);
    assert.equal(bytes, canonicalJson(doc) + '\n');
    assert.ok(!bytes.slice(0, -1).includes('\n'));
    assert.deepEqual(readPlan(Buffer.from(bytes)).plan, doc);
  });
  test('invalid plans are rejected with the field named', () => {
    assert.throws(
      () => readPlan(Buffer.from(serialisePlan({ ...doc, format_version: 2 }))),
      /format_version/,
    );
    assert.throws(() => readPlan(Buffer.from('not json')), PlanFileError);
    const bad = { ...doc, statements: [{ sql: 'x', severity: 'scary', reason: '' }] };
    assert.throws(() => readPlan(Buffer.from(JSON.stringify(bad))), /statements\[0\]/);
  });
  test('the header round-trips, a plan without one still reads, and a bad count is rejected', () => {
    const header = {
      dropped_tables: 1,
      dropped_table_rows: 5,
      dropped_columns: 2,
      dropped_column_values: 3,
      dropped_schemas: 0,
      rewritten_tables: 1,
    };
    const withHeader = { ...doc, header };
    assert.deepEqual(readPlan(Buffer.from(serialisePlan(withHeader))).plan, withHeader);
    assert.equal(readPlan(Buffer.from(serialisePlan(doc))).plan.header, undefined);
    const bad = { ...doc, header: { ...header, dropped_tables: -1 } };
    assert.throws(() => readPlan(Buffer.from(serialisePlan(bad))), /"header"/);
  });
});

describe('scope', () => {
  test('exclude patterns remove tables and qualified columns only', async () => {
    const m = await load(
      'CREATE TABLE keep (id int PRIMARY KEY, tmp_col int); CREATE TABLE tmp_x (id int); CREATE TABLE other (tmp_col int);',
    );
    const out = excludeObjects(m, ['tmp_*', 'keep.tmp_col']);
    assert.deepEqual(
      out.tables.map((t) => t.name),
      ['keep', 'other'],
    );
    assert.deepEqual(
      out.tables[0]?.columns.map((c) => c.name),
      ['id'],
    );
    assert.deepEqual(
      out.tables[1]?.columns.map((c) => c.name),
      ['tmp_col'],
    );
  });
});

describe('text search configurations', () => {
  const base = `CREATE TEXT SEARCH CONFIGURATION s (PARSER = default);
    ALTER TEXT SEARCH CONFIGURATION s ADD MAPPING FOR asciiword, word WITH english_stem;`;

  test('created with one ADD MAPPING per list of dictionaries, names qualified', async () => {
    const sql = plan(
      await load(''),
      await load(`${base}
      ALTER TEXT SEARCH CONFIGURATION s ADD MAPPING FOR email WITH public.unaccent, simple;`),
    );
    assert.deepEqual(sql, [
      'CREATE TEXT SEARCH CONFIGURATION "public"."s" (PARSER = "pg_catalog"."default")',
      'ALTER TEXT SEARCH CONFIGURATION "public"."s" ADD MAPPING FOR "asciiword", "word" WITH "pg_catalog"."english_stem"',
      'ALTER TEXT SEARCH CONFIGURATION "public"."s" ADD MAPPING FOR "email" WITH "public"."unaccent", "pg_catalog"."simple"',
    ]);
  });

  test('a changed mapping is set in place: every declared token, the parser’s others dropped', async () => {
    const sql = plan(
      await load(base),
      await load(`${base}
      ALTER TEXT SEARCH CONFIGURATION s DROP MAPPING FOR word;`),
    );
    assert.equal(sql.length, 2);
    assert.equal(
      sql[0],
      'ALTER TEXT SEARCH CONFIGURATION "public"."s" ALTER MAPPING FOR "asciiword" WITH "pg_catalog"."english_stem"',
    );
    assert.match(
      sql[1] ?? '',
      /^ALTER TEXT SEARCH CONFIGURATION "public"\."s" DROP MAPPING IF EXISTS FOR .*"word"/,
    );
    assert.doesNotMatch(sql[1] ?? '', /"asciiword"/);
  });

  test('a configuration constant compares as the catalog prints it', async () => {
    const t = (e: string) => `${base} CREATE TABLE t (id int PRIMARY KEY, b text);
      CREATE INDEX t_b ON t USING gin (${e});`;
    const catalog = await load(t(`to_tsvector('s'::regconfig, b)`));
    for (const e of [
      `to_tsvector('public.s', b)`,
      `to_tsvector('public.s'::regconfig, b)`,
      `to_tsvector('S', b)`,
    ])
      assert.deepEqual(plan(catalog, await load(t(e))), [], e);
    assert.notDeepEqual(plan(catalog, await load(t(`to_tsvector('other.s', b)`))), []);
  });

  test('an ALTER before its CREATE and a twice-mapped token are refused by position', async () => {
    await assert.rejects(
      load(`ALTER TEXT SEARCH CONFIGURATION s ADD MAPPING FOR word WITH simple;\n${base}`),
      /test\.sql:1:1: text search configuration public\.s is altered before it is declared/,
    );
    await assert.rejects(
      load(`${base}\nALTER TEXT SEARCH CONFIGURATION s ADD MAPPING FOR word WITH simple;`),
      /test\.sql:3:1: text search configuration public\.s: token type word is mapped twice/,
    );
  });
});

describe('long desired files', () => {
  // A long text is parsed in pieces cut after a `;` that ends a line (pg-desired.ts, piecesOf): what it
  // declares must be what the whole text declares, wherever the cuts fall.
  const tables = (from: number, n: number) =>
    Array.from({ length: n }, (_, i) => `CREATE TABLE f${from + i} (id int PRIMARY KEY, note text);\n`).join(
      '',
    );
  const filler = (chars: number) => '-- filler, no statement ends here\n'.repeat(Math.ceil(chars / 34));

  test('a cut that falls in a BEGIN ATOMIC body or after a line comment ends no statement', async () => {
    const atomic = await load(
      `${filler(66_000)}CREATE FUNCTION two() RETURNS int LANGUAGE sql\nBEGIN ATOMIC\n  SELECT 1;\n  SELECT 2;\nEND;\n${tables(0, 800)}`,
    );
    const two = atomic.objects?.find((o) => o.name.startsWith('two('));
    assert.ok(two, 'the function is declared');
    assert.match(two.create.join('\n'), /SELECT 1;[\s\S]*SELECT 2;/);
    assert.equal(atomic.tables.length, 800);
    const commented = await load(
      `${filler(66_000)}CREATE TABLE commented (id int PRIMARY KEY) -- ends in a semicolon;\n;\n${tables(0, 800)}`,
    );
    assert.ok(
      commented.tables.find((t) => t.name === 'commented')?.constraints.some((c) => c.kind === 'PrimaryKey'),
    );
    assert.equal(commented.tables.length, 801);
  });

  test('rename annotations and error positions far into a long file are where the file has them', async () => {
    const head = tables(0, 1_500);
    const renamed = `-- ptah:renamed-from old_late\nCREATE TABLE late (\n  id int PRIMARY KEY,\n  body text -- ptah:renamed-from old_body\n);\n`;
    const model = await load(`${head}${renamed}${tables(1_500, 500)}`);
    const late = model.tables.find((t) => t.name === 'late');
    assert.equal(late?.renamedFrom, 'old_late');
    assert.equal(late?.columns.find((c) => c.name === 'body')?.renamedFrom, 'old_body');
    const line = head.split('\n').length + 2;
    await assert.rejects(
      load(`${head}CREATE TABLE broken (\n  id int,\n  note txt text\n);\n${tables(1_500, 500)}`),
      new RegExp(`test\\.sql:${line}:\\d+: SQL syntax error`),
    );
  });

  test('a dev database is sent each statement of a long file as the whole text has it', async () => {
    const statements = await devStatements([{ path: 'test.sql', sql: tables(0, 3_000) }]);
    assert.equal(statements.length, 3_000);
    statements.forEach((s, i) =>
      assert.equal(s.sql, `${i === 0 ? '' : '\n'}CREATE TABLE f${i} (id int PRIMARY KEY, note text)`),
    );
  });

  test('a fingerprint hashed piece by piece is the digest of the whole canonical text', () => {
    // Astral characters (surrogate pairs) and a lone surrogate across many pieces.
    const value = {
      a: '\u{1F600}x'.repeat(50_000),
      b: ['\ud800', -0, 'y'.repeat(70_000)],
      c: { z: 1, y: 2 },
    };
    assert.equal(canonicalDigest(value), digestOf(canonicalJson(value)));
  });

  test('a model is hashed exactly as its canonical text, subtrees long and short handed on whole', () => {
    // Tables past the walked levels, some long enough to be pieces of their own, some short, with
    // non-ASCII and astral text (a piece's UTF-8 bytes are hashed) and keys in two orders.
    const tables = Array.from({ length: 3_000 }, (_, i) => {
      const columns = Array.from({ length: i % 7 === 0 ? 60 : 2 }, (_, c) =>
        c % 2 === 0
          ? { type: 'text', name: `c${c}_\u00e9\u{1F600}` }
          : { name: `c${c}`, type: 'int', nullable: i % 3 === 0 },
      );
      return i % 2 === 0
        ? { schema: 'public', name: `t${i}`, columns }
        : { columns, name: `t${i}`, schema: '\u00fc' };
    });
    const value = { dialect: 'postgres', model: { tables, views: [], z: { deep: { deeper: [1, 'x'] } } } };
    const text = canonicalJson(value);
    assert.ok(text.length > 300_000, 'many pieces');
    assert.equal(canonicalDigest(value), digestOf(text));
    assert.deepEqual(JSON.parse(text), JSON.parse(JSON.stringify(value)));
    assert.ok(
      text.startsWith(
        '{"dialect":"postgres","model":{"tables":[{"columns":[{"name":"c0_\u00e9\u{1F600}","type":"text"}',
      ),
    );
  });

  test('canonical JSON sorts keys whatever order each object lists them in, however many key sets it meets', () => {
    // The same keys in another order, a key set that extends another, and the empty object.
    assert.equal(
      canonicalJson([{ b: 1, a: 2 }, { a: 3, b: 4 }, { b: 5, a: 6, c: 7 }, { b: 8 }, {}]),
      '[{"a":2,"b":1},{"a":3,"b":4},{"a":6,"b":5,"c":7},{"b":8},{}]',
    );
    // Objects keyed by data: more key sets than any cache of key orders holds, each still sorted.
    const many = Array.from({ length: 30_000 }, (_, i) => ({ [`k${i}`]: i, [`j${i}`]: 0, a: 1 }));
    const text = canonicalJson(many);
    many.forEach((_, i) => {
      if (i % 997 === 0) assert.ok(text.includes(`{"a":1,"j${i}":0,"k${i}":${i}}`), `object ${i}`);
    });
    assert.equal(canonicalJson({ z: { y: 1, x: 2 }, a: [] }), '{"a":[],"z":{"x":2,"y":1}}');
  });

  test('canonical JSON is the same text at every depth, whichever way a level is written', () => {
    // Below its first levels a value is written by JSON.stringify from a key-sorted copy; these are what a
    // copy could get wrong: array-index keys (listed first by JavaScript), undefined and function members,
    // holes, and astral characters.
    const odd = {
      '10': 'ten',
      '2': 'two',
      b: undefined,
      f: () => 1,
      // Index 1 is a hole.
      a: Object.assign(new Array<unknown>(5), {
        0: undefined,
        2: '\u{1F600}',
        3: '\ud800',
        4: { y: 1, x: [2, { z: null, '01': 0 }] },
      }),
    };
    const expected =
      '{"10":"ten","2":"two","a":[null,null,"\u{1F600}","\\ud800",{"x":[2,{"01":0,"z":null}],"y":1}],"f":null}';
    let nested: unknown = odd;
    let wrap = (text: string) => text;
    for (let depth = 0; depth < 8; depth++) {
      assert.equal(canonicalJson(nested), wrap(expected), `at depth ${depth}`);
      const inner = wrap;
      nested = depth % 2 === 0 ? [nested] : { k: nested, c: 1 };
      wrap = depth % 2 === 0 ? (t) => `[${inner(t)}]` : (t) => `{"c":1,"k":${inner(t)}}`;
    }
  });
});
