/**
 * The writes both families' decisions make of objects other than the resource itself, before the status
 * that names them: a source snapshot, and a published plan (the plan object and, for a schema, its chunks
 * read back and committed). `decide` returns them as actions in its `pre`; this module is the one executor,
 * so every durable write of either family is visible in its decision (decide → pre → status → post) and
 * performed by the same code.
 *
 * A publication is special in one way: the status that records the plan needs what only the API server
 * gives (the plan's UID and creation time). So a decision that publishes is about the publication only,
 * and the family decides again with its outcome (`decideWithPublication`); that second decision is the one
 * whose status is written.
 */
import type { CoreV1Api, V1ConfigMap } from '@kubernetes/client-node';
import type { ConfigMapObject } from '../../api/core.ts';
import type { PtahMigrationPlan } from '../../api/ptah-migration-plan.ts';
import type { PtahSchemaPlan } from '../../api/ptah-schema-plan.ts';
import type { PtahSchemaPlanChunk } from '../../api/ptah-schema-plan-chunk.ts';
import { buildPlanChunk } from '../../plan-store/plan-chunk.ts';
import { verifyPublication } from '../../plan-store/reassemble-plan.ts';
import type { PlanPiece } from '../../plan-store/split-plan.ts';
import { isConflict, type Plural, type PtahObjects } from '../runtime/kube.ts';

/** What a finished operation's result would publish: the plan object and, for a schema, its pieces. */
export type PlanPublication =
  | { readonly kind: 'PtahSchemaPlan'; readonly plan: PtahSchemaPlan; readonly pieces: readonly PlanPiece[] }
  | { readonly kind: 'PtahMigrationPlan'; readonly plan: PtahMigrationPlan };

export type DurableWrite =
  /** The immutable snapshot of a ConfigMap source, written before the status that names it. */
  | { readonly kind: 'writeSnapshot'; readonly configMap: ConfigMapObject }
  /** A plan published before the status that names it (see `decideWithPublication`). */
  | { readonly kind: 'publishPlan'; readonly publication: PlanPublication };

const DURABLE_WRITE_KINDS: Record<DurableWrite['kind'], true> = { writeSnapshot: true, publishPlan: true };

export function isDurableWrite(action: { readonly kind: string }): action is DurableWrite {
  return Object.hasOwn(DURABLE_WRITE_KINDS, action.kind);
}

export type PublicationOutcome =
  | { readonly ok: true; readonly plan: PtahSchemaPlan | PtahMigrationPlan }
  | { readonly ok: false; readonly reason: string; readonly message: string };

export interface WriteDeps {
  readonly core: CoreV1Api;
  readonly ptah: PtahObjects;
  readonly clock: () => Date;
  /** Throws when this replica may no longer write (leadership lost); called before every write. */
  readonly guard: () => void;
}

/** Performs one durable write; a publication returns its outcome, a snapshot nothing. */
export async function performWrite(
  deps: WriteDeps,
  action: DurableWrite,
): Promise<PublicationOutcome | undefined> {
  const perform: {
    [K in DurableWrite['kind']]: (
      a: Extract<DurableWrite, { kind: K }>,
    ) => Promise<PublicationOutcome | undefined>;
  } = {
    writeSnapshot: async (a) => {
      await createOnce(deps, a.configMap);
      return undefined;
    },
    publishPlan: (a) => publishPlan(deps, a.publication),
  };
  return perform[action.kind](action as never);
}

/**
 * Decides; when the decision publishes a plan, publishes it and decides again with what was stored (or why
 * nothing was). The second decision carries no publication of its own: it is given the outcome.
 */
export async function decideWithPublication<
  I,
  D extends { readonly pre: readonly { readonly kind: string }[] },
>(
  decide: (input: I) => D,
  input: I,
  deps: WriteDeps,
  outcomeInput: (outcome: PublicationOutcome) => Partial<I>,
): Promise<D> {
  const first = decide(input);
  const publish = first.pre.find(
    (a): a is Extract<DurableWrite, { kind: 'publishPlan' }> => a.kind === 'publishPlan',
  );
  if (publish === undefined) return first;
  const outcome = (await performWrite(deps, publish))!;
  return decide({ ...input, ...outcomeInput(outcome) });
}

