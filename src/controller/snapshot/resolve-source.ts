/**
 * Resolve for a ConfigMap source, for either family: not a Job. The manager reads the source ConfigMap and
 * builds the immutable `ptah-src-<hash>` snapshot the resource owns; when none exists yet, the resolution
 * carries it, and the decision that records the resolution writes it first (a `writeSnapshot` action, see
 * decision/durable-writes.ts). An existing object of that name that is not the exact snapshot is refused
 * rather than read from. A source policy the resource names is checked first, the ConfigMap's name and the
 * size of its selected keys, so a refused source writes no snapshot. Afterwards the snapshots nothing names
 * any more are deleted.
 */
import type { CoreV1Api } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { ConfigMapObject } from '../../api/core.ts';
import { LABELS, resourceLabel } from '../../api/meta.ts';
import type { ConfigMapSource, Resolution } from '../../api/ptah-schema.ts';
import {
  buildSourceSnapshot,
  SNAPSHOT_COMPONENT,
  unusedSnapshots,
  type SnapshotOwner,
} from '../../sources/snapshot-config-map.ts';
import { orUndefined, readConfigMap } from '../runtime/kube.ts';
import { checkSource, configMapNameCheck, readSourcePolicy, selectedSizeCheck } from './source-policy.ts';

export type ResolutionResult =
  | {
      readonly ok: true;
      readonly value: Resolution;
      /** The snapshot `value` names, when it does not exist yet: written before the status that names it. */
      readonly write?: ConfigMapObject;
    }
  | { readonly ok: false; readonly reason: string; readonly message: string };

export async function resolveConfigMapSource(
  core: CoreV1Api,
  owner: SnapshotOwner,
  source: ConfigMapSource | undefined,
  previous: Resolution | undefined,
  now: Date,
  sourcePolicyName?: string,
): Promise<ResolutionResult> {
  if (source === undefined)
    return { ok: false, reason: 'SourceUnresolved', message: 'spec.desired names no ConfigMap' };
  const namespace = owner.metadata.namespace ?? '';
  const policy = await readSourcePolicy(core, namespace, sourcePolicyName);
  const named = checkSource(policy, configMapNameCheck(source.name));
  if (!named.ok) return named;
  const cm = await readConfigMap(core, namespace, source.name);
  if (cm === undefined) {
    return { ok: false, reason: 'SourceNotFound', message: `ConfigMap ${source.name} does not exist` };
  }
  let snapshot;
  try {
    snapshot = buildSourceSnapshot(owner, source, cm as ConfigMapObject);
  } catch (error) {
    const reason = (error as { reason?: string }).reason ?? 'SourceRefused';
    return {
      ok: false,
      reason,
      message: error instanceof Error ? error.message.slice(0, 256) : 'source refused',
    };
  }
  const sized = checkSource(
    policy,
    selectedSizeCheck(snapshot.size, `the keys ConfigMap ${source.name} selects`),
  );
  if (!sized.ok) return sized;
  const existing = await readConfigMap(core, namespace, snapshot.configMap.metadata.name);
  if (
    existing !== undefined &&
    (existing.immutable !== true || !sameData(existing.binaryData, snapshot.configMap.binaryData))
  ) {
    // A ConfigMap of that name that is not our exact snapshot: refuse rather than read from it.
    return {
      ok: false,
      reason: 'SnapshotReplaced',
      message: `snapshot ${snapshot.configMap.metadata.name} was replaced`,
    };
  }
  return {
    ok: true,
    ...(existing === undefined ? { write: snapshot.configMap } : {}),
    value: {
      sourceType: 'ConfigMap',
      configMapName: source.name,
      configMapUID: snapshot.configMapUID,
      contentDigest: snapshot.contentDigest,
      snapshotName: snapshot.configMap.metadata.name,
      fileCount: snapshot.fileCount,
      size: snapshot.size,
      ...(sized.policy !== undefined ? { sourcePolicy: sized.policy } : {}),
      resolvedAt:
        previous?.contentDigest === snapshot.contentDigest && previous.configMapUID === snapshot.configMapUID
          ? previous.resolvedAt
          : now.toISOString(),
    },
  };
}

/** Deletes the snapshots the resource owns that none of `inUse` names. */
export async function collectSnapshots(
  core: CoreV1Api,
  owner: { readonly kind: string; readonly namespace: string; readonly name: string; readonly uid: string },
  inUse: ReadonlySet<string>,
  log: Logger,
): Promise<void> {
  const owned = await core.listNamespacedConfigMap({
    namespace: owner.namespace,
    labelSelector: `${LABELS.component}=${SNAPSHOT_COMPONENT},${resourceLabel(owner.kind)}=${owner.name}`,
  });
  for (const cm of unusedSnapshots(owned.items as ConfigMapObject[], owner.uid, inUse)) {
    await orUndefined(core.deleteNamespacedConfigMap({ namespace: owner.namespace, name: cm.metadata.name }));
    log.info(
      { kind: owner.kind, name: owner.name, namespace: owner.namespace, snapshot: cm.metadata.name },
      'unused snapshot deleted',
    );
  }
}

function sameData(
  a: Readonly<Record<string, string>> | undefined,
  b: Readonly<Record<string, string>> | undefined,
): boolean {
  const keys = (o: Readonly<Record<string, string>> | undefined) => Object.keys(o ?? {}).sort();
  const ka = keys(a);
  const kb = keys(b);
  return ka.length === kb.length && ka.every((k, i) => k === kb[i] && a![k] === b![k]);
}
