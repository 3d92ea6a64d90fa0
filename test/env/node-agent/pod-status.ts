import type { ContainerStateWire, ContainerStatusWire, PodConditionWire, PodStatusWire } from './types.ts';

/** What the agent knows about one container; the source of its status entry. */
export interface ContainerRecord {
  readonly name: string;
  readonly image: string;
  state: ContainerStateWire;
  lastState: ContainerStateWire;
  restartCount: number;
  containerID?: string;
  /** A readiness probe's verdict while the container runs; undefined when it has no probe. */
  probeReady?: boolean;
  /** False while a startup probe has not passed yet; undefined without one (started once running). */
  started?: boolean;
  /** No further start will happen: terminated for good under the restart policy, or killed. */
  final: boolean;
}

export interface PodRecord {
  readonly restartPolicy: 'Always' | 'OnFailure' | 'Never';
  readonly init: readonly ContainerRecord[];
  readonly main: readonly ContainerRecord[];
  readonly startTime: string;
  readonly hostIP: string;
  /** The Pod's own address, once its sandbox exists; a kubelet reports it from the CNI result. */
  podIP?: string;
  /** Volumes are set up and the first container may start: PodReadyToStartContainers. */
  sandboxReady: boolean;
  /** A pod-level failure such as DeadlineExceeded. */
  failure?: { readonly reason: string; readonly message: string };
}

const succeeded = (c: ContainerRecord) => c.state.terminated?.exitCode === 0;
/** Running and, if it has a readiness probe, passing it: what makes a Pod a Service endpoint. */
const isReady = (c: ContainerRecord) =>
  c.state.running !== undefined && c.started !== false && c.probeReady !== false;

export function podPhase(pod: PodRecord): NonNullable<PodStatusWire['phase']> {
  if (pod.failure) return 'Failed';
  if (pod.init.some((c) => c.final && !succeeded(c))) return 'Failed';
  if (!pod.init.every(succeeded)) return 'Pending';
  if (pod.main.some((c) => c.state.running)) return 'Running';
  if (pod.main.some((c) => c.state.waiting && c.restartCount === 0)) return 'Pending';
  if (!pod.main.every((c) => c.final)) return 'Running';
  return pod.main.every(succeeded) ? 'Succeeded' : 'Failed';
}

function statusOf(c: ContainerRecord, isInit: boolean): ContainerStatusWire {
  const running = c.state.running !== undefined;
  return {
    name: c.name,
    image: c.image,
    imageID: `ptah-node-agent://${c.image}`,
    ...(c.containerID ? { containerID: c.containerID } : {}),
    // An init container is "ready" once it has completed, as the kubelet reports it.
    ready: isInit ? succeeded(c) : isReady(c),
    started: running && c.started !== false,
    restartCount: c.restartCount,
    state: c.state,
    lastState: c.lastState,
  };
}

function condition(
  type: string,
  ok: boolean,
  previous: readonly PodConditionWire[],
  now: string,
  reason?: string,
  message?: string,
): PodConditionWire {
  const status = ok ? 'True' : 'False';
  const before = previous.find((c) => c.type === type);
  return {
    type,
    status,
    ...(!ok && reason ? { reason } : {}),
    ...(!ok && message ? { message } : {}),
    lastProbeTime: null,
    lastTransitionTime: before && before.status === status ? before.lastTransitionTime : now,
  };
}

const MANAGED = new Set(['PodReadyToStartContainers', 'Initialized', 'ContainersReady', 'Ready']);

/**
 * The pod status a kubelet would write for this record. Conditions the agent does not own
 * (PodScheduled from the scheduler, DisruptionTarget, ...) are carried over unchanged.
 */
export function buildPodStatus(
  pod: PodRecord,
  previous: PodStatusWire | undefined,
  now: string,
): PodStatusWire {
  const phase = podPhase(pod);
  const before = previous?.conditions ?? [];
  const completed = phase === 'Succeeded' || phase === 'Failed';
  const pendingInit = pod.init.filter((c) => !succeeded(c)).map((c) => c.name);
  const unready = pod.main.filter((c) => !isReady(c)).map((c) => c.name);
  const initialized = pendingInit.length === 0 || (completed && phase === 'Succeeded');
  const notReadyReason = completed ? 'PodCompleted' : 'ContainersNotReady';
  const notReadyMessage = completed ? undefined : `containers with unready status: [${unready.join(' ')}]`;
  const conditions = [
    ...before.filter((c) => !MANAGED.has(c.type)),
    condition('PodReadyToStartContainers', pod.sandboxReady && !completed, before, now),
    condition(
      'Initialized',
      initialized,
      before,
      now,
      'ContainersNotInitialized',
      `containers with incomplete status: [${pendingInit.join(' ')}]`,
    ),
    condition('Ready', unready.length === 0 && !completed, before, now, notReadyReason, notReadyMessage),
    condition(
      'ContainersReady',
      unready.length === 0 && !completed,
      before,
      now,
      notReadyReason,
      notReadyMessage,
    ),
  ];
  return {
    phase,
    ...(pod.failure ? { reason: pod.failure.reason, message: pod.failure.message } : {}),
    conditions,
    hostIP: pod.hostIP,
    hostIPs: [{ ip: pod.hostIP }],
    ...(pod.podIP ? { podIP: pod.podIP, podIPs: [{ ip: pod.podIP }] } : {}),
    startTime: pod.startTime,
    ...(pod.init.length > 0 ? { initContainerStatuses: pod.init.map((c) => statusOf(c, true)) } : {}),
    containerStatuses: pod.main.map((c) => statusOf(c, false)),
  };
}
