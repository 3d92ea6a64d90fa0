// The read-request annotation end to end: a database changed outside the operator is read again at once,
// without waiting for an interval of an hour, and a value that is not an instant is reported exactly once.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import pg from 'pg';
import { READ_REQUESTED_ANNOTATION } from '../../src/api/meta.ts';
import { nodeAgentAvailable } from '../env/environment.ts';
import {
  at,
  createSchema,
  createSecret,
  createSource,
  dumpDebug,
  eventually,
  getSchema,
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

const CUSTOMERS = 'CREATE TABLE public.customers (id bigint PRIMARY KEY, email text NOT NULL, note text);\n';

async function sql(url: string, text: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

async function annotate(name: string, annotations: Record<string, string>): Promise<void> {
  await e2e.objects.patchNamespacedCustomObject(
    { ...at(e2e, 'ptahschemas'), name, body: { metadata: { annotations } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

async function eventsOf(name: string, reason: string) {
  const list = await e2e.core.listNamespacedEvent({
    namespace: e2e.namespace,
    fieldSelector: `involvedObject.name=${name},reason=${reason}`,
  });
  return list.items;
}

async function observeJobs(name: string): Promise<number> {
  const jobs = await schemaJobs(e2e, name);
  return jobs.filter((j) => j.metadata?.labels?.['operator.ptah.run/operation'] === 'observe').length;
}

describe('operator.ptah.run/read-requested-at', { skip }, () => {
  it('reads a database changed out of band at once, and reports an invalid value once', async () => {
    const url = await e2e.env.postgres!.createDatabase('readreq_db');
    // The database already matches the declaration: the first reading is InSync without an Apply.
    await sql(url, CUSTOMERS);
    await createSecret(e2e, 'readreq-db', url);
    await createSource(e2e, 'readreq-src', { 'schema.sql': CUSTOMERS });
    await createSchema(e2e, 'readreq', {
      source: 'readreq-src',
      secret: 'readreq-db',
      policy: { apply: 'OnApproval' },
      interval: '1h',
    });
    const synced = await waitForPhase(e2e, 'readreq', ['InSync', 'Failed', 'Blocked', 'AwaitingApproval']);
    if (synced.status?.phase !== 'InSync') await dumpDebug(e2e, 'readreq');
    assert.equal(synced.status?.phase, 'InSync', JSON.stringify(synced.status?.conditions));
    const observedBefore = synced.status!.target!.lastObservedAt!;
    const observesBefore = await observeJobs('readreq');

    // A person changes the database; within the hour nothing would notice.
    await sql(url, 'ALTER TABLE public.customers DROP COLUMN note');
    await sleep(3_000);
    assert.equal((await getSchema(e2e, 'readreq')).status?.phase, 'InSync', 'the interval is an hour');

    const requested = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    await annotate('readreq', { [READ_REQUESTED_ANNOTATION]: requested });
    const waiting = await eventually('the request is answered and the drift planned', async () => {
      const s = await getSchema(e2e, 'readreq');
      return s.status?.lastReadRequest === requested &&
        s.status.phase === 'AwaitingApproval' &&
        s.status.plan !== undefined
        ? s
        : undefined;
    });
    assert.ok(
      Date.parse(waiting.status!.target!.lastObservedAt!) > Date.parse(observedBefore),
      'the database was read again',
    );
    assert.equal(waiting.status?.drift?.total !== undefined && waiting.status.drift.total > 0, true);
    assert.equal(await observeJobs('readreq'), observesBefore + 1, 'exactly one new read');
    const answered = await eventsOf('readreq', 'ReadRequested');
    assert.equal(answered.length, 1);
    assert.equal(answered[0]!.type, 'Normal');

    // Not an instant: answered with a Warning that names it, once, and nothing starts.
    await annotate('readreq', { [READ_REQUESTED_ANNOTATION]: 'yesterday' });
    await eventually('the invalid value is recorded as answered', async () => {
      const s = await getSchema(e2e, 'readreq');
      return s.status?.lastReadRequest === 'yesterday' ? s : undefined;
    });
    // Another metadata change wakes the manager again; the answered value is not reported again.
    await annotate('readreq', { 'example.com/touched': 'yes' });
    await sleep(3_000);
    const invalid = await eventsOf('readreq', 'ReadRequestInvalid');
    assert.equal(invalid.length, 1, 'reported once');
    assert.equal(invalid[0]!.type, 'Warning');
    assert.match(invalid[0]!.message ?? '', /"yesterday"/);
    const still = await getSchema(e2e, 'readreq');
    assert.equal(still.status?.phase, 'AwaitingApproval');
    assert.equal(still.status?.plan?.uid, waiting.status!.plan!.uid, 'the waiting plan is kept');
    assert.equal(await observeJobs('readreq'), observesBefore + 1, 'the invalid value started no read');
  });
});
