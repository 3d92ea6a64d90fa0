/**
 * Plan chunks: PtahSchemaPlanChunk objects, immutable, owned by their plan, each holding one raw byte cut
 * of the plan. Publication writes and reads them back here; every reader (the manager before an Apply,
 * `kubectl ptah plan`) checks them with `checkChunk`.
 */
import { sha256Digest } from '../api/digest.ts';
import { controllerOwnerReference, GROUP_VERSION, LABELS, MANAGED_BY, type ObjectMeta } from '../api/meta.ts';
import type { PlanChunk } from '../api/ptah-schema-plan.ts';
import type { PtahSchemaPlanChunk } from '../api/ptah-schema-plan-chunk.ts';
import type { PlanPiece } from './split-plan.ts';

export const CHUNK_COMPONENT = 'plan-chunk';

export interface ChunkOwnerPlan {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: Pick<ObjectMeta, 'name' | 'uid' | 'namespace'>;
  readonly spec: { readonly schemaRef: { readonly name: string } };
}

/** The labels a chunk and its projection carry: both name their plan and its resource. */
export function planPieceLabels(plan: ChunkOwnerPlan, component: string): Record<string, string> {
  return {
    [LABELS.managedBy]: MANAGED_BY,
    [LABELS.component]: component,
    [LABELS.plan]: plan.metadata.name,
    [LABELS.schema]: plan.spec.schemaRef.name,
  };
}

export function buildPlanChunk(plan: ChunkOwnerPlan, piece: PlanPiece): PtahSchemaPlanChunk {
  return {
    apiVersion: GROUP_VERSION,
    kind: 'PtahSchemaPlanChunk',
    metadata: {
      name: piece.name,
      ...(plan.metadata.namespace === undefined ? {} : { namespace: plan.metadata.namespace }),
      labels: planPieceLabels(plan, CHUNK_COMPONENT),
      ownerReferences: [controllerOwnerReference(plan)],
    },
    spec: { data: Buffer.from(piece.bytes).toString('base64') },
  };
}

export type ChunkCheck =
  | { readonly ok: true; readonly bytes: Uint8Array }
  | { readonly ok: false; readonly reason: ChunkFailure; readonly message: string };

export type ChunkFailure =
  'Missing' | 'NameMismatch' | 'UIDMismatch' | 'WrongOwner' | 'Malformed' | 'SizeMismatch' | 'DigestMismatch';

type Failed = Extract<ChunkCheck, { ok: false }>;
const fail = (reason: ChunkFailure, message: string): Failed => ({ ok: false, reason, message });

/** Decodes base64 stored bytes and holds them to what the plan records for the chunk (size, digest). */
export function checkChunkBytes(expected: PlanChunk, what: string, encoded: string | undefined): ChunkCheck {
  if (encoded === undefined) return fail('Malformed', `${what} holds no bytes`);
  const bytes = Buffer.from(encoded, 'base64');
  if (bytes.toString('base64') !== encoded) return fail('Malformed', `${what} is not canonical base64`);
  if (bytes.length !== expected.size) {
    return fail('SizeMismatch', `${what} has ${bytes.length} bytes; the plan records ${expected.size}`);
  }
  if (sha256Digest(bytes) !== expected.digest)
    return fail('DigestMismatch', `${what} does not match its digest`);
  return { ok: true, bytes };
}

/** The one owner a chunk or projection may have: its plan, as controller. */
export function ownedByPlanOnly(meta: Pick<ObjectMeta, 'ownerReferences'>, planUID: string): boolean {
  const owners = meta.ownerReferences ?? [];
  return owners.length === 1 && owners[0]!.uid === planUID && owners[0]!.controller === true;
}

/**
 * Checks one stored chunk against what the plan records for it. Used on read-back before publication
 * commits the UIDs, and again for every chunk before an Apply. Immutability is the CRD's own rule.
 */
export function checkChunk(
  expected: PlanChunk,
  planUID: string,
  chunk: PtahSchemaPlanChunk | undefined,
  expectedUID?: string,
): ChunkCheck {
  if (chunk === undefined) return fail('Missing', `chunk ${expected.name} does not exist`);
  if (chunk.metadata.name !== expected.name)
    return fail('NameMismatch', `read ${chunk.metadata.name} for chunk ${expected.name}`);
  if (expectedUID !== undefined && chunk.metadata.uid !== expectedUID) {
    return fail('UIDMismatch', `chunk ${expected.name} was replaced: its UID is not the one published`);
  }
  if (!ownedByPlanOnly(chunk.metadata, planUID)) {
    return fail('WrongOwner', `chunk ${expected.name} is not owned by its plan`);
  }
  return checkChunkBytes(expected, `chunk ${expected.name}`, chunk.spec?.data);
}
