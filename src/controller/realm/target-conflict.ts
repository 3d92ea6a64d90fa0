/**
 * Two realms, one database. A realm Lease only orders resources that name the same realm; two resources
 * naming different realms (another coordination key, another namespace) over the same database would both
 * mutate it. The runner reports the credential-free identity of the database each resource reads, so the
 * manager can see that two realms meet on one database: the resource that came later (by creation, then
 * UID) is Blocked with RealmConflict naming the other, and the earlier one does not dispatch an Apply while
 * the later one still has one in flight.
 */
export interface TargetClaimant {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly createdAt: string;
  readonly coordinationDigest: string;
  /** The identity the runner last reported for its database; unknown until its first read. */
  readonly identityDigest?: string | undefined;
  /** Deleted or suspended resources start nothing new; they conflict only while an Apply is in flight. */
  readonly active: boolean;
  /** It has an Apply dispatched (running, or of unknown end). */
  readonly applying: boolean;
}

export interface TargetConflict {
  /** `namespace/name` of the other resource. */
  readonly other: string;
  /** This resource came after the other: it is the one Blocked. */
  readonly later: boolean;
  /** The other has an Apply in flight: this resource dispatches none meanwhile. */
  readonly otherApplying: boolean;
}

function before(a: TargetClaimant, b: TargetClaimant): boolean {
  return a.createdAt !== b.createdAt ? a.createdAt < b.createdAt : a.uid < b.uid;
}

/** The first other resource in another realm on the same database, if any, oldest first. */
export function targetConflict(
  self: TargetClaimant,
  identityDigest: string | undefined,
  others: readonly TargetClaimant[],
): TargetConflict | undefined {
  if (identityDigest === undefined) return undefined;
  const rivals = others
    .filter(
      (o) =>
        o.uid !== self.uid &&
        o.coordinationDigest !== self.coordinationDigest &&
        o.identityDigest === identityDigest &&
        (o.active || o.applying),
    )
    .sort((a, b) => (before(a, b) ? -1 : before(b, a) ? 1 : 0));
  const first = rivals[0];
  if (first === undefined) return undefined;
  const earlierRival = rivals.find((o) => before(o, self));
  const named = earlierRival ?? first;
  return {
    other: `${named.namespace}/${named.name}`,
    later: earlierRival !== undefined,
    otherApplying: rivals.some((o) => o.applying),
  };
}
