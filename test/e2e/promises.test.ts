// The schema family's promises under misuse (issue 10): a URL whose query redirects the connection, a
// mixed-case protected table, an engine the schema engine does not ship. Each refusal runs no SQL.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { DEFAULT_APPROVAL_WEBHOOK_NAMES } from '../../src/admission/webhook-configurations.ts';
import { API_GROUP, API_VERSION } from '../../src/api/meta.ts';
import type { PtahSchemaPlan } from '../../src/api/ptah-schema-plan.ts';
import { startPostgres, type PostgresServer } from '../env/postgres.ts';
import {
  at,
  createApproval,
  createSchema,
  createSecret,
  createSource,
  declareSchema,
  dumpDebug,
  eventsOnceRecorded,
  eventually,
  getSchema,
  query,
  schemaJobs,
  statementsIn,
  useE2E,
  waitForPhase,
} from './harness.ts';

const { skip, e2e } = useE2E();

async function plansOf(schema: string): Promise<PtahSchemaPlan[]> {
  const list = (await e2e().objects.listNamespacedCustomObject({
    ...at(e2e(), 'ptahschemaplans'),
    labelSelector: `operator.ptah.run/schema=${schema}`,
  })) as { items: PtahSchemaPlan[] };
  return list.items;
}

/** The termination messages of the Pods whose runner refused the URL. */
async function urlRefusals(): Promise<string[]> {
  const pods = await e2e().core.listNamespacedPod({ namespace: e2e().namespace });
  return pods.items
    .flatMap((p) => p.status?.containerStatuses ?? [])
    .map((c) => c.state?.terminated?.message ?? c.lastState?.terminated?.message ?? '')
    .filter((m) => m.includes('invalid_database_url'));
}

