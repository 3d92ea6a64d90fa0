// Source policies (spec.sourcePolicyFrom) end to end, both families, on the local control plane with the
// real Git server (HTTPS, basic auth, its own CA): a ConfigMap source refused by name and by size writes no
// snapshot and plans nothing; a Git host refused gets no Resolve Job; a commit over the size is not
// recorded; and a policy edited in the cluster retires the plan made under the old one, whose approval
// goes Stale, while the new plan binds the new policy (a PtahSchema from Git, a PtahMigration from a
// ConfigMap, whose policy is then edited to refuse it).
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, LABELS, READ_REQUESTED_ANNOTATION } from '../../src/api/meta.ts';
import type { PtahMigration } from '../../src/api/ptah-migration.ts';
import type { PtahSchema } from '../../src/api/ptah-schema.ts';
import type { PtahSchemaApproval } from '../../src/api/ptah-schema-approval.ts';
import type { PtahSchemaPlan } from '../../src/api/ptah-schema-plan.ts';
import type { PtahMigrationPlan } from '../../src/api/ptah-migration-plan.ts';
import { hashMigrationDirectory } from '../../src/engine/migrations/migration-directory.ts';
import { SNAPSHOT_COMPONENT } from '../../src/sources/snapshot-config-map.ts';
import { SOURCE_POLICY_KEY, sourcePolicyDigest } from '../../src/sources/source-policy.ts';
import { gitSource, startGitFixture, type GitFixture } from './git-fixture.ts';
import {
  at,
  createApproval,
  createSecret,
  createSource,
  dumpDebug,
  type E2E,
  eventsOnceRecorded,
  eventually,
  getMigration,
  getSchema,
  useE2E,
  waitForPhase,
} from './harness.ts';

const { skip, e2e } = useE2E();

const ORDERS = `CREATE TABLE public.orders (id bigint PRIMARY KEY, note text NOT NULL);\n`;
const LEDGER = 'CREATE TABLE ledger (id bigint PRIMARY KEY);\n';

let fixture: GitFixture;
let gitHost: string;

type Condition = { type: string; status: string; reason: string; message: string };
const condition = (s: { status?: { conditions?: readonly Condition[] } }, type: string) =>
  s.status?.conditions?.find((c) => c.type === type);

/** A repository on the Git server holding `files` at one commit of main; returns its URL and commit. */
async function repository(
  name: string,
  files: Record<string, string>,
): Promise<{ url: string; commit: string }> {
  const repo = await fixture.repository(name);
  const commit = await repo.commit(files, name);
  await repo.push('main');
  return { url: repo.httpUrl, commit };
}

const branchSource = (url: string, path: string) => gitSource(url, { branch: 'main' }, path);

const policyText = (rules: string) => `version: 1\n${rules}`;

async function createPolicy(t: E2E, name: string, rules: string): Promise<Record<string, string>> {
  const data = { [SOURCE_POLICY_KEY]: policyText(rules) };
  await createSource(t, name, data);
  return data;
}

async function createResource(
  t: E2E,
  kind: 'PtahSchema' | 'PtahMigration',
  name: string,
  desired: Record<string, unknown>,
  sourcePolicy: string,
  apply: 'Always' | 'OnApproval' = 'Always',
): Promise<void> {
  const url = await t.env.postgres!.createDatabase(`${name.replace(/-/g, '_')}_db`);
  await createSecret(t, `${name}-db`, url);
  await t.objects.createNamespacedCustomObject({
    ...at(t, kind === 'PtahSchema' ? 'ptahschemas' : 'ptahmigrations'),
    body: {
      apiVersion: `${API_GROUP}/${API_VERSION}`,
      kind,
      metadata: { name },
      spec: {
        target: { engine: 'postgres', coordinationKey: name, urlFrom: { name: `${name}-db`, key: 'url' } },
        desired,
        sourcePolicyFrom: { name: sourcePolicy },
        policy: { apply },
        interval: '10m',
        execution: { failureRetryInterval: '5s', activeDeadlineSeconds: 180 },
      },
    },
  });
}

