/**
 * The one check of a published plan's chunks, for every reader: publication's read-back before the plan's
 * status commits the chunks' UIDs (`verifyPublication`), the manager before an Apply is dispatched and
 * `kubectl ptah plan` before it prints (`reassemblePlan`). Every check the plan contract promises runs in
 * both: names, order, sizes, per-chunk hashes and the whole hash, and the committed UIDs once there are
 * any. A failure names the chunk (or the plan) and what failed; nothing partial is returned.
 */
import { sha256Digest } from '../api/digest.ts';
import type { PtahSchemaPlan, PublishedChunk } from '../api/ptah-schema-plan.ts';
import type { PtahSchemaPlanChunk } from '../api/ptah-schema-plan-chunk.ts';
import { checkChunk, type ChunkFailure } from './plan-chunk.ts';
import { chunkName } from './split-plan.ts';

export type ReassemblyFailure = {
  readonly ok: false;
  /** The chunk that failed, or the plan's own name for a whole-plan failure. */
  readonly failing: string;
  readonly reason:
    ChunkFailure | 'NotPublished' | 'OrderMismatch' | 'PlanSizeMismatch' | 'PlanDigestMismatch';
  readonly message: string;
};

export type Reassembly =
  | {
      readonly ok: true;
      readonly bytes: Uint8Array;
      /** Each verified chunk's bytes, in order: what a projection copies. */
      readonly chunks: readonly Uint8Array[];
    }
  | ReassemblyFailure;

export type PublicationCheck =
  { readonly ok: true; readonly publishedChunks: readonly PublishedChunk[] } | ReassemblyFailure;

/** A committed plan's bytes, every chunk held to the UID its status committed. */
export function reassemblePlan(
  plan: PtahSchemaPlan,
  read: (name: string) => PtahSchemaPlanChunk | undefined,
): Reassembly {
  const planName = plan.metadata.name;
  const published = plan.status?.publishedChunks;
  if (published === undefined || published.length !== plan.spec.chunks.length) {
    return fail(planName, 'NotPublished', `plan ${planName} has not committed all of its chunks`);
  }
  const checked = checkChunks(plan, read, published);
  return checked.ok ? { ok: true, bytes: checked.bytes, chunks: checked.chunks } : checked;
}

/**
 * Publication's read-back: the chunks just written, checked as an Apply will check them, before any UID is
 * committed; the UIDs to commit are the ones read back, in index order.
 */
export function verifyPublication(
  plan: PtahSchemaPlan,
  readBack: (name: string) => PtahSchemaPlanChunk | undefined,
): PublicationCheck {
  const checked = checkChunks(plan, readBack, undefined);
  return checked.ok ? { ok: true, publishedChunks: checked.publishedChunks } : checked;
}

function checkChunks(
  plan: PtahSchemaPlan,
  read: (name: string) => PtahSchemaPlanChunk | undefined,
  /** The UIDs status committed; undefined on read-back, before there are any. */
  committed: readonly PublishedChunk[] | undefined,
):
  | {
      readonly ok: true;
      readonly bytes: Uint8Array;
      readonly chunks: readonly Uint8Array[];
      readonly publishedChunks: readonly PublishedChunk[];
    }
  | ReassemblyFailure {
  const planName = plan.metadata.name;
  const planUID = plan.metadata.uid ?? '';
  const parts: Uint8Array[] = [];
  const publishedChunks: PublishedChunk[] = [];
  for (const [i, chunk] of plan.spec.chunks.entries()) {
    const entry = committed?.[i];
    if (
      chunk.index !== i ||
      chunk.name !== chunkName(planName, i) ||
      (committed !== undefined && (entry?.index !== i || entry.name !== chunk.name))
    ) {
      return fail(chunk.name, 'OrderMismatch', `chunk ${i} of plan ${planName} is out of order or misnamed`);
    }
    const stored = read(chunk.name);
    const checked = checkChunk(chunk, planUID, stored, entry?.uid);
    if (!checked.ok) return fail(chunk.name, checked.reason, checked.message);
    const uid = stored?.metadata.uid;
    if (uid === undefined || uid === '')
      return fail(chunk.name, 'UIDMismatch', `chunk ${chunk.name} was read back without a UID`);
    parts.push(checked.bytes);
    publishedChunks.push({ name: chunk.name, uid, index: i });
  }
  const bytes = Buffer.concat(parts);
  if (bytes.length !== plan.spec.size) {
    return fail(
      planName,
      'PlanSizeMismatch',
      `plan ${planName} reassembles to ${bytes.length} bytes, not ${plan.spec.size}`,
    );
  }
  if (sha256Digest(bytes) !== plan.spec.binding.planContentDigest) {
    return fail(planName, 'PlanDigestMismatch', `plan ${planName} does not reassemble to its content digest`);
  }
  return { ok: true, bytes, chunks: parts, publishedChunks };
}

function fail(failing: string, reason: ReassemblyFailure['reason'], message: string): ReassemblyFailure {
  return { ok: false, failing, reason, message };
}
