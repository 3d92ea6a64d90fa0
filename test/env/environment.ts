import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as k8s from '@kubernetes/client-node';
import { redact } from '../../src/engine/database-url.ts';
import { phaseTimer, startControlPlane, type ControlPlane } from './controlplane.ts';
import { startGitServer, type GitServer } from './git-server.ts';
import { startMariadb, type MariadbServer } from './mariadb.ts';
import { startPostgres, type PostgresServer } from './postgres.ts';
import { startRegistry, type RegistryServer } from './registry.ts';
import { waitUntil } from './process.ts';

/** The node agent's contract (test/env/node-agent/index.ts), loaded only when that module exists. */
export interface NodeAgent {
  readonly nodeName: string;
  readonly port: number;
  stop(): Promise<void>;
}

interface NodeAgentModule {
  startNodeAgent(options: {
    kubeconfig: string;
    nodeName: string;
    servingCert: { certFile: string; keyFile: string };
    caFile: string;
    imageMapFile: string;
    workDir: string;
  }): Promise<NodeAgent>;
}

const NODE_AGENT_MODULE = new URL('./node-agent/index.ts', import.meta.url);

export function nodeAgentAvailable(): boolean {
  return existsSync(fileURLToPath(NODE_AGENT_MODULE));
}

export type Component = 'node' | 'postgres' | 'mariadb' | 'registry' | 'git';
export const COMPONENTS: readonly Component[] = ['node', 'postgres', 'mariadb', 'registry', 'git'];

export interface StartEnvironmentOptions {
  /** Where everything lives; a new temporary directory by default. stop() removes it. */
  readonly dir?: string;
  /** Components besides the control plane (always started); all of them by default. */
  readonly components?: readonly Component[];
  /** Image reference → local program map for the node agent; a fresh one in `dir` by default. */
  readonly imageMapFile?: string;
}

/** Everything a client needs to reach the environment. The file form may hold passwords; it is 0600. */
export interface EnvironmentDescription {
  readonly dir: string;
  readonly server: string;
  readonly caFile: string;
  readonly kubeconfigs: ControlPlane['kubeconfigs'];
  readonly identities: ControlPlane['identities'];
  readonly testNamespace: string;
  readonly imageMapFile: string;
  readonly node?: { readonly name: string; readonly port: number };
  readonly postgres?: {
    readonly host: string;
    readonly port: number;
    readonly adminUrl: string;
    readonly logFile: string;
  };
  readonly mariadb?: {
    readonly host: string;
    readonly port: number;
    readonly adminUrl: string;
    readonly logFile: string;
  };
  readonly registry?: {
    readonly host: string;
    readonly url: string;
    readonly caFile?: string;
    readonly auth?: { readonly username: string; readonly password: string };
  };
  readonly git?: {
    readonly httpBaseUrl: string;
    readonly sshHost: string;
    readonly sshPort: number;
    readonly sshUser: string;
    readonly knownHosts: string;
    readonly clientKeyFile: string;
    readonly projectRoot: string;
  };
  /** Every process started on the environment's behalf (the node agent runs inside its owner). */
  readonly processes: readonly { readonly name: string; readonly pid: number }[];
  /** Every loopback port something listens on. */
  readonly ports: readonly number[];
}

export interface Environment {
  readonly dir: string;
  /** env.json, mode 0600 */
  readonly envFile: string;
  readonly description: EnvironmentDescription;
  readonly controlPlane: ControlPlane;
  readonly nodeAgent?: NodeAgent;
  readonly postgres?: PostgresServer;
  readonly mariadb?: MariadbServer;
  readonly registry?: RegistryServer;
  readonly git?: GitServer;
  stop(): Promise<void>;
}

