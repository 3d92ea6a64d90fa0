/**
 * vcontrollerwrite's judgement of a plan the manager creates, PtahSchemaPlan or PtahMigrationPlan. The plan
 * carries what its run produced (the plan bytes' digest, the observed and desired state, the pending
 * migrations), which nothing live can rebuild; what it takes from the manager's own inputs can be: every
 * such binding must be what the owning resource (its controller owner, UID checked) records now, by the
 * comparison the manager makes before an Apply (src/plan-store/live-binding.ts, handed in by the manager
 * process: src/controller/expected-plan.ts), and its name, labels, owner and resource reference must be
 * those the plan builder gives a plan of that fingerprint (src/plan-store/plan-metadata.ts). A refusal names
 * the differing bindings by field, never their values.
 */
import { API_GROUP } from '../api/meta.ts';
import type { PlanMetadata, PlanOwner } from '../plan-store/plan-metadata.ts';
import { objectDifferences } from './object-differences.ts';
import type { Reads } from './reads.ts';
import type { OwnerKind, OwningResource, Written } from './vcontrollerwrite.ts';

export type PlanKind = 'SchemaPlan' | 'MigrationPlan';

/** What the owning resource says of a plan being created, or why it says nothing. */
export type PlanAgainstOwner =
  | {
      readonly ok: true;
      /** The owner as read now: the builder's owner reference is made from it. */
      readonly owner: PlanOwner;
      /** The metadata the builder gives a plan of this fingerprint. */
      readonly metadata: PlanMetadata;
      /** The bindings that are inputs of the manager and differ from what the owner records now. */
      readonly differing: readonly string[];
    }
  | { readonly ok: false; readonly reason: string };

export interface PlanObjectReads {
  planAgainstOwner(
    kind: PlanKind,
    owner: OwningResource,
    plan: Written,
    reads: Reads,
  ): Promise<PlanAgainstOwner>;
}

const FAMILY: Readonly<Record<PlanKind, { readonly owner: OwnerKind; readonly ref: string }>> = {
  SchemaPlan: { owner: 'PtahSchema', ref: 'schemaRef' },
  MigrationPlan: { owner: 'PtahMigration', ref: 'migrationRef' },
};

export type PlanJudgement = { readonly ok: true } | { readonly ok: false; readonly reason: string };

/** Why a plan created by the manager is not the one its owner and builder make now; ok when it is. */
export async function judgePlan(
  kind: PlanKind,
  plan: Written,
  namespace: string,
  sources: PlanObjectReads,
  reads: Reads,
): Promise<PlanJudgement> {
  const family = FAMILY[kind];
  const ref = (plan.metadata?.ownerReferences ?? []).find((o) => o.controller === true);
  if (
    ref?.kind !== family.owner ||
    !(ref.apiVersion ?? '').startsWith(`${API_GROUP}/`) ||
    !ref.name ||
    !ref.uid
  )
    return { ok: false, reason: `it names no ${family.owner} as its controller owner` };
  const owner: OwningResource = { kind: family.owner, namespace, name: ref.name, uid: ref.uid };
  const against = await sources.planAgainstOwner(kind, owner, plan, reads);
  if (!against.ok) return against;
  const spec = (plan['spec'] ?? {}) as Readonly<Record<string, unknown>>;
  const made = objectDifferences(
    {
      metadata: against.metadata,
      spec: { [family.ref]: { name: against.owner.metadata.name, uid: against.owner.metadata.uid } },
    },
    { metadata: plan.metadata, spec: { [family.ref]: spec[family.ref] } },
  );
  if (made.length > 0) {
    return {
      ok: false,
      reason: `it is not the object the plan builder makes for ${family.owner} ${owner.name}: ${made.join('; ')}`,
    };
  }
  if (against.differing.length > 0) {
    return {
      ok: false,
      reason: `its bindings differ from what ${family.owner} ${owner.name} records now: ${against.differing.join(', ')}`,
    };
  }
  return { ok: true };
}
