/**
 * The result an operation Pod reports: what the runner did, for which claim, and the bounded outputs the
 * manager may act on. Shared by the runner (writer) and the manager (reader) through `frame.ts`.
 *
 * Nothing here may carry a credential, SQL text or row values except `plan.bytesBase64`: the plan bytes
 * ARE the statements, and they travel to the manager only to be published into the plan store, which is
 * where the seed says plan bytes live.
 */

import type { FailureCause } from './cause.ts';

/** Bumped whenever a field's meaning changes; a runner of another version is refused by the manager. */
export const RUNNER_PROTOCOL_VERSION = 1;

export const RUNNER_OPERATIONS = [
  'observe',
  'plan',
  'apply',
  'migration-history',
  'migration-apply',
  'check-snapshot',
  'resolve',
  'verify',
  'guard-oci-source',
  'fetch-oci',
  'fetch-git',
] as const;
export type RunnerOperation = (typeof RUNNER_OPERATIONS)[number];

export function isRunnerOperation(value: unknown): value is RunnerOperation {
  return typeof value === 'string' && (RUNNER_OPERATIONS as readonly string[]).includes(value);
}

/** How the operation ended, from the runner's point of view. Never "converged": only a later plan says that. */
export type RunnerOutcome =
  /** Ptah ran and the runner accepted its output. */
  | 'succeeded'
  /** Ptah ran and failed, or its output was refused; nothing the runner knows was changed by a mutating op. */
  | 'failed'
  /** The runner refused before Ptah started: configuration, inputs, protocol. Nothing ran. */
  | 'refused'
  /** A mutating operation may have changed the database and the runner cannot say how far it got. */
  | 'uncertain';

export interface RunnerError {
  /** A stable, typed code the manager maps to a condition reason, e.g. `plans_differ`. */
  readonly code: string;
  /** Short, redacted, human text. */
  readonly message: string;
}

export interface DriftSummary {
  /** sha256 of the raw drift report, which stays inside the Pod. */
  readonly reportDigest: string;
  readonly drifted: boolean;
  readonly total: number;
  /** Highest finding severity Ptah reported, or 'none'. */
  readonly highestSeverity: string;
  /** Findings per category, at most 64 categories; the rest are counted under `other`. */
  readonly categories: Readonly<Record<string, number>>;
  /** The server read, when Ptah named it in words the frame allows (additive; absent from older runners). */
  readonly server?: ServerReport;
}

/** The products an engine family covers: MariaDB is the mysql engine, told apart only here. */
export const SERVER_PRODUCTS = ['PostgreSQL', 'MySQL', 'MariaDB'] as const;
export const SERVER_VERSION_PATTERN = '^[0-9]{1,5}(\\.[0-9]{1,5}){0,2}$';

/** A database server's product and release: a fixed vocabulary and digits only. */
export interface ServerReport {
  readonly product: (typeof SERVER_PRODUCTS)[number];
  /** `10.11.6`: one to three dot-separated numbers. */
  readonly version: string;
}

/** A server report from untrusted JSON, or undefined when it is not exactly one in the allowed words. */
export function serverReportOf(value: unknown): ServerReport | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { product, version } = value as Record<string, unknown>;
  const known = SERVER_PRODUCTS.find((p) => p === product);
  if (known === undefined || typeof version !== 'string') return undefined;
  if (!new RegExp(SERVER_VERSION_PATTERN).test(version)) return undefined;
  return { product: known, version };
}

export interface PlanOutputs {
  readonly planOutcome: 'Changes' | 'NoChanges';
  /** sha256 of the exact plan bytes both plans produced. */
  readonly planContentDigest: string;
  readonly planSize: number;
  /** The plan bytes, base64, present only for `Changes`. */
  readonly bytesBase64?: string;
  /** Statement count the apply dry-run reported for those bytes, when it reported one. */
  readonly dryRunStatements?: number;
  /** Read from the plan document when Ptah states them; the manager binds them into the fingerprint. */
  readonly statementCount?: number;
  readonly destructive?: boolean;
  readonly observedStateFingerprint?: string;
  readonly desiredStateFingerprint?: string;
}

export interface ApplyOutputs {
  readonly planContentDigest: string;
  /** Whether the runner started the mutating child at all. */
  readonly mutationStarted: boolean;
  /**
   * A MySQL apply that failed after its first statement (exit 5): which statement failed and how, as
   * numbers and the SQLSTATE only (the server's message may quote row values, so it stays in the Pod log).
   */
  readonly partial?: PartialApply;
}

export interface PartialApply {
  /** 1-based position of the failing statement in the plan. */
  readonly position: number;
  /** How many statements before it ran and stay applied. */
  readonly applied: number;
  readonly errno?: number;
  readonly sqlstate?: string;
}

