// The MySQL schema change corpus (test/cases/mysql/*.yaml) on one real MariaDB server, a database a case.
import { after, before, describe, test } from 'node:test';
import { join } from 'node:path';
import { startMariadb, type MariadbServer } from '../../env/mariadb.ts';
import { loadCases, runCase } from './case-runner.ts';

const cases = loadCases(join(import.meta.dirname, '../../cases/mysql'));
const only = process.env['PTAH_CASE'];

describe('schema change corpus (mysql, on MariaDB)', () => {
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