const PLURAL: Record<PlanPublication['kind'], Plural> = {
  PtahSchemaPlan: 'ptahschemaplans',
  PtahMigrationPlan: 'ptahmigrationplans',
};

/**
 * The plan object, created once under the name its fingerprint gives; then, for a schema, its chunks
 * written, each read back, all verified by the one verifier, the UIDs committed and the plan Ready. Found
 * already committed, it is only read. Another object under the name is refused, never adopted.
 */
async function publishPlan(deps: WriteDeps, publication: PlanPublication): Promise<PublicationOutcome> {
  const { ptah } = deps;
  const plural = PLURAL[publication.kind];
  const wanted = publication.plan;
  const namespace = wanted.metadata.namespace ?? '';
  const name = wanted.metadata.name;
  let plan = await ptah.get<PtahSchemaPlan | PtahMigrationPlan>(plural, namespace, name);
  if (plan === undefined) {
    deps.guard();
    try {
      plan = await ptah.create<PtahSchemaPlan | PtahMigrationPlan>(plural, namespace, wanted);
    } catch (error) {
      if (!isConflict(error)) throw error;
      plan = await ptah.get<PtahSchemaPlan | PtahMigrationPlan>(plural, namespace, name);
    }
  }
  if (plan === undefined || plan.spec.fingerprint !== wanted.spec.fingerprint) {
    return {
      ok: false,
      reason: 'PlanNameTaken',
      message: `${publication.kind} ${name} exists with another fingerprint`,
    };
  }
  if (publication.kind === 'PtahMigrationPlan') return { ok: true, plan };
  return { ok: true, plan: await commitChunks(deps, plan as PtahSchemaPlan, publication.pieces) };
}

async function commitChunks(
  deps: WriteDeps,
  plan: PtahSchemaPlan,
  pieces: readonly PlanPiece[],
): Promise<PtahSchemaPlan> {
  if (plan.status?.publishedChunks?.length === plan.spec.chunks.length) return plan;
  const namespace = plan.metadata.namespace ?? '';
  const readBack = new Map<string, PtahSchemaPlanChunk>();
  for (const piece of pieces) {
    const back = await writeChunk(deps, plan, piece);
    if (back !== undefined) readBack.set(piece.name, back);
  }
  const verified = verifyPublication(plan, (name) => readBack.get(name));
  // A read-back that differs is not committed: the pass fails and retries, and the plan stays unready.
  if (!verified.ok)
    throw new Error(`plan chunk ${verified.failing} failed its read-back: ${verified.reason}`);
  deps.guard();
  return deps.ptah.replaceStatus<PtahSchemaPlan>('ptahschemaplans', namespace, plan.metadata.name, {
    apiVersion: plan.apiVersion,
    kind: plan.kind,
    metadata: { name: plan.metadata.name, namespace, resourceVersion: plan.metadata.resourceVersion },
    status: {
      publishedChunks: [...verified.publishedChunks],
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          reason: 'Published',
          message: 'every chunk was read back and verified',
          lastTransitionTime: deps.clock().toISOString(),
        },
      ],
    },
  });
}

/**
 * One chunk written (once: it is immutable) as a PtahSchemaPlanChunk and read back as stored. The one place
 * chunks are stored; reading them takes the plan-chunk kind, never ConfigMap access.
 */
async function writeChunk(
  deps: WriteDeps,
  plan: PtahSchemaPlan,
  piece: PlanPiece,
): Promise<PtahSchemaPlanChunk | undefined> {
  const body = buildPlanChunk(plan, piece);
  const namespace = body.metadata.namespace ?? '';
  deps.guard();
  try {
    await deps.ptah.create('ptahschemaplanchunks', namespace, body);
  } catch (error) {
    // A previous pass wrote it; the read-back judges what is there.
    if (!isConflict(error)) throw error;
  }
  return deps.ptah.get<PtahSchemaPlanChunk>('ptahschemaplanchunks', namespace, body.metadata.name);
}

/** Creates an immutable ConfigMap; one already there under the name is what a previous pass wrote. */
async function createOnce(deps: WriteDeps, body: ConfigMapObject): Promise<void> {
  deps.guard();
  try {
    await deps.core.createNamespacedConfigMap({
      namespace: body.metadata.namespace ?? '',
      body: body as V1ConfigMap,
    });
  } catch (error) {
    if (!isConflict(error)) throw error;
  }
}