export interface SnapshotOutputs {
  readonly contentDigest: string;
  readonly files: number;
  /** The manifest path that failed, when the snapshot was refused. */
  readonly failingFile?: string;
}

/** The six verdicts of `ptah migrations status`, in Ptah's words and in its order of precedence. */
export const MIGRATION_VERDICTS = [
  'dirty',
  'modified',
  'out_of_order',
  'ahead',
  'pending',
  'up_to_date',
] as const;
export type MigrationVerdict = (typeof MIGRATION_VERDICTS)[number];

/** A history reading with more pending migrations than this is refused (`too_many_pending`), not cut. */
export const MAX_FRAME_PENDING_MIGRATIONS = 1000;
/** Each list of versions a Blocked verdict names keeps at most this many, lowest first. */
export const MAX_FRAME_BLOCKED_VERSIONS = 64;

/** One entry of Ptah's own pending selection, in the order it would run. No SQL. */
export interface PendingMigrationOutput {
  /** Canonical decimal string, 1 to 2^63-1, no leading zero. */
  readonly version: string;
  /** The version as the file name spells it (leading zeros kept), at most 128 characters. */
  readonly versionKey: string;
  /** From the file name, at most 128 characters (longer ones are cut): for people, not bound. */
  readonly description: string;
  /** SHA-256 hex of the file bytes, as Ptah records it in the revision table. */
  readonly checksum: string;
  /** The file is a checkpoint (it stands for every lower version on an empty history). */
  readonly checkpoint: boolean;
  /** The file's own `-- ptah:txmode` directive; `unset` when it has none. */
  readonly transactionMode: 'file' | 'none' | 'unset';
}

/** What `migration-history` read: Ptah's verdict and selection, versions and digests only. */
export interface MigrationHistoryOutputs {
  readonly verdict: MigrationVerdict;
  /** Newest version in the history; `0` on an empty history. */
  readonly currentVersion: string;
  /** The checkpoint the history stands on, or on an empty history the one the selection starts at. */
  readonly checkpointVersion?: string;
  readonly appliedCount: number;
  /** Ptah's pending count (equal to `pending.length`). */
  readonly pendingCount: number;
  /**
   * `sha256:<hex>` of the applied history (Ptah's status `fingerprint`: the revision rows sorted by version,
   * each {version, checksum, checkpoint, dirty}): what a migration plan binds, and what Apply may hand back
   * as PTAH_EXPECTED_HISTORY_FINGERPRINT.
   */
  readonly historyFingerprint: string;
  /** Ptah's own pending selection in run order, at most MAX_FRAME_PENDING_MIGRATIONS. */
  readonly pending: readonly PendingMigrationOutput[];
  /** The versions each Blocked verdict concerns (all four are reported whatever the verdict), lowest first. */
  readonly dirtyVersions: readonly string[];
  readonly modifiedVersions: readonly string[];
  readonly outOfOrderVersions: readonly string[];
  readonly aheadVersions: readonly string[];
  /** How many versions the four lists above left off (each keeps MAX_FRAME_BLOCKED_VERSIONS). */
  readonly versionsOmitted?: number;
}

/** Why `ptah migrations up` stopped short (docs/cli-migrations.md); a fixed vocabulary, never text. */
export const MIGRATION_RUN_REASONS = [
  'sequence_mismatch',
  'history_mismatch',
  'history_dirty',
  'history_modified',
  'history_out_of_order',
  'history_ahead',
  'lock_timeout',
  'invalid_directory',
  'invalid_file',
  'statement_failed',
  'connection_lost',
  'database_error',
  'connection_failed',
  'interrupted',
] as const;
export type MigrationRunReason = (typeof MIGRATION_RUN_REASONS)[number];

/** Ptah's outcome of `migrations up`; `unknown` also when no readable report came back at all. */
export type MigrationRunOutcome = 'up_to_date' | 'applied' | 'failed' | 'partial' | 'unknown';

/** Where a run stopped: numbers and codes only, never the statement or the server's message. */
export interface MigrationStop {
  readonly version: string;
  /** 1-based position of the failing statement in its file, when a statement reached the database. */
  readonly position?: number;
  /** How many statements of that file stay applied (a `partial` run); 0 when the file committed nothing. */
  readonly statementsApplied?: number;
  readonly sqlstate?: string;
  /** MySQL/MariaDB error number. */
  readonly errno?: number;
}

