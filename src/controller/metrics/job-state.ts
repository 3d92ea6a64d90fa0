/**
 * What the metrics say about one operation Job: the kind and operation it runs for, whether it is still
 * running or how it ended, and how long it took. Label values come from closed sets only; a Job whose
 * labels say something else is reported as `other`, never with the value it carries.
 */
import type * as k8s from '@kubernetes/client-node';
import { LABELS } from '../../api/meta.ts';
import { MIGRATION_OPERATION_TYPES, type MigrationOperationType } from '../../api/ptah-migration.ts';
import { OPERATION_TYPES, type OperationType } from '../../api/ptah-schema.ts';
import { METRIC_KINDS, type MetricKind } from './resource-state.ts';

export const JOB_OUTCOMES = ['active', 'succeeded', 'failed'] as const;
export type JobOutcome = (typeof JOB_OUTCOMES)[number];

export interface JobState {
  readonly uid: string;
  readonly kind: MetricKind | 'other';
  readonly operation: OperationType | MigrationOperationType | 'other';
  readonly outcome: JobOutcome;
  /** From the Job's start to its end, once it ended and both times are known. */
  readonly durationSeconds?: number;
}

/** Jobs carry the operation in lower case (`apply`); the metric says it as the API does (`Apply`). */
const OPERATIONS: ReadonlyMap<string, OperationType | MigrationOperationType> = new Map(
  [...OPERATION_TYPES, ...MIGRATION_OPERATION_TYPES].map((t) => [t.toLowerCase(), t]),
);
const KINDS: ReadonlySet<string> = new Set(METRIC_KINDS);

export function jobState(job: k8s.V1Job): JobState | undefined {
  const uid = job.metadata?.uid;
  if (uid === undefined) return undefined;
  const op = job.metadata?.labels?.[LABELS.operation];
  const owner = job.metadata?.ownerReferences?.find((o) => o.controller === true)?.kind;
  const conditions = job.status?.conditions ?? [];
  const ended = (type: string) => conditions.find((c) => c.type === type && c.status === 'True');
  const complete = ended('Complete');
  const failed = ended('Failed');
  const outcome: JobOutcome = complete ? 'succeeded' : failed ? 'failed' : 'active';
  const start = toMs(job.status?.startTime);
  const end = complete
    ? (toMs(job.status?.completionTime) ?? toMs(complete.lastTransitionTime))
    : failed
      ? toMs(failed.lastTransitionTime)
      : undefined;
  return {
    uid,
    kind: owner !== undefined && KINDS.has(owner) ? (owner as MetricKind) : 'other',
    operation: (op !== undefined ? OPERATIONS.get(op) : undefined) ?? 'other',
    outcome,
    ...(start !== undefined && end !== undefined && end >= start
      ? { durationSeconds: (end - start) / 1000 }
      : {}),
  };
}

/** The client turns timestamps into Dates; a plain object from a test may carry strings. */
function toMs(t: Date | string | undefined): number | undefined {
  if (t === undefined) return undefined;
  const ms = t instanceof Date ? t.getTime() : Date.parse(t);
  return Number.isFinite(ms) ? ms : undefined;
}