describe('promises under misuse', { skip }, () => {
  let other: PostgresServer | undefined;
  after(async () => {
    await other?.stop();
  });

  it('a Secret repointed with ?host= after approval is refused, and nothing runs on either server', async () => {
    const urlA = await e2e().env.postgres!.createDatabase('redirect_a');
    // A second server holding a database of the same name, reachable with the same credentials: the
    // place a ?host=&port= suffix would send an identity computed from the URL's authority alone.
    other = await startPostgres();
    const a = new URL(urlA);
    await other.createDatabase('redirect_a');
    await query(other.adminUrl, `ALTER ROLE redirect_a PASSWORD '${decodeURIComponent(a.password)}'`);
    await createSecret(e2e(), 'redirect-db', urlA);
    await createSource(e2e(), 'redirect-src', {
      'schema.sql': 'CREATE TABLE public.orders (id bigint PRIMARY KEY, note text);\n',
    });
    await createSchema(e2e(), 'redirect', {
      source: 'redirect-src',
      secret: 'redirect-db',
      policy: { apply: 'OnApproval' },
    });
    const waiting = await waitForPhase(e2e(), 'redirect', ['AwaitingApproval', 'Failed', 'Blocked']);
    if (waiting.status?.phase !== 'AwaitingApproval') await dumpDebug(e2e(), 'redirect');
    assert.equal(waiting.status?.phase, 'AwaitingApproval');
    const plan = waiting.status!.plan!;

    // Same authority, path and user as the approved plan's target; the query moves the connection.
    const redirected = `${urlA}?host=127.0.0.1&port=${other.port}`;
    await e2e().core.replaceNamespacedSecret({
      namespace: e2e().namespace,
      name: 'redirect-db',
      body: { metadata: { name: 'redirect-db' }, stringData: { url: redirected } },
    });
    await createApproval(e2e(), 'redirect-approval', {
      schema: { name: 'redirect', uid: waiting.metadata.uid! },
      plan: { name: plan.name, uid: plan.uid },
      fingerprint: plan.fingerprint,
    });

    const refused = await eventually('the apply is refused for its URL', async () => {
      const s = await getSchema(e2e(), 'redirect');
      return s.status?.journal?.entries.some(
        (e) => e.type === 'OperationFailed' && e.operation === 'Apply' && e.reason === 'InvalidDatabaseUrl',
      )
        ? s
        : undefined;
    }).catch(async (error: unknown) => {
      await dumpDebug(e2e(), 'redirect');
      throw error;
    });
    assert.notEqual(refused.status?.phase, 'InSync');
    assert.equal(refused.status?.applied, undefined, 'nothing is recorded as applied');
    const events = await eventsOnceRecorded(e2e(), 'redirect', 'InvalidDatabaseUrl');
    assert.ok(events.length >= 1, 'an InvalidDatabaseUrl Event');
    assert.equal(events[0]!.type, 'Warning');

    // The runner's refusal names the parameter; the URL and password appear nowhere the user reads.
    const logs = await urlRefusals();
    assert.ok(
      logs.some((m) => /parameter \\?"host\\?" would redirect/.test(m)),
      `a Pod's termination message names ?host=: ${logs.join(' | ')}`,
    );
    const visible = JSON.stringify([refused.status, events.map((e) => e.message), logs]);
    assert.ok(!visible.includes(decodeURIComponent(a.password)), 'no password');
    assert.ok(!visible.includes(redirected), 'no URL');

    for (const server of [e2e().env.postgres!, other]) {
      const mutations = server
        .statements()
        .filter((st) => st.database === 'redirect_a' && /CREATE TABLE|ALTER TABLE|DROP /i.test(st.sql));
      assert.deepEqual(mutations, [], `no mutation ran on the server at port ${server.port}`);
      const tables = await query(
        server.port === e2e().env.postgres!.port ? urlA : urlA.replace(`:${a.port}/`, `:${other.port}/`),
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'",
      );
      assert.deepEqual(tables, [], `no table was created on the server at port ${server.port}`);
    }
  });

  it('a mixed-case protected table is refused for every change the declaration makes to it', async () => {
    await declareSchema(e2e(), 'mixedcase', {
      existing:
        'CREATE TABLE public."Orders" (id bigint PRIMARY KEY, legacy text, n int);' +
        ' CREATE INDEX orders_n ON public."Orders" (n)',
      data: {
        'schema.sql': [
          'CREATE TABLE public."Orders" (id bigint PRIMARY KEY, n bigint NOT NULL DEFAULT 0, note text);',
          'CREATE INDEX orders_note ON public."Orders" (note);',
          `COMMENT ON TABLE public."Orders" IS 'customer orders';`,
          `INSERT INTO public."Orders" (id, n, note) VALUES (1, 1, 'declared');`,
          '',
        ].join('\n'),
      },
      policy: { apply: 'Always', allowDestructive: true, protectedTables: ['public."Orders"'] },
    });
    const s = await waitForPhase(e2e(), 'mixedcase', ['Blocked', 'InSync', 'Failed']);
    if (s.status?.phase !== 'Blocked') await dumpDebug(e2e(), 'mixedcase');
    assert.equal(s.status?.phase, 'Blocked');
    assert.equal(s.status?.conditions?.find((c) => c.type === 'PlanReady')?.reason, 'ProtectedTable');
    assert.equal(s.status?.plan, undefined, 'no plan is published');
    assert.deepEqual(await plansOf('mixedcase'), [], 'no PtahSchemaPlan exists');
    assert.ok((await eventsOnceRecorded(e2e(), 'mixedcase', 'ProtectedTableRefused')).length >= 1);
    assert.deepEqual(
      statementsIn(e2e(), 'mixedcase_db', /ALTER TABLE|CREATE INDEX|DROP |COMMENT ON|INSERT INTO/i).filter(
        (sql) => !/orders_n ON public."Orders"|CREATE TABLE public."Orders"/.test(sql),
      ),
      [],
      'nothing ran against "Orders"',
    );
  });

  it('an engine the schema engine ships no dialect for is Blocked UnsupportedEngine, with no Job', async () => {
    await createSource(e2e(), 'sqlite-src', { 'schema.sql': 'CREATE TABLE t (id int PRIMARY KEY);\n' });
    await createSecret(e2e(), 'sqlite-db', 'postgres://app:pw@127.0.0.1:5432/app');
    await e2e().objects.createNamespacedCustomObject({
      ...at(e2e(), 'ptahschemas'),
      body: {
        apiVersion: `${API_GROUP}/${API_VERSION}`,
        kind: 'PtahSchema',
        metadata: { name: 'on-sqlite' },
        spec: {
          target: {
            engine: 'sqlite',
            coordinationKey: 'on-sqlite',
            urlFrom: { name: 'sqlite-db', key: 'url' },
          },
          desired: { configMap: { name: 'sqlite-src', files: [{ key: 'schema.sql' }] } },
          interval: '10m',
        },
      },
    });
    const s = await waitForPhase(e2e(), 'on-sqlite', ['Blocked', 'Failed', 'InSync']);
    assert.equal(s.status?.phase, 'Blocked');
    const engine = s.status?.conditions?.find((c) => c.type === 'EngineSupported');
    assert.equal(engine?.status, 'False');
    assert.equal(engine?.reason, 'UnsupportedEngine');
    assert.match(
      engine?.message ?? '',
      /spec.target.engine is "sqlite"; the schema engine ships postgres, mysql/,
    );
    assert.deepEqual(await schemaJobs(e2e(), 'on-sqlite'), [], 'no Job starts');
  });
  it('an approval for a plan its policy will not apply is refused by admission, with the reason', async () => {
    await declareSchema(e2e(), 'unappliable', {
      data: { 'schema.sql': 'CREATE TABLE public.legacy (id bigint PRIMARY KEY);\n' },
      existing: 'CREATE TABLE public.legacy (id bigint PRIMARY KEY, note text)',
      policy: { apply: 'OnApproval', allowDestructive: false },
    });
    const s = await waitForPhase(e2e(), 'unappliable', ['Blocked', 'AwaitingApproval', 'Failed', 'InSync']);
    if (s.status?.phase !== 'Blocked') await dumpDebug(e2e(), 'unappliable');
    assert.equal(s.status?.phase, 'Blocked');
    assert.equal(s.status?.conditions?.find((c) => c.type === 'Ready')?.reason, 'DestructiveChangesDisabled');
    const plan = s.status?.plan;
    assert.ok(plan, 'the destructive plan is recorded');
    const refusal = await createApproval(e2e(), 'unappliable-approval', {
      schema: { name: 'unappliable', uid: s.metadata.uid! },
      plan: { name: plan.name, uid: plan.uid },
      fingerprint: plan.fingerprint,
    }).then(
      () => undefined,
      (error: unknown) => error as { code?: number; body?: unknown },
    );
    assert.ok(refusal, 'the approval is not admitted');
    assert.equal(refusal.code, 403);
    assert.match(
      String(refusal.body),
      /is destructive and PtahSchema unappliable has spec\.policy\.allowDestructive false/,
    );
    assert.deepEqual(statementsIn(e2e(), 'unappliable_db', /ALTER TABLE|DROP /i), []);
  });

  // Last: it removes the approval webhooks for a while and registers them again.
  it('while the approval webhooks are not registered, no approval is accepted, typed or not', async () => {
    const reg = e2e().admin.makeApiClient(k8s.AdmissionregistrationV1Api);
    const mutating = await reg.readMutatingWebhookConfiguration({
      name: DEFAULT_APPROVAL_WEBHOOK_NAMES.mutating,
    });
    const validating = await reg.readValidatingWebhookConfiguration({
      name: DEFAULT_APPROVAL_WEBHOOK_NAMES.validating,
    });
    await declareSchema(e2e(), 'unhooked', {
      data: { 'schema.sql': 'CREATE TABLE public.orders (id bigint PRIMARY KEY);\n' },
      policy: { apply: 'OnApproval' },
    });
    const waiting = await waitForPhase(e2e(), 'unhooked', ['AwaitingApproval', 'Failed', 'Blocked']);
    assert.equal(waiting.status?.phase, 'AwaitingApproval');
    const plan = waiting.status!.plan!;
    await reg.deleteMutatingWebhookConfiguration({ name: DEFAULT_APPROVAL_WEBHOOK_NAMES.mutating });
    await reg.deleteValidatingWebhookConfiguration({ name: DEFAULT_APPROVAL_WEBHOOK_NAMES.validating });
    const fresh = (o: { metadata?: k8s.V1ObjectMeta }) => ({
      ...o,
      metadata: { name: o.metadata!.name!, ...(o.metadata?.labels ? { labels: o.metadata.labels } : {}) },
    });
    try {
      // Nothing stamps or checks it now: approver, time and request UID are all what the client typed.
      await e2e()
        .approver.makeApiClient(k8s.CustomObjectsApi)
        .createNamespacedCustomObject({
          ...at(e2e(), 'ptahschemaapprovals'),
          body: {
            apiVersion: `${API_GROUP}/${API_VERSION}`,
            kind: 'PtahSchemaApproval',
            metadata: { name: 'unhooked-typed' },
            spec: {
              schemaRef: { name: 'unhooked', uid: waiting.metadata.uid! },
              planRef: { name: plan.name, uid: plan.uid },
              planFingerprint: plan.fingerprint,
              approver: { username: 'ceo@example.com' },
              approvedAt: '2026-01-01T00:00:00Z',
              mutationRequestUID: 'typed-by-hand',
            },
          },
        });
      const refused = await eventually('the waiting resource says why approvals are refused', async () => {
        const s = await getSchema(e2e(), 'unhooked');
        const c = s.status?.conditions?.find((x) => x.type === 'ApprovalRequired');
        return c?.reason === 'ApprovalWebhooksMissing' ? { s, c } : undefined;
      });
      assert.equal(refused.s.status?.phase, 'AwaitingApproval');
      assert.match(
        refused.c.message,
        /no MutatingWebhookConfiguration sends PtahSchemaApproval CREATE to \/mapproval/,
      );
      assert.equal(refused.s.status?.claim, undefined, 'no Apply is claimed');
      assert.deepEqual(statementsIn(e2e(), 'unhooked_db', /CREATE TABLE/i), []);
    } finally {
      await reg.createMutatingWebhookConfiguration({ body: fresh(mutating) });
      await reg.createValidatingWebhookConfiguration({ body: fresh(validating) });
    }
    // Registered again, the condition goes back to waiting for an approval; the typed one stays unused
    // because it is older than the guard (its stamp is the client's own claim). A label change wakes the
    // resource: webhook configurations are not watched.
    await e2e().objects.patchNamespacedCustomObject(
      { ...at(e2e(), 'ptahschemas'), name: 'unhooked', body: { metadata: { labels: { poke: '1' } } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    const back = await eventually('approvals are read again', async () => {
      const s = await getSchema(e2e(), 'unhooked');
      return s.status?.conditions?.find((x) => x.type === 'ApprovalRequired')?.reason === 'AwaitingApproval'
        ? s
        : undefined;
    });
    assert.equal(back.status?.phase, 'AwaitingApproval');
  });
});
