/**
 * PtahMigration: a versioned migration directory applied to a database in order, through plans a person
 * approves. It stands on the same pieces as PtahSchema (target, source, execution, claim, journal,
 * execution binding); what is its own is the history it reads and the record of the runs it made.
 */
import {
  API_GROUP,
  conditions,
  digest,
  objectName,
  objectRef,
  observedGeneration,
  timestamp,
  uid,
  type ObjectMeta,
} from './meta.ts';
import { approver } from './ptah-schema-approval.ts';
import {
  APPLY_POLICIES,
  boundedDuration,
  claimOf,
  desiredSource,
  execution,
  executionBinding,
  journalOf,
  resolution,
  target,
  targetStatus,
  VERIFICATION_POLICY_RULE,
  verificationPolicyFrom,
  sourcePolicyFrom,
  SOURCE_POLICY_RULE,
} from './ptah-schema.ts';
import {
  array,
  boolean,
  defaulted,
  described,
  enumOf,
  integer,
  object,
  optional,
  string,
  type Infer,
} from './schema-dsl.ts';

export const MIGRATION_PHASES = [
  'Pending',
  'Resolving',
  'Verifying',
  'Reading',
  'Planning',
  'AwaitingApproval',
  'Applying',
  'VerifyingHistory',
  'InSync',
  'Blocked',
  'Failed',
  'Suspended',
] as const;
export type MigrationPhase = (typeof MIGRATION_PHASES)[number];

export const MIGRATION_CONDITION_TYPES = [
  'ArtifactResolved',
  'ArtifactVerified',
  'DatabaseReachable',
  'ApprovalRequired',
  'Progressing',
  'Blocked',
  'Ready',
  'Suspended',
  'ReconciliationFailed',
] as const;
export type MigrationConditionType = (typeof MIGRATION_CONDITION_TYPES)[number];

/** History reads the revision table and mutates nothing, so it takes no Lease; only Apply does. */
export const MIGRATION_OPERATION_TYPES = ['Resolve', 'Verify', 'History', 'Apply'] as const;
export type MigrationOperationType = (typeof MIGRATION_OPERATION_TYPES)[number];

/** What a file declares, and what spec.policy.transactionMode asks; `unset` is a value of its own in both. */
export const TRANSACTION_MODES = ['file', 'none', 'unset'] as const;
export type TransactionMode = (typeof TRANSACTION_MODES)[number];

/** The six verdicts of a history reading, as the seed lists them. */
export const HISTORY_VERDICTS = [
  'Dirty',
  'Modified',
  'OutOfOrder',
  'Ahead',
  'NothingPending',
  'ReadyToPlan',
] as const;
export type HistoryVerdict = (typeof HISTORY_VERDICTS)[number];

export const RUN_OUTCOMES = ['UpToDate', 'Applied', 'Failed', 'Partial', 'Unknown'] as const;
export type RunOutcome = (typeof RUN_OUTCOMES)[number];
/** The outcomes that latch: the database may hold part of a run, so nothing may run again until it is settled. */
export const UNRESOLVED_OUTCOMES = ['Partial', 'Unknown'] as const;
export type UnresolvedOutcome = (typeof UNRESOLVED_OUTCOMES)[number];

/** At most this many migrations in one plan, and so in one run. */
export const MAX_PLAN_MIGRATIONS = 256;
export const MAX_LISTED_VERSIONS = 64;

export const UNRESOLVED_RUN_ANNOTATION = `${API_GROUP}/unresolved-run`;
export const MIGRATION_FINALIZER = `${API_GROUP}/migration-operation`;

/**
 * A migration version as the engine spells it: the canonical decimal string of an integer from 1 to the
 * int64 maximum, no leading zeros. A string, because versions such as 14-digit timestamps and beyond pass
 * what a JSON number keeps exactly. With no leading zeros, strings of one length compare as numbers do.
 */
export const MAX_MIGRATION_VERSION = '9223372036854775807';
export const MIGRATION_VERSION_PATTERN = '^[1-9][0-9]{0,18}$';
const withinInt64 = {
  rule: `size(self) < 19 || self <= '${MAX_MIGRATION_VERSION}'`,
  message: `must be at most ${MAX_MIGRATION_VERSION}`,
};
export const migrationVersion = (description: string) =>
  string({ description, pattern: MIGRATION_VERSION_PATTERN, maxLength: 19, validations: [withinInt64] });
