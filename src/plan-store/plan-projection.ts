/**
 * Plan projections: right before an Apply Job is created, the manager copies each verified chunk into an
 * immutable ConfigMap of the same name, owned by the plan, because a Pod cannot mount a custom resource. The
 * Apply mounts these; they go with their plan by garbage collection. A projection that already exists is
 * used only when it holds exactly its chunk's bytes in exactly this shape.
 */
import type { ConfigMapObject } from '../api/core.ts';
import { controllerOwnerReference } from '../api/meta.ts';
import type { PtahSchemaPlan } from '../api/ptah-schema-plan.ts';
import { ownedByPlanOnly, planPieceLabels, type ChunkOwnerPlan } from './plan-chunk.ts';

/** The one binaryData key of a projection, and the file name the Apply's projected volume reads. */
export const CHUNK_KEY = 'chunk';
export const PROJECTION_COMPONENT = 'plan-projection';

export function buildPlanProjection(plan: ChunkOwnerPlan, name: string, bytes: Uint8Array): ConfigMapObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name,
      ...(plan.metadata.namespace === undefined ? {} : { namespace: plan.metadata.namespace }),
      labels: planPieceLabels(plan, PROJECTION_COMPONENT),
      ownerReferences: [controllerOwnerReference(plan)],
    },
    immutable: true,
    binaryData: { [CHUNK_KEY]: Buffer.from(bytes).toString('base64') },
  };
}

/**
 * Why an existing projection may not be used, or undefined when it is exactly the one this plan's chunk
 * projects to: immutable, owned by the plan alone, labelled for it, one binaryData key holding the bytes.
 */
export function projectionDifference(
  plan: ChunkOwnerPlan,
  cm: ConfigMapObject,
  bytes: Uint8Array,
): string | undefined {
  const name = cm.metadata.name;
  if (cm.immutable !== true) return `projection ${name} is not immutable`;
  if (!ownedByPlanOnly(cm.metadata, plan.metadata.uid ?? ''))
    return `projection ${name} is not owned by its plan`;
  const want = planPieceLabels(plan, PROJECTION_COMPONENT);
  const labels = cm.metadata.labels ?? {};
  const wrongLabel = Object.keys(want).find((k) => labels[k] !== want[k]);
  if (wrongLabel !== undefined)
    return `projection ${name} has label ${wrongLabel}=${labels[wrongLabel] ?? ''}`;
  const keys = [...Object.keys(cm.data ?? {}), ...Object.keys(cm.binaryData ?? {})];
  const encoded = cm.binaryData?.[CHUNK_KEY];
  if (keys.length !== 1 || encoded === undefined)
    return `projection ${name} must hold exactly the key ${CHUNK_KEY}`;
  if (encoded !== Buffer.from(bytes).toString('base64'))
    return `projection ${name} differs from its chunk's bytes`;
  return undefined;
}

/** Where projections are written: the manager's client, or a test's store. */
export interface ProjectionStore {
  /** Creates the ConfigMap; false when one of the name already exists (it is then read and judged). */
  create(cm: ConfigMapObject): Promise<boolean>;
  get(name: string): Promise<ConfigMapObject | undefined>;
}

export class ProjectionError extends Error {
  override readonly name = 'ProjectionError';
}

/**
 * Projects a plan's verified chunk bytes (in the order of `spec.chunks`) into ConfigMaps. Throws a
 * ProjectionError naming the first projection that exists with anything else; nothing is then dispatched.
 */
export async function projectPlan(
  store: ProjectionStore,
  plan: PtahSchemaPlan,
  chunkBytes: readonly Uint8Array[],
): Promise<void> {
  for (const [i, chunk] of plan.spec.chunks.entries()) {
    const bytes = chunkBytes[i];
    if (bytes === undefined)
      throw new ProjectionError(`chunk ${chunk.name} has no verified bytes to project`);
    if (await store.create(buildPlanProjection(plan, chunk.name, bytes))) continue;
    const existing = await store.get(chunk.name);
    if (existing === undefined)
      throw new ProjectionError(`projection ${chunk.name} vanished after a conflict`);
    const difference = projectionDifference(plan, existing, bytes);
    if (difference !== undefined) throw new ProjectionError(difference);
  }
}
