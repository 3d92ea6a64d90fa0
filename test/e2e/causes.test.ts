// Causes reach status: an operation whose database Secret (or key) is missing fails at once with
// CredentialUnavailable naming the Secret and key, read from the Pod the node cannot configure, not after
// the Job's deadline; creating the Secret recovers the resource and clears ReconciliationFailed.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PtahSchema } from '../../src/api/ptah-schema.ts';
import {
  createSchema,
  createSecret,
  createSource,
  dumpDebug,
  eventsOf,
  eventually,
  useE2E,
  waitForPhase,
} from './harness.ts';

const { skip, e2e } = useE2E();

const TABLE = 'CREATE TABLE public.items (id bigint PRIMARY KEY);\n';

function condition(s: PtahSchema, type: string) {
  return s.status?.conditions?.find((c) => c.type === type);
}

describe('causes in status', { skip }, () => {
  it('a missing Secret fails the first operation with CredentialUnavailable; creating it recovers', async () => {
    const url = await e2e().env.postgres!.createDatabase('nosecret_db');
    await createSource(e2e(), 'nosecret-src', { 'schema.sql': TABLE });
    const started = Date.now();
    await createSchema(e2e(), 'nosecret', {
      source: 'nosecret-src',
      secret: 'nosecret-db',
      policy: { apply: 'Always' },
    });
    const failed = await waitForPhase(e2e(), 'nosecret', ['Failed', 'InSync'], 60_000);
    if (failed.status?.phase !== 'Failed') await dumpDebug(e2e(), 'nosecret');
    assert.equal(failed.status?.phase, 'Failed');
    const cause = condition(failed, 'ReconciliationFailed');
    assert.equal(cause?.status, 'True');
    assert.equal(cause?.reason, 'CredentialUnavailable');
    assert.match(cause?.message ?? '', /Secret [^ ]+\/nosecret-db key url: the Secret does not exist/);
    // One operation, not the Job's 120 s deadline.
    assert.ok(Date.now() - started < 60_000);

    // Retries say the same thing: one Event whose count rises, not an Event per retry.
    const events = await eventually(
      'the CredentialUnavailable Event counts the retries',
      async () => {
        const list = await eventsOf(e2e(), 'nosecret', 'CredentialUnavailable');
        return list.length === 1 && (list[0]!.count ?? 0) >= 2 ? list : undefined;
      },
      60_000,
    );
    assert.equal(events[0]!.type, 'Warning');

    await createSecret(e2e(), 'nosecret-db', url);
    const recovered = await waitForPhase(e2e(), 'nosecret', ['InSync'], 120_000);
    const after = condition(recovered, 'ReconciliationFailed');
    assert.equal(after?.status, 'False', JSON.stringify(after));
  });

  it('a missing key names the Secret and key and never the Secret content', async () => {
    const url = await e2e().env.postgres!.createDatabase('nokey_db');
    await createSource(e2e(), 'nokey-src', { 'schema.sql': TABLE });
    await e2e().core.createNamespacedSecret({
      namespace: e2e().namespace,
      body: { metadata: { name: 'nokey-db' }, stringData: { other: url } },
    });
    await createSchema(e2e(), 'nokey', { source: 'nokey-src', secret: 'nokey-db' });
    const failed = await waitForPhase(e2e(), 'nokey', ['Failed', 'InSync'], 60_000);
    assert.equal(failed.status?.phase, 'Failed');
    const cause = condition(failed, 'ReconciliationFailed');
    assert.equal(cause?.reason, 'CredentialUnavailable');
    assert.match(cause?.message ?? '', /Secret [^ ]+\/nokey-db key url: the Secret has no such key/);
    assert.ok(!JSON.stringify(failed.status).includes(url), 'the Secret value is not in status');
  });
});
