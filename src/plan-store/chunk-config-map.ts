/**
 * Chunk ConfigMaps: immutable, owned by their plan, one `chunk` key of raw bytes each. Pods mount them as a
 * projected volume, so an Apply reads exactly what was published.
 */
import type { ConfigMapObject } from '../api/core.ts';
import { sha256Digest } from '../api/digest.ts';
import { controllerOwnerReference, LABELS, MANAGED_BY, type ObjectMeta } from '../api/meta.ts';
import type { PlanChunk } from '../api/ptah-schema-plan.ts';
import type { PlanPiece } from './split-plan.ts';

export const CHUNK_KEY = 'chunk';
export const CHUNK_COMPONENT = 'plan-chunk';

export interface ChunkOwnerPlan {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: Pick<ObjectMeta, 'name' | 'uid' | 'namespace'>;
  readonly spec: { readonly schemaRef: { readonly name: string } };
}

export function buildChunkConfigMap(plan: ChunkOwnerPlan, piece: PlanPiece): ConfigMapObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: piece.name,
      ...(plan.metadata.namespace === undefined ? {} : { namespace: plan.metadata.namespace }),
      labels: {
        [LABELS.managedBy]: MANAGED_BY,
        [LABELS.component]: CHUNK_COMPONENT,
        [LABELS.plan]: plan.metadata.name,
        [LABELS.schema]: plan.spec.schemaRef.name,
      },
      ownerReferences: [controllerOwnerReference(plan)],
    },
    immutable: true,
    binaryData: { [CHUNK_KEY]: Buffer.from(piece.bytes).toString('base64') },
  };
}

export type ChunkCheck =
  | { readonly ok: true; readonly bytes: Uint8Array }
  | { readonly ok: false; readonly reason: ChunkFailure; readonly message: string };

export type ChunkFailure =
  | 'Missing'
  | 'NameMismatch'
  | 'UIDMismatch'
  | 'NotImmutable'
  | 'WrongOwner'
  | 'Malformed'
  | 'SizeMismatch'
  | 'DigestMismatch';

/**
 * Checks one stored chunk against what the plan records for it. Used on read-back before publication
 * commits the UIDs, and again for every chunk before an Apply.
 */
export function checkChunk(
  expected: PlanChunk,
  planUID: string,
  cm: ConfigMapObject | undefined,
  expectedUID?: string,
): ChunkCheck {
  const fail = (reason: ChunkFailure, message: string) => ({ ok: false, reason, message }) as const;
  if (cm === undefined) return fail('Missing', `chunk ${expected.name} does not exist`);
  if (cm.metadata.name !== expected.name)
    return fail('NameMismatch', `read ${cm.metadata.name} for chunk ${expected.name}`);
  if (expectedUID !== undefined && cm.metadata.uid !== expectedUID) {
    return fail('UIDMismatch', `chunk ${expected.name} was replaced: its UID is not the one published`);
  }
  if (cm.immutable !== true) return fail('NotImmutable', `chunk ${expected.name} is not immutable`);
  const owners = cm.metadata.ownerReferences ?? [];
  if (owners.length !== 1 || owners[0]!.uid !== planUID || owners[0]!.controller !== true) {
    return fail('WrongOwner', `chunk ${expected.name} is not owned by its plan`);
  }
  const keys = [...Object.keys(cm.data ?? {}), ...Object.keys(cm.binaryData ?? {})];
  const encoded = cm.binaryData?.[CHUNK_KEY];
  if (keys.length !== 1 || encoded === undefined)
    return fail('Malformed', `chunk ${expected.name} must hold exactly the key ${CHUNK_KEY}`);
  const bytes = Buffer.from(encoded, 'base64');
  if (bytes.toString('base64') !== encoded)
    return fail('Malformed', `chunk ${expected.name} is not canonical base64`);
  if (bytes.length !== expected.size) {
    return fail(
      'SizeMismatch',
      `chunk ${expected.name} has ${bytes.length} bytes; the plan records ${expected.size}`,
    );
  }
  if (sha256Digest(bytes) !== expected.digest)
    return fail('DigestMismatch', `chunk ${expected.name} does not match its digest`);
  return { ok: true, bytes };
}
