/**
 * One error type for everything a Git source refuses, with a reason the operator maps to a condition reason.
 * Messages name the repository, ref, path and commit, never a credential: no header, password, key or
 * URL userinfo is ever put into one (repository URLs are shown without userinfo, see remote.ts).
 */
export type GitErrorReason =
  | 'InvalidRepository'
  | 'InvalidRef'
  | 'InvalidPath'
  | 'RefNotFound'
  | 'AmbiguousRef'
  | 'CommitNotAdvertised'
  | 'CommitUnreachable'
  | 'PathNotFound'
  | 'Submodule'
  | 'LfsPointer'
  | 'UnsafeContent'
  | 'TooLarge'
  | 'DigestMismatch'
  | 'HostKeyNotPinned'
  | 'Unauthorized'
  | 'Unreachable'
  | 'InsecureTransport'
  | 'ProtocolError';

export class GitSourceError extends Error {
  override readonly name = 'GitSourceError';
  constructor(
    readonly reason: GitErrorReason,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
