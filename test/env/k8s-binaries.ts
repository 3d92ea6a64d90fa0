import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface KubernetesBinaries {
  readonly etcd: string;
  readonly apiserver: string;
  readonly controllerManager: string;
  readonly scheduler: string;
  /** The client, at the control plane's version, for tests and people. */
  readonly kubectl: string;
}

const NAMES = ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kubectl'] as const;

function inDirectory(dir: string): KubernetesBinaries {
  for (const name of NAMES) {
    if (!existsSync(join(dir, name))) throw new Error(`k8s binaries: ${name} is missing from ${dir}`);
  }
  return {
    etcd: join(dir, 'etcd'),
    apiserver: join(dir, 'kube-apiserver'),
    controllerManager: join(dir, 'kube-controller-manager'),
    scheduler: join(dir, 'kube-scheduler'),
    kubectl: join(dir, 'kubectl'),
  };
}

/**
 * Finds the Go-built control-plane binaries: PTAH_K8S_BIN when scripts/setup.sh exported it,
 * else the build script, which returns the cached directory at once when it is already built
 * (and builds it, taking minutes, when it is not).
 */
export function findKubernetesBinaries(): KubernetesBinaries {
  const fromEnv = process.env['PTAH_K8S_BIN'];
  if (fromEnv) return inDirectory(fromEnv);
  const script = fileURLToPath(new URL('./build-binaries.sh', import.meta.url));
  const output = execFileSync('bash', [script], { stdio: ['ignore', 'pipe', 'inherit'] }).toString();
  const dir = output.trim().split('\n').pop() ?? '';
  return inDirectory(dir);
}
