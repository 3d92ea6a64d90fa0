/**
 * The database-realm Lease: resources that name one realm (engine + namespace + coordination key) take
 * turns on it for Plan, Apply and the proof after an Apply, so two plans or an apply and a plan never
 * interleave on one database. The Lease lives in the coordination namespace and is named from the realm's
 * coordination digest, so the plaintext key never leaves spec.
 *
 * The decision (create, renew, take over an expired holder, or wait) is `decideLease`; this module only reads
 * and writes with the resourceVersion it read, so a conflict means somebody else moved first. An epoch
 * annotation changes whenever the holder changes, so a claim can tell an uninterrupted hold from a new one.
 */
import { randomBytes } from 'node:crypto';
import type { CoordinationV1Api, V1Lease } from '@kubernetes/client-node';
import { canonicalDigest } from '../../api/digest.ts';
import { hexOf, realmLeaseName } from '../../api/fingerprint.ts';
import { LABELS, MANAGED_BY } from '../../api/meta.ts';
import { decideLease, leaseStateOf } from '../runtime/lease.ts';
import { leaseSpecFor } from '../runtime/lease-object.ts';

export const LEASE_EPOCH_ANNOTATION = 'operator.ptah.run/lease-epoch';
export const REALM_LEASE_LABEL = 'operator.ptah.run/coordination';

export type RealmLeaseOutcome =
  | { readonly held: true; readonly epoch: string; readonly action: 'create' | 'renew' | 'takeover' }
  | { readonly held: false; readonly retryAfterMs: number };

/** Owner-neutral holder identity: one per resource, whatever its kind. */
export function realmHolderIdentity(resourceUID: string): string {
  return `ptah-h-${hexOf(canonicalDigest({ resourceUID })).slice(0, 40)}`;
}

function statusCode(error: unknown): number | undefined {
  const e = error as { code?: unknown; statusCode?: unknown };
  if (typeof e.code === 'number') return e.code;
  return typeof e.statusCode === 'number' ? e.statusCode : undefined;
}

export class RealmLeases {
  constructor(
    private readonly api: CoordinationV1Api,
    private readonly namespace: string,
  ) {}

  async acquire(
    coordinationDigest: string,
    holder: string,
    durationSeconds: number,
    now = new Date(),
  ): Promise<RealmLeaseOutcome> {
    const name = realmLeaseName(coordinationDigest as `sha256:${string}`);
    const existing = await this.read(name);
    const decision = decideLease(
      existing ? leaseStateOf(existing.spec) : undefined,
      holder,
      durationSeconds,
      now,
    );
    if (decision.action === 'wait') {
      return { held: false, retryAfterMs: Math.max(1000, decision.expiresAt.getTime() - now.getTime()) };
    }
    const epoch =
      decision.action === 'renew'
        ? (existing?.metadata?.annotations?.[LEASE_EPOCH_ANNOTATION] ?? newEpoch())
        : newEpoch();
    const spec = leaseSpecFor(decision.next);
    const metadata = {
      ...(existing?.metadata ?? {}),
      name,
      namespace: this.namespace,
      labels: {
        ...(existing?.metadata?.labels ?? {}),
        [LABELS.managedBy]: MANAGED_BY,
        [REALM_LEASE_LABEL]: 'database-target',
      },
      annotations: { ...(existing?.metadata?.annotations ?? {}), [LEASE_EPOCH_ANNOTATION]: epoch },
    };
    try {
      if (existing === undefined) {
        await this.api.createNamespacedLease({ namespace: this.namespace, body: { metadata, spec } });
      } else {
        await this.api.replaceNamespacedLease({ name, namespace: this.namespace, body: { metadata, spec } });
      }
    } catch (error) {
      const code = statusCode(error);
      // 409: somebody wrote first. 404: the Lease read was released (deleted) before the write landed.
      if (code === 409 || code === 404) return { held: false, retryAfterMs: 1000 };
      throw error;
    }
    return { held: true, epoch, action: decision.action };
  }

  /** Who holds the realm's Lease now, and under which epoch; undefined when nobody does. */
  async current(coordinationDigest: string): Promise<{ holder: string; epoch: string } | undefined> {
    const lease = await this.read(realmLeaseName(coordinationDigest as `sha256:${string}`));
    const holder = lease?.spec?.holderIdentity;
    if (lease === undefined || !holder) return undefined;
    return { holder, epoch: lease.metadata?.annotations?.[LEASE_EPOCH_ANNOTATION] ?? '' };
  }

  /**
   * Lets go only when this holder still holds it; a missing or foreign Lease is already released. Letting go
   * deletes the Lease, so an uninstalled operator leaves no idle realm Lease behind. That is as safe as
   * clearing the holder was:
   * - the delete carries the resourceVersion (and UID) at which this holder was read as the holder, so it
   *   lands before any other write to the Lease or not at all (409: someone renewed or took it in between,
   *   and it is theirs now); nobody but the holder ever deletes a realm Lease;
   * - a cleared Lease was free to anyone at once (decideLease takes a holderless Lease without waiting), so a
   *   deleted one, which anyone may create, opens no window a cleared one did not;
   * - fencing is the epoch annotation, not the holder identity (both manager replicas compute the same one
   *   for a resource) nor leaseTransitions (informational, as in client-go): a Lease created again gets a
   *   fresh random epoch, so a claim that persisted the old epoch reads the gap (leaseContinuityLost after
   *   dispatch), exactly as after a clear-and-retake. A restarted count of transitions weakens nothing.
   * A Lease still held when the operator is uninstalled (an Apply in flight, whose Job outlives the manager)
   * is deliberately not deleted by anyone: it keeps fencing the database until its holder's duration ends.
   */
  async release(coordinationDigest: string, holder: string): Promise<void> {
    const name = realmLeaseName(coordinationDigest as `sha256:${string}`);
    const existing = await this.read(name);
    if (existing === undefined || existing.spec?.holderIdentity !== holder) return;
    const { resourceVersion, uid } = existing.metadata ?? {};
    try {
      await this.api.deleteNamespacedLease({
        name,
        namespace: this.namespace,
        body: { preconditions: { ...(resourceVersion ? { resourceVersion } : {}), ...(uid ? { uid } : {}) } },
      });
    } catch (error) {
      // 409: somebody wrote in between; the next pass reads again and releases what is still ours.
      // 404: already gone.
      const code = statusCode(error);
      if (code !== 409 && code !== 404) throw error;
    }
  }

  private async read(name: string): Promise<V1Lease | undefined> {
    try {
      return await this.api.readNamespacedLease({ name, namespace: this.namespace });
    } catch (error) {
      if (statusCode(error) === 404) return undefined;
      throw error;
    }
  }
}

function newEpoch(): string {
  return `v1-${randomBytes(16).toString('hex')}`;
}
