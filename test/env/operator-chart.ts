/**
 * Installs the operator as a platform team would: `helm install` of deploy/helm/ptah-operator with the
 * operator image (test/env/operator-image.ts) as both the manager's and the operation Pods' image. The
 * Deployment's Pods then run on the node agent from the compiled bundles, with their ServiceAccount
 * token and CA projected, and the API server calls the webhooks through the chart's Service.
 */
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { registerOperatorImage } from './operator-image.ts';
import { findPackagingTools } from './tools.ts';

export const CHART = fileURLToPath(new URL('../../deploy/helm/ptah-operator', import.meta.url));
export const OPERATOR_REPOSITORY = 'ptah.local/ptah-operator';

export interface HelmRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export interface OperatorChart {
  readonly release: string;
  readonly namespace: string;
  /** The image digest the release runs now. */
  digest: string;
  /** helm with this release's kubeconfig and a private HOME. */
  helm(args: readonly string[]): Promise<HelmRun>;
  /**
   * `helm upgrade` to the same build under a new digest (a rebuilt image), waiting for the rollout; or, with
   * `build`, to another release's bundles and chart (test/env/operator-build.ts).
   */
  upgradeImage(
    salt: string,
    options?: {
      readonly set?: readonly string[];
      readonly build?: { readonly dist: string; readonly chart: string };
    },
  ): Promise<HelmRun>;
  uninstall(): Promise<HelmRun>;
}

export interface OperatorChartOptions {
  readonly kubeconfig: string;
  readonly imageMapFile: string;
  /** HOME and helm's cache, config and data directories go here. */
  readonly workDir: string;
  readonly namespace?: string;
  readonly release?: string;
  /** More `--set` values, e.g. `logLevel=debug`. */
  readonly set?: readonly string[];
  /** How long `helm install --wait` may take. */
  readonly timeout?: string;
}

function imageValues(digest: string): string[] {
  return [
    `image.repository=${OPERATOR_REPOSITORY}`,
    `image.digest=${digest}`,
    `runnerImage.repository=${OPERATOR_REPOSITORY}`,
    `runnerImage.digest=${digest}`,
  ];
}

/** `helm install --wait`: resolves once the Deployment is available, or rejects with helm's words. */
export async function installOperatorChart(options: OperatorChartOptions): Promise<OperatorChart> {
  const helmBin = findPackagingTools().helm;
  const namespace = options.namespace ?? 'ptah-operator';
  const release = options.release ?? 'ptah';
  const timeout = options.timeout ?? '3m';
  const home = join(options.workDir, 'helm-home');
  mkdirSync(home, { recursive: true });
  const helm = (args: readonly string[]): Promise<HelmRun> =>
    new Promise((resolve) => {
      const child = spawn(helmBin, [...args], {
        env: {
          PATH: process.env['PATH'] ?? '',
          HOME: home,
          HELM_CACHE_HOME: join(home, 'cache'),
          HELM_CONFIG_HOME: join(home, 'config'),
          HELM_DATA_HOME: join(home, 'data'),
          KUBECONFIG: options.kubeconfig,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.once('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
    });
  const sets = (values: readonly string[]) => values.flatMap((v) => ['--set', v]);
  const digest = registerOperatorImage(options.imageMapFile, OPERATOR_REPOSITORY);
  const installed = await helm([
    'install',
    release,
    CHART,
    '-n',
    namespace,
    '--create-namespace',
    '--wait',
    '--timeout',
    timeout,
    ...sets([...imageValues(digest), ...(options.set ?? [])]),
  ]);
  if (installed.code !== 0) {
    throw new Error(`helm install ${release} failed (${installed.code}): ${installed.stderr.trim()}`);
  }
  const chart: OperatorChart = {
    release,
    namespace,
    digest,
    helm,
    async upgradeImage(salt, upgrade = {}) {
      const next = registerOperatorImage(
        options.imageMapFile,
        OPERATOR_REPOSITORY,
        salt,
        upgrade.build?.dist,
      );
      const run = await helm([
        'upgrade',
        release,
        upgrade.build?.chart ?? CHART,
        '-n',
        namespace,
        '--reuse-values',
        '--wait',
        '--timeout',
        timeout,
        ...sets([...imageValues(next), ...(upgrade.set ?? [])]),
      ]);
      if (run.code === 0) chart.digest = next;
      return run;
    },
    uninstall: () => helm(['uninstall', release, '-n', namespace, '--wait', '--timeout', timeout]),
  };
  return chart;
}
