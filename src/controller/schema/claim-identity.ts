/**
 * Deterministic claim identity. The operation id folds the resource UID, the operation, the inputs it was
 * decided from and the instant the claim was written; the Job name is derived from the id. Because the claim
 * (with its Job name) is in status before the Job exists, a restarted manager finds the Job by name instead
 * of creating a second one.
 */
import { canonicalDigest, type Sha256Digest } from '../../api/digest.ts';
import type { OperationType } from './model.ts';

export interface ClaimInputs {
  readonly schemaUID: string;
  readonly generation: number;
  readonly contentDigest: string;
  readonly configMapUID: string;
  readonly coordinationDigest: string;
  /** An Apply, and the proof after it, are bound to the plan they run or prove. */
  readonly planUID?: string;
  readonly planFingerprint?: string;
}

export function inputsFingerprint(type: OperationType, inputs: ClaimInputs): Sha256Digest {
  return canonicalDigest({ contractVersion: 1, operation: type, ...inputs });
}

export function operationId(
  schemaUID: string,
  type: OperationType,
  fingerprint: string,
  attempt: number,
  startedAt: string,
): Sha256Digest {
  return canonicalDigest({ schemaUID, operation: type, inputsFingerprint: fingerprint, attempt, startedAt });
}

const JOB_PREFIX: Readonly<Record<OperationType, string>> = {
  Resolve: 'resolve',
  Verify: 'verify',
  Observe: 'observe',
  Plan: 'plan',
  Apply: 'apply',
};

/** `ptah-<op>-<resource>-<16 hex>`, cut so it stays a DNS label (Job names become Pod labels). */
export function jobName(type: OperationType, resourceName: string, opId: string): string {
  const hex = opId.replace(/^sha256:/, '').slice(0, 16);
  const prefix = `ptah-${JOB_PREFIX[type]}-`;
  const room = 63 - prefix.length - hex.length - 1;
  const middle = resourceName
    .slice(0, room)
    .replace(/[^a-z0-9-]/g, '-')
    .replace(/-+$/, '');
  return `${prefix}${middle}-${hex}`;
}
