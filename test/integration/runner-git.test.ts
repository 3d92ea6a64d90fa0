// The runner's Git commands against a real Git server (git http-backend over HTTPS with basic auth): the
// Resolve container's resolve-git and the fetch init container's fetch-git, with a Secret laid out as
// Kubernetes mounts it. The grants are checked before Ptah starts, Ptah runs as a child on private copies,
// and what it wrote is checked again before the files reach the operation container's directory.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { execFile } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startGitServer, type GitServer } from '../env/git-server.ts';
import { runRunner } from '../../src/runner/main.ts';
import { acceptFrame, decodeFrame } from '../../src/protocol/frame.ts';
import type { RunnerOperation, RunnerResult } from '../../src/protocol/result.ts';
import { buildManifest } from '../../src/sources/snapshot-manifest.ts';

const run = promisify(execFile);

let server: GitServer;
let work: string;
let gitEnv: NodeJS.ProcessEnv;
let counter = 0;

async function git(args: string[], cwd: string): Promise<string> {
  const { stdout } = await run('git', args, { cwd, env: gitEnv, timeout: 30_000 });
  return stdout.trim();
}

const sha256 = (b: Buffer | string) => `sha256:${createHash('sha256').update(b).digest('hex')}`;

/** A Secret as Kubernetes mounts it: one file per key. */
function secretDir(keys: Record<string, string>): string {
  const dir = join(work, `secret-${++counter}`);
  mkdirSync(dir);
  for (const [k, v] of Object.entries(keys)) writeFileSync(join(dir, k), v);
  return dir;
}

async function runner(
  argv: string[],
  operation: RunnerOperation,
): Promise<{ exitCode: number; stderr: string; result: RunnerResult }> {
  let stdout = '';
  let stderr = '';
  const operationId = sha256(`op-${++counter}`);
  const exitCode = await runRunner(
    argv,
    {
      PATH: process.env['PATH'],
      HOME: process.env['HOME'],
      PTAH_OPERATION_ID: operationId,
      PTAH_TERMINATION_MESSAGE_PATH: join(work, `${counter}.termination`),
    },
    { writeStdout: (t) => (stdout += t), writeStderr: (t) => (stderr += t) },
  );
  const accepted = acceptFrame(decodeFrame(stdout), { operation, operationId });
  assert.ok(accepted.accepted, stderr);
  for (const secret of [server.httpAuth!.password])
    assert.ok(!stdout.includes(secret) && !stderr.includes(secret), 'no password in any output');
  return { exitCode, stderr, result: accepted.result };
}

function privateDir(): string {
  const dir = join(work, `private-${++counter}`);
  mkdirSync(dir);
  return dir;
}

let repoUrl: string;
let tree: string;
let remoteDir: string;
let first: string;
let authority: string;

const FILES = { 'db/schema.sql': 'CREATE TABLE orders (id bigint PRIMARY KEY);\n', 'README.md': 'outside\n' };
const DIGEST = buildManifest([
  { path: 'schema.sql', bytes: Buffer.from(FILES['db/schema.sql']) },
]).contentDigest;

function grants(extra: Record<string, string> = {}) {
  return secretDir({
    username: server.httpAuth!.username,
    password: server.httpAuth!.password,
    host: authority,
    caSHA256: sha256(readFileSync(server.caFile!)),
    ...extra,
  });
}

function access(auth: string): string[] {
  return ['--repository', repoUrl, '--path', 'db', '--auth-dir', auth, '--ca-file', server.caFile!];
}

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'ptah-runner-git-'));
  const home = join(work, 'home');
  mkdirSync(home);
  writeFileSync(join(home, '.gitconfig'), '[user]\n\tname = Ptah Test\n\temail = test@ptah.invalid\n');
  gitEnv = { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: home, GIT_CONFIG_NOSYSTEM: '1' };
  server = await startGitServer({ tls: true, httpAuth: true });
  const remote = await server.createRepository('runner');
  repoUrl = remote.httpUrl;
  remoteDir = remote.dir;
  authority = new URL(repoUrl).host;
  tree = join(work, 'tree');
  await git(['init', '--quiet', '--initial-branch=main', tree], work);
  for (const [p, c] of Object.entries(FILES)) {
    mkdirSync(join(tree, p, '..'), { recursive: true });
    writeFileSync(join(tree, p), c);
  }
  await git(['add', '-A'], tree);
  await git(['commit', '--quiet', '-m', 'first'], tree);
  first = await git(['rev-parse', 'HEAD'], tree);
  await git(['push', '--quiet', remoteDir, 'main'], tree);
});

