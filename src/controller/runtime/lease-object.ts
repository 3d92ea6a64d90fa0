/**
 * Lease times are MicroTime: the API server parses them with six fractional digits and refuses the three a
 * plain Date serialises to. The generated client writes the six-digit form only for `V1MicroTime`
 * instances, so every Lease spec written goes through `leaseSpecFor`.
 */
import { V1MicroTime, type V1LeaseSpec } from '@kubernetes/client-node';
import type { LeaseState } from './lease.ts';

export function microTime(d: Date | undefined): V1MicroTime | undefined {
  return d === undefined ? undefined : new V1MicroTime(new Date(d).getTime());
}

export function leaseSpecFor(state: LeaseState): V1LeaseSpec {
  const acquireTime = microTime(state.acquireTime);
  const renewTime = microTime(state.renewTime);
  return {
    ...(state.holderIdentity !== undefined ? { holderIdentity: state.holderIdentity } : {}),
    ...(state.leaseDurationSeconds !== undefined ? { leaseDurationSeconds: state.leaseDurationSeconds } : {}),
    ...(acquireTime !== undefined ? { acquireTime } : {}),
    ...(renewTime !== undefined ? { renewTime } : {}),
    ...(state.leaseTransitions !== undefined ? { leaseTransitions: state.leaseTransitions } : {}),
  };
}
