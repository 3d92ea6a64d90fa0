import { setTimeout as sleep } from 'node:timers/promises';
import type { CoordinationV1Api, V1Lease } from '@kubernetes/client-node';
import { decideLease, leaseStateOf } from './lease.ts';
import { leaseSpecFor } from './lease-object.ts';

export interface LeaderElectionOptions {
  readonly api: CoordinationV1Api;
  readonly namespace: string;
  readonly name: string;
  readonly identity: string;
  readonly leaseDurationSeconds?: number;
  readonly renewEveryMs?: number;
  readonly retryEveryMs?: number;
  /**
   * The Lease is an object of the Helm release, which creates it and deletes it on uninstall: it is never
   * created here (a replica still stopping after the uninstall would otherwise make it again, outside the
   * release) nor deleted (a release is given up by clearing the holder). Without it, as outside the chart,
   * the first replica creates the Lease and the last one to stop deletes it.
   */
  readonly leaseFromRelease?: boolean;
  readonly log?: (msg: string, fields: Record<string, unknown>) => void;
}

function statusCode(error: unknown): number | undefined {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'number' ? code : undefined;
}

/**
 * Leader election on a coordination.k8s.io Lease. `run` waits until this process holds the Lease, calls
 * `lead` with a signal that aborts when leadership is lost, and returns after that. Losing the Lease is
 * meant to end the process: a leader that cannot renew must stop acting at once.
 */
export class LeaderElector {
  private readonly duration: number;
  /** The Lease as this identity last wrote it, to renew without reading it first (`renewWritten`). */
  private written: V1Lease | undefined;

  constructor(private readonly options: LeaderElectionOptions) {
    this.duration = options.leaseDurationSeconds ?? 15;
  }

  /** One attempt to take or renew the Lease; true when this identity holds it afterwards. */
  async tryAcquireOrRenew(now = new Date()): Promise<boolean> {
    if (await this.renewWritten(now)) return true;
    const { api, namespace, name, identity } = this.options;
    let existing: V1Lease | undefined;
    try {
      existing = await api.readNamespacedLease({ name, namespace });
    } catch (error) {
      if (statusCode(error) !== 404) throw error;
    }
    const decision = decideLease(
      existing ? leaseStateOf(existing.spec) : undefined,
      identity,
      this.duration,
      now,
    );
    if (decision.action === 'wait') return false;
    if (existing === undefined && this.options.leaseFromRelease === true) {
      this.options.log?.(
        'the leader Lease of the release is missing; waiting for it (helm upgrade restores it)',
        {
          lease: name,
        },
      );
      return false;
    }
    const spec = leaseSpecFor(decision.next);
    try {
      if (decision.action === 'create' || existing === undefined) {
        this.written = await api.createNamespacedLease({
          namespace,
          body: { metadata: { name, namespace }, spec },
        });
      } else {
        this.written = await api.replaceNamespacedLease({
          name,
          namespace,
          body: { metadata: { ...existing.metadata, name, namespace }, spec },
        });
      }
      return true;
    } catch (error) {
      // Somebody else wrote first, or released (deleted) the Lease read: we did not win this round.
      const code = statusCode(error);
      if (code === 409 || code === 404) return false;
      throw error;
    }
  }

  /**
   * client-go's fast path: the holder renews the Lease it last wrote, conditioned on that write's
   * resourceVersion, without reading it first. Any write by anybody since makes it a conflict, and the
   * read-then-write path decides as before; a renewal costs one request instead of two.
   */
  private async renewWritten(now: Date): Promise<boolean> {
    const { api, namespace, name, identity } = this.options;
    const written = this.written;
    this.written = undefined;
    if (written?.spec?.holderIdentity !== identity) return false;
    const decision = decideLease(leaseStateOf(written.spec), identity, this.duration, now);
    if (decision.action !== 'renew') return false;
    try {
      this.written = await api.replaceNamespacedLease({
        name,
        namespace,
        body: { metadata: { ...written.metadata, name, namespace }, spec: leaseSpecFor(decision.next) },
      });
      return true;
    } catch (error) {
      const code = statusCode(error);
      if (code === 409 || code === 404) return false;
      throw error;
    }
  }

