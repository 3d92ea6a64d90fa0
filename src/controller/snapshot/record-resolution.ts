/**
 * The step both families' `decide` take once the manager has resolved a source into a snapshot: record it
 * in status (only when it changed, so an unchanged source writes nothing new), stamp the realm the target
 * names, say so in ArtifactResolved, and let older snapshots of the resource be collected after the
 * status write. A snapshot that does not exist yet is written before the status that names it.
 */
import type { DurableWrite } from '../decision/durable-writes.ts';
import type { ConfigMapObject } from '../../api/core.ts';
import type { Infer } from '../../api/schema-dsl.ts';
import type { Resolution, targetStatus } from '../../api/ptah-schema.ts';

export interface CollectSnapshots {
  readonly kind: 'collectSnapshots';
  readonly keep: readonly string[];
}

interface ResolvedStatus {
  resolution?: Resolution | undefined;
  target?: Infer<typeof targetStatus> | undefined;
}

interface ResolutionBuilder {
  readonly status: ResolvedStatus;
  readonly pre: { push(action: DurableWrite): unknown };
  readonly post: { push(action: CollectSnapshots): unknown };
  cond(type: string, status: 'True' | 'False' | 'Unknown', reason: string, message: string): unknown;
}

/** Whether the source differs from the one status recorded; a first resolution is not a change. */
export function recordResolution(
  b: ResolutionBuilder,
  resolvedSource: { readonly value: Resolution; readonly write?: ConfigMapObject | undefined },
  target: { readonly coordinationDigest: string; readonly engine?: 'postgres' | 'mysql' | undefined },
): { readonly sourceChanged: boolean } {
  const resolved = resolvedSource.value;
  const st = b.status;
  const previous = st.resolution;
  const differs =
    previous === undefined ||
    previous.contentDigest !== resolved.contentDigest ||
    previous.configMapUID !== resolved.configMapUID ||
    previous.configMapName !== resolved.configMapName ||
    previous.sourcePolicy?.uid !== resolved.sourcePolicy?.uid ||
    previous.sourcePolicy?.digest !== resolved.sourcePolicy?.digest;
  if (differs) st.resolution = resolved;
  const write = resolvedSource.write;
  if (write !== undefined && write.metadata.name === st.resolution?.snapshotName)
    b.pre.push({ kind: 'writeSnapshot', configMap: write });
  recordTarget(b, target);
  b.cond(
    'ArtifactResolved',
    'True',
    'SnapshotTaken',
    'the selected keys were copied into an immutable snapshot',
  );
  b.post.push({ kind: 'collectSnapshots', keep: [st.resolution!.snapshotName!] });
  return { sourceChanged: differs && previous !== undefined };
}

/** The realm the target names, stamped on every idle pass whatever the source. */
export function recordTarget(
  b: Pick<ResolutionBuilder, 'status'>,
  target: { readonly coordinationDigest: string; readonly engine?: 'postgres' | 'mysql' | undefined },
): void {
  b.status.target = {
    ...b.status.target,
    coordinationDigest: target.coordinationDigest,
    ...(target.engine !== undefined ? { engine: target.engine } : {}),
  };
}
