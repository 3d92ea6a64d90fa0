/**
 * Reads the result of a finished operation Job, of either family, from its Pod: the snapshot-check init container's refusal,
 * or the frame the runner wrote as its last stdout output, read through `pods/log`. Only a complete frame
 * bound to the claimed operation id is a result; everything else is "not arrived" or refused, never success.
 */
import type { CoreV1Api, V1Job, V1Pod } from '@kubernetes/client-node';
import { acceptFrame, decodeFrame, MAX_FRAME_PAYLOAD_BYTES } from '../../protocol/frame.ts';
import type { RunnerOperation, RunnerResult } from '../../protocol/result.ts';
import type { AnyOperationType, OperationClaim } from '../claims/claim.ts';
import { MAIN_CONTAINER, SNAPSHOT_CHECK_CONTAINER } from './operation-job.ts';
import { jobPods } from '../runtime/kube.ts';
import { FETCH_CONTAINER, GUARD_CONTAINER } from './oci-job-source.ts';
import { stripUserInfo } from '../../protocol/user-info.ts';

/** What the harvest needs of a claim, whichever family made it. */
type Claim = Pick<OperationClaim, 'type' | 'jobName' | 'operationId' | 'jobUID'>;

/** What the I/O layer found for the claimed Job. */
export type JobObservation =
  | { readonly state: 'absent' }
  | { readonly state: 'running'; readonly uid: string }
  | {
      readonly state: 'finished';
      readonly uid: string;
      readonly succeeded: boolean;
      readonly finishedAt?: string;
      /** The Job's Failed condition reason (DeadlineExceeded, BackoffLimitExceeded …), when it failed. */
      readonly failureReason?: string;
    };

/** The result of reading the claimed Job's Pod: only `accepted` is a result at all. */
export type Harvest =
  | { readonly kind: 'accepted'; readonly result: RunnerResult }
  /** The snapshot-check init container refused; the failing file is named, never its content. */
  | { readonly kind: 'snapshot-refused'; readonly file?: string }
  /**
   * A source's guard or fetch init container (OCI or Git) stopped the Pod before the operation container
   * started: which one, the runner's error code from its termination summary (`registry_grant_mismatch`,
   * `commit_unreachable`, `digest_mismatch` …), and the reason the runner gave, which for a Git fetch is the
   * last line Ptah wrote (one line, bounded, without URL user info).
   */
  | {
      readonly kind: 'source-refused';
      readonly container: string;
      readonly code?: string;
      readonly detail?: string;
    }
  /** A frame that is corrupt, for another claim, or absent from a finished container. */
  | { readonly kind: 'refused'; readonly message: string }
  /** The log could not be read right now (API error); try again shortly. */
  | { readonly kind: 'unavailable'; readonly message: string }
  /**
   * The node cannot start the operation container because the Secret or its key is missing
   * (CreateContainerConfigError): seen while the Job still runs, so nothing waits for its deadline. The
   * message names the Secret and key, never a value.
   */
  | { readonly kind: 'credential-unavailable'; readonly message: string }
  /** The node killed a container for exceeding its memory limit (terminated reason OOMKilled). */
  | { readonly kind: 'oom-killed'; readonly exitCode?: number };

