/**
 * The three kinds a person creates to decide something, and how admission treats each: which resource it
 * is, which mutating webhook stamps who decided, which validating webhook checks what it names, and the
 * words its messages use. One table, so the stamping, the checks, the registrations and the manager's
 * "are the webhooks registered" guard cannot disagree about a kind.
 */
export const DECISION_KINDS = [
  'PtahSchemaApproval',
  'PtahMigrationApproval',
  'PtahMigrationRunAcknowledgment',
] as const;
export type DecisionKind = (typeof DECISION_KINDS)[number];

/** Every webhook the manager serves; the path is `/<name>`. */
export const WEBHOOK_NAMES = [
  'mapproval',
  'vapproval',
  'mmigrationapproval',
  'vmigrationapproval',
  'mmigrationrunacknowledgment',
  'vmigrationrunacknowledgment',
] as const;
export type WebhookName = (typeof WEBHOOK_NAMES)[number];

export type AdmissionVerb = 'CREATE' | 'UPDATE';

export interface Decision {
  readonly kind: DecisionKind;
  readonly resource: string;
  readonly mutating: WebhookName;
  readonly validating: WebhookName;
  /**
   * What the validating webhook is sent. A schema approval's spec is held immutable by its CRD alone; the
   * migration kinds are also refused an edit of a bound field by their webhook, so an UPDATE reaches it.
   */
  readonly validatingOperations: readonly AdmissionVerb[];
  /** The spec field the identity is stamped into, and the one the time is. */
  readonly identityField: 'approver' | 'acknowledgedBy';
  readonly timeField: 'approvedAt' | 'acknowledgedAt';
  /** "approval", "acknowledgment": how messages name one. */
  readonly noun: string;
  /** How messages name all of them. */
  readonly plural: string;
  /** Who the stamped identity is, in a message: "approver", "acknowledger". */
  readonly person: string;
}

export const DECISIONS: Readonly<Record<DecisionKind, Decision>> = {
  PtahSchemaApproval: {
    kind: 'PtahSchemaApproval',
    resource: 'ptahschemaapprovals',
    mutating: 'mapproval',
    validating: 'vapproval',
    validatingOperations: ['CREATE'],
    identityField: 'approver',
    timeField: 'approvedAt',
    noun: 'approval',
    plural: 'approvals',
    person: 'approver',
  },
  PtahMigrationApproval: {
    kind: 'PtahMigrationApproval',
    resource: 'ptahmigrationapprovals',
    mutating: 'mmigrationapproval',
    validating: 'vmigrationapproval',
    validatingOperations: ['CREATE', 'UPDATE'],
    identityField: 'approver',
    timeField: 'approvedAt',
    noun: 'approval',
    plural: 'migration approvals',
    person: 'approver',
  },
  PtahMigrationRunAcknowledgment: {
    kind: 'PtahMigrationRunAcknowledgment',
    resource: 'ptahmigrationrunacknowledgments',
    mutating: 'mmigrationrunacknowledgment',
    validating: 'vmigrationrunacknowledgment',
    validatingOperations: ['CREATE', 'UPDATE'],
    identityField: 'acknowledgedBy',
    timeField: 'acknowledgedAt',
    noun: 'acknowledgment',
    plural: 'run acknowledgments',
    person: 'acknowledger',
  },
};
