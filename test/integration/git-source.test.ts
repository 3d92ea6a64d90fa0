// Git sources against real servers (git http-backend over HTTPS with basic auth, sshd with a pinned host
// key): ref selection from the advertisement, the content digest, refetch of a recorded commit, and every
// refusal the seed names. One server for the whole file.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startGitServer, type GitServer } from '../env/git-server.ts';
import {
  GitSourceError,
  pullGitSource,
  resolveGitSource,
  type GitAccess,
  type GitErrorReason,
} from '../../src/sources/git/index.ts';
import { buildManifest } from '../../src/sources/snapshot-manifest.ts';
import { materialiseSnapshot } from '../../src/sources/verify-snapshot.ts';

const run = promisify(execFile);

let server: GitServer;
let work: string;
let https: GitAccess;
let ssh: GitAccess;
let gitEnv: NodeJS.ProcessEnv;

async function git(args: string[], cwd: string): Promise<string> {
  const { stdout } = await run('git', args, { cwd, env: gitEnv, timeout: 30_000 });
  return stdout.trim();
}

/** A working tree whose commits are pushed straight into the bare repository on disk. */
async function repository(name: string) {
  const remote = await server.createRepository(name);
  const tree = join(work, `tree-${name}`);
  await git(['init', '--quiet', '--initial-branch=main', tree], work);
  return {
    ...remote,
    tree,
    async commit(files: Record<string, string | null>, message: string): Promise<string> {
      for (const [path, content] of Object.entries(files)) {
        const full = join(tree, path);
        if (content === null) rmSync(full, { force: true });
        else {
          mkdirSync(join(full, '..'), { recursive: true });
          writeFileSync(full, content);
        }
      }
      await git(['add', '-A'], tree);
      await git(['commit', '--quiet', '--allow-empty', '-m', message], tree);
      return git(['rev-parse', 'HEAD'], tree);
    },
    push: (...refspecs: string[]) => git(['push', '--quiet', '--force', remote.dir, ...refspecs], tree),
    serverConfig: (key: string, value: string) =>
      execFileSync('git', ['--git-dir', remote.dir, 'config', key, value], { env: gitEnv }),
  };
}

async function refusal(
  promise: Promise<unknown>,
  reason: GitErrorReason,
  message: RegExp,
): Promise<GitSourceError> {
  const error = await promise.then(
    () => assert.fail(`expected a ${reason} refusal`),
    (e: unknown) => e,
  );
  assert.ok(error instanceof GitSourceError, `a GitSourceError, got ${String(error)}`);
  assert.equal(error.reason, reason, error.message);
  assert.match(error.message, message);
  for (const secret of [
    server.httpAuth!.password,
    Buffer.from(`ptah:${server.httpAuth!.password}`).toString('base64'),
  ])
    assert.ok(!error.message.includes(secret), 'no credential in the message');
  return error;
}

const SCHEMA = {
  'db/schema.sql': 'CREATE TABLE orders (id bigint PRIMARY KEY);\n',
  'db/seed/roles.sql': 'SELECT 1;\n',
};
const digestOf = (files: Record<string, string>) =>
  buildManifest(Object.entries(files).map(([path, s]) => ({ path, bytes: Buffer.from(s) }))).contentDigest;

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'ptah-git-source-'));
  const home = join(work, 'home');
  mkdirSync(home);
  writeFileSync(join(home, '.gitconfig'), '[user]\n\tname = Ptah Test\n\temail = test@ptah.invalid\n');
  gitEnv = {
    PATH: process.env['PATH'] ?? '/usr/bin:/bin',
    HOME: home,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_TERMINAL_PROMPT: '0',
  };
  server = await startGitServer({ tls: true, httpAuth: true });
  https = { ...server.httpAuth!, caFile: server.caFile! };
  const knownHosts = join(work, 'known_hosts');
  writeFileSync(knownHosts, server.knownHosts + '\n');
  ssh = { sshPrivateKeyFile: server.clientKeyFile, knownHostsFile: knownHosts };
});

after(async () => {
  await server?.stop();
  rmSync(work, { recursive: true, force: true });
});

