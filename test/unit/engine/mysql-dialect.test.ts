// MySQL 8.4 and MariaDB 10.11 spell the same schema differently in information_schema; the one
// normaliser makes them (and the desired SQL) meet. Only MariaDB runs here, so MySQL 8.4's spellings are
// fed to the inspector as the catalog rows its documentation shows (information_schema COLUMNS.EXTRA
// DEFAULT_GENERATED, STATISTICS.EXPRESSION and IS_VISIBLE, CHECK_CLAUSE in parentheses, no display
// widths, utf8mb4_0900_ai_ci), and the result is compared with the desired SQL's model.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Session } from '../../../src/engine/session.ts';
import { inspectMysql, mysqlServerOf } from '../../../src/engine/mysql/mysql-inspector.ts';
import { resolveWith, loadDesiredMysql } from '../../../src/engine/mysql/mysql-desired.ts';
import {
  defaultExpr,
  expressionKey,
  normaliseType,
  type ServerFacts,
  viewKey,
} from '../../../src/engine/mysql/mysql-normalize.ts';
import { renderMysql } from '../../../src/engine/mysql/mysql-renderer.ts';
import { diffModels } from '../../../src/engine/diff.ts';
import { classifyAll, withTableWork } from '../../../src/engine/classify.ts';
import { mysqlTableWork } from '../../../src/engine/mysql/mysql-online.ts';
import { mysqlTypeRisk } from '../../../src/engine/mysql/mysql-type-risk.ts';
import type { Column, SchemaModel } from '../../../src/engine/model.ts';

type Row = Record<string, string | null>;

/** A session answering the inspector's twelve queries with fixed catalog rows, matched by the table read. */
function catalog(rows: Readonly<Record<string, Row[]>>): Session {
  let n = 0;
  return {
    async query(sql) {
      n++;
      const key = Object.keys(rows).find((k) => sql.includes(k));
      return { rows: key === undefined ? [] : (rows[key] ?? []) };
    },
    get roundTrips() {
      return n;
    },
    async close() {},
  };
}

const MYSQL84: ServerFacts = {
  database: 'app',
  version: '8.4.3',
  mariadb: false,
  defaultCollation: 'utf8mb4_0900_ai_ci',
  defaultEngine: 'InnoDB',
  charsetDefault: {
    utf8mb4: 'utf8mb4_0900_ai_ci',
    latin1: 'latin1_swedish_ci',
    utf8mb3: 'utf8mb3_general_ci',
  },
  collationCharset: { utf8mb4_0900_ai_ci: 'utf8mb4', utf8mb4_bin: 'utf8mb4', latin1_swedish_ci: 'latin1' },
};

const col = (t: string, name: string, type: string, extra: Partial<Row> = {}): Row => ({
  t,
  name,
  type,
  nullable: 'NO',
  dflt: null,
  extra: '',
  cs: null,
  coll: null,
  gen: '',
  comment: '',
  ...extra,
});

