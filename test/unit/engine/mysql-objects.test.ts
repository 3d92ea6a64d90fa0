// The pure half of MySQL's triggers and routines: DELIMITER blocks respelled for the splitter, statements
// read into their parts, bodies compared as code. The catalog half is in test/cases/mysql/objects.yaml.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { withDelimiters } from '../../../src/engine/mysql/mysql-delimiters.ts';
import { bodyKey, parseObjectStatement } from '../../../src/engine/mysql/mysql-objects.ts';

describe('DELIMITER blocks', () => {
  test('each delimiter becomes a semicolon and every other character keeps its place', () => {
    const sql =
      "DELIMITER ;;\nCREATE TRIGGER t AFTER INSERT ON x FOR EACH ROW BEGIN SET @a = ';;'; END;;\nDELIMITER ;\nSELECT 1;";
    const out = withDelimiters(sql);
    assert.equal(out.length, sql.length);
    assert.deepEqual(
      out.split('\n').map((l) => l.trimEnd()),
      ['', "CREATE TRIGGER t AFTER INSERT ON x FOR EACH ROW BEGIN SET @a = ';;'; END;", '', 'SELECT 1;'],
    );
  });
  test('a delimiter inside a comment or a quoted name is left alone', () => {
    const out = withDelimiters('DELIMITER $$\nCREATE PROCEDURE `a$$b`() BEGIN /* $$ */ SELECT 1; END $$\n');
    assert.match(out, /`a\$\$b`\(\) BEGIN \/\* \$\$ \*\/ SELECT 1; END ; $/m);
  });
  test('a file without DELIMITER is returned as it is', () => {
    const sql = 'CREATE TABLE t (id int);';
    assert.equal(withDelimiters(sql), sql);
  });
});

describe('trigger and routine statements', () => {
  test('a trigger: DEFINER skipped, qualified table, FOLLOWS kept, body as written', () => {
    const t = parseObjectStatement(
      'CREATE DEFINER=`root`@`localhost` TRIGGER IF NOT EXISTS `db`.`t_b` BEFORE UPDATE ON `db`.`t` FOR EACH ROW FOLLOWS t_a BEGIN SET NEW.n = 1; END',
    );
    assert.deepEqual(t, {
      kind: 'trigger',
      name: 't_b',
      timing: 'BEFORE',
      event: 'UPDATE',
      table: 't',
      order: { clause: 'FOLLOWS', trigger: 't_a' },
      body: 'BEGIN SET NEW.n = 1; END',
    });
  });
  test('a function: parameters with types and character sets, RETURNS, characteristics in any order', () => {
    const f = parseObjectStatement(
      "CREATE FUNCTION f(a INT UNSIGNED, b VARCHAR(10) CHARSET latin1, c DOUBLE PRECISION) RETURNS DECIMAL(5,2) COMMENT 'it''s' SQL SECURITY INVOKER DETERMINISTIC READS SQL DATA RETURN a",
    );
    assert.deepEqual(f, {
      kind: 'function',
      name: 'f',
      parameters: [
        { mode: 'IN', name: 'a', type: 'INT UNSIGNED' },
        { mode: 'IN', name: 'b', type: 'VARCHAR(10) CHARSET latin1' },
        { mode: 'IN', name: 'c', type: 'DOUBLE PRECISION' },
      ],
      returns: 'DECIMAL(5,2)',
      deterministic: true,
      dataAccess: 'READS SQL DATA',
      security: 'INVOKER',
      comment: "it's",
      body: 'RETURN a',
    });
  });
  test('a procedure with modes and a labelled body', () => {
    const p = parseObjectStatement(
      'CREATE PROCEDURE p(IN a int, OUT b int, INOUT c text) proc: BEGIN LEAVE proc; END',
    );
    assert.equal(p.kind, 'procedure');
    assert.deepEqual(p.kind === 'procedure' ? p.parameters.map((x) => x.mode) : [], ['IN', 'OUT', 'INOUT']);
    assert.equal(p.body, 'proc: BEGIN LEAVE proc; END');
  });
  test('what is not a trigger or a routine is refused with what was expected', () => {
    assert.throws(
      () => parseObjectStatement('CREATE TRIGGER t DURING INSERT ON x FOR EACH ROW SET @a = 1'),
      /expected BEFORE or AFTER/,
    );
    assert.throws(
      () => parseObjectStatement('CREATE AGGREGATE FUNCTION g(x int) RETURNS int BEGIN END'),
      /aggregate function is not managed/,
    );
    assert.throws(() => parseObjectStatement('CREATE FUNCTION f(a int) RETURN a'), /expected RETURNS/);
  });
});

describe('body comparison', () => {
  test('comments and white space outside strings do not count; strings and executable comments do', () => {
    assert.equal(bodyKey('BEGIN\n  # note\n  RETURN a  + 1; -- x\nEND'), bodyKey('BEGIN RETURN a + 1; END'));
    assert.notEqual(bodyKey("RETURN 'a  b'"), bodyKey("RETURN 'a b'"));
    assert.notEqual(bodyKey('SELECT /*+ NO_ICP(t) */ 1'), bodyKey('SELECT 1'));
  });
});
