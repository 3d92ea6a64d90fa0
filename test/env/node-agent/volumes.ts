import { chmodSync, chownSync, existsSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { V1KeyToPath, V1Volume } from '@kubernetes/client-node';
import { decodedData, formatMap, podField, type ObjectLookup, type PodAddresses } from './env.ts';
import type { Pod } from './types.ts';

/** The kubelet's FailedMount: a volume cannot be set up yet; the pod stays in ContainerCreating. */
export class VolumeSetupError extends Error {}

export interface VolumeDeps {
  readonly lookup: ObjectLookup;
  /** A bound ServiceAccount token, or undefined when the API server would not issue one. */
  readonly requestToken: (
    audience: string | undefined,
    expirationSeconds: number,
  ) => Promise<string | undefined>;
  readonly ips: PodAddresses;
}

/** One file of a projected-style volume: path relative to the volume root, bytes, mode. */
interface VolumeFile {
  readonly path: string;
  readonly content: Buffer;
  readonly mode: number;
}

const DEFAULT_MODE = 0o644;

function safeRelativePath(path: string): string {
  if (path.startsWith('/') || path.split('/').includes('..') || path === '') {
    throw new VolumeSetupError(`volume item path "${path}" must be relative and must not contain '..'`);
  }
  return path;
}

function selectItems(
  values: Map<string, Buffer>,
  items: readonly V1KeyToPath[] | undefined,
  defaultMode: number,
  what: string,
): VolumeFile[] {
  if (!items || items.length === 0) {
    return [...values].map(([key, content]) => ({ path: safeRelativePath(key), content, mode: defaultMode }));
  }
  return items.map((item) => {
    const content = values.get(item.key);
    if (content === undefined) throw new VolumeSetupError(`${what}: no key "${item.key}"`);
    return { path: safeRelativePath(item.path), content, mode: item.mode ?? defaultMode };
  });
}

async function keyedFiles(
  kind: 'secrets' | 'configmaps',
  source: { name?: string; items?: V1KeyToPath[]; optional?: boolean },
  defaultMode: number,
  pod: Pod,
  deps: VolumeDeps,
): Promise<VolumeFile[]> {
  const what = `${kind === 'secrets' ? 'secret' : 'configmap'} "${source.name}"`;
  const object = await deps.lookup(kind, pod.metadata.namespace, source.name ?? '');
  if (!object) {
    if (source.optional) return [];
    throw new VolumeSetupError(`${what} not found`);
  }
  return selectItems(decodedData(kind, object), source.items, defaultMode, what);
}

function downwardFiles(
  items: readonly { path: string; mode?: number; fieldRef?: { fieldPath: string } }[],
  defaultMode: number,
  pod: Pod,
  deps: VolumeDeps,
): VolumeFile[] {
  return items.flatMap((item) => {
    if (!item.fieldRef) return []; // resourceFieldRef: no resource limits are enforced here
    const value =
      item.fieldRef.fieldPath === 'metadata.labels'
        ? formatMap(pod.metadata.labels)
        : podField(pod, item.fieldRef.fieldPath, deps.ips);
    return [
      { path: safeRelativePath(item.path), content: Buffer.from(value), mode: item.mode ?? defaultMode },
    ];
  });
}

async function volumeFiles(volume: V1Volume, pod: Pod, deps: VolumeDeps): Promise<VolumeFile[]> {
  if (volume.configMap) {
    return keyedFiles(
      'configmaps',
      volume.configMap,
      volume.configMap.defaultMode ?? DEFAULT_MODE,
      pod,
      deps,
    );
  }
  if (volume.secret) {
    const source = { ...volume.secret, name: volume.secret.secretName };
    return keyedFiles('secrets', source, volume.secret.defaultMode ?? DEFAULT_MODE, pod, deps);
  }
  if (volume.downwardAPI) {
    return downwardFiles(
      volume.downwardAPI.items ?? [],
      volume.downwardAPI.defaultMode ?? DEFAULT_MODE,
      pod,
      deps,
    );
  }
  const projected = volume.projected;
  if (!projected) throw new VolumeSetupError(`volume "${volume.name}": unsupported volume type`);
  const defaultMode = projected.defaultMode ?? DEFAULT_MODE;
  const files: VolumeFile[] = [];
  for (const source of projected.sources ?? []) {
    if (source.configMap)
      files.push(...(await keyedFiles('configmaps', source.configMap, defaultMode, pod, deps)));
    if (source.secret) files.push(...(await keyedFiles('secrets', source.secret, defaultMode, pod, deps)));
    if (source.downwardAPI)
      files.push(...downwardFiles(source.downwardAPI.items ?? [], defaultMode, pod, deps));
    if (source.serviceAccountToken) {
      const { audience, expirationSeconds, path } = source.serviceAccountToken;
      // A token the API server refuses is left out rather than failing the pod: tests that do
      // not talk to the API server from inside a pod should not depend on token issuance.
      const token = await deps.requestToken(audience, expirationSeconds ?? 3607);
      if (token !== undefined)
        files.push({ path: safeRelativePath(path), content: Buffer.from(token), mode: defaultMode });
    }
  }
  return files;
}

/**
 * Writes files the way the kubelet's atomic writer lays them out: the data in a timestamped
 * directory, `..data` pointing at it, and each top-level name a symlink through `..data`, so a
 * program that resolves symlinks sees the same shape as on a real node.
 */
function writeAtomicLayout(root: string, files: readonly VolumeFile[], fsGroup: number | undefined): void {
  rmSync(root, { recursive: true, force: true });
  mkdirSync(root, { recursive: true, mode: 0o755 });
  // setgid keeps files created later group-owned by fsGroup, as on a kubelet.
  chmodSync(root, fsGroup === undefined ? 0o755 : 0o2755);
  const stamp = `..${new Date().toISOString().replace(/[-:.TZ]/g, '_')}`;
  const dataDir = join(root, stamp);
  mkdirSync(dataDir, { mode: 0o755 });
  const topLevel = new Set<string>();
  for (const file of files) {
    const target = join(dataDir, file.path);
    mkdirSync(dirname(target), { recursive: true, mode: 0o755 });
    writeFileSync(target, file.content);
    // fsGroup makes files group-owned and group-readable, as the kubelet's SetVolumeOwnership does.
    chmodSync(target, fsGroup === undefined ? file.mode : file.mode | 0o040);
    if (fsGroup !== undefined) chownSync(target, 0, fsGroup);
    topLevel.add(file.path.split('/')[0] as string);
  }
  if (fsGroup !== undefined) {
    chownSync(root, 0, fsGroup);
    chownSync(dataDir, 0, fsGroup);
  }
  symlinkSync(stamp, join(root, '..data'));
  for (const name of topLevel) symlinkSync(join('..data', name), join(root, name));
}

/**
 * Materialises every volume of the pod under `volumesDir/<name>` and returns name → host path.
 * emptyDir contents survive container restarts (and a retry of this function); every other
 * volume is rewritten from the API on each call.
 */
export async function materializeVolumes(
  pod: Pod,
  volumesDir: string,
  deps: VolumeDeps,
): Promise<Map<string, string>> {
  const fsGroup = pod.spec.securityContext?.fsGroup;
  const paths = new Map<string, string>();
  for (const volume of pod.spec.volumes ?? []) {
    const root = join(volumesDir, volume.name);
    if (volume.emptyDir) {
      if (!existsSync(root)) {
        mkdirSync(root, { recursive: true });
        chmodSync(root, 0o777);
        if (fsGroup !== undefined) chownSync(root, 0, fsGroup);
      }
    } else if (volume.hostPath) {
      paths.set(volume.name, volume.hostPath.path);
      continue;
    } else {
      writeAtomicLayout(root, await volumeFiles(volume, pod, deps), fsGroup);
    }
    paths.set(volume.name, root);
  }
  return paths;
}
