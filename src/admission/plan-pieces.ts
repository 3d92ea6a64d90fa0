/**
 * vcontrollerwrite's rebuild of a plan's stored pieces: a PtahSchemaPlanChunk, and the ConfigMap projection
 * of it an Apply mounts. Both are owned by their plan, whose spec records every chunk's index, size and
 * digest; a chunk is rebuilt from the bytes it carries once they match that record, and a projection of a
 * chunk publication committed likewise (so its bytes are those of the chunk, held to the same record). The
 * whole object is then rebuilt with the plan store's own builders, so a label, owner or key added by hand
 * is a difference too.
 */
import type { ConfigMapObject } from '../api/core.ts';
import { sha256Digest } from '../api/digest.ts';
import { API_GROUP } from '../api/meta.ts';
import type { PtahSchemaPlan } from '../api/ptah-schema-plan.ts';
import type { PtahSchemaPlanChunk } from '../api/ptah-schema-plan-chunk.ts';
import { buildPlanChunk, checkChunkBytes } from '../plan-store/plan-chunk.ts';
import { buildPlanProjection, CHUNK_KEY } from '../plan-store/plan-projection.ts';
import type { Reads } from './reads.ts';
import type { Written } from './vcontrollerwrite.ts';

/** What the rebuild reads: from the manager's watches where one holds the object, else the API server. */
export interface PlanPieceReads {
  readPlan(namespace: string, name: string, reads: Reads): Promise<PtahSchemaPlan | undefined>;
}

export type PlanPieceKind = 'PlanChunk' | 'PlanProjection';

export type RebuiltPiece =
  { readonly ok: true; readonly object: unknown } | { readonly ok: false; readonly reason: string };

export async function rebuildPlanPiece(
  kind: PlanPieceKind,
  piece: Written,
  namespace: string,
  sources: PlanPieceReads,
  reads: Reads,
): Promise<RebuiltPiece> {
  const name = piece.metadata?.name ?? '';
  const ref = (piece.metadata?.ownerReferences ?? []).find((o) => o.controller === true);
  if (ref?.kind !== 'PtahSchemaPlan' || !(ref.apiVersion ?? '').startsWith(`${API_GROUP}/`) || !ref.name)
    return { ok: false, reason: 'it names no PtahSchemaPlan as its controller owner' };
  const plan = await sources.readPlan(namespace, ref.name, reads);
  if (plan === undefined || plan.metadata.uid !== ref.uid)
    return { ok: false, reason: `its plan ${ref.name} with UID ${ref.uid ?? ''} does not exist` };
  const recorded = plan.spec.chunks.find((c) => c.name === name);
  if (recorded === undefined)
    return { ok: false, reason: `plan ${plan.metadata.name} records no chunk ${name}` };
  if (kind === 'PlanChunk') {
    const checked = checkChunkBytes(
      recorded,
      `chunk ${name}`,
      (piece as unknown as PtahSchemaPlanChunk).spec?.data,
    );
    if (!checked.ok) return { ok: false, reason: checked.message };
    const { bytes } = checked;
    return { ok: true, object: buildPlanChunk(plan, { ...recorded, bytes, digest: sha256Digest(bytes) }) };
  }
  // A projection copies a chunk publication committed. Its bytes are held to the plan's record of that
  // chunk, as the chunk's own were when it was admitted, so the chunk itself (up to 8 MiB a plan, which no
  // watch holds) is not read: one API request a review was the whole cost of judging a projection.
  if (!plan.status?.publishedChunks?.some((c) => c.name === name))
    return { ok: false, reason: `chunk ${name} is not the one plan ${plan.metadata.name} committed` };
  const checked = checkChunkBytes(
    recorded,
    `projection of chunk ${name}`,
    (piece as unknown as ConfigMapObject).binaryData?.[CHUNK_KEY],
  );
  if (!checked.ok)
    return { ok: false, reason: `its bytes differ from those of chunk ${name}: ${checked.message}` };
  return { ok: true, object: buildPlanProjection(plan, name, checked.bytes) };
}
