/**
 * The source snapshot a resource's ConfigMap source makes now, rebuilt for the controller-write webhook from
 * the source ConfigMap with the builder the manager creates snapshots with (src/sources/snapshot-config-map.ts).
 * Only a ConfigMap source has snapshots: an OCI or Git source is fetched by the operation Pod itself.
 */
import type { ConfigMapObject } from '../../api/core.ts';
import type { PtahMigration } from '../../api/ptah-migration.ts';
import type { PtahSchema } from '../../api/ptah-schema.ts';
import { buildSourceSnapshot } from '../../sources/snapshot-config-map.ts';
import type { JobOwner, RebuiltJob } from '../jobs/expected-job.ts';
import type { JobReaders } from '../jobs/job-readers.ts';
import { readConfigMap } from '../runtime/kube.ts';

export type RebuiltSnapshot =
  { readonly ok: true; readonly object: ConfigMapObject } | Exclude<RebuiltJob, { ok: true }>;

const PLURAL = { PtahSchema: 'ptahschemas', PtahMigration: 'ptahmigrations' } as const satisfies Record<
  JobOwner['kind'],
  string
>;

export async function rebuildSnapshot(readers: JobReaders, owner: JobOwner): Promise<RebuiltSnapshot> {
  const obj = await readers.ptah.get<PtahSchema | PtahMigration>(
    PLURAL[owner.kind],
    owner.namespace,
    owner.name,
  );
  if (obj === undefined || obj.metadata.uid !== owner.uid) {
    return { ok: false, reason: `${owner.kind} ${owner.name} with UID ${owner.uid} does not exist` };
  }
  const source = obj.spec.desired.configMap;
  if (source === undefined)
    return { ok: false, reason: `${owner.kind} ${owner.name} has no ConfigMap source` };
  const cm = await readConfigMap(readers.core, owner.namespace, source.name);
  if (cm === undefined) return { ok: false, reason: `its source ConfigMap ${source.name} does not exist` };
  try {
    return { ok: true, object: buildSourceSnapshot(obj, source, cm as ConfigMapObject).configMap };
  } catch (error) {
    return { ok: false, reason: error instanceof Error ? error.message : String(error) };
  }
}
