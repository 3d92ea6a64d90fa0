// Both families from Git sources end to end: the real Git server (git http-backend over HTTPS with basic
// auth and its own CA), the Resolve Job and the fetch-source init container. A branch, a tag and a commit
// source reach InSync for both families, an edit outside the path keeps the plan while one inside it, or
// the same files at another path or in another repository, retires it, and the Git password is only where
// the routing table allows it.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, LABELS, READ_REQUESTED_ANNOTATION } from '../../src/api/meta.ts';
import type { PtahMigration } from '../../src/api/ptah-migration.ts';
import type { PtahSchema } from '../../src/api/ptah-schema.ts';
import { hashMigrationDirectory } from '../../src/engine/migrations/migration-directory.ts';
import { gitSource, startGitFixture, type GitFixture } from './git-fixture.ts';
import {
  at,
  createSecret,
  dumpDebug,
  eventually,
  getSchema,
  query,
  useE2E,
  waitForPhase,
  type E2E,
} from './harness.ts';

const { skip, e2e } = useE2E();

const ORDERS = `CREATE TABLE public.orders (id bigint PRIMARY KEY, note text NOT NULL);\n`;
const INVOICES = `CREATE TABLE public.invoices (id bigint PRIMARY KEY);\n`;

let fixture: GitFixture;

async function createGitSchema(
  t: E2E,
  name: string,
  desired: ReturnType<typeof gitSource>,
  policy: Record<string, unknown>,
): Promise<string> {
  const url = await t.env.postgres!.createDatabase(`${name.replace(/-/g, '_')}_db`);
  await createSecret(t, `${name}-db`, url);
  await t.objects.createNamespacedCustomObject({
    ...at(t, 'ptahschemas'),
    body: {
      apiVersion: `${API_GROUP}/${API_VERSION}`,
      kind: 'PtahSchema',
      metadata: { name },
      spec: {
        target: { engine: 'postgres', coordinationKey: name, urlFrom: { name: `${name}-db`, key: 'url' } },
        desired,
        policy,
        interval: '10m',
        execution: { failureRetryInterval: '5s', activeDeadlineSeconds: 180 },
      },
    },
  });
  return url;
}

const condition = (
  s: {
    status?: { conditions?: readonly { type: string; status: string; reason: string; message: string }[] };
  },
  type: string,
) => s.status?.conditions?.find((c) => c.type === type);

async function requestRead(name: string): Promise<void> {
  await e2e().objects.patchNamespacedCustomObject(
    {
      ...at(e2e(), 'ptahschemas'),
      name,
      body: { metadata: { annotations: { [READ_REQUESTED_ANNOTATION]: new Date().toISOString() } } },
    },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
  );
}

async function patchGit(name: string, git: Record<string, string>): Promise<void> {
  await e2e().objects.patchNamespacedCustomObject(
    { ...at(e2e(), 'ptahschemas'), name, body: { spec: { desired: { git } } } },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
  );
}

async function inSync(name: string): Promise<PtahSchema> {
  const s = await waitForPhase(e2e(), name, ['InSync', 'Failed', 'Blocked'], 300_000);
  if (s.status?.phase !== 'InSync') await dumpDebug(e2e(), name);
  assert.equal(s.status?.phase, 'InSync', JSON.stringify(s.status?.conditions));
  return s;
}

async function tables(url: string): Promise<unknown[]> {
  const rows = await query(
    url,
    "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1",
  );
  return rows.map((r) => r['table_name']);
}