describe('resolve', () => {
  test('a branch over HTTPS and over SSH: its tip, and the digest a ConfigMap of the same files gives', async () => {
    const repo = await repository('branch');
    const tip = await repo.commit(
      { ...SCHEMA, 'README.md': 'outside the path\n', 'db/.editorconfig': 'x' },
      'first',
    );
    await repo.push('main');
    const expected = digestOf({
      'schema.sql': SCHEMA['db/schema.sql'],
      'seed/roles.sql': SCHEMA['db/seed/roles.sql'],
    });
    for (const [repository, access] of [
      [repo.httpUrl, https],
      [repo.sshUrl, ssh],
    ] as const) {
      const r = await resolveGitSource({ repository, ref: 'main', path: 'db' }, access);
      assert.equal(r.commit, tip);
      assert.equal(r.refKind, 'branch');
      assert.equal(r.refName, 'refs/heads/main');
      assert.equal(r.contentDigest, expected, 'dot-files skipped, paths relative to the selected directory');
      assert.deepEqual(
        r.manifest.manifest.files.map((f) => f.path),
        ['schema.sql', 'seed/roles.sql'],
      );
    }
    const one = await resolveGitSource(
      { repository: repo.httpUrl, ref: 'refs/heads/main', path: 'db/schema.sql' },
      https,
    );
    assert.deepEqual(
      one.manifest.manifest.files.map((f) => f.path),
      ['schema.sql'],
      'a file path selects that file',
    );
  });

  test('an edit outside the path keeps the digest, inside it changes; another path gives another source digest', async () => {
    const repo = await repository('edits');
    await repo.commit(SCHEMA, 'first');
    await repo.push('main');
    const first = await resolveGitSource({ repository: repo.httpUrl, ref: 'main', path: 'db' }, https);
    const second = await repo.commit({ 'README.md': 'docs\n' }, 'outside');
    await repo.push('main');
    const outside = await resolveGitSource({ repository: repo.httpUrl, ref: 'main', path: 'db' }, https);
    assert.equal(outside.commit, second);
    assert.equal(outside.contentDigest, first.contentDigest);
    await repo.commit({ 'db/schema.sql': 'CREATE TABLE orders (id int);\n' }, 'inside');
    await repo.push('main');
    const inside = await resolveGitSource({ repository: repo.httpUrl, ref: 'main', path: 'db' }, https);
    assert.notEqual(inside.contentDigest, first.contentDigest);
    const other = await resolveGitSource({ repository: repo.httpUrl, ref: 'main', path: 'db/seed' }, https);
    assert.notEqual(other.sourceDigest, inside.sourceDigest);
    assert.equal(first.sourceDigest, inside.sourceDigest);
  });

  test('tags: an annotated tag at the commit it peels to, a lightweight one at its commit; a name both branch and tag is refused', async () => {
    const repo = await repository('tags');
    const tagged = await repo.commit(SCHEMA, 'first');
    await git(['tag', '-a', '-m', 'release 1', 'v1', tagged], repo.tree);
    await git(['tag', 'light', tagged], repo.tree);
    await repo.commit({ 'db/schema.sql': 'SELECT 2;\n' }, 'second');
    await repo.push('main', 'refs/tags/v1', 'refs/tags/light');
    for (const ref of ['v1', 'refs/tags/v1', 'light']) {
      const r = await resolveGitSource({ repository: repo.httpUrl, ref, path: 'db' }, https);
      assert.equal(r.commit, tagged, ref);
      assert.equal(r.refKind, 'tag');
    }
    await git(['branch', 'v1', tagged], repo.tree);
    await repo.push('refs/heads/v1');
    await refusal(
      resolveGitSource({ repository: repo.httpUrl, ref: 'v1', path: 'db' }, https),
      'AmbiguousRef',
      /both a branch and a tag named v1/,
    );
    await refusal(
      resolveGitSource({ repository: repo.httpUrl, ref: 'nope', path: 'db' }, https),
      'RefNotFound',
      /no branch or tag nope/,
    );
  });

  test('a pinned commit: at a branch tip it is fetched; elsewhere refused before fetching until the server gives reachable commits by id', async () => {
    const repo = await repository('pinned');
    const old = await repo.commit(SCHEMA, 'first');
    await repo.push('main');
    const atTip = await resolveGitSource({ repository: repo.httpUrl, ref: old, path: 'db' }, https);
    assert.equal(atTip.commit, old);
    assert.equal(atTip.refKind, 'commit');
    await repo.commit({ 'db/schema.sql': 'SELECT 2;\n' }, 'on top');
    await repo.push('main');
    await refusal(
      resolveGitSource({ repository: repo.sshUrl, ref: old, path: 'db' }, ssh),
      'CommitNotAdvertised',
      /no branch or tag .* points at [0-9a-f]{40}.*allowReachableSHA1InWant is off/,
    );
    repo.serverConfig('uploadpack.allowReachableSHA1InWant', 'true');
    for (const [repository, access] of [
      [repo.httpUrl, https],
      [repo.sshUrl, ssh],
    ] as const) {
      const byId = await resolveGitSource({ repository, ref: old, path: 'db' }, access);
      assert.equal(byId.commit, old);
      assert.equal(byId.refName, undefined, 'fetched by its id');
      assert.equal(byId.contentDigest, atTip.contentDigest);
    }
  });

  test('a submodule, an LFS pointer and a symbolic link at the path are refused, naming the file', async () => {
    const repo = await repository('refusals');
    await repo.commit(SCHEMA, 'first');
    const inner = await repository('inner');
    await inner.commit({ 'x.sql': 'SELECT 1;\n' }, 'inner');
    await inner.push('main');
    await git(
      ['-c', 'protocol.file.allow=always', 'submodule', 'add', '--quiet', inner.dir, 'db/vendor'],
      repo.tree,
    );
    await git(['commit', '--quiet', '-m', 'submodule'], repo.tree);
    await repo.push('main');
    await refusal(
      resolveGitSource({ repository: repo.httpUrl, ref: 'main', path: 'db' }, https),
      'Submodule',
      /db\/vendor .* is a submodule/,
    );

    const lfs = await repository('lfs');
    await lfs.commit(
      {
        'db/big.sql':
          'version https://git-lfs.github.com/spec/v1\noid sha256:' + 'a'.repeat(64) + '\nsize 123456\n',
      },
      'lfs pointer',
    );
    await lfs.push('main');
    await refusal(
      resolveGitSource({ repository: lfs.httpUrl, ref: 'main', path: 'db' }, https),
      'LfsPointer',
      /db\/big\.sql .* is a Git LFS pointer/,
    );

    const link = await repository('link');
    await link.commit(SCHEMA, 'first');
    symlinkSync('/etc/passwd', join(link.tree, 'db', 'passwd.sql'));
    await link.commit({}, 'link');
    await link.push('main');
    await refusal(
      resolveGitSource({ repository: link.httpUrl, ref: 'main', path: 'db' }, https),
      'UnsafeContent',
      /db\/passwd\.sql .* is a symbolic link/,
    );
    await refusal(
      resolveGitSource({ repository: link.httpUrl, ref: 'main', path: 'nowhere' }, https),
      'PathNotFound',
      /no files at nowhere/,
    );
  });

  test('transport refusals: an unpinned host key, a wrong password, plain HTTP not allowed, a password in the URL', async () => {
    const repo = await repository('transport');
    await repo.commit(SCHEMA, 'first');
    await repo.push('main');
    const otherHosts = join(work, 'other_known_hosts');
    writeFileSync(
      otherHosts,
      server.knownHosts.replace(
        /ssh-ed25519 \S+$/,
        'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBr7ahp2Dr5LwWSHT3lQ6HcjbaFOWIY7cS6f0Jm2zWsH',
      ) + '\n',
    );
    await refusal(
      resolveGitSource(
        { repository: repo.sshUrl, ref: 'main', path: 'db' },
        { ...ssh, knownHostsFile: otherHosts },
      ),
      'HostKeyNotPinned',
      /Host key verification failed/,
    );
    const noHost = join(work, 'no_known_hosts');
    writeFileSync(
      noHost,
      '[example.invalid]:22 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBr7ahp2Dr5LwWSHT3lQ6HcjbaFOWIY7cS6f0Jm2zWsH\n',
    );
    await refusal(
      resolveGitSource(
        { repository: repo.sshUrl, ref: 'main', path: 'db' },
        { ...ssh, knownHostsFile: noHost },
      ),
      'HostKeyNotPinned',
      /known hosts do not pin \[127\.0\.0\.1\]:\d+/,
    );
    await refusal(
      resolveGitSource(
        { repository: repo.httpUrl, ref: 'main', path: 'db' },
        { ...https, password: 'wrong' },
      ),
      'Unauthorized',
      /refused the credential/,
    );
    await refusal(
      resolveGitSource(
        { repository: repo.httpUrl.replace('https:', 'http:'), ref: 'main', path: 'db' },
        https,
      ),
      'InsecureTransport',
      /plain HTTP/,
    );
    await refusal(
      resolveGitSource(
        {
          repository: repo.httpUrl.replace('https://', `https://ptah:${server.httpAuth!.password}@`),
          ref: 'main',
          path: 'db',
        },
        https,
      ),
      'InvalidRepository',
      /holds a password/,
    );
  });
});

