import { cpus, totalmem, hostname, release } from 'node:os';
import { ApiError, type ApiClient } from './api-client.ts';

export interface NodeIdentity {
  readonly nodeName: string;
  readonly hostIP: string;
  readonly kubeletPort: number;
}

const LEASE_SECONDS = 40;
export const HEARTBEAT_MS = 10_000;

/** MicroTime as the API server parses it: exactly six fractional digits. */
function microTime(date = new Date()): string {
  return date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

function seconds(date = new Date()): string {
  return date.toISOString().replace(/\.\d+Z$/, 'Z');
}

function conditions(now: string) {
  const condition = (type: string, status: string, reason: string, message: string) => ({
    type,
    status,
    reason,
    message,
    lastHeartbeatTime: now,
    lastTransitionTime: now,
  });
  return [
    condition(
      'MemoryPressure',
      'False',
      'KubeletHasSufficientMemory',
      'kubelet has sufficient memory available',
    ),
    condition('DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'),
    condition('PIDPressure', 'False', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'),
    condition('Ready', 'True', 'KubeletReady', 'kubelet is posting ready status'),
  ];
}

function nodeStatus(identity: NodeIdentity, kubeletVersion: string) {
  const resources = {
    cpu: String(cpus().length),
    memory: `${Math.floor(totalmem() / 1024)}Ki`,
    pods: '110',
    'ephemeral-storage': '10Gi',
  };
  return {
    capacity: resources,
    allocatable: resources,
    conditions: conditions(seconds()),
    addresses: [
      { type: 'InternalIP', address: identity.hostIP },
      { type: 'Hostname', address: identity.nodeName },
    ],
    daemonEndpoints: { kubeletEndpoint: { Port: identity.kubeletPort } },
    nodeInfo: {
      machineID: '',
      systemUUID: '',
      bootID: '',
      kernelVersion: release(),
      osImage: `ptah local node agent on ${hostname()}`,
      containerRuntimeVersion: 'ptah-node-agent://0.1.0',
      kubeletVersion,
      kubeProxyVersion: '',
      operatingSystem: 'linux',
      architecture: process.arch === 'x64' ? 'amd64' : process.arch,
    },
  };
}

/**
 * Creates the Node (or refreshes it when it survived an earlier agent), with status, as the
 * kubelet's registerWithAPIServer does. Returns the Node's uid for the Lease's owner reference.
 */
export async function registerNode(api: ApiClient, identity: NodeIdentity): Promise<string> {
  const version = await api.get<{ gitVersion?: string }>('/version').catch(() => ({ gitVersion: undefined }));
  const status = nodeStatus(identity, version.gitVersion ?? 'v0.0.0');
  const node = {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: identity.nodeName,
      labels: {
        'kubernetes.io/hostname': identity.nodeName,
        'kubernetes.io/os': 'linux',
        'kubernetes.io/arch': status.nodeInfo.architecture,
      },
    },
    spec: {},
    status,
  };
  try {
    const created = await api.send<{ metadata: { uid: string } }>('POST', '/api/v1/nodes', node);
    return created.metadata.uid;
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 409)) throw error;
  }
  const updated = await api.send<{ metadata: { uid: string } }>(
    'PATCH',
    `/api/v1/nodes/${identity.nodeName}/status`,
    { status },
    'application/strategic-merge-patch+json',
  );
  return updated.metadata.uid;
}

/** The periodic proof of life: Ready heartbeat in Node status and a renewed node Lease. */
export async function heartbeat(api: ApiClient, identity: NodeIdentity, nodeUid: string): Promise<void> {
  await api.send(
    'PATCH',
    `/api/v1/nodes/${identity.nodeName}/status`,
    { status: { conditions: conditions(seconds()).map(({ lastTransitionTime: _, ...c }) => c) } },
    'application/strategic-merge-patch+json',
  );
  const path = `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${identity.nodeName}`;
  const spec = {
    holderIdentity: identity.nodeName,
    leaseDurationSeconds: LEASE_SECONDS,
    renewTime: microTime(),
  };
  try {
    const lease = await api.get<{ metadata: Record<string, unknown>; spec: Record<string, unknown> }>(path);
    await api.send('PUT', path, { ...lease, spec: { ...lease.spec, ...spec } });
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 404)) throw error;
    await api.send('POST', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases', {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        name: identity.nodeName,
        namespace: 'kube-node-lease',
        ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: identity.nodeName, uid: nodeUid }],
      },
      spec,
    });
  }
}
