/**
 * PtahSchemaPlanChunk: one piece of a plan's bytes, its own kind so that reading a plan takes one RBAC rule
 * on an operator kind (`get ptahschemaplanchunks`) and never ConfigMap read access, which is namespace-wide
 * while plan bytes can hold data literals. Created by the manager, owned by its plan, immutable; pods cannot
 * mount it, so an Apply mounts a projection of it (plan-store/plan-projection.ts).
 */
import { API_GROUP, type ObjectMeta } from './meta.ts';
import { MAX_CHUNK_BYTES } from './ptah-schema-plan.ts';
import { object, string, type Infer } from './schema-dsl.ts';

/** Base64 of MAX_CHUNK_BYTES bytes, padding included: the longest `data` the API server stores. */
export const MAX_CHUNK_DATA_CHARS = Math.ceil(MAX_CHUNK_BYTES / 3) * 4;

export const ptahSchemaPlanChunkSpec = object(
  {
    data: string({
      description: 'The chunk bytes (base64 on the wire), at most 512 KiB.',
      format: 'byte',
      minLength: 1,
      maxLength: MAX_CHUNK_DATA_CHARS,
    }),
  },
  {
    description: 'The chunk, written once by the manager when it publishes the plan; never changed.',
    validations: [{ rule: 'self == oldSelf', message: 'a plan chunk is immutable' }],
  },
);
export type PtahSchemaPlanChunkSpec = Infer<typeof ptahSchemaPlanChunkSpec>;

export interface PtahSchemaPlanChunk {
  readonly apiVersion: `${typeof API_GROUP}/v1alpha1`;
  readonly kind: 'PtahSchemaPlanChunk';
  readonly metadata: ObjectMeta;
  readonly spec: PtahSchemaPlanChunkSpec;
}