/** information_schema as MySQL 8.4 reports the `item` table of DESIRED below. */
const MYSQL84_ROWS: Record<string, Row[]> = {
  'DATABASE() AS db': [{ db: 'app', version: '8.4.3', coll: 'utf8mb4_0900_ai_ci', engine: 'InnoDB' }],
  'information_schema.COLLATIONS': [
    { c: 'utf8mb4_0900_ai_ci', cs: 'utf8mb4', d: 'Yes' },
    { c: 'utf8mb4_bin', cs: 'utf8mb4', d: '' },
    { c: 'latin1_swedish_ci', cs: 'latin1', d: 'Yes' },
  ],
  'information_schema.TABLES': [
    { name: 'item', type: 'BASE TABLE', engine: 'InnoDB', coll: 'utf8mb4_0900_ai_ci', opts: '', comment: '' },
  ],
  'information_schema.COLUMNS': [
    // MySQL 8 drops integer display widths and reports literal defaults unquoted.
    col('item', 'id', 'bigint unsigned', { extra: 'auto_increment' }),
    col('item', 'name', 'varchar(100)', { dflt: '', cs: 'utf8mb4', coll: 'utf8mb4_0900_ai_ci' }),
    col('item', 'code', 'varchar(20)', { cs: 'utf8mb4', coll: 'utf8mb4_bin', nullable: 'YES' }),
    col('item', 'price', 'decimal(10,2)', { dflt: '0.00', nullable: 'YES' }),
    col('item', 'flag', 'tinyint(1)', { dflt: '1' }),
    // Expression defaults are DEFAULT_GENERATED, spelled without parentheses.
    col('item', 'created', 'datetime(3)', {
      dflt: 'CURRENT_TIMESTAMP(3)',
      extra: 'DEFAULT_GENERATED on update CURRENT_TIMESTAMP(3)',
    }),
    col('item', 'token', 'varchar(36)', {
      dflt: 'uuid()',
      extra: 'DEFAULT_GENERATED',
      cs: 'utf8mb4',
      coll: 'utf8mb4_0900_ai_ci',
    }),
    col('item', 'doc', 'json', { nullable: 'YES' }),
    col('item', 'total', 'decimal(12,2)', {
      nullable: 'YES',
      extra: 'VIRTUAL GENERATED',
      gen: '(`price` * 2)',
    }),
    col('item', 'secret', 'int', { nullable: 'YES', extra: 'INVISIBLE' }),
  ],
  'information_schema.STATISTICS': [
    {
      t: 'item',
      name: 'PRIMARY',
      non_unique: '0',
      col: 'id',
      sub_part: null,
      dir: 'A',
      type: 'BTREE',
      comment: '',
      invisible: '0',
      expr: null,
    },
    {
      t: 'item',
      name: 'uq_code',
      non_unique: '0',
      col: 'code',
      sub_part: null,
      dir: 'A',
      type: 'BTREE',
      comment: '',
      invisible: '0',
      expr: null,
    },
    // A functional key part: no column, the expression in EXPRESSION; a descending part is 'D'.
    {
      t: 'item',
      name: 'ix_lower',
      non_unique: '1',
      col: null,
      sub_part: null,
      dir: 'A',
      type: 'BTREE',
      comment: '',
      invisible: '0',
      expr: 'lower(`name`)',
    },
    {
      t: 'item',
      name: 'ix_name',
      non_unique: '1',
      col: 'name',
      sub_part: '10',
      dir: 'D',
      type: 'BTREE',
      comment: '',
      invisible: '1',
      expr: null,
    },
  ],
  'information_schema.CHECK_CONSTRAINTS': [
    // MySQL 8 wraps the clause in parentheses and backquotes names.
    { t: 'item', name: 'ck_price', clause: '(`price` >= 0)' },
  ],
  // MySQL 8 drops integer display widths in DTD_IDENTIFIER as in COLUMN_TYPE, and stores a body as sent.
  'information_schema.TRIGGERS': [
    { name: 'item_touch', timing: 'BEFORE', event: 'UPDATE', t: 'item', body: 'SET NEW.flag = TRUE' },
  ],
  'information_schema.ROUTINES': [
    {
      type: 'FUNCTION',
      name: 'label',
      returns: 'varchar(30)',
      det: 'YES',
      access: 'CONTAINS SQL',
      sec: 'DEFINER',
      comment: '',
      body: 'RETURN CONCAT(p_name, n)',
    },
  ],
  'information_schema.PARAMETERS': [
    { type: 'FUNCTION', routine: 'label', mode: 'IN', name: 'p_name', dtd: 'varchar(20)' },
    { type: 'FUNCTION', routine: 'label', mode: 'IN', name: 'n', dtd: 'int' },
  ],
};

const DESIRED = `CREATE TABLE item (
  id BIGINT(20) UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  name VARCHAR(100) NOT NULL DEFAULT '',
  code VARCHAR(20) COLLATE utf8mb4_bin,
  price DECIMAL(10,2) DEFAULT 0,
  flag BOOLEAN NOT NULL DEFAULT TRUE,
  created DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
  token VARCHAR(36) NOT NULL DEFAULT (uuid()),
  doc JSON,
  total DECIMAL(12,2) GENERATED ALWAYS AS (price * 2) VIRTUAL,
  secret INT INVISIBLE,
  UNIQUE KEY uq_code (code),
  KEY ix_lower ((lower(name))),
  KEY ix_name (name(10) DESC) INVISIBLE,
  CONSTRAINT ck_price CHECK (price >= 0)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
CREATE TRIGGER item_touch BEFORE UPDATE ON item FOR EACH ROW SET NEW.flag = TRUE;
CREATE FUNCTION label(p_name VARCHAR(20), n INTEGER(11)) RETURNS VARCHAR(30) CHARSET utf8mb4 DETERMINISTIC
RETURN CONCAT(p_name, n);`;

