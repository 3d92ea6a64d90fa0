/**
 * The reconciler's view of a PtahSchema and of everything it decides from. These are the shapes the pure
 * decision (`decide.ts`) reads and writes; `view.ts` maps the stored objects onto them, so the decision does
 * not depend on how the API layer spells an optional field.
 *
 * Nothing here carries a credential, SQL or a row value: the Secret is known by name and key only, the drift
 * report by its digest and counts, the plan by its name, UID and digests.
 */

import type { RealmRef } from '../../api/ptah-realm.ts';
import type { OciSourceView, GitSourceView } from '../snapshot/artifact-steps.ts';
import type {
  ApplyPolicy,
  Claim,
  DriftSummary,
  OperationType,
  PlanStatus,
  PtahSchemaStatus,
  Resolution,
  SchemaPhase,
} from '../../api/ptah-schema.ts';

export type { ApplyPolicy, Claim, DriftSummary, OperationType, PlanStatus, Resolution };
export type Phase = SchemaPhase;
export type SchemaStatus = PtahSchemaStatus;
export type ConditionStatus = 'True' | 'False' | 'Unknown';

export interface Condition {
  readonly type: string;
  readonly status: ConditionStatus;
  readonly reason: string;
  readonly message: string;
  readonly observedGeneration?: number;
  readonly lastTransitionTime: string;
}

export interface SecretKeyRef {
  readonly name: string;
  readonly key: string;
}

/** The spec with every default applied and every duration in milliseconds. */
export interface SchemaSpecView {
  readonly engine: string;
  /** The realm spec.target names: a coordination key of this namespace or a PtahRealm. */
  readonly realm: RealmRef;
  readonly urlFrom: SecretKeyRef;
  /** The source ConfigMap and the keys it selects, each mapped to the file path it becomes. */
  readonly configMap: { readonly name: string; readonly files: readonly { key: string; path: string }[] };
  /** spec.desired.oci, when the source is an OCI artifact (then `configMap` names nothing). */
  readonly oci?: OciSourceView;
  /** spec.desired.git, when the source is a Git repository (then `configMap` names nothing). */
  readonly git?: GitSourceView;
  /** spec.verificationPolicyFrom.name: required with an OCI source. */
  readonly verificationPolicyName?: string;
  /** spec.sourcePolicyFrom.name: optional with a ConfigMap or Git source. */
  readonly sourcePolicyName?: string;
  readonly policy: {
    readonly apply: ApplyPolicy;
    readonly allowDestructive: boolean;
    readonly protectedTables: readonly string[];
    readonly exclude: readonly string[];
  };
  readonly intervalMs: number;
  readonly failureRetryIntervalMs: number;
  readonly activeDeadlineSeconds: number;
  readonly suspend: boolean;
}

export interface SchemaView {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly generation: number;
  readonly deleting: boolean;
  /** The deletion guard (finalizer) is on the resource. */
  readonly hasFinalizer: boolean;
  readonly spec: SchemaSpecView;
  readonly status: SchemaStatus;
}

export type { Harvest, JobObservation } from '../jobs/harvest.ts';

export interface ApprovalView {
  readonly name: string;
  readonly uid: string;
  readonly createdAt: string;
  readonly schemaRef: { readonly name: string; readonly uid: string };
  readonly planRef: { readonly name: string; readonly uid: string };
  readonly planFingerprint: string;
  /** Stamped by admission; absent means admission did not run, and the approval is not acceptable. */
  readonly approver?: string;
  readonly approvedAt?: string;
  /** The admission request that stamped it; absent, like the approver, means it was never stamped. */
  readonly mutationRequestUID?: string;
  readonly consumed: boolean;
  readonly stale: boolean;
}

/** A plan the I/O layer published (or found already published, verified) for the claimed Plan's bytes. */
export interface PublishedPlan {
  readonly plan: PlanStatus;
}

/**
 * The stored plan status.plan names, read back whenever a decision rests on it: its object and every
 * binding recomputed from live inputs, and every chunk when an Apply is possible (decision/plan-read.ts).
 * Each failure retires the plan in its own way.
 */
export type PlanCheck =
  | { readonly ok: true }
  /** The plan object is gone, or another object bears its name: re-plan. */
  | { readonly ok: false; readonly kind: 'gone'; readonly message: string }
  /** A chunk, or the whole, no longer gives what was published: retired for good. */
  | {
      readonly ok: false;
      readonly kind: 'tampered';
      /** The chunk that failed, or the plan itself. */
      readonly failing: string;
      readonly reason: string;
      readonly message: string;
    }
  /** What the plan binds no longer matches what an Apply would run under now. */
  | { readonly ok: false; readonly kind: 'superseded'; readonly fields: readonly string[] };
