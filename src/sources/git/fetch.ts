/**
 * Fetches one commit into a private bare repository with git itself, never more history than needed: the
 * ref at depth 1 while it points at the commit, the commit by id where the server allows that, otherwise the
 * ref's history deeper each time up to the history budget. The objects directory is watched while git runs,
 * so a server cannot fill the disk: git has no download limit of its own on the fetching side.
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Advertisement } from './advertisement.ts';
import { GitSourceError } from './errors.ts';
import type { GitLimits } from './limits.ts';
import type { GitRemote } from './remote.ts';
import { runGit } from './run-git.ts';

export const FETCHED_REF = 'refs/ptah/fetched';

export interface Workspace {
  readonly repo: string;
  readonly env: NodeJS.ProcessEnv;
  dispose(): void;
}

export async function openWorkspace(
  ad: Advertisement,
  makeEnv: (home: string) => NodeJS.ProcessEnv,
  parent?: string,
): Promise<Workspace> {
  const base = mkdtempSync(join(parent ?? tmpdir(), 'ptah-git-'));
  const repo = join(base, 'repo.git');
  const env = makeEnv(base);
  try {
    await runGit(['init', '--quiet', '--bare', `--object-format=${ad.objectFormat}`, repo], {
      env,
      maxStdout: 4096,
    });
  } catch (e) {
    rmSync(base, { recursive: true, force: true });
    throw e;
  }
  return { repo, env, dispose: () => rmSync(base, { recursive: true, force: true }) };
}

export async function fetchRef(
  ws: Workspace,
  remote: GitRemote,
  ref: string,
  depth: number,
  limits: GitLimits,
): Promise<string> {
  await watched(ws, limits, (signal) =>
    runGit(
      [
        '-C',
        ws.repo,
        'fetch',
        '--quiet',
        '--no-tags',
        '--no-auto-gc',
        `--depth=${depth}`,
        '--end-of-options',
        remote.url,
        `+${ref}:${FETCHED_REF}`,
      ],
      {
        env: ws.env,
        signal,
        maxStdout: 64 * 1024,
        timeoutMs: 300_000,
      },
    ),
  );
  return peel(ws, FETCHED_REF);
}

export async function fetchById(
  ws: Workspace,
  remote: GitRemote,
  commit: string,
  limits: GitLimits,
): Promise<void> {
  try {
    await watched(ws, limits, (signal) =>
      runGit(
        [
          '-C',
          ws.repo,
          'fetch',
          '--quiet',
          '--no-tags',
          '--no-auto-gc',
          '--depth=1',
          '--end-of-options',
          remote.url,
          commit,
        ],
        {
          env: ws.env,
          signal,
          maxStdout: 64 * 1024,
          timeoutMs: 300_000,
        },
      ),
    );
  } catch (e) {
    // Asked only where the advertisement allows it, so "not our ref" means no ref reaches the commit any more.
    if (e instanceof GitSourceError && e.reason === 'CommitNotAdvertised')
      throw new GitSourceError(
        'CommitUnreachable',
        `the server no longer gives ${commit}: no branch or tag reaches it (was it force-pushed?); the next resolution reads the ref again`,
      );
    throw e;
  }
  if (!(await hasCommit(ws, commit)))
    throw new GitSourceError(
      'CommitUnreachable',
      `the server did not give ${commit} when asked for it by id`,
    );
}

/**
 * Looks for `commit` along `ref`'s history, deeper each time, within the history budget. Found means the
 * commit is an ancestor of the ref's tip (a shallow fetch brings only ancestors), which a force-push ends.
 */
export async function fetchAlongRef(
  ws: Workspace,
  remote: GitRemote,
  ref: string,
  commit: string,
  limits: GitLimits,
): Promise<void> {
  for (let depth = 16; ; depth = Math.min(depth * 8, limits.historyDepth)) {
    await fetchRef(ws, remote, ref, depth, limits);
    if (await hasCommit(ws, commit)) return;
    if (depth >= limits.historyDepth || !(await isShallow(ws)))
      throw new GitSourceError(
        'CommitUnreachable',
        `${commit} is no longer reachable from ${ref} within ${limits.historyDepth} commits (was it force-pushed?); the next resolution reads the ref again`,
      );
  }
}

export async function hasCommit(ws: Workspace, commit: string): Promise<boolean> {
  try {
    const out = await runGit(['-C', ws.repo, 'cat-file', '-t', commit], { env: ws.env, maxStdout: 64 });
    return out.stdout.toString().trim() === 'commit';
  } catch {
    return false;
  }
}

async function isShallow(ws: Workspace): Promise<boolean> {
  const out = await runGit(['-C', ws.repo, 'rev-parse', '--is-shallow-repository'], {
    env: ws.env,
    maxStdout: 64,
  });
  return out.stdout.toString().trim() === 'true';
}

async function peel(ws: Workspace, ref: string): Promise<string> {
  const out = await runGit(['-C', ws.repo, 'rev-parse', '--verify', '--end-of-options', `${ref}^{commit}`], {
    env: ws.env,
    maxStdout: 256,
  });
  return out.stdout.toString().trim();
}

async function watched<T>(
  ws: Workspace,
  limits: GitLimits,
  run: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const abort = new AbortController();
  let over = false;
  const timer = setInterval(() => {
    if (directoryBytes(join(ws.repo, 'objects')) > limits.fetchBytes) {
      over = true;
      abort.abort();
    }
  }, 250);
  try {
    return await run(abort.signal);
  } catch (e) {
    if (over)
      throw new GitSourceError(
        'TooLarge',
        `the fetch downloaded more than ${limits.fetchBytes} bytes and was stopped`,
      );
    throw e;
  } finally {
    clearInterval(timer);
  }
}

function directoryBytes(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) {
      try {
        total += statSync(join(entry.parentPath, entry.name)).size;
      } catch {
        // a temporary pack renamed between listing and stat
      }
    }
  }
  return total;
}
