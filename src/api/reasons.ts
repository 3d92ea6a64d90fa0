/**
 * Condition and Event reasons, stable once published: consumers match (type, status, reason), so a reason
 * is never repurposed or renamed. Named here once so a typo is a compile error.
 */
export const REASONS = {
  // ArtifactResolved
  SnapshotTaken: 'SnapshotTaken',
  CommitResolved: 'CommitResolved',
  ResolveFailed: 'ResolveFailed',
  SourceNotFound: 'SourceNotFound',
  SourceKeyNotFound: 'SourceKeyNotFound',
  SourceTooLarge: 'SourceTooLarge',
  DigestPinned: 'DigestPinned',
  RefreshFailed: 'RefreshFailed',
  // ArtifactVerified
  PolicySatisfied: 'PolicySatisfied',
  PolicyRefused: 'PolicyRefused',
  PolicyNotFound: 'PolicyNotFound',
  PolicyMutable: 'PolicyMutable',
  PolicyInvalid: 'PolicyInvalid',
  VerifyFailed: 'VerifyFailed',
  ArtifactFetchFailed: 'ArtifactFetchFailed',
  // PlanReady and InSync while the source cannot be read
  SourceFreshnessUnknown: 'SourceFreshnessUnknown',
  // EngineSupported
  SupportedEngine: 'SupportedEngine',
  UnsupportedEngine: 'UnsupportedEngine',
  // Lifecycle
  Pending: 'Pending',
  Observed: 'Observed',
  OperationInProgress: 'OperationInProgress',
  OperationFailed: 'OperationFailed',
  NoChanges: 'NoChanges',
  PlanReady: 'PlanReady',
  Published: 'Published',
  AwaitingApproval: 'AwaitingApproval',
  ApprovedPlan: 'ApprovedPlan',
  ApprovalWebhooksMissing: 'ApprovalWebhooksMissing',
  ApplyPending: 'ApplyPending',
  ApplyOutcomeUnknown: 'ApplyOutcomeUnknown',
  VerifyingConvergence: 'VerifyingConvergence',
  InSync: 'InSync',
  ScopedConverged: 'ScopedConverged',
  DriftRemains: 'DriftRemains',
  Superseded: 'Superseded',
  Succeeded: 'Succeeded',
  Unknown: 'Unknown',
  NotRequired: 'NotRequired',
  // Blocked
  ProtectedTable: 'ProtectedTable',
  DestructiveChangesDisabled: 'DestructiveChangesDisabled',
  ApplyDisabled: 'ApplyDisabled',
  RealmConflict: 'RealmConflict',
  RealmNotAuthorized: 'RealmNotAuthorized',
  // Plans and approvals
  StalePlan: 'StalePlan',
  PlanNoLongerCurrent: 'PlanNoLongerCurrent',
  DesiredStateChanged: 'DesiredStateChanged',
  InputsChanged: 'InputsChanged',
  PolicyChanged: 'PolicyChanged',
  ExecutionBindingChanged: 'ExecutionBindingChanged',
  SupersededApproval: 'SupersededApproval',
  DispatchCommitted: 'DispatchCommitted',
  // Suspension and read requests
  Suspended: 'Suspended',
  Active: 'Active',
  ReadRequested: 'ReadRequested',
  ReadRequestInvalid: 'ReadRequestInvalid',
} as const;
export type Reason = (typeof REASONS)[keyof typeof REASONS];
