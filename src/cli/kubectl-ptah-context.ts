/**
 * What every `kubectl ptah` command shares: the flags kubectl passes through to a plugin (--kubeconfig,
 * --context, -n/--namespace), the person's kubeconfig, and the errors a command turns into an exit code.
 */
import { createInterface } from 'node:readline/promises';
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

export type OurPlural =
  | 'ptahschemas'
  | 'ptahschemaplans'
  | 'ptahschemaplanchunks'
  | 'ptahschemaapprovals'
  | 'ptahmigrations'
  | 'ptahmigrationplans'
  | 'ptahmigrationapprovals'
  | 'ptahmigrationrunacknowledgments';

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

/** The objects of one of our kinds in the namespace (the first 500: a person's decisions, not a history). */
export async function listOurObjects<T>(ctx: PluginContext, plural: OurPlural): Promise<T[]> {
  try {
    const list = (await ctx.objects.listNamespacedCustomObject({
      group: API_GROUP,
      version: API_VERSION,
      namespace: ctx.namespace,
      plural,
      limit: 500,
    })) as { items: T[] };
    return list.items;
  } catch (error) {
    throw readFailure(plural, ctx.namespace, error);
  }
}

/**
 * Creates a decision (an approval, an acknowledgment) and returns it as admission stored it. A refusal is
 * the webhook's or the API server's own message, which names what is wrong: `what` says what was refused.
 */
export async function createOurObject<T>(
  ctx: PluginContext,
  plural: OurPlural,
  body: object,
  what: string,
): Promise<T> {
  try {
    return (await ctx.objects.createNamespacedCustomObject({
      group: API_GROUP,
      version: API_VERSION,
      namespace: ctx.namespace,
      plural,
      body,
    })) as T;
  } catch (error) {
    if (error instanceof k8s.ApiException) {
      const detail = (() => {
        try {
          return (JSON.parse(String(error.body)) as { message?: string }).message ?? String(error.body);
        } catch {
          return String(error.body);
        }
      })();
      throw new PluginError(PLUGIN_EXIT.failed, `${what} was refused (HTTP ${error.code}): ${detail}`);
    }
    throw error;
  }
}

/** Asks on the terminal; only "y" or "yes" is a yes. */
export async function confirmed(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await rl.question(question)).trim());
  } finally {
    rl.close();
  }
}

/** A command that would write asks first; without a terminal it needs --yes, and says so. */
export function needsTerminalOrYes(yes: boolean, what: string, readFirst: string): void {
  if (!yes && !process.stdin.isTTY) {
    throw new PluginError(
      PLUGIN_EXIT.usage,
      `${what}: standard input is not a terminal, so nothing can be asked; ${readFirst} and pass --yes`,
    );
  }
}
