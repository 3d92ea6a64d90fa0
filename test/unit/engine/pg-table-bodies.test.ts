import { strict as assert } from 'node:assert';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { canonicalJson } from '../../../src/engine/canonical-json.ts';
import { DesiredStateBuilder, loadDesiredSql } from '../../../src/engine/pg/pg-desired.ts';
import { ensureParser, parseSync } from '../../../src/engine/pg/pg-parser.ts';
import { indexTemplate } from '../../../src/engine/pg/pg-index-templates.ts';
import { tableBodiesApart } from '../../../src/engine/pg/pg-table-bodies.ts';
import { constraintTemplate } from '../../../src/engine/pg/pg-constraint-templates.ts';

const elementsOf = (sql: string) => tableBodiesApart(sql)?.bodies.map((b) => b.elements);

describe('tableBodiesApart: plain CREATE TABLE bodies found without parsing', () => {
  test('a body is split at its top-level commas, and blanked keeping every offset and line', () => {
    const sql =
      'CREATE TABLE a (\n  id bigint NOT NULL,\n  n numeric(12,2) CHECK (n IN (1, 2)),\n  s text DEFAULT \'x, y\',\n  "q,""" int\n);\n' +
      'CREATE UNLOGGED TABLE IF NOT EXISTS "S".t(x int);\n';
    const apart = tableBodiesApart(sql);
    assert.ok(apart);
    assert.deepEqual(
      apart.bodies.map((b) => b.elements),
      [
        ['id bigint NOT NULL', 'n numeric(12,2) CHECK (n IN (1, 2))', "s text DEFAULT 'x, y'", '"q,""" int'],
        ['x int'],
      ],
    );
    assert.equal(apart.text.length, sql.length);
    assert.equal(apart.text.split('\n').length, sql.split('\n').length);
    assert.equal(
      apart.text.replace(/ +/g, ' '),
      'CREATE TABLE a (\n \n \n \n \n);\nCREATE UNLOGGED TABLE IF NOT EXISTS "S".t( );\n',
    );
    assert.deepEqual(
      apart.bodies.map((b) => sql.slice(b.byteOffset, b.byteOffset + 1)),
      ['(', '('],
    );
  });

  test('a comma inside brackets or parentheses does not split', () => {
    assert.deepEqual(elementsOf('CREATE TABLE t (a int[] DEFAULT ARRAY[1, 2], b numeric(6, 2));\n'), [
      ['a int[] DEFAULT ARRAY[1, 2]', 'b numeric(6, 2)'],
    ]);
  });

  test('byte offsets count UTF-8 bytes of the text before a body', () => {
    const sql = "COMMENT ON SCHEMA public IS 'café';\nCREATE TABLE t (id int);\n";
    const apart = tableBodiesApart(sql);
    assert.equal(apart?.bodies[0]?.byteOffset, Buffer.from(sql).indexOf('(id'));
  });

  test('anything the reading is not sure of is left to the parser', () => {
    const left = [
      'CREATE TABLE t (id int -- a comment\n);\n',
      'CREATE TABLE t (id int /* a comment */);\n',
      "CREATE TABLE t (s text DEFAULT E'a\\'b');\n",
      'CREATE TABLE t (s text DEFAULT $$a$$);\n',
      "CREATE TABLE t (s text DEFAULT 'café');\n",
      'CREATE TABLE t (id int) INHERITS (p);\n',
      'CREATE TABLE t (id int) PARTITION BY RANGE (id);\n',
      'CREATE TABLE t PARTITION OF p FOR VALUES IN (1);\n',
      'CREATE TABLE t OF typ (id WITH OPTIONS NOT NULL);\n',
      'CREATE TEMP TABLE t (id int);\n',
      'CREATE SCHEMA s CREATE TABLE t (id int);\n',
      'CREATE TABLE t (id int); CREATE TABLE u (id int);\n',
      'CREATE TABLE t (id int,);\n',
      'CREATE TABLE t ();\n',
      'CREATE TABLE t (id int)',
      '-- ptah:renamed-from old\nCREATE TABLE t (id int);\n',
      'CREATE FUNCTION f() RETURNS void LANGUAGE plpgsql AS $$\nBEGIN\nCREATE TABLE t (id int);\nEND $$;\n',
      "SELECT '\nCREATE TABLE t (id int);\n';\n",
    ];
    for (const sql of left) assert.equal(elementsOf(sql), undefined, sql);
  });

  test('a table after a comment line, or after a statement the scan skips, is found', () => {
    assert.deepEqual(elementsOf('--\n-- Name: t\n--\n\nCREATE TABLE public.t (\n    id integer\n);\n'), [
      ['id integer'],
    ]);
    assert.deepEqual(
      elementsOf(
        'CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $$ SELECT 1;\n$$;\nCREATE TABLE t (id int);\n',
      ),
      [['id int']],
    );
  });
});

