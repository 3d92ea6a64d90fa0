// What the Git end-to-end files share: the real Git server (git http-backend over HTTPS with basic auth and its
// own CA, and sshd), the `git` Secret and `git-ca` ConfigMap an HTTPS source names, working trees whose commits
// are pushed straight into the served bare repositories, and the spec.desired.git a resource declares.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startGitServer, type GitServer } from '../env/git-server.ts';
import type { E2E } from './harness.ts';

const run = promisify(execFile);

export const sha256 = (text: string) => `sha256:${createHash('sha256').update(text).digest('hex')}`;

/** How a source reaches the server: HTTPS with the shared `git` Secret, or SSH with its own Secret and known hosts. */
export type GitAccess = { readonly https: true } | { readonly ssh: string; readonly knownHosts: string };

/** spec.desired of a resource reading `path` of `url` at a branch, tag or commit. */
export function gitSource(
  url: string,
  ref: Readonly<Record<string, string>>,
  path: string,
  access: GitAccess = { https: true },
) {
  return {
    git: {
      repository: url,
      ...ref,
      path,
      ...('https' in access
        ? { credentialsSecretRef: { name: 'git' }, caConfigMapRef: { name: 'git-ca', key: 'ca.crt' } }
        : {
            credentialsSecretRef: { name: access.ssh },
            knownHostsConfigMapRef: { name: access.knownHosts, key: 'known_hosts' },
          }),
    },
  };
}

export interface GitRepository {
  /** The bare repository the server serves. */
  readonly dir: string;
  readonly httpUrl: string;
  readonly sshUrl: string;
  /** The working tree commits are made in. */
  readonly tree: string;
  /** Writes the files, stages everything (and runs `stage` for what a work tree cannot hold), commits. */
  commit(files: Record<string, string>, message: string, stage?: () => Promise<unknown>): Promise<string>;
  /** An annotated tag at HEAD. */
  tag(name: string): Promise<string>;
  /** Pushes (forced) into the bare repository. */
  push(...refspecs: string[]): Promise<string>;
}

export interface GitFixture {
  readonly server: GitServer;
  readonly work: string;
  git(args: string[], cwd: string): Promise<string>;
  repository(name: string): Promise<GitRepository>;
  stop(): Promise<void>;
}

/** Starts the server and writes the HTTPS credential (`git`) and CA (`git-ca`) into the test namespace. */
export async function startGitFixture(t: E2E, prefix: string): Promise<GitFixture> {
  const work = mkdtempSync(join(tmpdir(), `ptah-e2e-${prefix}-`));
  const home = join(work, 'home');
  mkdirSync(home);
  writeFileSync(join(home, '.gitconfig'), '[user]\n\tname = Ptah Test\n\temail = test@ptah.invalid\n');
  const gitEnv = { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: home, GIT_CONFIG_NOSYSTEM: '1' };
  const git = async (args: string[], cwd: string): Promise<string> => {
    const { stdout } = await run('git', args, { cwd, env: gitEnv, timeout: 30_000 });
    return stdout.trim();
  };
  const server = await startGitServer({ tls: true, httpAuth: true });
  const ca = readFileSync(server.caFile!, 'utf8');
  await t.core.createNamespacedSecret({
    namespace: t.namespace,
    body: {
      metadata: { name: 'git' },
      stringData: {
        username: server.httpAuth!.username,
        password: server.httpAuth!.password,
        host: new URL(server.httpBaseUrl).host,
        caSHA256: sha256(ca),
      },
    },
  });
  await t.core.createNamespacedConfigMap({
    namespace: t.namespace,
    body: { metadata: { name: 'git-ca' }, data: { 'ca.crt': ca } },
  });
  return {
    server,
    work,
    git,
    async repository(name) {
      const remote = await server.createRepository(name);
      const tree = join(work, `tree-${name}`);
      await git(['init', '--quiet', '--initial-branch=main', tree], work);
      return {
        ...remote,
        tree,
        async commit(files, message, stage) {
          for (const [path, content] of Object.entries(files)) {
            mkdirSync(join(tree, path, '..'), { recursive: true });
            writeFileSync(join(tree, path), content);
          }
          await git(['add', '-A'], tree);
          await stage?.();
          await git(['commit', '--quiet', '--allow-empty', '-m', message], tree);
          return git(['rev-parse', 'HEAD'], tree);
        },
        tag: (tag) => git(['tag', '-a', '-m', tag, tag], tree),
        push: (...refspecs) => git(['push', '--quiet', '--force', remote.dir, ...refspecs], tree),
      };
    },
    async stop() {
      await server.stop();
      rmSync(work, { recursive: true, force: true });
    },
  };
}