describe('pull', () => {
  test('by the ref while it points at the commit, then along its history; a force-push is refused', async () => {
    const repo = await repository('pull');
    await repo.commit(SCHEMA, 'first');
    await repo.push('main');
    const r = await resolveGitSource({ repository: repo.httpUrl, ref: 'main', path: 'db' }, https);
    const recorded = { commit: r.commit, contentDigest: r.contentDigest };
    const same = await pullGitSource({ repository: repo.httpUrl, ref: 'main', path: 'db' }, recorded, https);
    assert.equal(same.contentDigest, r.contentDigest);

    for (let i = 0; i < 20; i++) await repo.commit({ [`db/later-${i}.sql`]: `SELECT ${i};\n` }, `later ${i}`);
    await repo.push('main');
    const along = await pullGitSource({ repository: repo.sshUrl, ref: 'main', path: 'db' }, recorded, ssh);
    assert.equal(
      along.contentDigest,
      r.contentDigest,
      'the recorded commit, found 20 commits down the branch',
    );

    await refusal(
      pullGitSource(
        { repository: repo.httpUrl, ref: 'main', path: 'db' },
        { ...recorded, contentDigest: digestOf({ 'x.sql': '' }) },
        https,
      ),
      'DigestMismatch',
      /not the recorded sha256:/,
    );

    await git(['checkout', '--quiet', '--orphan', 'rewritten'], repo.tree);
    await repo.commit({ 'db/schema.sql': 'rewritten\n' }, 'rewritten');
    await repo.push('rewritten:main');
    await refusal(
      pullGitSource({ repository: repo.httpUrl, ref: 'main', path: 'db' }, recorded, https),
      'CommitUnreachable',
      /no longer reachable from refs\/heads\/main .*force-pushed/,
    );
    // A server that gives reachable commits by id is asked by id, and refuses the unreachable one itself.
    repo.serverConfig('uploadpack.allowReachableSHA1InWant', 'true');
    await refusal(
      pullGitSource({ repository: repo.httpUrl, ref: 'main', path: 'db' }, recorded, https),
      'CommitUnreachable',
      /no longer gives [0-9a-f]{40}/,
    );
  });
});