describe('PtahSchema and PtahMigration from a Git source', { skip }, () => {
  before(async () => {
    if (skip) return;
    fixture = await startGitFixture(e2e(), 'git');
  });
  after(async () => {
    await fixture?.stop();
  });

  it('a branch, a tag and a commit source reach InSync, each resolved to the commit it names', async () => {
    const t = e2e();
    const repo = await fixture.repository('schemas');
    const first = await repo.commit({ 'db/schema.sql': ORDERS, 'README.md': 'outside the path\n' }, 'first');
    await repo.tag('v1');
    await repo.push('main', 'v1');
    const sources = {
      branch: gitSource(repo.httpUrl, { branch: 'main' }, 'db'),
      tag: gitSource(repo.httpUrl, { tag: 'v1' }, 'db'),
      commit: gitSource(repo.httpUrl, { commit: first }, 'db'),
    };
    const urls: Record<string, string> = {};
    for (const [kind, desired] of Object.entries(sources))
      urls[kind] = await createGitSchema(t, `git-${kind}`, desired, { apply: 'Always' });
    for (const kind of Object.keys(sources)) {
      const s = await inSync(`git-${kind}`);
      const resolved = condition(s, 'ArtifactResolved')!;
      assert.equal(resolved.reason, 'CommitResolved', kind);
      assert.match(resolved.message, new RegExp(`resolved to commit ${first}$`), kind);
      assert.equal(condition(s, 'ArtifactVerified'), undefined, `${kind}: no Verify for a Git source`);
      const res = s.status!.resolution!;
      assert.equal(res.sourceType, 'Git');
      assert.equal(res.repository, repo.httpUrl);
      assert.equal(res.path, 'db');
      assert.equal(res.commit, first);
      assert.equal(res.ref, { branch: 'refs/heads/main', tag: 'refs/tags/v1', commit: first }[kind]);
      assert.match(res.contentDigest, /^sha256:[0-9a-f]{64}$/);
      assert.deepEqual(await tables(urls[kind]!), ['orders'], kind);
    }
    const jobs = (await t.batch.listNamespacedJob({ namespace: t.namespace })).items.filter(
      (j) => j.metadata?.labels?.[`${API_GROUP}/schema`] === 'git-branch',
    );
    const operations = new Set(jobs.map((j) => j.metadata?.labels?.[LABELS.operation]));
    assert.ok(operations.has('resolve') && !operations.has('verify'), [...operations].join(','));
  });

  it('an edit outside the path keeps the plan; an edit inside it, or the same files at another path or in another repository, retires it', async () => {
    const t = e2e();
    const repo = await fixture.repository('edits');
    await repo.commit({ 'db/schema.sql': ORDERS, 'README.md': 'one\n' }, 'first');
    await repo.push('main');
    await createGitSchema(t, 'git-edits', gitSource(repo.httpUrl, { branch: 'main' }, 'db'), {
      apply: 'OnApproval',
    });
    const waiting = await waitForPhase(t, 'git-edits', ['AwaitingApproval', 'Failed', 'Blocked'], 300_000);
    assert.equal(waiting.status?.phase, 'AwaitingApproval', JSON.stringify(waiting.status?.conditions));
    const plan = waiting.status!.plan!;

    const outside = await repo.commit({ 'README.md': 'two\n' }, 'outside the path');
    await repo.push('main');
    await requestRead('git-edits');
    const kept = await eventually(
      'the commit outside the path is resolved',
      async () => {
        const s = await getSchema(t, 'git-edits');
        return s.status?.resolution?.commit === outside && s.status.phase === 'AwaitingApproval'
          ? s
          : undefined;
      },
      300_000,
    );
    assert.equal(kept.status?.plan?.name, plan.name, 'the same files keep the plan');
    assert.equal(kept.status?.resolution?.contentDigest, waiting.status?.resolution?.contentDigest);

    const inside = await repo.commit({ 'db/schema.sql': ORDERS + INVOICES }, 'inside the path');
    await repo.push('main');
    await requestRead('git-edits');
    const retired = await eventually(
      'a new plan for the files the commit changed',
      async () => {
        const s = await getSchema(t, 'git-edits');
        return s.status?.resolution?.commit === inside &&
          s.status.phase === 'AwaitingApproval' &&
          s.status.plan !== undefined &&
          s.status.plan.name !== plan.name
          ? s
          : undefined;
      },
      300_000,
    );
    assert.notEqual(retired.status?.resolution?.contentDigest, waiting.status?.resolution?.contentDigest);

    // The same files at another path, then in another repository: the plan binds where they came from too.
    await repo.commit({ 'copy/schema.sql': ORDERS + INVOICES }, 'the same files at another path');
    await repo.push('main');
    const copy = await fixture.repository('edits-copy');
    await copy.commit({ 'copy/schema.sql': ORDERS + INVOICES }, 'the same files in another repository');
    await copy.push('main');
    let previous = retired;
    for (const [what, git] of [
      ['another path', { path: 'copy' }],
      ['another repository', { repository: copy.httpUrl }],
    ] as const) {
      await patchGit('git-edits', git);
      const moved = await eventually(
        `a new plan for the same files from ${what}`,
        async () => {
          const s = await getSchema(t, 'git-edits');
          return s.status?.phase === 'AwaitingApproval' &&
            s.status.plan !== undefined &&
            s.status.plan.name !== previous.status?.plan?.name &&
            s.status.resolution?.sourceDigest !== previous.status?.resolution?.sourceDigest
            ? s
            : undefined;
        },
        300_000,
      );
      assert.equal(
        moved.status?.resolution?.contentDigest,
        retired.status?.resolution?.contentDigest,
        `${what}: the same files`,
      );
      assert.equal(
        moved.status?.resolution?.repository,
        what === 'another repository' ? copy.httpUrl : repo.httpUrl,
      );
      assert.equal(moved.status?.resolution?.path, 'copy');
      previous = moved;
    }
  });

  it('a PtahMigration from a branch, a tag and a commit reaches InSync', async () => {
    const t = e2e();
    const repo = await fixture.repository('ledger');
    const dir = join(repo.tree, 'migrations');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, '20260101000000_ledger.sql'), 'CREATE TABLE ledger (id bigint PRIMARY KEY);\n');
    writeFileSync(
      join(dir, '20260102000000_amount.sql'),
      'ALTER TABLE ledger ADD COLUMN amount numeric NOT NULL DEFAULT 0;\n',
    );
    hashMigrationDirectory(dir);
    const commit = await repo.commit({}, 'migrations');
    await repo.tag('v1');
    await repo.push('main', 'v1');
    const refs = { branch: { branch: 'main' }, tag: { tag: 'v1' }, commit: { commit } };
    const urls: Record<string, string> = {};
    for (const [kind, ref] of Object.entries(refs)) {
      const name = `gitledger-${kind}`;
      urls[kind] = await t.env.postgres!.createDatabase(`gitledger_${kind}_db`);
      await createSecret(t, `${name}-db`, urls[kind]!);
      await t.objects.createNamespacedCustomObject({
        ...at(t, 'ptahmigrations'),
        body: {
          apiVersion: `${API_GROUP}/${API_VERSION}`,
          kind: 'PtahMigration',
          metadata: { name },
          spec: {
            target: {
              engine: 'postgres',
              coordinationKey: name,
              urlFrom: { name: `${name}-db`, key: 'url' },
            },
            desired: gitSource(repo.httpUrl, ref, 'migrations'),
            policy: { apply: 'Always' },
            interval: '10m',
            execution: { failureRetryInterval: '5s', activeDeadlineSeconds: 180 },
          },
        },
      });
    }
    for (const kind of Object.keys(refs)) {
      const m = await eventually(
        `gitledger-${kind} InSync`,
        async () => {
          const now = (await t.objects.getNamespacedCustomObject({
            ...at(t, 'ptahmigrations'),
            name: `gitledger-${kind}`,
          })) as PtahMigration;
          return ['InSync', 'Failed', 'Blocked'].includes(now.status?.phase ?? '') ? now : undefined;
        },
        300_000,
      );
      assert.equal(m.status?.phase, 'InSync', `${kind}: ${JSON.stringify(m.status)}`);
      assert.equal(condition(m, 'ArtifactResolved')?.reason, 'CommitResolved', kind);
      assert.equal(m.status?.resolution?.commit, commit, kind);
      assert.equal(
        m.status?.resolution?.ref,
        { branch: 'refs/heads/main', tag: 'refs/tags/v1', commit }[kind],
        kind,
      );
      const applied = await query(
        urls[kind]!,
        'SELECT version FROM public.ptah_schema_revisions ORDER BY version',
      );
      assert.deepEqual(
        applied.map((r) => String(r['version'])),
        ['20260101000000', '20260102000000'],
        kind,
      );
    }
  });

  it('the Git password is only in the Resolve container and the fetch-source init container', async () => {
    const t = e2e();
    const password = fixture.server.httpAuth!.password;
    const jobs = (await t.batch.listNamespacedJob({ namespace: t.namespace })).items;
    assert.ok(jobs.length > 0);
    for (const job of jobs) {
      const operation = job.metadata!.labels![LABELS.operation]!;
      const pod = job.spec!.template.spec!;
      const gitVolumes = new Set(
        (pod.volumes ?? []).filter((v) => v.secret?.secretName === 'git').map((v) => v.name),
      );
      for (const c of [...(pod.initContainers ?? []), ...pod.containers]) {
        const where = `${job.metadata?.name}/${c.name}`;
        const holdsGit = (c.volumeMounts ?? []).some((m) => gitVolumes.has(m.name));
        const holdsDatabase = (c.env ?? []).some((e) => e.valueFrom?.secretKeyRef !== undefined);
        assert.ok(!(holdsGit && holdsDatabase), `${where} holds both credentials`);
        if (holdsGit)
          assert.ok(
            c.name === 'fetch-source' || (c.name === 'ptah' && operation === 'resolve'),
            `${where} holds the Git credential`,
          );
      }
      assert.ok(!JSON.stringify(job).includes(password), `${job.metadata?.name} carries the password`);
    }
    const pods = (await t.core.listNamespacedPod({ namespace: t.namespace })).items;
    for (const pod of pods) {
      assert.ok(!JSON.stringify(pod).includes(password), `${pod.metadata?.name} carries the password`);
      for (const c of [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]) {
        const log = await t.core
          .readNamespacedPodLog({ namespace: t.namespace, name: pod.metadata!.name!, container: c.name })
          .catch(() => undefined);
        if (log !== undefined)
          assert.ok(!log.includes(password), `${pod.metadata?.name}/${c.name} logged it`);
      }
    }
    for (const name of ['git-branch', 'git-tag', 'git-commit', 'git-edits'])
      assert.ok(!JSON.stringify((await getSchema(t, name)).status).includes(password), name);
    const events = await t.core.listNamespacedEvent({ namespace: t.namespace });
    assert.ok(!JSON.stringify(events.items).includes(password), 'an Event carries the password');
    for (const file of t.managerLogs)
      assert.ok(!readFileSync(file, 'utf8').includes(password), `${file} holds the password`);
  });
});
