import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { sendHttpRequest } from '../env/http-client.ts';
import { gitSshArgs, gitSshCommand, startGitServer, type GitServer } from '../env/git-server.ts';
import { portRefusesConnections, processAlive } from '../env/host-state.ts';

const run = promisify(execFile);

/** A git client isolated from the machine: its own HOME and config, no prompts, no system config. */
function gitClient(work: string, extraEnv: Record<string, string> = {}) {
  const home = mkdtempSync(join(work, 'home-'));
  writeFileSync(
    join(home, '.gitconfig'),
    '[user]\n\tname = Ptah Test\n\temail = test@ptah.invalid\n[init]\n\tdefaultBranch = main\n',
  );
  const env = {
    PATH: process.env['PATH'] ?? '/usr/bin:/bin',
    HOME: home,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_TERMINAL_PROMPT: '0',
    ...extraEnv,
  };
  return async (args: string[], cwd = work): Promise<string> => {
    const { stdout } = await run('git', args, { cwd, env, timeout: 30_000 });
    return stdout.trim();
  };
}

function knownHostsFile(work: string, line: string): string {
  const file = join(work, `known_hosts-${Math.random().toString(36).slice(2)}`);
  writeFileSync(file, line + '\n');
  return file;
}

/** Basic credentials travel in a header set through the environment, never in a URL or argv. */
function authHeaderEnv(auth: { username: string; password: string }): Record<string, string> {
  const token = Buffer.from(`${auth.username}:${auth.password}`).toString('base64');
  return {
    GIT_CONFIG_COUNT: '1',
    GIT_CONFIG_KEY_0: 'http.extraHeader',
    GIT_CONFIG_VALUE_0: `Authorization: Basic ${token}`,
  };
}

async function assertStopsCleanly(server: GitServer): Promise<void> {
  const httpPort = Number(new URL(server.httpBaseUrl).port);
  await server.stop();
  assert.ok(!processAlive(server.sshdPid), 'sshd has exited');
  assert.ok(await portRefusesConnections(server.sshPort), 'nothing listens on the SSH port');
  assert.ok(await portRefusesConnections(httpPort), 'nothing listens on the HTTP port');
}

