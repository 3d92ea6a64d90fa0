/**
 * Splits plan bytes into the chunks that store them. A chunk boundary is a raw byte cut (it may split a
 * UTF-8 sequence); only the reassembled whole is ever parsed.
 */
import { sha256Digest, type Sha256Digest } from '../api/digest.ts';
import { MAX_CHUNK_BYTES, MAX_PLAN_BYTES, MAX_PLAN_CHUNKS, type PlanChunk } from '../api/ptah-schema-plan.ts';

export interface PlanPiece {
  readonly name: string;
  readonly index: number;
  readonly bytes: Uint8Array;
  readonly digest: Sha256Digest;
  readonly size: number;
}

export class PlanSizeError extends Error {
  override readonly name = 'PlanSizeError';
}

/** `<plan>-000` … `<plan>-015`: the plan names its chunks, so a chunk cannot be swapped for another plan's. */
export function chunkName(planName: string, index: number): string {
  return `${planName}-${String(index).padStart(3, '0')}`;
}

export function splitPlan(planName: string, bytes: Uint8Array): PlanPiece[] {
  if (bytes.length === 0) throw new PlanSizeError('a plan with no bytes cannot be stored');
  if (bytes.length > MAX_PLAN_BYTES) {
    throw new PlanSizeError(
      `the plan has ${bytes.length} bytes; at most ${MAX_PLAN_BYTES} can be stored and executed`,
    );
  }
  const pieces: PlanPiece[] = [];
  for (let offset = 0, index = 0; offset < bytes.length; offset += MAX_CHUNK_BYTES, index++) {
    const slice = bytes.subarray(offset, Math.min(offset + MAX_CHUNK_BYTES, bytes.length));
    pieces.push({
      name: chunkName(planName, index),
      index,
      bytes: slice,
      digest: sha256Digest(slice),
      size: slice.length,
    });
  }
  // Holds by construction from the two limits; kept as a guard should either ever change alone.
  if (pieces.length > MAX_PLAN_CHUNKS) throw new PlanSizeError(`the plan needs ${pieces.length} chunks`);
  return pieces;
}

/** The chunk list the plan spec records. */
export function chunkSpecs(pieces: readonly PlanPiece[]): PlanChunk[] {
  return pieces.map(({ name, index, digest, size }) => ({ name, index, digest, size }));
}
