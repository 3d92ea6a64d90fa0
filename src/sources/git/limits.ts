/**
 * Ceilings on what a Git source may make a Job hold: the pack a fetch downloads (watched on disk, since git
 * itself has no such limit on the fetching side), how deep a lost commit is looked for along its ref, and
 * the selected files, like an artifact's.
 */
export interface GitLimits {
  /** Bytes the fetched objects may take on disk before the fetch is killed. */
  readonly fetchBytes: number;
  /** How many commits along the ref a recorded commit is looked for once the ref has moved on. */
  readonly historyDepth: number;
  readonly fileBytes: number;
  readonly totalBytes: number;
  readonly files: number;
}

export const DEFAULT_GIT_LIMITS: GitLimits = {
  fetchBytes: 256 * 1024 * 1024,
  historyDepth: 1024,
  fileBytes: 16 * 1024 * 1024,
  totalBytes: 48 * 1024 * 1024,
  files: 1000,
};
