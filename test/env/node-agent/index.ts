import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiError, createApiClient, type ApiClient, type WatchEvent } from './api-client.ts';
import { realHost } from './host-view.ts';
import { startKubeletServer } from './kubelet-server.ts';
import { HEARTBEAT_MS, heartbeat, registerNode, type NodeIdentity } from './node-registration.ts';
import { openPodNetwork, type PodNetwork } from './pod-network.ts';
import { PodWorker } from './pod-worker.ts';
import type { Pod } from './types.ts';

export interface NodeAgentOptions {
  /** Credentials of the node identity, system:node:<nodeName> in group system:nodes. */
  readonly kubeconfig: string;
  readonly nodeName?: string;
  /** Serving certificate for the kubelet API; must be valid for 127.0.0.1. */
  readonly servingCert: { readonly certFile: string; readonly keyFile: string };
  /** CA whose client certificates (the API server's) may call the kubelet API. */
  readonly caFile: string;
  /** JSON `{ "images": { "<ref>": { "entrypoint": [...], "workingDir"?, "env"? } } }`, re-read on use. */
  readonly imageMapFile: string;
  /** Pods' volumes, logs and mount scratch go here, one directory per pod uid; removed on stop. */
  readonly workDir: string;
}

export interface NodeAgent {
  readonly nodeName: string;
  readonly port: number;
  stop(): Promise<void>;
}

const HOST_IP = '127.0.0.1';
/** The OOM hook's selector file in the work directory (see PodWorkerDeps.oomKillFile). */
export const OOM_KILL_FILE = 'oom-kill';
const SHUTDOWN_GRACE_SECONDS = 2;

function isTerminal(pod: Pod): boolean {
  return pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed';
}

/** Keeps the pod workers in step with the pods bound to this node, through list + watch. */
class PodSync {
  private readonly workers = new Map<string, PodWorker>();

  constructor(
    private readonly api: ApiClient,
    private readonly nodeName: string,
    private readonly workDir: string,
    private readonly imageMapFile: string,
    private readonly network: PodNetwork,
  ) {}

  find(namespace: string, name: string): PodWorker | undefined {
    const matches = [...this.workers.values()].filter((w) => w.matches(namespace, name));
    return matches.at(-1);
  }

  async run(signal: AbortSignal): Promise<void> {
    const selector = encodeURIComponent(`spec.nodeName=${this.nodeName}`);
    while (!signal.aborted) {
      try {
        const list = await this.api.get<{ metadata: { resourceVersion: string }; items: Pod[] }>(
          `/api/v1/pods?fieldSelector=${selector}`,
        );
        const seen = new Set(list.items.map((p) => p.metadata.uid));
        for (const [uid, worker] of this.workers) if (!seen.has(uid)) worker.forget();
        for (const pod of list.items) this.observe(pod);
        let resourceVersion = list.metadata.resourceVersion;
        let expired = false;
        while (!signal.aborted && !expired) {
          await this.api.watch(
            `/api/v1/pods?watch=true&allowWatchBookmarks=true&timeoutSeconds=300&fieldSelector=${selector}&resourceVersion=${resourceVersion}`,
            (event: WatchEvent) => {
              if (event.type === 'ERROR') {
                expired = true;
                return;
              }
              const pod = event.object as unknown as Pod;
              resourceVersion = pod.metadata.resourceVersion ?? resourceVersion;
              if (event.type === 'BOOKMARK') return;
              if (event.type === 'DELETED') this.workers.get(pod.metadata.uid)?.forget();
              else this.observe(pod);
            },
            signal,
          );
        }
      } catch (error) {
        if (signal.aborted) return;
        if (!(error instanceof ApiError && error.status === 410)) {
          console.error(`node-agent: pod watch: ${(error as Error).message}`);
        }
        await sleep(1000, undefined, { signal }).catch(() => undefined);
      }
    }
  }

  private observe(pod: Pod): void {
    const existing = this.workers.get(pod.metadata.uid);
    if (existing) return existing.update(pod);
    if (isTerminal(pod)) {
      // Finished before this agent started: nothing to run, but a deletion still needs the
      // node's final delete.
      if (pod.metadata.deletionTimestamp) void this.deleteNow(pod);
      return;
    }
    const uid = pod.metadata.uid;
    const podDir = join(this.workDir, 'pods', uid);
    mkdirSync(podDir, { recursive: true });
    const worker = new PodWorker(pod, {
      api: this.api,
      hostIP: HOST_IP,
      network: this.network,
      imageMapFile: this.imageMapFile,
      podDir,
      host: realHost,
      apiServer: new URL(this.api.server),
      onGone: () => this.workers.delete(uid),
      oomKillFile: join(this.workDir, OOM_KILL_FILE),
    });
    this.workers.set(uid, worker);
    worker.run().catch((error: unknown) => {
      console.error(
        `node-agent: pod ${pod.metadata.namespace}/${pod.metadata.name}: ${(error as Error).stack}`,
      );
    });
    if (pod.metadata.deletionTimestamp) worker.update(pod);
  }

  private async deleteNow(pod: Pod): Promise<void> {
    const { namespace, name, uid } = pod.metadata;
    await this.api
      .send('DELETE', `/api/v1/namespaces/${namespace}/pods/${name}`, {
        gracePeriodSeconds: 0,
        preconditions: { uid },
      })
      .catch(() => undefined);
  }

  async shutdown(): Promise<void> {
    await Promise.all([...this.workers.values()].map((w) => w.shutdown(SHUTDOWN_GRACE_SECONDS)));
  }
}

/**
 * Starts the local stand-in for a kubelet: registers a Ready Node, serves the kubelet API,
 * heartbeats, and runs the pods bound to the node as local processes.
 */
export async function startNodeAgent(options: NodeAgentOptions): Promise<NodeAgent> {
  const nodeName = options.nodeName ?? 'ptah-node';
  mkdirSync(join(options.workDir, 'pods'), { recursive: true });
  const api = await createApiClient(options.kubeconfig);
  const network = openPodNetwork(HOST_IP, (why) =>
    console.error(`node-agent: Pods share the host's address ${HOST_IP}: ${why}`),
  );
  const sync = new PodSync(api, nodeName, options.workDir, options.imageMapFile, network);
  const { server, port } = await startKubeletServer({
    ...options.servingCert,
    caFile: options.caFile,
    findPod: (namespace, name) => sync.find(namespace, name),
  });
  const identity: NodeIdentity = { nodeName, hostIP: HOST_IP, kubeletPort: port };
  let nodeUid: string;
  try {
    nodeUid = await registerNode(api, identity);
    await heartbeat(api, identity, nodeUid);
  } catch (error) {
    server.close();
    api.close();
    network.close();
    throw error;
  }
  const stopping = new AbortController();
  const beat = setInterval(() => {
    heartbeat(api, identity, nodeUid).catch((error: unknown) => {
      if (!stopping.signal.aborted) console.error(`node-agent: heartbeat: ${(error as Error).message}`);
    });
  }, HEARTBEAT_MS);
  const watching = sync.run(stopping.signal);
  let stopped: Promise<void> | undefined;
  return {
    nodeName,
    port,
    stop() {
      stopped ??= (async () => {
        stopping.abort();
        clearInterval(beat);
        await sync.shutdown();
        await watching;
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
        api.close();
        network.close();
        rmSync(join(options.workDir, 'pods'), { recursive: true, force: true });
      })();
      return stopped;
    },
  };
}
