/**
 * The bindings a plan of either family takes from the manager's own inputs, as the owning resource records
 * them now: its UID, source resolution, realm (coordination), policy, the database last read, the execution
 * binding. The reconcilers compare a stored plan with these before an Apply may run, and vcontrollerwrite
 * compares a plan being created with them (src/controller/expected-plan.ts): one function per family, so
 * the two judge a plan alike.
 */
import { canonicalDigest } from '../api/digest.ts';
import { policyFingerprint, realmDigestOf } from '../api/fingerprint.ts';
import { MIGRATION_PLAN_CONTRACT_VERSION } from '../api/ptah-migration-plan.ts';
import { canonicalEngine, type ExecutionBinding } from '../api/ptah-schema.ts';
import { PLAN_CONTRACT_VERSION } from '../api/ptah-schema-plan.ts';
import type { LiveBinding, MigrationLiveBinding } from '../plan-store/live-binding.ts';
import type { RealmRef } from '../api/ptah-realm.ts';
import { executionPlanBinding, type BoundReleases } from './execution-binding.ts';
import type { MigrationView } from './migration/model.ts';
import type { SchemaView } from './schema/model.ts';
import { liveSourceBinding } from './snapshot/source-binding.ts';

type Live<T> = { readonly [K in keyof T]: T[K] | undefined };

/**
 * The digest of the realm a resource coordinates in: its engine's realm, or (an engine this release does
 * not run) a digest of the engine and namespace that no realm shares.
 */
export function coordinationOf(view: {
  readonly namespace: string;
  readonly spec: { readonly engine: string; readonly realm: RealmRef };
}): string {
  const engine = canonicalEngine(view.spec.engine);
  return engine
    ? realmDigestOf(engine, view.namespace, view.spec.realm)
    : canonicalDigest({ unsupportedEngine: view.spec.engine, namespace: view.namespace });
}

/** What a plan binds of an execution binding; every member undefined when there is none. */
function executionFields(
  binding: ExecutionBinding | undefined,
): Live<BoundReleases & { readonly executionEpoch: string }> {
  if (binding !== undefined) return executionPlanBinding(binding);
  return {
    executionEpoch: undefined,
    managerImage: undefined,
    managerRevision: undefined,
    controllerStateVersion: undefined,
    ptahVersion: undefined,
    runnerImage: undefined,
    runnerProtocolVersion: undefined,
  };
}

/** A schema plan's live bindings (compared by `liveBindingDifferences`). */
export function schemaLiveBinding(
  view: SchemaView,
  coordination: string,
  binding: ExecutionBinding | undefined,
): Live<LiveBinding> {
  return {
    contractVersion: PLAN_CONTRACT_VERSION,
    schemaUID: view.uid,
    ...liveSourceBinding(view.status.resolution),
    coordinationDigest: coordination,
    targetIdentityDigest: view.status.target?.identityDigest,
    policyFingerprint: policyFingerprint({
      apply: view.spec.policy.apply,
      allowDestructive: view.spec.policy.allowDestructive,
      protectedTables: [...view.spec.policy.protectedTables],
      exclude: [...view.spec.policy.exclude],
    }),
    ...executionFields(binding),
    dialect: canonicalEngine(view.spec.engine),
  };
}

/** A migration plan's live bindings (compared by `migrationLiveBindingDifferences`). */
export function migrationLiveBinding(
  view: MigrationView,
  coordination: string,
  binding: ExecutionBinding | undefined,
): Live<MigrationLiveBinding> {
  return {
    contractVersion: MIGRATION_PLAN_CONTRACT_VERSION,
    migrationUID: view.uid,
    ...liveSourceBinding(view.status.resolution),
    coordinationDigest: coordination,
    targetIdentityDigest: view.status.target?.identityDigest,
    historyFingerprint: view.status.history?.fingerprint,
    transactionMode: view.spec.policy.transactionMode,
    ...executionFields(binding),
    dialect: canonicalEngine(view.spec.engine),
  };
}
