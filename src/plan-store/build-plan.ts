/**
 * Builds the PtahSchemaPlan object and its chunks for a set of plan bytes. The plan's name, fingerprint and
 * chunk list all derive from the bytes and bindings, so the same inputs always build the same objects.
 */
import { sha256Digest } from '../api/digest.ts';
import { planName, schemaPlanFingerprint } from '../api/fingerprint.ts';
import { GROUP_VERSION } from '../api/meta.ts';
import type { PtahSchema } from '../api/ptah-schema.ts';
import { PLAN_CONTRACT_VERSION, type PlanBinding, type PtahSchemaPlan } from '../api/ptah-schema-plan.ts';
import { schemaPlanMetadata } from './plan-metadata.ts';
import { chunkSpecs, splitPlan, type PlanPiece } from './split-plan.ts';

export type PlanInputs = Omit<PlanBinding, 'contractVersion' | 'schemaUID' | 'planContentDigest'>;

export interface BuiltPlan {
  readonly plan: PtahSchemaPlan;
  readonly pieces: readonly PlanPiece[];
}

export function buildSchemaPlan(
  schema: Pick<PtahSchema, 'apiVersion' | 'kind' | 'metadata'>,
  inputs: PlanInputs,
  bytes: Uint8Array,
  /** How many plans of this fingerprint were retired for good before; see `planName`. */
  publication = 0,
): BuiltPlan {
  const uid = schema.metadata.uid;
  if (uid === undefined || uid === '') throw new Error(`PtahSchema ${schema.metadata.name} has no UID`);
  const binding: PlanBinding = {
    ...inputs,
    contractVersion: PLAN_CONTRACT_VERSION,
    schemaUID: uid,
    planContentDigest: sha256Digest(bytes),
  };
  const fingerprint = schemaPlanFingerprint(binding);
  const name = planName(fingerprint, publication);
  const pieces = splitPlan(name, bytes);
  const plan: PtahSchemaPlan = {
    apiVersion: GROUP_VERSION,
    kind: 'PtahSchemaPlan',
    metadata: schemaPlanMetadata(schema, name),
    spec: {
      schemaRef: { name: schema.metadata.name, uid },
      fingerprint,
      binding,
      size: bytes.length,
      chunks: chunkSpecs(pieces),
    },
  };
  return { plan, pieces };
}
