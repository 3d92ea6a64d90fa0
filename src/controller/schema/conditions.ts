/**
 * Conditions as metav1 writes them: one entry per type, and lastTransitionTime moves only when the status
 * does, so a reader can tell how long something has been true.
 */
import type { Condition, ConditionStatus } from './model.ts';

export interface ConditionUpdate {
  readonly type: string;
  readonly status: ConditionStatus;
  readonly reason: string;
  readonly message: string;
}

export function setConditions(
  current: readonly Condition[] | undefined,
  updates: readonly ConditionUpdate[],
  generation: number,
  now: Date,
): Condition[] {
  const out = new Map<string, Condition>((current ?? []).map((c) => [c.type, c]));
  for (const u of updates) {
    const before = out.get(u.type);
    out.set(u.type, {
      type: u.type,
      status: u.status,
      reason: u.reason,
      message: u.message,
      observedGeneration: generation,
      lastTransitionTime:
        before !== undefined && before.status === u.status ? before.lastTransitionTime : now.toISOString(),
    });
  }
  return [...out.values()].sort((a, b) => a.type.localeCompare(b.type));
}

export function findCondition(
  conditions: readonly Condition[] | undefined,
  type: string,
): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}
