// The read-request annotation end to end: a database changed outside the operator is read again at once,
// without waiting for an interval of an hour, and a value that is not an instant is reported exactly once.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { READ_REQUESTED_ANNOTATION } from '../../src/api/meta.ts';
import {
  at,
  declareSchema,
  dumpDebug,
  eventsOf,
  eventsOnceRecorded,
  eventually,
  getSchema,
  operationJobs,
  query,
  useE2E,
  waitForPhase,
} from './harness.ts';

const { skip, e2e } = useE2E();

const CUSTOMERS = 'CREATE TABLE public.customers (id bigint PRIMARY KEY, email text NOT NULL, note text);\n';

async function annotate(name: string, annotations: Record<string, string>): Promise<void> {
  await e2e().objects.patchNamespacedCustomObject(
    { ...at(e2e(), 'ptahschemas'), name, body: { metadata: { annotations } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

describe('operator.ptah.run/read-requested-at', { skip }, () => {
  it('reads a database changed out of band at once, and reports an invalid value once', async () => {
    // The database already matches the declaration: the first reading is InSync without an Apply.
    const url = await declareSchema(e2e(), 'readreq', {
      data: { 'schema.sql': CUSTOMERS },
      existing: CUSTOMERS,
      policy: { apply: 'OnApproval' },
      interval: '1h',
    });
    const synced = await waitForPhase(e2e(), 'readreq', ['InSync', 'Failed', 'Blocked', 'AwaitingApproval']);
    if (synced.status?.phase !== 'InSync') await dumpDebug(e2e(), 'readreq');
    assert.equal(synced.status?.phase, 'InSync', JSON.stringify(synced.status?.conditions));
    const observedBefore = synced.status!.target!.lastObservedAt!;
    const observesBefore = (await operationJobs(e2e(), 'readreq', 'observe')).length;

    // A person changes the database; within the hour nothing would notice.
    await query(url, 'ALTER TABLE public.customers DROP COLUMN note');
    await sleep(3_000);
    assert.equal((await getSchema(e2e(), 'readreq')).status?.phase, 'InSync', 'the interval is an hour');

    const requested = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    await annotate('readreq', { [READ_REQUESTED_ANNOTATION]: requested });
    const waiting = await eventually('the request is answered and the drift planned', async () => {
      const s = await getSchema(e2e(), 'readreq');
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
    assert.equal(
      (await operationJobs(e2e(), 'readreq', 'observe')).length,
      observesBefore + 1,
      'exactly one new read',
    );
    const answered = await eventsOnceRecorded(e2e(), 'readreq', 'ReadRequested');
    assert.equal(answered.length, 1);
    assert.equal(answered[0]!.count, 1, 'answered once (a repeat would raise the count)');
    assert.equal(answered[0]!.type, 'Normal');

    // Not an instant: answered with a Warning that names it, once, and nothing starts.
    await annotate('readreq', { [READ_REQUESTED_ANNOTATION]: 'yesterday' });
    await eventually('the invalid value is recorded as answered', async () => {
      const s = await getSchema(e2e(), 'readreq');
      return s.status?.lastReadRequest === 'yesterday' ? s : undefined;
    });
    // Another metadata change wakes the manager again; the answered value is not reported again.
    await annotate('readreq', { 'example.com/touched': 'yes' });
    await sleep(3_000);
    const invalid = await eventsOf(e2e(), 'readreq', 'ReadRequestInvalid');
    assert.equal(invalid.length, 1, 'reported once');
    assert.equal(invalid[0]!.count, 1, 'reported once (a repeat would raise the count)');
    assert.equal(invalid[0]!.type, 'Warning');
    assert.match(invalid[0]!.message ?? '', /"yesterday"/);
    const still = await getSchema(e2e(), 'readreq');
    assert.equal(still.status?.phase, 'AwaitingApproval');
    assert.equal(still.status?.plan?.uid, waiting.status!.plan!.uid, 'the waiting plan is kept');
    assert.equal(
      (await operationJobs(e2e(), 'readreq', 'observe')).length,
      observesBefore + 1,
      'the invalid value started no read',
    );
  });
});