const REAL = join(import.meta.dirname, '../../fixtures/real-schemas');
const CASES = join(import.meta.dirname, '../../cases/pg');

/** The model (or the problems) the desired files give as loaded for a plan, and as loaded statement by statement. */
async function bothWays(sql: string): Promise<[string, string]> {
  const files = [{ path: 'desired.sql', sql }];
  const fast = await loadDesiredSql(files, 'public').then(canonicalJson, (e: Error) => `error: ${e.message}`);
  let whole: string;
  try {
    const b = new DesiredStateBuilder('public');
    b.addFiles(files);
    whole = canonicalJson(b.build());
  } catch (e) {
    whole = `error: ${(e as Error).message}`;
  }
  return [fast, whole];
}

describe('tables whose bodies were parsed apart load as the whole text does', () => {
  test('every real schema', async () => {
    await ensureParser();
    for (const name of readdirSync(REAL)) {
      const [fast, whole] = await bothWays(readFileSync(join(REAL, name, 'schema.sql'), 'utf8'));
      assert.ok(fast === whole, name);
    }
  });

  test('every state of every PostgreSQL case, problems included', async () => {
    await ensureParser();
    let compared = 0;
    for (const file of readdirSync(CASES).filter((f) => f.endsWith('.yaml'))) {
      const cases = parseYaml(readFileSync(join(CASES, file), 'utf8')) as Record<string, unknown>[];
      for (const c of cases)
        for (const key of ['current', 'desired'])
          if (typeof c[key] === 'string' && c[key] !== '') {
            const [fast, whole] = await bothWays(c[key]);
            assert.equal(fast, whole, `${file}: ${String(c['name'])} (${key})`);
            compared++;
          }
    }
    assert.ok(compared > 500, `${compared} states compared`);
  });

  test('a column declared twice, or a shared column that fails, is reported for each table', async () => {
    await ensureParser();
    const sql =
      'CREATE TABLE a (id int, id int);\nCREATE TABLE b (id int, id int);\n' +
      'CREATE TABLE c (x int DEFERRABLE);\nCREATE TABLE d (x int DEFERRABLE);\n';
    const [fast, whole] = await bothWays(sql);
    assert.equal(fast, whole);
    assert.match(
      fast,
      /table public\.a: column id is declared twice[\s\S]*table public\.b: column id is declared twice/,
    );
    assert.match(
      fast,
      /table public\.c: column x: a deferrability[\s\S]*table public\.d: column x: a deferrability/,
    );
  });
});

