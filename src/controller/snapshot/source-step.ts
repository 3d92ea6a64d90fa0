/**
 * The source step both families' `decide` take on an idle pass, before anything reads the database: for an
 * OCI source the policy gate and the recorded verdict (Resolve and Verify are Jobs whose results were
 * recorded when they finished); for a ConfigMap source the snapshot the manager just resolved, or why it
 * could not. `undefined` means the family stops here: Blocked on the policy, or failed to resolve.
 *
 * A source policy that refuses the source, or could not be read, retires the plan as well as failing: the
 * plan was made under a policy that no longer admits what it was made from. A policy replaced in the
 * cluster that still admits the source retires the plan too, with the policy named.
 */
import { artifactIdle, type ArtifactFamily, type ArtifactInput } from './artifact-steps.ts';
import { recordResolution, recordTarget } from './record-resolution.ts';
import type { ResolutionResult } from './resolve-source.ts';
import { isSourcePolicyReason } from './source-policy.ts';

export interface SourceStepInput {
  readonly coordinationDigest: string;
  readonly engine?: 'postgres' | 'mysql' | undefined;
  readonly resolution: ResolutionResult;
  readonly artifact?: ArtifactInput | undefined;
}

export function sourceStep(
  b: Parameters<typeof artifactIdle>[0] & Parameters<typeof recordResolution>[0],
  family: ArtifactFamily,
  input: SourceStepInput,
): { readonly sourceChanged: boolean } | undefined {
  if (input.artifact !== undefined) {
    const gate = artifactIdle(b, family, input.artifact);
    if (!gate.proceed) return undefined;
    recordTarget(b, input);
    return { sourceChanged: gate.inputsChanged };
  }
  if (!input.resolution.ok) {
    const { reason, message } = input.resolution;
    b.cond('ArtifactResolved', 'False', reason, message);
    if (isSourcePolicyReason(reason)) family.retirePlan(message, reason);
    family.fail('Resolve', reason, message);
    return undefined;
  }
  const previous = b.status.resolution;
  const policy = input.resolution.value.sourcePolicy;
  if (
    previous?.sourceType === 'ConfigMap' &&
    (previous.sourcePolicy?.uid !== policy?.uid || previous.sourcePolicy?.digest !== policy?.digest)
  ) {
    family.retirePlan(
      policy === undefined
        ? 'the source policy was removed; plans made under it retire'
        : `the source policy ${policy.name} was replaced; plans made under the old one retire`,
      'SourcePolicyChanged',
    );
  }
  return recordResolution(b, input.resolution, input);
}
