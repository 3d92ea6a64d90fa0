/**
 * What the metrics say about one resource, read from its status only: its phase, its drift by severity,
 * how long it has waited for an approval, and whether its last run ended with an unknown outcome. Pure, so
 * the closed label values are tested without a cluster. Nothing here reads a name: a metric is about
 * how many resources are in a state, never which.
 */
import { MIGRATION_PHASES, type MigrationPhase, type PtahMigrationStatus } from '../../api/ptah-migration.ts';
import {
  DRIFT_SEVERITIES,
  SCHEMA_PHASES,
  type DriftSeverity,
  type PtahSchemaStatus,
  type SchemaPhase,
} from '../../api/ptah-schema.ts';

/** The kinds the manager reconciles; a label value outside this set is never emitted. */
export const METRIC_KINDS = ['PtahSchema', 'PtahMigration'] as const;
export type MetricKind = (typeof METRIC_KINDS)[number];

/** Every phase each kind can report, so a gauge shows 0 for a phase no resource is in. */
export const PHASES_OF: Readonly<Record<MetricKind, readonly string[]>> = {
  PtahSchema: SCHEMA_PHASES,
  PtahMigration: MIGRATION_PHASES,
};

/** A phase label: the resource's phase, or `Unknown` before the manager wrote one. */
export type PhaseLabel = SchemaPhase | MigrationPhase | 'Unknown';

export interface ResourceState {
  readonly phase: PhaseLabel;
  /** The Ready condition's reason when the resource is Blocked or Failed; a bounded CamelCase word. */
  readonly reason?: string;
  /** Drift findings per severity; severities with none are absent. */
  readonly drift: Partial<Record<DriftSeverity, number>>;
  /** Seconds since approval became required, while the resource awaits one. */
  readonly approvalWaitingSeconds?: number;
  /** The last Apply ended with an unknown outcome and no verification has settled it since. */
  readonly unresolvedRun: boolean;
}

const PHASES: ReadonlySet<string> = new Set(SCHEMA_PHASES);
const MIGRATION_PHASE_SET: ReadonlySet<string> = new Set(MIGRATION_PHASES);
const SEVERITIES: ReadonlySet<string> = new Set(DRIFT_SEVERITIES);
/** Condition reasons are constants of the code; anything else (or too long) becomes `Other`. */
const REASON = /^[A-Z][A-Za-z0-9]{0,63}$/;

export function reasonLabel(reason: string | undefined): string {
  return reason !== undefined && REASON.test(reason) ? reason : 'Other';
}

/** What the two families share: the phase, the reason a stop gives, and how long an approval has waited. */
function commonState(
  status: { readonly phase?: string; readonly conditions?: PtahSchemaStatus['conditions'] } | undefined,
  phases: ReadonlySet<string>,
  now: Date,
): Pick<ResourceState, 'phase' | 'reason' | 'approvalWaitingSeconds'> {
  const phase = (
    status?.phase !== undefined && phases.has(status.phase) ? status.phase : 'Unknown'
  ) as PhaseLabel;
  const conditions = status?.conditions ?? [];
  const ready = conditions.find((c) => c.type === 'Ready');
  const approval = conditions.find((c) => c.type === 'ApprovalRequired' && c.status === 'True');
  const waiting =
    phase === 'AwaitingApproval' && approval !== undefined
      ? Math.max(0, (now.getTime() - Date.parse(approval.lastTransitionTime)) / 1000)
      : undefined;
  return {
    phase,
    ...(phase === 'Blocked' || phase === 'Failed' ? { reason: reasonLabel(ready?.reason) } : {}),
    ...(waiting !== undefined && Number.isFinite(waiting) ? { approvalWaitingSeconds: waiting } : {}),
  };
}

export function resourceState(status: PtahSchemaStatus | undefined, now: Date): ResourceState {
  const drift: Partial<Record<DriftSeverity, number>> = {};
  for (const c of status?.drift?.categories ?? []) {
    if (!SEVERITIES.has(c.severity) || c.count <= 0) continue;
    drift[c.severity] = (drift[c.severity] ?? 0) + c.count;
  }
  // A report without categories still says how much and how bad.
  if (status?.drift !== undefined && status.drift.total > 0 && Object.keys(drift).length === 0) {
    drift[status.drift.highestSeverity] = status.drift.total;
  }
  return { ...commonState(status, PHASES, now), drift, unresolvedRun: unresolvedRun(status) };
}

/**
 * A PtahMigration has no drift; its unresolved run is the latch in status itself, which only a history read
 * or an acknowledgment clears.
 */
export function migrationResourceState(status: PtahMigrationStatus | undefined, now: Date): ResourceState {
  return {
    ...commonState(status, MIGRATION_PHASE_SET, now),
    drift: {},
    unresolvedRun: status?.unresolvedRun !== undefined,
  };
}

/**
 * The journal is newest last. An Apply (or a migration run) whose outcome is unknown stays unresolved until
 * a later entry settles it: a verification of the database (a fresh no-change plan), a person's
 * acknowledgement, or another run that ends with a known outcome.
 */
function unresolvedRun(status: PtahSchemaStatus | undefined): boolean {
  const entries = status?.journal?.entries ?? [];
  for (let i = entries.length - 1; i >= 0; i--) {
    const e = entries[i]!;
    if (e.type === 'Verified' || e.type === 'RunAcknowledged') return false;
    if (e.type === 'ApplyFinished' || e.type === 'RunFinished') return e.outcome === 'Unknown';
  }
  return false;
}
