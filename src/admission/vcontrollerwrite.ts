/**
 * vcontrollerwrite: the objects only the manager writes — operation Jobs, source snapshot ConfigMaps, plans,
 * plan chunks and the plan projections an Apply mounts — are admitted only as the manager builds them. A
 * create must come from the manager and equal the object rebuilt from what status, the plan and the source
 * say now: the Job from the owning resource's claim (and the plan an Apply names), a snapshot's bytes from
 * the source ConfigMap, a plan's manager-given bindings from its owner (plan-objects.ts), a chunk's bytes
 * from what its plan records for it, a projection's from its chunk (plan-pieces.ts). An update may change
 * nothing the writer decided, but for the cleanup TTL the manager adds to a finished Job and the finalizers
 * the garbage collector moves. Each refusal names the rule and what differs.
 *
 * The rebuilding lives with the builders (src/controller/jobs/expected-job.ts and
 * src/controller/snapshot/expected-snapshot.ts), handed in by the manager process: admission imports no
 * controller code, and a Job shape added to a builder is rebuilt here by that same code.
 */
import { API_GROUP, LABELS, MANAGED_BY } from '../api/meta.ts';
import { JOB_ANNOTATIONS, JOB_FAMILIES, MAIN_CONTAINER } from '../api/job-envelope.ts';
import { PROJECTION_COMPONENT } from '../plan-store/plan-projection.ts';
import { SNAPSHOT_COMPONENT, SNAPSHOT_NAME_PREFIX } from '../sources/snapshot-config-map.ts';
import { JOB_SERVER_FILLED } from './job-server-filled.ts';
import { objectDifferences, writtenPart, type ServerFilled } from './object-differences.ts';
import { judgePlan, type PlanKind, type PlanObjectReads } from './plan-objects.ts';
import { rebuildPlanPiece, type PlanPieceReads } from './plan-pieces.ts';
import { cachedThenLive, type Reads } from './reads.ts';
import { allowed, denied, errored, type AdmissionHandler, type AdmissionRequest } from './review.ts';

export const CONTROLLER_WRITE_RULE = 'vcontrollerwrite';

/** The resource that owns a written object, from its controller owner reference. */
export interface OwningResource {
  readonly kind: OwnerKind;
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
}

export type OwnerKind = 'PtahSchema' | 'PtahMigration';

/** The object rebuilt for a write, or why none can be. */
export type Rebuilt =
  { readonly ok: true; readonly object: unknown } | { readonly ok: false; readonly reason: string };

export interface JobToRebuild {
  readonly name: string;
  /** PTAH_EXECUTION_NOT_AFTER of the main container: when the Job was built, counted back by the deadline. */
  readonly executionNotAfter?: string;
  /** The manager identity the Job records (image, revision, controller-state version): recorded, never bound. */
  readonly identity: Readonly<Record<string, string>>;
}

export interface ControllerWriteSources extends PlanPieceReads, PlanObjectReads {
  /** The manager's username (its ServiceAccount): the only writer of these objects. */
  readonly managerUsername: string;
  /** Rebuilds from the manager's caches or from the API server (see reads.ts). */
  rebuildJob(owner: OwningResource, job: JobToRebuild, reads: Reads): Promise<Rebuilt>;
  rebuildSnapshot(owner: OwningResource, snapshotName: string, reads: Reads): Promise<Rebuilt>;
}

type WrittenKind = 'Job' | 'SourceSnapshot' | PlanKind | 'PlanChunk' | 'PlanProjection';

const WHAT: Readonly<Record<WrittenKind, string>> = {
  Job: 'operation Job',
  SourceSnapshot: 'source snapshot',
  SchemaPlan: 'schema plan',
  MigrationPlan: 'migration plan',
  PlanChunk: 'plan chunk',
  PlanProjection: 'plan projection',
};
type Meta = {
  readonly name?: string;
  readonly uid?: string;
  readonly labels?: Record<string, string>;
  readonly annotations?: Record<string, string>;
  readonly ownerReferences?: readonly {
    apiVersion?: string;
    kind?: string;
    name?: string;
    uid?: string;
    controller?: boolean;
  }[];
};
/** An admitted object as the webhook reads it: any kind, its metadata typed as far as it is used. */
export type Written = Readonly<Record<string, unknown>> & { readonly metadata?: Meta };

