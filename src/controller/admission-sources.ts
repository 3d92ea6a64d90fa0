/**
 * What the manager process hands its vcontrollerwrite and vpodintent webhooks: its own username (the only
 * writer of operation Jobs, snapshots, plans, plan chunks and projections), and the rebuilds and the plan
 * check, made by the same builders and comparison the reconcilers use, reading the manager's watches first
 * (admission-reads.ts) or the API server. Admission imports no controller code; this module joins the two
 * in the manager.
 */
import * as k8s from '@kubernetes/client-node';
import type { Reads } from '../admission/reads.ts';
import type { PtahSchemaPlan } from '../api/ptah-schema-plan.ts';
import type { ControllerWriteSources } from '../admission/vcontrollerwrite.ts';
import type { PodIntentSources } from '../admission/vpodintent.ts';
import { cachedJob, cachedJobReaders } from './admission-reads.ts';
import { planAgainstOwner } from './expected-plan.ts';
import { rebuildJob } from './jobs/expected-job.ts';
import type { JobReaders } from './jobs/job-readers.ts';
import type { ManagerIdentity } from './jobs/operation-job.ts';
import { PtahObjects, readJob } from './runtime/kube.ts';
import { rebuildSnapshot } from './snapshot/expected-snapshot.ts';
import type { CacheLookup } from './watches.ts';

/** Who this process is to the API server: the identity every write of the manager carries. */
export async function managerUsername(kubeConfig: k8s.KubeConfig): Promise<string> {
  const review = await kubeConfig
    .makeApiClient(k8s.AuthenticationV1Api)
    .createSelfSubjectReview({ body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' } });
  const username = review.status?.userInfo?.username;
  if (username === undefined || username === '')
    throw new Error('the API server names no user for this manager');
  return username;
}

/**
 * `caches` are the manager's watches (Manager.watches); NO_CACHE sends every read to the API server.
 */
export function controllerWriteSources(
  kubeConfig: k8s.KubeConfig,
  manager: ManagerIdentity,
  username: string,
  caches: CacheLookup,
  clock: () => Date = () => new Date(),
): { readonly writes: ControllerWriteSources; readonly pods: PodIntentSources } {
  const live: JobReaders = {
    core: kubeConfig.makeApiClient(k8s.CoreV1Api),
    ptah: new PtahObjects(kubeConfig.makeApiClient(k8s.CustomObjectsApi)),
  };
  const readers: Readonly<Record<Reads, JobReaders>> = { cached: cachedJobReaders(caches, live), live };
  const batch = kubeConfig.makeApiClient(k8s.BatchV1Api);
  const liveJob = (namespace: string, name: string) => readJob(batch, namespace, name);
  return {
    writes: {
      managerUsername: username,
      rebuildJob: (owner, job, reads) => rebuildJob(readers[reads], manager, owner, job, clock()),
      rebuildSnapshot: async (owner, _name, reads) => rebuildSnapshot(readers[reads], owner),
      readPlan: (namespace, name, reads) =>
        readers[reads].ptah.get<PtahSchemaPlan>('ptahschemaplans', namespace, name),
      planAgainstOwner: (kind, owner, plan, reads) => planAgainstOwner(readers[reads], kind, owner, plan),
    },
    pods: {
      readJob: (namespace, name, reads) =>
        reads === 'cached' ? cachedJob(caches, liveJob, namespace, name) : liveJob(namespace, name),
    },
  };
}