/** The version a history stands at: `0` before anything was applied. */
export const historyVersion = (description: string) =>
  string({ description, pattern: '^(0|[1-9][0-9]{0,18})$', maxLength: 19, validations: [withinInt64] });

const versionList = (description: string) =>
  array(migrationVersion('A migration version.'), {
    description,
    maxItems: MAX_LISTED_VERSIONS,
    listType: 'set',
  });

export const migrationPolicy = object({
  apply: defaulted(
    enumOf(APPLY_POLICIES, {
      description:
        'Never plans and applies nothing; OnApproval waits for a PtahMigrationApproval; Always applies.',
    }),
    'OnApproval',
  ),
  lockTimeout: defaulted(
    boundedDuration("How long an Apply waits for Ptah's migration lock.", '1s', '1h'),
    '5m',
  ),
  transactionMode: optional(
    enumOf(['file', 'none'], {
      description:
        'file wraps each file in a transaction, none runs statements one by one; unset lets Ptah choose. Bound into the plan: editing it retires the plan and its approval.',
    }),
  ),
});
export type MigrationPolicySpec = Infer<typeof migrationPolicy>;

export const ptahMigrationSpec = object(
  {
    target: described(target, 'The database whose history this resource reads and migrates.'),
    desired: described(
      desiredSource,
      'Where the versioned migration files are read from: exactly one of configMap, oci and git.',
    ),
    verificationPolicyFrom: optional(verificationPolicyFrom),
    sourcePolicyFrom: optional(sourcePolicyFrom),
    policy: defaulted(
      described(migrationPolicy, 'What may be applied and how: approval and transaction wrapping.'),
      {} as MigrationPolicySpec,
    ),
    interval: defaulted(boundedDuration('How often the history is read again.', '10s', '24h'), '10m'),
    execution: defaulted(
      described(execution, 'How operation Jobs run: deadlines and the retry interval.'),
      {} as Infer<typeof execution>,
    ),
    suspend: defaulted(boolean({ description: 'Start no new Job while true.' }), false),
  },
  {
    description: 'The database to migrate, the migration files, and the policy for applying them.',
    validations: [VERIFICATION_POLICY_RULE, SOURCE_POLICY_RULE],
  },
);
export type PtahMigrationSpec = Infer<typeof ptahMigrationSpec>;

export const migrationClaim = claimOf(MIGRATION_OPERATION_TYPES);
export type MigrationClaim = Infer<typeof migrationClaim>;

export const migrationJournal = journalOf(MIGRATION_OPERATION_TYPES);
export type MigrationJournal = Infer<typeof migrationJournal>;

