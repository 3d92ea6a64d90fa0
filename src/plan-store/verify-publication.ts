/**
 * Publication's read-back step: every chunk just written is read back from the API server and checked
 * against the plan before the plan's status commits the chunks' UIDs. Only then is the plan Ready.
 */
import type { ConfigMapObject } from '../api/core.ts';
import type { PtahSchemaPlan, PublishedChunk } from '../api/ptah-schema-plan.ts';
import { checkChunk, type ChunkFailure } from './chunk-config-map.ts';

export type PublicationCheck =
  | { readonly ok: true; readonly publishedChunks: readonly PublishedChunk[] }
  | { readonly ok: false; readonly failing: string; readonly reason: ChunkFailure; readonly message: string };

export function verifyPublication(
  plan: PtahSchemaPlan,
  readBack: (name: string) => ConfigMapObject | undefined,
): PublicationCheck {
  const published: PublishedChunk[] = [];
  for (const chunk of plan.spec.chunks) {
    const cm = readBack(chunk.name);
    const checked = checkChunk(chunk, plan.metadata.uid ?? '', cm);
    if (!checked.ok)
      return { ok: false, failing: chunk.name, reason: checked.reason, message: checked.message };
    const uid = cm?.metadata.uid;
    if (uid === undefined || uid === '') {
      return {
        ok: false,
        failing: chunk.name,
        reason: 'UIDMismatch',
        message: `chunk ${chunk.name} was read back without a UID`,
      };
    }
    published.push({ name: chunk.name, uid, index: chunk.index });
  }
  return { ok: true, publishedChunks: published };
}
