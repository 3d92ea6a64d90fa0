/**
 * The immutable `ptah-src-<hash>` ConfigMap an operation mounts instead of the source: the selected files
 * under index keys plus the manifest, owned by the resource so it goes when the resource goes.
 */
import { canonicalDigest } from '../api/digest.ts';
import { hexOf } from '../api/fingerprint.ts';
import { configMapSize, MAX_CONFIG_MAP_BYTES, type ConfigMapObject } from '../api/core.ts';
import {
  API_GROUP,
  controllerOwnerReference,
  LABELS,
  MANAGED_BY,
  resourceLabel,
  type ObjectMeta,
} from '../api/meta.ts';
import type { ConfigMapSource } from '../api/ptah-schema.ts';
import { buildManifest, MANIFEST_KEY, snapshotFileKey, type BuiltManifest } from './snapshot-manifest.ts';
import { selectFiles } from './select-files.ts';

export const SNAPSHOT_COMPONENT = 'source-snapshot';
export const CONTENT_DIGEST_ANNOTATION = `${API_GROUP}/content-digest`;
export const SNAPSHOT_NAME_PREFIX = 'ptah-src-';

export interface SnapshotOwner {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: Pick<ObjectMeta, 'name' | 'uid' | 'namespace'>;
}

export class SnapshotTooLargeError extends Error {
  override readonly name = 'SnapshotTooLargeError';
}

/**
 * The snapshot name binds the owning resource and the content: the same files for the same resource always
 * name the same snapshot (so putting back the exact bytes restores it), and two resources never share one.
 */
export function snapshotName(ownerUID: string, contentDigest: BuiltManifest['contentDigest']): string {
  return `${SNAPSHOT_NAME_PREFIX}${hexOf(canonicalDigest({ ownerUID, contentDigest })).slice(0, 32)}`;
}

export interface SourceSnapshot {
  readonly contentDigest: BuiltManifest['contentDigest'];
  readonly manifest: BuiltManifest['manifest'];
  readonly configMapUID: string;
  readonly fileCount: number;
  readonly size: number;
  readonly configMap: ConfigMapObject;
}

/** Reads the source ConfigMap's selected keys and builds the snapshot object to create. */
export function buildSourceSnapshot(
  owner: SnapshotOwner,
  source: ConfigMapSource,
  sourceConfigMap: ConfigMapObject,
): SourceSnapshot {
  const uid = owner.metadata.uid;
  if (uid === undefined || uid === '') throw new Error(`${owner.kind} ${owner.metadata.name} has no UID`);
  const configMapUID = sourceConfigMap.metadata.uid;
  if (configMapUID === undefined || configMapUID === '') {
    throw new Error(`ConfigMap ${sourceConfigMap.metadata.name} has no UID; read it from the API server`);
  }
  const built = buildManifest(selectFiles(sourceConfigMap, source));
  const binaryData: Record<string, string> = { [MANIFEST_KEY]: Buffer.from(built.bytes).toString('base64') };
  built.files.forEach((f, i) => {
    binaryData[snapshotFileKey(i)] = Buffer.from(f.bytes).toString('base64');
  });
  const size = configMapSize({ binaryData });
  if (size > MAX_CONFIG_MAP_BYTES) {
    throw new SnapshotTooLargeError(
      `the selected files and their manifest take ${size} bytes; a snapshot ConfigMap holds at most ${MAX_CONFIG_MAP_BYTES}`,
    );
  }
  const name = snapshotName(uid, built.contentDigest);
  const metadata: ObjectMeta = {
    name,
    ...(owner.metadata.namespace === undefined ? {} : { namespace: owner.metadata.namespace }),
    labels: {
      [LABELS.managedBy]: MANAGED_BY,
      [LABELS.component]: SNAPSHOT_COMPONENT,
      [resourceLabel(owner.kind)]: owner.metadata.name,
    },
    annotations: { [CONTENT_DIGEST_ANNOTATION]: built.contentDigest },
    ownerReferences: [controllerOwnerReference(owner)],
  };
  return {
    contentDigest: built.contentDigest,
    manifest: built.manifest,
    configMapUID,
    fileCount: built.files.length,
    size: built.files.reduce((n, f) => n + f.bytes.length, 0),
    configMap: { apiVersion: 'v1', kind: 'ConfigMap', metadata, immutable: true, binaryData },
  };
}

/**
 * Snapshots owned by the resource that nothing names any more. `inUse` holds every name the resource's
 * status still needs (its resolution, a claim in flight); everything else may be deleted.
 */
export function unusedSnapshots(
  owned: readonly ConfigMapObject[],
  ownerUID: string,
  inUse: ReadonlySet<string>,
): ConfigMapObject[] {
  return owned.filter(
    (cm) =>
      cm.metadata.name.startsWith(SNAPSHOT_NAME_PREFIX) &&
      cm.metadata.labels?.[LABELS.component] === SNAPSHOT_COMPONENT &&
      (cm.metadata.ownerReferences ?? []).some((o) => o.uid === ownerUID && o.controller === true) &&
      !inUse.has(cm.metadata.name),
  );
}