test('git over HTTP and over SSH with a pinned host key: pushed commits fetch back both ways', async () => {
  const work = mkdtempSync(join(tmpdir(), 'ptah-git-client-'));
  const server = await startGitServer();
  try {
    assert.match(server.httpBaseUrl, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.match(server.knownHosts, new RegExp(`^\\[127\\.0\\.0\\.1\\]:${server.sshPort} ssh-ed25519 \\S+$`));
    const repo = await server.createRepository('schemas');
    const pinned = knownHostsFile(work, server.knownHosts);
    const git = gitClient(work, { GIT_SSH_COMMAND: gitSshCommand(server.clientKeyFile, pinned) });

    // Commit locally and push over HTTP.
    const source = join(work, 'source');
    await git(['init', '--quiet', source]);
    writeFileSync(join(source, 'schema.sql'), 'CREATE TABLE orders (id int);\n');
    await git(['add', 'schema.sql'], source);
    await git(['commit', '--quiet', '-m', 'first schema'], source);
    const first = await git(['rev-parse', 'HEAD'], source);
    await git(['push', '--quiet', repo.httpUrl, 'main'], source);
    assert.equal(execFileSync('git', ['--git-dir', repo.dir, 'rev-parse', 'main']).toString().trim(), first);

    // Clone it back over SSH, trusting only the pinned host key.
    const viaSsh = join(work, 'via-ssh');
    await git(['clone', '--quiet', repo.sshUrl, viaSsh]);
    assert.equal(await git(['rev-parse', 'HEAD'], viaSsh), first);
    assert.equal(readFileSync(join(viaSsh, 'schema.sql'), 'utf8'), 'CREATE TABLE orders (id int);\n');

    // Push a second commit over SSH and fetch it over HTTP.
    writeFileSync(join(viaSsh, 'schema.sql'), 'CREATE TABLE orders (id bigint);\n');
    await git(['commit', '--quiet', '-am', 'widen id'], viaSsh);
    const second = await git(['rev-parse', 'HEAD'], viaSsh);
    await git(['push', '--quiet', 'origin', 'main'], viaSsh);
    const before = server.httpRequests().length;
    await git(['fetch', '--quiet', repo.httpUrl, 'main'], source);
    assert.equal(await git(['rev-parse', 'FETCH_HEAD'], source), second);
    // The server's request log tells the advertisement from the fetch, which tests rely on (protocol v2
    // posts twice: ls-refs, then fetch).
    const path = new URL(repo.httpUrl).pathname;
    const seen = server
      .httpRequests()
      .slice(before)
      .map((r) => `${r.method} ${r.path}?${r.query} ${r.status}`);
    assert.equal(seen[0], `GET ${path}/info/refs?service=git-upload-pack 200`);
    assert.ok(seen.length >= 2, seen.join(', '));
    for (const r of seen.slice(1)) assert.equal(r, `POST ${path}/git-upload-pack? 200`);
    assert.notEqual(first, second);

    // A pack larger than http.postBuffer goes as a chunked request without Content-Length.
    await git(['merge', '--quiet', '--ff-only', 'FETCH_HEAD'], source);
    writeFileSync(join(source, 'seed.bin'), randomBytes(256 * 1024));
    await git(['add', 'seed.bin'], source);
    await git(['commit', '--quiet', '-m', 'seed data'], source);
    const third = await git(['rev-parse', 'HEAD'], source);
    await git(['-c', 'http.postBuffer=65536', 'push', '--quiet', repo.httpUrl, 'main'], source);
    await git(['pull', '--quiet', '--ff-only', 'origin', 'main'], viaSsh);
    assert.equal(await git(['rev-parse', 'HEAD'], viaSsh), third);
    assert.ok(readFileSync(join(viaSsh, 'seed.bin')).equals(readFileSync(join(source, 'seed.bin'))));

    // A known_hosts entry for the same address with a different key must make SSH refuse.
    const impostorKey = join(work, 'impostor');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', impostorKey]);
    const impostor = readFileSync(`${impostorKey}.pub`, 'utf8').split(' ').slice(0, 2).join(' ');
    const wrong = knownHostsFile(work, `[127.0.0.1]:${server.sshPort} ${impostor}`);
    const misled = gitClient(work, { GIT_SSH_COMMAND: gitSshCommand(server.clientKeyFile, wrong) });
    await assert.rejects(misled(['ls-remote', repo.sshUrl]), (error: { stderr?: string }) => {
      assert.match(error.stderr ?? '', /REMOTE HOST IDENTIFICATION HAS CHANGED/);
      assert.match(error.stderr ?? '', /Host key verification failed/);
      return true;
    });
    // ... and so must an empty known_hosts under strict checking.
    const unknown = gitClient(work, {
      GIT_SSH_COMMAND: gitSshCommand(server.clientKeyFile, knownHostsFile(work, '')),
    });
    await assert.rejects(unknown(['ls-remote', repo.sshUrl]), (error: { stderr?: string }) => {
      assert.match(error.stderr ?? '', /No ED25519 host key is known .* strict checking/);
      return true;
    });

    // The key opens git-shell only, never a login shell.
    await assert.rejects(
      run(
        'ssh',
        [
          ...gitSshArgs(server.clientKeyFile, pinned),
          '-p',
          String(server.sshPort),
          `${server.sshUser}@127.0.0.1`,
          'id',
        ],
        { timeout: 15_000 },
      ),
      (error: { stderr?: string }) => {
        assert.match(error.stderr ?? '', /unrecognized command 'id'/);
        return true;
      },
    );
  } finally {
    await assertStopsCleanly(server);
    rmSync(work, { recursive: true, force: true });
  }
});

test('git over HTTPS with basic auth: the CA and the credentials are both required', async () => {
  const work = mkdtempSync(join(tmpdir(), 'ptah-git-client-'));
  const server = await startGitServer({ tls: true, httpAuth: true });
  try {
    assert.match(server.httpBaseUrl, /^https:\/\/127\.0\.0\.1:\d+$/);
    assert.ok(server.caFile && server.httpAuth);
    const repo = await server.createRepository('app.git');
    assert.equal(repo.httpUrl, `${server.httpBaseUrl}/app.git`);

    const trusted = { GIT_SSL_CAINFO: server.caFile };
    const git = gitClient(work, { ...trusted, ...authHeaderEnv(server.httpAuth) });
    const source = join(work, 'source');
    await git(['init', '--quiet', source]);
    writeFileSync(join(source, 'README'), 'hello\n');
    await git(['add', 'README'], source);
    await git(['commit', '--quiet', '-m', 'hello'], source);
    const head = await git(['rev-parse', 'HEAD'], source);
    await git(['push', '--quiet', repo.httpUrl, 'main'], source);
    const clone = join(work, 'clone');
    await git(['clone', '--quiet', repo.httpUrl, clone]);
    assert.equal(await git(['rev-parse', 'HEAD'], clone), head);

    const anonymous = gitClient(work, trusted);
    // git answers a 401 by asking for a username, which is disabled here.
    const refused = (error: { stderr?: string }): boolean => {
      assert.match(error.stderr ?? '', /could not read Username/);
      return true;
    };
    await assert.rejects(anonymous(['ls-remote', repo.httpUrl]), refused);
    const wrongPassword = gitClient(work, {
      ...trusted,
      ...authHeaderEnv({ username: server.httpAuth.username, password: 'not-the-password' }),
    });
    await assert.rejects(wrongPassword(['ls-remote', repo.httpUrl]), refused);
    const advertisement = `${repo.httpUrl}/info/refs?service=git-upload-pack`;
    const direct = await sendHttpRequest(advertisement, { caFile: server.caFile });
    assert.equal(direct.status, 401);
    assert.match(String(direct.headers['www-authenticate']), /^Basic realm=/);
    const authorised = await sendHttpRequest(advertisement, { caFile: server.caFile, auth: server.httpAuth });
    assert.equal(authorised.status, 200);
    assert.equal(authorised.headers['content-type'], 'application/x-git-upload-pack-advertisement');
    assert.ok(authorised.body.includes(`${head} refs/heads/main`));
    const untrusting = gitClient(work, authHeaderEnv(server.httpAuth));
    await assert.rejects(untrusting(['ls-remote', repo.httpUrl]), (error: { stderr?: string }) => {
      assert.match(error.stderr ?? '', /certificate verif|SSL certificate problem/);
      return true;
    });
  } finally {
    await assertStopsCleanly(server);
    rmSync(work, { recursive: true, force: true });
  }
});