after(async () => {
  await server?.stop();
  rmSync(work, { recursive: true, force: true });
});

describe('resolve-git', () => {
  test('reports the commit the branch names and the digest of the files at the path, as operation resolve', async () => {
    const r = await runner(
      ['resolve-git', ...access(grants()), '--ref', 'refs/heads/main', '--private-dir', privateDir()],
      'resolve',
    );
    assert.equal(r.exitCode, 0, r.stderr);
    assert.equal(r.result.outcome, 'succeeded');
    const out = r.result.outputs.gitCommit!;
    assert.equal(out.commit, first);
    assert.equal(out.contentDigest, DIGEST);
    assert.equal(out.files, 1);
    assert.equal(out.ref, 'refs/heads/main');
    assert.equal(out.path, 'db');
    assert.match(out.sourceDigest, /^sha256:[0-9a-f]{64}$/);
  });

  test('refuses a credential the Secret grants to another host, before Ptah starts', async () => {
    const r = await runner(
      [
        'resolve-git',
        ...access(grants({ host: 'git.example.com' })),
        '--ref',
        'main',
        '--private-dir',
        privateDir(),
      ],
      'resolve',
    );
    assert.equal(r.result.outcome, 'refused');
    assert.equal(r.result.error?.code, 'host_grant_mismatch');
    assert.equal(r.result.childExitCode, -1);
  });

  test('refuses a CA bundle whose digest the Secret does not hold', async () => {
    const r = await runner(
      [
        'resolve-git',
        ...access(grants({ caSHA256: sha256('other') })),
        '--ref',
        'main',
        '--private-dir',
        privateDir(),
      ],
      'resolve',
    );
    assert.equal(r.result.outcome, 'refused');
    assert.equal(r.result.error?.code, 'ca_grant_mismatch');
  });

  test("a source Ptah refuses says why with Ptah's last line", async () => {
    const r = await runner(
      ['resolve-git', ...access(grants()), '--ref', 'refs/heads/nope', '--private-dir', privateDir()],
      'resolve',
    );
    assert.equal(r.result.outcome, 'refused');
    assert.equal(r.result.error?.code, 'ref_not_found');
    assert.match(
      r.result.error?.message ?? '',
      /^ptah git: RefNotFound: .*has no branch or tag refs\/heads\/nope/,
    );
  });
});

describe('fetch-git', () => {
  test('fetches the bound commit, checks what Ptah wrote, and leaves only the files for the operation container', async () => {
    const out = join(work, `out-${++counter}`);
    const priv = privateDir();
    const r = await runner(
      [
        'fetch-git',
        ...access(grants()),
        '--ref',
        'refs/heads/main',
        '--private-dir',
        priv,
        '--commit',
        first,
        '--digest',
        DIGEST,
        '--out',
        out,
      ],
      'fetch-git',
    );
    assert.equal(r.exitCode, 0, r.stderr);
    assert.deepEqual(readdirSync(out), ['schema.sql']);
    assert.equal(readFileSync(join(out, 'schema.sql'), 'utf8'), FILES['db/schema.sql']);
    assert.ok(!existsSync(join(out, 'credential')), 'no credential copy where the operation container reads');
  });

  test('refuses another content digest than the bound one', async () => {
    const r = await runner(
      [
        'fetch-git',
        ...access(grants()),
        '--ref',
        'refs/heads/main',
        '--private-dir',
        privateDir(),
        '--commit',
        first,
        '--digest',
        sha256('other'),
        '--out',
        join(work, `out-${++counter}`),
      ],
      'fetch-git',
    );
    assert.equal(r.result.outcome, 'refused');
    assert.equal(r.result.error?.code, 'digest_mismatch');
  });

  test('a commit force-pushed away is refused', async () => {
    await git(['checkout', '--quiet', '--orphan', 'rewritten'], tree);
    await git(['commit', '--quiet', '-m', 'rewritten'], tree);
    await git(['push', '--quiet', '--force', remoteDir, 'rewritten:main'], tree);
    const r = await runner(
      [
        'fetch-git',
        ...access(grants()),
        '--ref',
        'refs/heads/main',
        '--private-dir',
        privateDir(),
        '--commit',
        first,
        '--digest',
        DIGEST,
        '--out',
        join(work, `out-${++counter}`),
      ],
      'fetch-git',
    );
    assert.equal(r.result.outcome, 'refused', r.stderr);
    assert.equal(r.result.error?.code, 'commit_unreachable');
  });
});