export function observeJob(job: V1Job | undefined): JobObservation {
  if (job === undefined || job.metadata?.deletionTimestamp !== undefined) return { state: 'absent' };
  const uid = job.metadata?.uid ?? '';
  const conds = job.status?.conditions ?? [];
  const done = conds.find((c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True');
  if (done === undefined) return { state: 'running', uid };
  const finishedAt = done.lastTransitionTime ?? job.status?.completionTime;
  const failureReason =
    done.type === 'Failed' && typeof done.reason === 'string' && /^[A-Za-z]{1,64}$/.test(done.reason)
      ? done.reason
      : undefined;
  return {
    state: 'finished',
    uid,
    succeeded: done.type === 'Complete',
    ...(finishedAt !== undefined ? { finishedAt: new Date(finishedAt).toISOString() } : {}),
    ...(failureReason !== undefined ? { failureReason } : {}),
  };
}

const SUMMARY_MARKER = 'PTAH_RUNNER_SUMMARY_V1 ';

/** The failing file the snapshot check names in its termination summary, if it names one. */
export function failingFileOf(message: string | undefined): string | undefined {
  const file = summaryField(message, 'failingFile');
  return file?.slice(0, 256);
}

/** The runner's error code in a termination summary, when it is one (a fixed vocabulary, never text). */
export function errorCodeOf(message: string | undefined): string | undefined {
  const code = summaryField(message, 'errorCode');
  return code !== undefined && /^[a-z][a-z0-9_]{0,63}$/.test(code) ? code : undefined;
}

/** How much of the runner's reason reaches status: the runner bounds it to 512 characters too. */
const MAX_DETAIL_CHARS = 512;

/**
 * The reason the runner wrote into a termination summary, as one line fit for a condition message. The
 * runner redacted it with the credentials it holds; the manager holds none, so it removes what any URL's
 * user info would carry and every control character, and bounds the length.
 */
export function runnerDetailOf(message: string | undefined): string | undefined {
  const text = summaryField(message, 'message');
  if (text === undefined) return undefined;
  // eslint-disable-next-line no-control-regex
  const line = stripUserInfo(text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, ' ')).trim();
  if (line === '') return undefined;
  return line.length > MAX_DETAIL_CHARS ? `${line.slice(0, MAX_DETAIL_CHARS - 1)}…` : line;
}

function summaryField(message: string | undefined, field: string): string | undefined {
  if (message === undefined) return undefined;
  const line = message.split('\n').find((l) => l.startsWith(SUMMARY_MARKER));
  if (line === undefined) return undefined;
  try {
    const parsed = JSON.parse(line.slice(SUMMARY_MARKER.length)) as Record<string, unknown>;
    const value = parsed[field];
    return typeof value === 'string' ? value : undefined;
  } catch {
    return undefined;
  }
}

const RUNNER_OPERATION_OF: Readonly<Record<AnyOperationType, RunnerOperation>> = {
  Resolve: 'resolve',
  Verify: 'verify',
  Observe: 'observe',
  Plan: 'plan',
  Apply: 'apply',
  History: 'migration-history',
};

/** The runner operation a claim runs; a migration's Apply is `migration-apply`, which its reconciler names. */
export function runnerOperation(claim: Claim): RunnerOperation {
  return RUNNER_OPERATION_OF[claim.type];
}

/**
 * How much of an operation container's log is read: the largest frame, with its header and end marker, and
 * 1 MiB for the runner's own lines and a child's diagnostics (bounded to 64 KiB by default). A longer log
 * is not a runner's, and no more of it is held in the manager's memory.
 */
export const POD_LOG_LIMIT_BYTES = MAX_FRAME_PAYLOAD_BYTES + 1024 * 1024;

/** Judges one Pod and its main container's log (undefined when the log could not be read). */
export function harvestPod(
  pod: V1Pod,
  log: string | undefined,
  claim: Claim,
  operation: RunnerOperation = runnerOperation(claim),
): Harvest {
  const init = pod.status?.initContainerStatuses?.find((c) => c.name === SNAPSHOT_CHECK_CONTAINER);
  const initExit = init?.state?.terminated?.exitCode;
  if (initExit !== undefined && initExit !== 0) {
    const file = failingFileOf(init?.state?.terminated?.message);
    return { kind: 'snapshot-refused', ...(file !== undefined ? { file } : {}) };
  }
  for (const name of [GUARD_CONTAINER, FETCH_CONTAINER]) {
    const source = pod.status?.initContainerStatuses?.find((c) => c.name === name);
    const terminated = source?.state?.terminated;
    if (terminated !== undefined && terminated.exitCode !== 0 && terminated.reason !== 'OOMKilled') {
      const code = errorCodeOf(terminated.message);
      const detail = runnerDetailOf(terminated.message);
      return {
        kind: 'source-refused',
        container: name,
        ...(code !== undefined ? { code } : {}),
        ...(detail !== undefined ? { detail } : {}),
      };
    }
  }
  const main = pod.status?.containerStatuses?.find((c) => c.name === MAIN_CONTAINER);
  // Killed by the node for its memory: whatever the log holds was cut off mid-run.
  for (const killed of [init, main]) {
    if (killed?.state?.terminated?.reason === 'OOMKilled') {
      const exitCode = killed.state.terminated.exitCode;
      return { kind: 'oom-killed', ...(Number.isSafeInteger(exitCode) ? { exitCode } : {}) };
    }
  }
  if (main?.state?.terminated === undefined) {
    return { kind: 'refused', message: 'the operation container never finished' };
  }
  if (log === undefined) return { kind: 'unavailable', message: 'the container log could not be read' };
  if (Buffer.byteLength(log, 'utf8') >= POD_LOG_LIMIT_BYTES) {
    // Read to the limit: the end of the log, where the frame is, was not read, and is not guessed at.
    return {
      kind: 'refused',
      message: `the operation container's log is longer than ${POD_LOG_LIMIT_BYTES} bytes; its result frame was not read`,
    };
  }
  const accepted = acceptFrame(decodeFrame(log), {
    operation,
    operationId: claim.operationId,
  });
  if (accepted.accepted) return { kind: 'accepted', result: accepted.result };
  return { kind: 'refused', message: accepted.message };
}

const DATABASE_URL_ENV = 'PTAH_DB_URL';

/**
 * The operation container waits with CreateContainerConfigError because the database URL's Secret or key
 * is missing: the cause, naming both (from the Pod's own spec, never the Secret), or undefined. The kubelet's
 * message is matched, not copied, so nothing else it might say reaches status.
 */
export function credentialUnavailable(pod: V1Pod): Harvest | undefined {
  const status = pod.status?.containerStatuses?.find((c) => c.name === MAIN_CONTAINER);
  const waiting = status?.state?.waiting;
  if (waiting?.reason !== 'CreateContainerConfigError') return undefined;
  const container = pod.spec?.containers.find((c) => c.name === MAIN_CONTAINER);
  const ref = container?.env?.find((e) => e.name === DATABASE_URL_ENV)?.valueFrom?.secretKeyRef;
  if (ref?.name === undefined) return undefined;
  const namespace = pod.metadata?.namespace ?? '';
  const text = (waiting.message ?? '').slice(0, 512);
  const where = `Secret ${namespace}/${ref.name} key ${ref.key}`;
  if (text === `secret "${ref.name}" not found`) {
    return { kind: 'credential-unavailable', message: `${where}: the Secret does not exist` };
  }
  if (text === `couldn't find key ${ref.key} in Secret ${namespace}/${ref.name}`) {
    return { kind: 'credential-unavailable', message: `${where}: the Secret has no such key` };
  }
  return undefined;
}

/**
 * While the claimed Job runs: whether its Pod is stuck on a missing credential (undefined when it is not, or
 * when the Pods cannot be listed right now; the Job's own end is then awaited as before).
 */
export async function blockedJob(
  core: CoreV1Api,
  namespace: string,
  claim: Claim,
  jobUid: string,
): Promise<Harvest | undefined> {
  let pods: V1Pod[];
  try {
    pods = await jobPods(core, namespace, { name: claim.jobName, uid: jobUid });
  } catch {
    return undefined;
  }
  return pods.length === 1 ? credentialUnavailable(pods[0]!) : undefined;
}

/**
 * Reads the result from the one Pod the claimed Job (this UID, not merely this name) controls; `jobUid` is the
 * Job found under the claimed name, which must be the one the claim recorded once it has recorded one.
 */
export async function harvestJob(
  core: CoreV1Api,
  namespace: string,
  claim: Claim,
  jobUid: string,
  operation: RunnerOperation = runnerOperation(claim),
): Promise<Harvest> {
  // Once the claim has recorded its Job, a Job of another UID under that name is someone else's object.
  if (claim.jobUID !== undefined && claim.jobUID !== jobUid) {
    return { kind: 'refused', message: 'the Job under the claimed name is not the Job the claim recorded' };
  }
  let pods: V1Pod[];
  try {
    pods = await jobPods(core, namespace, { name: claim.jobName, uid: jobUid });
  } catch {
    return { kind: 'unavailable', message: 'the Pods of the Job could not be listed' };
  }
  if (pods.length === 0) return { kind: 'refused', message: 'the Job has no Pod' };
  // backoffLimit 0: one Pod per Job. More than one means something else ran; its result cannot be trusted.
  if (pods.length > 1) return { kind: 'refused', message: 'the Job ran more than one Pod' };
  const pod = pods[0]!;
  let log: string | undefined;
  const main = pod.status?.containerStatuses?.find((c) => c.name === MAIN_CONTAINER);
  if (main?.state?.terminated !== undefined) {
    try {
      log = await core.readNamespacedPodLog({
        namespace,
        name: pod.metadata!.name!,
        container: MAIN_CONTAINER,
        limitBytes: POD_LOG_LIMIT_BYTES,
      });
    } catch {
      log = undefined;
    }
  }
  return harvestPod(pod, log, claim, operation);
}