describe('constraintTemplate: a constraint parsed once per shape, its own names put back', () => {
  test('the names come out as the parser reads them', () => {
    assert.deepEqual(constraintTemplate('CONSTRAINT T1_Pkey PRIMARY KEY (id)'), {
      text: 'CONSTRAINT c PRIMARY KEY (id)',
      name: 't1_pkey',
    });
    assert.deepEqual(
      constraintTemplate(
        'CONSTRAINT "Fk ""x""" FOREIGN KEY (a) REFERENCES "S" . Parent(id) ON DELETE CASCADE',
      ),
      {
        text: 'CONSTRAINT c FOREIGN KEY (a) REFERENCES s.r (id) ON DELETE CASCADE',
        name: 'Fk "x"',
        references: { schema: 'S', table: 'parent' },
      },
    );
    assert.deepEqual(constraintTemplate('CONSTRAINT f FOREIGN KEY (a) REFERENCES t (id)')?.references, {
      table: 't',
    });
  });

  test('a name the parser might not read as that name stays as written', () => {
    // A keyword of any kind, a name PostgreSQL would cut, no name at all.
    assert.equal(constraintTemplate('CONSTRAINT primary PRIMARY KEY (id)'), undefined);
    assert.equal(constraintTemplate('CONSTRAINT name PRIMARY KEY (id)'), undefined);
    assert.equal(constraintTemplate(`CONSTRAINT ${'k'.repeat(64)} PRIMARY KEY (id)`), undefined);
    assert.equal(constraintTemplate('PRIMARY KEY (id)'), undefined);
    assert.equal(constraintTemplate('id int'), undefined);
    // The referenced table is kept as written when it is a keyword, when REFERENCES is written twice, or
    // when no column list follows it.
    for (const body of [
      'FOREIGN KEY (a) REFERENCES "user" (id)',
      'FOREIGN KEY (a) REFERENCES user (id)',
      'FOREIGN KEY ("REFERENCES t (") REFERENCES p (id)',
      'FOREIGN KEY (a) REFERENCES p ON DELETE CASCADE',
    ])
      assert.equal(
        constraintTemplate(`CONSTRAINT f ${body}`)?.text,
        body.startsWith('FOREIGN KEY (a) REFERENCES "user"')
          ? 'CONSTRAINT c FOREIGN KEY (a) REFERENCES r (id)'
          : `CONSTRAINT c ${body}`,
        body,
      );
  });

  test('tables whose constraints share a template load as the whole text does, problems included', async () => {
    await ensureParser();
    const tables = [
      'CREATE SCHEMA app;',
      'CREATE TABLE app.p (id int PRIMARY KEY);',
      'CREATE TABLE p (id int PRIMARY KEY, CONSTRAINT "Uq ""p""" UNIQUE (id));',
      'CREATE TABLE "user" (id int, CONSTRAINT User_Pkey PRIMARY KEY (id));',
      'CREATE TABLE a (id int, p_id int, CONSTRAINT a_pkey PRIMARY KEY (id), CONSTRAINT a_p FOREIGN KEY (p_id) REFERENCES p (id) ON DELETE CASCADE);',
      'CREATE TABLE b (id int, p_id int, CONSTRAINT b_pkey PRIMARY KEY (id), CONSTRAINT b_p FOREIGN KEY (p_id) REFERENCES app.p (id), CONSTRAINT b_u FOREIGN KEY (p_id) REFERENCES "user" (id));',
      `CREATE TABLE d (id int, CONSTRAINT ${'d'.repeat(70)} PRIMARY KEY (id));`,
      'CREATE TABLE f (id int, CONSTRAINT name PRIMARY KEY (id));',
    ];
    const [fast, whole] = await bothWays(tables.join('\n') + '\n');
    assert.equal(fast, whole);
    assert.match(fast, /"name":"Uq \\"p\\""/);
    assert.match(fast, /"name":"user_pkey"/);
    assert.match(fast, /"name":"b_p"[^}]*"refSchema":"app"/);
    // A template whose parse does not read its fixed names where they were put: the text is parsed as written.
    const [litFast, litWhole] = await bothWays(
      "CREATE TABLE c (id int, note text, CONSTRAINT c_note CHECK (note <> 'REFERENCES x ('));\n",
    );
    assert.equal(litFast, litWhole);
    assert.match(litFast, /REFERENCES x \(/);
    // A reserved word as a constraint's name is the parser's error, as written.
    const [badFast, badWhole] = await bothWays(
      'CREATE TABLE e (id int, CONSTRAINT primary PRIMARY KEY (id));\n',
    );
    assert.equal(badFast, badWhole);
    assert.match(badFast, /^error: /);
  });
});

