/**
 * Condition bookkeeping with metav1.Condition semantics: one condition per type, lastTransitionTime moves
 * only when the status changes, observedGeneration says which spec the condition judged. Functions are pure
 * and return the same array when nothing changed, so a reconcile can skip a no-op status write.
 */
import type { Infer } from './schema-dsl.ts';
import type { condition } from './meta.ts';

export type Condition = Infer<typeof condition>;
export type ConditionStatus = Condition['status'];

export interface ConditionUpdate {
  readonly type: string;
  readonly status: ConditionStatus;
  readonly reason: string;
  readonly message?: string;
  readonly observedGeneration?: number;
}

const REASON = /^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/;
/** Messages are for people and never carry values; a bound keeps a runaway one out of status. */
export const MAX_CONDITION_MESSAGE = 1024;

export class ConditionError extends Error {
  override readonly name = 'ConditionError';
}

export function findCondition(
  conditions: readonly Condition[] | undefined,
  type: string,
): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

export function isConditionTrue(conditions: readonly Condition[] | undefined, type: string): boolean {
  return findCondition(conditions, type)?.status === 'True';
}

/** Sets one condition; others keep their place. */
export function setCondition(
  conditions: readonly Condition[] | undefined,
  update: ConditionUpdate,
  now: Date,
): readonly Condition[] {
  if (!REASON.test(update.reason) || update.reason.length > 1024) {
    throw new ConditionError(`"${update.reason}" is not a condition reason (CamelCase, no spaces)`);
  }
  const list = conditions ?? [];
  const existing = findCondition(list, update.type);
  const message = truncate(update.message ?? '');
  const next: Condition = {
    type: update.type,
    status: update.status,
    reason: update.reason,
    message,
    ...(update.observedGeneration === undefined ? {} : { observedGeneration: update.observedGeneration }),
    lastTransitionTime:
      existing !== undefined && existing.status === update.status
        ? existing.lastTransitionTime
        : rfc3339(now),
  };
  if (existing !== undefined && sameCondition(existing, next)) return list;
  return existing === undefined ? [...list, next] : list.map((c) => (c.type === update.type ? next : c));
}

/** Sets several conditions in one pass, in order. */
export function setConditions(
  conditions: readonly Condition[] | undefined,
  updates: readonly ConditionUpdate[],
  now: Date,
): readonly Condition[] {
  return updates.reduce<readonly Condition[]>((list, u) => setCondition(list, u, now), conditions ?? []);
}

export function removeCondition(
  conditions: readonly Condition[] | undefined,
  type: string,
): readonly Condition[] {
  const list = conditions ?? [];
  return list.some((c) => c.type === type) ? list.filter((c) => c.type !== type) : list;
}

function sameCondition(a: Condition, b: Condition): boolean {
  return (
    a.status === b.status &&
    a.reason === b.reason &&
    a.message === b.message &&
    a.observedGeneration === b.observedGeneration &&
    a.lastTransitionTime === b.lastTransitionTime
  );
}

/** Kubernetes stores condition times at second precision; writing them that way avoids spurious diffs. */
function rfc3339(d: Date): string {
  return `${d.toISOString().slice(0, 19)}Z`;
}

function truncate(message: string): string {
  const chars = Array.from(message);
  return chars.length <= MAX_CONDITION_MESSAGE
    ? message
    : `${chars.slice(0, MAX_CONDITION_MESSAGE - 1).join('')}…`;
}