export function validateControllerWrite(sources: ControllerWriteSources): AdmissionHandler {
  return async (request) => {
    const object = request.object as Written | undefined;
    if (object === undefined || object === null)
      return errored(400, `${CONTROLLER_WRITE_RULE}: the request carries no object`);
    const kind = writtenKind(request, object);
    if (kind === undefined) {
      return errored(
        400,
        `${CONTROLLER_WRITE_RULE} judges Jobs, ConfigMaps, plans and plan chunks, not ${request.kind.kind}`,
      );
    }
    if (request.operation === 'UPDATE') return judgeUpdate(kind, request, object, sources);
    if (request.operation !== 'CREATE') return allowed();
    const who = request.userInfo.username ?? '';
    const what = `${WHAT[kind]} ${object.metadata?.name ?? ''}`;
    if (who !== sources.managerUsername) {
      return denied(
        `${CONTROLLER_WRITE_RULE}: only the manager (${sources.managerUsername}) creates ${what}; ${who || 'an anonymous requester'} may not`,
      );
    }
    if (kind === 'SchemaPlan' || kind === 'MigrationPlan') {
      return cachedThenLive(async (reads) => {
        const judged = await judgePlan(kind, object, request.namespace ?? '', sources, reads);
        return judged.ok
          ? allowed()
          : denied(`${CONTROLLER_WRITE_RULE}: ${what} is refused: ${judged.reason}`);
      });
    }
    if (kind === 'PlanChunk' || kind === 'PlanProjection') {
      return cachedThenLive(async (reads) => {
        const rebuilt = await rebuildPlanPiece(kind, object, request.namespace ?? '', sources, reads);
        if (!rebuilt.ok)
          return denied(`${CONTROLLER_WRITE_RULE}: ${what} cannot be rebuilt: ${rebuilt.reason}`);
        const differences = objectDifferences(rebuilt.object, object);
        if (differences.length > 0) {
          return denied(
            `${CONTROLLER_WRITE_RULE}: ${what} is not the object its plan rebuilds: ${differences.join('; ')}`,
          );
        }
        return allowed();
      });
    }
    const owner = owningResource(object, request.namespace ?? '');
    if (owner === undefined) {
      return denied(
        `${CONTROLLER_WRITE_RULE}: ${what} names no PtahSchema or PtahMigration as its controller owner`,
      );
    }
    return cachedThenLive(async (reads) => {
      const rebuilt = await CREATES[kind](sources, owner, object, reads);
      if (!rebuilt.ok)
        return denied(`${CONTROLLER_WRITE_RULE}: ${what} cannot be rebuilt: ${rebuilt.reason}`);
      const differences = objectDifferences(rebuilt.object, object, SERVER_FILLED[kind]);
      if (differences.length > 0) {
        return denied(
          `${CONTROLLER_WRITE_RULE}: ${what} is not the object ${owner.kind} ${owner.name} rebuilds: ${differences.join('; ')}`,
        );
      }
      return allowed();
    });
  };
}

const CREATES: Readonly<
  Record<
    'Job' | 'SourceSnapshot',
    (s: ControllerWriteSources, o: OwningResource, w: Written, reads: Reads) => Promise<Rebuilt>
  >
> = {
  Job: (sources, owner, job, reads) => {
    const annotations = job.metadata?.annotations ?? {};
    const identity = Object.fromEntries(
      [
        JOB_ANNOTATIONS.managerImage,
        JOB_ANNOTATIONS.managerRevision,
        JOB_ANNOTATIONS.controllerStateVersion,
      ].flatMap((k) => (annotations[k] !== undefined ? [[k, annotations[k]]] : [])),
    );
    const notAfter = mainEnv(job, 'PTAH_EXECUTION_NOT_AFTER');
    return sources.rebuildJob(
      owner,
      {
        name: job.metadata?.name ?? '',
        identity,
        ...(notAfter !== undefined ? { executionNotAfter: notAfter } : {}),
      },
      reads,
    );
  },
  SourceSnapshot: (sources, owner, cm, reads) =>
    sources.rebuildSnapshot(owner, cm.metadata?.name ?? '', reads),
};

const SERVER_FILLED: Readonly<Record<'Job' | 'SourceSnapshot', readonly ServerFilled[]>> = {
  Job: JOB_SERVER_FILLED,
  SourceSnapshot: [],
};

/**
 * An update changes nothing the writer decided. The manager may add the cleanup TTL to a Job that had none;
 * anyone the API server lets may move finalizers (the garbage collector's foreground deletion) and nothing
 * else.
 */
