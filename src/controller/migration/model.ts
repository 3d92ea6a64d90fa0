/**
 * The reconciler's view of a PtahMigration and of everything its decision reads. `view.ts` maps the stored
 * objects onto these shapes; `decide.ts` reads and writes only them.
 *
 * Nothing here carries a credential, SQL or a row value: the Secret is known by name and key, a migration
 * by its version, checksum and flags, a run by its versions and the codes a database answered.
 */
import type { RealmRef } from '../../api/ptah-realm.ts';
import type { OciSourceView, GitSourceView } from '../snapshot/artifact-steps.ts';
import type {
  LastRun,
  MigrationClaim,
  MigrationJournal,
  MigrationOperationType,
  MigrationPhase,
  MigrationPlanStatus,
  PtahMigrationStatus,
  TransactionMode,
  UnresolvedRun,
} from '../../api/ptah-migration.ts';
import type { ApplyPolicy, Resolution } from '../../api/ptah-schema.ts';

export type {
  ApplyPolicy,
  LastRun,
  MigrationClaim,
  MigrationOperationType,
  MigrationPhase,
  MigrationPlanStatus,
  Resolution,
  TransactionMode,
  UnresolvedRun,
};
export type { Harvest, JobObservation } from '../jobs/harvest.ts';
export type MigrationStatus = PtahMigrationStatus;
export type MigrationJournalEntry = MigrationJournal['entries'][number];

/** The spec with every default applied and every duration in milliseconds. */
export interface MigrationSpecView {
  readonly engine: string;
  /** The realm spec.target names: a coordination key of this namespace or a PtahRealm. */
  readonly realm: RealmRef;
  readonly urlFrom: { readonly name: string; readonly key: string };
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
    readonly lockTimeoutSeconds: number;
    /** `unset` is a value of its own: it is bound into the plan like the other two. */
    readonly transactionMode: TransactionMode;
  };
  readonly intervalMs: number;
  readonly failureRetryIntervalMs: number;
  readonly activeDeadlineSeconds: number;
  readonly suspend: boolean;
}

export interface MigrationView {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly generation: number;
  readonly deleting: boolean;
  readonly hasFinalizer: boolean;
  readonly spec: MigrationSpecView;
  readonly status: MigrationStatus;
  /**
   * The operator.ptah.run/unresolved-run annotation, the copy of status.unresolvedRun a restore that drops
   * status keeps: the run it records, or `invalid` when it is not one.
   */
  readonly unresolvedAnnotation?: UnresolvedRun | 'invalid';
}

export interface MigrationApprovalView {
  readonly name: string;
  readonly uid: string;
  readonly createdAt: string;
  readonly migrationRef: { readonly name: string; readonly uid: string };
  readonly planRef: { readonly name: string; readonly uid: string };
  readonly planFingerprint: string;
  /** Stamped by admission; absent means admission did not run, and the approval is not acceptable. */
  readonly approver?: string;
  readonly approvedAt?: string;
  readonly mutationRequestUID?: string;
  readonly consumed: boolean;
  readonly stale: boolean;
}

export interface AcknowledgmentView {
  readonly name: string;
  readonly uid: string;
  readonly createdAt: string;
  readonly migrationRef: { readonly name: string; readonly uid: string };
  readonly operationId: string;
  /** Stamped by mmigrationrunacknowledgment; whatever a client wrote there was replaced. */
  readonly acknowledgedBy?: { readonly username: string; readonly groups?: readonly string[] };
  readonly acknowledgedAt?: string;
  readonly mutationRequestUID?: string;
  readonly consumed: boolean;
  readonly stale: boolean;
}

/** The stored plan status.plan names, read back whenever a decision rests on it. */
export type MigrationPlanCheck =
  | { readonly ok: true }
  /** The plan object is gone, or another object bears its name. */
  | { readonly ok: false; readonly kind: 'gone'; readonly message: string }
  /** What the plan binds no longer matches what an Apply would run under now. */
  | { readonly ok: false; readonly kind: 'superseded'; readonly fields: readonly string[] };
