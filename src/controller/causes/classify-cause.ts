/**
 * A failed operation's cause as a condition reason and message, for every resource family (schemas and
 * migrations read the same frames and the same Pods). The message is built here from codes and the
 * user's own file positions only: a server's text can quote values, so none of it is ever shown.
 *
 * Sources, in the order a caller should prefer them: what the Pod's status says (OOM-killed), what the
 * Job says (its deadline passed), what the runner's frame classified (`result.cause`).
 */
import { readCause, type ConnectionFailure, type FailureCause } from '../../protocol/cause.ts';
import type { RunnerResult } from '../../protocol/result.ts';
import type { JobObservation } from '../jobs/harvest.ts';
import { sqlstateDescription, mysqlErrorName } from './sqlstate.ts';

export interface ClassifiedCause {
  /** A condition and Event reason. */
  readonly reason: string;
  /** One bounded line for a person: what failed and what to check. */
  readonly message: string;
  /**
   * Whether this cause says the database could not be read (DatabaseReachable=False). A desired state
   * that does not load, a deadline or a killed Pod says nothing about the database.
   */
  readonly databaseUnreachable: boolean;
}

const CONNECTION: Readonly<Record<ConnectionFailure, { reason: string; message: string }>> = {
  refused: {
    reason: 'ConnectionRefused',
    message: 'nothing accepts connections at the host and port the database URL names (connection refused)',
  },
  'timed-out': {
    reason: 'ConnectionTimedOut',
    message:
      'the database host did not answer in time (connection timed out); check the host, port and network policy',
  },
  'host-not-found': {
    reason: 'HostNotFound',
    message: 'the host the database URL names does not resolve',
  },
  'tls-required': {
    reason: 'TLSRequired',
    message:
      'the server refuses an unencrypted connection; ask for TLS in the database URL (sslmode=require, ssl=true)',
  },
  'tls-unavailable': {
    reason: 'TLSUnavailable',
    message: 'the database URL asks for TLS and the server does not offer it',
  },
  closed: {
    reason: 'ConnectionClosed',
    message: 'the server closed the connection before it was established',
  },
};

/** SQLSTATEs (and MySQL errnos) a person acts on differently from "some database error". */
const AUTHENTICATION = new Set(['28P01', '28000']);
const MYSQL_AUTHENTICATION = new Set([1045, 1698]);
const MYSQL_UNKNOWN_DATABASE = 1049;
const PERMISSION = new Set(['42501']);
const MYSQL_PERMISSION = new Set([1044, 1142, 1143, 1227]);

function databaseCause(sqlstate: string | undefined, errno: number | undefined): ClassifiedCause {
  const codes = [
    ...(errno !== undefined
      ? [`MySQL error ${errno}${mysqlErrorName(errno) ? ` ${mysqlErrorName(errno)}` : ''}`]
      : []),
    ...(sqlstate !== undefined ? [`SQLSTATE ${sqlstate} ${sqlstateDescription(sqlstate)}`] : []),
  ].join(', ');
  const said = `the database answered ${codes}`;
  if (
    (sqlstate !== undefined && AUTHENTICATION.has(sqlstate)) ||
    (errno !== undefined && MYSQL_AUTHENTICATION.has(errno))
  ) {
    return {
      reason: 'DatabaseAuthenticationFailed',
      message: `${said}: the user or password in the database URL is refused`,
      databaseUnreachable: true,
    };
  }
  if (sqlstate === '3D000' || errno === MYSQL_UNKNOWN_DATABASE) {
    return {
      reason: 'DatabaseNotFound',
      message: `${said}: the database the URL names does not exist on that server`,
      databaseUnreachable: true,
    };
  }
  if (
    (sqlstate !== undefined && PERMISSION.has(sqlstate)) ||
    (errno !== undefined && MYSQL_PERMISSION.has(errno))
  ) {
    return {
      reason: 'DatabasePermissionDenied',
      message: `${said}: the user may not read or change what the operation needs`,
      databaseUnreachable: false,
    };
  }
  const unavailable = sqlstate !== undefined && /^(08|53|57)/.test(sqlstate);
  return {
    reason: unavailable ? 'DatabaseUnavailable' : 'DatabaseError',
    message: said,
    databaseUnreachable: unavailable,
  };
}

export function classifyCause(cause: FailureCause, deadlineSeconds?: number): ClassifiedCause {
  switch (cause.kind) {
    case 'desired-state': {
      const listed = cause.problems
        .map(
          (p) =>
            `${p.file !== undefined ? `${p.file}${p.line !== undefined ? `:${p.line}${p.column !== undefined ? `:${p.column}` : ''}` : ''}: ` : ''}${p.message}`,
        )
        .join('; ');
      const more = cause.total - cause.problems.length;
      return {
        reason: 'DesiredStateInvalid',
        message: `the desired state does not load: ${listed}${more > 0 ? ` (and ${more} more)` : ''}`,
        databaseUnreachable: false,
      };
    }
    case 'database':
      return databaseCause(cause.sqlstate, cause.errno);
    case 'connection':
      return { ...CONNECTION[cause.failure], databaseUnreachable: true };
    case 'deadline':
      return deadlineExceeded(deadlineSeconds);
  }
}

export function deadlineExceeded(deadlineSeconds?: number): ClassifiedCause {
  return {
    reason: 'DeadlineExceeded',
    message: `the operation did not end within its deadline${deadlineSeconds !== undefined ? ` of ${deadlineSeconds}s` : ''} (spec.execution.activeDeadlineSeconds)`,
    databaseUnreachable: false,
  };
}

export function oomKilled(exitCode: number | undefined): ClassifiedCause {
  return {
    reason: 'OOMKilled',
    message: `the operation container was killed for using more memory than its limit (OOMKilled${exitCode !== undefined ? `, exit code ${exitCode}` : ''})`,
    databaseUnreachable: false,
  };
}

/** The Job controller ended the Job at its activeDeadlineSeconds. */
export function jobDeadlinePassed(job: JobObservation | undefined): boolean {
  return job?.state === 'finished' && job.failureReason === 'DeadlineExceeded';
}

/**
 * Why a finished operation failed, classified, for either family: the Job's deadline when the Job controller
 * ended it, else the cause the runner's frame states (checked again: the frame was read from a Pod log).
 * Undefined when neither says; callers then fall back to the runner's error code.
 */
export function operationFailureCause(
  job: JobObservation | undefined,
  result: RunnerResult,
  deadlineSeconds: number,
): ClassifiedCause | undefined {
  if (jobDeadlinePassed(job)) return deadlineExceeded(deadlineSeconds);
  const cause = readCause(result.cause);
  return cause === undefined ? undefined : classifyCause(cause, deadlineSeconds);
}
