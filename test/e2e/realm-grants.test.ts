// PtahRealm end to end: an admin's grant of a database realm to namespaces, read by the manager process on
// the local control plane, with operation Pods run by the node agent against a real PostgreSQL whose contents
// and statement log are the evidence. One environment for the file; each test has its own realm and database.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { API_GROUP, API_VERSION } from '../../src/api/meta.ts';
import type { PtahRealmSpec } from '../../src/api/ptah-realm.ts';
import { withSum } from '../env/migration-files.ts';
import {
  at,
  createSecret,
  createSource,
  dumpDebug,
  type E2E,
  eventsOnceRecorded,
  eventually,
  getMigration,
  getSchema,
  migrationWhen,
  query,
  schemaJobs,
  statementsIn,
  useE2E,
  waitForPhase,
} from './harness.ts';

const { skip, e2e } = useE2E();

const realms = () => ({ group: API_GROUP, version: API_VERSION, plural: 'ptahrealms' });

async function createRealm(t: E2E, name: string, spec: PtahRealmSpec): Promise<void> {
  await t.objects.createClusterCustomObject({
    ...realms(),
    body: { apiVersion: `${API_GROUP}/${API_VERSION}`, kind: 'PtahRealm', metadata: { name }, spec },
  });
}

/** What an admin does: replace the realm's list of namespaces. */
async function grantNamespaces(t: E2E, name: string, namespaces: string[]): Promise<void> {
  await t.objects.patchClusterCustomObject(
    { ...realms(), name, body: [{ op: 'replace', path: '/spec/namespaces', value: namespaces }] },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.JsonPatch),
  );
}

const target = (realm: string, secret: string, sharedRealm: boolean) => ({
  engine: 'postgres',
  realmRef: { name: realm },
  ...(sharedRealm ? { sharedRealm } : {}),
  urlFrom: { name: secret, key: 'url' },
});

/** A PtahSchema naming a PtahRealm: database `<name>_db`, Secret `<name>-db`, ConfigMap `<name>-src`. */
async function declareRealmSchema(
  t: E2E,
  name: string,
  realm: string,
  sql: string,
  sharedRealm = false,
): Promise<string> {
  const url = await t.env.postgres!.createDatabase(`${name.replace(/-/g, '_')}_db`);
  await createSecret(t, `${name}-db`, url);
  await createSource(t, `${name}-src`, { 'schema.sql': sql });
  await t.objects.createNamespacedCustomObject({
    ...at(t, 'ptahschemas'),
    body: {
      apiVersion: `${API_GROUP}/${API_VERSION}`,
      kind: 'PtahSchema',
      metadata: { name },
      spec: {
        target: target(realm, `${name}-db`, sharedRealm),
        desired: { configMap: { name: `${name}-src`, files: [{ key: 'schema.sql' }] } },
        policy: { apply: 'Always' },
        interval: '10m',
        execution: { failureRetryInterval: '5s', activeDeadlineSeconds: 120 },
      },
    },
  });
  return url;
}

/** A PtahMigration naming a PtahRealm, applying Always: database `<name>_db`, Secret and ConfigMap likewise. */
async function declareRealmMigration(
  t: E2E,
  name: string,
  realm: string,
  files: Record<string, string>,
  sharedRealm = false,
): Promise<string> {
  const url = await t.env.postgres!.createDatabase(`${name.replace(/-/g, '_')}_db`);
  await createSecret(t, `${name}-db`, url);
  const data = withSum(files);
  await createSource(t, `${name}-src`, data);
  await t.objects.createNamespacedCustomObject({
    ...at(t, 'ptahmigrations'),
    body: {
      apiVersion: `${API_GROUP}/${API_VERSION}`,
      kind: 'PtahMigration',
      metadata: { name },
      spec: {
        target: target(realm, `${name}-db`, sharedRealm),
        desired: { configMap: { name: `${name}-src`, files: Object.keys(data).map((key) => ({ key })) } },
        policy: { apply: 'Always' },
        interval: '10m',
        execution: { failureRetryInterval: '5s', activeDeadlineSeconds: 120 },
      },
    },
  });
  return url;
}

