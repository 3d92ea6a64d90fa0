/**
 * When a Blocked resource is looked at next, for both families. A pass that finds the resource already
 * Blocked for the same reason and message keeps the instant it recorded: a fresh one on every pass would be
 * a status write, whose watch event wakes the resource again, pass after pass. Once that instant has passed,
 * the gate is taken again and a new interval starts, so a refusal nobody announces (a census, a grant) is
 * still re-read on a bounded cadence.
 */
export interface BlockedStatus {
  readonly phase?: string | undefined;
  readonly nextReconciliationTime?: string | undefined;
  readonly conditions?:
    readonly { readonly type: string; readonly reason: string; readonly message: string }[] | undefined;
}

export function blockedUntil(
  status: BlockedStatus,
  reason: string,
  message: string,
  now: Date,
  intervalMs: number,
): string {
  const ready = status.conditions?.find((c) => c.type === 'Ready');
  const recorded = status.nextReconciliationTime;
  const unchanged =
    status.phase === 'Blocked' &&
    ready?.reason === reason &&
    ready.message === message &&
    recorded !== undefined &&
    Date.parse(recorded) > now.getTime();
  return unchanged ? recorded : new Date(now.getTime() + intervalMs).toISOString();
}
