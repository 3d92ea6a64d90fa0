/**
 * Rebuilds a published plan's bytes from its chunk ConfigMaps, immediately before an Apply is dispatched.
 * Every check the plan contract promises runs here: names, UIDs, order, sizes, per-chunk hashes and the
 * whole hash. A failure names the chunk (or the plan) and what failed; nothing partial is returned.
 */
import type { ConfigMapObject } from '../api/core.ts';
import { sha256Digest } from '../api/digest.ts';
import type { PtahSchemaPlan } from '../api/ptah-schema-plan.ts';
import { checkChunk, type ChunkFailure } from './chunk-config-map.ts';
import { chunkName } from './split-plan.ts';

export type Reassembly =
  | { readonly ok: true; readonly bytes: Uint8Array }
  | {
      readonly ok: false;
      /** The chunk that failed, or the plan's own name for a whole-plan failure. */
      readonly failing: string;
      readonly reason:
        ChunkFailure | 'NotPublished' | 'OrderMismatch' | 'PlanSizeMismatch' | 'PlanDigestMismatch';
      readonly message: string;
    };

export function reassemblePlan(
  plan: PtahSchemaPlan,
  read: (name: string) => ConfigMapObject | undefined,
): Reassembly {
  const planName = plan.metadata.name;
  const planUID = plan.metadata.uid ?? '';
  const fail = (failing: string, reason: Exclude<Reassembly, { ok: true }>['reason'], message: string) =>
    ({ ok: false, failing, reason, message }) as const;
  const chunks = plan.spec.chunks;
  const published = plan.status?.publishedChunks;
  if (published === undefined || published.length !== chunks.length) {
    return fail(planName, 'NotPublished', `plan ${planName} has not committed all of its chunks`);
  }
  const parts: Uint8Array[] = [];
  for (const [i, chunk] of chunks.entries()) {
    const committed = published[i]!;
    if (
      chunk.index !== i ||
      committed.index !== i ||
      chunk.name !== chunkName(planName, i) ||
      committed.name !== chunk.name
    ) {
      return fail(chunk.name, 'OrderMismatch', `chunk ${i} of plan ${planName} is out of order or misnamed`);
    }
    const checked = checkChunk(chunk, planUID, read(chunk.name), committed.uid);
    if (!checked.ok) return fail(chunk.name, checked.reason, checked.message);
    parts.push(checked.bytes);
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
  return { ok: true, bytes };
}
