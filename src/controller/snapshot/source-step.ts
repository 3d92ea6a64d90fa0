/**
 * The source step both families' `decide` take on an idle pass, before anything reads the database: for an
 * OCI source the policy gate and the recorded verdict (Resolve and Verify are Jobs whose results were
 * recorded when they finished); for a ConfigMap source the snapshot the manager just resolved, or why it
 * could not. `undefined` means the family stops here: Blocked on the policy, or failed to resolve.
 */
import type { Resolution } from '../../api/ptah-schema.ts';
import { artifactIdle, type ArtifactFamily, type ArtifactInput } from './artifact-steps.ts';
import { recordResolution, recordTarget } from './record-resolution.ts';

export interface SourceStepInput {
  readonly coordinationDigest: string;
  readonly engine?: 'postgres' | 'mysql' | undefined;
  readonly resolution:
    | { readonly ok: true; readonly value: Resolution }
    | { readonly ok: false; readonly reason: string; readonly message: string };
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
    b.cond('ArtifactResolved', 'False', input.resolution.reason, input.resolution.message);
    family.fail('Resolve', input.resolution.reason, input.resolution.message);
    return undefined;
  }
  return recordResolution(b, input.resolution.value, input);
}
