/**
 * What the manager process hands its vcontrollerwrite and vpodintent webhooks: its own username (the only
 * writer of operation Jobs and snapshots), and the rebuilds, made by the same builders the reconcilers
 * dispatch with. Admission imports no controller code; this module joins the two in the manager.
 */
import * as k8s from '@kubernetes/client-node';
import type { ControllerWriteSources } from '../admission/vcontrollerwrite.ts';
import type { PodIntentSources } from '../admission/vpodintent.ts';
import { rebuildJob } from './jobs/expected-job.ts';
import type { ManagerIdentity } from './jobs/operation-job.ts';
import { PtahObjects, readJob } from './runtime/kube.ts';
import { rebuildSnapshot } from './snapshot/expected-snapshot.ts';

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

export function controllerWriteSources(
  kubeConfig: k8s.KubeConfig,
  manager: ManagerIdentity,
  username: string,
  clock: () => Date = () => new Date(),
): { readonly writes: ControllerWriteSources; readonly pods: PodIntentSources } {
  const readers = {
    core: kubeConfig.makeApiClient(k8s.CoreV1Api),
    ptah: new PtahObjects(kubeConfig.makeApiClient(k8s.CustomObjectsApi)),
  };
  const batch = kubeConfig.makeApiClient(k8s.BatchV1Api);
  return {
    writes: {
      managerUsername: username,
      rebuildJob: (owner, job) => rebuildJob(readers, manager, owner, job, clock()),
      rebuildSnapshot: async (owner) => rebuildSnapshot(readers, owner),
    },
    pods: { readJob: (namespace, name) => readJob(batch, namespace, name) },
  };
}
