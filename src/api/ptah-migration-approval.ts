/**
 * PtahMigrationApproval and PtahMigrationRunAcknowledgment: a person's two decisions about a migration.
 * The approval names one plan by name, UID and fingerprint, as a schema approval does; the acknowledgment
 * names one unresolved run by its operation id and says the person has settled the database by hand. Who
 * decided and when is stamped by mutating admission, replacing whatever a client wrote.
 */
import {
  API_GROUP,
  conditions,
  digest,
  objectRef,
  observedGeneration,
  timestamp,
  uid,
  type ObjectMeta,
} from './meta.ts';
import { approver } from './ptah-schema-approval.ts';
import { object, optional, type Infer } from './schema-dsl.ts';

export const ptahMigrationApprovalSpec = object(
  {
    migrationRef: objectRef('The PtahMigration the decision is about.'),
    planRef: objectRef('The PtahMigrationPlan approved.'),
    planFingerprint: digest('The fingerprint of the plan approved; it binds every input of the plan.'),
    approver: optional(approver),
    approvedAt: optional(timestamp('When admission accepted the approval; stamped by admission.')),
    mutationRequestUID: optional(uid('UID of the admission request that stamped the approval.')),
  },
  {
    validations: [{ rule: 'self == oldSelf', message: 'an approval is immutable; create another one' }],
  },
);
export type PtahMigrationApprovalSpec = Infer<typeof ptahMigrationApprovalSpec>;

const decisionStatus = object({
  observedGeneration,
  conditions: optional(conditions),
});

export const ptahMigrationApprovalStatus = decisionStatus;
export type PtahMigrationApprovalStatus = Infer<typeof ptahMigrationApprovalStatus>;

/** Matching is reported on the PtahMigration (ApprovalRequired); the approval only says it was used. */
export const MIGRATION_APPROVAL_CONDITION_TYPES = ['Consumed'] as const;

export const ptahMigrationRunAcknowledgmentSpec = object(
  {
    migrationRef: objectRef('The PtahMigration whose unresolved run is settled.'),
    operationId: digest('status.unresolvedRun.operationId of that migration, exactly.'),
    acknowledgedBy: optional(approver),
    acknowledgedAt: optional(timestamp('When admission accepted the acknowledgment; stamped by admission.')),
    mutationRequestUID: optional(uid('UID of the admission request that stamped the acknowledgment.')),
  },
  {
    validations: [{ rule: 'self == oldSelf', message: 'an acknowledgment is immutable; create another one' }],
  },
);
export type PtahMigrationRunAcknowledgmentSpec = Infer<typeof ptahMigrationRunAcknowledgmentSpec>;

export const ptahMigrationRunAcknowledgmentStatus = decisionStatus;
export type PtahMigrationRunAcknowledgmentStatus = Infer<typeof ptahMigrationRunAcknowledgmentStatus>;

/** Consumed (RunAcknowledged) or Stale (RunNotUnresolved). */
export const RUN_ACKNOWLEDGMENT_CONDITION_TYPES = ['Consumed', 'Stale'] as const;

export interface PtahMigrationApproval {
  readonly apiVersion: `${typeof API_GROUP}/v1alpha1`;
  readonly kind: 'PtahMigrationApproval';
  readonly metadata: ObjectMeta;
  readonly spec: PtahMigrationApprovalSpec;
  readonly status?: PtahMigrationApprovalStatus;
}

export interface PtahMigrationRunAcknowledgment {
  readonly apiVersion: `${typeof API_GROUP}/v1alpha1`;
  readonly kind: 'PtahMigrationRunAcknowledgment';
  readonly metadata: ObjectMeta;
  readonly spec: PtahMigrationRunAcknowledgmentSpec;
  readonly status?: PtahMigrationRunAcknowledgmentStatus;
}
