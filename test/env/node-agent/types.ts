import type { V1PodSpec } from '@kubernetes/client-node';

/**
 * Pods as the API server sends them over the wire. The generated client's V1Pod types turn
 * timestamps into Date objects, which raw JSON never holds, so metadata and status are declared
 * here and only the spec (no timestamps) borrows the generated types.
 */
export interface PodMetadata {
  name: string;
  namespace: string;
  uid: string;
  resourceVersion?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
}

export interface ContainerStateWire {
  waiting?: { reason: string; message?: string };
  running?: { startedAt: string };
  terminated?: {
    exitCode: number;
    signal?: number;
    reason: string;
    message?: string;
    startedAt: string;
    finishedAt: string;
    containerID?: string;
  };
}

export interface ContainerStatusWire {
  name: string;
  image: string;
  imageID: string;
  containerID?: string;
  ready: boolean;
  started: boolean;
  restartCount: number;
  state: ContainerStateWire;
  lastState: ContainerStateWire;
}

export interface PodConditionWire {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  message?: string;
  lastProbeTime: null;
  lastTransitionTime: string;
}

export interface PodStatusWire {
  phase?: 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';
  reason?: string;
  message?: string;
  conditions?: PodConditionWire[];
  hostIP?: string;
  hostIPs?: { ip: string }[];
  podIP?: string;
  podIPs?: { ip: string }[];
  startTime?: string;
  initContainerStatuses?: ContainerStatusWire[];
  containerStatuses?: ContainerStatusWire[];
}

export interface Pod {
  metadata: PodMetadata;
  spec: V1PodSpec;
  status?: PodStatusWire;
}

export interface KeyedData {
  metadata: { name: string; namespace: string };
  data?: Record<string, string>;
  binaryData?: Record<string, string>;
}
