// Git sources refused end to end, and recovered, on the local control plane against the real Git servers
// (git http-backend over HTTPS with basic auth and its own CA; sshd serving git-shell with a pinned host key),
// both families:
// - a force-push between a PtahMigration's plan and its Apply: the fetch-source init container refuses the
//   recorded commit with the last line Ptah wrote, nothing runs, and the next Resolve reads the new tip;
// - a PtahSchema pinned to a commit no ref names, on a server without uploadpack.allowAnySHA1InWant: refused
//   before anything is fetched (no upload-pack request reaches the server), accepted once the server says it
//   gives any commit by id; one pinned to a branch tip is accepted, and a push on top refuses its next Resolve;
// - a submodule and an LFS pointer at the selected path, each refused with Ptah's last line;
// - SSH as the operation Pods' UID 65532 with the known hosts pinning the server's key: a schema and a
//   migration reach InSync; a key the known hosts do not pin (another key for the host, or no line for it)
//   is refused with Ptah's last line, and a Secret granting another host or other known-hosts bytes is
//   refused by the runner before Ptah starts.
// The cases are independent (their own repository, database and resource) and run concurrently.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, READ_REQUESTED_ANNOTATION } from '../../src/api/meta.ts';
import { hashMigrationDirectory } from '../../src/engine/migrations/migration-directory.ts';
import { gitSource, sha256, startGitFixture, type GitAccess, type GitFixture } from './git-fixture.ts';
import { approveMigration, at, createSecret, type E2E, eventually, query, useE2E } from './harness.ts';

const { skip, e2e } = useE2E();

const ORDERS = `CREATE TABLE public.orders (id bigint PRIMARY KEY, note text NOT NULL);\n`;
/** Another host key than the server's, for known hosts that do not pin it. */
const OTHER_KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBr7ahp2Dr5LwWSHT3lQ6HcjbaFOWIY7cS6f0Jm2zWsH';
const WAIT_MS = 240_000;

let fixture: GitFixture;
const git = (args: string[], cwd: string) => fixture.git(args, cwd);

/** Migration files under `migrations/`, with the ptah.sum the engine checks, as a tree's files. */
function migrationFiles(tree: string, files: Record<string, string>): void {
  const dir = join(tree, 'migrations');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  for (const [name, sql] of Object.entries(files)) writeFileSync(join(dir, name), sql);
  hashMigrationDirectory(dir);
}

const LEDGER = { '20260101000000_ledger.sql': 'CREATE TABLE ledger (id bigint PRIMARY KEY);\n' };
const AMOUNT = {
  '20260102000000_amount.sql': 'ALTER TABLE ledger ADD COLUMN amount numeric NOT NULL DEFAULT 0;\n',
};
const NOTE = { '20260103000000_note.sql': 'ALTER TABLE ledger ADD COLUMN note text;\n' };

type Kind = 'ptahschemas' | 'ptahmigrations';
interface Condition {
  readonly type: string;
  readonly status: string;
  readonly reason: string;
  readonly message: string;
}
interface Resource {
  readonly metadata: { readonly name: string; readonly uid: string };
  readonly status?: {
    readonly phase?: string;
    readonly conditions?: readonly Condition[];
    readonly resolution?: { readonly commit?: string };
    readonly plan?: { readonly name: string; readonly uid: string; readonly fingerprint: string };
  };
}

