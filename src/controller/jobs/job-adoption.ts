/**
 * Adoption of a dispatched Apply Job another manager process created: a predecessor release that kept the
 * execution binding, or the replica that led before this one. Its result is read only when this release
 * builds the same Job apart from the manager identity annotations, which record who built it and bind
 * nothing: the identity is taken from the live Pod template, the build instant from the Job's execution
 * deadline, and everything else from the claim the resource's status holds — the record the
 * controller-write webhook rebuilt the Job from when it admitted it — through the very builder the
 * reconcilers dispatch with (`rebuildJob`). A Job this release cannot confirm settles the Apply as outcome
 * unknown. A Job this process created itself needs no confirmation, and one confirmed once stays confirmed.
 */
import type { V1Job } from '@kubernetes/client-node';
import { objectDifferences } from '../../admission/object-differences.ts';
import { JOB_SERVER_FILLED } from '../../admission/job-server-filled.ts';
import { JOB_ANNOTATIONS, MAIN_CONTAINER } from '../../api/job-envelope.ts';
import { rebuildJob, type JobOwner } from './expected-job.ts';
import type { JobReaders } from './job-readers.ts';
import type { ManagerIdentity } from './operation-job.ts';
import type { ExecutionBinding } from '../../api/ptah-schema.ts';
import { isRetiredApply } from '../execution-binding.ts';
import { isClaimedJob } from './claim-job.ts';
import type { JobObservation } from './harvest.ts';

/** Read the result of the finished Job with this UID, or not (and why, when this release cannot adopt it). */
export type ResultGate =
  { readonly read: true; readonly uid: string } | { readonly read: false; readonly unconfirmedJob?: string };

export type GatedClaim = {
  readonly type: string;
  readonly dispatchStarted?: boolean | undefined;
  readonly executionEpoch?: string | undefined;
  readonly jobUID?: string | undefined;
};

/** Jobs remembered as this process's own or confirmed; the oldest are forgotten past it (and re-checked). */
const REMEMBERED_JOBS = 10_000;

export class JobAdoption {
  private readonly known = new Set<string>();

  constructor(
    private readonly readers: JobReaders,
    private readonly manager: ManagerIdentity,
    private readonly clock: () => Date,
  ) {}

  /** A Job this process created (the API server's answer to its create, UID included). */
  created(job: V1Job): void {
    const uid = job.metadata?.uid;
    if (uid !== undefined) this.remember(uid);
  }

  /**
   * Whether this pass reads the result of the Job a claim names, in either family: the Job finished, it is
   * the claimed object, the claim's hold was continuous, and its epoch still runs (an Apply an upgrade
   * retired belongs to releases that no longer run). A dispatched Apply is read only once this release
   * confirms it (`unconfirmed`); when that alone stands in the way, `unconfirmedJob` says why, and the
   * decision ends the Apply unknown. A read-only operation is not confirmed: what it reports is checked by
   * itself, and nothing it ran can be replayed.
   */
  async resultGate(
    owner: JobOwner,
    claim: GatedClaim,
    live: V1Job | undefined,
    observed: JobObservation,
    pass: {
      readonly leaseContinuityLost?: boolean | undefined;
      readonly recorded: ExecutionBinding | undefined;
      readonly current: ExecutionBinding;
    },
  ): Promise<ResultGate> {
    if (
      observed.state !== 'finished' ||
      pass.leaseContinuityLost === true ||
      !isClaimedJob(claim, observed) ||
      isRetiredApply(claim, pass.recorded, pass.current)
    )
      return { read: false };
    const read = { read: true, uid: observed.uid } as const;
    if (claim.type !== 'Apply' || claim.dispatchStarted !== true || live === undefined) return read;
    const unconfirmedJob = await this.unconfirmed(owner, live);
    return unconfirmedJob === undefined ? read : { read: false, unconfirmedJob };
  }

  /**
   * Undefined when this release confirms `live` as the Job the owner's claim builds, else why not (the
   * differing paths, or why it cannot be rebuilt).
   */
  async unconfirmed(owner: JobOwner, live: V1Job): Promise<string | undefined> {
    const uid = live.metadata?.uid;
    if (uid !== undefined && this.known.has(uid)) return undefined;
    const template = live.spec?.template.metadata?.annotations ?? {};
    const identity = Object.fromEntries(
      [JOB_ANNOTATIONS.managerImage, JOB_ANNOTATIONS.managerRevision].flatMap((k) =>
        template[k] !== undefined ? [[k, template[k]]] : [],
      ),
    );
    const notAfter = live.spec?.template.spec?.containers
      .find((c) => c.name === MAIN_CONTAINER)
      ?.env?.find((v) => v.name === 'PTAH_EXECUTION_NOT_AFTER')?.value;
    const rebuilt = await rebuildJob(
      this.readers,
      this.manager,
      owner,
      {
        name: live.metadata?.name ?? '',
        identity,
        ...(notAfter !== undefined ? { executionNotAfter: notAfter } : {}),
      },
      this.clock(),
    );
    if (!rebuilt.ok) return rebuilt.reason;
    // The typed client's object, as the API server wrote it (no absent members as undefined ones).
    const wire = JSON.parse(JSON.stringify(live)) as Record<string, unknown>;
    const differences = objectDifferences(rebuilt.object, withoutCleanupTtl(wire), JOB_SERVER_FILLED);
    if (differences.length > 0) return differences.join('; ');
    if (uid !== undefined) this.remember(uid);
    return undefined;
  }

  private remember(uid: string): void {
    this.known.add(uid);
    if (this.known.size > REMEMBERED_JOBS) this.known.delete(this.known.values().next().value!);
  }
}

/** The cleanup TTL is the one field a manager adds to a Job after it is built (finish-job.ts). */
function withoutCleanupTtl(job: Record<string, unknown>): Record<string, unknown> {
  const spec = { ...((job['spec'] ?? {}) as Record<string, unknown>) };
  delete spec['ttlSecondsAfterFinished'];
  return { ...job, spec };
}
