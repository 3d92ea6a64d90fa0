import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadMigrationDirectory } from '../../../src/engine/migrations/migration-directory.ts';
import { migrationDir, ptah, removeMigrationDirs } from './helpers.ts';

after(removeMigrationDirs);

test('a tampered file, a missing sum and an unlisted file are refused, naming the file and the fix', () => {
  const dir = migrationDir({
    '1_a.sql': 'CREATE TABLE a (id int);',
    '2_b.sql': '-- ptah:txmode none\n-- ptah:checkpoint\nCREATE TABLE b (id int);',
  });
  const files = loadMigrationDirectory(dir);
  assert.deepEqual(
    files.map((f) => [f.version, f.description, f.txMode, f.checkpoint]),
    [
      ['1', 'a', undefined, false],
      ['2', 'b', 'none', true],
    ],
  );
  writeFileSync(join(dir, '1_a.sql'), 'CREATE TABLE a (id bigint);');
  assert.throws(
    () => loadMigrationDirectory(dir),
    /1_a\.sql does not match its checksum.*ptah migrations hash/,
  );
  writeFileSync(join(dir, '1_a.sql'), 'CREATE TABLE a (id int);');
  writeFileSync(join(dir, '3_c.sql'), 'SELECT 1;');
  assert.throws(() => loadMigrationDirectory(dir), /3_c\.sql is not in ptah\.sum.*ptah migrations hash/);
  rmSync(join(dir, '3_c.sql'));
  const sum = readFileSync(join(dir, 'ptah.sum'), 'utf8');
  writeFileSync(join(dir, 'ptah.sum'), sum.replace(/\n2_b[^\n]*\n/, '\n'));
  assert.throws(() => loadMigrationDirectory(dir), /2_b\.sql is not in ptah\.sum/);
  rmSync(join(dir, 'ptah.sum'));
  assert.throws(() => loadMigrationDirectory(dir), /ptah\.sum is missing.*ptah migrations hash/);
});

test('new, hash and validate through the CLI', async () => {
  const dir = migrationDir({ '1_a.sql': 'CREATE TABLE a (id int);' });
  const created = await ptah(['migrations', 'new', 'Add Orders', '--dir', dir, '--json'], {});
  assert.equal(created.code, 0, created.stderr);
  const { file } = JSON.parse(created.stdout) as { file: string };
  assert.match(file, /^\d{14}_add_orders\.sql$/);
  assert.equal((await ptah(['migrations', 'validate', '--dir', dir], {})).code, 0);
  writeFileSync(join(dir, file), "CREATE TABLE orders (note text DEFAULT 'open);");
  const bad = await ptah(['migrations', 'validate', '--dir', dir], {});
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, new RegExp(`${file} does not match its checksum`));
  assert.equal((await ptah(['migrations', 'hash', '--dir', dir], {})).code, 0);
  const unsplittable = await ptah(['migrations', 'validate', '--dir', dir], {});
  assert.equal(unsplittable.code, 1);
  assert.match(unsplittable.stderr, new RegExp(`${file}: unterminated`));
  const noUrl = await ptah(['migrations', 'status', '--dir', dir], { PTAH_DB_URL: '' });
  assert.equal(noUrl.code, 2);
});