async function create(
  t: E2E,
  kind: Kind,
  name: string,
  desired: ReturnType<typeof gitSource>,
  policy: Record<string, unknown>,
): Promise<string> {
  const url = await t.env.postgres!.createDatabase(`${name.replace(/-/g, '_')}_db`);
  await createSecret(t, `${name}-db`, url);
  await t.objects.createNamespacedCustomObject({
    ...at(t, kind),
    body: {
      apiVersion: `${API_GROUP}/${API_VERSION}`,
      kind: kind === 'ptahschemas' ? 'PtahSchema' : 'PtahMigration',
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

async function read(kind: Kind, name: string): Promise<Resource> {
  return (await e2e().objects.getNamespacedCustomObject({ ...at(e2e(), kind), name })) as Resource;
}

const condition = (r: Resource, type: string) => r.status?.conditions?.find((c) => c.type === type);

/** Waits for `ok`; a timeout says what the resource's status was. */
async function waitFor(
  kind: Kind,
  name: string,
  what: string,
  ok: (r: Resource) => boolean,
): Promise<Resource> {
  try {
    return await eventually(
      `${name}: ${what}`,
      async () => {
        const r = await read(kind, name);
        return ok(r) ? r : undefined;
      },
      WAIT_MS,
    );
  } catch (error) {
    const r = await read(kind, name).catch(() => undefined);
    throw new Error(`${(error as Error).message}; status: ${JSON.stringify(r?.status)}`);
  }
}

/** The resource's ReconciliationFailed condition once it has this reason (whatever phase a retry is in). */
async function refusal(kind: Kind, name: string, reason: string): Promise<Condition> {
  const r = await waitFor(kind, name, `ReconciliationFailed ${reason}`, (x) => {
    const c = condition(x, 'ReconciliationFailed');
    return c?.status === 'True' && c.reason === reason;
  });
  return condition(r, 'ReconciliationFailed')!;
}

const inSyncAt = (kind: Kind, name: string, commit: string) =>
  waitFor(
    kind,
    name,
    `InSync at ${commit}`,
    (r) => r.status?.phase === 'InSync' && r.status.resolution?.commit === commit,
  );

async function requestRead(kind: Kind, name: string): Promise<void> {
  await e2e().objects.patchNamespacedCustomObject(
    {
      ...at(e2e(), kind),
      name,
      body: { metadata: { annotations: { [READ_REQUESTED_ANNOTATION]: new Date().toISOString() } } },
    },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
  );
}

const awaitingAt = (name: string, commit: string) =>
  waitFor(
    'ptahmigrations',
    name,
    `AwaitingApproval at ${commit}`,
    (r) =>
      r.status?.phase === 'AwaitingApproval' &&
      r.status.resolution?.commit === commit &&
      r.status.plan !== undefined,
  );

async function versions(url: string): Promise<string[]> {
  const rows = await query(url, 'SELECT version FROM public.ptah_schema_revisions ORDER BY version');
  return rows.map((r) => String(r['version']));
}

async function tables(url: string): Promise<unknown[]> {
  const rows = await query(
    url,
    "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1",
  );
  return rows.map((r) => r['table_name']);
}

/**
 * The SSH Secret and known-hosts ConfigMap for one known_hosts text; the Secret grants the server's authority
 * and exactly those bytes unless `grants` says otherwise.
 */
async function sshAccess(
  t: E2E,
  name: string,
  knownHosts: string,
  grants: { host?: string; knownHostsSHA256?: string } = {},
): Promise<GitAccess> {
  await t.core.createNamespacedConfigMap({
    namespace: t.namespace,
    body: { metadata: { name: `${name}-known-hosts` }, data: { known_hosts: knownHosts } },
  });
  await t.core.createNamespacedSecret({
    namespace: t.namespace,
    body: {
      metadata: { name },
      stringData: {
        'ssh-privatekey': readFileSync(fixture.server.clientKeyFile, 'utf8'),
        host: grants.host ?? `127.0.0.1:${fixture.server.sshPort}`,
        knownHostsSHA256: grants.knownHostsSHA256 ?? sha256(knownHosts),
      },
    },
  });
  return { ssh: name, knownHosts: `${name}-known-hosts` };
}

describe('Git sources refused with the reason Ptah gave, and recovered', { skip, concurrency: true }, () => {
  before(async () => {
    if (skip) return;
    fixture = await startGitFixture(e2e(), 'git-refusals');
  });
  after(async () => {
    await fixture?.stop();
  });

  it('PtahMigration: a force-push before the Apply is refused by the fetch, nothing runs, and the next Resolve recovers', async () => {
    const t = e2e();
    const name = 'git-force-push';
    const repo = await fixture.repository('force-push');
    migrationFiles(repo.tree, LEDGER);
    const first = await repo.commit({}, 'ledger');
    await repo.push('main');
    const url = await create(
      t,
      'ptahmigrations',
      name,
      gitSource(repo.httpUrl, { branch: 'main' }, 'migrations', { https: true }),
      { apply: 'OnApproval' },
    );
    await approveMigration(e2e(), await awaitingAt(name, first), `${name}-1`);
    await inSyncAt('ptahmigrations', name, first);
    assert.deepEqual(await versions(url), ['20260101000000']);

    // A new version on main, read and planned; then main is rewritten before anyone approves the plan.
    migrationFiles(repo.tree, { ...LEDGER, ...AMOUNT });
    const planned = await repo.commit({}, 'amount');
    await repo.push('main');
    await requestRead('ptahmigrations', name);
    const waiting = await awaitingAt(name, planned);
    await git(['checkout', '--quiet', '--orphan', 'rewritten'], repo.tree);
    migrationFiles(repo.tree, { ...LEDGER, ...AMOUNT, ...NOTE });
    const rewritten = await repo.commit({}, 'rewritten history');
    await repo.push('rewritten:main');
    await approveMigration(e2e(), waiting, `${name}-2`);

    const refused = await refusal('ptahmigrations', name, 'ArtifactFetchFailed');
    assert.equal(
      refused.message,
      `the fetch-source init container stopped the Pod (commit_unreachable); nothing ran: ptah git: CommitUnreachable: ${planned} is no longer reachable from refs/heads/main within 1024 commits (was it force-pushed?); the next resolution reads the ref again`,
    );
    assert.deepEqual(await versions(url), ['20260101000000'], 'nothing of the refused Apply ran');

    // The retry resolves the ref again: the new tip, its own plan, approved and applied.
    const recovered = await awaitingAt(name, rewritten);
    assert.notEqual(recovered.status?.plan?.name, waiting.status?.plan?.name);
    await approveMigration(e2e(), recovered, `${name}-3`);
    const synced = await inSyncAt('ptahmigrations', name, rewritten);
    assert.equal(condition(synced, 'ArtifactResolved')?.reason, 'CommitResolved');
    assert.deepEqual(await versions(url), ['20260101000000', '20260102000000', '20260103000000']);
  });

  it('PtahSchema: a commit no ref names is refused before anything is fetched, and accepted once the server gives any commit by id', async () => {
    const t = e2e();
    const name = 'git-pinned';
    const repo = await fixture.repository('pinned');
    const pinned = await repo.commit({ 'db/schema.sql': ORDERS }, 'orders');
    await repo.commit({ 'README.md': 'on top\n' }, 'on top');
    await repo.push('main');
    const url = await create(
      t,
      'ptahschemas',
      name,
      gitSource(repo.httpUrl, { commit: pinned }, 'db', { https: true }),
      { apply: 'Always' },
    );
    const refused = await refusal('ptahschemas', name, 'SourceRefused');
    assert.equal(
      refused.message,
      `${pinned} of ${repo.httpUrl} could not be resolved: ptah git: CommitNotAdvertised: no branch or tag of ${repo.httpUrl} points at ${pinned}, and the server gives commits only at a branch or tag (uploadpack.allowReachableSHA1InWant is off); name a tag instead`,
    );
    const resolved = condition(await read('ptahschemas', name), 'ArtifactResolved');
    assert.equal(resolved?.status, 'False');
    assert.equal(resolved?.reason, 'SourceRefused');
    const requests = fixture.server.httpRequests().filter((r) => r.path.startsWith('/pinned.git/'));
    assert.ok(
      requests.some((r) => r.path === '/pinned.git/info/refs' && r.status === 200),
      'the advertisement was read',
    );
    assert.deepEqual(
      requests.filter((r) => r.path === '/pinned.git/git-upload-pack'),
      [],
      'nothing was fetched',
    );
    assert.deepEqual(await tables(url), []);

    // The server now gives any commit by id: the retry (every 5 s while Failed) resolves it.
    await git(['config', 'uploadpack.allowAnySHA1InWant', 'true'], repo.dir);
    await inSyncAt('ptahschemas', name, pinned);
    assert.deepEqual(await tables(url), ['orders']);
    assert.ok(
      fixture.server.httpRequests().some((r) => r.path === '/pinned.git/git-upload-pack' && r.status === 200),
      'fetched by its id',
    );
  });

  it('PtahSchema: a commit at a branch tip is accepted; a push on top refuses the next Resolve, and what was applied stays', async () => {
    const t = e2e();
    const name = 'git-pinned-tip';
    const repo = await fixture.repository('pinned-tip');
    const pinned = await repo.commit({ 'db/schema.sql': ORDERS }, 'orders');
    await repo.push('main');
    const url = await create(
      t,
      'ptahschemas',
      name,
      gitSource(repo.httpUrl, { commit: pinned }, 'db', { https: true }),
      { apply: 'Always' },
    );
    const synced = await inSyncAt('ptahschemas', name, pinned);
    assert.equal(
      condition(synced, 'ArtifactResolved')?.message,
      `${pinned} of ${repo.httpUrl} resolved to commit ${pinned}`,
    );
    assert.deepEqual(await tables(url), ['orders']);

    // An ordinary push on top: no branch or tag points at the commit any more, and the server does not say
    // it gives any commit by id.
    await repo.commit({ 'README.md': 'on top\n' }, 'on top');
    await repo.push('main');
    await requestRead('ptahschemas', name);
    const refused = await refusal('ptahschemas', name, 'SourceRefused');
    assert.equal(
      refused.message,
      `${pinned} of ${repo.httpUrl} could not be resolved: ptah git: CommitNotAdvertised: no branch or tag of ${repo.httpUrl} points at ${pinned}, and the server gives commits only at a branch or tag (uploadpack.allowReachableSHA1InWant is off); name a tag instead`,
    );
    assert.deepEqual(await tables(url), ['orders'], 'the resource keeps what it applied');
  });

  it('PtahSchema: a submodule and an LFS pointer at the selected path are each refused with Ptah’s last line', async () => {
    const t = e2e();
    const submodule = await fixture.repository('submodule');
    const vendored = 'a'.repeat(40);
    const withSubmodule = await submodule.commit({ 'db/schema.sql': ORDERS }, 'a submodule in db', () =>
      git(['update-index', '--add', '--cacheinfo', `160000,${vendored},db/vendor`], submodule.tree),
    );
    await submodule.push('main');
    const lfs = await fixture.repository('lfs');
    const withPointer = await lfs.commit(
      {
        'db/schema.sql': ORDERS,
        'db/big.sql': `version https://git-lfs.github.com/spec/v1\noid sha256:${'b'.repeat(64)}\nsize 123456\n`,
      },
      'an LFS pointer in db',
    );
    await lfs.push('main');
    const cases = [
      {
        name: 'git-submodule',
        repo: submodule,
        line: `ptah git: Submodule: db/vendor at ${withSubmodule.slice(0, 12)} is a submodule; a source path must hold the files themselves`,
      },
      {
        name: 'git-lfs',
        repo: lfs,
        line: `ptah git: LfsPointer: db/big.sql at ${withPointer.slice(0, 12)} is a Git LFS pointer, not the file; commit the file itself`,
      },
    ];
    const urls = await Promise.all(
      cases.map((c) =>
        create(
          t,
          'ptahschemas',
          c.name,
          gitSource(c.repo.httpUrl, { branch: 'main' }, 'db', { https: true }),
          {
            apply: 'Always',
          },
        ),
      ),
    );
    for (const [i, c] of cases.entries()) {
      const refused = await refusal('ptahschemas', c.name, 'SourceRefused');
      assert.equal(refused.message, `refs/heads/main of ${c.repo.httpUrl} could not be resolved: ${c.line}`);
      assert.deepEqual(await tables(urls[i]!), [], `${c.name}: nothing planned or applied`);
    }
  });

  it('SSH with pinned known hosts as UID 65532: both families reach InSync; a key the known hosts do not pin, and a Secret that grants another host or other known hosts, are refused', async () => {
    const t = e2e();
    const repo = await fixture.repository('over-ssh');
    migrationFiles(repo.tree, LEDGER);
    const commit = await repo.commit({ 'db/schema.sql': ORDERS }, 'schema and migrations');
    await repo.push('main');
    const pinned = await sshAccess(t, 'git-ssh', `${fixture.server.knownHosts}\n`);
    const otherKey = await sshAccess(
      t,
      'git-ssh-other-key',
      `${fixture.server.knownHosts.replace(/ssh-ed25519 \S+$/, OTHER_KEY)}\n`,
    );
    const noLine = await sshAccess(t, 'git-ssh-no-line', `[example.invalid]:22 ${OTHER_KEY}\n`);
    // The runner refuses these before Ptah starts: the credential is granted to another authority, and the
    // known hosts mounted are not the bytes the Secret names.
    const otherHost = await sshAccess(t, 'git-ssh-other-host', `${fixture.server.knownHosts}\n`, {
      host: '127.0.0.1:1',
    });
    const otherBytes = await sshAccess(t, 'git-ssh-other-bytes', `${fixture.server.knownHosts}\n`, {
      knownHostsSHA256: sha256(`${fixture.server.knownHosts}\n# another file\n`),
    });
    const branch = { branch: 'main' };
    const [schemaUrl, migrationUrl] = await Promise.all([
      create(t, 'ptahschemas', 'git-ssh', gitSource(repo.sshUrl, branch, 'db', pinned), { apply: 'Always' }),
      create(t, 'ptahmigrations', 'git-ssh-m', gitSource(repo.sshUrl, branch, 'migrations', pinned), {
        apply: 'Always',
      }),
      create(t, 'ptahschemas', 'git-ssh-other-key', gitSource(repo.sshUrl, branch, 'db', otherKey), {
        apply: 'Always',
      }),
      create(t, 'ptahschemas', 'git-ssh-no-line', gitSource(repo.sshUrl, branch, 'db', noLine), {
        apply: 'Always',
      }),
      create(t, 'ptahschemas', 'git-ssh-other-host', gitSource(repo.sshUrl, branch, 'db', otherHost), {
        apply: 'Always',
      }),
      create(t, 'ptahschemas', 'git-ssh-other-bytes', gitSource(repo.sshUrl, branch, 'db', otherBytes), {
        apply: 'Always',
      }),
    ]);

    const schema = await inSyncAt('ptahschemas', 'git-ssh', commit);
    assert.equal(
      condition(schema, 'ArtifactResolved')?.message,
      `refs/heads/main of ${repo.sshUrl} resolved to commit ${commit}`,
    );
    assert.deepEqual(await tables(schemaUrl!), ['orders']);
    await inSyncAt('ptahmigrations', 'git-ssh-m', commit);
    assert.deepEqual(await versions(migrationUrl!), ['20260101000000']);

    const otherKeyRefused = await refusal('ptahschemas', 'git-ssh-other-key', 'SourceRefused');
    assert.equal(
      otherKeyRefused.message,
      `refs/heads/main of ${repo.sshUrl} could not be resolved: ptah git: HostKeyNotPinned: Host key verification failed.`,
    );
    const noLineRefused = await refusal('ptahschemas', 'git-ssh-no-line', 'SourceRefused');
    assert.equal(
      noLineRefused.message,
      `refs/heads/main of ${repo.sshUrl} could not be resolved: ptah git: HostKeyNotPinned: the known hosts do not pin [127.0.0.1]:${fixture.server.sshPort}'s host key; add its known_hosts line to the source's credential`,
    );
    const otherHostRefused = await refusal('ptahschemas', 'git-ssh-other-host', 'SourceRefused');
    assert.equal(
      otherHostRefused.message,
      `refs/heads/main of ${repo.sshUrl} could not be resolved: the Git Secret grants 127.0.0.1:1, not 127.0.0.1:${fixture.server.sshPort}; the credential is not sent`,
    );
    const otherBytesRefused = await refusal('ptahschemas', 'git-ssh-other-bytes', 'SourceRefused');
    assert.equal(
      otherBytesRefused.message,
      `refs/heads/main of ${repo.sshUrl} could not be resolved: the Git Secret's knownHostsSHA256 does not name the bytes of the file it grants (${sha256(`${fixture.server.knownHosts}\n`)})`,
    );
  });
});