async function migrationJobs(t: E2E, name: string, operation?: string): Promise<k8s.V1Job[]> {
  const selector = `${API_GROUP}/migration=${name}${operation ? `,${API_GROUP}/operation=${operation}` : ''}`;
  return (await t.batch.listNamespacedJob({ namespace: t.namespace, labelSelector: selector })).items;
}

const ready = (o: {
  status?: { conditions?: readonly { type: string; reason: string; message: string }[] };
}) => o.status?.conditions?.find((c) => c.type === 'Ready');

describe('PtahRealm grants', { skip }, () => {
  it('a realm that does not list the namespace refuses the resource until the admin adds it', async () => {
    const t = e2e();
    await createRealm(t, 'orders-realm', {
      engine: 'postgres',
      namespaces: ['elsewhere'],
      sharing: 'Exclusive',
    });
    const url = await declareRealmSchema(
      t,
      'granted',
      'orders-realm',
      'CREATE TABLE public.granted (id int PRIMARY KEY);\n',
    );

    const blocked = await waitForPhase(t, 'granted', ['Blocked', 'InSync', 'Failed'], 60_000);
    if (blocked.status?.phase !== 'Blocked') await dumpDebug(t, 'granted');
    assert.equal(blocked.status?.phase, 'Blocked');
    const refusal = ready(blocked);
    assert.equal(refusal?.reason, 'RealmNotAuthorized');
    assert.equal(
      refusal?.message,
      `PtahRealm orders-realm does not admit namespace ${t.namespace} for engine postgres: an admin must create it with that engine and list ${t.namespace} in its spec.namespaces`,
    );
    const events = await eventsOnceRecorded(t, 'granted', 'RealmNotAuthorized');
    assert.ok(events.length > 0, 'a Warning Event says why');
    assert.equal(events[0]!.type, 'Warning');
    // Refused runs nothing: no Job, and nothing reached the database.
    await sleep(3_000);
    assert.deepEqual(await schemaJobs(t, 'granted'), []);
    assert.deepEqual(statementsIn(t, 'granted_db', /CREATE TABLE/i), []);

    // The admin grants the namespace: the realm's watch wakes the resource, which converges.
    await grantNamespaces(t, 'orders-realm', ['elsewhere', t.namespace]);
    const done = await waitForPhase(t, 'granted', ['InSync', 'Failed'], 120_000);
    if (done.status?.phase !== 'InSync') await dumpDebug(t, 'granted');
    assert.equal(done.status?.phase, 'InSync', JSON.stringify(done.status?.conditions));
    const tables = await query(
      url,
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'",
    );
    assert.deepEqual(
      tables.map((r) => r['table_name']),
      ['granted'],
    );
  });

  it('a Shared realm with one non-consenting claimant refuses every claimant of both families', async () => {
    const t = e2e();
    // Granted only once both claimants exist, so neither runs anything alone before the other appears.
    await createRealm(t, 'shared-realm', {
      engine: 'postgres',
      namespaces: ['elsewhere'],
      sharing: 'Shared',
    });
    await declareRealmSchema(
      t,
      'consenting',
      'shared-realm',
      'CREATE TABLE public.consenting (id int PRIMARY KEY);\n',
      true,
    );
    await declareRealmMigration(t, 'holdout', 'shared-realm', {
      '1_a.sql': 'CREATE TABLE holdout_a (id int PRIMARY KEY);\n',
    });
    await migrationWhen(t, 'holdout', 'not authorized yet', (m) => ready(m)?.reason === 'RealmNotAuthorized');
    await grantNamespaces(t, 'shared-realm', [t.namespace]);

    const expected = `PtahRealm shared-realm is claimed by 2 resources (PtahMigration ${t.namespace}/holdout, PtahSchema ${t.namespace}/consenting) and PtahMigration ${t.namespace}/holdout did not consent to share it; all are refused until every claimant sets spec.target.sharedRealm or one remains`;
    const schema = await eventually(
      'the consenting schema refused',
      async () => {
        const s = await getSchema(t, 'consenting');
        return s.status?.phase === 'Blocked' && ready(s)?.reason === 'RealmConflict' ? s : undefined;
      },
      60_000,
    );
    assert.equal(ready(schema)?.message, expected);
    const migration = await migrationWhen(
      t,
      'holdout',
      'refused',
      (m) => m.status?.phase === 'Blocked' && ready(m)?.reason === 'RealmConflict',
      60_000,
    );
    assert.equal(ready(migration)?.message, expected);
    await sleep(3_000);
    assert.deepEqual(await schemaJobs(t, 'consenting'), [], 'the consenting schema ran nothing');
    assert.deepEqual(await migrationJobs(t, 'holdout'), [], 'the holdout ran nothing');

    // The holdout consents: the census admits both, and each converges on its own database.
    await t.objects.patchNamespacedCustomObject(
      {
        ...at(t, 'ptahmigrations'),
        name: 'holdout',
        body: [{ op: 'add', path: '/spec/target/sharedRealm', value: true }],
      },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.JsonPatch),
    );
    const s = await waitForPhase(t, 'consenting', ['InSync', 'Failed'], 120_000);
    assert.equal(s.status?.phase, 'InSync', JSON.stringify(s.status?.conditions));
    const m = await migrationWhen(t, 'holdout', 'InSync', (x) =>
      ['InSync', 'Failed'].includes(x.status?.phase ?? ''),
    );
    assert.equal(m.status?.phase, 'InSync', JSON.stringify(m.status?.conditions));
    assert.equal(m.status?.lastRun?.outcome, 'Applied');
  });

  it('a grant withdrawn mid-Apply lets the running Apply finish once and refuses the next one', async () => {
    const t = e2e();
    await createRealm(t, 'slow-realm', {
      engine: 'postgres',
      namespaces: [t.namespace],
      sharing: 'Exclusive',
    });
    const first = {
      '1_a.sql':
        'SELECT pg_sleep(8);\nCREATE TABLE slow_a (id int PRIMARY KEY);\nINSERT INTO slow_a VALUES (1);\n',
    };
    const url = await declareRealmMigration(t, 'slow', 'slow-realm', first);

    await migrationWhen(
      t,
      'slow',
      'its Apply dispatched',
      (m) => m.status?.claim?.type === 'Apply' && m.status.claim.dispatchStarted === true,
    );
    // The admin withdraws the grant while the Apply's Job runs.
    await grantNamespaces(t, 'slow-realm', ['elsewhere']);

    const blocked = await migrationWhen(
      t,
      'slow',
      'Blocked after its Apply',
      (m) => m.status?.phase === 'Blocked' && m.status.claim === undefined,
      120_000,
    );
    assert.equal(ready(blocked)?.reason, 'RealmNotAuthorized');
    assert.match(ready(blocked)?.message ?? '', /^PtahRealm slow-realm does not admit namespace /);
    // The running Apply finished and was recorded; its statements ran exactly once.
    assert.equal(blocked.status?.lastRun?.outcome, 'Applied', JSON.stringify(blocked.status?.lastRun));
    assert.deepEqual(blocked.status?.lastRun?.appliedVersions, ['1']);
    assert.deepEqual(await query(url, 'SELECT id FROM slow_a'), [{ id: 1 }]);
    assert.equal(statementsIn(t, 'slow_db', /INSERT INTO slow_a/i).length, 1);
    assert.equal((await migrationJobs(t, 'slow', 'apply')).length, 1);

    // The next mutating operation is refused: a new version waits, unapplied, while the grant is withdrawn.
    await t.core.replaceNamespacedConfigMap({
      name: 'slow-src',
      namespace: t.namespace,
      body: {
        metadata: { name: 'slow-src' },
        data: withSum({ ...first, '2_b.sql': 'CREATE TABLE slow_b (id int PRIMARY KEY);\n' }),
      },
    });
    await t.objects.patchNamespacedCustomObject(
      {
        ...at(t, 'ptahmigrations'),
        name: 'slow',
        body: [
          {
            op: 'add',
            path: '/spec/desired/configMap/files/-',
            value: { key: '2_b.sql' },
          },
        ],
      },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.JsonPatch),
    );
    await sleep(8_000);
    const still = await getMigration(t, 'slow');
    assert.equal(still.status?.phase, 'Blocked');
    assert.equal(ready(still)?.reason, 'RealmNotAuthorized');
    assert.equal(still.status?.observedGeneration, still.metadata.generation, 'the new spec was read');
    assert.equal((await migrationJobs(t, 'slow', 'apply')).length, 1, 'no second Apply');
    assert.deepEqual(statementsIn(t, 'slow_db', /CREATE TABLE slow_b/i), []);
  });
});
