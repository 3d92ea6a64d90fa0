/**
 * PtahMigrationPlan: the sequence an Apply runs and nothing else. Controller-created and immutable, and it
 * stores no SQL: the files stay in the checked snapshot, and the plan names each one by version, version key
 * and checksum, so Ptah can compare the sequence with its own selection under the migration lock.
 */
import { API_GROUP, conditions, digest, objectRef, uid, type ObjectMeta } from './meta.ts';
import {
  MAX_PLAN_MIGRATIONS,
  TRANSACTION_MODES,
  historyVersion,
  migrationVersion,
} from './ptah-migration.ts';
import { boundReleases, EXECUTION_EPOCH_PATTERN, SOURCE_TYPES } from './ptah-schema.ts';
import { array, boolean, enumOf, integer, object, optional, string, type Infer } from './schema-dsl.ts';

/** The migration plan contract this release writes and the only one it accepts. 2: the execution binding epoch. */
export const MIGRATION_PLAN_CONTRACT_VERSION = 2;

export const plannedMigration = object({
  version: migrationVersion('The migration version.'),
  versionKey: string({
    description: 'The version as the file name spells it.',
    pattern: '^[A-Za-z0-9._-]+$',
    minLength: 1,
    maxLength: 128,
  }),
  description: string({ description: 'The description the file name carries; not bound.', maxLength: 128 }),
  checksum: string({
    description: 'Checksum Ptah records for the file.',
    pattern: '^[A-Za-z0-9:+/=_-]+$',
    minLength: 1,
    maxLength: 128,
  }),
  checkpoint: boolean({ description: 'Whether the file is a checkpoint covering lower versions.' }),
  transactionMode: enumOf(TRANSACTION_MODES, { description: 'The transaction mode the file declares.' }),
});
export type PlannedMigration = Infer<typeof plannedMigration>;

export const migrationPlanBinding = object(
  {
    contractVersion: integer({
      minimum: MIGRATION_PLAN_CONTRACT_VERSION,
      maximum: MIGRATION_PLAN_CONTRACT_VERSION,
      description: 'Version of the plan contract: which bindings a plan carries and how they are checked.',
    }),
    migrationUID: uid('UID of the PtahMigration; a reused name is another resource.'),
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
    contentDigest: digest('Content digest of the migration files.'),
    coordinationDigest: digest('Digest of the database realm.'),
    targetIdentityDigest: digest('Credential-free identity of the route to the database.'),
    historyFingerprint: digest('Fingerprint of the history the sequence was selected against.'),
    currentVersion: historyVersion('The version the history stood at; 0 for an empty history.'),
    transactionMode: enumOf(TRANSACTION_MODES, {
      description:
        'spec.policy.transactionMode, unset included: a sequence under another wrapping is another run.',
    }),
    executionEpoch: string({
      pattern: EXECUTION_EPOCH_PATTERN,
      maxLength: 35,
      description: 'The execution binding epoch the plan was computed under; a retired epoch never applies.',
    }),
    ...boundReleases,
    dialect: enumOf(['postgres', 'mysql'], { description: 'The SQL dialect the plan is written in.' }),
  },
  { description: 'Every input the plan was computed from; an Apply runs only while each still holds.' },
);
export type MigrationPlanBinding = Infer<typeof migrationPlanBinding>;

export const ptahMigrationPlanSpec = object(
  {
    migrationRef: objectRef('The PtahMigration the plan belongs to.'),
    fingerprint: digest('SHA-256 of the canonical binding and sequence; what an approval names.'),
    binding: migrationPlanBinding,
    migrations: array(plannedMigration, {
      description: 'The pending sequence in the order it runs; the order is content.',
      minItems: 1,
      maxItems: MAX_PLAN_MIGRATIONS,
      listType: 'atomic',
      validations: [
        {
          rule: 'self.all(a, self.exists_one(b, b.version == a.version))',
          message: 'two migrations have the same version',
        },
      ],
    }),
  },
  {
    description:
      'An immutable plan: the pending migrations in the order an Apply runs them, bound to its inputs.',
    validations: [
      { rule: 'self == oldSelf', message: 'a plan is immutable' },
      {
        rule: 'self.binding.migrationUID == self.migrationRef.uid',
        message: 'binding.migrationUID must equal migrationRef.uid',
      },
    ],
  },
);
export type PtahMigrationPlanSpec = Infer<typeof ptahMigrationPlanSpec>;

export const ptahMigrationPlanStatus = object(
  { conditions: optional(conditions) },
  { description: 'Conditions the operator reports on the plan.' },
);
export type PtahMigrationPlanStatus = Infer<typeof ptahMigrationPlanStatus>;

export interface PtahMigrationPlan {
  readonly apiVersion: `${typeof API_GROUP}/v1alpha1`;
  readonly kind: 'PtahMigrationPlan';
  readonly metadata: ObjectMeta;
  readonly spec: PtahMigrationPlanSpec;
  readonly status?: PtahMigrationPlanStatus;
}