/** The resource once it failed; anything else it settles in is a failure of the test, with the status. */
async function failed(
  kind: 'PtahSchema' | 'PtahMigration',
  name: string,
): Promise<PtahSchema | PtahMigration> {
  const t = e2e();
  const read = () => (kind === 'PtahSchema' ? getSchema(t, name) : getMigration(t, name));
  const settled = await eventually(
    `${name} settles`,
    async () => {
      const r = await read();
      return ['Failed', 'InSync', 'AwaitingApproval', 'Blocked'].includes(r.status?.phase ?? '')
        ? r
        : undefined;
    },
    180_000,
  );
  if (settled.status?.phase !== 'Failed') await dumpDebug(t, name);
  assert.equal(settled.status?.phase, 'Failed', JSON.stringify(settled.status?.conditions));
  return settled;
}

/** Asserts the refusal as every reader sees it: ArtifactResolved, Ready and ReconciliationFailed. */
function assertRefused(r: PtahSchema | PtahMigration, message: string): void {
  for (const type of ['ArtifactResolved', 'Ready']) {
    const c = condition(r, type);
    assert.equal(c?.status, 'False', type);
    assert.equal(c?.reason, 'SourcePolicyRefused', type);
    assert.equal(c?.message, message, type);
  }
  const failure = condition(r, 'ReconciliationFailed');
  assert.equal(failure?.status, 'True');
  assert.equal(failure?.reason, 'SourcePolicyRefused');
  assert.equal(failure?.message, message);
}

async function jobsOf(t: E2E, kind: 'PtahSchema' | 'PtahMigration', name: string): Promise<k8s.V1Job[]> {
  const label = kind === 'PtahSchema' ? LABELS.schema : LABELS.migration;
  return (await t.batch.listNamespacedJob({ namespace: t.namespace, labelSelector: `${label}=${name}` }))
    .items;
}

async function plansOf(t: E2E, name: string): Promise<PtahSchemaPlan[]> {
  const list = (await t.objects.listNamespacedCustomObject({
    ...at(t, 'ptahschemaplans'),
    labelSelector: `${LABELS.schema}=${name}`,
  })) as { items: PtahSchemaPlan[] };
  return list.items;
}

async function snapshotsOf(t: E2E, kind: 'PtahSchema' | 'PtahMigration', name: string) {
  const label = kind === 'PtahSchema' ? LABELS.schema : LABELS.migration;
  return (
    await t.core.listNamespacedConfigMap({
      namespace: t.namespace,
      labelSelector: `${LABELS.component}=${SNAPSHOT_COMPONENT},${label}=${name}`,
    })
  ).items;
}

