/**
 * PtahSchemaPlan: the only thing an Apply may execute. Controller-created and immutable; its spec carries
 * every binding of the fingerprint as a named field, so the fingerprint can be recomputed from the plan
 * alone and compared with one recomputed from live inputs.
 */
import { API_GROUP, conditions, digest, objectName, objectRef, uid, type ObjectMeta } from './meta.ts';
import { boundReleases, EXECUTION_EPOCH_PATTERN, SOURCE_TYPES } from './ptah-schema.ts';
import { array, boolean, enumOf, integer, object, optional, string, type Infer } from './schema-dsl.ts';

/** Plan storage limits. The chunk count is derived so storage never advertises more than the runner executes. */
export const MAX_PLAN_BYTES = 8 * 1024 * 1024;
export const MAX_CHUNK_BYTES = 512 * 1024;
export const MAX_PLAN_CHUNKS = Math.ceil(MAX_PLAN_BYTES / MAX_CHUNK_BYTES);

/**
 * The plan contract this release writes and the only one it accepts. 2: ConfigMap UID + content digest;
 * 3: the execution binding epoch.
 */
export const PLAN_CONTRACT_VERSION = 3;

export const planBinding = object(
  {
    contractVersion: integer({
      minimum: PLAN_CONTRACT_VERSION,
      maximum: PLAN_CONTRACT_VERSION,
      description: 'Version of the plan contract: which bindings a plan carries and how they are checked.',
    }),
    schemaUID: uid('UID of the PtahSchema; a reused name is another resource.'),
    planContentDigest: digest('SHA-256 of the plan bytes.'),
    sourceType: enumOf(SOURCE_TYPES, {
      description: 'Which source the files came from: ConfigMap, OCI or Git.',
    }),
    configMapUID: optional(uid('UID of the source ConfigMap, for a ConfigMap source.')),
    verificationPolicyUID: optional(uid('UID of the verification policy, for an OCI source.')),
    verificationPolicyDigest: optional(
      digest('SHA-256 of the verification policy bytes, for an OCI source.'),
    ),
    sourcePolicyUID: optional(
      uid('UID of the source policy, for a ConfigMap or Git source that names one in spec.sourcePolicyFrom.'),
    ),
    sourcePolicyDigest: optional(
      digest('SHA-256 of the source policy data: an edit to the policy retires the plan.'),
    ),
    sourceDigest: optional(
      digest(
        'SHA-256 of the repository URL and the path, for a Git source: another repository or path retires the plan.',
      ),
    ),
    contentDigest: digest('Content digest of the source files.'),
    coordinationDigest: digest('Digest of the database realm.'),
    targetIdentityDigest: digest('Credential-free identity of the route to the database.'),
    observedStateFingerprint: digest('Fingerprint of the database state the plan was computed from.'),
    desiredStateFingerprint: digest('Fingerprint of the declared state.'),
    policyFingerprint: digest('Digest of the normalised spec.policy.'),
    executionEpoch: string({
      pattern: EXECUTION_EPOCH_PATTERN,
      maxLength: 35,
      description: 'The execution binding epoch the plan was computed under; a retired epoch never applies.',
    }),
    ...boundReleases,
    dialect: enumOf(['postgres', 'mysql'], { description: 'The SQL dialect the plan is written in.' }),
    destructive: boolean({
      description: 'Whether the plan drops or narrows something; then approval is required.',
    }),
    statementCount: integer({ minimum: 1, description: 'Number of SQL statements in the plan.' }),
  },
  { description: 'Every input the plan was computed from; an Apply runs only while each still holds.' },
);
export type PlanBinding = Infer<typeof planBinding>;

export const planChunk = object({
  name: objectName(
    'The PtahSchemaPlanChunk holding the chunk, and the ConfigMap projecting it for an Apply.',
  ),
  index: integer({
    minimum: 0,
    maximum: MAX_PLAN_CHUNKS - 1,
    description: 'Position of the chunk in the plan.',
  }),
  digest: digest('SHA-256 of the chunk bytes.'),
  size: integer({ minimum: 1, maximum: MAX_CHUNK_BYTES, description: 'Bytes in the chunk.' }),
});
export type PlanChunk = Infer<typeof planChunk>;

export const ptahSchemaPlanSpec = object(
  {
    schemaRef: objectRef('The PtahSchema the plan belongs to.'),
    fingerprint: digest('SHA-256 of the canonical binding; what an approval names.'),
    binding: planBinding,
    size: integer({ minimum: 1, maximum: MAX_PLAN_BYTES, description: 'Bytes in the whole plan.' }),
    chunks: array(planChunk, {
      description: 'The chunks the plan bytes are stored in, in order; each checked by size and digest.',
      minItems: 1,
      maxItems: MAX_PLAN_CHUNKS,
      listType: 'atomic',
    }),
  },
  {
    description: 'An immutable plan: the exact SQL an Apply runs, stored in chunks, bound to its inputs.',
    validations: [
      { rule: 'self == oldSelf', message: 'a plan is immutable' },
      {
        rule: 'self.binding.schemaUID == self.schemaRef.uid',
        message: 'binding.schemaUID must equal schemaRef.uid',
      },
    ],
  },
);
export type PtahSchemaPlanSpec = Infer<typeof ptahSchemaPlanSpec>;

export const publishedChunk = object({
  name: objectName('The PtahSchemaPlanChunk.'),
  uid: uid('UID read back after the chunk was verified.'),
  index: integer({ minimum: 0, maximum: MAX_PLAN_CHUNKS - 1, description: 'Position of the chunk.' }),
});
export type PublishedChunk = Infer<typeof publishedChunk>;

export const ptahSchemaPlanStatus = object(
  {
    publishedChunks: optional(
      array(publishedChunk, {
        description: 'Committed only after every chunk was read back and verified.',
        maxItems: MAX_PLAN_CHUNKS,
        listType: 'atomic',
      }),
    ),
    conditions: optional(conditions),
  },
  { description: 'Publication: the chunks committed after read-back, and Ready once they are.' },
);
export type PtahSchemaPlanStatus = Infer<typeof ptahSchemaPlanStatus>;

export interface PtahSchemaPlan {
  readonly apiVersion: `${typeof API_GROUP}/v1alpha1`;
  readonly kind: 'PtahSchemaPlan';
  readonly metadata: ObjectMeta;
  readonly spec: PtahSchemaPlanSpec;
  readonly status?: PtahSchemaPlanStatus;
}