const jobName = (description: string) =>
  string({ description, pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$', maxLength: 63 });

export const history = object(
  {
    observedAt: timestamp('When the history was read.'),
    contractVersion: integer({
      minimum: 1,
      maximum: 1024,
      description: 'Version of the history report the runner wrote.',
    }),
    verdict: enumOf(HISTORY_VERDICTS, { description: 'What the reading says, never a guess.' }),
    currentVersion: optional(historyVersion('The highest version applied; 0 on an empty history.')),
    checkpointVersion: optional(
      migrationVersion('The checkpoint a bootstrap applied; it covers lower versions.'),
    ),
    appliedCount: integer({ minimum: 0, description: 'Migrations the revision table records as applied.' }),
    pendingCount: integer({ minimum: 0, description: "Ptah's own pending selection, not a subtraction." }),
    fingerprint: digest('Fingerprint of the history read; a plan is bound to it.'),
    targetIdentityDigest: digest('Credential-free identity of the database read.'),
    dirty: boolean({ description: 'Whether the revision table records a run that did not finish.' }),
    modifiedVersions: optional(versionList('Applied versions whose checksum no longer matches the files.')),
    outOfOrderVersions: optional(versionList('Pending versions below one already applied.')),
  },
  { description: 'The last reading of the revision table: its verdict and counts, no SQL.' },
);
export type MigrationHistory = Infer<typeof history>;

export const migrationPlanStatus = object(
  {
    name: objectName('The current PtahMigrationPlan.'),
    uid: uid('UID of the plan.'),
    fingerprint: digest('Fingerprint an approval must name.'),
    createdAt: timestamp('When the plan was published.'),
  },
  { description: 'The current plan: published, waiting for approval or to be applied.' },
);
export type MigrationPlanStatus = Infer<typeof migrationPlanStatus>;

export const runFailure = object(
  {
    version: migrationVersion('The migration whose statement failed.'),
    statementPosition: integer({
      minimum: 1,
      description: 'One-based position of the statement in its file.',
    }),
    sqlState: optional(
      string({ pattern: '^[0-9A-Z]{5}$', maxLength: 5, description: 'The SQLSTATE answered.' }),
    ),
    mysqlErrorNumber: optional(
      integer({ minimum: 1, maximum: 65535, description: 'The MySQL or MariaDB error number answered.' }),
    ),
  },
  { description: 'Where a statement reached the database and failed; no text, as the message carries none.' },
);
export type RunFailure = Infer<typeof runFailure>;

export const lastRun = object(
  {
    outcome: enumOf(RUN_OUTCOMES, { description: 'How the run ended.' }),
    operationId: digest('The Apply operation that ran.'),
    jobName: jobName('The Job the run executed in.'),
    jobUID: optional(uid('UID of the Job.')),
    planRef: optional(objectRef('The plan run.')),
    startedAt: timestamp('When the run was dispatched.'),
    finishedAt: timestamp('When its outcome was read.'),
    appliedVersions: optional(
      array(migrationVersion('A version applied.'), {
        description: 'The versions the run applied, in order.',
        maxItems: MAX_PLAN_MIGRATIONS,
        listType: 'atomic',
      }),
    ),
    failure: optional(runFailure),
  },
  { description: 'The last migration run: its outcome, the versions it applied, where it stopped.' },
);
export type LastRun = Infer<typeof lastRun>;

export const unresolvedRun = object(
  {
    outcome: enumOf(UNRESOLVED_OUTCOMES, {
      description: 'Partial or Unknown: the database may hold part of the run.',
    }),
    operationId: digest('The operation an acknowledgment must name.'),
    jobName: jobName('The Job the run executed in.'),
    jobUID: optional(uid('UID of the Job.')),
    planRef: optional(objectRef('The plan the run executed.')),
    targetIdentityDigest: optional(digest('The database the run reached; only its history can settle it.')),
    recordedAt: timestamp('When the run was recorded as unresolved.'),
  },
  { description: 'A run that may have changed part of the database; every later Apply waits for it.' },
);
export type UnresolvedRun = Infer<typeof unresolvedRun>;

export const resolvedRun = object(
  {
    operationId: digest('The run settled.'),
    outcome: enumOf(UNRESOLVED_OUTCOMES, {
      description: 'How the settled run had ended: Partial or Unknown.',
    }),
    resolution: enumOf(['Acknowledged', 'HistoryRead'], {
      description: 'What settled it: a person acknowledged it, or a history reading showed nothing pending.',
    }),
    acknowledgmentRef: optional(objectRef('The acknowledgment that settled it.')),
    acknowledgedBy: optional(approver),
    resolvedAt: timestamp('When it was settled.'),
  },
  { description: 'The unresolved run last settled, and how.' },
);
export type ResolvedRun = Infer<typeof resolvedRun>;

export const ptahMigrationStatus = object({
  observedGeneration,
  phase: optional(enumOf(MIGRATION_PHASES, { description: 'Where the resource is in its lifecycle.' })),
  conditions: optional(conditions),
  executionBinding: optional(executionBinding),
  resolution: optional(resolution),
  target: optional(targetStatus),
  history: optional(history),
  claim: optional(migrationClaim),
  plan: optional(migrationPlanStatus),
  lastRun: optional(lastRun),
  unresolvedRun: optional(unresolvedRun),
  resolvedRun: optional(resolvedRun),
  journal: optional(migrationJournal),
  lastReadRequest: optional(string({ maxLength: 80, description: 'The read request last answered.' })),
  lastAttemptTime: optional(timestamp('When an operation last started.')),
  nextReconciliationTime: optional(timestamp('When the history is read again.')),
});
export type PtahMigrationStatus = Infer<typeof ptahMigrationStatus>;

export interface PtahMigration {
  readonly apiVersion: `${typeof API_GROUP}/v1alpha1`;
  readonly kind: 'PtahMigration';
  readonly metadata: ObjectMeta;
  readonly spec: PtahMigrationSpec;
  readonly status?: PtahMigrationStatus;
}
