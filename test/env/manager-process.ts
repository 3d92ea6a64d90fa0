import { builtProgram } from './build-output.ts';
import { startProcess, type ManagedProcess } from './process.ts';

/** What a locally run manager needs; each field becomes one of the variables docs/operator.md lists. */
export interface ManagerProcessOptions {
  readonly kubeconfig: string;
  readonly coordinationNamespace: string;
  readonly runnerImage: string;
  readonly identity: string;
  readonly leaderLeaseSeconds: number;
  readonly webhook: { readonly certFile: string; readonly keyFile: string; readonly port: number };
  readonly logFile: string;
  readonly logLevel?: string;
  readonly extraEnv?: Readonly<Record<string, string>>;
}

/** The Node flags the chart runs the manager with (deploy/helm/ptah-operator/values.yaml, `command`). */
export const MANAGER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=1', '--optimize-for-size'];

/**
 * Starts the compiled manager (dist/ptah-operator.mjs, what the image runs) as its own process with only the variables it is meant to see: the
 * tests and the demo run the manager exactly as a Deployment would, with the manager ServiceAccount's
 * kubeconfig and nothing of the caller's environment but PATH.
 */
export function startManagerProcess(options: ManagerProcessOptions): ManagedProcess {
  return startProcess(
    'ptah-operator',
    process.execPath,
    [...MANAGER_NODE_FLAGS, builtProgram('ptah-operator')],
    options.logFile,
    {
      env: {
        PATH: process.env['PATH'] ?? '',
        KUBECONFIG: options.kubeconfig,
        PTAH_COORDINATION_NAMESPACE: options.coordinationNamespace,
        PTAH_RUNNER_IMAGE: options.runnerImage,
        PTAH_MANAGER_IDENTITY: options.identity,
        PTAH_LEADER_LEASE_SECONDS: String(options.leaderLeaseSeconds),
        ...(options.logLevel !== undefined ? { PTAH_LOG_LEVEL: options.logLevel } : {}),
        PTAH_WEBHOOK_CERT_FILE: options.webhook.certFile,
        PTAH_WEBHOOK_KEY_FILE: options.webhook.keyFile,
        PTAH_WEBHOOK_PORT: String(options.webhook.port),
        ...options.extraEnv,
      },
    },
  );
}