describe('MySQL 8.4 catalog spellings', () => {
  it('inspects in a fixed number of queries and meets the desired SQL', async () => {
    const session = catalog(MYSQL84_ROWS);
    const live = await inspectMysql(session);
    assert.equal(session.roundTrips, 12);
    assert.deepEqual(
      (live.objects ?? []).map((o) => `${o.objectType} ${o.name}`),
      ['trigger item_touch', 'function label'],
    );
    const desired = resolveWith(await loadDesiredMysql([{ path: 'd.sql', sql: DESIRED }]), MYSQL84);
    const changes = diffModels({ from: live, to: desired, liveRows: [] });
    assert.deepEqual(
      changes.map((c) => c.kind),
      [],
      JSON.stringify(changes.map((c) => renderMysql(c))),
    );
    const item = live.tables[0];
    assert.equal(item?.options?.['collation'], 'utf8mb4_0900_ai_ci');
    const byName = (n: string) => item?.columns.find((c) => c.name === n) as Column;
    assert.deepEqual(byName('id').type, { name: 'bigint', mods: ' unsigned', array: false });
    assert.equal(byName('id').identity, 'by default');
    assert.equal(byName('doc').type.name, 'json', 'MySQL keeps JSON a type of its own');
    assert.equal(byName('secret').invisible, true);
    assert.equal(byName('total').generatedStorage, 'virtual');
    assert.equal(
      item?.indexes.find((i) => i.name === 'ix_lower')?.keys[0]?.expression?.text,
      'lower(`name`)',
    );
    assert.equal(item?.indexes.find((i) => i.name === 'ix_name')?.invisible, true);
    assert.equal(item?.indexes.find((i) => i.name === 'ix_name')?.invisibleAs, 'INVISIBLE');
  });

  it('tells MariaDB from MySQL by VERSION(), both the mysql engine, and keeps the release alone', () => {
    // VERSION() as each server documents it: MariaDB names itself, MySQL gives the release (and a suffix).
    assert.deepEqual(mysqlServerOf('10.11.6-MariaDB-0+deb12u1'), { product: 'MariaDB', version: '10.11.6' });
    assert.deepEqual(mysqlServerOf('11.4.2-MariaDB-log'), { product: 'MariaDB', version: '11.4.2' });
    assert.deepEqual(mysqlServerOf('8.4.3'), { product: 'MySQL', version: '8.4.3' });
    assert.deepEqual(mysqlServerOf('8.0.39-log'), { product: 'MySQL', version: '8.0.39' });
  });

  it('spells types the way both servers compare', () => {
    const same = (a: string, b: string, mariadb = false) =>
      assert.deepEqual(normaliseType(a, mariadb), normaliseType(b, mariadb), `${a} vs ${b}`);
    same('int(11)', 'int');
    same('int(10) unsigned', 'INT UNSIGNED');
    same('INTEGER', 'int');
    same('bool', 'tinyint(1)');
    same('NUMERIC', 'decimal(10,0)');
    same('decimal(8)', 'decimal(8,0)');
    same('year(4)', 'year');
    same('float(30)', 'double');
    same("enum('a','it''s')", "ENUM('a', 'it\\'s')");
    same('json', 'longtext', true);
    assert.notDeepEqual(normaliseType('tinyint(1)', false), normaliseType('tinyint(4)', false));
    assert.notDeepEqual(normaliseType('json', false), normaliseType('longtext', false));
  });

  it('keys defaults and expressions by meaning', () => {
    const type = normaliseType('decimal(6,2)', false);
    assert.equal(defaultExpr('1', type)?.key, defaultExpr("'1.00'", type)?.key);
    const ts = normaliseType('timestamp', false);
    assert.equal(defaultExpr('CURRENT_TIMESTAMP', ts)?.key, defaultExpr('current_timestamp()', ts)?.key);
    assert.equal(defaultExpr('now()', ts)?.key, defaultExpr('CURRENT_TIMESTAMP', ts)?.key);
    assert.notEqual(defaultExpr('CURRENT_TIMESTAMP(3)', ts)?.key, defaultExpr('CURRENT_TIMESTAMP', ts)?.key);
    assert.equal(defaultExpr('NULL', ts), undefined);
    assert.equal(expressionKey('(`price` >= 0)'), expressionKey('price >= 0'));
    assert.equal(expressionKey('(`a` > 0) and (`b` < 10)'), expressionKey('a > 0 AND b < 10'));
    assert.notEqual(expressionKey('a > 0'), expressionKey('a >= 0'));
  });
});

