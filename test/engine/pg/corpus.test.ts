// The schema change corpus (test/cases/pg/*.yaml) on one real PostgreSQL server, a fresh database a case.
import { after, before, describe, test } from 'node:test';
import { join } from 'node:path';
import pg from 'pg';
import { startPostgres, type PostgresServer } from '../../env/postgres.ts';
import { loadCases, runCase } from './case-runner.ts';

const cases = loadCases(join(import.meta.dirname, '../../cases/pg'));
const only = process.env['PTAH_CASE'];

describe('schema change corpus (postgres)', { concurrency: 4 }, () => {
  let server: PostgresServer;
  let admin: pg.Client;
  before(async () => {
    server = await startPostgres();
    admin = new pg.Client({ connectionString: server.adminUrl });
    await admin.connect();
  });
  after(async () => {
    await admin?.end();
    await server?.stop();
  });
  cases.forEach((c, i) => {
    const run = only === undefined || c.name.includes(only) || c.file === only;
    test(`${c.file}: ${c.name}`, { skip: !run }, async () => {
      const db = `case_${i}`;
      await admin.query(`CREATE DATABASE ${db}`);
      await runCase(c, server.adminUrl.replace(/\/postgres$/, `/${db}`));
      await admin.query(`DROP DATABASE ${db}`);
    });
  });
});