  /**
   * Gives the Lease up if this identity still holds it, by deleting it (by clearing its holder when it is
   * the release's object, `leaseFromRelease`): any replica may create it at once
   * (as client-go's ReleaseOnCancel lets it take a cleared one), so a rolling upgrade or a deleted leader
   * Pod does not leave the operator leaderless for a whole Lease duration, and an uninstall leaves no Lease
   * behind. The delete is conditioned on the resourceVersion at which this identity was read as the holder,
   * so it cannot remove a Lease another replica has written since. Called only after `lead` has returned,
   * i.e. nothing acts anymore.
   */
  async release(now = new Date()): Promise<boolean> {
    const { api, namespace, name, identity } = this.options;
    this.written = undefined;
    let existing: V1Lease;
    try {
      existing = await api.readNamespacedLease({ name, namespace });
    } catch (error) {
      if (statusCode(error) === 404) return false;
      throw error;
    }
    if (existing.spec?.holderIdentity !== identity) return false;
    const { resourceVersion, uid } = existing.metadata ?? {};
    try {
      if (this.options.leaseFromRelease === true) {
        // The release's object stays; an empty holder is as free to take as a missing Lease. The body keeps
        // the UID read, so a Lease deleted and made again meanwhile is not written (a PUT would create it).
        const spec = {
          ...leaseSpecFor({ ...leaseStateOf(existing.spec), leaseDurationSeconds: 1, renewTime: now }),
          holderIdentity: '',
        };
        await api.replaceNamespacedLease({
          name,
          namespace,
          body: { metadata: { ...existing.metadata, name, namespace }, spec },
        });
        return true;
      }
      await api.deleteNamespacedLease({
        name,
        namespace,
        body: { preconditions: { ...(resourceVersion ? { resourceVersion } : {}), ...(uid ? { uid } : {}) } },
      });
      return true;
    } catch (error) {
      // Written by somebody else since the read (409), or already gone (404): not ours to release.
      const code = statusCode(error);
      if (code === 409 || code === 404) return false;
      throw error;
    }
  }

  async run(signal: AbortSignal, lead: (leadership: AbortSignal) => Promise<void>): Promise<void> {
    const retry = this.options.retryEveryMs ?? 2_000;
    const renewEvery = this.options.renewEveryMs ?? Math.floor((this.duration * 1000) / 3);
    while (!signal.aborted) {
      let held = false;
      try {
        held = await this.tryAcquireOrRenew();
      } catch (error) {
        this.options.log?.('leader election attempt failed', { error: String(error) });
      }
      if (held) break;
      await sleep(retry, undefined, { signal }).catch(() => undefined);
    }
    if (signal.aborted) {
      // A shutdown that came while an attempt was in flight: that attempt may have created or taken the Lease
      // (the leader stopping first had just deleted it), and a replica that never led must not leave it held.
      await this.releaseLogged();
      return;
    }
    this.options.log?.('became leader', { lease: this.options.name, identity: this.options.identity });
    const leadership = new AbortController();
    const onStop = (): void => leadership.abort(new Error('shutting down'));
    signal.addEventListener('abort', onStop, { once: true });
    // Another replica may take the Lease once it expires; this one stops acting a margin before that, at the
    // renew deadline, whether or not a renewal attempt has come back by then (client-go's RenewDeadline).
    const renewDeadlineMs = Math.floor((this.duration * 1000 * 2) / 3);
    let deadline: NodeJS.Timeout | undefined;
    const armDeadline = (): void => {
      clearTimeout(deadline);
      deadline = setTimeout(
        () => leadership.abort(new Error('leadership lost: the Lease was not renewed before its deadline')),
        renewDeadlineMs,
      );
      deadline.unref();
    };
    armDeadline();
    leadership.signal.addEventListener('abort', () => clearTimeout(deadline), { once: true });
    const renewing = (async () => {
      let lastRenew = Date.now();
      while (!leadership.signal.aborted) {
        await sleep(renewEvery, undefined, { signal: leadership.signal }).catch(() => undefined);
        if (leadership.signal.aborted) return;
        try {
          if (await this.tryAcquireOrRenew()) {
            lastRenew = Date.now();
            armDeadline();
            continue;
          }
          leadership.abort(new Error('leadership lost: another holder took the Lease'));
        } catch (error) {
          if (Date.now() - lastRenew > this.duration * 1000) {
            leadership.abort(new Error(`leadership lost: could not renew the Lease (${String(error)})`));
          }
        }
      }
    })();
    try {
      await lead(leadership.signal);
    } finally {
      const lost = leadership.signal.aborted && !signal.aborted;
      leadership.abort(new Error('leader loop ended'));
      signal.removeEventListener('abort', onStop);
      await renewing;
      // A shutdown gives the Lease up; a lost leadership has nothing left to give.
      if (signal.aborted && !lost) await this.releaseLogged();
    }
  }

  private releaseLogged(): Promise<void> {
    return this.release().then(
      (released) => this.options.log?.('leader Lease released', { lease: this.options.name, released }),
      (error: unknown) => this.options.log?.('releasing the leader Lease failed', { error: String(error) }),
    );
  }
}