describe('MySQL renderer', () => {
  const model = async (sql: string): Promise<SchemaModel> =>
    resolveWith(await loadDesiredMysql([{ path: 'd.sql', sql }]), MYSQL84);
  const plan = async (from: string, to: string) =>
    // The plan runs a repeated statement once (schema-engine.ts), as here.
    [
      ...new Set(
        diffModels({ from: await model(from), to: await model(to), liveRows: [] }).flatMap((c, _i, all) =>
          renderMysql(c, all),
        ),
      ),
    ];

  it('restates a changed column whole, quoted, with its attributes', async () => {
    assert.deepEqual(
      await plan(
        'CREATE TABLE t (id int PRIMARY KEY, v varchar(10));',
        "CREATE TABLE t (id int PRIMARY KEY, v varchar(20) NOT NULL DEFAULT 'x' COMMENT 'it''s');",
      ),
      ["ALTER TABLE `t` MODIFY COLUMN `v` varchar(20) NOT NULL DEFAULT 'x' COMMENT 'it''s'"],
    );
  });

  it('adds an AUTO_INCREMENT column or attribute and the key it needs in one ALTER TABLE (errno 1075 otherwise)', async () => {
    assert.deepEqual(
      await plan(
        'CREATE TABLE t (label varchar(10));',
        'CREATE TABLE t (id int NOT NULL AUTO_INCREMENT PRIMARY KEY, label varchar(10));',
      ),
      ['ALTER TABLE `t` ADD COLUMN `id` int NOT NULL AUTO_INCREMENT, ADD PRIMARY KEY (`id`)'],
    );
    assert.deepEqual(
      await plan(
        'CREATE TABLE t (id int PRIMARY KEY, n int NOT NULL);',
        'CREATE TABLE t (id int PRIMARY KEY, n int NOT NULL AUTO_INCREMENT, KEY n_key (n));',
      ),
      ['ALTER TABLE `t` MODIFY COLUMN `n` int NOT NULL AUTO_INCREMENT, ADD INDEX `n_key` (`n`)'],
    );
    // And back: the key goes with the attribute, never before it.
    assert.deepEqual(
      await plan(
        'CREATE TABLE t (id int PRIMARY KEY, n int NOT NULL AUTO_INCREMENT, KEY n_key (n));',
        'CREATE TABLE t (id int PRIMARY KEY, n int NOT NULL);',
      ),
      ['ALTER TABLE `t` DROP INDEX `n_key`, MODIFY COLUMN `n` int NOT NULL'],
    );
    // A key that does not hold the AUTO_INCREMENT column stays a statement of its own.
    assert.deepEqual(
      await plan(
        'CREATE TABLE t (id int PRIMARY KEY, v int);',
        'CREATE TABLE t (id int PRIMARY KEY, v int, n int NOT NULL AUTO_INCREMENT, UNIQUE KEY n (n), KEY v (v));',
      ),
      [
        'ALTER TABLE `t` ADD COLUMN `n` int NOT NULL AUTO_INCREMENT, ADD UNIQUE INDEX `n` (`n`)',
        'CREATE INDEX `v` ON `t` (`v`) ALGORITHM=INPLACE LOCK=NONE',
      ],
    );
  });

  it('builds B-tree indexes online, and names no database', async () => {
    const sql = await plan(
      'CREATE TABLE t (id int PRIMARY KEY, v varchar(50), b text);',
      'CREATE TABLE t (id int PRIMARY KEY, v varchar(50), b text, KEY ix (v(5) DESC), FULLTEXT KEY ft (b));',
    );
    assert.deepEqual(sql, [
      'CREATE FULLTEXT INDEX `ft` ON `t` (`b`)',
      'CREATE INDEX `ix` ON `t` (`v`(5) DESC) ALGORITHM=INPLACE LOCK=NONE',
    ]);
    assert.ok(sql.every((s) => !s.includes('`app`')));
  });

  it('drops an index with ALGORITHM=INPLACE, LOCK=NONE, and asks no lock of a rebuild', async () => {
    assert.deepEqual(
      await plan(
        'CREATE TABLE t (id int PRIMARY KEY, v int, KEY ix (v));',
        'CREATE TABLE t (id int PRIMARY KEY, v int);',
      ),
      ['ALTER TABLE `t` DROP INDEX `ix`, ALGORITHM=INPLACE, LOCK=NONE'],
    );
    // MariaDB refuses LOCK=NONE for rebuilding a table with a FULLTEXT index (errno 1846): no lock is
    // promised for a rebuild, whatever the table holds.
    assert.deepEqual(
      await plan(
        'CREATE TABLE t (id int PRIMARY KEY, v varchar(5));',
        "CREATE TABLE t (id int PRIMARY KEY, v varchar(5) NOT NULL DEFAULT 'x');",
      ),
      ["ALTER TABLE `t` MODIFY COLUMN `v` varchar(5) NOT NULL DEFAULT 'x'"],
    );
    assert.deepEqual(
      await plan(
        'CREATE TABLE t (id int PRIMARY KEY) ROW_FORMAT=DYNAMIC;',
        'CREATE TABLE t (id int PRIMARY KEY) ROW_FORMAT=COMPACT;',
      ),
      ['ALTER TABLE `t` ROW_FORMAT=COMPACT'],
    );
  });

  it('says which changes rebuild the table, copy it, or make writes wait (a warning, counted as rewritten)', async () => {
    const work = async (from: string, to: string) => {
      const changes = diffModels({ from: await model(from), to: await model(to), liveRows: [] });
      return withTableWork(classifyAll(changes, mysqlTypeRisk), (c) => mysqlTableWork(c, changes)).map(
        (c) => [
          c.kind,
          c.classification.severity,
          c.classification.rebuildsTable,
          /ALGORITHM=COPY/.test(c.classification.reason)
            ? 'copy'
            : /rebuilds the table in place/.test(c.classification.reason)
              ? 'online rebuild'
              : /writes to the table wait/.test(c.classification.reason)
                ? 'writes wait'
                : 'no row touched',
        ],
      );
    };
    const t = (cols: string) => `CREATE TABLE t (id int PRIMARY KEY, ${cols}) DEFAULT CHARSET=utf8mb4;`;
    assert.deepEqual(await work(t('n int'), t('n bigint')), [['AlterColumnType', 'warning', true, 'copy']]);
    assert.deepEqual(await work(t('v varchar(10)'), t('v varchar(60)')), [
      ['AlterColumnType', 'info', false, 'no row touched'],
    ]);
    // 40 bytes to 400: MySQL 8.4 copies the table for the second length byte (MariaDB 10.11 does not).
    assert.deepEqual(await work(t('v varchar(10)'), t('v varchar(100)')), [
      ['AlterColumnType', 'warning', true, 'copy'],
    ]);
    assert.deepEqual(await work(t("e enum('a')"), t("e enum('a','b')")), [
      ['AlterColumnType', 'info', false, 'no row touched'],
    ]);
    assert.deepEqual(await work(t('n int'), t('n int NOT NULL')), [
      ['SetNotNull', 'warning', true, 'online rebuild'],
    ]);
    assert.deepEqual(await work(t('n int'), t('n int, m int')), [
      ['AddColumn', 'safe', false, 'no row touched'],
    ]);
    assert.deepEqual(await work(t('b text'), t('b text, FULLTEXT KEY ft (b)')), [
      ['CreateIndex', 'warning', false, 'writes wait'],
    ]);
    assert.deepEqual(await work(t('n int'), t('n int, CONSTRAINT ck CHECK (n > 0)')), [
      ['AddConstraint', 'warning', true, 'copy'],
    ]);
  });

  it('converts the table for a collation change and drops keys by their kind', async () => {
    assert.deepEqual(
      await plan(
        'CREATE TABLE p (id int PRIMARY KEY); CREATE TABLE t (id int PRIMARY KEY, p int, CONSTRAINT fk FOREIGN KEY (p) REFERENCES p (id), CONSTRAINT ck CHECK (id > 0)) DEFAULT CHARSET=latin1;',
        'CREATE TABLE p (id int PRIMARY KEY); CREATE TABLE t (id int PRIMARY KEY, p int, KEY fk (p));',
      ),
      [
        'ALTER TABLE `t` DROP FOREIGN KEY `fk`',
        'ALTER TABLE `t` DROP CONSTRAINT `ck`',
        'ALTER TABLE `t` CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_0900_ai_ci',
      ],
    );
  });

  it('spells an invisible index as each server reads it: INVISIBLE on MySQL 8.4, IGNORED on MariaDB', async () => {
    const from = 'CREATE TABLE t (id int PRIMARY KEY, v int);';
    const to = 'CREATE TABLE t (id int PRIMARY KEY, v int, KEY ix (v) IGNORED);';
    assert.deepEqual(await plan(from, to), [
      'CREATE INDEX `ix` ON `t` (`v`) INVISIBLE ALGORITHM=INPLACE LOCK=NONE',
    ]);
    const mariadb: ServerFacts = { ...MYSQL84, version: '10.11.11-MariaDB', mariadb: true };
    const m = async (sql: string) => resolveWith(await loadDesiredMysql([{ path: 'd.sql', sql }]), mariadb);
    assert.deepEqual(
      diffModels({
        from: await m(from),
        to: await m(to.replace('IGNORED', 'INVISIBLE')),
        liveRows: [],
      }).flatMap((c, _i, all) => renderMysql(c, all)),
      ['CREATE INDEX `ix` ON `t` (`v`) IGNORED ALGORITHM=INPLACE LOCK=NONE'],
    );
  });

  it('reads what the grammar lacks: keyword column names, INVISIBLE columns, REAL, ON UPDATE alone', async () => {
    const sql = `CREATE TABLE t (id int PRIMARY KEY, status int NOT NULL, full varchar(9) INVISIBLE,
      r real, d double precision, at timestamp NULL ON UPDATE now(),
      KEY status (status, full(3) DESC), CONSTRAINT fk FOREIGN KEY (status) REFERENCES s (full),
      CONSTRAINT ck CHECK (status > 0));`;
    const t = (await model(sql)).tables[0];
    const c = (n: string) => t?.columns.find((x) => x.name === n);
    assert.equal(c('full')?.invisible, true);
    assert.equal(c('status')?.invisible, undefined);
    assert.equal(c('r')?.type.name, 'double');
    assert.equal(c('d')?.type.name, 'double');
    assert.equal(
      c('at')?.onUpdate?.key,
      defaultExpr('CURRENT_TIMESTAMP', c('at')?.type ?? c('r')!.type)?.key,
    );
    assert.equal(c('at')?.default, undefined);
    assert.deepEqual(
      t?.constraints.map((k) => k.kind),
      ['PrimaryKey', 'ForeignKey', 'Check'],
    );
    assert.deepEqual(
      t?.indexes.map((i) => [i.name, i.keys.map((k) => k.column)]),
      [['status', ['status', 'full']]],
    );
    assert.match(
      renderMysql({ kind: 'CreateTable', table: t! })[0] ?? '',
      /`full` varchar\(9\) NULL INVISIBLE/,
    );
  });

  it('creates views with their algorithm, security and check option', async () => {
    assert.deepEqual(
      await plan(
        'CREATE TABLE t (id int PRIMARY KEY);',
        'CREATE TABLE t (id int PRIMARY KEY); CREATE ALGORITHM=MERGE SQL SECURITY INVOKER VIEW v AS SELECT id FROM t WITH LOCAL CHECK OPTION;',
      ),
      ['CREATE ALGORITHM=MERGE SQL SECURITY INVOKER VIEW `v` AS SELECT id FROM t WITH LOCAL CHECK OPTION'],
    );
  });
});

