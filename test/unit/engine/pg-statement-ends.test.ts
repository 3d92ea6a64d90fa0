import { strict as assert } from 'node:assert';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { statementEndAfter } from '../../../src/engine/pg/pg-statement-ends.ts';
import { ensureParser, parseSync } from '../../../src/engine/pg/pg-parser.ts';

/** Every end the scan finds from the start, each at least one character past the last. */
function ends(sql: string): number[] {
  const out: number[] = [];
  let from = 0;
  for (;;) {
    const end = statementEndAfter(sql, from, from);
    if (end < 0) return out;
    out.push(end);
    from = end + 1;
  }
}

describe('statementEndAfter: where a text can be cut between statements', () => {
  test('a ; ending a line inside a literal, a quoted name, a comment or a dollar body is no end', async () => {
    await ensureParser();
    const inside = [
      "SELECT 'a;\nb';\n",
      "SELECT 'it''s;\n';\n",
      "SELECT E'\\';\n';\n",
      "SELECT E'\\\\';\n",
      'SELECT 1 AS "x;\ny";\n',
      'SELECT 1 AS "x"";\n";\n',
      'SELECT 1; -- a; comment;\nSELECT 2;\n',
      'SELECT /* a;\n /* nested;\n */ still;\n */ 1;\n',
      'CREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $$ BEGIN;\nRETURN 1;\nEND $$;\n',
      'CREATE FUNCTION f() RETURNS text LANGUAGE sql AS $body$ SELECT $$;\n$$ $body$;\n',
      'CREATE FUNCTION "a$b"(int) RETURNS int LANGUAGE sql AS $f$ SELECT $1;\n $f$;\n',
    ];
    for (const sql of inside) {
      const found = ends(sql);
      // Each text's statements end where the parser says they do, and nowhere else.
      const tree = parseSync(sql) as { stmts: { stmt_location?: number; stmt_len: number }[] };
      const parsed = tree.stmts
        .map((s) => (s.stmt_location ?? 0) + s.stmt_len)
        .filter((end) => sql.charCodeAt(end) === 0x3b && sql.charCodeAt(end + 1) === 0x0a);
      assert.deepEqual(found, parsed, JSON.stringify(sql));
      assert.ok(found.length > 0, JSON.stringify(sql));
    }
  });

  test('a word with $ in it is no dollar quote, and $1 is a parameter', () => {
    assert.deepEqual(ends('SELECT a$b$ FROM t;\nSELECT $1;\n'), [18, 29]);
  });

  test('nothing before atLeast, and -1 when no end follows', () => {
    const sql = 'SELECT 1;\nSELECT 2;\nSELECT 3';
    assert.equal(statementEndAfter(sql, 0, 0), 8);
    assert.equal(statementEndAfter(sql, 0, 9), 18);
    assert.equal(statementEndAfter(sql, 0, 19), -1);
    assert.equal(statementEndAfter("SELECT 'unterminated;\n", 0, 0), -1);
  });

  test('a real dump full of function bodies cuts only where its statements end', async () => {
    await ensureParser();
    const sql = readFileSync('test/fixtures/real-schemas/musicbrainz/schema.sql', 'utf8');
    const tree = parseSync(sql.replace(/^\\[a-z].*$/gm, (m) => ' '.repeat(m.length))) as {
      stmts: { stmt_location?: number; stmt_len: number }[];
    };
    // Statement ends in UTF-16 units (the dump is ASCII, so bytes are units).
    const statementEnds = new Set(tree.stmts.map((s) => (s.stmt_location ?? 0) + s.stmt_len));
    const found = ends(sql);
    assert.ok(found.length > 1_000, `${found.length} ends`);
    for (const end of found) assert.ok(statementEnds.has(end), `a cut at ${end} ends no statement`);
  });
});