describe('ptah git', () => {
  const ptah = async (
    args: string[],
    credentials: string,
  ): Promise<{ code: number; stdout: string; stderr: string }> => {
    try {
      const { stdout, stderr } = await run(
        process.execPath,
        ['--import', 'tsx', 'src/cli/ptah.ts', 'git', ...args],
        {
          env: { ...process.env, PTAH_GIT_CREDENTIALS: credentials },
          timeout: 120_000,
        },
      );
      return { code: 0, stdout, stderr };
    } catch (e) {
      const err = e as { code: number; stdout: string; stderr: string };
      return { code: err.code, stdout: err.stdout, stderr: err.stderr };
    }
  };

  test('resolve and pull from a mounted Secret; the pulled snapshot verifies as the init container reads it', async () => {
    const repo = await repository('cli');
    const commit = await repo.commit(SCHEMA, 'first');
    await repo.push('main');
    const secret = join(work, 'secret-https');
    mkdirSync(secret);
    writeFileSync(join(secret, 'username'), server.httpAuth!.username);
    writeFileSync(join(secret, 'password'), server.httpAuth!.password);
    const common = [
      '--repository',
      repo.httpUrl,
      '--ref',
      'main',
      '--path',
      'db',
      '--ca-file',
      server.caFile!,
    ];
    const resolved = await ptah(['resolve', ...common, '--json'], secret);
    assert.equal(resolved.code, 0, resolved.stderr);
    const r = JSON.parse(resolved.stdout) as { commit: string; contentDigest: string; refKind: string };
    assert.equal(r.commit, commit);
    assert.equal(r.refKind, 'branch');

    const out = join(work, 'pulled');
    const pulled = await ptah(
      ['pull', ...common, '--commit', commit, '--digest', r.contentDigest, '--dir', out],
      secret,
    );
    assert.equal(pulled.code, 0, pulled.stderr);
    const copy = join(work, 'copied');
    const check = materialiseSnapshot(out, r.contentDigest as `sha256:${string}`, copy);
    assert.ok(check.ok, JSON.stringify(check));

    const sshSecret = join(work, 'secret-ssh');
    mkdirSync(sshSecret);
    writeFileSync(join(sshSecret, 'ssh-privatekey'), readFileSync(server.clientKeyFile), { mode: 0o600 });
    writeFileSync(
      join(sshSecret, 'known_hosts'),
      'example.invalid ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBr7ahp2Dr5LwWSHT3lQ6HcjbaFOWIY7cS6f0Jm2zWsH\n',
    );
    const unpinned = await ptah(
      ['resolve', '--repository', repo.sshUrl, '--ref', 'main', '--path', 'db'],
      sshSecret,
    );
    assert.equal(unpinned.code, 4);
    assert.match(
      unpinned.stderr.trim().split('\n').at(-1)!,
      /^ptah git: HostKeyNotPinned: the known hosts do not pin \[127\.0\.0\.1\]:\d+/,
    );
    for (const text of [resolved.stdout, resolved.stderr, pulled.stdout, pulled.stderr])
      assert.ok(!text.includes(server.httpAuth!.password), 'the password is never printed');
  });
});