describe('MySQL view spelling', () => {
  const columns = new Map([
    ['a', ['id', 'name']],
    ['b', ['id', 'a_id', 'x']],
    ['c', ['id', 'b_id', 'note']],
  ]);
  const key = (select: string) => viewKey(select, 'app', {}, columns);
  const same = (written: string, stored: string) => assert.equal(key(written), key(stored), written);

  it("meets MariaDB 10.11's stored text of a hand-written view (captured from information_schema.VIEWS)", () => {
    same(
      'SELECT a.id, b.x FROM a JOIN b ON a.id = b.a_id',
      'select `app`.`a`.`id` AS `id`,`app`.`b`.`x` AS `x` from (`app`.`a` join `app`.`b` on(`app`.`a`.`id` = `app`.`b`.`a_id`))',
    );
    same(
      'SELECT a.id, name, x AS xx FROM a LEFT OUTER JOIN b ON a.id = a_id WHERE x > 1',
      'select `app`.`a`.`id` AS `id`,`app`.`a`.`name` AS `name`,`app`.`b`.`x` AS `xx` from (`app`.`a` left join `app`.`b` on(`app`.`a`.`id` = `app`.`b`.`a_id`)) where `app`.`b`.`x` > 1',
    );
    same('SELECT * FROM a', 'select `app`.`a`.`id` AS `id`,`app`.`a`.`name` AS `name` from `app`.`a`');
    same(
      'SELECT a.name, count(*) AS n FROM a INNER JOIN b USING (id) GROUP BY a.name',
      'select `app`.`a`.`name` AS `name`,count(0) AS `n` from (`app`.`a` join `app`.`b` on(`app`.`a`.`id` = `app`.`b`.`id`)) group by `app`.`a`.`name`',
    );
    same(
      'SELECT p.id FROM a p, b q WHERE p.id = q.a_id',
      'select `p`.`id` AS `id` from `app`.`a` `p` join `app`.`b` `q` where `p`.`id` = `q`.`a_id`',
    );
    same(
      'SELECT a.name, b.x, note FROM a JOIN b ON b.a_id = a.id LEFT JOIN c ON c.b_id = b.id ORDER BY x DESC',
      'select `app`.`a`.`name` AS `name`,`app`.`b`.`x` AS `x`,`app`.`c`.`note` AS `note` from ((`app`.`a` join `app`.`b` on(`app`.`b`.`a_id` = `app`.`a`.`id`)) left join `app`.`c` on(`app`.`c`.`b_id` = `app`.`b`.`id`)) order by `app`.`b`.`x` desc',
    );
    same(
      "SELECT concat(name, _utf8' ', length(name)) AS label FROM a ORDER BY label",
      "select concat(`app`.`a`.`name`,' ',octet_length(`app`.`a`.`name`)) AS `label` from `app`.`a` order by concat(`app`.`a`.`name`,' ',octet_length(`app`.`a`.`name`))",
    );
  });

  it("meets MySQL 8.4's spelling (ON wrapped twice, comparisons in parentheses)", () => {
    same(
      'SELECT a.id, b.x FROM a JOIN b ON a.id = b.a_id WHERE b.x > 1',
      'select `a`.`id` AS `id`,`b`.`x` AS `x` from (`app`.`a` join `app`.`b` on((`a`.`id` = `b`.`a_id`))) where (`b`.`x` > 1)',
    );
  });

  it('keeps apart what differs', () => {
    assert.notEqual(
      key('SELECT a.id FROM a JOIN b ON a.id = b.a_id'),
      key('SELECT a.id FROM a LEFT JOIN b ON a.id = b.a_id'),
    );
    assert.notEqual(key('SELECT * FROM a'), key('SELECT id FROM a'));
    assert.notEqual(key('SELECT name FROM a ORDER BY name'), key('SELECT name FROM a ORDER BY name DESC'));
    // A group after a JOIN keeps its parentheses (they change the meaning).
    assert.notEqual(
      key('SELECT a.id FROM a LEFT JOIN (b JOIN c ON c.b_id = b.id) ON b.a_id = a.id'),
      key('SELECT a.id FROM a LEFT JOIN b ON b.a_id = a.id JOIN c ON c.b_id = b.id'),
    );
  });
});
