import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import pg from 'pg';
import { startPostgres } from './env/postgres.ts';
import { postgresDialect as dialect } from '../src/engine/pg/pg-dialect.ts';
import { applyPlan, plan } from '../src/engine/schema-engine.ts';
const name = process.env['FIX'] ?? 'graphile-starter';
test('dbg', async () => {
  const server = await startPostgres();
  const admin = new pg.Client({ connectionString: server.adminUrl });
  await admin.connect();
  for (const r of ['graphile_starter', 'graphile_starter_visitor']) await admin.query(`CREATE ROLE "${r}"`);
  await admin.query('CREATE DATABASE x');
  const url = server.adminUrl.replace(/\/postgres$/, '/x');
  const sql = readFileSync(`/work/wt-pg-objects/test/fixtures/real-schemas/${name}/schema.sql`, 'utf8');
  const p = await plan(url, dialect, { files: [{ path: 'schema.sql', sql }] });
  const st = p.plan?.statements ?? [];
  const a = await applyPlan(url, Buffer.from(p.bytes ?? ''));
  console.log(a.outcome, JSON.stringify(a.failure));
  const pos = (a.failure as { position?: number } | undefined)?.position;
  if (pos !== undefined) for (let i = Math.max(0, pos - 3); i <= pos; i++) console.log(i, st[i]?.sql.slice(0, 600));
  if (a.outcome === 'applied') {
    const again = await plan(url, dialect, { files: [{ path: 'schema.sql', sql }] });
    for (const c of again.changes) console.log('AGAIN', c.kind, JSON.stringify(c).slice(0, 1500));
  }
  await admin.end();
  await server.stop();
});