describe('indexTemplate: an index statement parsed once per shape, its own names put back', () => {
  test('the names come out as the parser reads them', () => {
    assert.deepEqual(indexTemplate('CREATE INDEX Ix_User ON public.t USING btree (user_id)'), {
      text: 'CREATE INDEX i ON s.t USING btree (user_id);',
      name: 'ix_user',
      schema: 'public',
      table: 't',
    });
    assert.deepEqual(indexTemplate('CREATE UNIQUE INDEX "a ""b""" ON ONLY "User"(lower(name))'), {
      text: 'CREATE UNIQUE INDEX i ON ONLY t(lower(name));',
      name: 'a "b"',
      table: 'User',
    });
  });

  test('a statement the reading is not sure of stays as written', () => {
    for (const sql of [
      'CREATE INDEX CONCURRENTLY ix ON t (a)',
      'CREATE INDEX IF NOT EXISTS ix ON t (a)',
      'CREATE INDEX ON t (a)',
      'CREATE INDEX index ON t (a)',
      'CREATE INDEX ix ON user (a)',
      `CREATE INDEX ${'x'.repeat(64)} ON t (a)`,
      "CREATE INDEX ix ON t (a) WHERE b <> ';'",
      'CREATE INDEX ix ON t (a) -- why',
      "CREATE INDEX ix ON t (a) WHERE b <> 'é'",
      "CREATE INDEX ix ON t (a) WHERE b <> E'\\\\'",
    ])
      assert.equal(indexTemplate(sql), undefined, sql);
  });

  test('a taken statement is blanked but its ; stays, and its place is the one the parser gives', async () => {
    await ensureParser();
    const sql = "-- café\nCREATE TABLE t (a int);\nCREATE INDEX ix ON t (a);\nCOMMENT ON TABLE t IS 'x';\n";
    const apart = tableBodiesApart(sql);
    assert.equal(apart?.indexes.length, 1);
    assert.equal(apart?.text.length, sql.length);
    assert.match(apart?.text ?? '', /\n {24};\nCOMMENT/);
    const tree = parseSync(sql) as { stmts: { stmt_location?: number; stmt_len: number }[] };
    const parsed = tree.stmts[1];
    assert.deepEqual(
      { from: apart?.indexes[0]?.from, end: apart?.indexes[0]?.end },
      { from: parsed?.stmt_location, end: (parsed?.stmt_location ?? 0) + (parsed?.stmt_len ?? 0) },
    );
  });

  test('tables whose index statements share a template load as the whole text does, problems included', async () => {
    await ensureParser();
    const sql = [
      '-- naïve comment: byte offsets after it count two bytes for one character',
      'CREATE SCHEMA app;',
      'CREATE TABLE app.p (id int, name text, code text);',
      'CREATE TABLE "user" (id int, name text);',
      'CREATE TABLE q (id int, name text);',
      'CREATE INDEX p_name ON app.p USING btree (name);',
      "CREATE UNIQUE INDEX p_code ON ONLY app.p (code) WHERE code <> '';",
      'CREATE INDEX User_Name ON "user" (lower(name));',
      'CREATE INDEX q_name ON q (lower(name));',
      'CREATE INDEX q_id ON q (id DESC NULLS LAST) WITH (fillfactor = 70);',
      'CREATE INDEX q_a ON q (id); CREATE INDEX q_b ON q (name);',
      'CREATE INDEX index ON q (id);',
      "COMMENT ON INDEX q_name IS 'by name';",
    ].join('\n');
    const [fast, whole] = await bothWays(sql + '\n');
    assert.equal(fast, whole);
    assert.match(fast, /"name":"user_name"/);
    assert.match(fast, /"name":"p_name"[^}]*/);
    // The names put back are the statement's own: a table's index is on that table.
    const [missing, missingWhole] = await bothWays(
      'CREATE TABLE a (id int);\nCREATE INDEX b_id ON b (id);\n',
    );
    assert.equal(missing, missingWhole);
    assert.match(missing, /^error: .*\bb\b/);
  });
});
