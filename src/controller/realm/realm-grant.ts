/**
 * Whether a resource may claim the realm it names: the one rule both families follow before any Job.
 *
 * A realm named by a PtahRealm is admitted only by that realm: it must exist, be of the resource's engine and
 * list the resource's namespace. Missing, wrong engine and unlisted namespace give one message, so a
 * namespace learns nothing about realms it was not granted. A resource not admitted runs nothing and is left
 * out of everyone else's census, so it cannot block the resources the realm does admit.
 *
 * The census counts the active resources of both families claiming the same realm. One claimant is always
 * admitted; more are admitted only when every one of them consents (spec.target.sharedRealm) and, for a
 * PtahRealm, the admin made it Shared. Otherwise all claimants are refused alike: the operator cannot know
 * which one an admin meant, and refusing only the newcomer would make the outcome depend on timing.
 */
import { realmDigestOf } from '../../api/fingerprint.ts';
import type { RealmRef, RealmSharing } from '../../api/ptah-realm.ts';
import { canonicalEngine, type Engine } from '../../api/ptah-schema.ts';
import { REASONS } from '../../api/reasons.ts';

export type ClaimantFamily = 'PtahSchema' | 'PtahMigration';

export interface RealmClaimant {
  readonly family: ClaimantFamily;
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  /** Canonical; undefined for an engine Ptah does not support (such a resource claims nothing). */
  readonly engine: Engine | undefined;
  readonly realm: RealmRef;
  /** spec.target.sharedRealm: this resource consents to share its realm. */
  readonly shared: boolean;
  /** Not suspended and not being deleted: it may start something. */
  readonly active: boolean;
}

/** What the manager reads of a PtahRealm. */
export interface RealmGrant {
  readonly name: string;
  readonly engine: string;
  readonly namespaces: readonly string[];
  readonly sharing: RealmSharing;
}

export type RealmVerdict =
  | { readonly admitted: true }
  | {
      readonly admitted: false;
      readonly reason: typeof REASONS.RealmNotAuthorized | typeof REASONS.RealmConflict;
      readonly message: string;
    };

export const REALM_ADMITTED: RealmVerdict = { admitted: true };

function who(c: RealmClaimant): string {
  return `${c.family} ${c.namespace}/${c.name}`;
}

/** The realm admits this claimant: it exists, has the claimant's engine and lists its namespace. */
export function realmAdmits(grant: RealmGrant | undefined, claimant: RealmClaimant): boolean {
  if (claimant.realm.kind === 'CoordinationKey') return true;
  return (
    grant !== undefined &&
    grant.name === claimant.realm.name &&
    claimant.engine !== undefined &&
    canonicalEngine(grant.engine) === claimant.engine &&
    grant.namespaces.includes(claimant.namespace)
  );
}

function digestOf(c: RealmClaimant): string | undefined {
  return c.engine === undefined ? undefined : realmDigestOf(c.engine, c.namespace, c.realm);
}

/**
 * The verdict for `self`, given the PtahRealm it names (undefined: none of that name, or it names a
 * coordination key) and the resources of both families that might claim the same realm (self may be among
 * them; it is counted once).
 */
export function realmVerdict(
  self: RealmClaimant,
  grant: RealmGrant | undefined,
  others: readonly RealmClaimant[],
): RealmVerdict {
  if (self.realm.kind === 'PtahRealm' && !realmAdmits(grant, self)) {
    return {
      admitted: false,
      reason: REASONS.RealmNotAuthorized,
      message:
        `PtahRealm ${self.realm.name} does not admit namespace ${self.namespace} for engine ${self.engine ?? 'unknown'}: ` +
        `an admin must create it with that engine and list ${self.namespace} in its spec.namespaces`,
    };
  }
  const digest = digestOf(self);
  if (digest === undefined) return REALM_ADMITTED;
  const claimants = [
    self,
    ...others.filter(
      (o) => o.uid !== self.uid && o.active && digestOf(o) === digest && realmAdmits(grant, o),
    ),
  ];
  if (claimants.length <= 1) return REALM_ADMITTED;
  const named = claimants.map(who).sort().join(', ');
  const realmName =
    self.realm.kind === 'PtahRealm'
      ? `PtahRealm ${self.realm.name}`
      : `coordination key ${self.realm.coordinationKey} of namespace ${self.namespace}`;
  if (grant !== undefined && grant.sharing === 'Exclusive') {
    return {
      admitted: false,
      reason: REASONS.RealmConflict,
      message: `${realmName} is Exclusive and ${claimants.length} resources claim it (${named}); all are refused until one remains or an admin makes it Shared`,
    };
  }
  const refusing = claimants
    .filter((c) => !c.shared)
    .map(who)
    .sort();
  if (refusing.length > 0) {
    return {
      admitted: false,
      reason: REASONS.RealmConflict,
      message: `${realmName} is claimed by ${claimants.length} resources (${named}) and ${refusing.join(', ')} did not consent to share it; all are refused until every claimant sets spec.target.sharedRealm or one remains`,
    };
  }
  return REALM_ADMITTED;
}

/**
 * The Event of an operation claimed but not yet started when its realm stopped admitting the resource (a
 * grant withdrawn, a census lost): it is withdrawn, and nothing new runs under the realm.
 */
export function realmWithdrawal(operation: string, refusal: { readonly message: string }): string {
  return `operation ${operation} withdrawn before it started: ${refusal.message}`;
}

/**
 * A resource still Blocked by its realm when the realm admits it again: nothing about the resource changed
 * (the grant or another claimant did), so its next read is due now rather than at the interval. Asked only
 * once the realm gates have passed.
 */
export function realmRefusalLifted(status: {
  readonly phase?: string | undefined;
  readonly conditions?: readonly { readonly type: string; readonly reason: string }[] | undefined;
}): boolean {
  if (status.phase !== 'Blocked') return false;
  const reason = status.conditions?.find((c) => c.type === 'Ready')?.reason;
  return reason === REASONS.RealmNotAuthorized || reason === REASONS.RealmConflict;
}
