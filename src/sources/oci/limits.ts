/**
 * Every read from a registry has a ceiling, so a hostile or broken registry cannot make a Job hold an
 * unbounded body in memory. The manifest ceiling is distribution's own (4 MiB); the artifact ceilings fit
 * the fetch emptyDir the operator gives a Pod.
 */
export interface ReadLimits {
  /** An image manifest, an index or a referrers list. */
  readonly manifestBytes: number;
  /** A token endpoint's JSON answer. */
  readonly tokenBytes: number;
  /** A registry error body (read only to name the error code). */
  readonly errorBytes: number;
  /** One file of an artifact. */
  readonly fileBytes: number;
  /** All files of an artifact together. */
  readonly artifactBytes: number;
  readonly files: number;
  /** A signature payload or a Sigstore bundle. */
  readonly signatureBytes: number;
  /** Signature manifests and referrers examined for one artifact. */
  readonly signatures: number;
}

export const DEFAULT_LIMITS: ReadLimits = {
  manifestBytes: 4 * 1024 * 1024,
  tokenBytes: 1024 * 1024,
  errorBytes: 8 * 1024,
  fileBytes: 16 * 1024 * 1024,
  artifactBytes: 48 * 1024 * 1024,
  files: 1000,
  signatureBytes: 1024 * 1024,
  signatures: 32,
};
