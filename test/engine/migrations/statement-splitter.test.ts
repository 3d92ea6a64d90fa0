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

test('PostgreSQL: BEGIN ATOMIC bodies, CASE inside them and parentheses keep their semicolons', () => {
  const sql = [
    'CREATE OR REPLACE FUNCTION f(x int) RETURNS int LANGUAGE sql',
    'BEGIN ATOMIC',
    '  SELECT CASE WHEN x > 0 THEN 1 ELSE 0 END;',
    '  SELECT 2;',
    'END;',
    'CREATE PROCEDURE p() LANGUAGE sql BEGIN ATOMIC INSERT INTO t VALUES (1); END;',
    'CREATE RULE r AS ON INSERT TO t DO ALSO (NOTIFY a; NOTIFY b);',
    'BEGIN;',
    'SELECT CASE WHEN true THEN 1 END;',
    'COMMIT',
  ].join('\n');
  const parts = texts(sql, 'postgres');
  assert.equal(parts.length, 6);
  assert.match(parts[0] ?? '', /^CREATE OR REPLACE FUNCTION[\s\S]*SELECT 2;\nEND$/);
  assert.match(parts[1] ?? '', /VALUES \(1\); END$/);
  assert.equal(parts[2], 'CREATE RULE r AS ON INSERT TO t DO ALSO (NOTIFY a; NOTIFY b)');
  assert.deepEqual(parts.slice(3), ['BEGIN', 'SELECT CASE WHEN true THEN 1 END', 'COMMIT']);
});

test('PostgreSQL: the splitter agrees with the real parser (libpg-query) on statement boundaries', async () => {
  const { parse } = await import('libpg-query');
  const corpus = [
    "INSERT INTO t VALUES ('a;b', 'it''s;'); SELECT E'x\\';' ; SELECT $$;$$, $q$ $$ ; $q$",
    'CREATE TABLE "a;b" (c int /* ; */ DEFAULT 1); -- ; tail\nCREATE INDEX i ON "a;b" (c)',
    'CREATE FUNCTION g() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; SELECT CASE WHEN 1=1 THEN 2 END; END; SELECT 3',
    'DO $body$ BEGIN RAISE NOTICE $$;$$; END $body$; /* nested /* ; */ */ SELECT 4',
    'CREATE RULE r AS ON UPDATE TO t DO INSTEAD (SELECT 1; SELECT 2); SELECT begin_x FROM t',
  ];
  for (const sql of corpus) {
    const tree = (await parse(sql)) as { stmts: { stmt_location?: number; stmt_len?: number }[] };
    const expected = tree.stmts.map((s) => {
      const from = s.stmt_location ?? 0;
      const raw = s.stmt_len ? sql.slice(from, from + s.stmt_len) : sql.slice(from);
      // The parser's span starts after the previous semicolon: drop comments and blanks in front.
      return raw.replace(/;\s*$/, '').trim();
    });
    const mine = texts(sql, 'postgres').map((t) =>
      t.replace(/^(?:--[^\n]*\n|\/\*[\s\S]*?\*\/\s*\*\/|\s)+/, ''),
    );
    assert.deepEqual(
      mine,
      expected.map((t) => t.replace(/^(?:--[^\n]*\n|\/\*[\s\S]*?\*\/\s*\*\/|\s)+/, '')),
      sql,
    );
  }
});

test('MySQL: procedures, triggers and events with compound bodies need no DELIMITER', () => {
  const sql = [
    'CREATE DEFINER = CURRENT_USER PROCEDURE fill(IN n INT)',
    'BEGIN',
    '  DECLARE i INT DEFAULT 0;',
    '  DECLARE CONTINUE HANDLER FOR SQLEXCEPTION BEGIN SET i = n; END;',
    '  IF n > 100 THEN SET n = 100; ELSEIF n < 0 THEN SET n = 0; END IF;',
    '  lbl: WHILE i < n DO',
    "    INSERT INTO t VALUES (i, IF(i > 1, 'a;', 'b'), REPEAT('x', 2));",
    '    CASE WHEN i = 5 THEN SET i = i + 1; ELSE SET i = i + 1; END CASE;',
    '  END WHILE lbl;',
    '  REPEAT SET i = i - 1; UNTIL i <= 0 END REPEAT;',
    'END;',
    'CREATE TRIGGER trg BEFORE INSERT ON t FOR EACH ROW BEGIN IF NEW.a IS NULL THEN SET NEW.a = 0; END IF; END;',
    'CREATE EVENT ev ON SCHEDULE EVERY 1 DAY DO BEGIN DELETE FROM t; END;',
    'CREATE TABLE event_log (id int, `begin` int);',
    "SELECT IF(1, 'x', 'y');",
    'BEGIN;',
    'COMMIT',
  ].join('\n');
  const parts = texts(sql, 'mysql');
  assert.equal(parts.length, 7, parts.join('\n---\n'));
  assert.match(parts[0] ?? '', /^CREATE DEFINER[\s\S]*END REPEAT;\nEND$/);
  assert.match(parts[1] ?? '', /^CREATE TRIGGER[\s\S]*END IF; END$/);
  assert.match(parts[2] ?? '', /^CREATE EVENT[\s\S]*DELETE FROM t; END$/);
  assert.deepEqual(parts.slice(3), [
    'CREATE TABLE event_log (id int, `begin` int)',
    "SELECT IF(1, 'x', 'y')",
    'BEGIN',
    'COMMIT',
  ]);
});

test('MySQL: "--" starts a comment only before whitespace', () => {
  assert.deepEqual(texts('SELECT 1--1;\nSELECT 2 -- note; here\n;--\nSELECT 3', 'mysql'), [
    'SELECT 1--1',
    'SELECT 2 -- note; here',
    '--\nSELECT 3',
  ]);
});
