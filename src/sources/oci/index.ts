/**
 * The OCI source: a small distribution client, Ptah's artifact format, and the verification policy.
 * The CLI (`ptah schema push|pull`, `ptah migrations push|pull`, `ptah oci …`) and the operator's
 * Resolve, Verify and fetch steps use only what is exported here.
 */
export type { RegistryAccess } from './client.ts';
export { RegistryClient } from './client.ts';
export { OciError, type OciErrorReason } from './errors.ts';
export { DEFAULT_LIMITS, type ReadLimits } from './limits.ts';
export { parseReference, formatReference, type ArtifactReference } from './reference.ts';
export { ARTIFACT_TYPE, type ArtifactKind } from './artifact-format.ts';
export {
  resolveArtifact,
  pullArtifact,
  pushArtifact,
  parsePinnedReference,
  type ResolvedArtifact,
  type PulledArtifact,
  type PulledFile,
  type PushedArtifact,
} from './artifacts.ts';
export { readLocalFiles, writeLocalFiles } from './files.ts';
export {
  parseVerificationPolicy,
  selectPolicyKey,
  PolicyError,
  POLICY_KEYS,
  type VerificationPolicy,
  type PolicyKey,
  type RequiredAnnotation,
  type SignatureRule,
} from './policy.ts';
export {
  verifyArtifact,
  type VerificationFinding,
  type VerificationOutcome,
  type VerificationRule,
  type VerifyOptions,
} from './verify.ts';
