// The MySQL schema change corpus (test/cases/mysql/*.yaml) on one real MariaDB server, a database a case.
// test/cases/mysql/pg-<file>.yaml hold the PostgreSQL cases of test/cases/pg/<file> in MySQL's terms, under
// the same names; pg-not-ported.json says why each of the others has no MySQL meaning (or is a named gap).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { join } from 'node:path';
import { startMariadb, type MariadbServer } from '../../env/mariadb.ts';
import { loadCases, runCase } from './case-runner.ts';

const dir = join(import.meta.dirname, '../../cases/mysql');
const cases = loadCases(dir);
const only = process.env['PTAH_CASE'];

test('every PostgreSQL case is ported to MySQL or listed with the reason it is not', () => {
  const pg = loadCases(join(import.meta.dirname, '../../cases/pg'));
  const notPorted = JSON.parse(readFileSync(join(dir, 'pg-not-ported.json'), 'utf8')) as Record<
    string,
    Record<string, string> | string
  >;
  const reason = (file: string, name: string): string | undefined => {
    const f = notPorted[file];
    return typeof f === 'object' ? (f[name] ?? f['*']) : undefined;
  };
  const ported = new Set(cases.map((c) => JSON.stringify([c.file, c.name])));
  const missing = pg.filter(
    (c) => !ported.has(JSON.stringify([`pg-${c.file}`, c.name])) && !reason(c.file, c.name),
  );
  assert.deepEqual(
    missing.map((c) => `${c.file}: ${c.name}`),
    [],
    'port each to test/cases/mysql/pg-<file>.yaml under the same name, or list it in pg-not-ported.json with the reason',
  );
  // A listed case is one PostgreSQL has, and one not also ported.
  const pgNames = new Set(pg.map((c) => JSON.stringify([c.file, c.name])));
  const stale = Object.entries(notPorted).flatMap(([file, names]) =>
    typeof names === 'object'
      ? Object.keys(names)
          .filter(
            (n) =>
              n !== '*' &&
              (!pgNames.has(JSON.stringify([file, n])) || ported.has(JSON.stringify([`pg-${file}`, n]))),
          )
          .map((n) => `${file}: ${n}`)
      : [],
  );
  assert.deepEqual(
    stale,
    [],
    'pg-not-ported.json lists cases PostgreSQL does not have or MySQL already ports',
  );
  // Every pg-<file>.yaml case is a PostgreSQL case of that file.
  const extra = cases.filter(
    (c) => c.file.startsWith('pg-') && !pgNames.has(JSON.stringify([c.file.slice(3), c.name])),
  );
  assert.deepEqual(
    extra.map((c) => `${c.file}: ${c.name}`),
    [
      'pg-enums.yaml: a new enum value used by a default and a declared row in the same plan',
      'pg-header.yaml: dropping a table with its rows and a column with its values is counted',
    ],
    'a pg-<file>.yaml case carries the name of the PostgreSQL case it ports (two say what MySQL does instead)',
  );
});

describe('schema change corpus (mysql, on MariaDB)', { concurrency: 4 }, () => {
  let server: MariadbServer;
  before(async () => {
    server = await startMariadb();
  });
  after(async () => {
    await server?.stop();
  });
  cases.forEach((c, i) => {
    const run = only === undefined || c.name.includes(only);
    test(`${c.file}: ${c.name}`, { skip: !run }, async () => {
      await runCase(c, await server.createDatabase(`case_${i}`));
    });
  });
});
