/**
 * Sets conditions on a person's decision object (an approval, an acknowledgment) through its status
 * subresource: Accepted, Consumed when an operation used it, Stale when it no longer names anything current.
 */
import { setConditions, type Condition, type ConditionUpdate } from '../../api/conditions.ts';
import type { Plural, PtahObjects } from '../runtime/kube.ts';

interface DecisionObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: {
    readonly name: string;
    readonly resourceVersion?: string;
    readonly generation?: number;
  };
  readonly status?: { readonly conditions?: readonly Condition[] };
}

export async function markDecision(
  ptah: PtahObjects,
  plural: Plural,
  namespace: string,
  name: string,
  updates: readonly ConditionUpdate[],
  now: Date,
): Promise<void> {
  const a = await ptah.get<DecisionObject>(plural, namespace, name);
  if (a === undefined) return;
  const generation = a.metadata.generation ?? 0;
  const conditions = [
    ...setConditions(
      a.status?.conditions,
      updates.map((u) => ({ ...u, observedGeneration: generation })),
      now,
    ),
  ];
  await ptah.replaceStatus(plural, namespace, name, {
    apiVersion: a.apiVersion,
    kind: a.kind,
    metadata: { name, namespace, resourceVersion: a.metadata.resourceVersion },
    status: { ...(a.status ?? {}), observedGeneration: generation, conditions },
  });
}
