/**
 * What every `kubectl ptah` command shares: the flags kubectl passes through to a plugin (--kubeconfig,
 * --context, -n/--namespace), the person's kubeconfig, and the errors a command turns into an exit code.
 */
import * as k8s from '@kubernetes/client-node';
import { API_GROUP, API_VERSION } from '../api/meta.ts';
import { PLUGIN_EXIT, PluginError } from './kubectl-ptah-errors.ts';

export { PLUGIN_EXIT, PluginError, type PluginExit } from './kubectl-ptah-errors.ts';

/** The options every command accepts, in node:util parseArgs form. */
export const CONNECTION_OPTIONS = {
  kubeconfig: { type: 'string' },
  context: { type: 'string' },
  namespace: { type: 'string', short: 'n' },
} as const;

export interface ConnectionFlags {
  readonly kubeconfig?: string | undefined;
  readonly context?: string | undefined;
  readonly namespace?: string | undefined;
}

export interface PluginContext {
  readonly namespace: string;
  readonly core: k8s.CoreV1Api;
  readonly objects: k8s.CustomObjectsApi;
}

export function connect(flags: ConnectionFlags): PluginContext {
  const config = new k8s.KubeConfig();
  if (flags.kubeconfig !== undefined) config.loadFromFile(flags.kubeconfig);
  else config.loadFromDefault();
  if (flags.context !== undefined) {
    if (config.getContextObject(flags.context) === null) {
      throw new PluginError(PLUGIN_EXIT.usage, `no context "${flags.context}" in the kubeconfig`);
    }
    config.setCurrentContext(flags.context);
  }
  const namespace =
    flags.namespace ?? config.getContextObject(config.getCurrentContext())?.namespace ?? 'default';
  return {
    namespace,
    core: config.makeApiClient(k8s.CoreV1Api),
    objects: config.makeApiClient(k8s.CustomObjectsApi),
  };
}

export type OurPlural = 'ptahschemas' | 'ptahschemaplans' | 'ptahschemaapprovals';

/** One of our objects, or undefined when the API server says it does not exist. */
export async function getOurObject<T>(
  ctx: PluginContext,
  plural: OurPlural,
  name: string,
): Promise<T | undefined> {
  try {
    return (await ctx.objects.getNamespacedCustomObject({
      group: API_GROUP,
      version: API_VERSION,
      namespace: ctx.namespace,
      plural,
      name,
    })) as T;
  } catch (error) {
    if (error instanceof k8s.ApiException && error.code === 404) return undefined;
    throw readFailure(`${plural}/${name}`, ctx.namespace, error);
  }
}

/** An API error as a message a person acts on: 403 names the permission, anything else its status. */
export function readFailure(what: string, namespace: string, error: unknown): PluginError {
  if (error instanceof k8s.ApiException) {
    const code = error.code as number;
    if (code === 403) {
      return new PluginError(
        PLUGIN_EXIT.failed,
        `not allowed to read ${what} in namespace ${namespace}: ask for the ptah-plan-reader or ptah-viewer role`,
      );
    }
    return new PluginError(PLUGIN_EXIT.failed, `reading ${what} in namespace ${namespace}: HTTP ${code}`);
  }
  const message = error instanceof Error ? error.message : String(error);
  return new PluginError(PLUGIN_EXIT.failed, `reading ${what} in namespace ${namespace}: ${message}`);
}
