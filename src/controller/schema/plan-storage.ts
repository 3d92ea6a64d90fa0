/**
 * The manager's reads of a plan's stored bytes (publication writes them: decision/durable-writes.ts), and
 * the projection of the verified chunks into the ConfigMaps an Apply mounts, in the pass that dispatches
 * it. The checks themselves are the plan store's, shared with `kubectl ptah`.
 */
import type { CoreV1Api, V1ConfigMap } from '@kubernetes/client-node';
import type { ConfigMapObject } from '../../api/core.ts';
import type { PtahSchemaPlan } from '../../api/ptah-schema-plan.ts';
import type { PtahSchemaPlanChunk } from '../../api/ptah-schema-plan-chunk.ts';
import { projectPlan, ProjectionError } from '../../plan-store/plan-projection.ts';
import { reassemblePlan, type Reassembly } from '../../plan-store/reassemble-plan.ts';
import { isConflict, type PtahObjects, readConfigMap } from '../runtime/kube.ts';

/** Reads every chunk the plan names and rebuilds the plan from them with every check. */
export async function readPlanBytes(ptah: PtahObjects, plan: PtahSchemaPlan): Promise<Reassembly> {
  const namespace = plan.metadata.namespace ?? '';
  const chunks = new Map<string, PtahSchemaPlanChunk>();
  for (const c of plan.spec.chunks) {
    const chunk = await ptah.get<PtahSchemaPlanChunk>('ptahschemaplanchunks', namespace, c.name);
    if (chunk !== undefined) chunks.set(c.name, chunk);
  }
  return reassemblePlan(plan, (name) => chunks.get(name));
}

/**
 * Projects the plan an Apply is about to run into the ConfigMaps its Job mounts, from chunks verified in
 * this very call. A chunk that fails its checks, or a projection that exists with anything else, throws:
 * the Job is not created.
 */
export async function projectForApply(
  deps: { readonly ptah: PtahObjects; readonly core: CoreV1Api },
  plan: PtahSchemaPlan,
  guard: () => void,
): Promise<void> {
  const namespace = plan.metadata.namespace ?? '';
  const read = await readPlanBytes(deps.ptah, plan);
  if (!read.ok) throw new ProjectionError(`plan ${plan.metadata.name} cannot be projected: ${read.message}`);
  await projectPlan(
    {
      async create(cm) {
        guard();
        try {
          await deps.core.createNamespacedConfigMap({ namespace, body: cm as V1ConfigMap });
          return true;
        } catch (error) {
          if (!isConflict(error)) throw error;
          return false;
        }
      },
      get: async (name) => (await readConfigMap(deps.core, namespace, name)) as ConfigMapObject | undefined,
    },
    plan,
    read.chunks,
  );
}