/** The description with passwords and URL credentials removed, safe to print or log. */
export function printableDescription(description: EnvironmentDescription): EnvironmentDescription {
  const secrets = [
    description.postgres?.adminUrl,
    description.mariadb?.adminUrl,
    description.registry?.auth?.password,
  ].filter((s): s is string => s !== undefined);
  const copy = JSON.parse(JSON.stringify(description)) as {
    registry?: { auth?: { username: string; password: string } };
  };
  if (copy.registry?.auth) copy.registry.auth.password = '***';
  return JSON.parse(redact(JSON.stringify(copy), secrets)) as EnvironmentDescription;
}

function portOf(url: string): number {
  const parsed = new URL(url);
  return Number(parsed.port || (parsed.protocol === 'https:' ? 443 : 80));
}

/**
 * A new Node carries the not-ready taint until the node lifecycle controller sees it Ready; a Pod
 * created before then waits out the scheduler's back-off, so the environment is ready only after.
 */
async function waitForSchedulableNode(adminKubeconfig: string, nodeName: string): Promise<void> {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(adminKubeconfig);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await waitUntil(
    `node ${nodeName} Ready and untainted`,
    async () => {
      const node = await core.readNode({ name: nodeName });
      const ready = node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
      const blocking = (node.spec?.taints ?? []).filter((t) => t.effect !== 'PreferNoSchedule');
      return ready === true && blocking.length === 0 && node.spec?.unschedulable !== true;
    },
    { timeoutMs: 60_000, intervalMs: 200 },
  );
}

