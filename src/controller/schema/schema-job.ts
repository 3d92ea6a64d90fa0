/**
 * The Job a PtahSchema claim runs, built from the resource, the claim and (for an Apply) the plan the claim
 * names. One function, called by the reconciler to dispatch and by the controller-write webhook to rebuild
 * the Job it is asked to admit, so both always build the same object.
 */
import type { V1Job } from '@kubernetes/client-node';
import { canonicalEngine } from '../../api/ptah-schema.ts';
import type { PtahSchemaPlan } from '../../api/ptah-schema-plan.ts';
import { CHUNK_KEY } from '../../plan-store/plan-projection.ts';
import { buildSchemaJob, type ManagerIdentity } from '../jobs/operation-job.ts';
import { claimedPlan, type JobReaders } from '../jobs/job-readers.ts';
import { artifactJobFor, ociJobSource } from '../snapshot/oci-inputs.ts';
import type { SchemaView } from './model.ts';

export async function schemaJob(
  readers: JobReaders,
  view: SchemaView,
  claim: NonNullable<SchemaView['status']['claim']>,
  manager: ManagerIdentity,
  now: Date,
): Promise<V1Job> {
  if (claim.type === 'Resolve' || claim.type === 'Verify') {
    return artifactJobFor(
      readers.core,
      { kind: 'PtahSchema', name: view.name, namespace: view.namespace, uid: view.uid },
      claim,
      view.spec,
      manager,
      now,
    );
  }
  const oci = ociJobSource('PtahSchema', view.spec.oci);
  const git = view.spec.git;
  const plan =
    claim.type === 'Apply'
      ? await claimedPlan<PtahSchemaPlan>(readers, 'ptahschemaplans', view.namespace, claim.planRef!)
      : undefined;
  return buildSchemaJob({
    schema: { name: view.name, namespace: view.namespace, uid: view.uid },
    claim,
    ...(oci !== undefined ? { oci } : {}),
    ...(git !== undefined ? { git } : {}),
    engine: canonicalEngine(view.spec.engine) ?? 'postgres',
    urlFrom: view.spec.urlFrom,
    exclude: view.spec.policy.exclude,
    protectedTables: view.spec.policy.protectedTables,
    activeDeadlineSeconds: view.spec.activeDeadlineSeconds,
    ...(plan !== undefined
      ? {
          plan: {
            fingerprint: plan.spec.fingerprint,
            contentDigest: plan.spec.binding.planContentDigest,
            targetIdentityDigest: plan.spec.binding.targetIdentityDigest,
            chunks: plan.spec.chunks.map((c) => ({ configMapName: c.name, key: CHUNK_KEY, index: c.index })),
          },
        }
      : {}),
    manager,
    now,
  });
}
