// The PtahSchema lifecycle end to end: the manager process against the local control plane, operation
// Pods run by the node agent, and a real PostgreSQL whose contents and statement log are the evidence.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import * as k8s from '@kubernetes/client-node';
import type { PtahSchemaApproval } from '../../src/api/ptah-schema-approval.ts';
import {
  at,
  createApproval,
  declareSchema,
  dumpDebug,
  eventually,
  getSchema,
  operationJobs,
  query,
  schemaJobs,
  statementsIn,
  useE2E,
  waitForPhase,
} from './harness.ts';

const { skip, e2e } = useE2E();

const ORDERS = `
CREATE TABLE public.order_status (code text PRIMARY KEY, label text NOT NULL);
CREATE TABLE public.orders (id bigint PRIMARY KEY, status text NOT NULL REFERENCES public.order_status (code));
INSERT INTO public.order_status (code, label) VALUES ('new', 'New'), ('paid', 'Paid');
`;

describe('PtahSchema from a ConfigMap source', { skip }, () => {
  it('apply Always reaches InSync and the database holds the declared schema and rows', async () => {
    const url = await declareSchema(e2e(), 'always', {
      data: { 'schema.sql': ORDERS },
      policy: { apply: 'Always' },
    });
    const s = await waitForPhase(e2e(), 'always', ['InSync', 'Failed', 'Blocked'], 90_000);
    if (s.status?.phase !== 'InSync') await dumpDebug(e2e(), 'always');
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
    // Harvested Jobs get the cleanup TTL, the one field the manager adds to an existing Job.
    const jobs = await eventually(
      'every harvested Job has its cleanup TTL',
      async () => {
        const all = await schemaJobs(e2e(), 'always');
        return all.length === 5 && all.every((j) => j.spec?.ttlSecondsAfterFinished === 300)
          ? all
          : undefined;
      },
      30_000,
    );
    for (const j of jobs) {
      const pod = j.spec!.template.spec!;
      assert.equal(pod.automountServiceAccountToken, false);
      assert.equal(j.spec!.backoffLimit, 0);
      const url = pod.containers[0]!.env!.find((e) => e.name === 'PTAH_DB_URL')!;
      assert.deepEqual(url.valueFrom?.secretKeyRef?.name, 'always-db');
    }
    assert.deepEqual(jobs.map((j) => j.metadata?.labels?.['operator.ptah.run/operation']).sort(), [
      'apply',
      'observe',
      'observe',
      'plan',
      'plan',
    ]);
  });

  async function planCount(schema: string): Promise<number> {
    const list = (await e2e().objects.listNamespacedCustomObject({
      ...at(e2e(), 'ptahschemaplans'),
      labelSelector: `operator.ptah.run/schema=${schema}`,
    })) as { items: unknown[] };
    return list.items.length;
  }

  it('OnApproval waits; a wrong fingerprint never applies; a forged approver is stamped; the exact approval applies once', async () => {
    await declareSchema(e2e(), 'approval', { data: { 'schema.sql': ORDERS } });
    const waiting = await waitForPhase(e2e(), 'approval', ['AwaitingApproval', 'Failed', 'Blocked']);
    if (waiting.status?.phase !== 'AwaitingApproval') await dumpDebug(e2e(), 'approval');
    assert.equal(waiting.status?.phase, 'AwaitingApproval');
    const plan = waiting.status!.plan!;
    const schemaRef = { name: 'approval', uid: waiting.metadata.uid! };
    const planRef = { name: plan.name, uid: plan.uid };

    // A wrong fingerprint: refused by admission, or, if it got in, never applied.
    await createApproval(e2e(), 'wrong', {
      schema: schemaRef,
      plan: planRef,
      fingerprint: `sha256:${'0'.repeat(64)}`,
    }).catch(() => undefined);
    await sleep(4_000);
    assert.equal((await getSchema(e2e(), 'approval')).status?.phase, 'AwaitingApproval');
    assert.deepEqual(statementsIn(e2e(), 'approval_db', /CREATE TABLE/i), [], 'no statement of the plan ran');

    const stored = await createApproval(
      e2e(),
      'exact',
      { schema: schemaRef, plan: planRef, fingerprint: plan.fingerprint },
      'mallory',
    );
    assert.equal(
      stored.spec.approver?.username,
      e2e().env.controlPlane.identities.approver,
      'admission stamped the real identity',
    );
    assert.ok(!stored.spec.approver?.groups?.includes('system:masters'));

    const done = await waitForPhase(e2e(), 'approval', ['InSync', 'Failed', 'Blocked']);
    if (done.status?.phase !== 'InSync') await dumpDebug(e2e(), 'approval');
    assert.equal(done.status?.phase, 'InSync');
    assert.equal(done.status?.applied?.planRef.uid, plan.uid);
    assert.equal(
      statementsIn(e2e(), 'approval_db', /CREATE TABLE\s+(IF NOT EXISTS\s+)?"?public"?\."?orders"?/i).length,
      1,
      'applied exactly once',
    );
    const consumed = await eventually('approval consumed', async () => {
      const a = (await e2e().objects.getNamespacedCustomObject({
        ...at(e2e(), 'ptahschemaapprovals'),
        name: 'exact',
      })) as PtahSchemaApproval;
      return a.status?.conditions?.some((c) => c.type === 'Consumed' && c.status === 'True') ? a : undefined;
    });
    assert.ok(consumed);
    const journal: string[] = done.status?.journal?.entries.map((e) => e.type) ?? [];
    for (const t of ['PlanPublished', 'ApprovalAccepted', 'ApplyFinished', 'Verified'])
      assert.ok(journal.includes(t), t);

    // The replay of issue 16, as a cluster admin: the consumed approval made to count again, the schema
    // put back to waiting on its applied plan. Both status writes are refused, and no second Apply runs.
    const statusGuard =
      /ValidatingAdmissionPolicy 'ptah-status-guard' .* is written only by the Ptah manager/;
    await assert.rejects(
      e2e().objects.patchNamespacedCustomObjectStatus(
        { ...at(e2e(), 'ptahschemaapprovals'), name: 'exact', body: { status: { conditions: [] } } },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      ),
      (error: unknown) => statusGuard.test(String((error as k8s.ApiException<unknown>).body)),
    );
    await assert.rejects(
      e2e().objects.patchNamespacedCustomObjectStatus(
        {
          ...at(e2e(), 'ptahschemas'),
          name: 'approval',
          body: { status: { phase: 'AwaitingApproval', applied: null, plan: done.status!.plan } },
        },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      ),
      (error: unknown) => statusGuard.test(String((error as k8s.ApiException<unknown>).body)),
    );
    await sleep(3_000);
    assert.equal(
      (await operationJobs(e2e(), 'approval', 'apply')).length,
      1,
      'one Apply Job, never a second',
    );
    assert.equal(
      statementsIn(e2e(), 'approval_db', /CREATE TABLE\s+(IF NOT EXISTS\s+)?"?public"?\."?orders"?/i).length,
      1,
      'the plan still ran exactly once',
    );
  });

  it('a Job copied from the manager with an annotation changed, an extra volume or another image is refused, as is a plan stamped by another manager image', async () => {
    const [apply] = await operationJobs(e2e(), 'approval', 'apply');
    assert.ok(apply, 'the Apply Job of the approval test is still there (its TTL is minutes)');
    const manager = new k8s.KubeConfig();
    manager.loadFromFile(e2e().env.controlPlane.kubeconfigs.manager);
    const senders = {
      'cluster admin': e2e().batch,
      'the manager identity': manager.makeApiClient(k8s.BatchV1Api),
    };
    const {
      uid: _u,
      resourceVersion: _r,
      creationTimestamp: _c,
      managedFields: _m,
      generation: _g,
      ...meta
    } = apply.metadata!;
    const copy = (edit: (j: k8s.V1Job) => void): k8s.V1Job => {
      const j = structuredClone({ apiVersion: 'batch/v1', kind: 'Job', metadata: meta, spec: apply.spec });
      // The selector and its labels are the API server's, made again for a new Job.
      delete j.spec!.selector;
      for (const k of Object.keys(j.spec!.template.metadata!.labels!)) {
        if (/(^|\/)(controller-uid|job-name)$/.test(k)) delete j.spec!.template.metadata!.labels![k];
      }
      edit(j);
      return j;
    };
    const edits: Record<string, (j: k8s.V1Job) => void> = {
      'one annotation changed': (j) =>
        (j.metadata!.annotations!['operator.ptah.run/input-fingerprint'] = `sha256:${'0'.repeat(64)}`),
      'an extra volume': (j) => j.spec!.template.spec!.volumes!.push({ name: 'extra', emptyDir: {} }),
      'another image': (j) => (j.spec!.template.spec!.containers[0]!.image = 'ptah.local/ptah-runner:other'),
    };
    for (const [who, batch] of Object.entries(senders)) {
      for (const [what, edit] of Object.entries(edits)) {
        await assert.rejects(
          batch.createNamespacedJob({ namespace: e2e().namespace, body: copy(edit), dryRun: 'All' }),
          (error: unknown) => {
            const body = String((error as k8s.ApiException<unknown>).body);
            // The typed Job policy or vcontrollerwrite, whichever answers first: both name their rule.
            return (
              /ptah-job-shape|vcontrollerwrite/.test(body) &&
              (error as k8s.ApiException<unknown>).code === 403
            );
          },
          `${who}: ${what}`,
        );
      }
    }
    // A plan stamped by another manager release: the schema-plan policy holds the image literal.
    const done = await getSchema(e2e(), 'approval');
    const plan = (await e2e().objects.getNamespacedCustomObject({
      ...at(e2e(), 'ptahschemaplans'),
      name: done.status!.applied!.planRef.name,
    })) as { metadata: k8s.V1ObjectMeta; spec: { binding: Record<string, unknown> } };
    const foreign = {
      apiVersion: 'operator.ptah.run/v1alpha1',
      kind: 'PtahSchemaPlan',
      metadata: {
        name: `${plan.metadata.name!.slice(0, 40)}-foreign`,
        labels: plan.metadata.labels,
        ownerReferences: plan.metadata.ownerReferences,
      },
      spec: {
        ...plan.spec,
        binding: { ...plan.spec.binding, managerImage: `ptah.local/ptah-operator@sha256:${'f'.repeat(64)}` },
      },
    };
    for (const kc of [e2e().admin, manager]) {
      await assert.rejects(
        kc.makeApiClient(k8s.CustomObjectsApi).createNamespacedCustomObject({
          ...at(e2e(), 'ptahschemaplans'),
          body: foreign,
          dryRun: 'All',
        }),
        (error: unknown) => /ptah-schema-plan-shape/.test(String((error as k8s.ApiException<unknown>).body)),
      );
    }
  });

  it('an edit to an unselected key publishes nothing; an edit to a selected key retires the plan and publishes a new one', async () => {
    await declareSchema(e2e(), 'edit', { data: { 'schema.sql': ORDERS, 'notes.txt': 'first' } });
    const first = await waitForPhase(e2e(), 'edit', ['AwaitingApproval', 'Failed', 'Blocked']);
    assert.equal(first.status?.phase, 'AwaitingApproval');
    const plan1 = first.status!.plan!;

    await e2e().core.patchNamespacedConfigMap(
      { namespace: e2e().namespace, name: 'edit-src', body: { data: { 'notes.txt': 'second' } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    await sleep(5_000);
    const still = await getSchema(e2e(), 'edit');
    assert.equal(still.status?.plan?.name, plan1.name, 'the plan is kept');
    assert.equal(still.status?.resolution?.contentDigest, first.status?.resolution?.contentDigest);
    assert.equal(await planCount('edit'), 1, 'nothing new is published');

    await e2e().core.patchNamespacedConfigMap(
      {
        namespace: e2e().namespace,
        name: 'edit-src',
        body: { data: { 'schema.sql': ORDERS + 'CREATE TABLE public.customers (id bigint PRIMARY KEY);\n' } },
      },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    const second = await eventually(
      'a new plan',
      async () => {
        const s = await getSchema(e2e(), 'edit');
        return s.status?.phase === 'AwaitingApproval' && s.status.plan && s.status.plan.name !== plan1.name
          ? s
          : undefined;
      },
      60_000,
    );
    assert.notEqual(second.status?.resolution?.contentDigest, first.status?.resolution?.contentDigest);
    // The old snapshot goes once nothing names it.
    await eventually(
      'only the current snapshot is kept',
      async () => {
        const cms = await e2e().core.listNamespacedConfigMap({
          namespace: e2e().namespace,
          labelSelector: 'app.kubernetes.io/component=source-snapshot,operator.ptah.run/schema=edit',
        });
        const names = cms.items.map((c) => c.metadata!.name);
        return names.length === 1 && names[0] === second.status?.resolution?.snapshotName ? true : undefined;
      },
      30_000,
    );
    // The retired plan and its chunks go once nothing names them; the new one stays.
    await eventually(
      'only the current plan and its chunks are kept',
      async () => {
        const chunks = (await e2e().objects.listNamespacedCustomObject({
          ...at(e2e(), 'ptahschemaplanchunks'),
          labelSelector: `app.kubernetes.io/component=plan-chunk,operator.ptah.run/plan=${plan1.name}`,
        })) as { items: unknown[] };
        return (await planCount('edit')) === 1 && chunks.items.length === 0 ? true : undefined;
      },
      30_000,
    );
    const current = (await e2e().objects.listNamespacedCustomObject({
      ...at(e2e(), 'ptahschemaplanchunks'),
      labelSelector: `app.kubernetes.io/component=plan-chunk,operator.ptah.run/plan=${second.status!.plan!.name}`,
    })) as { items: unknown[] };
    assert.ok(current.items.length > 0, 'the current plan keeps its chunks');
    // The retired plan cannot be approved any more.
    const stale = await createApproval(e2e(), 'edit-stale', {
      schema: { name: 'edit', uid: first.metadata.uid! },
      plan: { name: plan1.name, uid: plan1.uid },
      fingerprint: plan1.fingerprint,
    }).then(
      () => 'accepted',
      () => 'refused',
    );
    await sleep(3_000);
    assert.equal(
      (await getSchema(e2e(), 'edit')).status?.phase,
      'AwaitingApproval',
      `stale approval ${stale} never applies`,
    );
    assert.deepEqual(statementsIn(e2e(), 'edit_db', /CREATE TABLE/i), []);
  });

  it('a destructive change with allowDestructive false ends Blocked and runs no SQL', async () => {
    const url = await declareSchema(e2e(), 'destructive', {
      data: {
        'schema.sql': 'CREATE TABLE public.legacy (id bigint PRIMARY KEY);',
      },
      existing: 'CREATE TABLE public.legacy (id bigint PRIMARY KEY, note text)',
      policy: { apply: 'Always' },
    });
    const s = await waitForPhase(e2e(), 'destructive', ['Blocked', 'InSync', 'Failed']);
    if (s.status?.phase !== 'Blocked') await dumpDebug(e2e(), 'destructive');
    assert.equal(s.status?.phase, 'Blocked');
    assert.equal(s.status?.conditions?.find((c) => c.type === 'Ready')?.reason, 'DestructiveChangesDisabled');
    assert.deepEqual(statementsIn(e2e(), 'destructive_db', /ALTER TABLE|DROP /i), []);
    const cols = await query(
      url,
      "SELECT column_name FROM information_schema.columns WHERE table_name = 'legacy' ORDER BY 1",
    );
    assert.deepEqual(
      cols.map((r) => r['column_name']),
      ['id', 'note'],
    );
  });

  it('a change to a protected table ends Blocked with reason ProtectedTable and runs no SQL', async () => {
    await declareSchema(e2e(), 'protected', {
      data: {
        'schema.sql': 'CREATE TABLE public.audit (id bigint PRIMARY KEY, actor text);',
      },
      existing: 'CREATE TABLE public.audit (id bigint PRIMARY KEY)',
      policy: { apply: 'Always', protectedTables: ['public.audit'] },
    });
    const s = await waitForPhase(e2e(), 'protected', ['Blocked', 'InSync', 'Failed']);
    if (s.status?.phase !== 'Blocked') await dumpDebug(e2e(), 'protected');
    assert.equal(s.status?.phase, 'Blocked');
    assert.equal(s.status?.conditions?.find((c) => c.type === 'PlanReady')?.reason, 'ProtectedTable');
    assert.equal(s.status?.plan, undefined, 'no plan is published');
    assert.deepEqual(statementsIn(e2e(), 'protected_db', /ALTER TABLE/i), []);
  });

  it('apply Never records the plan and applies none', async () => {
    await declareSchema(e2e(), 'never', {
      data: { 'schema.sql': ORDERS },
      policy: { apply: 'Never' },
    });
    const s = await waitForPhase(e2e(), 'never', ['Blocked', 'InSync', 'Failed']);
    assert.equal(s.status?.phase, 'Blocked');
    assert.equal(s.status?.conditions?.find((c) => c.type === 'Ready')?.reason, 'ApplyDisabled');
    assert.ok(s.status?.plan?.name, 'the plan is recorded');
    assert.equal(await planCount('never'), 1);
    assert.deepEqual(statementsIn(e2e(), 'never_db', /CREATE TABLE/i), []);
  });

  it('a manager killed between claim and Job, and again right after creating the Apply Job, resumes: one Job per claim, no statement twice, InSync', async () => {
    const waitExit = (what: string) =>
      eventually(what, async () => (e2e().manager!.exited() ? true : undefined), 120_000);
    await e2e().manager!.stop(5_000);
    await e2e().startManager({ PTAH_TEST_CRASH_BEFORE_JOB_CREATE: 'observe' });
    await declareSchema(e2e(), 'restart', {
      data: { 'schema.sql': ORDERS },
      policy: { apply: 'Always' },
    });
    await waitExit('manager killed before creating the Observe Job');
    const claimed = await getSchema(e2e(), 'restart');
    assert.equal(claimed.status?.claim?.type, 'Observe', 'the claim was written before the Job');
    assert.deepEqual(await schemaJobs(e2e(), 'restart'), [], 'and the Job does not exist');

    await e2e().startManager({ PTAH_TEST_CRASH_AFTER_JOB_CREATE: 'apply' });
    await waitExit('manager killed right after creating the Apply Job');
    const applying = await getSchema(e2e(), 'restart');
    assert.equal(applying.status?.claim?.type, 'Apply');
    assert.equal(applying.status?.claim?.dispatchStarted, true);

    await e2e().startManager();
    const s = await waitForPhase(e2e(), 'restart', ['InSync', 'Failed', 'Blocked'], 120_000);
    if (s.status?.phase !== 'InSync') await dumpDebug(e2e(), 'restart');
    assert.equal(s.status?.phase, 'InSync');
    const jobs = await schemaJobs(e2e(), 'restart');
    const names = jobs.map((j) => j.metadata!.name!);
    assert.equal(new Set(names).size, names.length);
    assert.ok(
      names.includes(claimed.status!.claim!.jobName),
      'the claimed Observe Job was created after the restart',
    );
    assert.ok(names.includes(applying.status!.claim!.jobName), 'the Apply Job was adopted, not recreated');
    assert.equal((await operationJobs(e2e(), 'restart', 'apply')).length, 1);
    assert.equal(
      statementsIn(e2e(), 'restart_db', /CREATE TABLE/i).length,
      2,
      'each table created exactly once',
    );
    const inserts = statementsIn(e2e(), 'restart_db', /INSERT INTO/i);
    assert.ok(inserts.length >= 1, 'the rows were inserted');
    assert.equal(new Set(inserts).size, inserts.length, 'no INSERT ran twice');
  });

  it('no Secret URL or password appears in status, Events, manager logs or Job specs', async () => {
    const secrets = await e2e().core.listNamespacedSecret({ namespace: e2e().namespace });
    const needles = new Set<string>();
    for (const sec of secrets.items) {
      const raw = sec.data?.['url'];
      if (raw === undefined) continue;
      const url = Buffer.from(raw, 'base64').toString('utf8');
      needles.add(url);
      const password = decodeURIComponent(new URL(url).password);
      if (password.length >= 6) needles.add(password);
    }
    assert.ok(needles.size >= 2, 'the databases of the tests above are scanned');
    const schemas = (await e2e().objects.listNamespacedCustomObject(at(e2e(), 'ptahschemas'))) as {
      items: unknown[];
    };
    const events = await e2e().core.listNamespacedEvent({ namespace: e2e().namespace });
    const jobs = await e2e().batch.listNamespacedJob({ namespace: e2e().namespace });
    const haystacks: [string, string][] = [
      ['status', JSON.stringify(schemas.items)],
      ['events', JSON.stringify(events.items)],
      ['jobs', JSON.stringify(jobs.items)],
      ...e2e().managerLogs.map((f): [string, string] => [f, readFileSync(f, 'utf8')]),
    ];
    assert.ok(JSON.parse(haystacks[1]![1]).length > 0, 'there are Events to scan');
    for (const [where, text] of haystacks) {
      for (const needle of needles) assert.ok(!text.includes(needle), `a credential appears in ${where}`);
      assert.ok(!/postgres(ql)?:\/\/[^\s"]*:[^\s"]*@/.test(text), `a URL with userinfo appears in ${where}`);
      assert.ok(!/CREATE TABLE|INSERT INTO/i.test(text), `SQL appears in ${where}`);
    }
  });
});
