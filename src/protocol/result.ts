/**
 * The result an operation Pod reports: what the runner did, for which claim, and the bounded outputs the
 * manager may act on. Shared by the runner (writer) and the manager (reader) through `frame.ts`.
 *
 * Nothing here may carry a credential, SQL text or row values except `plan.bytesBase64`: the plan bytes
 * ARE the statements, and they travel to the manager only to be published into the plan store, which is
 * where the seed says plan bytes live.
 */

/** Bumped whenever a field's meaning changes; a runner of another version is refused by the manager. */
export const RUNNER_PROTOCOL_VERSION = 1;

export const RUNNER_OPERATIONS = [
  'observe',
  'plan',
  'apply',
  'migration-history',
  'migration-apply',
  'check-snapshot',
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

export interface RunnerOutputs {
  readonly drift?: DriftSummary;
  readonly plan?: PlanOutputs;
  readonly apply?: ApplyOutputs;
  readonly snapshot?: SnapshotOutputs;
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
  readonly truncation?: OutputTruncation;
}
