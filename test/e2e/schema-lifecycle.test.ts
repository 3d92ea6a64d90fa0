// The PtahSchema lifecycle end to end: the manager process against the local control plane, operation
// Pods run by the node agent, and a real PostgreSQL whose contents and statement log are the evidence.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { nodeAgentAvailable } from '../env/environment.ts';
import {
  dumpDebug,
  createSchema,
  createSecret,
  createSource,
  schemaJobs,
  startE2E,
  waitForPhase,
  type E2E,
} from './harness.ts';

const skip = nodeAgentAvailable() ? false : 'the node agent is not available';
let e2e: E2E;

before(async () => {
  if (skip) return;
  e2e = await startE2E();
  await e2e.startManager();
});
after(async () => {
  await e2e?.stop();
});

async function query(url: string, sql: string): Promise<Record<string, unknown>[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql)).rows as Record<string, unknown>[];
  } finally {
    await client.end();
  }
}

const ORDERS = `
CREATE TABLE public.order_status (code text PRIMARY KEY, label text NOT NULL);
CREATE TABLE public.orders (id bigint PRIMARY KEY, status text NOT NULL REFERENCES public.order_status (code));
INSERT INTO public.order_status (code, label) VALUES ('new', 'New'), ('paid', 'Paid');
`;

describe('PtahSchema from a ConfigMap source', { skip }, () => {
  it('apply Always reaches InSync and the database holds the declared schema and rows', async () => {
    const url = await e2e.env.postgres!.createDatabase('always_db');
    await createSecret(e2e, 'always-db', url);
    await createSource(e2e, 'always-src', { 'schema.sql': ORDERS });
    await createSchema(e2e, 'always', {
      source: 'always-src',
      secret: 'always-db',
      policy: { apply: 'Always' },
    });
    const s = await waitForPhase(e2e, 'always', ['InSync', 'Failed', 'Blocked'], 90_000);
    if (s.status?.phase !== 'InSync') await dumpDebug(e2e, 'always');
    assert.equal(s.status?.phase, 'InSync', JSON.stringify(s.status?.conditions));
    assert.ok(s.status?.applied?.planRef.name, 'an apply is recorded');
    const rows = await query(url, 'SELECT code, label FROM public.order_status ORDER BY code');
    assert.deepEqual(rows, [
      { code: 'new', label: 'New' },
      { code: 'paid', label: 'Paid' },
    ]);
    const tables = await query(
      url,
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1",
    );
    assert.deepEqual(
      tables.map((r) => r['table_name']),
      ['order_status', 'orders'],
    );
    const jobs = await schemaJobs(e2e, 'always');
    assert.deepEqual(jobs.map((j) => j.metadata?.labels?.['operator.ptah.run/operation']).sort(), [
      'apply',
      'observe',
      'observe',
      'plan',
      'plan',
    ]);
  });
});
