import type { V1Container } from '@kubernetes/client-node';
import { expandVariables } from './image-map.ts';
import type { KeyedData, Pod } from './types.ts';

/** The kubelet's CreateContainerConfigError: the container cannot be configured yet; retried. */
export class ContainerConfigError extends Error {}

/** Reads a Secret or ConfigMap; undefined when it does not exist. */
export type ObjectLookup = (
  kind: 'secrets' | 'configmaps',
  namespace: string,
  name: string,
) => Promise<KeyedData | undefined>;

/** Values of a Secret or ConfigMap as text, whichever field the key is in. */
export function decodedData(kind: 'secrets' | 'configmaps', object: KeyedData): Map<string, Buffer> {
  const values = new Map<string, Buffer>();
  for (const [key, value] of Object.entries(object.data ?? {})) {
    values.set(key, kind === 'secrets' ? Buffer.from(value, 'base64') : Buffer.from(value, 'utf8'));
  }
  for (const [key, value] of Object.entries(object.binaryData ?? {})) {
    values.set(key, Buffer.from(value, 'base64'));
  }
  return values;
}

const KIND_NAMES = { secrets: 'secret', configmaps: 'configmap' } as const;
/** The kubelet's spelling in "couldn't find key k in Secret ns/name". */
const KIND_TITLES = { secrets: 'Secret', configmaps: 'ConfigMap' } as const;

/** The addresses the downward API reports: the Pod's own and its node's. */
export interface PodAddresses {
  readonly podIP: string;
  readonly hostIP: string;
}

/** `metadata.name`, `metadata.labels['k']`, `status.podIP`, ...: the fields the downward API offers. */
export function podField(pod: Pod, fieldPath: string, ips: PodAddresses): string {
  const keyed = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(fieldPath);
  if (keyed) {
    const map = keyed[1] === 'labels' ? pod.metadata.labels : pod.metadata.annotations;
    return map?.[keyed[2] as string] ?? '';
  }
  switch (fieldPath) {
    case 'metadata.name':
      return pod.metadata.name;
    case 'metadata.namespace':
      return pod.metadata.namespace;
    case 'metadata.uid':
      return pod.metadata.uid;
    case 'metadata.labels':
      return formatMap(pod.metadata.labels);
    case 'metadata.annotations':
      return formatMap(pod.metadata.annotations);
    case 'spec.nodeName':
      return pod.spec.nodeName ?? '';
    case 'spec.serviceAccountName':
      return pod.spec.serviceAccountName ?? '';
    case 'status.podIP':
    case 'status.podIPs':
      return ips.podIP;
    case 'status.hostIP':
    case 'status.hostIPs':
      return ips.hostIP;
    default:
      throw new ContainerConfigError(`unsupported fieldRef ${fieldPath}`);
  }
}

/** The downward API's file format for labels and annotations: sorted key="value" lines. */
export function formatMap(map: Record<string, string> | undefined): string {
  return Object.keys(map ?? {})
    .sort()
    .map((key) => `${key}=${JSON.stringify(map?.[key])}`)
    .join('\n');
}

/**
 * The container's environment as the kubelet builds it: envFrom first, then env in order, each
 * value expanded against the variables defined before it. A missing non-optional source makes
 * the container unconfigurable (CreateContainerConfigError), exactly as on a real node.
 */
export async function resolveContainerEnv(
  pod: Pod,
  container: V1Container,
  lookup: ObjectLookup,
  ips: PodAddresses,
): Promise<Map<string, string>> {
  const env = new Map<string, string>();
  const namespace = pod.metadata.namespace;
  const cache = new Map<string, Map<string, Buffer> | undefined>();
  async function source(kind: 'secrets' | 'configmaps', name: string) {
    const cacheKey = `${kind}/${name}`;
    if (!cache.has(cacheKey)) {
      const object = await lookup(kind, namespace, name);
      cache.set(cacheKey, object ? decodedData(kind, object) : undefined);
    }
    return cache.get(cacheKey);
  }

  for (const from of container.envFrom ?? []) {
    const ref = from.secretRef ?? from.configMapRef;
    const kind = from.secretRef ? 'secrets' : 'configmaps';
    if (!ref) continue;
    const values = await source(kind, ref.name ?? '');
    if (!values) {
      if (ref.optional) continue;
      throw new ContainerConfigError(`${KIND_NAMES[kind]} "${ref.name}" not found`);
    }
    for (const [key, value] of values) env.set(`${from.prefix ?? ''}${key}`, value.toString('utf8'));
  }

  for (const variable of container.env ?? []) {
    if (variable.valueFrom === undefined) {
      env.set(variable.name, expandVariables(variable.value ?? '', env));
      continue;
    }
    const { secretKeyRef, configMapKeyRef, fieldRef } = variable.valueFrom;
    const keyRef = secretKeyRef ?? configMapKeyRef;
    if (keyRef) {
      const kind = secretKeyRef ? 'secrets' : 'configmaps';
      const values = await source(kind, keyRef.name ?? '');
      const value = values?.get(keyRef.key);
      if (value === undefined) {
        if (keyRef.optional) continue;
        throw new ContainerConfigError(
          values
            ? `couldn't find key ${keyRef.key} in ${KIND_TITLES[kind]} ${namespace}/${keyRef.name}`
            : `${KIND_NAMES[kind]} "${keyRef.name}" not found`,
        );
      }
      env.set(variable.name, value.toString('utf8'));
    } else if (fieldRef) {
      env.set(variable.name, podField(pod, fieldRef.fieldPath, ips));
    }
    // resourceFieldRef is not offered: the agent enforces no resource limits to report.
  }
  return env;
}
