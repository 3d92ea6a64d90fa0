/**
 * The metadata the manager gives the plans it publishes: the name the fingerprint gives, the owning
 * resource's namespace, the labels that mark it as the manager's, and that resource as its only (and
 * controller) owner. The builders (build-plan.ts, the migration reconciler's) and vcontrollerwrite's check
 * of a created plan use these same functions, so a label the builder adds is expected by admission too.
 */
import { controllerOwnerReference, LABELS, MANAGED_BY, type OwnerReference } from '../api/meta.ts';

/** The resource a plan belongs to, as its owner reference names it. */
export interface PlanOwner {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace?: string; readonly uid?: string };
}

export interface PlanMetadata {
  readonly name: string;
  readonly namespace?: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly ownerReferences: OwnerReference[];
}

/** The component label of a migration plan (a schema plan carries none: its chunks name it). */
export const MIGRATION_PLAN_COMPONENT = 'migration-plan';

function metadataOf(owner: PlanOwner, name: string, labels: Record<string, string>): PlanMetadata {
  return {
    name,
    ...(owner.metadata.namespace === undefined ? {} : { namespace: owner.metadata.namespace }),
    labels: { [LABELS.managedBy]: MANAGED_BY, ...labels },
    ownerReferences: [controllerOwnerReference(owner)],
  };
}

export function schemaPlanMetadata(schema: PlanOwner, name: string): PlanMetadata {
  return metadataOf(schema, name, { [LABELS.schema]: schema.metadata.name });
}

export function migrationPlanMetadata(migration: PlanOwner, name: string): PlanMetadata {
  return metadataOf(migration, name, {
    [LABELS.component]: MIGRATION_PLAN_COMPONENT,
    [LABELS.migration]: migration.metadata.name,
  });
}