export async function startEnvironment(options: StartEnvironmentOptions = {}): Promise<Environment> {
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'ptah-env-'));
  mkdirSync(dir, { recursive: true });
  // Database servers run as their own system users and must traverse into their data directories;
  // secrets inside stay protected by their own modes (kubeconfigs 0700 dir, env.json 0600).
  chmodSync(dir, 0o755);
  const wanted = new Set(options.components ?? COMPONENTS);
  if (wanted.has('node') && !nodeAgentAvailable()) {
    throw new Error('environment: the node agent (test/env/node-agent/index.ts) is not available yet');
  }
  const imageMapFile = options.imageMapFile ?? join(dir, 'images.json');
  if (!existsSync(imageMapFile)) writeFileSync(imageMapFile, JSON.stringify({ images: {} }, null, 2) + '\n');

  // The slow parts start together; each stops whatever of its own it started if it fails.
  const stoppers: (() => Promise<void>)[] = [];
  const begin = <T extends { stop(): Promise<void> }>(start: () => Promise<T>): Promise<T> =>
    start().then((started) => {
      stoppers.push(() => started.stop());
      return started;
    });
  const maybe = <T extends { stop(): Promise<void> }>(component: Component, start: () => Promise<T>) =>
    wanted.has(component) ? begin(start) : Promise.resolve(undefined);

  const mark = phaseTimer('environment');
  const timed = <T>(what: string, promise: Promise<T>): Promise<T> =>
    promise.then((value) => {
      mark(`${what} up`);
      return value;
    });
  const results = await Promise.allSettled([
    timed(
      'control plane',
      begin(() => startControlPlane({ dir: join(dir, 'controlplane') })),
    ),
    timed(
      'postgres',
      maybe('postgres', () => startPostgres({ baseDir: join(dir, 'postgres') })),
    ),
    timed(
      'mariadb',
      maybe('mariadb', () => startMariadb({ baseDir: join(dir, 'mariadb') })),
    ),
    timed(
      'registry',
      maybe('registry', () => startRegistry({ dir: join(dir, 'registry') })),
    ),
    timed(
      'git',
      maybe('git', () => startGitServer({ dir: join(dir, 'git') })),
    ),
  ]);
  const stopAll = async (): Promise<void> => {
    // Reverse order: the node agent (started last) goes before the API server it talks to.
    for (const stop of stoppers.reverse()) await stop().catch(() => undefined);
  };
  const failure = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failure) {
    await stopAll();
    throw failure.reason;
  }
  const [controlPlane, postgres, mariadb, registry, git] = results.map((r) =>
    r.status === 'fulfilled' ? r.value : undefined,
  ) as [ControlPlane, PostgresServer?, MariadbServer?, RegistryServer?, GitServer?];

  let nodeAgent: NodeAgent | undefined;
  if (wanted.has('node')) {
    try {
      const agentModule = (await import(NODE_AGENT_MODULE.href)) as NodeAgentModule;
      const workDir = join(dir, 'node');
      mkdirSync(workDir, { recursive: true });
      nodeAgent = await begin(() =>
        agentModule.startNodeAgent({
          kubeconfig: controlPlane.kubeconfigs.node,
          nodeName: controlPlane.nodeName,
          servingCert: controlPlane.nodeServing,
          caFile: controlPlane.caFile,
          imageMapFile,
          workDir,
        }),
      );
      mark('node agent registered');
      await waitForSchedulableNode(controlPlane.kubeconfigs.admin, controlPlane.nodeName);
      mark('node Ready and schedulable');
    } catch (error) {
      await stopAll();
      throw error;
    }
  }

  const processes = [
    ...controlPlane.processes.map((p) => ({ name: p.name, pid: p.pid })),
    ...(postgres ? [{ name: 'postgres', pid: postgres.pid }] : []),
    ...(mariadb ? [{ name: 'mariadb', pid: mariadb.pid }] : []),
    ...(registry ? [{ name: 'registry', pid: registry.pid }] : []),
    ...(git ? [{ name: 'git-sshd', pid: git.sshdPid }] : []),
  ];
  const ports = [
    ...controlPlane.ports,
    ...(nodeAgent ? [nodeAgent.port] : []),
    ...(postgres ? [postgres.port] : []),
    ...(mariadb ? [mariadb.port] : []),
    ...(registry ? [portOf(registry.url)] : []),
    ...(git ? [portOf(git.httpBaseUrl), git.sshPort] : []),
  ];
  const description: EnvironmentDescription = {
    dir,
    server: controlPlane.server,
    caFile: controlPlane.caFile,
    kubeconfigs: controlPlane.kubeconfigs,
    identities: controlPlane.identities,
    testNamespace: controlPlane.testNamespace,
    imageMapFile,
    ...(nodeAgent ? { node: { name: nodeAgent.nodeName, port: nodeAgent.port } } : {}),
    ...(postgres
      ? {
          postgres: {
            host: postgres.host,
            port: postgres.port,
            adminUrl: postgres.adminUrl,
            logFile: postgres.logFile,
          },
        }
      : {}),
    ...(mariadb
      ? {
          mariadb: {
            host: mariadb.host,
            port: mariadb.port,
            adminUrl: mariadb.adminUrl,
            logFile: mariadb.logFile,
          },
        }
      : {}),
    ...(registry
      ? {
          registry: {
            host: registry.host,
            url: registry.url,
            ...(registry.caFile ? { caFile: registry.caFile } : {}),
            ...(registry.auth ? { auth: registry.auth } : {}),
          },
        }
      : {}),
    ...(git
      ? {
          git: {
            httpBaseUrl: git.httpBaseUrl,
            sshHost: git.sshHost,
            sshPort: git.sshPort,
            sshUser: git.sshUser,
            knownHosts: git.knownHosts,
            clientKeyFile: git.clientKeyFile,
            projectRoot: git.projectRoot,
          },
        }
      : {}),
    processes,
    ports,
  };
  const envFile = join(dir, 'env.json');
  writeFileSync(envFile, JSON.stringify(description, null, 2) + '\n', { mode: 0o600 });

  let stopped = false;
  return {
    dir,
    envFile,
    description,
    controlPlane,
    ...(nodeAgent ? { nodeAgent } : {}),
    ...(postgres ? { postgres } : {}),
    ...(mariadb ? { mariadb } : {}),
    ...(registry ? { registry } : {}),
    ...(git ? { git } : {}),
    async stop() {
      if (stopped) return;
      stopped = true;
      await stopAll();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