describe('source policies (sourcePolicyFrom), both families', { skip }, () => {
  before(async () => {
    if (skip) return;
    fixture = await startGitFixture(e2e(), 'source-policy');
    gitHost = new URL(fixture.server.httpBaseUrl).host;
  });
  after(async () => {
    await fixture?.stop();
  });

  it('a ConfigMap source refused by name and by size writes no snapshot and plans nothing', async () => {
    const t = e2e();
    await createPolicy(t, 'names-policy', 'config_map:\n  allowed_names: ["orders-*"]\n');
    await createPolicy(t, 'size-policy', 'max_selected_bytes: 10\n');
    await createSource(t, 'billing-src', { 'schema.sql': ORDERS });
    await createSource(t, 'orders-src', { 'schema.sql': ORDERS });
    await createSource(t, 'ledger-src', { '20260101000000_ledger.sql': LEDGER });
    const cmSource = (name: string, key: string) => ({ configMap: { name, files: [{ key }] } });
    await createResource(t, 'PtahSchema', 'by-name', cmSource('billing-src', 'schema.sql'), 'names-policy');
    await createResource(t, 'PtahSchema', 'by-size', cmSource('orders-src', 'schema.sql'), 'size-policy');
    await createResource(
      t,
      'PtahMigration',
      'ledger-size',
      cmSource('ledger-src', '20260101000000_ledger.sql'),
      'size-policy',
    );

    const expected: [kind: 'PtahSchema' | 'PtahMigration', name: string, message: string][] = [
      [
        'PtahSchema',
        'by-name',
        'source policy names-policy refused ConfigMap billing-src: config_map.allowed_names: ConfigMap name billing-src matches none of orders-*',
      ],
      [
        'PtahSchema',
        'by-size',
        `source policy size-policy refused the keys ConfigMap orders-src selects: max_selected_bytes: the selected files hold ${Buffer.byteLength(ORDERS)} bytes, over the limit of 10`,
      ],
      [
        'PtahMigration',
        'ledger-size',
        `source policy size-policy refused the keys ConfigMap ledger-src selects: max_selected_bytes: the selected files hold ${Buffer.byteLength(LEDGER)} bytes, over the limit of 10`,
      ],
    ];
    for (const [kind, name, message] of expected) {
      const r = await failed(kind, name);
      assertRefused(r, message);
      assert.equal(r.status?.resolution, undefined, `${name}: nothing recorded`);
      assert.equal(r.status?.plan, undefined, `${name}: nothing planned`);
      assert.deepEqual(await snapshotsOf(t, kind, name), [], `${name}: no snapshot written`);
      assert.deepEqual(await jobsOf(t, kind, name), [], `${name}: no Job`);
    }
    assert.deepEqual(await plansOf(t, 'by-name'), []);
    assert.deepEqual(await plansOf(t, 'by-size'), []);
  });

  it('a Git host refused gets no Resolve Job; a commit over the size is not recorded', async () => {
    const t = e2e();
    const repo = await repository('refusals', {
      'db/schema.sql': ORDERS,
      'migrations/20260101000000_ledger.sql': LEDGER,
    });
    await createPolicy(t, 'hosts-policy', 'git:\n  allowed_hosts: [git.example.invalid]\n');
    await createPolicy(
      t,
      'git-size-policy',
      `git:\n  allowed_hosts: ["${gitHost}"]\nmax_selected_bytes: 10\n`,
    );
    await createResource(
      t,
      'PtahMigration',
      'git-host',
      branchSource(repo.url, 'migrations'),
      'hosts-policy',
    );
    await createResource(t, 'PtahSchema', 'git-size', branchSource(repo.url, 'db'), 'git-size-policy');

    const host = await failed('PtahMigration', 'git-host');
    assertRefused(
      host,
      `source policy hosts-policy refused ${repo.url}: git.allowed_hosts: host ${gitHost} is not among git.example.invalid`,
    );
    assert.deepEqual(await jobsOf(t, 'PtahMigration', 'git-host'), [], 'no Resolve Job for a refused host');
    assert.equal(host.status?.resolution, undefined);
    assert.equal(host.status?.plan, undefined);

    const size = await failed('PtahSchema', 'git-size');
    assertRefused(
      size,
      `source policy git-size-policy refused commit ${repo.commit} at db: max_selected_bytes: the selected files hold ${Buffer.byteLength(ORDERS)} bytes, over the limit of 10`,
    );
    assert.equal(size.status?.resolution, undefined, 'the commit is not recorded');
    assert.equal(size.status?.plan, undefined);
    const operations = (await jobsOf(t, 'PtahSchema', 'git-size')).map(
      (j) => j.metadata?.labels?.[LABELS.operation],
    );
    assert.ok(operations.length > 0 && operations.every((o) => o === 'resolve'), operations.join(','));
    assert.deepEqual(await plansOf(t, 'git-size'), []);
  });

  it('a policy edited in the cluster retires the plan made under the old one, and its approval goes Stale', async () => {
    const t = e2e();
    const repo = await repository('edited', { 'db/schema.sql': ORDERS });
    const oldData = await createPolicy(
      t,
      'edit-policy',
      `git:\n  allowed_hosts: ["${gitHost}"]\nmax_selected_bytes: 100000\n`,
    );
    await createResource(
      t,
      'PtahSchema',
      'git-edit',
      branchSource(repo.url, 'db'),
      'edit-policy',
      'OnApproval',
    );
    const waiting = await waitForPhase(
      t,
      'git-edit',
      ['AwaitingApproval', 'Failed', 'Blocked', 'InSync'],
      300_000,
    );
    if (waiting.status?.phase !== 'AwaitingApproval') await dumpDebug(t, 'git-edit');
    assert.equal(waiting.status?.phase, 'AwaitingApproval', JSON.stringify(waiting.status?.conditions));
    const policyCm = await t.core.readNamespacedConfigMap({ namespace: t.namespace, name: 'edit-policy' });
    const bound = { name: 'edit-policy', uid: policyCm.metadata!.uid!, digest: sourcePolicyDigest(oldData) };
    assert.deepEqual(waiting.status?.resolution?.sourcePolicy, bound, 'recorded beside the resolution');
    const oldPlan = waiting.status!.plan!;
    const stored = (await plansOf(t, 'git-edit')).find((p) => p.metadata.name === oldPlan.name)!;
    assert.equal(stored.spec.binding.sourcePolicyUID, bound.uid);
    assert.equal(stored.spec.binding.sourcePolicyDigest, bound.digest);

    // A read is requested; while its Resolve runs the old plan is approved (it is still the current plan)
    // and the policy is edited in place.
    await t.objects.patchNamespacedCustomObject(
      {
        ...at(t, 'ptahschemas'),
        name: 'git-edit',
        body: { metadata: { annotations: { [READ_REQUESTED_ANNOTATION]: new Date().toISOString() } } },
      },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    await eventually('the Resolve of the requested read', async () => {
      const s = await getSchema(t, 'git-edit');
      return s.status?.claim?.type === 'Resolve' ? true : undefined;
    });
    await createApproval(t, 'git-edit-old', {
      schema: { name: 'git-edit', uid: waiting.metadata.uid! },
      plan: { name: oldPlan.name, uid: oldPlan.uid },
      fingerprint: oldPlan.fingerprint,
    });
    const newData = {
      [SOURCE_POLICY_KEY]: policyText(`git:\n  allowed_hosts: ["${gitHost}"]\nmax_selected_bytes: 200000\n`),
    };
    await t.core.replaceNamespacedConfigMap({
      namespace: t.namespace,
      name: 'edit-policy',
      body: { metadata: { name: 'edit-policy' }, data: newData },
    });

    const republished = await eventually(
      'a new plan under the edited policy',
      async () => {
        const s = await getSchema(t, 'git-edit');
        return s.status?.phase === 'AwaitingApproval' &&
          s.status.plan !== undefined &&
          s.status.plan.name !== oldPlan.name
          ? s
          : undefined;
      },
      300_000,
    );
    assert.deepEqual(republished.status?.resolution?.sourcePolicy, {
      ...bound,
      digest: sourcePolicyDigest(newData),
    });
    assert.equal(
      republished.status?.resolution?.contentDigest,
      waiting.status?.resolution?.contentDigest,
      'the same files',
    );
    const newPlan = (await plansOf(t, 'git-edit')).find(
      (p) => p.metadata.name === republished.status!.plan!.name,
    )!;
    assert.equal(newPlan.spec.binding.sourcePolicyDigest, sourcePolicyDigest(newData));

    const stale = await eventually('the old approval goes Stale', async () => {
      const a = (await t.objects.getNamespacedCustomObject({
        ...at(t, 'ptahschemaapprovals'),
        name: 'git-edit-old',
      })) as PtahSchemaApproval;
      return a.status?.conditions?.find((c) => c.type === 'Stale' && c.status === 'True');
    });
    assert.equal(stale.reason, 'SourcePolicyChanged');
    assert.equal(
      stale.message,
      `plan ${oldPlan.name} retired: the source policy edit-policy was replaced; plans made under the old one retire`,
    );
    const applies = (await jobsOf(t, 'PtahSchema', 'git-edit')).filter(
      (j) => j.metadata?.labels?.[LABELS.operation] === 'apply',
    );
    assert.deepEqual(applies, [], 'the old plan never applied');
  });

  it('a PtahMigration from a ConfigMap: a policy edited in place retires its plan and the new one binds the edit', async () => {
    const t = e2e();
    const rules = (max: number) =>
      `config_map:\n  allowed_names: ["journal-*"]\nmax_selected_bytes: ${max}\n`;
    const oldData = await createPolicy(t, 'journal-policy', rules(100000));
    // A migration directory in a ConfigMap: the file and the ptah.sum `ptah migrations hash` writes for it.
    const dir = join(fixture.work, 'journal');
    mkdirSync(dir);
    writeFileSync(join(dir, '20260101000000_journal.sql'), LEDGER);
    hashMigrationDirectory(dir);
    const files = {
      '20260101000000_journal.sql': LEDGER,
      'ptah.sum': readFileSync(join(dir, 'ptah.sum'), 'utf8'),
    };
    await createSource(t, 'journal-src', files);
    await createResource(
      t,
      'PtahMigration',
      'journal',
      { configMap: { name: 'journal-src', files: Object.keys(files).map((key) => ({ key })) } },
      'journal-policy',
      'OnApproval',
    );
    const waiting = await eventually(
      'journal AwaitingApproval',
      async () => {
        const m = await getMigration(t, 'journal');
        return ['AwaitingApproval', 'Failed', 'Blocked', 'InSync'].includes(m.status?.phase ?? '')
          ? m
          : undefined;
      },
      180_000,
    );
    assert.equal(waiting.status?.phase, 'AwaitingApproval', JSON.stringify(waiting.status?.conditions));
    const policyCm = await t.core.readNamespacedConfigMap({ namespace: t.namespace, name: 'journal-policy' });
    const bound = {
      name: 'journal-policy',
      uid: policyCm.metadata!.uid!,
      digest: sourcePolicyDigest(oldData),
    };
    assert.deepEqual(waiting.status?.resolution?.sourcePolicy, bound);
    const oldPlan = waiting.status!.plan!;
    const migrationPlans = async () =>
      (
        (await t.objects.listNamespacedCustomObject({
          ...at(t, 'ptahmigrationplans'),
          labelSelector: `${LABELS.migration}=journal`,
        })) as { items: PtahMigrationPlan[] }
      ).items;
    const first = (await migrationPlans()).find((p) => p.metadata.name === oldPlan.name)!;
    assert.equal(first.spec.binding.sourcePolicyUID, bound.uid);
    assert.equal(first.spec.binding.sourcePolicyDigest, bound.digest);

    const newData = { [SOURCE_POLICY_KEY]: policyText(rules(200000)) };
    await t.core.replaceNamespacedConfigMap({
      namespace: t.namespace,
      name: 'journal-policy',
      body: { metadata: { name: 'journal-policy' }, data: newData },
    });
    const republished = await eventually(
      'a new migration plan under the edited policy',
      async () => {
        const m = await getMigration(t, 'journal');
        return m.status?.phase === 'AwaitingApproval' &&
          m.status.plan !== undefined &&
          m.status.plan.name !== oldPlan.name
          ? m
          : undefined;
      },
      180_000,
    );
    assert.deepEqual(republished.status?.resolution?.sourcePolicy, {
      ...bound,
      digest: sourcePolicyDigest(newData),
    });
    const second = (await migrationPlans()).find((p) => p.metadata.name === republished.status!.plan!.name)!;
    assert.equal(second.spec.binding.sourcePolicyDigest, sourcePolicyDigest(newData));
    const retired = await eventsOnceRecorded(t, 'journal', 'SourcePolicyChanged');
    assert.deepEqual(
      retired.map((e) => e.message),
      [
        `plan ${oldPlan.name} retired: the source policy journal-policy was replaced; plans made under the old one retire`,
      ],
    );

    // Edited again so that it refuses the ConfigMap's name: the plan retires with the rule named and
    // nothing new is planned.
    await t.core.replaceNamespacedConfigMap({
      namespace: t.namespace,
      name: 'journal-policy',
      body: {
        metadata: { name: 'journal-policy' },
        data: { [SOURCE_POLICY_KEY]: policyText('config_map:\n  allowed_names: ["ledger-*"]\n') },
      },
    });
    const refused = await eventually(
      'journal refused under the edited policy',
      async () => {
        const m = await getMigration(t, 'journal');
        return m.status?.phase === 'Failed' ? m : undefined;
      },
      60_000,
    );
    const message =
      'source policy journal-policy refused ConfigMap journal-src: config_map.allowed_names: ConfigMap name journal-src matches none of ledger-*';
    assertRefused(refused, message);
    assert.equal(refused.status?.plan, undefined, 'the plan made under the old policy retired');
    const refusals = await eventsOnceRecorded(t, 'journal', 'SourcePolicyRefused');
    assert.ok(
      refusals.some((e) => e.message === `plan ${second.metadata.name} retired: ${message}`),
      JSON.stringify(refusals.map((e) => e.message)),
    );
  });
});
