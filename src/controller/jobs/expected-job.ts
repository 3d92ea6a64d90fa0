/**
 * The Job a resource's claim builds, rebuilt for the controller-write webhook from what status says now:
 * the resource, its claim of that Job name and, for an Apply, the plan the claim names — through the very
 * functions the reconcilers dispatch with, so a Job shape added to a family's builder is rebuilt by the
 * same code. The one input that is not in status is the instant the Job was built (its execution deadline
 * counts from it); it is read back from the Job and must lie between the claim and now.
 */
import type { V1Job } from '@kubernetes/client-node';
import { JOB_ANNOTATIONS } from '../../api/job-envelope.ts';
import type { PtahMigration } from '../../api/ptah-migration.ts';
import type { PtahSchema } from '../../api/ptah-schema.ts';
import { migrationJob } from '../migration/migration-job.ts';
import { migrationView } from '../migration/view.ts';
import type { JobReaders } from './job-readers.ts';
import { schemaJob } from '../schema/schema-job.ts';
import { schemaView } from '../schema/view.ts';
import type { ManagerIdentity } from './operation-job.ts';

export type OwnerKind = 'PtahSchema' | 'PtahMigration';

export interface JobOwner {
  readonly kind: OwnerKind;
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
}

export interface JobRebuildRequest {
  readonly name: string;
  readonly executionNotAfter?: string;
  readonly identity: Readonly<Record<string, string>>;
}

export type RebuiltJob =
  { readonly ok: true; readonly object: V1Job } | { readonly ok: false; readonly reason: string };

/** How far apart the manager that built the Job and the webhook judging it may see the clock. */
export const CLOCK_SKEW_MS = 30_000;

interface Claimed {
  readonly view: { readonly spec: { readonly activeDeadlineSeconds: number } };
  readonly claim?: { readonly jobName: string; readonly startedAt: string };
  build(now: Date, manager: ManagerIdentity): Promise<V1Job>;
}

/** Per family: where the resource is, and the builder its reconciler dispatches with. */
const FAMILIES: Readonly<
  Record<OwnerKind, (readers: JobReaders, owner: JobOwner) => Promise<Claimed | undefined>>
> = {
  PtahSchema: async (readers, owner) => {
    const obj = await readers.ptah.get<PtahSchema>('ptahschemas', owner.namespace, owner.name);
    if (obj === undefined || obj.metadata.uid !== owner.uid) return undefined;
    const view = schemaView(obj);
    const claim = view.status.claim;
    return {
      view,
      ...(claim !== undefined ? { claim } : {}),
      build: (now, manager) => schemaJob(readers, view, claim!, manager, now),
    };
  },
  PtahMigration: async (readers, owner) => {
    const obj = await readers.ptah.get<PtahMigration>('ptahmigrations', owner.namespace, owner.name);
    if (obj === undefined || obj.metadata.uid !== owner.uid) return undefined;
    const view = migrationView(obj);
    const claim = view.status.claim;
    return {
      view,
      ...(claim !== undefined ? { claim } : {}),
      build: (now, manager) => migrationJob(readers, view, claim!, manager, now),
    };
  },
};

export async function rebuildJob(
  readers: JobReaders,
  manager: ManagerIdentity,
  owner: JobOwner,
  job: JobRebuildRequest,
  now: Date,
): Promise<RebuiltJob> {
  const found = await FAMILIES[owner.kind](readers, owner);
  if (found === undefined)
    return { ok: false, reason: `${owner.kind} ${owner.name} with UID ${owner.uid} does not exist` };
  if (found.claim?.jobName !== job.name) {
    return { ok: false, reason: `${owner.kind} ${owner.name} claims no operation whose Job is ${job.name}` };
  }
  const builtAt = buildInstant(job.executionNotAfter, found.view.spec.activeDeadlineSeconds, now);
  const claimed = Date.parse(found.claim.startedAt);
  if (builtAt.getTime() < claimed - CLOCK_SKEW_MS || builtAt.getTime() > now.getTime() + CLOCK_SKEW_MS) {
    return {
      ok: false,
      reason: `its execution deadline counts from ${builtAt.toISOString()}, outside the claim's ${found.claim.startedAt} to now`,
    };
  }
  // The identity annotations record which manager built the Job and bind nothing (the typed Job policy
  // holds them to this release); everything the Pod runs is this manager's.
  const identity: ManagerIdentity = {
    ...manager,
    managerImage: job.identity[JOB_ANNOTATIONS.managerImage] ?? manager.managerImage,
    managerRevision: job.identity[JOB_ANNOTATIONS.managerRevision] ?? manager.managerRevision,
  };
  try {
    return { ok: true, object: await found.build(builtAt, identity) };
  } catch (error) {
    return { ok: false, reason: error instanceof Error ? error.message : String(error) };
  }
}

/** PTAH_EXECUTION_NOT_AFTER minus the deadline; a Job without one (Resolve, Verify) depends on no instant. */
function buildInstant(notAfter: string | undefined, deadlineSeconds: number, now: Date): Date {
  if (notAfter === undefined) return now;
  const at = Date.parse(notAfter);
  return Number.isNaN(at) ? new Date(0) : new Date(at - deadlineSeconds * 1000);
}