function judgeUpdate(
  kind: WrittenKind,
  request: AdmissionRequest,
  object: Written,
  sources: ControllerWriteSources,
) {
  const old = request.oldObject as Written | undefined;
  if (old === undefined || old === null)
    return errored(400, `${CONTROLLER_WRITE_RULE}: an update without the old object`);
  const who = request.userInfo.username ?? '';
  const moved = (o: Written) => {
    const w = writtenPart(o) as { metadata: Record<string, unknown>; spec?: Record<string, unknown> };
    delete w.metadata['finalizers'];
    if (
      kind === 'Job' &&
      who === sources.managerUsername &&
      old.spec !== undefined &&
      (old.spec as Record<string, unknown>)['ttlSecondsAfterFinished'] === undefined &&
      w.spec !== undefined
    ) {
      const { ttlSecondsAfterFinished: _ttl, ...spec } = w.spec;
      w.spec = spec;
    }
    return w;
  };
  const differences = objectDifferences(moved(old), moved(object) as Readonly<Record<string, unknown>>);
  if (differences.length === 0) return allowed();
  const what = `${WHAT[kind]} ${object.metadata?.name ?? ''}`;
  const rule =
    kind === 'Job'
      ? 'is changed only by the manager adding its cleanup TTL'
      : 'is never changed but for finalizers';
  return denied(
    `${CONTROLLER_WRITE_RULE}: ${what} ${rule}; ${who || 'an anonymous requester'} changed: ${differences.join('; ')}`,
  );
}

function writtenKind(request: AdmissionRequest, object: Written): WrittenKind | undefined {
  const { group, kind } = request.kind;
  if (group === 'batch' && kind === 'Job') return 'Job';
  if (group === API_GROUP && kind === 'PtahSchemaPlanChunk') return 'PlanChunk';
  if (group === API_GROUP && kind === 'PtahSchemaPlan') return 'SchemaPlan';
  if (group === API_GROUP && kind === 'PtahMigrationPlan') return 'MigrationPlan';
  if (group !== '' || kind !== 'ConfigMap') return undefined;
  // A ConfigMap marked as a projection (now or before the update) is judged as one; any other the match
  // condition sends is a snapshot.
  const old = request.oldObject as Written | undefined;
  const projection = [object, old].some(
    (o) => o?.metadata?.labels?.[LABELS.component] === PROJECTION_COMPONENT,
  );
  return projection ? 'PlanProjection' : 'SourceSnapshot';
}

function owningResource(object: Written, namespace: string): OwningResource | undefined {
  const ref = (object.metadata?.ownerReferences ?? []).find((o) => o.controller === true);
  if (ref === undefined || !(ref.apiVersion ?? '').startsWith(`${API_GROUP}/`)) return undefined;
  const kind = Object.values(JOB_FAMILIES).find((f) => f.ownerKind === ref.kind)?.ownerKind;
  if (kind === undefined || ref.name === undefined || ref.uid === undefined) return undefined;
  return { kind, namespace, name: ref.name, uid: ref.uid };
}

function mainEnv(job: Written, name: string): string | undefined {
  const spec = job['spec'] as
    | {
        template?: { spec?: { containers?: { name?: string; env?: { name?: string; value?: string }[] }[] } };
      }
    | undefined;
  const main = spec?.template?.spec?.containers?.find((c) => c.name === MAIN_CONTAINER);
  return main?.env?.find((e) => e.name === name)?.value;
}

/**
 * CEL over `object`: the Jobs and ConfigMaps this webhook judges, by what marks them as the manager's. Every
 * plan and plan chunk is judged (the kinds are the manager's alone), so the configuration needs no condition
 * for them.
 */
export function controllerWriteMatch(kind: 'Job' | 'ConfigMap'): string {
  const component = `(has(o.metadata.labels) && '${LABELS.component}' in o.metadata.labels && o.metadata.labels['${LABELS.component}']`;
  const marks =
    kind === 'Job'
      ? `o.metadata.name.startsWith('${JOB_FAMILIES.schema.namePrefix}')`
      : `o.metadata.name.startsWith('${SNAPSHOT_NAME_PREFIX}') || ${component} in ['${SNAPSHOT_COMPONENT}', '${PROJECTION_COMPONENT}'])`;
  const managed = `(has(o.metadata.labels) && '${LABELS.managedBy}' in o.metadata.labels && o.metadata.labels['${LABELS.managedBy}'] == '${MANAGED_BY}')`;
  const owned = `(has(o.metadata.ownerReferences) && o.metadata.ownerReferences.exists(r, r.apiVersion.startsWith('${API_GROUP}/')))`;
  // A ConfigMap is judged as a snapshot or a plan projection; a person's own ConfigMaps are never sent.
  const p = kind === 'Job' ? `(${marks} || ${managed} || ${owned})` : `(${marks})`;
  return `(object != null && [object].exists(o, ${p})) || (oldObject != null && [oldObject].exists(o, ${p}))`;
}
