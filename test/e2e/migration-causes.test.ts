// Causes reach a PtahMigration's status as they reach a PtahSchema's (causes.test.ts): each failure ends
// its first operation with the classified cause in the ReconciliationFailed condition and one Warning Event,
// never the server's text nor the URL, and a recovered resource clears it. The history read meets the
// credential and connection failures; a bad migration file fails its Apply with the SQLSTATE the database
// answered. One environment for the file.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { API_GROUP, API_VERSION } from '../../src/api/meta.ts';
import type { PtahMigration } from '../../src/api/ptah-migration.ts';
import { freePort } from '../env/ports.ts';
import {
  assertCause,
  at,
  createSecret,
  migrationWhen,
  query,
  replaceSecret,
  useE2E,
  withSum,
} from './harness.ts';

const { skip, e2e } = useE2E();

const FIRST = { '20260101000000_items.sql': 'CREATE TABLE public.items (id bigint PRIMARY KEY);\n' };

const condition = (m: PtahMigration, type: string) => m.status?.conditions?.find((c) => c.type === type);

/** The ConfigMap with its ptah.sum and the PtahMigration (policy Always) reading it through `secret`. */
async function declare(name: string, files: Record<string, string>, secret = `${name}-db`): Promise<void> {
  await e2e().core.createNamespacedConfigMap({
    namespace: e2e().namespace,
    body: { metadata: { name: `${name}-src` }, data: withSum(files) },
  });
  await e2e().objects.createNamespacedCustomObject({
    ...at(e2e(), 'ptahmigrations'),
    body: {
      apiVersion: `${API_GROUP}/${API_VERSION}`,
      kind: 'PtahMigration',
      metadata: { name },
      spec: {
        target: { engine: 'postgres', coordinationKey: name, urlFrom: { name: secret, key: 'url' } },
        desired: {
          configMap: { name: `${name}-src`, files: Object.keys(withSum(files)).map((key) => ({ key })) },
        },
        policy: { apply: 'Always' },
        interval: '10m',
        execution: { failureRetryInterval: '5s', activeDeadlineSeconds: 120 },
      },
    },
  });
}

/** Waits for the first settled phase, which must be Failed within one operation's time. */
async function failed(name: string): Promise<PtahMigration> {
  const m = await migrationWhen(e2e(), name, 'a settled phase', (x) =>
    ['Failed', 'InSync', 'Blocked'].includes(x.status?.phase ?? ''),
  );
  assert.equal(m.status?.phase, 'Failed', JSON.stringify(m.status?.conditions));
  return m;
}

async function recovered(name: string): Promise<void> {
  const m = await migrationWhen(e2e(), name, 'InSync', (x) => x.status?.phase === 'InSync');
  const after = condition(m, 'ReconciliationFailed');
  assert.equal(after?.status, 'False', JSON.stringify(after));
  assert.equal(after?.reason, 'Succeeded');
}

describe('causes in a PtahMigration status', { skip }, () => {
  it('a missing Secret is CredentialUnavailable naming the Secret and key; creating it recovers', async () => {
    const url = await e2e().env.postgres!.createDatabase('m_nosecret_db');
    const started = Date.now();
    await declare('m-nosecret', FIRST);
    const m = await failed('m-nosecret');
    await assertCause(
      e2e(),
      m,
      'CredentialUnavailable',
      /Secret [^ ]+\/m-nosecret-db key url: the Secret does not exist/,
    );
    assert.ok(Date.now() - started < 90_000, 'within one operation, not the Job deadline');
    await createSecret(e2e(), 'm-nosecret-db', url);
    await recovered('m-nosecret');
  });

  it('a wrong password is DatabaseAuthenticationFailed with SQLSTATE 28P01, never the URL', async () => {
    const url = await e2e().env.postgres!.createDatabase('m_password_db');
    const wrong = new URL(url);
    wrong.password = 'not-the-password';
    await createSecret(e2e(), 'm-password-db', wrong.toString());
    await declare('m-password', FIRST);
    const m = await failed('m-password');
    await assertCause(
      e2e(),
      m,
      'DatabaseAuthenticationFailed',
      /SQLSTATE 28P01 \(invalid password; class 28: invalid authorization specification\)/,
    );
    const text = JSON.stringify(m.status);
    assert.ok(!text.includes('not-the-password') && !text.includes('password authentication failed'));
    await replaceSecret(e2e(), 'm-password-db', url);
    await recovered('m-password');
  });

  it('a database that does not exist is DatabaseNotFound with SQLSTATE 3D000', async () => {
    const url = await e2e().env.postgres!.createDatabase('m_present_db');
    const missing = new URL(url);
    missing.pathname = '/m_absent_db';
    await createSecret(e2e(), 'm-missingdb-db', missing.toString());
    await declare('m-missingdb', FIRST);
    await assertCause(
      e2e(),
      await failed('m-missingdb'),
      'DatabaseNotFound',
      /SQLSTATE 3D000 \(class 3D: invalid catalog name\)/,
    );
    await replaceSecret(e2e(), 'm-missingdb-db', url);
    await recovered('m-missingdb');
  });

  it('a closed port is ConnectionRefused', async () => {
    const url = await e2e().env.postgres!.createDatabase('m_closed_db');
    const closed = new URL(url);
    closed.port = String(await freePort());
    await createSecret(e2e(), 'm-closedport-db', closed.toString());
    await declare('m-closedport', FIRST);
    await assertCause(e2e(), await failed('m-closedport'), 'ConnectionRefused', /connection refused/);
    await replaceSecret(e2e(), 'm-closedport-db', url);
    await recovered('m-closedport');
  });

  it('a bad migration file fails its Apply with the SQLSTATE the database answered; a fixed file recovers', async () => {
    const url = await e2e().env.postgres!.createDatabase('m_badfile_db');
    await createSecret(e2e(), 'm-badfile-db', url);
    // The only pending file, so the run fails whole (one transaction) and nothing of it is applied.
    await declare('m-badfile', { '20260101000000_bad.sql': 'CREATE TABL oops (id int);\n' });
    const m = await failed('m-badfile');
    const cause = condition(m, 'ReconciliationFailed');
    assert.match(cause?.message ?? '', /SQLSTATE 42601/, JSON.stringify(cause));
    await assertCause(e2e(), m, cause!.reason, /SQLSTATE 42601/);
    assert.ok(!JSON.stringify(m.status).includes('oops'), 'no statement text in status');
    await e2e().core.replaceNamespacedConfigMap({
      name: 'm-badfile-src',
      namespace: e2e().namespace,
      body: {
        metadata: { name: 'm-badfile-src' },
        data: withSum({ '20260101000000_bad.sql': 'CREATE TABLE public.fixed (id int);\n' }),
      },
    });
    await recovered('m-badfile');
    const rows = await query(url, "SELECT count(*)::int AS n FROM pg_tables WHERE tablename = 'fixed'");
    assert.equal(rows[0]!['n'], 1);
  });
});
