/**
 * The seed's "the controller recomputes the fingerprint from live inputs before an Apply may run": every
 * binding of a plan that is an input of the manager (its releases, the resource's UID, source, policy, realm,
 * the database last read) is rebuilt from what is live now and compared field by field with what the plan
 * binds. The bindings the plan run itself produced (observed and desired state, content digest, counts) are
 * checked by the Apply's own reconstruction and from_fingerprint instead.
 */
import { schemaPlanFingerprint } from '../api/fingerprint.ts';
import { BOUND_RELEASE_FIELDS } from '../api/ptah-schema.ts';
import type { PlanBinding, PtahSchemaPlan } from '../api/ptah-schema-plan.ts';
import type { MigrationPlanBinding, PtahMigrationPlan } from '../api/ptah-migration-plan.ts';

export type LiveBinding = Pick<
  PlanBinding,
  | 'contractVersion'
  | 'schemaUID'
  | 'sourceType'
  | 'configMapUID'
  | 'verificationPolicyUID'
  | 'verificationPolicyDigest'
  | 'sourcePolicyUID'
  | 'sourcePolicyDigest'
  | 'sourceDigest'
  | 'contentDigest'
  | 'coordinationDigest'
  | 'targetIdentityDigest'
  | 'policyFingerprint'
  | 'executionEpoch'
  | 'managerImage'
  | 'managerRevision'
  | 'controllerStateVersion'
  | 'ptahVersion'
  | 'runnerImage'
  | 'runnerProtocolVersion'
  | 'dialect'
>;

/** Every live field, compile-checked: a binding added to LiveBinding must be compared here too. */
const LIVE_FIELDS: Readonly<Record<keyof LiveBinding, true>> = {
  contractVersion: true,
  schemaUID: true,
  sourceType: true,
  configMapUID: true,
  verificationPolicyUID: true,
  verificationPolicyDigest: true,
  sourcePolicyUID: true,
  sourcePolicyDigest: true,
  sourceDigest: true,
  contentDigest: true,
  coordinationDigest: true,
  targetIdentityDigest: true,
  policyFingerprint: true,
  executionEpoch: true,
  ...BOUND_RELEASE_FIELDS,
  dialect: true,
};

/**
 * Bindings only some sources have (a ConfigMap's UID, an OCI source's policy, a Git source's repository and
 * path, a source policy): absent on both sides they agree. Which of them a source type must bind, the
 * fingerprint itself refuses to leave out.
 */
const BY_SOURCE_TYPE: ReadonlySet<keyof LiveBinding> = new Set([
  'configMapUID',
  'verificationPolicyUID',
  'verificationPolicyDigest',
  'sourcePolicyUID',
  'sourcePolicyDigest',
  'sourceDigest',
]);

/**
 * The names of the bindings that differ between the stored plan and the live inputs (a field the live side
 * does not know, such as a target never read, differs), plus `fingerprint` when the stored binding no longer
 * hashes to the plan's own fingerprint. Empty: the plan still describes what an Apply would run under.
 */
export function liveBindingDifferences(
  plan: Pick<PtahSchemaPlan, 'spec'>,
  live: { readonly [K in keyof LiveBinding]: LiveBinding[K] | undefined },
): string[] {
  const binding = plan.spec.binding;
  const differing: string[] = (Object.keys(LIVE_FIELDS) as (keyof LiveBinding)[]).filter(
    (field) => binding[field] !== live[field] || (live[field] === undefined && !BY_SOURCE_TYPE.has(field)),
  );
  let recomputed: string | undefined;
  try {
    recomputed = schemaPlanFingerprint(binding);
  } catch {
    recomputed = undefined;
  }
  if (recomputed !== plan.spec.fingerprint) differing.push('fingerprint');
  return differing.sort();
}

/**
 * A migration plan's bindings taken from live inputs: all but the version the history read found current
 * (which only the History run that produced the plan knows).
 */
export type MigrationLiveBinding = Omit<MigrationPlanBinding, 'currentVersion'>;

/**
 * The names of the bindings that differ between a stored migration plan and the live inputs. A
 * binding absent on both sides agrees (the source fields only some source types have).
 */
export function migrationLiveBindingDifferences(
  plan: Pick<PtahMigrationPlan, 'spec'>,
  live: { readonly [K in keyof MigrationLiveBinding]: MigrationLiveBinding[K] | undefined },
): string[] {
  const binding: Readonly<Record<string, unknown>> = plan.spec.binding;
  return (Object.keys(live) as (keyof MigrationLiveBinding)[]).filter((k) => binding[k] !== live[k]);
}
