/**
 * One error type for everything the OCI client refuses, with a reason a caller can branch on (the
 * operator maps them to condition reasons). Messages name the registry, repository and digest, never a
 * credential: the client never puts a header value, a token or a config file's bytes into one.
 */
export type OciErrorReason =
  | 'InvalidReference'
  | 'InvalidConfig'
  | 'Unreachable'
  | 'Unauthorized'
  | 'NotFound'
  | 'RegistryError'
  | 'TooLarge'
  | 'DigestMismatch'
  | 'InvalidManifest'
  | 'WrongArtifactType'
  | 'UnsafeContent'
  | 'InsecureTransport';

export class OciError extends Error {
  override readonly name = 'OciError';
  constructor(
    readonly reason: OciErrorReason,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