/** What `migration-apply` did. */
export interface MigrationApplyOutputs {
  readonly runOutcome: MigrationRunOutcome;
  /**
   * False only when nothing can have been written: the runner refused before ptah started, or ptah refused
   * under the lock before its first write (sequence or history mismatch, Blocked history, lock timeout…).
   */
  readonly mutationStarted: boolean;
  /** Versions this run applied and committed, in order (at most MAX_FRAME_PENDING_MIGRATIONS). */
  readonly appliedVersions: readonly string[];
  readonly stoppedAt?: MigrationStop;
  /** Ptah's reason, when its report gave one (absent for a success and for a run without a report). */
  readonly reason?: MigrationRunReason;
  /**
   * For `sequence_mismatch`: the first differing position (0-based) and the version on each side (absent
   * when that side ended). Checksums are left out: the plan has the expected ones.
   */
  readonly mismatch?: {
    readonly position: number;
    readonly expectedVersion?: string;
    readonly actualVersion?: string;
  };
}

/** What Resolve read from the registry: the digest behind the requested reference, and what it names. */
export interface ArtifactOutputs {
  readonly requestedReference: string;
  /** `repository@sha256:<hex>`: what every later operation fetches. */
  readonly resolvedReference: string;
  readonly digest: string;
  readonly mediaType: string;
  readonly artifactType: string;
  readonly size: number;
}

/**
 * At most this many findings cross the boundary, each message at most MAX_FINDING_MESSAGE characters: room
 * for a signature finding that names its tag and two digests whole (about 290), and what status keeps of one
 * (resolution.verification.refused.message).
 */
export const MAX_VERIFICATION_FINDINGS = 16;
export const MAX_FINDING_MESSAGE = 512;

/** What Verify found: the policy's verdict, and the artifact type it read from the pinned manifest itself. */
export interface VerificationOutputs {
  readonly satisfied: boolean;
  /** The digest of the policy bytes the runner evaluated (it refuses bytes that do not give the claimed one). */
  readonly policyDigest: string;
  /** The pinned artifact's digest, as the registry served it. */
  readonly digest: string;
  /** Read from the manifest independently of the policy evaluation. */
  readonly inspectedArtifactType: string;
  readonly findings: readonly { readonly rule: string; readonly message: string }[];
  /** The policy keys whose signatures verified. */
  readonly signers: readonly string[];
}

/** What an OCI fetch init container wrote: the pinned artifact's files, by digest. */
export interface FetchOutputs {
  readonly digest: string;
  readonly contentDigest: string;
  readonly files: number;
}

/** What a Git Resolve found: the commit the ref names now and the content digest of the selected files. */
export interface GitCommitOutputs {
  readonly repository: string;
  /** refs/heads/<branch>, refs/tags/<tag> or the commit id, as the Job was given it. */
  readonly ref: string;
  readonly path: string;
  readonly commit: string;
  readonly contentDigest: string;
  /** sha256 of the repository URL and the path (what a plan binds beside the content digest). */
  readonly sourceDigest: string;
  readonly files: number;
  readonly size: number;
}

export interface RunnerOutputs {
  readonly drift?: DriftSummary;
  readonly plan?: PlanOutputs;
  readonly apply?: ApplyOutputs;
  readonly snapshot?: SnapshotOutputs;
  readonly history?: MigrationHistoryOutputs;
  readonly migrationApply?: MigrationApplyOutputs;
  readonly artifact?: ArtifactOutputs;
  readonly verification?: VerificationOutputs;
  readonly fetch?: FetchOutputs;
  readonly gitCommit?: GitCommitOutputs;
}

export interface OutputTruncation {
  readonly stdoutBytesDropped: number;
  readonly stderrBytesDropped: number;
}

/** The database the Pod was pointed at, without any credential: what the manager compares with its claim. */
export interface TargetReport {
  readonly dialect: 'postgres' | 'mysql';
  /** sha256 of the canonical {dialect, host, port, database, user}; never the password. */
  readonly identityDigest: string;
}

export interface RunnerResult {
  readonly protocolVersion: number;
  readonly operation: RunnerOperation;
  readonly operationId: string;
  /** The runner's own exit code (see docs/runner.md). */
  readonly exitCode: number;
  /** The last `ptah` exit code, or -1 when the runner refused before starting it. */
  readonly childExitCode: number;
  readonly outcome: RunnerOutcome;
  /** RFC 3339 instants. */
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly outputs: RunnerOutputs;
  readonly target?: TargetReport;
  readonly error?: RunnerError;
  /**
   * Why it failed, classified and bounded (src/protocol/cause.ts): additive, absent when nothing
   * classifies it; a manager that does not know it reads the error code alone.
   */
  readonly cause?: FailureCause;
  readonly truncation?: OutputTruncation;
}
