/**
 * Git sources, as the Resolve Job and the fetch init container use them:
 * - `resolveGitSource` reads the ref the source names, fetches the commit it names now, and reports that
 *   commit with the content digest of the selected files, computed exactly as for a ConfigMap snapshot;
 * - `pullGitSource` fetches a recorded commit again and refuses any content but the recorded digest.
 * Both decide from the server's advertisement before fetching, so a refusal costs no download.
 */
import type { Sha256Digest } from '../../api/digest.ts';
import { buildManifest, type BuiltManifest } from '../snapshot-manifest.ts';
import { givesReachableCommitsById } from './advertisement.ts';
import { gitEnvironment, type GitAccess } from './access.ts';
import { GitSourceError } from './errors.ts';
import { fetchAlongRef, fetchById, fetchRef, hasCommit, openWorkspace } from './fetch.ts';
import { DEFAULT_GIT_LIMITS, type GitLimits } from './limits.ts';
import { readAdvertisement } from './read-advertisement.ts';
import { parseRemote, repositoryPathDigest } from './remote.ts';
import { isCommitId, selectRef, type RefKind } from './select-ref.ts';
import { checkSourcePath, readSelectedFiles } from './tree.ts';

export type { GitAccess } from './access.ts';
export { GitSourceError, type GitErrorReason } from './errors.ts';
export { DEFAULT_GIT_LIMITS, type GitLimits } from './limits.ts';
export { parseRemote, repositoryPathDigest, type GitRemote } from './remote.ts';

export interface GitSource {
  readonly repository: string;
  /** A branch, a tag, or a commit id. */
  readonly ref: string;
  /** A directory (or one file) in the repository; `.` is the root. */
  readonly path: string;
}

export interface GitResolution {
  readonly repository: string;
  readonly ref: string;
  readonly path: string;
  readonly refKind: RefKind;
  /** The full ref the commit was found at (a commit source fetched by id has none). */
  readonly refName?: string;
  readonly commit: string;
  readonly contentDigest: Sha256Digest;
  /** sha256 of the repository URL and path: what a plan binds beside the content digest. */
  readonly sourceDigest: string;
  readonly manifest: BuiltManifest;
}

export interface GitOptions {
  readonly limits?: GitLimits;
  readonly signal?: AbortSignal;
  /** Where the private repository is made (an emptyDir in a Pod); the system temporary directory by default. */
  readonly workDir?: string;
}

export async function resolveGitSource(
  source: GitSource,
  access: GitAccess,
  options: GitOptions = {},
): Promise<GitResolution> {
  const limits = options.limits ?? DEFAULT_GIT_LIMITS;
  checkSourcePath(source.path);
  const remote = parseRemote(source.repository, { allowPlainHttp: access.allowPlainHttp ?? false });
  const ad = await readAdvertisement(remote, access, options.signal);
  const selected = selectRef(ad, source.ref, remote.url);
  const ws = await openWorkspace(ad, (home) => gitEnvironment(remote, access, home), options.workDir);
  try {
    let commit = selected.commit;
    if (selected.fetch.by === 'ref') {
      // The ref may have moved since the advertisement; what was fetched is the answer, except for a pinned commit.
      const fetched = await fetchRef(ws, remote, selected.fetch.name, 1, limits);
      if (selected.kind !== 'commit') commit = fetched;
      else if (fetched !== commit) await fetchById(ws, remote, commit, limits);
    } else {
      await fetchById(ws, remote, commit, limits);
    }
    const files = await readSelectedFiles(ws.repo, ws.env, commit, source.path, limits);
    const manifest = buildManifest(files);
    return {
      repository: source.repository,
      ref: source.ref,
      path: source.path,
      refKind: selected.kind,
      ...(selected.refName !== undefined ? { refName: selected.refName } : {}),
      commit,
      contentDigest: manifest.contentDigest,
      sourceDigest: repositoryPathDigest(source.repository, source.path),
      manifest,
    };
  } finally {
    ws.dispose();
  }
}

export interface RecordedCommit {
  readonly commit: string;
  readonly contentDigest: Sha256Digest;
}

/**
 * Fetches the recorded commit again: by the ref while it still points there, then by id where the server
 * allows it, then along the ref's history within the budget. A commit source is fetched as at resolution.
 * Content other than the recorded digest is refused.
 */
export async function pullGitSource(
  source: GitSource,
  recorded: RecordedCommit,
  access: GitAccess,
  options: GitOptions = {},
): Promise<BuiltManifest> {
  const limits = options.limits ?? DEFAULT_GIT_LIMITS;
  checkSourcePath(source.path);
  if (!/^(?:[0-9a-f]{40}|[0-9a-f]{64})$/.test(recorded.commit))
    throw new GitSourceError(
      'InvalidRef',
      `the recorded commit "${recorded.commit.slice(0, 80)}" is not a commit id`,
    );
  const remote = parseRemote(source.repository, { allowPlainHttp: access.allowPlainHttp ?? false });
  const ad = await readAdvertisement(remote, access, options.signal);
  const ws = await openWorkspace(ad, (home) => gitEnvironment(remote, access, home), options.workDir);
  try {
    if (isCommitId(source.ref)) {
      if (source.ref !== recorded.commit)
        throw new GitSourceError(
          'DigestMismatch',
          `the source names ${source.ref} but the operation is bound to ${recorded.commit}`,
        );
      const selected = selectRef(ad, source.ref, remote.url);
      if (selected.fetch.by === 'ref') await fetchRef(ws, remote, selected.fetch.name, 1, limits);
      else await fetchById(ws, remote, recorded.commit, limits);
    } else {
      const selected = selectRef(ad, source.ref, remote.url);
      const name = selected.refName!;
      if (selected.commit === recorded.commit) await fetchRef(ws, remote, name, 1, limits);
      else if (givesReachableCommitsById(ad)) await fetchById(ws, remote, recorded.commit, limits);
      else await fetchAlongRef(ws, remote, name, recorded.commit, limits);
    }
    if (!(await hasCommit(ws, recorded.commit)))
      throw new GitSourceError('CommitUnreachable', `${recorded.commit} was not fetched from ${remote.url}`);
    const manifest = buildManifest(
      await readSelectedFiles(ws.repo, ws.env, recorded.commit, source.path, limits),
    );
    if (manifest.contentDigest !== recorded.contentDigest)
      throw new GitSourceError(
        'DigestMismatch',
        `the files at ${source.path} in ${recorded.commit.slice(0, 12)} give ${manifest.contentDigest}, not the recorded ${recorded.contentDigest}`,
      );
    return manifest;
  } finally {
    ws.dispose();
  }
}
