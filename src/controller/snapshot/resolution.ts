/**
 * What status records about a resolved ConfigMap source, and which snapshots status still needs.
 */
import type { PtahSchemaStatus, Resolution } from '../../api/ptah-schema.ts';
import type { SourceSnapshot } from '../../sources/snapshot-config-map.ts';

export function resolutionFromSnapshot(snapshot: SourceSnapshot, sourceName: string, now: Date): Resolution {
  return {
    sourceType: 'ConfigMap',
    configMapName: sourceName,
    configMapUID: snapshot.configMapUID,
    contentDigest: snapshot.contentDigest,
    snapshotName: snapshot.configMap.metadata.name,
    fileCount: snapshot.fileCount,
    size: snapshot.size,
    resolvedAt: now.toISOString(),
  };
}

/** Every snapshot name the status still refers to: the current resolution and an operation in flight. */
export function snapshotNamesInUse(status: PtahSchemaStatus | undefined): Set<string> {
  const names = new Set<string>();
  if (status?.resolution?.snapshotName !== undefined) names.add(status.resolution.snapshotName);
  if (status?.claim?.snapshotName !== undefined) names.add(status.claim.snapshotName);
  return names;
}
