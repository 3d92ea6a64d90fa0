/**
 * Lease arithmetic shared by leader election and the database-realm Leases. The decision is a pure function
 * of the Lease as read, the clock and who asks, so it can be tested without a cluster; the caller writes the
 * result with the resourceVersion it read, and a conflict means somebody else moved first.
 */

export interface LeaseState {
  readonly holderIdentity?: string;
  readonly leaseDurationSeconds?: number;
  readonly acquireTime?: Date;
  readonly renewTime?: Date;
  readonly leaseTransitions?: number;
}

export type LeaseDecision =
  | { readonly action: 'create'; readonly next: LeaseState }
  | { readonly action: 'renew'; readonly next: LeaseState }
  | { readonly action: 'takeover'; readonly next: LeaseState; readonly previousHolder: string }
  | { readonly action: 'wait'; readonly holder: string; readonly expiresAt: Date };

export function leaseExpiry(lease: LeaseState): Date | undefined {
  const renewed = lease.renewTime ?? lease.acquireTime;
  if (renewed === undefined || lease.leaseDurationSeconds === undefined) return undefined;
  return new Date(renewed.getTime() + lease.leaseDurationSeconds * 1000);
}

export function decideLease(
  current: LeaseState | undefined,
  identity: string,
  durationSeconds: number,
  now: Date,
): LeaseDecision {
  if (current === undefined) {
    return {
      action: 'create',
      next: {
        holderIdentity: identity,
        leaseDurationSeconds: durationSeconds,
        acquireTime: now,
        renewTime: now,
        leaseTransitions: 0,
      },
    };
  }
  if (current.holderIdentity === identity) {
    return { action: 'renew', next: { ...current, leaseDurationSeconds: durationSeconds, renewTime: now } };
  }
  const expiry = leaseExpiry(current);
  const holder = current.holderIdentity ?? '';
  // A Lease with no holder, or none that can expire, was released: anyone may take it.
  if (holder !== '' && expiry !== undefined && expiry.getTime() > now.getTime()) {
    return { action: 'wait', holder, expiresAt: expiry };
  }
  return {
    action: 'takeover',
    previousHolder: holder,
    next: {
      holderIdentity: identity,
      leaseDurationSeconds: durationSeconds,
      acquireTime: now,
      renewTime: now,
      leaseTransitions: (current.leaseTransitions ?? 0) + 1,
    },
  };
}

/** The part of a coordination.k8s.io Lease object that the decision reads and writes. */
export interface LeaseSpecObject {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: Date;
  renewTime?: Date;
  leaseTransitions?: number;
}

export function leaseStateOf(spec: LeaseSpecObject | undefined): LeaseState {
  const s = spec ?? {};
  return {
    ...(s.holderIdentity ? { holderIdentity: s.holderIdentity } : {}),
    ...(s.leaseDurationSeconds !== undefined ? { leaseDurationSeconds: s.leaseDurationSeconds } : {}),
    ...(s.acquireTime ? { acquireTime: new Date(s.acquireTime) } : {}),
    ...(s.renewTime ? { renewTime: new Date(s.renewTime) } : {}),
    ...(s.leaseTransitions !== undefined ? { leaseTransitions: s.leaseTransitions } : {}),
  };
}
