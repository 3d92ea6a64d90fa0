import { test } from 'node:test';
import assert from 'node:assert/strict';
import { splitStatements, StatementSplitError } from '../../../src/engine/migrations/statement-splitter.ts';

const texts = (sql: string, d: 'postgres' | 'mysql') => splitStatements(sql, d).map((s) => s.sql);

test('PostgreSQL: semicolons inside strings, identifiers, comments and dollar quotes do not split', () => {
  const sql = [
    "INSERT INTO t VALUES ('a;b', 'it''s;');",
    'CREATE TABLE "we;ird" (id int); -- trailing; comment',
    '/* outer /* nested; */ still comment; */',
    'CREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $body$ BEGIN RETURN 1; END; $body$;',
    "DO $$ BEGIN PERFORM 'x;'; END $$;",
    "SELECT E'back\\'slash;';",
    'SELECT 1',
  ].join('\n');
  assert.deepEqual(texts(sql, 'postgres'), [
    "INSERT INTO t VALUES ('a;b', 'it''s;')",
    'CREATE TABLE "we;ird" (id int)',
    '-- trailing; comment\n/* outer /* nested; */ still comment; */\nCREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $body$ BEGIN RETURN 1; END; $body$',
    "DO $$ BEGIN PERFORM 'x;'; END $$",
    "SELECT E'back\\'slash;'",
    'SELECT 1',
  ]);
});

test('positions count statements only, 1-based, with the line each starts on', () => {
  const split = splitStatements(
    '-- header only\n\nCREATE TABLE a (id int);\n;\n  -- nothing\nSELECT 2;\n-- tail',
    'postgres',
  );
  assert.deepEqual(
    split.map((s) => [s.index, s.line]),
    [
      [1, 3],
      [2, 6],
    ],
  );
});

test('MySQL: backslash escapes, backticks, # comments and /*! */ code', () => {
  const sql =
    "INSERT INTO t VALUES ('a\\';b');\n# note; here\nCREATE TABLE `x;y` (id int);\n/*!40101 SET NAMES utf8 */;\nSELECT \"q;\"";
  assert.deepEqual(texts(sql, 'mysql'), [
    "INSERT INTO t VALUES ('a\\';b')",
    '# note; here\nCREATE TABLE `x;y` (id int)',
    '/*!40101 SET NAMES utf8 */',
    'SELECT "q;"',
  ]);
  // In PostgreSQL a backslash is an ordinary character in a standard string.
  assert.deepEqual(texts("SELECT 'a\\'; SELECT 2", 'postgres'), ["SELECT 'a\\'", 'SELECT 2']);
});

test('unterminated quotes and bodies are errors that name the line', () => {
  assert.throws(() => splitStatements("SELECT 1;\nSELECT 'open", 'postgres'), StatementSplitError);
  assert.throws(() => splitStatements('SELECT $x$ never closed', 'postgres'), /line 1/);
  assert.throws(() => splitStatements('/* open', 'mysql'), /comment/);
});
