/**
 * What building a family's Job reads, for the reconcilers that dispatch it and the controller-write webhook
 * that rebuilds it: the verification policy ConfigMap (Verify) and the plan an Apply claim names.
 */
import type { ConfigMapReader, PtahObjects } from '../runtime/kube.ts';

/**
 * Only the reads a build makes: the reconcilers hand their API server clients, the webhooks readers that
 * answer from the manager's caches first (src/controller/admission-reads.ts).
 */
export interface JobReaders {
  readonly core: ConfigMapReader;
  readonly ptah: Pick<PtahObjects, 'get'>;
}

/** The plan an Apply claim names, by name and UID: a plan gone or replaced under that name builds no Job. */
export async function claimedPlan<P extends { readonly metadata: { readonly uid?: string } }>(
  readers: JobReaders,
  plural: 'ptahschemaplans' | 'ptahmigrationplans',
  namespace: string,
  planRef: { readonly name: string; readonly uid: string },
): Promise<P> {
  const plan = await readers.ptah.get<P>(plural, namespace, planRef.name);
  if (plan === undefined || plan.metadata.uid !== planRef.uid) {
    throw new Error(`plan ${planRef.name} is gone; the apply cannot be built`);
  }
  return plan;
}
