import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import mysql from 'mysql2/promise';
import { startPostgres } from '../env/postgres.ts';
import { startMariadb } from '../env/mariadb.ts';

test('PostgreSQL accepts a role-scoped connection and logs the statements it ran', async () => {
  const server = await startPostgres();
  try {
    const url = await server.createDatabase('shop');
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query('CREATE TABLE "Orders" (id int)');
    await client.query('SELECT $1::int AS n', [7]);
    await client.end();
    const mine = server.statements().filter((s) => s.user === 'shop');
    assert.deepEqual(
      mine.map((s) => s.sql),
      ['CREATE TABLE "Orders" (id int)', 'SELECT $1::int AS n'],
    );
    assert.ok(mine.every((s) => s.database === 'shop'));
  } finally {
    await server.stop();
  }
});

test('MariaDB accepts a user-scoped connection and its general log reads back', async () => {
  const server = await startMariadb();
  try {
    const url = await server.createDatabase('shop');
    const conn = await mysql.createConnection(url);
    await conn.query('CREATE TABLE `orders` (id int)');
    await conn.end();
    assert.ok(server.statements().some((s) => s.sql === 'CREATE TABLE `orders` (id int)'));
  } finally {
    await server.stop();
  }
});
